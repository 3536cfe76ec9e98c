"""A failure of the grader is never a student's zero, through nbgrader's own autograde with
the course's config (what Formgrader's Autograde button runs): the grader's failure fails
loudly and keeps no score, the student's own crash is graded with the cell and the cause."""

from __future__ import annotations

import grader_cases
import grading_checks
import nbformat
import pytest
from not_graded_cases import CRASHES, check_crashes_graded, crash
from submissions import answered

from grader.course import nbgrader_course as grader_course
from tools import course

pytestmark = [pytest.mark.integration, pytest.mark.sandbox]

A = grader_cases.A


def test_nbgraders_own_autograde_fails_loudly_with_the_cause_and_keeps_no_score(tmp_path):
    """Formgrader's Autograde button runs nbgrader's autograde with the course's config: the
    same engine, so the same cause, a failed autograde and no score."""
    root = tmp_path / "course"
    course.generate(course.temporary_course(root, [A]), A)  # as the instructor releases it (the API)
    target = root / "submitted" / "ana" / A
    target.mkdir(parents=True)
    nbformat.write(answered(A), target / f"{A}.ipynb")
    data, interpreter = grading_checks.broken_kernel_spec(tmp_path)
    done = grader_cases.nbgrader(
        root, "autograde", A, "--student", "ana", env=grader_cases.cli_env(JUPYTER_PATH=str(data)), check=False
    )
    said = done.stdout + done.stderr
    assert done.returncode != 0, said
    assert f"kernel did not start (interpreter {interpreter} is missing)" in said, said[-3000:]
    assert not grading_checks.auto_scores(grader_course.db_url(grader_course.load_config(root)), A, "ana")
    assert not list((root / "autograded").glob(f"*/{A}/{A}.ipynb")), "no autograded notebook is left behind"


def test_nbgraders_own_autograde_grades_the_students_own_crash(tmp_path):
    """Formgrader's Autograde button: nbgrader's autograde with the course's config."""
    root = tmp_path / "course"
    course.generate(course.temporary_course(root, [A]), A)
    for name, code in CRASHES.items():
        (root / "submitted" / name / A).mkdir(parents=True)
        nbformat.write(crash(code), root / "submitted" / name / A / f"{A}.ipynb")
    limits = ["--Execute.timeout=5", "--GuardedExecute.interrupt_grace=3"]
    grader_cases.nbgrader(root, "autograde", A, *limits)
    grader_cases.nbgrader(root, "generate_feedback", A)
    db_url = grader_course.db_url(grader_course.load_config(root))
    scores = {name: sum(grading_checks.auto_scores(db_url, A, name)) for name in CRASHES}
    pages = {name: (root / "feedback" / name / A / f"{A}.html").read_text() for name in CRASHES}
    check_crashes_graded(scores, pages)
