"""Shared test setup, at the root so it also applies to the notebooks nbval collects."""
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT / "tests"))

from tools import course, notebooks  # noqa: E402


ASSIGNMENTS = course.assignment_ids()
LESSONS = notebooks.lesson_ids()

