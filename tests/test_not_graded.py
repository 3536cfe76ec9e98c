"""A failure of the grader is never a student's zero.

Three outcomes, never confused: *graded* (the cells ran), *flagged* (graded, and
the instructor should look), *not graded* (the grader could not run it: no
score anywhere, the cause in one line, no feedback, a non-zero exit). A kernel
the student's own code kills is the student's: graded, with the cell and the
cause in the feedback.
"""

from __future__ import annotations

import os
import subprocess
import sys

import grader_cases
import grading_checks
import nbformat
import pytest
from submissions import answered, points

from grader import course as grader_course
from grader import export, feedback, grade
from tools import course

pytestmark = [pytest.mark.integration, pytest.mark.sandbox]

A = grader_cases.A
FULL = grader_cases.FULL


def write_class(folder, names):
    folder.mkdir()
    for name in names:
        nbformat.write(answered(A), folder / f"{name}.ipynb")


def grade_cli(root, folder, env, *extra, python=sys.executable, jobs=2, timeout: int | None = 20):
    """`python -m grader grade` as an instructor runs it, with `python` (a venv's, say)."""
    limits = ["--timeout", str(timeout)] if timeout else []
    command = [python, "-m", "grader", "grade", A, "--submissions", str(folder), "--root", str(root)]
    return subprocess.run(
        [*command, "--jobs", str(jobs), *limits, *extra], capture_output=True, text=True, env=env, cwd=root
    )


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
    done = grade_cli(root, folder, env, *extra)
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"2 of 2 not graded: {expected}" in done.stderr, done.stderr
    rows = export.read_csv(root / "grades" / f"{A}.csv")
    assert [(r["status"], r["score"]) for r in rows] == [("not graded", "")] * 2
    assert not list((root / "autograded").glob(f"*/{A}/{A}.ipynb"))


def test_nbgraders_own_autograde_fails_loudly_with_the_cause_and_keeps_no_score(tmp_path):
    """Formgrader's Autograde button runs nbgrader's autograde with the course's config: the
    same engine, so the same cause, a failed autograde and no score."""
    root = tmp_path / "course"
    course.temporary_course(root, [A])
    grader_cases.nbgrader(root, "generate_assignment", A, "--force")  # as the instructor releases it
    target = root / "submitted" / "ana" / A
    target.mkdir(parents=True)
    nbformat.write(answered(A), target / f"{A}.ipynb")
    data, interpreter = grading_checks.broken_kernel_spec(tmp_path)
    done = grader_cases.nbgrader(
        root, "autograde", A, "--student", "ana", env=grader_cases.cli_env(JUPYTER_PATH=str(data)), check=False
    )
    said = done.stdout + done.stderr
    assert done.returncode != 0, said
    assert f"kernel did not start (interpreter {interpreter} is missing)" in said, said[-3000:]
    assert not grading_checks.auto_scores(grader_course.db_url(grader_course.load_config(root)), A, "ana")


def test_a_kernel_start_that_fails_once_is_retried(tmp_path, monkeypatch):
    from nbgrader.preprocessors import Execute

    real = Execute.preprocess
    calls = []

    def flaky(self, nb, resources=None, km=None):
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("Kernel died before replying to kernel_info")
        return real(self, nb, resources, km)

    monkeypatch.setattr(Execute, "preprocess", flaky)
    root = tmp_path / "course"
    course.temporary_course(root, [A])
    folder = tmp_path / "class"
    write_class(folder, ["ana"])
    rows = grade.run(grade.Options(A, folder, jobs=1, root=root, cell_timeout=20))
    assert (rows[0].status, rows[0].score, len(calls)) == ("graded", FULL, 2)


def crash(code):
    nb = answered(A)
    for cell in nb.cells:
        if cell.metadata.get("nbgrader", {}).get("grade_id") == "make_stack":
            cell.source = cell.source.replace(
                "def make_stack(factory, n):\n", "def make_stack(factory, n):\n" + code, 1
            )
    return nb


# Student code that kills its own kernel, runs out of memory or never stops (one each).
CRASHES = {
    "exits": "    import os\n    os._exit(1)\n",
    "hogs_memory": "    blocks = []\n    while True:\n        blocks.append(bytearray(1 << 26))\n",
    "loops": "    while True:\n        pass\n",
}


def write_crashes(folder):
    folder.mkdir(parents=True)
    for name, code in CRASHES.items():
        nbformat.write(crash(code), folder / f"{name}.ipynb")


def check_crashes_graded(scores, pages):
    """Each crash is the student's: graded, the cells that ran keep their points, and the
    feedback names the cell and the cause."""
    lost = points(A)["test_make_stack"]
    assert scores == {"exits": grader_cases.before("test_make_stack"), "hogs_memory": FULL - lost, "loops": FULL - lost}
    assert "test_make_stack: the kernel exited with status 1" in pages["exits"]
    assert "MemoryError" in pages["hogs_memory"]
    assert "test_make_stack: timed out after 5 s" in pages["loops"]


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


def test_on_a_dask_cluster_the_students_own_crash_is_graded_too(tmp_path):
    root = tmp_path / "course"
    course.temporary_course(root, [A])
    write_crashes(tmp_path / "class")
    done = grade_cli(root, tmp_path / "class", grader_cases.cli_env(), "--scheduler", "local", timeout=5)
    assert done.returncode == 0, done.stdout + done.stderr
    rows = export.read_csv(root / "grades" / f"{A}.csv")
    assert {r["status"] for r in rows} == {"graded"}, rows
    pages = {p.parent.parent.name: p.read_text() for p in feedback.generate(A, root=root)}
    check_crashes_graded({r["grader_id"]: float(r["score"]) for r in rows}, pages)


def test_nbgraders_own_autograde_grades_the_students_own_crash(tmp_path):
    """Formgrader's Autograde button: nbgrader's autograde with the course's config."""
    root = tmp_path / "course"
    course.temporary_course(root, [A])
    grader_cases.nbgrader(root, "generate_assignment", A, "--force")
    for name, code in CRASHES.items():
        (root / "submitted" / name / A).mkdir(parents=True)
        nbformat.write(crash(code), root / "submitted" / name / A / f"{A}.ipynb")
    limits = ["--Execute.timeout=5", "--GuardedExecute.interrupt_grace=3"]
    grader_cases.nbgrader(root, "autograde", A, *limits)
    grader_cases.nbgrader(root, "generate_feedback", A)
    db_url = grader_course.db_url(grader_course.load_config(root))
    scores = {name: sum(grading_checks.auto_scores(db_url, A, name)) for name in CRASHES}
    pages = {name: (root / "feedback" / name / A / f"{A}.html").read_text() for name in CRASHES}
    check_crashes_graded(scores, pages)


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
    done = grade_cli(root, folder, env, python=str(link / "bin" / "python"), jobs=1, timeout=None)
    assert done.returncode == 0, done.stdout + done.stderr
    row = export.read_csv(root / "grades" / f"{A}.csv")[0]
    assert (row["status"], row["score"]) == ("graded", f"{FULL:g}"), row
