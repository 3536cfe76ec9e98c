"""Grades into the LMS: `python -m grader export --format canvas` writes Canvas'
gradebook import CSV (student columns Student, ID, SIS User ID, SIS Login ID,
Section; one column per assignment; a second row "Points Possible"), from a
gradebook whose assignment is registered from the course's own release."""

import csv

import pytest

from grader import export
from tools import course

pytestmark = pytest.mark.unit

A = "01_blocks"
B = "02_parameters"


@pytest.fixture(scope="module")
def gradebook(tmp_path_factory):
    """A gradebook with lessons 1 and 2 registered and three students: two graded in lesson 1, one who
    never handed in; only ben handed in lesson 2."""
    from nbgrader.api import Gradebook

    root = tmp_path_factory.mktemp("canvas") / "course"
    course_api = course.temporary_course(root, [A, B])
    course.register(course_api, A)
    course.register(course_api, B)
    db_url = course.load_config(root).CourseDirectory.db_url
    with Gradebook(db_url) as gb:
        gb.update_or_create_student("ana", first_name="Ana", last_name="Lima")
        gb.update_or_create_student("ben")
        gb.update_or_create_student("cai")
        for assignment, student, share in ((A, "ana", 1.0), (A, "ben", 0.5), (B, "ben", 1.0)):
            submission = gb.add_submission(assignment, student)
            for grade in submission.notebooks[0].grades:
                grade.auto_score = grade.max_score * share
        gb.db.commit()
        expected = {s: gb.find_submission(A, s).score for s in ("ana", "ben")}
        expected["ben", B] = gb.find_submission(B, "ben").score
        max_score = gb.find_assignment(A).max_score
    return {"root": root, "db_url": db_url, "expected": expected, "max_score": max_score}


def _release_points(root, assignment=A) -> float:
    """The assignment's points, read from the released notebook's nbgrader cell metadata."""
    import nbformat

    nb = nbformat.read(root / "exercises" / assignment / f"{assignment}.ipynb", as_version=4)
    return sum(
        cell.metadata.get("nbgrader", {}).get("points", 0)
        for cell in nb.cells
        if cell.metadata.get("nbgrader", {}).get("grade")
    )


def _read(path):
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.reader(handle))


def test_canvas_csv_has_the_documented_shape_and_the_gradebook_scores(gradebook, tmp_path):
    from grader.__main__ import main

    out = tmp_path / "canvas.csv"
    assert main(["export", "--format", "canvas", "--out", str(out), "--root", str(gradebook["root"]), A]) == 0
    rows = _read(out)
    assert rows[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", A]
    assert rows[1][0].strip() == "Points Possible" and rows[1][1:5] == ["", "", "", ""]
    assert float(rows[1][5]) == _release_points(gradebook["root"]) == gradebook["max_score"]
    by_login = {row[3]: row for row in rows[2:]}
    assert float(by_login["ana"][5]) == gradebook["expected"]["ana"] and by_login["ana"][0] == "Lima, Ana"
    assert float(by_login["ben"][5]) == gradebook["expected"]["ben"]
    assert by_login["cai"][5] == "", "a student who handed nothing in gets a blank, which Canvas leaves alone"
    assert all(len(row) == len(rows[0]) for row in rows)


def test_a_roster_maps_students_to_their_lms_identities(gradebook, tmp_path):
    roster = tmp_path / "roster.csv"
    roster.write_text(
        'student_id,name,canvas_id,sis_user_id,sis_login_id,section\nana,"Lima, Ana",1001,S-17,alima,Group 1\n'
    )
    out = tmp_path / "canvas.csv"
    export.write_canvas_csv(gradebook["db_url"], out, [A], roster)
    ana = next(row for row in _read(out)[2:] if row[1] == "1001")
    assert ana[:5] == ["Lima, Ana", "1001", "S-17", "alima", "Group 1"]
    assert float(ana[5]) == gradebook["expected"]["ana"]


def test_bad_input_gets_a_clear_message(gradebook, tmp_path, capsys):
    from grader.__main__ import main

    roster = tmp_path / "roster.csv"
    roster.write_text("name,section\nAna,1\n")
    assert main(["export", "--format", "canvas", "--roster", str(roster), "--root", str(gradebook["root"])]) == 2
    assert "needs a student_id column" in capsys.readouterr().err
    assert main(["export", "--format", "canvas", "--root", str(gradebook["root"]), "no_such_assignment"]) == 2
    assert "no_such_assignment" in capsys.readouterr().err


def test_without_assignment_names_every_assignment_of_the_gradebook_gets_a_column(gradebook, tmp_path):
    from grader.__main__ import main

    out = tmp_path / "all.csv"
    assert main(["export", "--format", "canvas", "--out", str(out), "--root", str(gradebook["root"])]) == 0
    rows = _read(out)
    assert rows[0][:5] == export.CANVAS_COLUMNS and sorted(rows[0][5:]) == [A, B]
    column = {name: rows[0].index(name) for name in (A, B)}
    assert float(rows[1][column[B]]) == _release_points(gradebook["root"], B)
    by_login = {row[3]: row for row in rows[2:]}
    assert float(by_login["ben"][column[B]]) == gradebook["expected"]["ben", B]
    assert by_login["ana"][column[B]] == "" and float(by_login["ana"][column[A]]) == gradebook["expected"]["ana"]
