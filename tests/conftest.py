"""Shared test setup.

nbval turns each notebook cell into a test item. With pytest-xdist, cells of one
notebook must run on one worker (they share a kernel), so every nbval item is put
in an xdist group named after its notebook; other tests spread freely.
"""
import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("MPLBACKEND", "Agg")

from tools import course, notebooks  # noqa: E402


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.nodeid.split("::")[0].endswith(".ipynb"):
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::")[0]))


# xdist reads the group marks in its own hook; ours must add them first.
pytest_collection_modifyitems = pytest.hookimpl(tryfirst=True)(pytest_collection_modifyitems)

ASSIGNMENTS = course.assignment_ids()
LESSONS = notebooks.lesson_ids()
