"""A failure of the grader is never a student's zero, on a Dask cluster (`--scheduler local`):
the grader's own failures are *not graded*, the student's own crashes graded (see
test_not_graded.py for the outcomes)."""

from __future__ import annotations

import grader_cases
import grading_checks
import pytest
from not_graded_cases import check_crashes_graded, grade_cli, write_class, write_crashes

from grader import export, feedback
from tools import course

pytestmark = [pytest.mark.integration, pytest.mark.sandbox]

A = grader_cases.A
# `--jobs 1`: the local cluster's one worker process is enough to show what a task's failure
# becomes (test_dask.py grades on two workers); each more imports Dask and the grader again.


@pytest.mark.parametrize("cause", ["missing interpreter", "sandbox cannot start"])
def test_on_a_dask_cluster_the_graders_failure_is_not_graded_too(tmp_path, cause):
    root = tmp_path / "course"
    course.temporary_course(root, [A])
    folder = tmp_path / "class"
    write_class(folder, ["ana", "ben"])
    env, extra, expected = grader_cases.cli_env(), ["--scheduler", "local"], "kernel did not start"
    if cause == "missing interpreter":
        data, interpreter = grading_checks.broken_kernel_spec(tmp_path)
        env["JUPYTER_PATH"] = str(data)
        expected = f"kernel did not start (interpreter {interpreter} is missing)"
    else:
        extra += ["--memory", "8"]
    done = grade_cli(root, folder, env, *extra, jobs=1)
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"2 of 2 not graded: {expected}" in done.stderr, done.stderr
    rows = export.read_csv(root / "grades" / f"{A}.csv")
    assert [(r["status"], r["score"]) for r in rows] == [("not graded", "")] * 2
    assert not list((root / "autograded").glob(f"*/{A}/{A}.ipynb"))


def test_on_a_dask_cluster_the_students_own_crash_is_graded_too(tmp_path):
    root = tmp_path / "course"
    course.temporary_course(root, [A])
    write_crashes(tmp_path / "class")
    done = grade_cli(root, tmp_path / "class", grader_cases.cli_env(), "--scheduler", "local", timeout=5, jobs=1)
    assert done.returncode == 0, done.stdout + done.stderr
    rows = export.read_csv(root / "grades" / f"{A}.csv")
    assert {r["status"] for r in rows} == {"graded"}, rows
    pages = {p.parent.parent.name: p.read_text() for p in feedback.generate(A, root=root)}
    check_crashes_graded({r["grader_id"]: float(r["score"]) for r in rows}, pages)
