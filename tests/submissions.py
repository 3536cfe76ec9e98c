"""Student submissions made from the exercises, for grading tests."""
from __future__ import annotations

import nbformat

from conftest import ROOT
from tools import cells


def exercise(assignment: str):
    return nbformat.read(ROOT / "exercises" / assignment / f"{assignment}.ipynb", as_version=4)


def answered(assignment: str, replace: dict[str, str] | None = None):
    """The exercise as a student who copied the model answers would hand it in;
    `replace` swaps some answers for other code (a wrong answer, say)."""
    solution = nbformat.read(ROOT / "solutions" / assignment / f"{assignment}.ipynb", as_version=4)
    answers = {c.metadata["nbgrader"]["grade_id"]: c.source for c in solution.cells
               if c.metadata["nbgrader"].get("solution")}
    answers.update(replace or {})
    nb = exercise(assignment)
    for cell in nb.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if cell.metadata.get("nbgrader", {}).get("solution"):
            cell.source = answers[grade_id]
    return nb


def first_wrong(assignment: str) -> cells.WrongAnswer:
    return cells.read_wrong_answers(assignment)[0]


def points(assignment: str) -> dict[str, int]:
    """Points of each autograded test cell."""
    nb = exercise(assignment)
    return {c.metadata["nbgrader"]["grade_id"]: c.metadata["nbgrader"]["points"] for c in nb.cells
            if c.cell_type == "code" and c.metadata["nbgrader"].get("grade")}
