"""Lesson sources: the jupytext percent scripts in lessons/<id>/ read into cells, their
nbgrader roles and names, and the notebooks they describe (the grammar is documented in
tools/notebooks.py, the builder). tools/rules.py checks these sources; the builder
writes notebooks from them; neither imports the other's module for this.
"""

from __future__ import annotations

import copy
import functools
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import jupytext
import nbformat

ROOT = Path(__file__).resolve().parent.parent

# The one place that says where the course lives; every Colab badge uses it.
REPOSITORY = "pytorch-building-blocks/course"
BRANCH = "main"

KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
# The notebook metadata Colab itself writes when a student picks "T4 GPU";
# lessons whose header says `gpu: true` carry it (nbgrader passes notebook
# metadata through to the exercise).
COLAB_GPU = {"accelerator": "GPU", "colab": {"gpuType": "T4", "provenance": []}}
# Notebook metadata that comes from the text source (checked for drift); the rest
# (language_info) is written when a notebook runs.
SOURCE_METADATA = ("kernelspec", *COLAB_GPU)

ROLES = {"answer", "tests", "manual"}
# Cell metadata a source may set, besides the role title; jupytext adds
# `lines_to_next_cell` for its own round trip.
CELL_KEYS = {"grade_id", "points", "tags", "jupyter"}
# `jupyter={"source_hidden": true}` folds a cell's code in JupyterLab (a long set-up cell the
# student runs but need not read); no other `jupyter` key is allowed.
HIDDEN_SOURCE = {"source_hidden": True}
JUPYTEXT_CELL_KEYS = {"lines_to_next_cell", "title"}
MARKER = re.compile(r"^# %%")
# A code cell whose whole source is `# include: NAME` holds lessons/shared/NAME: a set-up cell
# several lessons carry word for word (the simulated GPU) is written once. Every notebook built
# from the source still holds the code itself, so each stands alone.
INCLUDE = re.compile(r"^# include: ([\w-]+\.py)$")
SHARED = ROOT / "lessons" / "shared"


class SourceError(ValueError):
    """A lesson source breaks a rule; the message starts with `file:line:`."""


@dataclass
class SourceCell:
    cell_type: str
    role: str | None
    source: str
    line: int
    metadata: dict = field(default_factory=dict)

    @property
    def grade_id(self) -> str | None:
        return self.metadata.get("grade_id")

    @property
    def points(self):
        return self.metadata.get("points")

    @property
    def tags(self) -> list[str]:
        return list(self.metadata.get("tags", []))


@dataclass
class Source:
    """One parsed lesson source: the header's metadata and the cells."""

    path: str
    metadata: dict
    cells: list[SourceCell]

    @property
    def lesson(self) -> dict:
        return dict(self.metadata.get("lesson", {}))


def parse_source(text: str, origin: str = "<source>") -> Source:
    """Read a jupytext percent script, with each cell's role and line number."""
    nb = jupytext.reads(text, fmt="py:percent")
    marker_lines = [n for n, line in enumerate(text.splitlines(), start=1) if MARKER.match(line)]
    if len(marker_lines) != len(nb.cells):
        first = marker_lines[0] if marker_lines else 1
        raise SourceError(
            f"{origin}:{first}: every cell starts with a '# %%' line (text between the header and the first cell?)"
        )
    cells = []
    for cell, line in zip(nb.cells, marker_lines):
        meta = dict(cell.metadata)
        where = f"{origin}:{line}"
        if "incorrectly_encoded_metadata" in meta:
            raise SourceError(
                f'{where}: cell metadata must be key=JSON, e.g. grade_id="f" points=2 '
                f'or tags=["nbval-ignore-output"]; got {meta["incorrectly_encoded_metadata"]!r}'
            )
        role = meta.pop("title", None)
        if role is not None and role not in ROLES:
            raise SourceError(f"{where}: unknown cell role {role!r} (roles: {', '.join(sorted(ROLES))})")
        for key in JUPYTEXT_CELL_KEYS:
            meta.pop(key, None)
        if "jupyter" in meta and meta["jupyter"] != HIDDEN_SOURCE:
            raise SourceError(f'{where}: the only cell metadata jupyter= allowed is jupyter={{"source_hidden": true}}')
        unknown = set(meta) - CELL_KEYS
        if unknown:
            raise SourceError(
                f"{where}: unknown cell metadata {sorted(unknown)} (allowed: {', '.join(sorted(CELL_KEYS))})"
            )
        cells.append(SourceCell(cell.cell_type, role, included(cell, where), line, meta))
    return Source(origin, dict(nb.metadata), cells)


def included(cell, where: str) -> str:
    """A cell's source, or the shared cell its `# include: NAME` line names (INCLUDE)."""
    found = INCLUDE.match(cell.source.strip()) if cell.cell_type == "code" else None
    if found is None:
        return cell.source
    shared = SHARED / found[1]
    if not shared.is_file():
        raise SourceError(f"{where}: no shared cell {display(shared)} to include")
    return shared.read_text(encoding="utf-8").removesuffix("\n")


def read_source(path: Path) -> Source:
    return parse_source(path.read_text(encoding="utf-8"), display(path))


def display(path: Path) -> str:
    try:
        return str(Path(path).relative_to(ROOT))
    except ValueError:
        return str(path)


def slug(text: str) -> str:
    words = re.findall(r"[a-z0-9]+", text.lower())
    name = "-".join(words)[:48].strip("-")
    return name or "cell"


def cell_ids(cells: list[SourceCell]) -> list[str]:
    """Names derived from each cell's role and section (see the module docstring)."""
    section = "intro"
    seen: Counter[str] = Counter()
    ids = []
    for cell in cells:
        if cell.grade_id:
            ids.append(cell.grade_id)
            continue
        heading = re.match(r"#+\s+(.+)", cell.source) if cell.cell_type == "markdown" else None
        if heading:
            section = slug(heading.group(1))
            base = section
        else:
            base = f"{section}-{'md' if cell.cell_type == 'markdown' else 'code'}"
        seen[base] += 1
        ids.append(base if seen[base] == 1 else f"{base}-{seen[base]}")
    return ids


def colab_badge(path: str) -> str:
    url = f"https://colab.research.google.com/github/{REPOSITORY}/blob/{BRANCH}/{path}"
    return f"[![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)]({url})"


def nbgrader_metadata(role: str | None, grade_id: str, points=None) -> dict:
    """nbgrader cell metadata (schema version 3) for an exercise cell."""
    meta = {"schema_version": 3, "solution": False, "grade": False, "locked": True, "grade_id": grade_id}
    if role == "answer":
        meta.update(solution=True, locked=False)
    elif role == "tests":
        meta.update(grade=True, points=int(points))
    elif role == "manual":
        meta.update(solution=True, grade=True, locked=False, points=int(points))
    return meta


def build_notebook(source: Source, badge_path: str, graded: bool, gpu: bool = False) -> nbformat.NotebookNode:
    """One source as a notebook with no outputs and stable cell ids; `gpu` adds
    Colab's GPU-runtime metadata."""
    nb = nbformat.v4.new_notebook()
    nb.metadata = {"kernelspec": dict(KERNELSPEC), "language_info": {"name": "python"}}
    if gpu:
        nb.metadata.update(copy.deepcopy(COLAB_GPU))
    badge = nbformat.v4.new_markdown_cell(colab_badge(badge_path), id="colab-badge")
    if graded:
        badge.metadata["nbgrader"] = nbgrader_metadata(None, "colab-badge")
    nb.cells.append(badge)
    for cell, cell_id in zip(source.cells, cell_ids(source.cells)):
        maker = nbformat.v4.new_markdown_cell if cell.cell_type == "markdown" else nbformat.v4.new_code_cell
        new = maker(cell.source, id=cell_id)
        if cell.tags:
            new.metadata["tags"] = cell.tags
        if cell.metadata.get("jupyter"):
            new.metadata["jupyter"] = dict(HIDDEN_SOURCE)
        if graded:
            new.metadata["nbgrader"] = nbgrader_metadata(cell.role, cell_id, cell.points)
        nb.cells.append(new)
    return nb


@dataclass(frozen=True)
class Target:
    """One generated notebook: where its text source is and where it goes."""

    lesson: str
    source: Path
    notebook: Path
    badge_path: str
    graded: bool

    def build(self) -> nbformat.NotebookNode:
        return build_notebook(
            read_source(self.source), self.badge_path, self.graded, lesson_settings(self.lesson).get("gpu", False)
        )


def lessons_dir() -> Path:
    return ROOT / "lessons"


def lesson_ids() -> list[str]:
    return sorted(
        p.name for p in lessons_dir().iterdir() if (p / "lecture.py").exists() or (p / "exercise.py").exists()
    )


def lesson_settings(lesson: str) -> dict:
    """The `lesson:` block of the lecture's header (title, gpu)."""
    lecture = lessons_dir() / lesson / "lecture.py"
    return dict(_lesson_block(lecture.read_text(encoding="utf-8"), display(lecture))) if lecture.exists() else {}


@functools.lru_cache(maxsize=64)
def _lesson_block(text: str, origin: str) -> dict:
    """A lecture's `lesson:` block, parsed once per text: the release, the README table and the
    GPU lessons ask for it again and again, and parsing a whole lecture costs 20-40 ms."""
    return parse_source(text, origin).lesson


def gpu_lessons() -> set[str]:
    return {lesson for lesson in lesson_ids() if lesson_settings(lesson).get("gpu")}


def targets(ids: list[str] | None = None) -> list[Target]:
    found = []
    for lesson in ids or lesson_ids():
        folder = lessons_dir() / lesson
        if (folder / "lecture.py").exists():
            found.append(
                Target(
                    lesson, folder / "lecture.py", ROOT / "course" / f"{lesson}.ipynb", f"course/{lesson}.ipynb", False
                )
            )
        if (folder / "exercise.py").exists():
            found.append(
                Target(
                    lesson,
                    folder / "exercise.py",
                    ROOT / "solutions" / lesson / f"{lesson}.ipynb",
                    f"exercises/{lesson}/{lesson}.ipynb",
                    True,
                )
            )
    return found


def canonical(path: Path) -> str:
    """The source as jupytext writes it (what `python -m tools.notebooks format` stores)."""
    text = path.read_text(encoding="utf-8")
    return jupytext.writes(jupytext.reads(text, fmt="py:percent"), fmt="py:percent")
