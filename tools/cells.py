"""Run an exercise's code cells in-process, with some answers swapped out.

Checking dozens of wrong answers through nbgrader would start a kernel each
time; running the cells in one Python process with a fresh namespace per case
checks the same thing (which graded test cells fail) in a fraction of the time.

Wrong answers live in `tests/wrong_answers/<id>.py`, one cell per wrong answer:

    # %% wrong id=ANSWER_ID [fails=TESTS_ID] -- what the student did
    <code that replaces the answer cell ANSWER_ID>

`fails` defaults to `test_<ANSWER_ID>`: that graded test cell must fail and every
other one must still pass, so the wrong answer costs exactly its item's points.
`seen_on=device` marks a mistake that shows only off the CPU (an output moved to the CPU):
the tests catch it on a GPU's stand-in, and a judge, which computes on the CPU, cannot.
`clause=NAME[,NAME]` names the clauses of its item it breaks (tools/clauses.py): every
clause an exercise's instructions tag needs a wrong answer that names it. `says=WORDS`
(underscores for spaces) are words the message of one of its failed cells must contain, so
that the message names the fixture's own mistake, not another.

Correct answers written differently from the model solution (another name, a
default argument, another formula) live in `tests/right_answers/<id>.py`, as
`# %% right id=ANSWER_ID -- how it differs`; with one in place every graded
test must pass, so the tests accept what the instructions allow.
"""

from __future__ import annotations

import functools
import re
import types
from dataclasses import dataclass
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
WRONG_ANSWERS = ROOT / "tests" / "wrong_answers"
RIGHT_ANSWERS = ROOT / "tests" / "right_answers"
HEADER = re.compile(r"^# %% (?P<kind>wrong|right) (?P<opts>[^-]*?)\s*--\s*(?P<why>.+)$")


@dataclass
class WrongAnswer:
    lesson: str
    answer_id: str
    fails: tuple[str, ...]  # the graded test cells it fails (one per clause it gets wrong)
    why: str
    code: str
    line: int = 0  # where the fixture starts in its file
    seen_on: str = ""  # `seen_on=device`: the mistake shows only off the CPU (the tests probe on a simulated GPU)
    clauses: tuple[str, ...] = ()  # `clause=a,b`: the clauses of its item it breaks (tools/clauses.py)
    says: str = ""  # `says=not_copies`: words (underscores for spaces) its failure message must contain

    def __str__(self) -> str:
        return f"{self.lesson}:{self.answer_id}: {self.why}"


def graded_cells(nb) -> list[dict]:
    """Code cells of an nbgrader notebook with their grade ids and roles."""
    cells = []
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        meta = cell.metadata.get("nbgrader", {})
        cells.append(
            {
                "id": meta.get("grade_id", cell.get("id")),
                "source": cell.source,
                "tests": bool(meta.get("grade")),
                "answer": bool(meta.get("solution")),
                "points": meta.get("points", 0),
            }
        )
    return cells


@functools.cache
def compiled(source: str, name: str) -> types.CodeType:
    """A cell's code, compiled once: the test suite runs each lesson's cells hundreds of times."""
    return compile(source, name, "exec")


def run(cells: list[dict], replace: dict[str, str] | None = None) -> dict[str, BaseException | None]:
    """Execute cells in order like a kernel that keeps going after errors.

    Returns, for every graded test cell, the exception it raised (or None). The cells after the
    last test cell are not run: nothing they do can change that answer (lesson 7's plot, the
    slowest cell of any lesson, comes after its last test).
    """
    replace = replace or {}
    tested = [n for n, cell in enumerate(cells) if cell["tests"]]
    cells = cells[: tested[-1] + 1] if tested else []
    # Figures have no screen here; set in this process only, never in the
    # environment that nbval's kernels inherit.
    import matplotlib

    matplotlib.use("Agg")
    namespace: dict = {"__name__": "__main__"}
    outcome: dict[str, BaseException | None] = {}
    for cell in cells:
        source = replace.get(cell["id"], cell["source"])
        try:
            exec(compiled(source, f"<cell {cell['id']}>"), namespace)
            error = None
        except Exception as exc:  # a student's error is a result, not a crash
            error = exc
        if cell["tests"]:
            outcome[cell["id"]] = error
    return outcome


def read_wrong_answers(lesson: str) -> list[WrongAnswer]:
    return _read_answers(WRONG_ANSWERS / f"{lesson}.py", lesson, "wrong")


def read_right_answers(lesson: str) -> list[WrongAnswer]:
    """Alternative correct answers (`fails` is unused for them)."""
    return _read_answers(RIGHT_ANSWERS / f"{lesson}.py", lesson, "right")


def _read_answers(path: Path, lesson: str, kind: str) -> list[WrongAnswer]:
    if not path.exists():
        return []
    answers: list[WrongAnswer] = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if line.startswith("# %%"):
            match = HEADER.match(line)
            if match is None or match.group("kind") != kind:
                raise ValueError(f"{path}:{number}: expected '# %% {kind} id=ANSWER_ID -- why'")
            opts = dict(word.split("=", 1) for word in match.group("opts").split())
            answers.append(
                WrongAnswer(
                    lesson,
                    opts["id"],
                    tuple(opts.get("fails", f"test_{opts['id']}").split(",")),
                    match.group("why"),
                    "",
                    number,
                    opts.get("seen_on", ""),
                    tuple(n for n in opts.get("clause", "").split(",") if n),
                    opts.get("says", "").replace("_", " "),
                )
            )
        elif answers:
            answers[-1].code += line + "\n"
        elif line.strip() and not line.startswith("#"):
            raise ValueError(f"{path}:{number}: code before the first '# %% {kind}' cell")
    return answers


def solution_cells(lesson: str) -> list[dict]:
    nb = nbformat.read(ROOT / "solutions" / lesson / f"{lesson}.ipynb", as_version=4)
    return graded_cells(nb)


def exercise(lesson: str):
    """The released student notebook, as a student downloads it."""
    return nbformat.read(ROOT / "exercises" / lesson / f"{lesson}.ipynb", as_version=4)


def answered(lesson: str, replace: dict[str, str] | None = None):
    """The exercise as a student who copied the model answers would hand it in;
    `replace` swaps some answers for other code (a wrong answer, say)."""
    solution = nbformat.read(ROOT / "solutions" / lesson / f"{lesson}.ipynb", as_version=4)
    answers = {
        c.metadata["nbgrader"]["grade_id"]: c.source for c in solution.cells if c.metadata["nbgrader"].get("solution")
    }
    answers.update(replace or {})
    nb = exercise(lesson)
    for cell in nb.cells:
        if cell.metadata.get("nbgrader", {}).get("solution"):
            cell.source = answers[cell.metadata["nbgrader"]["grade_id"]]
    return nb


def check_lesson(lesson: str) -> list[str]:
    """Problems with a lesson's tests: the solution must pass, each wrong answer must fail its item only."""
    cells = solution_cells(lesson)
    problems = [
        f"{lesson}: the solution fails {test_id}: {error!r}"
        for test_id, error in run(cells).items()
        if error is not None
    ]
    answer_ids = {c["id"] for c in cells if c["answer"]}
    for wrong in read_wrong_answers(lesson):
        if wrong.answer_id not in answer_ids:
            problems.append(f"{wrong}: no answer cell with that id")
            continue
        failed = {k for k, v in run(cells, {wrong.answer_id: wrong.code}).items() if v is not None}
        if failed != set(wrong.fails):
            problems.append(f"{wrong}: expected only {', '.join(wrong.fails)} to fail, got {sorted(failed) or 'none'}")
    return problems


if __name__ == "__main__":
    import sys

    found = [p for lesson in sys.argv[1:] for p in check_lesson(lesson)]
    print("\n".join(found) or "every wrong answer loses exactly its own item")
    sys.exit(1 if found else 0)
