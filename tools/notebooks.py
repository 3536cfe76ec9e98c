"""Build the course notebooks from their text sources.

Every notebook in `course/` and `solutions/` is generated from a percent-format
text file in `lessons/<id>/`, so lessons are reviewed and diffed as text:

    lessons/<id>/lecture.py   -> course/<id>.ipynb
    lessons/<id>/exercise.py  -> solutions/<id>/<id>.ipynb  (nbgrader source)

The text sources live outside `solutions/` on purpose: nbgrader copies every
other file of a source folder into the student release, and these hold the
solutions.

Cell markers (one per cell, a line of its own):

    # %% [markdown]                         prose; each line starts with "# "
    # %%                                    code
    # %% tags=nbval-ignore-output           code with cell tags (comma separated)
    # %% answer id=NAME                     autograded answer (nbgrader solution)
    # %% tests id=NAME points=N             autograded tests, locked
    # %% [markdown] manual id=NAME points=N manually graded written answer

In an exercise source, every other cell is a locked read-only nbgrader cell, so
autograde restores instructions and setup code a student may have changed.

Commands:
    python -m tools.notebooks build [--execute] [ID ...]
    python -m tools.notebooks check     # fail if a notebook drifted from its source
"""
from __future__ import annotations

import argparse
import copy
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
LESSONS = ROOT / "lessons"

# The one place that says where the course lives; every Colab badge uses it.
REPOSITORY = "pytorch-building-blocks/course"
BRANCH = "main"

KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
# Lessons whose lecture and exercise ask Colab for a GPU runtime, with the notebook
# metadata Colab itself writes when a student picks "T4 GPU" (nbgrader carries
# notebook metadata through to the exercise). No other notebook carries it.
GPU_LESSONS = {"07_gpus"}
COLAB_GPU = {"accelerator": "GPU", "colab": {"gpuType": "T4", "provenance": []}}
# Notebook metadata that comes from the text source (checked for drift); the rest
# (language_info) is written when a notebook runs.
SOURCE_METADATA = ("kernelspec", *COLAB_GPU)
MARKER = re.compile(r"^# %%(?P<rest>.*)$")
KINDS = {"answer", "tests", "manual"}


@dataclass
class SourceCell:
    cell_type: str
    kind: str | None
    options: dict[str, str]
    lines: list[str] = field(default_factory=list)

    @property
    def source(self) -> str:
        lines = list(self.lines)
        while lines and not lines[-1].strip():
            lines.pop()
        while lines and not lines[0].strip():
            lines.pop(0)
        if self.cell_type == "markdown":
            lines = [_unquote_markdown(line) for line in lines]
        return "\n".join(lines)


def _unquote_markdown(line: str) -> str:
    if line == "#":
        return ""
    if line.startswith("# "):
        return line[2:]
    raise ValueError(f"markdown line must start with '# ': {line!r}")


def parse_source(text: str, origin: str = "<source>") -> list[SourceCell]:
    """Split a percent-format text into cells, reading each marker's options."""
    cells: list[SourceCell] = []
    for number, line in enumerate(text.splitlines(), start=1):
        match = MARKER.match(line)
        if match is None:
            if not cells:
                if line.strip():
                    raise ValueError(f"{origin}:{number}: text before the first '# %%' marker")
                continue
            cells[-1].lines.append(line)
            continue
        words = match.group("rest").split()
        cell_type = "code"
        if words and words[0] == "[markdown]":
            cell_type = "markdown"
            words = words[1:]
        kind = None
        options: dict[str, str] = {}
        for word in words:
            if "=" in word:
                key, value = word.split("=", 1)
                options[key] = value
            elif word in KINDS and kind is None:
                kind = word
            else:
                raise ValueError(f"{origin}:{number}: unknown cell marker word {word!r}")
        if kind in {"answer", "tests", "manual"} and "id" not in options:
            raise ValueError(f"{origin}:{number}: a {kind} cell needs id=NAME")
        if kind in {"tests", "manual"} and "points" not in options:
            raise ValueError(f"{origin}:{number}: a {kind} cell needs points=N")
        if kind == "manual" and cell_type != "markdown":
            raise ValueError(f"{origin}:{number}: a manual cell is a [markdown] cell")
        cells.append(SourceCell(cell_type, kind, options))
    return cells


def colab_badge(path: str) -> str:
    url = f"https://colab.research.google.com/github/{REPOSITORY}/blob/{BRANCH}/{path}"
    return (f"[![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)]({url})")


def _nbgrader(cell: SourceCell, index: int) -> dict:
    """nbgrader cell metadata for an exercise cell (schema version 3)."""
    meta = {"schema_version": 3, "solution": False, "grade": False, "locked": True,
            "grade_id": cell.options.get("id", f"cell-{index:02d}")}
    if cell.kind == "answer":
        meta.update(solution=True, locked=False)
    elif cell.kind == "tests":
        meta.update(grade=True, points=int(cell.options["points"]))
    elif cell.kind == "manual":
        meta.update(solution=True, grade=True, locked=False, points=int(cell.options["points"]))
    return meta


def build_notebook(source_path: Path, badge_path: str, graded: bool,
                   gpu: bool = False) -> nbformat.NotebookNode:
    """Turn one text source into a notebook with no outputs and stable cell ids;
    `gpu` adds Colab's GPU-runtime metadata."""
    cells = parse_source(source_path.read_text(encoding="utf-8"), str(source_path))
    nb = nbformat.v4.new_notebook()
    nb.metadata = {"kernelspec": dict(KERNELSPEC), "language_info": {"name": "python"}}
    if gpu:
        nb.metadata.update(copy.deepcopy(COLAB_GPU))
    badge = nbformat.v4.new_markdown_cell(colab_badge(badge_path), id="colab-badge")
    if graded:
        badge.metadata["nbgrader"] = _nbgrader(SourceCell("markdown", None, {"id": "colab-badge"}), 0)
    nb.cells.append(badge)
    for index, cell in enumerate(cells, start=1):
        if cell.kind and not graded:
            raise ValueError(f"{source_path}: graded cell kinds belong in an exercise source")
        cell_id = cell.options.get("id", f"cell-{index:02d}")
        if cell.cell_type == "markdown":
            new = nbformat.v4.new_markdown_cell(cell.source, id=cell_id)
        else:
            new = nbformat.v4.new_code_cell(cell.source, id=cell_id)
        tags = [t for t in cell.options.get("tags", "").split(",") if t]
        if tags:
            new.metadata["tags"] = tags
        if graded:
            new.metadata["nbgrader"] = _nbgrader(cell, index)
        nb.cells.append(new)
    ids = [c.id for c in nb.cells]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise ValueError(f"{source_path}: cell ids used twice: {duplicates}")
    if graded and "nbgrader" in json.dumps(nb.metadata):
        raise AssertionError("unexpected notebook-level nbgrader metadata")
    return nb


@dataclass(frozen=True)
class Target:
    """One generated notebook: where its text source is and where it goes."""
    lesson: str
    source: Path
    notebook: Path
    badge_path: str
    graded: bool

    @property
    def gpu(self) -> bool:
        return self.lesson in GPU_LESSONS

    def build(self) -> nbformat.NotebookNode:
        return build_notebook(self.source, self.badge_path, self.graded, self.gpu)


def lesson_ids() -> list[str]:
    return sorted(p.name for p in LESSONS.iterdir() if (p / "lecture.py").exists() or (p / "exercise.py").exists())


def targets(ids: list[str] | None = None) -> list[Target]:
    found = []
    for lesson in ids or lesson_ids():
        folder = LESSONS / lesson
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
    env_cwd = str(cwd)
    client = NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": env_cwd}})
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


def build(ids: list[str] | None, run: bool) -> None:
    for target in targets(ids):
        nb = target.build()
        if run:
            nb = execute(nb, target.notebook.parent)
        elif target.notebook.exists():
            # Keep the stored outputs when the cells did not change (metadata may have).
            old = nbformat.read(target.notebook, as_version=4)
            old_cells = without_outputs(old)
            old_cells.metadata = without_outputs(nb).metadata
            if old_cells == without_outputs(nb):
                old.metadata = {**{k: v for k, v in old.metadata.items() if k not in SOURCE_METADATA},
                                **{k: v for k, v in nb.metadata.items() if k in SOURCE_METADATA}}
                nb = old
        write(nb, target.notebook)
        print(f"{'executed' if run else 'built'} {target.notebook.relative_to(ROOT)}")


def drift() -> list[str]:
    """Notebooks whose cells or metadata no longer match their text source."""
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
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    build_cmd = sub.add_parser("build", help="write notebooks from their text sources")
    build_cmd.add_argument("--execute", action="store_true", help="run them and store outputs")
    build_cmd.add_argument("ids", nargs="*")
    sub.add_parser("check", help="fail when a notebook drifted from its source")
    args = parser.parse_args(argv)
    if args.command == "build":
        build(args.ids or None, args.execute)
        return 0
    problems = drift()
    for problem in problems:
        print(problem, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
