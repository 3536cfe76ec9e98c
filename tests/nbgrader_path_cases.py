"""The nbgrader path's two halves (test_nbgrader_path.py, test_nbgrader_path_limits.py): the
cases of tests/grader_cases.py of some kinds, handed in where `nbgrader collect` puts them and
graded by one `nbgrader autograde` run, and the checks both halves make on the rows. Every kind
of case is graded on every run; of the costly kinds (deliberate waits on a time limit) one case
is drawn per run (set GRADER_CASES_SEED to repeat a draw)."""

import os
import random
import shutil

import grader_cases
from grader_cases import nbgrader
from grading_checks import CELL_TIMEOUT, Listener

from grader.course import collect
from grader.grading import grade
from grader.isolation import sandbox
from tools import course

A = grader_cases.A
SEED = int(os.environ.get("GRADER_CASES_SEED") or random.SystemRandom().randrange(10**6))

# The kinds whose cases wait on limits (time, memory, processes, a dying kernel) are
# graded by test_nbgrader_path_limits.py, so that pytest-xdist grades both halves at once.
LIMIT_KINDS = ("time_limit", "ignored_interrupt", "resource_limit", "kernel_death")


def autograde_cases(tmp_path_factory, kinds) -> dict:
    """The cases of `kinds` handed in and graded by one `nbgrader autograde` run."""
    assert sandbox.available(), "bubblewrap is missing: make test installs it (tools/system_packages.sh)"
    tmp = tmp_path_factory.mktemp("nbgrader-path")
    root, folder = tmp / "course", tmp / "downloads"
    folder.mkdir()
    course_api = course.temporary_course(root, [A])  # with the course's own nbgrader_config.py
    listener = Listener()
    cases = [
        c
        for c in grader_cases.sample(grader_cases.cases(listener.port, root, folder), random.Random(SEED))
        if c.kind in kinds
    ]
    for case in cases:
        case.write(folder)
    # Where `nbgrader collect` leaves hand-ins: submitted/<student>/<assignment>/<assignment>.ipynb
    handed_in = collect.collect(folder, A)
    for submission in handed_in:
        target = root / "submitted" / submission.grader_id / A
        target.mkdir(parents=True)
        shutil.copyfile(submission.source, target / f"{A}.ipynb")
    env = grader_cases.cli_env(**grader_cases.PLANTED)
    try:
        course.generate(course_api, A)  # released (in this process: the autograde run is the CLI's)
        graded = nbgrader(
            root,
            "autograde",
            A,
            "--force",
            f"--GuardedExecute.timeout={CELL_TIMEOUT}",
            "--GuardedExecute.notebook_timeout=90",
            "--GuardedExecute.interrupt_grace=4",
            env=env,
            check=False,
        )
    finally:
        listener.close()
    options = grade.Options(A, folder, root=root)
    rows = {row.student_id: row for row in grade.rows(options, handed_in, {})}
    return {"root": root, "rows": rows, "cases": cases, "log": graded.stderr, "listener": listener}


def check_rows(graded: dict, kind: str) -> None:
    """Every case of `kind` got the score, status and reason the grader gives it."""
    cases = [c for c in graded["cases"] if c.kind == kind]
    assert cases, f"no case of kind {kind} was graded"
    for case in cases:
        row = graded["rows"][case.student]
        where = f"{case.student} (GRADER_CASES_SEED={SEED}): {row.detail}\n{graded['log'][-3000:]}"
        assert (row.status, row.score, row.max_score) == (case.status, case.score, grader_cases.FULL), where
        if case.detail:
            assert case.detail in row.detail, where
        elif case.status == "graded" and case.score == grader_cases.FULL:
            assert row.detail == "", "an untouched, correct submission must not be flagged: " + where


def check_nothing_dropped(graded: dict) -> None:
    """Every hand-in has its submission in the gradebook; nbgrader removed none."""
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{graded['root'] / 'gradebook.db'}") as gradebook:
        in_gradebook = {s.student.id for s in gradebook.find_assignment(A).submissions}
    expected = {row.grader_id for row in graded["rows"].values()}
    assert in_gradebook == expected, f"dropped: {expected - in_gradebook}"
    assert "Removing failed assignment" not in graded["log"]
