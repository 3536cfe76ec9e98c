"""`python -m grader grade --root COURSE` on a course the way nbgrader's documentation lays one
out: its default folders (source/, release/, submitted/, autograded/, gradebook.db in the
course folder), an assignment with its own name, and a config that sets only the course id.
Nothing of this repository's nbgrader_config.py (no Execute.timeout, no folder names): what
the course leaves unset comes from nbgrader's own defaults. The grader's scores must equal
plain `nbgrader autograde` on the same hand-ins."""

import csv
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import grader_cases
import nbformat
import nbgrader
import pytest
import submissions

from conftest import ROOT
from grader import grade

pytestmark = [pytest.mark.integration, pytest.mark.sandbox]

A = grader_cases.A
ASSIGNMENT = "ps1"
MINIMAL_CONFIG = 'c = get_config()  # noqa: F821\nc.CourseDirectory.course_id = "course101"\n'


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
    grader_cases.nbgrader(folder, "autograde", ASSIGNMENT)
    return summed_auto_scores(folder)


def grade_cli(course, downloads, tmp_path, *extra: str) -> dict[str, dict]:
    """`python -m grader grade ps1 --root COURSE` as an instructor runs it: the CSV's rows by student."""
    csv_path = tmp_path / "grades.csv"
    done = subprocess.run(
        [sys.executable, "-m", "grader", "grade", ASSIGNMENT, "--submissions", str(downloads),
         "--root", str(course), "--jobs", "2", "--out", str(csv_path), *extra],
        cwd=tmp_path, env=grader_cases.cli_env(), capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    with open(csv_path, newline="", encoding="utf-8") as handle:
        return {row["student_id"]: row for row in csv.DictReader(handle)}


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


# nbgrader's own documentation course, as the installed nbgrader ships it: ps1 is two notebooks
# (problem1.ipynb, problem2.ipynb), handed in by bitdiddle and hacker.
NBGRADER_DOCS = Path(nbgrader.__file__).parent / "docs" / "source" / "user_guide"


def test_nbgraders_documentation_course_of_two_notebooks_grades_as_plain_nbgrader(tmp_path):
    check_the_documentation_course(tmp_path)


def check_the_documentation_course(tmp_path, *extra: str) -> None:
    """nbgrader's documentation course (ps1: two notebooks) graded whole with `extra` options (a Dask
    scheduler, say): plain nbgrader's scores (bitdiddle 1.5, hacker 3.0), both notebooks autograded."""
    ours = tmp_path / "course101"
    shutil.copytree(NBGRADER_DOCS / "source" / ASSIGNMENT, ours / "source" / ASSIGNMENT)
    (ours / "nbgrader_config.py").write_text(MINIMAL_CONFIG, encoding="utf-8")
    plain = tmp_path / "plain"
    shutil.copytree(ours, plain)
    shutil.copytree(NBGRADER_DOCS / "submitted", plain / "submitted")
    grader_cases.nbgrader(plain, "generate_assignment", ASSIGNMENT, "--force")  # plain nbgrader's way
    grader_cases.nbgrader(plain, "autograde", ASSIGNMENT)
    expected = summed_auto_scores(plain)
    assert len(expected) == 2, expected
    # The same hand-ins as a folder per student, graded whole by the grader (never released).
    graded = grade_cli(ours, NBGRADER_DOCS / "submitted", tmp_path, *extra)
    assert {s: float(r["score"]) for s, r in graded.items()} == expected, graded
    assert all(r["status"] == "graded" for r in graded.values()), graded
    for row in graded.values():
        assert "ignored" not in row["detail"], f"a notebook of the assignment was left out: {row['detail']}"
    # Both notebooks of each student were autograded.
    for student in expected:
        names = sorted(p.name for p in (ours / "autograded" / student / ASSIGNMENT).glob("*.ipynb"))
        assert names == ["problem1.ipynb", "problem2.ipynb"], names


def summed_auto_scores(folder) -> dict[str, float]:
    """Each student's autograded points in the course's gradebook, summed over its notebooks."""
    with sqlite3.connect(folder / "gradebook.db") as db:
        rows = db.execute(
            "SELECT student.id, SUM(grade.auto_score) FROM grade "
            "JOIN submitted_notebook ON grade.notebook_id = submitted_notebook.id "
            "JOIN submitted_assignment ON submitted_notebook.assignment_id = submitted_assignment.id "
            "JOIN student ON submitted_assignment.student_id = student.id "
            "WHERE grade.auto_score IS NOT NULL GROUP BY student.id"
        ).fetchall()
    return {student: float(score) for student, score in rows}


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
