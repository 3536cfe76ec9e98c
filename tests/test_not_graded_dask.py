"""A failure of the grader is never a student's zero, on a Dask cluster (`--scheduler local`,
the cluster the grader starts for itself): the grader's own failures are *not graded*, the
student's own crashes graded (see test_not_graded.py for the outcomes), beside rows of other
kinds. A cluster of its own processes: test_dask.py; TLS with a worker offering
`--resources GPU=1`, as docs/cluster.md deploys it: test_gpu_sandbox.py, which `make test`
runs again on a GPU where there is one."""

from __future__ import annotations

import grader_cases
import grading_checks
import nbformat
import pytest
import submissions
from not_graded_cases import check_crashes_graded, grade_cli, write_class, write_crashes

from grader.course import feedback
from grader.records import export
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
    """`--scheduler local` starts a cluster of its own and grades the class there: the crashes
    beside a correct notebook and a file that is not JSON, each with its own row."""
    root = tmp_path / "course"
    course.temporary_course(root, [A])
    folder = tmp_path / "class"
    write_crashes(folder)
    nbformat.write(submissions.answered(A), folder / "ana.ipynb")
    (folder / "dee.ipynb").write_text("{")
    done = grade_cli(root, folder, grader_cases.cli_env(), "--scheduler", "local", timeout=5, jobs=1)
    assert done.returncode == 0, done.stdout + done.stderr
    rows = {r["grader_id"]: r for r in export.read_csv(root / "grades" / f"{A}.csv")}
    assert (rows["ana"]["status"], float(rows["ana"]["score"])) == ("graded", grader_cases.FULL)
    assert rows["dee"]["status"] == "invalid" and "not valid JSON" in rows["dee"]["detail"], rows["dee"]
    crashes = {name: row for name, row in rows.items() if name not in ("ana", "dee")}
    assert {r["status"] for r in crashes.values()} == {"graded"}, crashes
    pages = {p.parent.parent.name: p.read_text() for p in feedback.generate(A, root=root)}
    check_crashes_graded({name: float(r["score"]) for name, r in crashes.items()}, pages)
