"""The instructor's grader on every kind of submission students hand in.

All cases are graded in one run (as a class would be), in a scratch course so
the repository's gradebook is never touched.
"""

import os
import shutil

import grader_cases
import grading_checks
import nbformat
import pytest
from grading_checks import CELL_TIMEOUT, Listener, lingering, stray_kernels

from conftest import ROOT
from grader.course import feedback
from grader.grading import grade
from grader.isolation import sandbox
from grader.records import export, report
from tools import course

pytestmark = [pytest.mark.integration, pytest.mark.sandbox]

A = grader_cases.A


def grade_folder(tmp, folder, jobs, **kw):
    root = tmp / "course"
    if not root.exists():
        course.temporary_course(root, [A])
    options = grade.Options(
        A, folder, jobs=jobs, cell_timeout=CELL_TIMEOUT, notebook_timeout=90, interrupt_grace=4, root=root, **kw
    )
    return root, grade.run(options)


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    assert sandbox.available(), "bubblewrap is missing: make test installs it (tools/system_packages.sh)"
    tmp = tmp_path_factory.mktemp("class")
    folder = tmp / "submissions"
    folder.mkdir()
    listener = Listener()
    cases = grader_cases.cases(listener.port, tmp / "course", folder)
    for case in cases:
        case.write(folder)
    saved = {name: os.environ.get(name) for name in grader_cases.PLANTED}
    os.environ.update(grader_cases.PLANTED)  # an instructor's secrets, as a hub or CI would set them
    try:
        root, rows = grade_folder(tmp, folder, jobs=2)
    finally:
        listener.close()
        for name, value in saved.items():
            os.environ.pop(name) if value is None else os.environ.__setitem__(name, value)
    csv_path = tmp / "grades.csv"
    export.write_csv(rows, csv_path)
    return {
        "root": root,
        "rows": {r.student_id: r for r in rows},
        "cases": cases,
        "csv": csv_path,
        "listener": listener,
        "tmp": tmp,
        "folder": folder,
    }


CASES = grader_cases.cases(0, ROOT, ROOT)


@pytest.mark.parametrize("case", CASES, ids=[c.student for c in CASES])
def test_each_submission_gets_its_score_status_and_reason(graded, case):
    row = graded["rows"][case.student]
    assert (row.status, row.score, row.max_score) == (case.status, case.score, grader_cases.FULL), row.detail
    if case.detail:
        assert case.detail in row.detail
    elif case.status == "graded" and case.score == grader_cases.FULL:
        assert row.detail == "", "an untouched, correct submission must not be flagged"


def test_every_student_gets_exactly_one_row(graded):
    rows = export.read_csv(graded["csv"])
    assert sorted(r["student_id"] for r in rows) == sorted(c.student for c in graded["cases"])
    assert set(rows[0]) >= {"student_id", "score", "max_score", "status", "detail"}
    by_id = {r["student_id"]: r for r in rows}
    expected = grader_cases.FULL - grader_cases.WRONG_LOSES
    assert by_id["one_wrong"]["test_MySequential"] == "0" and float(by_id["one_wrong"]["score"]) == expected
    assert by_id["truncated"]["status"] == "invalid"


def _outputs(root, student):
    return grading_checks.printed(root, student, A)


def test_student_code_cannot_read_the_solutions_gradebook_or_other_submissions(graded):
    text = _outputs(graded["root"], "attacker")
    assert "LEAKED" not in text and text.count("BLOCKED") == 4 + 3 + 1, text


def test_student_code_cannot_write_outside_its_scratch_folder(graded):
    assert "WROTE" not in _outputs(graded["root"], "attacker")
    for place in (graded["root"], graded["folder"], ROOT):
        assert not (place / "pwned.txt").exists()


def test_student_code_sees_none_of_the_graders_environment(graded):
    text = _outputs(graded["root"], "environment")
    assert "PLANTED NOT SEEN" in text, text
    for name, value in grader_cases.PLANTED.items():
        assert name not in text and value not in text


def test_a_memory_hog_is_stopped_by_the_memory_limit_not_the_time_limit(graded):
    """Its case's score and detail alone would also come from a timeout (what a missing memory
    limit gives, since its bytes() are never written): the limit must raise MemoryError."""
    assert "timed out" not in graded["rows"]["memory_hog"].detail
    nb = grading_checks.autograded(graded["root"], "memory_hog", A)
    errors = [o.get("ename", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert "MemoryError" in errors, errors


def test_student_code_has_no_network(graded):
    assert "CONNECTED" not in _outputs(graded["root"], "attacker")
    assert graded["listener"].received == []


def test_no_process_outlives_grading(graded):
    assert "SPAWNED" in _outputs(graded["root"], "attacker")
    assert lingering() == []
    assert stray_kernels() == []


def test_parallel_grading_equals_serial_grading(graded, tmp_path):
    chosen = ["one_wrong.ipynb", "os_exit.ipynb", "stripped.ipynb"]
    folder = tmp_path / "subset"
    folder.mkdir()
    for name in chosen:
        shutil.copy(graded["folder"] / name, folder / name)
    _, serial = grade_folder(tmp_path, folder, jobs=1)
    for row in serial:
        parallel = graded["rows"][row.student_id]
        assert (row.score, row.status, row.detail, row.items) == (
            parallel.score,
            parallel.status,
            parallel.detail,
            parallel.items,
        )


@pytest.fixture(scope="module")
def pages(graded):
    """The class's feedback pages, written once for the tests that read them."""
    return feedback.generate(A, root=graded["root"])


def test_feedback_shows_results_but_never_hidden_tests(pages):
    students = {p.parts[-3] for p in pages}
    assert {"correct", "one_wrong", "blank"} <= students
    hidden = nbformat.read(ROOT / "solutions" / A / f"{A}.ipynb", as_version=4)
    secret = "A single module passed positionally should be the only child."
    assert any(secret in c.source for c in hidden.cells), "the probe must be a hidden test message"
    for page in pages:
        html = page.read_text(encoding="utf-8")
        assert secret not in html and "BEGIN HIDDEN TESTS" not in html, page
    one_wrong = next(p for p in pages if p.parts[-3] == "one_wrong").read_text(encoding="utf-8")
    assert "parameters() misses the children" in one_wrong, "the failing test's message is shown"


def test_feedback_shows_an_error_of_the_visible_part_with_its_message(graded, pages):
    """visible_error's ParallelBlock raises torch's RuntimeError in the visible part of its test:
    the page shows torch's message, as Validate does (a hidden part's error shows only its type)."""
    import torch

    try:
        torch.cat((torch.zeros(5, 2), torch.zeros(5, 3)), dim=0)
    except RuntimeError as error:
        message = str(error).split(".")[0]
    page = next(p for p in pages if p.parts[-3] == "visible_error").read_text(encoding="utf-8")
    assert message in page, f"torch's message {message!r} is not on the page"
    assert grader_cases.HIDDEN_MESSAGE not in page and "BEGIN HIDDEN TESTS" not in page
    assert message in graded["rows"]["visible_error"].detail
    # A warning the visible part printed shows too; the hidden part's output never does.
    warns = next(p for p in pages if p.parts[-3] == "warns").read_text(encoding="utf-8")
    assert grader_cases.WARNING in warns, "the visible part's warning is not on the page"


def test_report_draws_the_class(graded):
    out = graded["tmp"] / "report.png"
    text = report.report(A, out=out, root=graded["root"])
    assert out.exists() and out.stat().st_size > 10_000
    assert "test_MySequential" in text and "graded submissions" in text
    assert out.with_suffix(".txt").read_text().startswith(f"{A}: ")


def test_after_a_time_out_later_cells_get_the_shorter_limit():
    """A loop in one answer that several tests call costs the cell limit once: once a cell of the
    notebook timed out, each later cell gets limit_after_timeout (never more than the cell limit)."""
    from grader.execute.cell_limits import Limits
    from grader.execute.cell_notes import Notes

    clock = Limits(
        Notes(), timeout=60, notebook_timeout=600, limit_after_timeout=10, interrupt_grace=5, max_output_bytes=1
    )
    assert clock.cell_timeout() == 60
    clock.timed_out = {12}
    assert clock.cell_timeout() == 10
    clock.timeout = 5
    assert clock.cell_timeout() == 5
