"""Grades into the LMS: `python -m grader export --format canvas` writes Canvas'
gradebook import CSV (student columns Student, ID, SIS User ID, SIS Login ID,
Section; one column per assignment; a second row "Points Possible"), from a
gradebook whose assignment is registered from the course's own release."""
import csv

import pytest

from grader import export
from tools import course

A = "01_blocks"


@pytest.fixture(scope="module")
def gradebook(tmp_path_factory):
    """A gradebook with lesson 1 registered and three students: two graded, one who never handed in."""
    from nbgrader.api import Gradebook

    root = tmp_path_factory.mktemp("canvas") / "course"
    course_api = course.temporary_course(root, [A])
    course.register(course_api, A)
    db_url = course.load_config(root).CourseDirectory.db_url
    with Gradebook(db_url) as gb:
        gb.update_or_create_student("ana", first_name="Ana", last_name="Lima")
        gb.update_or_create_student("ben")
        gb.update_or_create_student("cai")
        for student, share in (("ana", 1.0), ("ben", 0.5)):
            submission = gb.add_submission(A, student)
            for grade in submission.notebooks[0].grades:
                grade.auto_score = grade.max_score * share
        gb.db.commit()
        expected = {s: gb.find_submission(A, s).score for s in ("ana", "ben")}
        max_score = gb.find_assignment(A).max_score
    return {"root": root, "db_url": db_url, "expected": expected, "max_score": max_score}


def _read(path):
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.reader(handle))


def test_canvas_csv_has_the_documented_shape_and_the_gradebook_scores(gradebook, tmp_path):
    from grader.__main__ import main

    out = tmp_path / "canvas.csv"
    assert main(["export", "--format", "canvas", "--out", str(out), "--root", str(gradebook["root"]), A]) == 0
    rows = _read(out)
    assert rows[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", A]
    assert rows[1][0].strip() == "Points Possible" and float(rows[1][5]) == gradebook["max_score"]
    by_login = {row[3]: row for row in rows[2:]}
    assert float(by_login["ana"][5]) == gradebook["expected"]["ana"] and by_login["ana"][0] == "Lima, Ana"
    assert float(by_login["ben"][5]) == gradebook["expected"]["ben"]
    assert by_login["cai"][5] == "", "a student who handed nothing in gets a blank, which Canvas leaves alone"
    assert all(len(row) == len(rows[0]) for row in rows)


def test_a_roster_maps_students_to_their_lms_identities(gradebook, tmp_path):
    roster = tmp_path / "roster.csv"
    roster.write_text("student_id,name,canvas_id,sis_user_id,sis_login_id,section\n"
                      "ana,\"Lima, Ana\",1001,S-17,alima,Group 1\n")
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
