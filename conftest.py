"""Shared test setup, at the root so it also applies to the notebooks nbval collects.

nbval turns each notebook cell into a test item. With pytest-xdist, cells of one
notebook must run on one worker (they share a kernel), so every nbval item is put
in an xdist group named after its notebook; other tests spread freely.
"""
import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT / "tests"))
os.environ.setdefault("MPLBACKEND", "Agg")

from tools import course, notebooks  # noqa: E402


# xdist reads the group marks in its own hook of the same name; ours must run first.
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    for item in items:
        path = item.nodeid.split("::")[0]
        if path.endswith(".ipynb"):
            item.add_marker(pytest.mark.xdist_group(path))

ASSIGNMENTS = course.assignment_ids()
LESSONS = notebooks.lesson_ids()
