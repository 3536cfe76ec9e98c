"""Every right answer of tests/right_answers/ graded for real, on both of the course's paths: the
grader's command line (`python -m grader grade`: sandbox, runner, judges outside the kernel) and
nbgrader's own `nbgrader autograde` with the course's config. Each must score full and unflagged:
an honest answer written another way is never rejected, never accused.

tests/test_exercises.py runs the same answers in process against the tests alone; here the
whole grader sees them, with the judges that once flagged an OrderedDict or a numpy integer.
Student `rightK` hands in the K-th right answer of every item at once (the model answer where
an item has fewer), so a lesson with three right answers per item costs three notebooks."""

from __future__ import annotations

import csv
import shutil
import subprocess
import sys

import nbformat
import pytest
from grader_cases import nbgrader
from submissions import full_score

from conftest import ASSIGNMENTS, ROOT
from grader import collect, grade, sandbox
from tools import cells, course

pytestmark = [pytest.mark.integration, pytest.mark.sandbox]

LESSONS = [lesson for lesson in ASSIGNMENTS if cells.read_right_answers(lesson)]


def students(lesson: str) -> dict[str, dict[str, str]]:
    """Student id -> the answers (answer id -> code) that student hands in."""
    by_item: dict[str, list[str]] = {}
    for right in cells.read_right_answers(lesson):
        by_item.setdefault(right.answer_id, []).append(right.code)
    count = max(len(codes) for codes in by_item.values())
    return {
        f"right{k + 1}": {item: codes[k] for item, codes in by_item.items() if k < len(codes)} for k in range(count)
    }


@pytest.fixture(scope="module")
def downloads(tmp_path_factory):
    """One folder of `<student>.ipynb` per lesson."""
    top = tmp_path_factory.mktemp("right-answers")
    for lesson in LESSONS:
        (top / lesson).mkdir()
        for student, answers in students(lesson).items():
            nbformat.write(cells.answered(lesson, answers), top / lesson / f"{student}.ipynb")
    return top


@pytest.fixture(scope="module")
def graded_by_the_command_line(tmp_path_factory, downloads):
    assert sandbox.available(), "bubblewrap is missing: make test installs it (tools/system_packages.sh)"
    root = tmp_path_factory.mktemp("cli-course")
    course.temporary_course(root, LESSONS)
    rows = {}
    for lesson in LESSONS:
        out = root / f"{lesson}.csv"
        command = [sys.executable, "-m", "grader", "grade", lesson, "--root", str(root), "--out", str(out)]
        done = subprocess.run(
            command + ["--submissions", str(downloads / lesson), "--jobs", "2"],
            cwd=ROOT,
            capture_output=True,
            text=True,
        )
        found = {row["student_id"]: row for row in csv.DictReader(open(out, encoding="utf-8"))} if out.exists() else {}
        rows[lesson] = (done.returncode, done.stderr, found)
    return rows


@pytest.fixture(scope="module")
def graded_by_nbgrader(tmp_path_factory, downloads):
    """Handed in where `nbgrader collect` puts them, then one `nbgrader autograde` run per lesson."""
    root = tmp_path_factory.mktemp("nbgrader-course")
    course_api = course.temporary_course(root, LESSONS)
    rows = {}
    for lesson in LESSONS:
        handed_in = collect.collect(downloads / lesson, lesson)
        for submission in handed_in:
            target = root / "submitted" / submission.grader_id / lesson
            target.mkdir(parents=True)
            shutil.copyfile(submission.source, target / f"{lesson}.ipynb")
        course.generate(course_api, lesson)
        done = nbgrader(root, "autograde", lesson, "--force", check=False)
        options = grade.Options(lesson, downloads / lesson, root=root)
        rows[lesson] = (done.stderr, {row.student_id: row for row in grade.rows(options, handed_in, {})})
    return rows


@pytest.mark.parametrize("lesson", LESSONS)
def test_every_right_answer_scores_full_and_unflagged_through_the_grader(graded_by_the_command_line, lesson):
    status, stderr, rows = graded_by_the_command_line[lesson]
    assert status == 0, stderr[-3000:]
    assert set(rows) == set(students(lesson))
    for student, row in rows.items():
        lost = {k: v for k, v in row.items() if k.startswith("test_")}
        assert (float(row["score"]), row["status"], row["flags"]) == (full_score(lesson), "graded", ""), (
            student,
            row["detail"],
            lost,
        )


@pytest.mark.parametrize("lesson", LESSONS)
def test_every_right_answer_scores_full_and_unflagged_through_nbgraders_autograde(graded_by_nbgrader, lesson):
    log, rows = graded_by_nbgrader[lesson]
    assert "Removing failed assignment" not in log, log[-3000:]
    assert set(rows) == set(students(lesson))
    for student, row in rows.items():
        assert (row.score, row.status, row.flags) == (full_score(lesson), "graded", ""), (
            student,
            row.detail,
            log[-2000:],
        )


def test_every_graded_item_has_three_right_answers():
    """Issue 42's floor: each answer cell of each lesson, at least three right answers written
    differently from the model solution."""
    short = {}
    for lesson in ASSIGNMENTS:
        counts = {c["id"]: 0 for c in cells.solution_cells(lesson) if c["answer"]}
        for right in cells.read_right_answers(lesson):
            counts[right.answer_id] += 1
        short.update({f"{lesson}:{item}": n for item, n in counts.items() if n < 3})
    assert short == {}, "answer cells with fewer than three right answers in tests/right_answers/"
