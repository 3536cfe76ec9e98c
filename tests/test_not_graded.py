"""A failure of the grader is never a student's zero.

Three outcomes, never confused: *graded* (the cells ran), *flagged* (graded, and
the instructor should look), *not graded* (the grader could not run it: no
score anywhere, the cause in one line, no feedback, a non-zero exit). A kernel
the student's own code kills is the student's: graded, with the cell and the
cause in the feedback.
"""

from __future__ import annotations

import os
import sys

import grader_cases
import grading_checks
import nbformat
import pytest
import submissions
from not_graded_cases import CRASHES, check_crashes_graded, crash, grade_cli, write_class, write_crashes
from submissions import points

from grader.course import feedback
from grader.grading import grade
from grader.kernels import template
from grader.records import export
from tools import course

pytestmark = [pytest.mark.integration, pytest.mark.sandbox]

A = grader_cases.A
FULL = grader_cases.FULL


def test_a_missing_interpreter_is_not_graded_loudly_and_stops_early(tmp_path):
    root = tmp_path / "course"
    course.temporary_course(root, [A])
    folder = tmp_path / "class"
    write_class(folder, [f"student{i}" for i in range(6)])
    data, interpreter = grading_checks.broken_kernel_spec(tmp_path)
    env = grader_cases.cli_env(JUPYTER_PATH=str(data))
    done = grade_cli(root, folder, env)
    assert done.returncode == 1, done.stdout + done.stderr
    cause = f"kernel did not start (interpreter {interpreter} is missing)"
    assert f"6 of 6 not graded: {cause}" in done.stderr
    rows = export.read_csv(root / "grades" / f"{A}.csv")
    assert {r["status"] for r in rows} == {"not graded"} and {r["score"] for r in rows} == {""}
    assert all(r["detail"].startswith(cause) for r in rows)
    assert sum("not tried: the first 3 failed the same way" in r["detail"] for r in rows) == 6 - grade.STOP_AFTER
    # No score in the gradebook, and nothing for a student to read.
    db_url = course.load_config(root).CourseDirectory.db_url
    for row in rows:
        assert not grading_checks.auto_scores(db_url, A, row["grader_id"]), row
    assert not list((root / "autograded").glob(f"*/{A}/{A}.ipynb"))


def test_a_sandbox_that_cannot_start_is_not_graded(tmp_path):
    """A memory limit no interpreter can start under: the kernel dies before any student code."""
    root = tmp_path / "course"
    course.temporary_course(root, [A])
    folder = tmp_path / "class"
    write_class(folder, ["ana", "ben"])
    rows = grade.run(grade.Options(A, folder, jobs=1, root=root, cell_timeout=20, memory_mb=8))
    assert [(r.status, r.score) for r in rows] == [("not graded", None)] * 2
    assert all(r.detail.startswith("kernel did not start") for r in rows), [r.detail for r in rows]
    assert grade.not_graded_summary(rows).startswith("2 of 2 not graded: kernel did not start")


def count_kernel_starts(monkeypatch, fail_first: bool = False) -> list:
    """Counts nbgrader's Execute runs (one per kernel start the grader tries) in this process;
    `fail_first` makes the first one fail as a kernel that died while starting does."""
    from nbgrader.preprocessors import Execute

    real = Execute.preprocess
    calls = []

    def counted(self, nb, resources=None, km=None):
        calls.append(1)
        if fail_first and len(calls) == 1:
            raise RuntimeError("Kernel died before replying to kernel_info")
        return real(self, nb, resources, km)

    monkeypatch.setattr(Execute, "preprocess", counted)
    return calls


def grade_one_student(tmp_path):
    """One correct notebook graded by one job, in this process (so monkeypatches reach it)."""
    root = tmp_path / "course"
    course.temporary_course(root, [A])
    folder = tmp_path / "class"
    write_class(folder, ["ana"])
    return grade.run(grade.Options(A, folder, jobs=1, root=root, cell_timeout=20))


def test_a_kernel_start_that_fails_once_is_retried(tmp_path, monkeypatch):
    calls = count_kernel_starts(monkeypatch, fail_first=True)
    rows = grade_one_student(tmp_path)
    assert (rows[0].status, rows[0].score, len(calls)) == ("graded", FULL, 2)


def test_a_clean_notebook_starts_one_kernel_and_a_crash_one_more(tmp_path, monkeypatch):
    """A fresh kernel only where student code killed one: a clean notebook costs what it did."""
    calls = count_kernel_starts(monkeypatch)
    rows = grade_one_student(tmp_path)
    assert (rows[0].status, rows[0].score, len(calls)) == ("graded", FULL, 1)
    root, folder = tmp_path / "course", tmp_path / "crash"
    folder.mkdir()
    nbformat.write(crash(CRASHES["exits"]), folder / "exits.ipynb")
    calls.clear()
    (row,) = grade.run(grade.Options(A, folder, jobs=1, root=root, cell_timeout=20))
    assert (row.score, len(calls)) == (FULL - points(A)["test_make_stack"], 2), row.detail


def test_a_start_failure_that_lasts_is_not_tried_again(tmp_path, monkeypatch):
    """A missing interpreter is still missing a moment later: one start, not 1 + start_retries."""
    calls = count_kernel_starts(monkeypatch)
    data, interpreter = grading_checks.broken_kernel_spec(tmp_path)
    monkeypatch.setenv("JUPYTER_PATH", str(data))
    rows = grade_one_student(tmp_path)
    cause = f"kernel did not start (interpreter {interpreter} is missing)"
    assert (rows[0].status, rows[0].detail) == ("not graded", cause)
    assert len(calls) == 1, "a lasting cause was tried again"


def test_the_students_own_crash_is_graded_with_the_cell_and_the_cause(tmp_path):
    root = tmp_path / "course"
    course.temporary_course(root, [A])
    folder = tmp_path / "class"
    write_crashes(folder)
    rows = {
        r.student_id: r
        for r in grade.run(grade.Options(A, folder, jobs=2, root=root, cell_timeout=5, interrupt_grace=3))
    }
    assert {r.status for r in rows.values()} == {"graded"}
    assert "test_make_stack: the kernel exited with status 1" in rows["exits"].detail
    assert "test_make_stack: timed out after 5 s" in rows["loops"].detail
    pages = {p.parent.parent.name: p.read_text() for p in feedback.generate(A, root=root)}
    check_crashes_graded({name: row.score for name, row in rows.items()}, pages)


def test_a_symlinked_environment_grades(tmp_path):
    """The course's .venv reached through a symlink: its kernels start in the sandbox."""
    root = tmp_path / "course"
    course.temporary_course(root, [A])
    folder = tmp_path / "class"
    write_class(folder, ["ana"])
    link = tmp_path / "venv-link"
    link.symlink_to(sys.prefix)
    env = grader_cases.cli_env()
    env["PATH"] = f"{link / 'bin'}{os.pathsep}{env['PATH']}"
    # Its own template, started by the linked interpreter: the run's shared one (conftest.py)
    # runs from the real path, which would leave the link untried.
    env.pop(template.SHARED, None)
    done = grade_cli(root, folder, env, python=str(link / "bin" / "python"), jobs=1, timeout=None)
    assert done.returncode == 0, done.stdout + done.stderr
    row = export.read_csv(root / "grades" / f"{A}.csv")[0]
    assert (row["status"], row["score"]) == ("graded", f"{FULL:g}"), row


def test_an_endless_loop_costs_its_own_item_only(tmp_path):
    """weird_init_ never returns: its own tests time out (the first at the cell limit, the next at
    most limit_after_timeout), while my_init, built on it, keeps its point: its tests grade my_init
    alone, with a stand-in for the weird_init_ it calls."""
    lesson = "03_initialization"
    source = submissions.answer_source(lesson, "weird_init_")
    looping = source.replace(
        "def weird_init_(tensor):\n", "def weird_init_(tensor):\n    while True:\n        pass\n", 1
    )
    assert looping != source, "the model weird_init_ no longer starts with its def line"
    root = tmp_path / "course"
    course.temporary_course(root, [lesson])
    folder = tmp_path / "class"
    folder.mkdir()
    nbformat.write(submissions.answered(lesson, {"weird_init_": looping}), folder / "loops.ipynb")
    (row,) = grade.run(grade.Options(lesson, folder, jobs=1, root=root, cell_timeout=5, interrupt_grace=3))
    own = {test_id: p for test_id, p in points(lesson).items() if test_id.startswith("test_weird_init_")}
    assert len(own) == 2, own
    assert (row.status, row.score) == ("graded", submissions.full_score(lesson) - sum(own.values())), row.detail
    for test_id in own:
        assert f"{test_id}: timed out after 5 s" in row.detail, row.detail
    assert "test_my_init" not in row.detail, row.detail
