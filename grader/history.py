"""What a course folder remembers between grading runs, for a fix mid-term.

    <course>/.grader-state/releases/<assignment>/<notebook>-<hash>.ipynb   every release graded against
    <course>/.grader-state/written/<assignment>/<student>.json            each written answer's hash

An instructor who fixes a test mid-term regenerates the release and grades again. Students who
fetched the earlier release still hold its read-only cells: restore.py finds those cells in a
remembered release and says the notebook was graded against the corrected release, instead of
telling an honest student that they edited a read-only cell. Every autograde and every
`generate` (make exercises) remembers the release it saw.

nbgrader's autograde marks every written answer that already has a hand-given grade as needing
review again (SaveAutoGrades), so one regrade would hold back every written grade from
`lms push` until re-marked. KeepWrittenGrades (pipeline.py, after SaveAutoGrades) keeps a
written grade when the answer is the same text it was at the previous autograde.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import nbformat

STATE = ".grader-state"


def digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _releases(root: Path, assignment: str) -> Path:
    return Path(root) / STATE / "releases" / assignment


def remember_release(root: Path, assignment: str, notebook: str, released: nbformat.NotebookNode) -> None:
    """Keep this release of `notebook` (once per distinct content)."""
    text = nbformat.writes(released)
    folder = _releases(root, assignment)
    path = folder / f"{notebook}-{digest(text)[:16]}.ipynb"
    if not path.exists():
        _write(path, text)


def earlier_releases(root: Path, assignment: str, notebook: str) -> list[nbformat.NotebookNode]:
    """Every remembered release of `notebook`, oldest first."""
    folder = _releases(root, assignment)
    if not folder.is_dir():
        return []
    paths = sorted(folder.glob(f"{notebook}-*.ipynb"), key=lambda p: p.stat().st_mtime)
    return [nbformat.read(p, as_version=4) for p in paths]


def _written(root: Path, assignment: str, student: str) -> Path:
    return Path(root) / STATE / "written" / assignment / f"{student}.json"


def written_answers(root: Path, assignment: str, student: str) -> dict[str, str]:
    """grade id -> hash of the written answer at the previous autograde."""
    path = _written(root, assignment, student)
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def remember_written_answers(root: Path, assignment: str, student: str, answers: dict[str, str]) -> None:
    _write(_written(root, assignment, student), json.dumps(answers, indent=1, sort_keys=True))


def _write(path: Path, text: str) -> None:
    """Whole or not at all: workers grading side by side never read half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(f".{os.getpid()}.partial")
    partial.write_text(text, encoding="utf-8")
    os.replace(partial, path)
