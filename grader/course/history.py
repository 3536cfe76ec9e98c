"""What a course folder remembers between grading runs, for a fix mid-term.

    <course>/.grader-state/releases/<assignment>/<notebook>-<hash>.ipynb   every release graded against
    <course>/.grader-state/written/<assignment>/<student>.json            each written answer's hash

An instructor who fixes a test mid-term regenerates the release and grades again. Students who
fetched the earlier release still hold its read-only cells: course/restore.py finds those cells in a
remembered release and says the notebook was graded against the corrected release, instead of
telling an honest student that they edited a read-only cell. Every autograde and every
`generate` (make exercises) remembers the release it saw.

nbgrader's autograde marks every written answer that already has a hand-given grade as needing
review again (SaveAutoGrades), so one regrade would hold back every written grade from
`lms push` until re-marked. KeepWrittenGrades (pipeline.py, after SaveAutoGrades) keeps a
written grade when the answer is the same text it was at the previous autograde.

`course_sources` names the release a course is graded against (its git commit, whether the tree
had uncommitted changes, and a hash of each assignment's source notebooks): `make release` records
it in `.course-release.json`, `make backup` in the archive, and `make restore` refuses to pair a
backup with other sources (records/backup.py).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
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


def _git(root: Path, *args: str) -> str | None:
    try:
        run = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return run.stdout if run.returncode == 0 else None


def course_sources(root: Path, source_directory: str = "solutions") -> dict:
    """{"commit": the checkout's HEAD (or "unknown"), "dirty": whether tracked files had
    uncommitted changes (None outside git), "sources": {assignment: sha256 of its source
    notebooks, by path and content}}: what a grade was computed against."""
    root = Path(root)
    head = _git(root, "rev-parse", "HEAD")
    status = _git(root, "status", "--porcelain", "--untracked-files=no")
    sources: dict[str, str] = {}
    folder = root / source_directory
    for assignment in sorted(p for p in folder.iterdir() if p.is_dir()) if folder.is_dir() else []:
        sha = hashlib.sha256()
        for path in sorted(assignment.rglob("*.ipynb")):
            if ".ipynb_checkpoints" not in path.parts:
                sha.update(path.relative_to(assignment).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
        sources[assignment.name] = sha.hexdigest()
    return {
        "commit": head.strip() if head else "unknown",
        "dirty": bool(status.strip()) if status is not None else None,
        "sources": sources,
    }
