"""Grades into Canvas. `python -m grader grade A --submissions submissions.zip --canvas-roster
gradebook.csv` grades Canvas's bulk download (one student per Canvas user, the latest upload
graded); `python -m grader export --format canvas` writes Canvas's gradebook import CSV (Student,
ID, SIS User ID, SIS Login ID, Section, one column per assignment headed as the instructor's Canvas
column, a second row "Points Possible") and refuses, naming student, assignment and cell, where a
written answer has no grade or a submission was graded against an earlier release, unless
--allow-partial. One real grading run (no sandbox: the notebooks are the course's own answers)
feeds every test; a test that changes the course works on a copy."""

import csv
import json
import shutil
import subprocess
import zipfile

import grader_cases
import nbformat
import pytest
import submissions
from nbgrader.api import Gradebook

from grader.lms import canvas
from grader.records import export
from tools import course

pytestmark = pytest.mark.integration

A = "01_blocks"
B = "02_parameters"
# Canvas users: ana uploaded twice (a blank notebook, then her answers as 01_blocks-1.ipynb);
# ben once, late, with the first wrong-answer fixture's mistake.
ANA, BEN = "1001", "1002"
WRONG = submissions.first_wrong(A)
POINTS = submissions.points(A)
AUTO = sum(POINTS.values())
ROSTER = (
    "Student,ID,SIS User ID,SIS Login ID,Section,Lesson 1 (12345)\n"
    "    Points Possible,,,,,12\n"
    f'"Lima, Ana",{ANA},S-17,alima,Group 1,\n'
    f'"Brun, Ben",{BEN},S-18,,Group 2,\n'
    '"Cruz, Cai",1003,S-19,ccruz,Group 1,\n'
)


def _written(assignment=A) -> dict[str, float]:
    """Points of each written (hand-graded) answer, from the released exercise."""
    return {
        c.metadata["nbgrader"]["grade_id"]: c.metadata["nbgrader"]["points"]
        for c in submissions.exercise(assignment).cells
        if c.metadata.get("nbgrader", {}).get("grade") and c.metadata["nbgrader"].get("solution")
    }


def _download(folder):
    """Canvas's zip, as *Download Submissions* names its files."""
    files = {
        f"limaana_{ANA}_500_{A}.ipynb": submissions.exercise(A),
        f"limaana_{ANA}_731_{A}-1.ipynb": submissions.answered(A),
        f"brunben_late_{BEN}_640_{A}.ipynb": submissions.answered(A, {WRONG.answer_id: WRONG.code}),
    }
    path = folder / "submissions.zip"
    with zipfile.ZipFile(path, "w") as archive:
        for name, nb in files.items():
            archive.writestr(name, nbformat.writes(nb))
    return path


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """A course with lessons 1 and 2 registered; lesson 1 graded from a Canvas download."""
    from grader.__main__ import main

    base = tmp_path_factory.mktemp("canvas")
    root = base / "course"
    course.register(course.temporary_course(root, [A, B]), B)
    roster = base / "gradebook.csv"
    roster.write_text(ROSTER)
    out = base / "grades.csv"
    zipped = _download(base)
    command = ["grade", A, "--submissions", str(zipped), "--canvas-roster", str(roster), "--root", str(root)]
    assert main(command + ["--out", str(out), "--no-sandbox", "--jobs", "2"]) == 0
    return {"root": root, "roster": roster, "zip": zipped, "rows": export.read_csv(out), "base": base}


def _copy(graded, tmp_path):
    """A copy of the graded course (gradebook, autograded notebooks, sources) to change."""
    root = tmp_path / "course"
    shutil.copytree(graded["root"], root)
    return root


def _grade_written(root, share=1.0, students=("alima", BEN)):
    with Gradebook(course.load_config(root).CourseDirectory.db_url) as gb:
        for student in students:
            for cell, points in _written().items():
                gb.find_grade(cell, A, A, student).manual_score = points * share
        gb.db.commit()


def _export(root, *args, capsys=None):
    from grader.__main__ import main

    out = root / "canvas.csv"
    out.unlink(missing_ok=True)
    code = main(["export", "--format", "canvas", "--root", str(root), "--out", str(out), *args])
    return code, (list(csv.reader(open(out, encoding="utf-8"))) if out.exists() else None)


def _by_canvas_id(rows):
    return {row[1]: row for row in rows[2:]}


def test_a_canvas_download_grades_one_row_per_canvas_user_and_the_latest_upload(graded):
    rows = {row["student_id"]: row for row in graded["rows"]}
    assert sorted(rows) == sorted(["alima", BEN]), (
        "one student per Canvas user id: the roster's login, else the user id"
    )
    assert float(rows["alima"]["score"]) == AUTO, "ana's latest upload (01_blocks-1.ipynb) has every answer"
    assert f"graded {A}-1.ipynb; not graded: {A}.ipynb" in rows["alima"]["detail"]
    lost = sum(POINTS[t] for t in WRONG.fails)
    assert float(rows[BEN]["score"]) == AUTO - lost and "(late)" in rows[BEN]["detail"]
    with Gradebook(course.load_config(graded["root"]).CourseDirectory.db_url) as gb:
        ana = gb.find_student("alima")
        assert (ana.last_name, ana.first_name, ana.lms_user_id) == ("Lima", "Ana", ANA)
        assert gb.find_student(BEN).lms_user_id == BEN


def test_the_extracted_folder_reads_as_the_zip_does(graded, tmp_path):
    with zipfile.ZipFile(graded["zip"]) as archive:
        archive.extractall(tmp_path)
    (tmp_path / "submissions.zip").unlink(missing_ok=True)
    assert canvas.is_download(tmp_path) and canvas.is_download(graded["zip"])
    from_folder, skipped = canvas.read_download(tmp_path)
    from_zip, _ = canvas.read_download(graded["zip"])
    assert skipped == [] and sorted((u.file_name, u.data) for u in from_folder) == sorted(
        (u.file_name, u.data) for u in from_zip
    )
    students = {s.user_id: s for s in canvas.students(from_zip, canvas.read_roster(graded["roster"]))}
    assert students[ANA].graded.original == f"{A}-1.ipynb" and students[ANA].graded.attachment_id == 731
    assert students[BEN].graded.late and students[BEN].student_id == BEN, "no SIS login: the Canvas user id"
    (tmp_path / "notes.txt").write_text("x")
    assert not canvas.is_download(tmp_path), "a folder with a file Canvas would not name is a plain downloads folder"


def test_in_one_hand_in_of_several_files_the_assignments_latest_re_upload_is_graded(tmp_path, capsys):
    from grader.__main__ import main

    for name in (f"x_7_90_{A}.ipynb", f"x_7_90_{A}-2.ipynb", f"x_7_90_{A}-1.ipynb", "x_7_90_scratch.ipynb"):
        (tmp_path / name).write_text("{}")
    (tmp_path / "x_7_90_notes.pdf").write_text("")
    (mine,) = canvas.students(canvas.read_download(tmp_path)[0], {}, A)
    assert mine.graded.original == f"{A}-2.ipynb" and len(mine.ignored) == 4
    bad = tmp_path / "bad.zip"
    bad.write_bytes(b"PK\x05\x06" + b"\0" * 18)  # an empty zip: no files
    assert canvas.read_download(bad) == ([], [])
    roster = tmp_path / "roster.csv"
    roster.write_text("Name,Login\nAna,ana\n")
    assert main(["grade", A, "--submissions", str(tmp_path), "--canvas-roster", str(roster)]) == 2
    assert "not Canvas's gradebook export (no Student, ID column" in capsys.readouterr().err


def test_export_refuses_while_a_written_answer_has_no_grade(graded, tmp_path, capsys):
    code, rows = _export(graded["root"], A)
    err = capsys.readouterr().err
    assert code == 1 and rows is None, "nothing is written while a written answer has no grade"
    for cell in _written():
        assert f"{A}: alima: written answer '{cell}' has no grade" in err
        assert f"{A}: {BEN}: written answer '{cell}' has no grade" in err
    assert "--allow-partial" in err


def test_allow_partial_exports_the_autograded_points_only_and_says_so(graded, capsys):
    code, rows = _export(graded["root"], A, "--allow-partial")
    err = capsys.readouterr().err
    assert code == 0 and "AUTOGRADED points only" in err and "partial:" in err
    assert float(rows[1][5]) == AUTO, "Points Possible counts only what is graded: the autograded tests"
    assert float(_by_canvas_id(rows)[ANA][5]) == AUTO, (
        "a perfect student shows full marks, not the written points missing"
    )


def test_graded_written_answers_give_the_full_total(graded, tmp_path, capsys):
    root = _copy(graded, tmp_path)
    _grade_written(root, share=0.5)
    code, rows = _export(root, A)
    assert code == 0, capsys.readouterr().err
    assert float(rows[1][5]) == submissions.max_score(A)
    assert float(_by_canvas_id(rows)[ANA][5]) == AUTO + sum(_written().values()) * 0.5


def test_export_refuses_when_the_release_changed_after_grading(graded, tmp_path, capsys):
    root = _copy(graded, tmp_path)
    _grade_written(root)
    source = root / "solutions" / A / f"{A}.ipynb"
    nb = nbformat.read(source, as_version=4)
    tests = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") in POINTS]
    tests[0].metadata["nbgrader"]["points"] += 1  # worth one point more
    tests[1].source += "\nassert True  # a test added"  # same points, another test
    nbformat.write(nb, source)
    code, rows = _export(root, A)
    err = capsys.readouterr().err
    name0, name1 = (c.metadata["nbgrader"]["grade_id"] for c in tests[:2])
    assert code == 1 and rows is None
    was = POINTS[name0]
    assert (
        f"{A}: alima: graded against an earlier release ({name0} worth {was + 1} points now, {was} when graded" in err
    )
    assert f"{name1} changed" in err
    code, rows = _export(root, A, "--allow-partial")
    assert code == 0 and "graded against an earlier release" in capsys.readouterr().err
    assert float(rows[1][5]) == submissions.max_score(A) + 1, "Points Possible is the current release's"
    assert [row[5] for row in rows[2:]] == ["", ""], "a stale grade is left blank: Canvas keeps what it has"


def test_each_assignment_fills_the_instructors_canvas_column(graded, tmp_path, capsys):
    root = _copy(graded, tmp_path)
    _grade_written(root)
    code, rows = _export(root, "--column", f"{A}=Lesson 1 (12345)")
    assert code == 0 and rows[0] == export.CANVAS_COLUMNS + ["Lesson 1 (12345)"], capsys.readouterr().err
    for mapping in ({A: "Blocks (777)"}, None):
        path = tmp_path / ("columns.json" if mapping else "columns.csv")
        path.write_text(json.dumps(mapping) if mapping else f"assignment,column\n{A},Blocks (778)\n")
        code, rows = _export(root, "--columns", str(path), "--assignment", A)
        assert code == 0 and rows[0][5] == ("Blocks (777)" if mapping else "Blocks (778)")
    code, _ = _export(root, "--column", f"{A}=Lesson 1")
    assert code == 0 and "no Canvas assignment id" in capsys.readouterr().err
    assert _export(root, "--column", "Lesson 1 (12345)")[0] == 2
    assert "ASSIGNMENT=CANVAS COLUMN" in capsys.readouterr().err
    assert _export(root, "--column", "nope=X (1)")[0] == 2 and "nope" in capsys.readouterr().err


def test_a_bare_export_has_only_the_graded_assignments(graded, tmp_path):
    root = _copy(graded, tmp_path)
    _grade_written(root)
    code, rows = _export(root)
    assert code == 0 and rows[0][5:] == [A], f"{B} is registered but has no submission: no empty column"
    code, rows = _export(root, A, "--assignment", B)
    assert code == 0 and rows[0][5:] == [A, B] and all(row[6] == "" for row in rows[2:])


def test_the_canvas_gradebook_export_is_a_roster_for_the_import(graded, tmp_path):
    root = _copy(graded, tmp_path)
    _grade_written(root)
    code, rows = _export(root, "--roster", str(graded["roster"]))
    assert code == 0
    by_id = {row[1]: row for row in rows[2:]}
    assert by_id[ANA][:5] == ["Lima, Ana", ANA, "S-17", "alima", "Group 1"]
    assert by_id[BEN][:5] == ["Brun, Ben", BEN, "S-18", "", "Group 2"]
    assert by_id["1003"][5] == "", "on the roster, never handed in: blank, which Canvas leaves alone"
    assert len(rows) == 2 + 3


def test_a_roster_of_our_own_maps_students_to_their_lms_identities(graded, tmp_path):
    root = _copy(graded, tmp_path)
    _grade_written(root)
    roster = tmp_path / "roster.csv"
    roster.write_text('student_id,name,canvas_id,sis_user_id,sis_login_id,section\nalima,"Lima, A.",9,S,al,G\n')
    code, rows = _export(root, "--roster", str(roster))
    assert code == 0 and next(r for r in rows[2:] if r[1] == "9")[:5] == ["Lima, A.", "9", "S", "al", "G"]


def test_bad_input_gets_a_clear_message(graded, tmp_path, capsys):
    roster = tmp_path / "roster.csv"
    roster.write_text("name,section\nAna,1\n")
    assert _export(graded["root"], "--roster", str(roster))[0] == 2
    assert "needs a student_id column" in capsys.readouterr().err
    assert _export(graded["root"], "no_such_assignment")[0] == 2
    assert "no_such_assignment" in capsys.readouterr().err


def test_a_grade_without_its_autograded_notebook_is_not_exported(graded, tmp_path, capsys):
    root = _copy(graded, tmp_path)
    _grade_written(root)
    shutil.rmtree(root / "autograded" / BEN / A)  # what a failed regrade leaves: the old score, no notebook
    code, rows = _export(root, A)
    assert code == 1 and rows is None and f"{A}: {BEN}: no autograded notebook" in capsys.readouterr().err
    code, rows = _export(root, A, "--allow-partial")
    assert code == 0 and _by_canvas_id(rows)[BEN][5] == "" and float(_by_canvas_id(rows)[ANA][5]) > 0


def test_a_warning_when_points_possible_differs_from_the_rosters_canvas_column(graded, tmp_path, capsys):
    """Canvas's gradebook export (the roster) says what its column is worth: an export out of fewer
    points (--allow-partial leaves the written answers out) says so, a full one does not."""
    column = "Lesson 1 (12345)"
    roster = tmp_path / "gradebook.csv"
    full = submissions.max_score(A)
    roster.write_text(ROSTER.replace("Points Possible,,,,,12", f"Points Possible,,,,,{full:g}"))
    assert canvas.points_possible(roster) == {column: full}
    mapped = ["--column", f"{A}={column}", "--roster", str(roster)]
    code, rows = _export(graded["root"], A, "--allow-partial", *mapped)
    err = capsys.readouterr().err
    assert code == 0 and float(rows[1][5]) == AUTO
    assert f"warning: column '{column}': this export's Points Possible is {AUTO:g}" in err
    assert f"says the column is worth {full:g}" in err
    root = _copy(graded, tmp_path)
    _grade_written(root)
    code, rows = _export(root, A, *mapped)
    assert code == 0 and float(rows[1][5]) == full and "warning:" not in capsys.readouterr().err
    code, _ = _export(root, A, "--roster", str(roster))  # another column than the roster's: nothing to compare
    assert code == 0 and "warning:" not in capsys.readouterr().err


@pytest.mark.sandbox
def test_make_grade_passes_the_roster_as_the_canvas_roster(graded, tmp_path):
    """`make grade A=... SUBMISSIONS=submissions.zip ROSTER=gradebook.csv`: the roster names each
    Canvas user (ana by her SIS login; without the roster she would be her Canvas id)."""
    root = tmp_path / "course"
    course.temporary_course(root, [A])
    command = grader_cases.make_command(
        "grade", f"A={A}", f"SUBMISSIONS={graded['zip']}", f"ROSTER={graded['roster']}", "JOBS=1"
    )
    assert f'--canvas-roster "{graded["roster"]}"' in command, command
    done = subprocess.run(command, shell=True, cwd=root, env=grader_cases.cli_env(), capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    rows = {row["student_id"]: row for row in export.read_csv(root / "grades" / f"{A}.csv")}
    assert set(rows) == {"alima", BEN}
    assert float(rows["alima"]["score"]) == AUTO and float(rows[BEN]["score"]) == AUTO - sum(
        POINTS[t] for t in WRONG.fails
    )
