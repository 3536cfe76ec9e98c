"""nbgrader's documentation course and the grader's command line on it, shared by
tests/test_nbgrader_course.py (local workers) and tests/test_dask.py (a Dask cluster)."""

import csv
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import grader_cases
import nbgrader
from nbgrader.api import Gradebook

from grader.course import nbgrader_course as course
from grader.records import export

ASSIGNMENT = "ps1"
MINIMAL_CONFIG = 'c = get_config()  # noqa: F821\nc.CourseDirectory.course_id = "course101"\n'
# nbgrader's own documentation course, as the installed nbgrader ships it: ps1 is two notebooks
# (problem1.ipynb, problem2.ipynb), handed in by bitdiddle and hacker.
NBGRADER_DOCS = Path(nbgrader.__file__).parent / "docs" / "source" / "user_guide"


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
    grader_cases.nbgrader(plain, "autograde", ASSIGNMENT, *grader_cases.ipc_kernels())
    expected = summed_auto_scores(plain)
    assert len(expected) == 2, expected
    # The same hand-ins as a folder per student, graded whole by the grader (never released).
    graded = grade_cli(ours, NBGRADER_DOCS / "submitted", tmp_path, *extra)
    assert {s: float(r["score"]) for s, r in graded.items()} == expected, graded
    assert all(r["status"] == "graded" for r in graded.values()), graded
    for row in graded.values():
        assert "ignored" not in row["detail"], f"a notebook of the assignment was left out: {row['detail']}"
    # The assignment's total points (autograded, written answers and tasks) as plain nbgrader counts
    # them, in the gradebook the export and the report read; each student's total score too.
    assert assignment_points(ours) == assignment_points(plain), (assignment_points(ours), assignment_points(plain))
    for student in expected:
        assert float(graded[student]["max_score"]) + manual_points(ours) == assignment_points(plain)[0], student
    check_the_canvas_column(ours, assignment_points(plain)[0])
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


def assignment_points(folder) -> tuple[float, dict[str, float]]:
    """The assignment's points possible and each student's total score, as nbgrader's gradebook gives them."""
    with Gradebook(f"sqlite:///{folder / 'gradebook.db'}") as gradebook:
        found = gradebook.find_assignment(ASSIGNMENT)
        return found.max_score, {s.student.id: s.score for s in found.submissions}


def manual_points(folder) -> float:
    """The points graded by hand (answers that are also graded, and tasks): what the CSV's max_score
    leaves out."""
    with Gradebook(f"sqlite:///{folder / 'gradebook.db'}") as gradebook:
        found = gradebook.find_assignment(ASSIGNMENT)
        answers = {(nb.name, c.name) for nb in found.notebooks for c in nb.solution_cells}
        by_hand = [c for nb in found.notebooks for c in nb.grade_cells if (nb.name, c.name) in answers]
        return float(
            sum(c.max_score for c in by_hand) + sum(c.max_score for nb in found.notebooks for c in nb.task_cells)
        )


def check_the_canvas_column(folder, points: float) -> None:
    """The Canvas export's column of the graded course: its autograded points only while written
    answers and tasks wait for a grade; once they are graded by hand, all `points` (nbgrader's
    total, tasks included), each student's score the gradebook's."""
    config = course.load_config(folder)
    with Gradebook(f"sqlite:///{folder / 'gradebook.db'}") as gradebook:
        column, problems = export.assignment_column(config, gradebook, ASSIGNMENT, ASSIGNMENT)
        assert problems and not column.written_included, problems
        assert column.points_possible == points - manual_points(folder), column
        for submission in gradebook.find_assignment(ASSIGNMENT).submissions:
            for notebook in submission.notebooks:
                for mark in notebook.grades:
                    if course.waits_for_hand(mark):
                        mark.manual_score = mark.max_score
        gradebook.db.commit()
        column, problems = export.assignment_column(config, gradebook, ASSIGNMENT, ASSIGNMENT)
        assert not problems and column.written_included and column.points_possible == points, (column, problems)
        totals = {s.student.id: s.score for s in gradebook.find_assignment(ASSIGNMENT).submissions}
    assert column.scores == totals, (column.scores, totals)
