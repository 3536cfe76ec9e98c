"""`python -m grader grade --root COURSE` on a course the way nbgrader's documentation lays one
out: its default folders (source/, release/, submitted/, autograded/, gradebook.db in the
course folder), an assignment with its own name, and a config that sets only the course id.
Nothing of this repository's nbgrader_config.py (no Execute.timeout, no folder names): what
the course leaves unset comes from nbgrader's own defaults. The grader's scores must equal
plain `nbgrader autograde` on the same hand-ins."""

import shutil

import grader_cases
import nbformat
import pytest
import submissions
from nbgrader_docs_course import (
    ASSIGNMENT,
    MINIMAL_CONFIG,
    check_the_documentation_course,
    grade_cli,
    summed_auto_scores,
)

from conftest import ROOT
from grader.grading import grade

pytestmark = [pytest.mark.integration, pytest.mark.sandbox]

A = grader_cases.A


def docs_course(folder):
    """A course folder as nbgrader's docs make one, released with nbgrader's own CLI."""
    (folder / "source" / ASSIGNMENT).mkdir(parents=True)
    (folder / "nbgrader_config.py").write_text(MINIMAL_CONFIG, encoding="utf-8")
    shutil.copyfile(ROOT / "solutions" / A / f"{A}.ipynb", folder / "source" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb")
    grader_cases.nbgrader(folder, "generate_assignment", ASSIGNMENT, "--force")
    return folder


def plain_scores(folder, handed_in: dict) -> dict[str, float]:
    """nbgrader autograde, unchanged, on the hand-ins in submitted/<student>/<assignment>/ (one
    run grades every student there, as `nbgrader autograde ps1` does for a class)."""
    for student, notebook in handed_in.items():
        target = folder / "submitted" / student / ASSIGNMENT
        target.mkdir(parents=True)
        nbformat.write(notebook, target / f"{ASSIGNMENT}.ipynb")
    grader_cases.nbgrader(folder, "autograde", ASSIGNMENT, *grader_cases.ipc_kernels())
    return summed_auto_scores(folder)


def test_a_course_laid_out_as_nbgraders_docs_grades_as_plain_nbgrader_does(tmp_path):
    kit = {s.student: s for s in submissions.standard(A)}
    handed_in = {student: s.notebook for student, s in kit.items()}
    ours = docs_course(tmp_path / "course101")
    plain = tmp_path / "plain"  # the same release, graded by nbgrader alone
    shutil.copytree(ours, plain)
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    for student, notebook in handed_in.items():
        nbformat.write(notebook, downloads / f"{student}.ipynb")
    graded = grade_cli(ours, downloads, tmp_path)
    assert {s: float(r["score"]) for s, r in graded.items()} == {s: float(k.score) for s, k in kit.items()}
    assert all(r["status"] == "graded" for r in graded.values()), graded
    # The same hand-ins through nbgrader alone, on nbgrader's own folders and defaults.
    assert plain_scores(plain, handed_in) == {s: float(k.score) for s, k in kit.items()}
    # The grader used the course's folders, as nbgrader names them by default.
    for student in kit:
        assert (ours / "autograded" / student / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").exists()
    assert (ours / "gradebook.db").exists()


def test_nbgraders_documentation_course_of_two_notebooks_grades_as_plain_nbgrader(tmp_path):
    check_the_documentation_course(tmp_path)


def test_nbgraders_see_the_above_traceback_becomes_the_tracebacks_last_line():
    log = (
        "[ERROR] There was an error processing assignment: /c/submitted/ana/ps1\n"
        "    Traceback (most recent call last):\n"
        '      File "x.py", line 1, in f\n'
        "    FileNotFoundError: [Errno 2] No such file or directory: 'release/ps1/problem1.ipynb'\n"
        "[ERROR] Please see the the above traceback for details on the specific errors on the above failures.\n"
    )
    result = {"success": False, "log": log, "error": "NbGraderException: Please see the the above traceback"}
    cause = grade.traceback_cause(result, grade.failure_cause(result))
    assert cause == "FileNotFoundError: [Errno 2] No such file or directory: 'release/ps1/problem1.ipynb'", cause
    assert grade.traceback_cause(result, "kernel did not start (x)") == "kernel did not start (x)"
