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
from grader_cases import BIN, cli_env
from submissions import full_score

from conftest import ASSIGNMENTS, ROOT, selected
from grader.course import collect
from grader.grading import grade
from grader.isolation import sandbox
from grader.records import export
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
def lessons(request) -> list[str]:
    """The lessons whose tests this run selected (`make lesson` picks one with -k): only those are graded."""
    chosen = selected(request, "lesson")
    return [lesson for lesson in LESSONS if lesson in chosen]


@pytest.fixture(scope="module")
def downloads(tmp_path_factory, lessons):
    """One folder of `<student>.ipynb` per lesson."""
    top = tmp_path_factory.mktemp("right-answers")
    for lesson in lessons:
        (top / lesson).mkdir()
        for student, answers in students(lesson).items():
            nbformat.write(cells.answered(lesson, answers), top / lesson / f"{student}.ipynb")
    return top


def hand_in_to_nbgrader(root, downloads, lessons) -> dict[str, list]:
    """Every lesson's downloads handed in where `nbgrader collect` puts them, each lesson generated
    (released) in course `root`: what each lesson's handed-in submissions are, by lesson."""
    course_api = course.api(course.load_config(root))
    handed = {}
    for lesson in lessons:
        handed[lesson] = collect.collect(downloads / lesson, lesson)
        for submission in handed[lesson]:
            target = root / "submitted" / submission.grader_id / lesson
            target.mkdir(parents=True)
            shutil.copyfile(submission.source, target / f"{lesson}.ipynb")
        course.generate(course_api, lesson)
    return handed


@pytest.fixture(scope="module")
def graded(tmp_path_factory, downloads, lessons):
    """Both paths, side by side: one `nbgrader autograde "*"` run (nbgrader's assignment glob: every
    lesson in one process, as an instructor may run it) started in the background, while the
    grader grades each lesson with two jobs: the first through its command line (`python -m
    grader grade` takes one assignment a run), the others through what that command runs
    (grade.run, then the CSV export) in this process, whose fork server and workers' imports
    then serve every lesson. Two courses, so neither path sees the other's gradebook."""
    assert sandbox.available(), "bubblewrap is missing: make test installs it (tools/system_packages.sh)"
    cli_root, nbgrader_root = tmp_path_factory.mktemp("cli-course"), tmp_path_factory.mktemp("nbgrader-course")
    course.temporary_course(cli_root, lessons)
    course.temporary_course(nbgrader_root, lessons)
    handed = hand_in_to_nbgrader(nbgrader_root, downloads, lessons)
    autograde = subprocess.Popen(
        [str(BIN / "nbgrader"), "autograde", "*", "--force"],
        cwd=nbgrader_root, env=cli_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        by_the_command_line = {}
        for n, lesson in enumerate(lessons):
            out = cli_root / f"{lesson}.csv"
            if n == 0:  # the command line itself, once
                command = [sys.executable, "-m", "grader", "grade", lesson, "--root", str(cli_root), "--out", str(out)]
                done = subprocess.run(
                    command + ["--submissions", str(downloads / lesson), "--jobs", "2"],
                    cwd=ROOT,
                    capture_output=True,
                    text=True,
                )
                status, stderr = done.returncode, done.stderr
            else:  # what it runs (grader/__main__.py), in this process: one fork server for all
                rows = grade.run(grade.Options(lesson, downloads / lesson, jobs=2, root=cli_root))
                export.write_csv(rows, out)
                status, stderr = int(grade.not_graded_summary(rows) is not None), grade.describe(rows)
            found = (
                {row["student_id"]: row for row in csv.DictReader(open(out, encoding="utf-8"))} if out.exists() else {}
            )
            by_the_command_line[lesson] = (status, stderr, found)
    finally:
        _, log = autograde.communicate()
    by_nbgrader = {}
    for lesson in lessons:
        options = grade.Options(lesson, downloads / lesson, root=nbgrader_root)
        by_nbgrader[lesson] = (log, {row.student_id: row for row in grade.rows(options, handed[lesson], {})})
    return {"cli": by_the_command_line, "nbgrader": by_nbgrader}


@pytest.fixture(scope="module")
def graded_by_the_command_line(graded):
    return graded["cli"]


@pytest.fixture(scope="module")
def graded_by_nbgrader(graded):
    """Handed in where `nbgrader collect` puts them, then graded by `nbgrader autograde`."""
    return graded["nbgrader"]


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
    removed = [line for line in log.splitlines() if "Removing failed assignment" in line and lesson in line]
    assert not removed, "\n".join(removed) + "\n" + log[-3000:]
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
