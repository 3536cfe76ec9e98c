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

A code cell whose whole source is `# include: NAME.py` holds `lessons/shared/NAME.py`: a
set-up cell several lessons carry word for word (the simulated GPU) is written once there,
and every notebook built from a source still holds its code, so each stands alone.

In an exercise every other cell is a locked read-only nbgrader cell, so
autograde restores instructions and setup code a student may have changed.

Cell ids are names, not positions: a graded cell's id is its `grade_id`; any
other cell is named after the section heading above it (`the-dry-run`,
`the-dry-run-code`, `the-dry-run-code-2`, ...), so inserting a cell renames at
most the later cells of its own section.

Before writing anything, the builder checks the course rules (tools/rules.py)
and stops at the first violation with `file:line` and the rule.

Commands:
    python -m tools.notebooks build [--execute] [--only lecture|exercise] [--changed] [ID ...]
                                        # --only exercise: a fix to an exercise leaves the lecture
                                        # (and its stored outputs) as they are; --changed: only the
                                        # notebooks whose cells differ from their source (make fix)
    python -m tools.notebooks check     # fail if a notebook or README drifted from its source
    python -m tools.notebooks table     # README's lesson table only (a new lesson's row), in seconds
    python -m tools.notebooks format    # rewrite sources in jupytext's canonical form
"""

from __future__ import annotations

import argparse
import copy
import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient

from tools import rules
from tools.source import (  # noqa: F401 (the parsing names, re-exported for tests and tools)
    BRANCH,
    CELL_KEYS,
    COLAB_GPU,
    JUPYTEXT_CELL_KEYS,
    KERNELSPEC,
    MARKER,
    REPOSITORY,
    ROLES,
    ROOT,
    SOURCE_METADATA,
    Source,
    SourceCell,
    SourceError,
    Target,
    build_notebook,
    canonical,
    cell_ids,
    colab_badge,
    display,
    gpu_lessons,
    lesson_ids,
    lesson_settings,
    lessons_dir,
    nbgrader_metadata,
    parse_source,
    read_source,
    slug,
    targets,
)


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
    old.metadata = {
        **{k: v for k, v in old.metadata.items() if k not in SOURCE_METADATA},
        **{k: v for k, v in fresh.metadata.items() if k in SOURCE_METADATA},
    }
    return old


def build(ids: list[str] | None, run: bool, only: str | None = None, changed: bool = False) -> None:
    """Write the notebooks of `ids` (default: every lesson); `only`: "lecture" or "exercise"
    builds that notebook of each lesson and leaves the other one (and its outputs) alone;
    `changed`: only the notebooks whose cells no longer match their source."""
    rules.check(ids)
    for target in targets(ids):
        if only is not None and target.graded != (only == "exercise"):
            continue
        nb = target.build()
        if changed and target.notebook.exists() and with_stored_outputs(nb, target.notebook) is not nb:
            print(f"unchanged {target.notebook.relative_to(ROOT)}")
            continue
        nb = execute(nb, target.notebook.parent) if run else with_stored_outputs(nb, target.notebook)
        write(nb, target.notebook)
        print(f"{'executed' if run else 'built'} {target.notebook.relative_to(ROOT)}")
    if not ids and only is None and not changed:
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
        rows.append(
            f"| {number} | {settings.get('title', lesson)} | [course/{lesson}.ipynb](course/{lesson}.ipynb) | "
            f"[exercises/{lesson}](exercises/{lesson}/{lesson}.ipynb) | {runtime} |"
        )
    return "\n".join(rows)


def with_lesson_table(readme: str) -> str:
    start, end = readme.find(TABLE_START), readme.find(TABLE_END)
    if start < 0 or end < start:
        raise SourceError(f"README.md: the lesson table must sit between {TABLE_START!r} and {TABLE_END!r}")
    return readme[: start + len(TABLE_START)] + "\n" + lesson_table() + "\n" + readme[end:]


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
            problems.append(
                f"{target.notebook.relative_to(ROOT)} differs from "
                f"{target.source.relative_to(ROOT)}; run make notebooks"
            )
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    if readme != with_lesson_table(readme):
        problems.append("README.md's lesson table differs from the lessons; run make notebooks")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    build_cmd = sub.add_parser("build", help="check the rules, then write notebooks from their text sources")
    build_cmd.add_argument("--execute", action="store_true", help="run them and store outputs")
    build_cmd.add_argument(
        "--only", choices=("lecture", "exercise"), help="build only this notebook of each lesson (default: both)"
    )
    build_cmd.add_argument("--changed", action="store_true", help="only notebooks whose cells differ from their source")
    build_cmd.add_argument("ids", nargs="*")
    sub.add_parser("check", help="fail when a notebook or the README drifted from its source")
    sub.add_parser("table", help="rewrite only README's lesson table (no notebook is built or run)")
    sub.add_parser("format", help="rewrite every source in jupytext's canonical form")
    args = parser.parse_args(argv)
    try:
        if args.command == "build":
            build(args.ids or None, args.execute, args.only, args.changed)
            return 0
        if args.command == "table":
            readme = ROOT / "README.md"
            readme.write_text(with_lesson_table(readme.read_text(encoding="utf-8")), encoding="utf-8")
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
