"""Shared test setup, at the root so it also applies to the notebooks nbval collects."""
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT / "tests"))

from tools import course, notebooks  # noqa: E402


ASSIGNMENTS = course.assignment_ids()
LESSONS = notebooks.lesson_ids()



@pytest.fixture
def demo_lesson(tmp_path, monkeypatch):
    """An empty lesson folder, 99_demo, in a scratch tree the notebook builder uses instead of the repo."""
    lesson = tmp_path / "lessons" / "99_demo"
    lesson.mkdir(parents=True)
    monkeypatch.setattr(notebooks, "ROOT", tmp_path)
    monkeypatch.setattr(notebooks, "LESSONS", tmp_path / "lessons")
    return lesson
