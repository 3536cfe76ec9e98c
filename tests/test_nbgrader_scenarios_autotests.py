"""nbgrader's autograde scenarios of autotests, hidden tests and shared folders, graded both ways,
and the ones where nbgrader refuses a course or a hand-in: the grader refuses them too, by name.

The courses are built from the test files the installed nbgrader ships (nbgrader_scenario_courses.py)
and compared by `check_same`. The refusals need no kernel: only the grader runs there.
"""

from __future__ import annotations

import shutil
from concurrent.futures import ThreadPoolExecutor

import pytest
from nbgrader_scenario_courses import (
    DUEDATE,
    EMPTY,
    A,
    Released,
    autograded_files,
    build,
    cell_scores,
    check_same,
    csv_rows,
    grade_both,
    grader_cli,
    run_grader,
    submission_record,
)

pytestmark = [pytest.mark.integration, pytest.mark.sandbox]

HIDDEN = "BEGIN HIDDEN TESTS"


def test_autotests_hidden_tests_and_a_groupshared_course(tmp_path):
    """test_grade_autotest, test_grade_hashed_autotest, test_grade_complex_autotest (autotests.yml at
    the course root, expanded by generate_assignment), test_hidden_tests_autotest (unchanged, wrong
    and right), test_hidden_tests_single_notebook (the release handed in as it is: 1.5 of 3) and
    test_permissions with `c.CourseDirectory.groupshared = True` (files 664, folders 2775)."""
    ours, plain, downloads = build(
        tmp_path,
        'c.ClearSolutions.code_stub = dict(python="# YOUR CODE HERE")\nc.CourseDirectory.groupshared = True\n',
        {"p1": "autotest-simple.ipynb", "p2": "autotest-hashed.ipynb", "p3": "autotest-multi.ipynb",
         "p4": "autotest-hidden.ipynb", "p5": "test-hidden-tests.ipynb"},
        {},
        {
            "foo": {"p1.ipynb": "autotest-simple-unchanged.ipynb", "p2.ipynb": "autotest-hashed-unchanged.ipynb",
                    "p3.ipynb": "autotest-multi-unchanged.ipynb", "p4.ipynb": "autotest-hidden-unchanged.ipynb",
                    "p5.ipynb": Released("p5")},
            "bar": {"p1.ipynb": "autotest-simple-changed.ipynb", "p2.ipynb": "autotest-hashed-changed.ipynb",
                    "p3.ipynb": "autotest-multi-changed.ipynb", "p4.ipynb": "autotest-hidden-changed-wrong.ipynb"},
            "baz": {"p4.ipynb": "autotest-hidden-changed-right.ipynb"},
        },
        root_files={"autotests.yml": "autotests.yml"},
    )  # fmt: skip
    rows = grade_both(ours, plain, downloads, tmp_path)
    assert {s: float(r["score"]) for s, r in rows.items()} == {"foo": 1.5, "bar": 5, "baz": 1}, rows
    check_same(ours, plain, rows)
    notebooks = {s: r["notebooks"] for s, r in submission_record(ours).items()}
    assert [notebooks["foo"][nb][:2] for nb in ("p1", "p2", "p3", "p5")] == [(0, 1), (0, 1), (0, 4), (1.5, 3)]
    assert [notebooks["bar"][nb][:2] for nb in ("p1", "p2", "p3", "p4")] == [(1, 1), (1, 1), (3, 4), (0, 1)]
    for student, notebook in [("foo", "p4"), ("bar", "p4"), ("baz", "p4"), ("foo", "p5")]:
        text = (ours / "autograded" / student / A / f"{notebook}.ipynb").read_text(encoding="utf-8")
        assert HIDDEN in text, (student, notebook)  # the hidden tests are back in autograded/
    assert HIDDEN not in (plain / "release" / A / "p5.ipynb").read_text(encoding="utf-8")
    assert {mode for name, (_, mode) in autograded_files(ours, "foo").items()} == {"0o2775", "0o664"}


def refusal(tmp_path, source: dict, hand_ins: dict, assignment: str = A):
    """The grader alone on a course plain nbgrader refuses (its test expects exit 1)."""
    ours, _, downloads = build(tmp_path, "", source, {}, hand_ins, duedate=DUEDATE)
    return ours, grader_cli(ours, downloads, tmp_path, assignment=assignment)


@pytest.fixture(scope="module")
def unknown_assignment(tmp_path_factory):
    """test_missing_assignment: hand-ins for ps2 where the course has only ps1."""
    tmp_path = tmp_path_factory.mktemp("unknown")
    return refusal(tmp_path, {"p1": "submitted-changed.ipynb"}, {"foo": {"p1.ipynb": "submitted-changed.ipynb"}}, "ps2")


@pytest.fixture(scope="module")
def invalid_timestamp(tmp_path_factory):
    """test_grade_empty_timestamp's second half: a timestamp.txt that is no time."""
    tmp_path = tmp_path_factory.mktemp("invalid")
    hand_in = {"p1.ipynb": "submitted-changed.ipynb", "timestamp.txt": "But I want to be a timestamp string :("}
    ours, done = refusal(tmp_path, {"p1": "submitted-unchanged.ipynb"}, {"foo": hand_in})
    return ours, done, csv_rows(tmp_path / "grades.csv")


def test_an_unknown_assignment_is_refused_before_anything_is_graded(unknown_assignment):
    ours, done = unknown_assignment
    assert done.returncode != 0 and "No notebooks were matched" in done.stderr, done.stderr[-2000:]
    assert not (ours / "autograded").exists() and not (ours / "submitted").exists()


def test_an_unknown_assignment_is_refused_by_name_without_a_traceback(unknown_assignment):
    _, done = unknown_assignment
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert "error:" in done.stderr and "ps2" in done.stderr.split("error:")[-1]


def test_a_hand_in_whose_timestamp_is_no_time_is_not_graded_as_nbgrader_does(invalid_timestamp):
    ours, done, rows = invalid_timestamp
    assert done.returncode != 0 and rows["foo"]["status"] == "not graded", rows
    assert not autograded_files(ours, "foo") and not cell_scores(ours).get("foo")


def test_a_hand_in_whose_timestamp_is_no_time_is_named_in_its_row(invalid_timestamp):
    _, _, rows = invalid_timestamp
    assert "timestamp.txt" in rows["foo"]["detail"], rows["foo"]


def test_the_dask_path_keeps_the_timestamp_and_a_left_out_notebooks_zeros(tmp_path):
    """A late hand-in that leaves p2 out, on the CLI path and on the Dask path (each checked against
    plain nbgrader in the scenarios above): the gradebooks and autograded/ must say the same."""
    ours, _, downloads = build(
        tmp_path,
        "c.LateSubmissionPlugin.penalty_method = 'zero'\n",
        {"p1": "submitted-unchanged.ipynb", "p2": "submitted-unchanged.ipynb"},
        {},
        {
            "foo": {
                "p1.ipynb": "submitted-changed.ipynb",
                "timestamp.txt": "2015-02-02 15:58:23.948203 America/Los_Angeles",
            }
        },
        duedate=DUEDATE,
    )
    shutil.copytree(ours, tmp_path / "dask")
    with ThreadPoolExecutor(1) as pool:
        on_dask = pool.submit(run_grader, tmp_path / "dask", downloads, tmp_path, "--scheduler", "local")
        run_grader(ours, downloads, tmp_path)
        on_dask.result()
    assert submission_record(ours)["foo"]["late"] > 0
    assert cell_scores(tmp_path / "dask") == cell_scores(ours)
    assert submission_record(tmp_path / "dask") == submission_record(ours)
    assert autograded_files(tmp_path / "dask", "foo") == autograded_files(ours, "foo")  # nbgrader's 444


def test_permissions_set_under_nbgraders_older_autogradeapp_name(tmp_path):
    """test_custom_permissions's `--AutogradeApp.permissions=644`, as the course's config says it."""
    ours, plain, downloads = build(
        tmp_path, "c.AutogradeApp.permissions = 644\n", {"p1": EMPTY}, {"foo.txt": "foo"}, {"foo": {"p1.ipynb": EMPTY}}
    )
    rows = grade_both(ours, plain, downloads, tmp_path)
    assert {mode for name, (_, mode) in autograded_files(plain, "foo").items() if name != "."} == {"0o644"}
    check_same(ours, plain, rows)
