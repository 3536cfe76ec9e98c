"""Student submissions made from the exercises, for grading tests."""
from __future__ import annotations

from conftest import ROOT  # noqa: F401 (tests aim probes at the repository's real paths)
from tools import cells
from tools.cells import answered, exercise  # noqa: F401 (the builders live with the cell runner)


def first_wrong(assignment: str) -> cells.WrongAnswer:
    return cells.read_wrong_answers(assignment)[0]


def points(assignment: str) -> dict[str, int]:
    """Points of each autograded test cell."""
    nb = exercise(assignment)
    return {c.metadata["nbgrader"]["grade_id"]: c.metadata["nbgrader"]["points"] for c in nb.cells
            if c.cell_type == "code" and c.metadata["nbgrader"].get("grade")}
