"""The shared submission kit: student notebooks made from the exercises, with
the scores they must get computed from the lesson's own points (never restated
as numbers), for every test that grades."""

from __future__ import annotations

from dataclasses import dataclass

import nbformat

from conftest import ROOT  # noqa: F401 (tests aim probes at the repository's real paths)
from tools import cells
from tools.cells import answered, exercise  # noqa: F401 (the builders live with the cell runner)


def first_wrong(assignment: str) -> cells.WrongAnswer:
    return cells.read_wrong_answers(assignment)[0]


def points(assignment: str) -> dict[str, int]:
    """Points of each autograded test cell, from the released exercise."""
    nb = exercise(assignment)
    return {
        c.metadata["nbgrader"]["grade_id"]: c.metadata["nbgrader"]["points"]
        for c in nb.cells
        if c.cell_type == "code" and c.metadata["nbgrader"].get("grade")
    }


def answer_source(assignment: str, answer_id: str) -> str:
    """The model answer of one answer cell, as `answered` writes it into the exercise."""
    for cell in answered(assignment).cells:
        if cell.metadata.get("nbgrader", {}).get("grade_id") == answer_id:
            return cell.source
    raise KeyError(f"{assignment} has no answer cell {answer_id}")


def full_score(assignment: str) -> int:
    return sum(points(assignment).values())


def max_score(assignment: str) -> float:
    """Every point of the released exercise: its autograded tests and its written answers."""
    return sum(c.metadata["nbgrader"].get("points", 0) for c in exercise(assignment).cells if "nbgrader" in c.metadata)


@dataclass
class Submission:
    student: str
    notebook: nbformat.NotebookNode
    score: int  # the autograded score it must get
    failed: tuple[str, ...]  # the graded test cells that must fail


def standard(assignment: str) -> list[Submission]:
    """A correct, a blank and a one-item-wrong submission of `assignment`."""
    wrong = first_wrong(assignment)
    tests = tuple(points(assignment))
    full = full_score(assignment)
    return [
        Submission("correct", answered(assignment), full, ()),
        Submission("blank", exercise(assignment), 0, tests),
        Submission(
            "one_wrong",
            answered(assignment, {wrong.answer_id: wrong.code}),
            full - sum(points(assignment)[t] for t in wrong.fails),
            wrong.fails,
        ),
    ]
