"""Build the course notebooks from their jupytext sources.

Every notebook in `course/` and `solutions/` is generated from a text file in
`lessons/<id>/`, so lessons are reviewed and diffed as text:

    lessons/<id>/lecture.py   -> course/<id>.ipynb
    lessons/<id>/exercise.py  -> solutions/<id>/<id>.ipynb  (nbgrader source)

The sources are jupytext percent scripts: `jupytext --to ipynb`, editors with
percent-cell support and `jupytext --sync` all read them. The text sources live
outside `solutions/` on purpose: nbgrader copies every other file of a source
folder into the student release, and these hold the solutions.

A source starts with jupytext's YAML header. The lecture's header holds the
lesson's settings, which both of its notebooks follow:

    # ---
    # jupyter:
    #   ...                       (jupytext's own keys and the kernelspec)
    #   lesson:
    #     title: GPUs             (the README table and the notebooks' first heading)
    #     gpu: true               (Colab opens both notebooks on a GPU runtime)
    # ---

Cells use jupytext's header grammar, `# %% [title] [[markdown]] key=JSON ...`;
the title word gives an exercise cell its nbgrader role:

    # %% [markdown]                                  prose
    # %%                                             code
    # %% tags=["nbval-ignore-output"]                code whose output nbval ignores
    # %% answer grade_id="f"                         autograded answer (solution)
    # %% tests grade_id="test_f" points=2            autograded tests, locked
    # %% manual [markdown] grade_id="why" points=1   manually graded written answer

In an exercise every other cell is a locked read-only nbgrader cell, so
autograde restores instructions and setup code a student may have changed.

Cell ids are names, not positions: a graded cell's id is its `grade_id`; any
other cell is named after the section heading above it (`the-dry-run`,
`the-dry-run-code`, `the-dry-run-code-2`, ...), so inserting a cell renames at
most the later cells of its own section.

Before writing anything, the builder checks the course rules (tools/rules.py)
and stops at the first violation with `file:line` and the rule.

Commands:
    python -m tools.notebooks build [--execute] [ID ...]
    python -m tools.notebooks check     # fail if a notebook or README drifted from its source
    python -m tools.notebooks format    # rewrite sources in jupytext's canonical form
"""
from __future__ import annotations

import argparse
import copy
import re
import sys
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
CELL_KEYS = {"grade_id", "points", "tags"}
JUPYTEXT_CELL_KEYS = {"lines_to_next_cell", "title"}
MARKER = re.compile(r"^# %%")


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
        raise SourceError(f"{origin}:{first}: every cell starts with a '# %%' line "
                          "(text between the header and the first cell?)")
    cells = []
    for cell, line in zip(nb.cells, marker_lines):
        meta = dict(cell.metadata)
        where = f"{origin}:{line}"
        if "incorrectly_encoded_metadata" in meta:
            raise SourceError(f"{where}: cell metadata must be key=JSON, e.g. grade_id=\"f\" points=2 "
                              f"or tags=[\"nbval-ignore-output\"]; got {meta['incorrectly_encoded_metadata']!r}")
        role = meta.pop("title", None)
        if role is not None and role not in ROLES:
            raise SourceError(f"{where}: unknown cell role {role!r} (roles: {', '.join(sorted(ROLES))})")
        for key in JUPYTEXT_CELL_KEYS:
            meta.pop(key, None)
        unknown = set(meta) - CELL_KEYS
        if unknown:
            raise SourceError(f"{where}: unknown cell metadata {sorted(unknown)} "
                              f"(allowed: {', '.join(sorted(CELL_KEYS))})")
        cells.append(SourceCell(cell.cell_type, role, cell.source, line, meta))
    return Source(origin, dict(nb.metadata), cells)


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
        return build_notebook(read_source(self.source), self.badge_path, self.graded,
                              lesson_settings(self.lesson).get("gpu", False))


def lessons_dir() -> Path:
    return ROOT / "lessons"


def lesson_ids() -> list[str]:
    return sorted(p.name for p in lessons_dir().iterdir()
                  if (p / "lecture.py").exists() or (p / "exercise.py").exists())


def lesson_settings(lesson: str) -> dict:
    """The `lesson:` block of the lecture's header (title, gpu)."""
    lecture = lessons_dir() / lesson / "lecture.py"
    return read_source(lecture).lesson if lecture.exists() else {}


def gpu_lessons() -> set[str]:
    return {lesson for lesson in lesson_ids() if lesson_settings(lesson).get("gpu")}


def targets(ids: list[str] | None = None) -> list[Target]:
    found = []
    for lesson in ids or lesson_ids():
        folder = lessons_dir() / lesson
        if (folder / "lecture.py").exists():
            found.append(Target(lesson, folder / "lecture.py", ROOT / "course" / f"{lesson}.ipynb",
                                f"course/{lesson}.ipynb", False))
        if (folder / "exercise.py").exists():
            found.append(Target(lesson, folder / "exercise.py",
                                ROOT / "solutions" / lesson / f"{lesson}.ipynb",
                                f"exercises/{lesson}/{lesson}.ipynb", True))
    return found


def without_outputs(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The part of a notebook that comes from its text source."""
    nb = copy.deepcopy(nb)
    nb.metadata = {k: v for k, v in nb.metadata.items() if k in SOURCE_METADATA}
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
        cell.metadata.pop("execution", None)
    return nb


def execute(nb: nbformat.NotebookNode, cwd: Path) -> nbformat.NotebookNode:
    """Run a notebook top to bottom in a fresh python3 kernel and keep the outputs clean."""
    from nbclient import NotebookClient

    cwd.mkdir(parents=True, exist_ok=True)
    client = NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(cwd)}})
    client.execute()
    nb.metadata["language_info"] = {"name": "python"}
    nb.metadata.pop("widgets", None)
    for cell in nb.cells:
        cell.metadata.pop("execution", None)
    return nb


def write(nb: nbformat.NotebookNode, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.validate(nb)
    path.write_text(nbformat.writes(nb) + "\n", encoding="utf-8")


def with_stored_outputs(fresh: nbformat.NotebookNode, path: Path) -> nbformat.NotebookNode:
    """`fresh`, keeping the outputs stored at `path` when no cell changed (metadata may have)."""
    if not path.exists():
        return fresh
    old = nbformat.read(path, as_version=4)
    old_cells = without_outputs(old)
    old_cells.metadata = without_outputs(fresh).metadata
    if old_cells != without_outputs(fresh):
        return fresh
    old.metadata = {**{k: v for k, v in old.metadata.items() if k not in SOURCE_METADATA},
                    **{k: v for k, v in fresh.metadata.items() if k in SOURCE_METADATA}}
    return old


def build(ids: list[str] | None, run: bool) -> None:
    from tools import rules

    rules.check(ids)
    for target in targets(ids):
        nb = target.build()
        nb = execute(nb, target.notebook.parent) if run else with_stored_outputs(nb, target.notebook)
        write(nb, target.notebook)
        print(f"{'executed' if run else 'built'} {target.notebook.relative_to(ROOT)}")
    if not ids:
        readme = ROOT / "README.md"
        readme.write_text(with_lesson_table(readme.read_text(encoding="utf-8")), encoding="utf-8")


# The README's lesson table is generated from the lessons' headers.
TABLE_START = "<!-- lessons: generated by `make notebooks` from lessons/*/lecture.py -->"
TABLE_END = "<!-- /lessons -->"


def lesson_table() -> str:
    rows = ["| # | Lesson | Lecture | Exercise | Colab runtime |", "|---|---|---|---|---|"]
    for lesson in lesson_ids():
        number = int(lesson.split("_", 1)[0])
        settings = lesson_settings(lesson)
        runtime = "GPU" if settings.get("gpu") else "CPU"
        rows.append(f"| {number} | {settings.get('title', lesson)} | [course/{lesson}.ipynb](course/{lesson}.ipynb) | "
                    f"[exercises/{lesson}](exercises/{lesson}/{lesson}.ipynb) | {runtime} |")
    return "\n".join(rows)


def with_lesson_table(readme: str) -> str:
    start, end = readme.find(TABLE_START), readme.find(TABLE_END)
    if start < 0 or end < start:
        raise SourceError(f"README.md: the lesson table must sit between {TABLE_START!r} and {TABLE_END!r}")
    return readme[:start + len(TABLE_START)] + "\n" + lesson_table() + "\n" + readme[end:]


def drift() -> list[str]:
    """Notebooks (and the README table) that no longer match their text sources."""
    problems = []
    for target in targets():
        if not target.notebook.exists():
            problems.append(f"{target.notebook.relative_to(ROOT)} is missing; run make notebooks")
            continue
        stored = without_outputs(nbformat.read(target.notebook, as_version=4))
        fresh = without_outputs(target.build())
        if stored != fresh:
            problems.append(f"{target.notebook.relative_to(ROOT)} differs from "
                            f"{target.source.relative_to(ROOT)}; run make notebooks")
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    if readme != with_lesson_table(readme):
        problems.append("README.md's lesson table differs from the lessons; run make notebooks")
    return problems


def canonical(path: Path) -> str:
    """The source as jupytext writes it (what `format` stores)."""
    text = path.read_text(encoding="utf-8")
    return jupytext.writes(jupytext.reads(text, fmt="py:percent"), fmt="py:percent")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    build_cmd = sub.add_parser("build", help="check the rules, then write notebooks from their text sources")
    build_cmd.add_argument("--execute", action="store_true", help="run them and store outputs")
    build_cmd.add_argument("ids", nargs="*")
    sub.add_parser("check", help="fail when a notebook or the README drifted from its source")
    sub.add_parser("format", help="rewrite every source in jupytext's canonical form")
    args = parser.parse_args(argv)
    try:
        if args.command == "build":
            build(args.ids or None, args.execute)
            return 0
        if args.command == "format":
            for target in targets():
                target.source.write_text(canonical(target.source), encoding="utf-8")
            return 0
        problems = drift()
    except SourceError as error:
        print(error, file=sys.stderr)
        return 1
    for problem in problems:
        print(problem, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    # Run as `python -m tools.notebooks`, this file is `__main__`, a second copy beside
    # the `tools.notebooks` that tools.rules imports: its SourceError would not catch
    # a RuleError. Hand over to the one module everything else uses.
    from tools.notebooks import main as canonical_main

    sys.exit(canonical_main())
