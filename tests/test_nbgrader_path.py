"""nbgrader's own autograde, as an instructor runs it (the CLI; Formgrader's
Autograde button runs the same converter with the same course config), is the
safe engine too.

The submissions of tests/grader_cases.py are placed where `nbgrader collect`
puts them and graded by one run of `nbgrader autograde`. Each must get the
score, status and reason that `python -m grader grade` gives it
(test_grader.py): both paths are checked against the same table of expected
rows, and the rows are computed by the same function from the gradebook and
the autograded notebooks. Every kind of case is graded on every run; of the
costly kinds (deliberate waits on a time limit) one case is drawn per run
(set GRADER_CASES_SEED to repeat a draw).
"""

import os

import grader_cases
import grading_checks
import nbformat
import pytest
import submissions
from grader_cases import nbgrader
from grading_checks import lingering, stray_kernels
from nbgrader_path_cases import LIMIT_KINDS, autograde_cases, check_nothing_dropped, check_rows

from conftest import ROOT
from grader.execute import guarded as execute
from grader.isolation import sandbox
from tools import course

pytestmark = [pytest.mark.integration, pytest.mark.sandbox]

A = grader_cases.A


KINDS = [kind for kind in grader_cases.KINDS if kind not in LIMIT_KINDS]


@pytest.fixture(scope="module")
def cli_graded(tmp_path_factory):
    return autograde_cases(tmp_path_factory, KINDS)


@pytest.mark.unit
def test_every_case_has_a_known_kind():
    unknown = {c.student: c.kind for c in grader_cases.cases(0, ROOT, ROOT) if c.kind not in grader_cases.KINDS}
    assert not unknown, f"kinds missing from grader_cases.KINDS: {unknown}"


@pytest.mark.unit
def test_the_two_modules_cover_every_kind():
    assert set(KINDS) | set(LIMIT_KINDS) == set(grader_cases.KINDS) and not set(KINDS) & set(LIMIT_KINDS)


@pytest.mark.parametrize("kind", KINDS)
def test_nbgrader_autograde_gives_the_graders_rows(cli_graded, kind):
    check_rows(cli_graded, kind)


def test_nothing_is_dropped_and_the_reason_is_in_the_notebook_formgrader_shows(cli_graded):
    check_nothing_dropped(cli_graded)
    for student, reason in (("truncated", "could not be read"), ("empty", "could not be read (empty file)")):
        nb = grading_checks.autograded(cli_graded["root"], student, A)
        assert nb.cells[0].id == "grader-notes" and reason in nb.cells[0].source, (student, nb.cells[0].source)


def _outputs(root, student):
    return grading_checks.printed(root, student, A)


def test_student_code_is_isolated_on_the_nbgrader_path(cli_graded):
    root = cli_graded["root"]
    text = _outputs(root, "attacker")
    assert "LEAKED" not in text and "WROTE" not in text and "CONNECTED" not in text, text
    assert "SPAWNED" in text and lingering() == [] and stray_kernels() == []
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


def test_without_bubblewrap_autograde_refuses_with_install_advice(tmp_path, monkeypatch):
    """As on an instructor's machine without bubblewrap: the CLI (nothing on PATH but the
    venv) and Formgrader's Autograde button (nbgrader's API, whose result the dialog shows)."""
    root = tmp_path / "course"
    api = course.temporary_course(root, [A])
    course.register(api, A)
    target = root / "submitted" / "ana" / A
    target.mkdir(parents=True)
    nbformat.write(submissions.answered(A), target / f"{A}.ipynb")
    done = nbgrader(root, "autograde", A, "--force", env=dict(os.environ, PATH=str(grader_cases.BIN)), check=False)
    monkeypatch.setattr(sandbox, "available", lambda: False)
    button = course.api(course.load_config(root)).autograde(A, "ana")
    said_by = {"nbgrader autograde": done.stderr, "Formgrader": button.get("log", "") + (button.get("error") or "")}
    for name, said in said_by.items():
        assert "refusing to run student code without a sandbox" in said, f"{name}:\n{said[-3000:]}"
        assert sandbox.INSTALL_ADVICE in said and "use_safe_autograde(c, trusted=True)" in said, name
    assert done.returncode != 0 and not button["success"]
    assert not (root / "autograded" / "ana" / A).exists(), "nothing was graded"


def test_a_course_that_trusts_its_students_runs_unsandboxed_with_a_warning(monkeypatch, caplog, tmp_path):
    monkeypatch.setattr(sandbox, "available", lambda: False)
    step = execute.GuardedExecute(timeout=30, trusted_student_code=True)
    nb, _ = step.preprocess(_tiny_notebook(), {"metadata": {"path": str(tmp_path)}})
    assert nb.cells[0].outputs[0]["text"] == "42\n"
    assert any("UNSANDBOXED" in record.getMessage() for record in caplog.records)
