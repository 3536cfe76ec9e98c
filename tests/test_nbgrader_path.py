"""nbgrader's own autograde, as an instructor runs it (the CLI; Formgrader's
Autograde button runs the same converter with the same course config), is the
safe engine too.

The submissions of tests/grader_cases.py, one of every kind (the costly
variants of a kind, e.g. a second memory hog, are left to test_grader.py),
are placed where `nbgrader collect` puts them and graded by one run of
`nbgrader autograde`. Each must get the score, status and reason that
`python -m grader grade` gives it: both paths are checked against the same
table of expected rows, and the rows are computed by the same function from
the gradebook and the autograded notebooks.
"""
import os
import shutil
import subprocess
import sys

import nbformat
import pytest

import grader_cases
from conftest import ROOT
from grader import collect, execute, grade, sandbox
from test_grader import CELL_TIMEOUT, Listener, lingering
from tools import course

A = grader_cases.A
# One case of every kind: scoring, time limits, kernel deaths, repairs,
# unreadable files, the environment and the isolation probes.
KINDS = ["correct", "blank", "one_wrong", "loop_top", "ignores_sigint", "os_exit", "edited_tests",
         "deleted_tests", "retyped", "changed_points", "kernelspec", "stripped", "empty", "truncated",
         "essay", "notes", "old_format", "environment", "attacker"]


def nbgrader(root, *args, env=None):
    done = subprocess.run([os.path.join(os.path.dirname(sys.executable), "nbgrader"), *args], cwd=root,
                          capture_output=True, text=True, env=env)
    return done


@pytest.fixture(scope="module")
def cli_graded(tmp_path_factory):
    assert sandbox.available(), "bubblewrap is missing: make test installs it (tools/system_packages.sh)"
    tmp = tmp_path_factory.mktemp("nbgrader-path")
    root, folder = tmp / "course", tmp / "downloads"
    folder.mkdir()
    course.temporary_course(root, [A])
    shutil.copy(ROOT / "nbgrader_config.py", root)
    listener = Listener()
    cases = [c for c in grader_cases.cases(listener.port, root, folder) if c.student in KINDS]
    for case in cases:
        case.write(folder)
    # Where `nbgrader collect` leaves hand-ins: submitted/<student>/<assignment>/<assignment>.ipynb
    handed_in = collect.collect(folder, A)
    for submission in handed_in:
        target = root / "submitted" / submission.grader_id / A
        target.mkdir(parents=True)
        shutil.copyfile(submission.source, target / f"{A}.ipynb")
    env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"],
               PYTHONPATH=str(ROOT), **grader_cases.PLANTED)
    try:
        generated = nbgrader(root, "generate_assignment", A, "--force", env=env)
        assert generated.returncode == 0, generated.stderr[-2000:]
        graded = nbgrader(root, "autograde", A, "--force", f"--GuardedExecute.timeout={CELL_TIMEOUT}",
                          "--GuardedExecute.notebook_timeout=90", "--GuardedExecute.interrupt_grace=4", env=env)
    finally:
        listener.close()
    options = grade.Options(A, folder, root=root)
    rows = {row.student_id: row for row in grade.rows(options, handed_in, {})}
    return {"root": root, "rows": rows, "cases": cases, "log": graded.stderr, "listener": listener}


@pytest.mark.parametrize("kind", KINDS)
def test_nbgrader_autograde_gives_the_graders_row(cli_graded, kind):
    case = next(c for c in cli_graded["cases"] if c.student == kind)
    row = cli_graded["rows"][case.student]
    assert (row.status, row.score, row.max_score) == (case.status, case.score, grader_cases.FULL), \
        f"{row.detail}\n{cli_graded['log'][-3000:]}"
    if case.detail:
        assert case.detail in row.detail
    elif case.status == "graded" and case.score == grader_cases.FULL:
        assert row.detail == "", "an untouched, correct submission must not be flagged"


def test_nothing_is_dropped_and_the_reason_is_in_the_notebook_formgrader_shows(cli_graded):
    from nbgrader.api import Gradebook

    root = cli_graded["root"]
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gradebook:
        graded = {s.student.id for s in gradebook.find_assignment(A).submissions}
    assert graded == set(KINDS), f"dropped: {set(KINDS) - graded}"
    nb = nbformat.read(root / "autograded" / "truncated" / A / f"{A}.ipynb", as_version=4)
    assert nb.cells[0].id == "grader-notes" and "could not be read" in nb.cells[0].source
    assert "Removing failed assignment" not in cli_graded["log"]


def _outputs(root, student):
    nb = nbformat.read(root / "autograded" / student / A / f"{A}.ipynb", as_version=4)
    return "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs)


def test_student_code_is_isolated_on_the_nbgrader_path(cli_graded):
    root = cli_graded["root"]
    text = _outputs(root, "attacker")
    assert "LEAKED" not in text and "WROTE" not in text and "CONNECTED" not in text, text
    assert "SPAWNED" in text and lingering() == []
    assert cli_graded["listener"].received == []
    assert not (root / "pwned.txt").exists()
    environment = _outputs(root, "environment")
    assert "PLANTED NOT SEEN" in environment
    for name, value in grader_cases.PLANTED.items():
        assert name not in environment and value not in environment


def _tiny_notebook():
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells.append(nbformat.v4.new_code_cell("print(6 * 7)"))
    return nb


def test_without_bubblewrap_autograde_refuses_with_install_advice(monkeypatch):
    monkeypatch.setattr(sandbox, "available", lambda: False)
    step = execute.GuardedExecute(timeout=30)
    with pytest.raises(RuntimeError, match="refusing to run student code without a sandbox.*apt-get install bubblewrap"):
        step.preprocess(_tiny_notebook(), {"metadata": {"path": str(ROOT / "tests")}})


def test_a_course_that_trusts_its_students_runs_unsandboxed_with_a_warning(monkeypatch, caplog, tmp_path):
    monkeypatch.setattr(sandbox, "available", lambda: False)
    step = execute.GuardedExecute(timeout=30, trusted_student_code=True)
    nb, _ = step.preprocess(_tiny_notebook(), {"metadata": {"path": str(tmp_path)}})
    assert nb.cells[0].outputs[0]["text"] == "42\n"
    assert any("UNSANDBOXED" in record.getMessage() for record in caplog.records)
