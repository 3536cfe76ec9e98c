"""This repository's nbgrader course, for maintainers (the grader's course
handling is grader/course/nbgrader_course.py; tools may import grader, never the reverse).

    python -m tools.course exercises [ID ...]   # regenerate exercises/ from solutions/
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from grader.course.nbgrader_course import api, generate, register  # noqa: F401 (re-exported for tests and tools)
from grader.course.nbgrader_course import load_config as _load_config

ROOT = Path(__file__).resolve().parent.parent


def assignment_ids() -> list[str]:
    return sorted(p.name for p in (ROOT / "solutions").iterdir() if (p / f"{p.name}.ipynb").exists())


def load_config(root: Path | None = None):
    """The config of the course at `root`; default: this repository."""
    return _load_config(root or ROOT)


def temporary_course(root: Path, ids: list[str] | None = None):
    """A course folder at `root`: this course's config with copies of the source
    and released notebooks, so a test never touches the repository's gradebook."""
    root.mkdir(parents=True, exist_ok=True)
    shutil.copy(ROOT / "nbgrader_config.py", root)
    for assignment in ids or assignment_ids():
        shutil.copytree(ROOT / "solutions" / assignment, root / "solutions" / assignment)
        shutil.copytree(ROOT / "exercises" / assignment, root / "exercises" / assignment)
    return api(load_config(root))


def main(argv: list[str]) -> int:
    if not argv or argv[0] != "exercises":
        print(__doc__, file=sys.stderr)
        return 2
    course_api = api(load_config())
    for assignment in argv[1:] or assignment_ids():
        generate(course_api, assignment)
        print(f"generated exercises/{assignment}/")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
