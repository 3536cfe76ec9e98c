"""Find each student's notebook in a folder of submissions.

A submissions folder holds one entry per student: a file `<student>.ipynb` (a
download from Colab or an LMS) or a folder `<student>/` with the notebook
anywhere inside (nbgrader's `<student>/<assignment>/<assignment>.ipynb` layout
included). An assignment of several notebooks (nbgrader's `ps1` = `problem1.ipynb`
+ `problem2.ipynb`) is handed in as a folder holding each by its released name.
Every entry becomes a Submission, readable or not, so that every student gets a
row in the grades.
"""

from __future__ import annotations

import json
import re
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

import nbformat


@dataclass
class Submission:
    student: str  # the name in the submissions folder
    grader_id: str = ""  # the id used in nbgrader's folders and gradebook
    source: Path | None = None  # the notebook that is graded (the first one found, for several)
    sources: dict[str, Path] = field(default_factory=dict)  # released notebook name -> the file graded as it
    folder: Path | None = None  # the hand-in's folder beside the notebook (its other files); None for a lone file
    notebook: nbformat.NotebookNode | None = None
    problem: str | None = None  # why there is nothing to grade (status "invalid")
    notes: list[str] = field(default_factory=list)


def read_notebook(path: Path) -> tuple[nbformat.NotebookNode | None, str | None, list[str]]:
    """A notebook as nbformat 4, or the reason it cannot be read."""
    raw = path.read_bytes()
    if not raw.strip():
        return None, "empty file", []
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        return None, "binary file, not a notebook", []
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        return None, f"not valid JSON, truncated or not a notebook (line {exc.lineno}: {exc.msg})", []
    if not isinstance(data, dict) or "nbformat" not in data or not ("cells" in data or "worksheets" in data):
        return None, "JSON but not a Jupyter notebook", []
    notes = []
    if data.get("nbformat", 4) < 4:
        notes.append(f"converted from nbformat {data['nbformat']}")
    try:
        nb = nbformat.reads(text, as_version=4)
    except Exception as exc:  # nbformat raises many kinds on malformed content
        return None, f"unreadable notebook ({type(exc).__name__}: {exc})"[:300], []
    if not isinstance(nb.get("cells"), list):
        return None, "notebook without cells", []
    return nb, None, notes


def safe_id(name: str, taken: set[str]) -> str:
    """An id nbgrader can use as a folder and database key; unique among `taken`."""
    base = unicodedata.normalize("NFC", name)
    base = re.sub(r"[^\w.-]+", "_", base).strip("._") or "student"
    candidate, n = base, 2
    while candidate.lower() in taken:
        candidate, n = f"{base}-{n}", n + 1
    taken.add(candidate.lower())
    return candidate


def _candidates(entry: Path) -> list[Path]:
    if entry.is_file():
        return [entry]
    return sorted(
        p
        for p in entry.rglob("*.ipynb")
        if p.is_file() and ".ipynb_checkpoints" not in p.parts and not p.name.startswith(".")
    )


def _several(submission: Submission, files: list[Path], notebooks: list[str], directory: Path) -> None:
    """Each of the assignment's notebooks from its file of the same name (the newest where a folder
    holds several); a notebook missing from the hand-in is said so, and scores nothing."""
    for name in notebooks:
        found = sorted((p for p in files if p.stem == name), key=lambda p: p.stat().st_mtime, reverse=True)
        if found:
            submission.sources[name] = found[0]
        else:
            submission.notes.append(f"{name}.ipynb is missing from the hand-in (0 points for it)")
    if not submission.sources:
        submission.problem = f"none of the assignment's notebooks ({', '.join(f'{n}.ipynb' for n in notebooks)})"
        return
    submission.source = next(iter(submission.sources.values()))
    used = set(submission.sources.values())
    others = [str(p.relative_to(directory)) for p in files if p not in used and p.suffix == ".ipynb"]
    if others:
        submission.notes.append(f"ignored {', '.join(others)} (not a notebook of the assignment)")


def _beside(source: Path | None, own: Path | None) -> Path | None:
    """The folder whose other files are handed in with `source`: the notebook's own folder, when it
    lies inside the student's folder `own` (a lone `<student>.ipynb` has none)."""
    if source is None or own is None:
        return None
    folder = source.parent
    return folder if folder == own or own in folder.parents else None


def collect(directory: Path, assignment: str, notebooks: list[str] | None = None) -> list[Submission]:
    """Every student's entry; `notebooks`: the released notebooks' names (default: one, named
    after the assignment)."""
    notebooks = list(notebooks or [assignment])
    entries: dict[str, list[Path]] = {}
    folders: dict[str, Path] = {}  # a student's own folder (never the submissions folder itself)
    for entry in sorted(Path(directory).iterdir()):
        if entry.name.startswith(".") or entry.name.startswith("~"):
            continue
        student = entry.name if entry.is_dir() else entry.stem
        entries.setdefault(student, []).extend(_candidates(entry) or [entry])
        if entry.is_dir() and not entry.is_symlink():
            folders[student] = entry
    taken: set[str] = set()
    submissions = []
    for student, paths in sorted(entries.items()):
        submission = Submission(student, safe_id(student, taken))
        files = [p for p in paths if p.is_file()]
        if not files:
            submission.problem = "no notebook in the folder"
            submissions.append(submission)
            continue
        if len(notebooks) > 1:
            _several(submission, files, notebooks, Path(directory))
            submission.folder = _beside(submission.source, folders.get(student))
            submissions.append(submission)
            continue
        readable = []
        for path in files:
            nb, problem, notes = read_notebook(path)
            readable.append((path, nb, problem, notes))
        # Prefer a readable notebook named after the assignment, then the newest.
        readable.sort(
            key=lambda r: (r[1] is not None, r[0].stem in (assignment, notebooks[0]), r[0].stat().st_mtime),
            reverse=True,
        )
        path, nb, problem, notes = readable[0]
        submission.source, submission.notebook, submission.problem = path, nb, problem
        submission.folder = _beside(path, folders.get(student))
        submission.sources = {notebooks[0]: path}
        submission.notes += notes
        if len(files) > 1:
            others = ", ".join(str(p.relative_to(directory)) for p, *_ in readable[1:])
            submission.notes.append(f"{len(files)} files; graded {path.relative_to(directory)}, ignored {others}")
        elif path.suffix != ".ipynb" and problem is None:
            submission.notes.append(f"graded {path.name} although it is not named .ipynb")
        submissions.append(submission)
    return submissions
