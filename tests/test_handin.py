"""The hand-in flow through nbgrader's exchange, command by command, as a class
uses it: the instructor releases 01_blocks; two students fetch it, answer (one
correctly, one with hostile code) and submit; the instructor collects,
autogrades (the course's safe engine), generates and releases feedback; the
students fetch their feedback."""

import grader_cases
import grading_checks
import nbformat
import pytest
import submissions
from grader_cases import nbgrader
from grading_checks import Listener, lingering, stray_kernels

from conftest import ROOT
from grader.course import collect
from grader.grading import grade
from grader.isolation import sandbox
from tools import course

pytestmark = [pytest.mark.integration, pytest.mark.sandbox]

A = grader_cases.A
COURSE = "pytorch-building-blocks"
HIDDEN_MESSAGE = grader_cases.HIDDEN_MESSAGE


@pytest.fixture(scope="module")
def handed_in(tmp_path_factory):
    assert sandbox.available(), "bubblewrap is missing: make test installs it (tools/system_packages.sh)"
    tmp = tmp_path_factory.mktemp("handin")
    root, exchange = tmp / "course", tmp / "exchange"
    course.temporary_course(root, [A])
    exchange.mkdir()
    env = grader_cases.cli_env(**grader_cases.PLANTED)
    shared = [f"--Exchange.root={exchange}", "--Exchange.path_includes_course=True"]
    listener = Listener()
    try:
        nbgrader(root, "generate_assignment", A, "--force", env=env)
        nbgrader(root, "release_assignment", A, *shared, env=env)
        # mallory's answers are right, but her notebook also tries every way out of the
        # sandbox, prints the environment, and an editor stripped its nbgrader metadata.
        attacker = next(c for c in grader_cases.cases(listener.port, root, tmp) if c.kind == "isolation")
        attacker.write(tmp)
        hostile = nbformat.read(tmp / attacker.name, as_version=4)
        hostile.cells.insert(3, nbformat.v4.new_code_cell(grader_cases.ENVIRONMENT_PROBE))
        for cell in hostile.cells:
            cell.metadata.pop("nbgrader", None)
        answers = {"ana": submissions.answered(A), "mallory": hostile}
        for student, nb in answers.items():
            home = tmp / student
            home.mkdir()
            nbgrader(home, "fetch_assignment", A, f"--course={COURSE}", *shared, env=env)
            fetched = home / COURSE / A / f"{A}.ipynb"
            assert fetched.exists(), "fetch_assignment gave the student the released notebook"
            nbformat.write(nb, fetched)
            # Each student is their own user: their own nbgrader cache of what they submitted.
            nbgrader(
                home,
                "submit",
                A,
                f"--course={COURSE}",
                f"--student={student}",
                f"--Exchange.cache={home / '.cache'}",
                *shared,
                env=env,
            )
        nbgrader(root, "collect", A, *shared, env=env)
        graded = nbgrader(root, "autograde", A, "--force", "--GuardedExecute.timeout=20", env=env)
        nbgrader(root, "generate_feedback", A, "--force", env=env)
        nbgrader(root, "release_feedback", A, *shared, env=env)
        for student in answers:
            nbgrader(
                tmp / student,
                "fetch_feedback",
                A,
                f"--course={COURSE}",
                f"--student={student}",
                f"--Exchange.cache={tmp / student / '.cache'}",
                *shared,
                env=env,
            )
    finally:
        listener.close()
    return {"root": root, "tmp": tmp, "log": graded.stderr, "listener": listener}


def test_scores_and_reasons_are_the_graders(handed_in):
    from nbgrader.api import Gradebook

    root = handed_in["root"]
    submitted = root / "submitted"
    rows = {
        r.student_id: r for r in grade.rows(grade.Options(A, submitted, root=root), collect.collect(submitted, A), {})
    }
    assert (rows["ana"].status, rows["ana"].score, rows["ana"].detail) == ("graded", grader_cases.FULL, "")
    assert (rows["mallory"].status, rows["mallory"].score) == ("graded", grader_cases.FULL), (
        "the probes are extra cells and the metadata is put back: the hostile student's answers are right"
    )
    assert "matched to the released cells by content" in rows["mallory"].detail
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gradebook:
        assert gradebook.find_submission(A, "mallory").code_score == grader_cases.FULL


def test_the_hostile_submission_stayed_in_its_sandbox(handed_in):
    text = grading_checks.printed(handed_in["root"], "mallory", A)
    assert "BLOCKED" in text and "LEAKED" not in text and "WROTE" not in text and "CONNECTED" not in text
    assert "PLANTED NOT SEEN" in text
    assert handed_in["listener"].received == [] and lingering() == [] and stray_kernels() == []
    for place in (handed_in["root"], handed_in["tmp"], ROOT):
        assert not (place / "pwned.txt").exists()


def test_each_student_fetches_feedback_without_hidden_tests_or_secrets(handed_in):
    for student in ("ana", "mallory"):
        pages = list((handed_in["tmp"] / student / COURSE / A / "feedback").rglob("*.html"))
        assert len(pages) == 1, f"{student} fetched {pages}"
        html = pages[0].read_text(encoding="utf-8")
        assert "BEGIN HIDDEN TESTS" not in html and HIDDEN_MESSAGE not in html
        # The probe's source holds the planted values (to look for them); its output holds the names it saw.
        for name, value in grader_cases.PLANTED.items():
            assert name not in html and (student == "mallory" or value not in html)
        assert student == "ana" or html.count("PLANTED NOT SEEN") == 2, "the probe's source, then its output"
        assert f"{A} (Score: {float(grader_cases.FULL)} / " in html, "the autograded score heads the page"
        # The reasons reach the student too: the grader's notes are the first cell.
        assert ("matched to the released cells by content" in html) == (student == "mallory")
    other = handed_in["tmp"] / "ana" / COURSE / A / "feedback"
    assert not any("mallory" in str(p) for p in other.rglob("*")), "a student sees only their own feedback"
