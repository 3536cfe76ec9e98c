"""Notebooks taken from `make release` grade clean: the release points each Colab badge (in the
exercise's first, read-only cell) at where the instructor publishes it, and a student who works
from that copy edited nothing. Graded on every path (`python -m grader grade`, its Dask path
`--scheduler local`, and nbgrader's own autograde, which Formgrader's button runs), a blank and a
right notebook from the default release and from one built with COLAB= get their scores and no
note and no flag; the checkout's own blank exercise, graded beside them, shows what no note is."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import grader_cases
import nbformat
import pytest
import submissions
from nbgrader.api import Gradebook

from conftest import ROOT
from grader.pipeline import NOTES_CELL_ID
from grader.records import export
from tools import course

pytestmark = [pytest.mark.integration, pytest.mark.sandbox]

A = "02_parameters"  # a small lesson
COLAB = "someone/other@main"
BLANK = 0
FULL = submissions.full_score(A)
# student -> the score its notebook must get; "checkout_blank" is the checkout's own exercise.
EXPECTED = {"default_blank": BLANK, "default_right": FULL, "colab_blank": BLANK, "colab_right": FULL}
CONTROL = "checkout_blank"


def answered(notebook: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The released notebook with the lesson's model answer in each answer cell."""
    notebook = nbformat.from_dict(notebook)
    for cell in notebook.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("solution") and not meta.get("grade"):
            cell.source = submissions.answer_source(A, meta["grade_id"])
    return notebook


@pytest.fixture(scope="module")
def handed_in(tmp_path_factory) -> Path:
    """A class folder: notebooks from `make release OUT=...` and `make release OUT=... COLAB=...`."""
    base = tmp_path_factory.mktemp("release-grades")
    folder = base / "class"
    folder.mkdir()
    checkout = nbformat.read(ROOT / "exercises" / A / f"{A}.ipynb", as_version=4)
    nbformat.write(checkout, folder / f"{CONTROL}.ipynb")
    for tag, colab in (("default", None), ("colab", COLAB)):
        out = base / tag
        command = grader_cases.make_command("release", f"OUT={out}", *([f"COLAB={colab}"] if colab else []))
        assert "tools.release" in command, command
        done = subprocess.run(command, shell=True, cwd=ROOT, capture_output=True, text=True)
        assert done.returncode == 0, done.stdout + done.stderr
        released = nbformat.read(out / "exercises" / A / f"{A}.ipynb", as_version=4)
        assert released.cells[0].metadata["nbgrader"]["locked"], "the badge cell is read-only"
        assert released.cells[0].source != checkout.cells[0].source, "the release points the badge elsewhere"
        if colab:
            assert "github/someone/other/blob/main/" in released.cells[0].source
        nbformat.write(released, folder / f"{tag}_blank.ipynb")
        nbformat.write(answered(released), folder / f"{tag}_right.ipynb")
    return folder


def grade_cli(tmp_path: Path, folder: Path, *extra: str) -> dict[str, dict[str, str]]:
    root = tmp_path / "course"
    course.temporary_course(root, [A])
    command = [sys.executable, "-m", "grader", "grade", A, "--submissions", str(folder), "--root", str(root)]
    done = subprocess.run(
        [*command, "--jobs", "1", *extra], cwd=root, env=grader_cases.cli_env(), capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr
    rows = {row["student_id"]: row for row in export.read_csv(root / "grades" / f"{A}.csv")}
    for student in rows:
        assert_clean(root, student)
    return rows


def assert_clean(root: Path, student: str) -> None:
    """The graded notebook holds no note and no flag of the grader's."""
    graded = nbformat.read(root / "autograded" / student / A / f"{A}.ipynb", as_version=4)
    meta = graded.metadata.get("grader", {})
    assert (meta.get("problems"), meta.get("flags"), meta.get("invalid")) == ([], [], None), (student, meta)
    assert all(cell.get("id") != NOTES_CELL_ID for cell in graded.cells), student


def check_rows(rows: dict[str, dict[str, str]]) -> None:
    assert set(rows) == {*EXPECTED, CONTROL}
    assert rows[CONTROL]["detail"].startswith("failed: "), rows[CONTROL]
    for student, score in EXPECTED.items():
        row = rows[student]
        assert (float(row["score"]), row["status"], row["flags"]) == (score, "graded", ""), row
        assert row["detail"] == ("" if score == FULL else rows[CONTROL]["detail"]), row


def test_release_notebooks_grade_without_a_note_on_the_command_line_and_on_dask(handed_in, tmp_path):
    rows = grade_cli(tmp_path / "cli", handed_in)
    check_rows(rows)
    on_dask = grade_cli(tmp_path / "dask", handed_in, "--scheduler", "local")
    check_rows(on_dask)
    assert {s: (r["score"], r["detail"]) for s, r in on_dask.items()} == {
        s: (r["score"], r["detail"]) for s, r in rows.items()
    }


def test_release_notebooks_grade_without_a_note_in_nbgraders_autograde(handed_in, tmp_path):
    """What Formgrader's Autograde button runs: NbGraderAPI.autograde, one student at a time."""
    root = tmp_path / "course"
    course_api = course.temporary_course(root, [A])
    course.generate(course_api, A)
    for student in EXPECTED:
        submitted = root / "submitted" / student / A
        submitted.mkdir(parents=True)
        (submitted / f"{A}.ipynb").write_bytes((handed_in / f"{student}.ipynb").read_bytes())
        result = course_api.autograde(A, student)
        assert result["success"], result.get("log", "") + result.get("error", "")
        assert_clean(root, student)
    with Gradebook(course.load_config(root).CourseDirectory.db_url) as gradebook:
        for student, score in EXPECTED.items():
            assert gradebook.find_submission(A, student).code_score == score, student
