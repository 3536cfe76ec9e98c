"""A fix mid-term, as docs/instructors.md's runbook does it: a class is graded and its written
answers marked by hand; the instructor fixes a test cell (its text and its points), re-releases
and grades again. A student who holds the earlier release is told that the notebook was graded
against the corrected release, never that they edited a read-only cell; a student who really
edited one still is; the hand-given written grades stay settled where the answer is the same."""

from __future__ import annotations

import nbformat
import pytest
from nbgrader.api import Gradebook

from grader.grading import grade
from tools import cells, course

pytestmark = [pytest.mark.integration, pytest.mark.sandbox]

A = "02_parameters"


def written_cells(nb) -> list[str]:
    return [
        c.metadata["nbgrader"]["grade_id"]
        for c in nb.cells
        if c.cell_type == "markdown" and c.metadata.get("nbgrader", {}).get("grade")
    ]


def test_a_fix_mid_term_regrades_without_accusing_anyone_or_reopening_written_grades(tmp_path):
    root = tmp_path / "course"
    course_api = course.temporary_course(root, [A])
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    honest = cells.answered(A)
    editor = cells.answered(A)
    instructions = next(c for c in editor.cells if c.cell_type == "markdown" and not c.metadata["nbgrader"]["grade"])
    instructions.source += "\n\nI changed the instructions."
    nbformat.write(honest, downloads / "ada.ipynb")
    nbformat.write(editor, downloads / "eve.ipynb")
    options = grade.Options(A, downloads, jobs=2, root=root, cell_timeout=30, notebook_timeout=120)
    first = {row.student_id: row for row in grade.run(options)}
    assert first["ada"].status == "graded" and "read-only" not in first["ada"].detail

    db_url = f"sqlite:///{root / 'gradebook.db'}"
    written = written_cells(honest)
    assert written, "the lesson has written answers"
    with Gradebook(db_url) as gradebook:
        for grade_id in written:
            mark = gradebook.find_grade(grade_id, A, A, "ada")
            mark.manual_score, mark.needs_manual_grade = 1, False
        gradebook.db.commit()

    # The fix: a test cell's message reworded and its points raised, then released again.
    source_path = root / "solutions" / A / f"{A}.ipynb"
    source = nbformat.read(source_path, as_version=4)
    test_cell = next(c for c in source.cells if c.metadata.get("nbgrader", {}).get("grade"))
    test_cell.source = "# Fixed mid-term: a clearer message.\n" + test_cell.source
    test_cell.metadata["nbgrader"]["points"] += 1
    fixed_id = test_cell.metadata["nbgrader"]["grade_id"]
    nbformat.write(source, source_path)
    course.generate(course_api, A)

    second = {row.student_id: row for row in grade.run(options)}
    ada, eve = second["ada"], second["eve"]
    assert "graded against the corrected release" in ada.detail and fixed_id in ada.detail, ada.detail
    assert "read-only cell was edited" not in ada.detail and "points changed" not in ada.detail, ada.detail
    assert ada.score == first["ada"].score + 1, "the corrected test is the one that ran"
    assert "read-only cell was edited" in eve.detail, "a real edit is still named"
    with Gradebook(db_url) as gradebook:
        for grade_id in written:
            mark = gradebook.find_grade(grade_id, A, A, "ada")
            assert (mark.manual_score, mark.needs_manual_grade) == (1, False), grade_id
