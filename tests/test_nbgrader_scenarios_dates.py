"""nbgrader's autograde scenarios of due dates, kernels and time limits, graded both ways.

Each course is built from the test files the installed nbgrader ships, set up as nbgrader's
`test_nbgrader_autograde.py` sets it up (the due date `nbgrader db assignment add --duedate` gives
ps1, the students it adds first, the hand-ins' timestamp.txt), graded by plain `nbgrader autograde`
and by `python -m grader grade --root`, and compared by `check_same`: every cell's score, the
seconds late, each notebook's late penalty and needs_manual_grade, the comments, the files and
their modes in autograded/. Where plain nbgrader drops a submission (its test expects exit 1 and
nothing in autograded/), the grader grades it: the test names which and why.
"""

from __future__ import annotations

import shutil
from concurrent.futures import ThreadPoolExecutor

import grader_cases
import pytest
from nbgrader_scenario_courses import (
    DUEDATE,
    EMPTY,
    A,
    Kernel,
    autograded_files,
    build,
    check_same,
    grade_both,
    run_grader,
    submission_record,
    texts,
)

pytestmark = [pytest.mark.integration, pytest.mark.sandbox]

LA = " America/Los_Angeles"
HOUR_LATE = "2015-02-02 15:58:23.948203" + LA  # an hour after DUEDATE
INVALID = "But I want to be a timestamp string :("  # nbgrader's test's


def test_timestamps_late_hand_ins_extra_files_and_what_plain_nbgrader_drops(tmp_path):
    """test_grade (1/7 and 2/7, "No response." on the blank answers), test_grade_timestamp,
    test_grade_empty_timestamp (its empty timestamp.txt), test_late_submission_penalty_none,
    test_missing_student (only foo and bar in the gradebook beforehand), test_skip_extra_notebooks
    ("p1 copy.ipynb"), test_force's files (the course's foo.txt and data/bar.txt over the student's,
    blah.pyc ignored), test_autograde_timeout at the default 30 s (timeout.ipynb's 5 s sleep scores),
    test_missing_files' empty hand-in folder, and two that plain nbgrader drops: test_handle_failure
    (a p2 with cells the release does not have) and test_infinite_loop_with_output (memory without
    end: nbgrader's own test is skipped for it, so only the grader gets that hand-in)."""
    ours, plain, downloads = build(
        tmp_path,
        "",
        {"p1": "submitted-unchanged.ipynb", "p2": EMPTY, "p3": "timeout.ipynb", "p4": "infinite-loop-with-output.ipynb"},
        {"foo.txt": "foo", "data/bar.txt": "bar"},
        {
            "foo": {"p1.ipynb": "submitted-unchanged.ipynb", "timestamp.txt": HOUR_LATE},
            "bar": {"p1.ipynb": "submitted-changed.ipynb", "p1 copy.ipynb": "submitted-unchanged.ipynb",
                    "timestamp.txt": "2015-02-01 14:58:23.948203" + LA,
                    "foo.txt": "mine", "data/bar.txt": "mine", "blah.pyc": "asdf"},
            "ontime": {"p1.ipynb": "submitted-changed.ipynb", "p3.ipynb": "timeout.ipynb", "timestamp.txt": DUEDATE},
            "blank": {"p1.ipynb": "submitted-unchanged.ipynb", "timestamp.txt": ""},
            "broken": {"p1.ipynb": "submitted-changed.ipynb", "p2.ipynb": "test.ipynb"},
            "empty": {},
        },
        duedate=DUEDATE,
        roster=("foo", "bar"),
        grader_only={"hog": {"p4.ipynb": "infinite-loop-with-output.ipynb"}},
    )  # fmt: skip
    rows = grade_both(ours, plain, downloads, tmp_path, plain_fails=True)
    assert {s: float(r["score"]) for s, r in rows.items()} == {
        "foo": 1, "bar": 2, "ontime": 3, "blank": 1, "broken": 2, "hog": 0, "empty": 0
    }, rows  # fmt: skip
    check_same(ours, plain, rows, dropped={"broken"}, extra={"hog"})
    record = submission_record(ours)
    assert {s: r["late"] for s, r in record.items()} == {
        "foo": 3600, "bar": 0, "ontime": 0, "blank": 0, "broken": 0, "hog": 0
    }  # fmt: skip
    assert all(p is None for r in record.values() for _, _, p, _ in r["notebooks"].values())  # method "none"
    assert {c for (_, c), text in record["foo"]["comments"].items() if text == "No response."} == {
        "set_a",
        "baz",
        "quux",
    }
    assert texts(ours, "bar") == {
        "foo.txt": "foo", "data/bar.txt": "bar", "p1.ipynb": None, "timestamp.txt": "2015-02-01 14:58:23.948203" + LA
    }  # fmt: skip
    assert "p1 copy.ipynb" in rows["bar"]["detail"]
    # Better: plain nbgrader keeps nothing of broken's hand-in; the grader grades p1 and says p2's cells are not the release's.
    assert rows["broken"]["status"] == "graded" and "p2.ipynb" in autograded_files(ours, "broken")
    assert rows["hog"]["status"] == "graded" and "MemoryError" in rows["hog"]["detail"], rows["hog"]
    # test_missing_files: a folder without a notebook is no submission of nbgrader's; the grader's row says so.
    assert not autograded_files(plain, "empty") and rows["empty"]["status"] == "invalid", rows["empty"]
    assert rows["empty"]["detail"] == "no notebook in the folder", rows["empty"]


def test_zero_penalty_regraded_kernelspecs_custom_permissions_and_cell_limits(tmp_path):
    """test_late_submission_penalty_zero (its regrade with an on-time timestamp included),
    test_custom_permissions (644, in the course's config as `c.Autograde.permissions`), the three
    kernelspec scenarios (a release without one, one naming a kernel that does not exist, a
    hand-in naming another) and test_infinite_loop / test_autograde_timeout under a 2 s cell limit."""
    config = (
        "c.LateSubmissionPlugin.penalty_method = 'zero'\n"
        "c.ClearSolutions.code_stub = {'python': '## Answer', 'blah': '## Answer'}\n"
        "c.Autograde.permissions = 644\nc.Execute.timeout = 2\n"
    )
    ours, plain, downloads = build(
        tmp_path,
        config,
        {"p1": "submitted-unchanged.ipynb", "p2": EMPTY, "p3": Kernel("blah"), "p4": Kernel("python"),
         "p5": "infinite-loop.ipynb", "p6": "timeout.ipynb"},
        {"foo.txt": "foo"},
        {
            "foo": {"p1.ipynb": "submitted-unchanged.ipynb", "p2.ipynb": Kernel("python"), "timestamp.txt": DUEDATE},
            "bar": {"p1.ipynb": "submitted-changed.ipynb", "p4.ipynb": Kernel("blah"), "p5.ipynb": "infinite-loop.ipynb",
                    "p6.ipynb": "timeout.ipynb", "timestamp.txt": HOUR_LATE},
            "kbar": {"p2.ipynb": Kernel("blarg")},  # a kernel nobody has, on a release without a kernelspec
            "kqux": {"p3.ipynb": Kernel("python")},  # the release names kernel "blah", which is not installed
        },
        duedate=DUEDATE,
        roster=("foo", "bar"),
    )  # fmt: skip
    rows = grade_both(ours, plain, downloads, tmp_path, plain_fails=True)
    assert {s: float(r["score"]) for s, r in rows.items()} == {"foo": 1, "bar": 2, "kbar": 0, "kqux": 0}, rows
    check_same(ours, plain, rows, dropped={"kbar", "kqux"})
    record = submission_record(ours)
    assert record["bar"]["late"] == 3600 and record["bar"]["notebooks"]["p1"][:3] == (2, 7, 2)  # all of it
    assert record["foo"]["late"] == 0 and record["foo"]["notebooks"]["p1"][2] is None
    assert {mode for _, mode in autograded_files(ours, "bar").values()} >= {"0o644"}
    assert {mode for name, (_, mode) in autograded_files(ours, "bar").items() if name != "."} == {"0o644"}
    assert {"p5.ipynb", "p6.ipynb"} <= set(texts(ours, "bar"))  # the loop and the sleep stopped, graded
    # Named difference: every notebook runs in the grader's own Python kernel, whatever its
    # kernelspec names; a release naming a kernel that is not installed grades, and the row says so.
    assert "kernel changed to 'python', set back to blah" in rows["kqux"]["detail"], rows["kqux"]
    assert rows["kbar"]["status"] == rows["kqux"]["status"] == "graded"

    # Issue 723 of nbgrader: the penalty goes when the timestamp says on time, graded again.
    regrade = tmp_path / "regrade"
    shutil.copytree(downloads / "bar", regrade / "bar")
    for folder in (plain / "submitted" / "bar" / A, regrade / "bar" / A):
        (folder / "timestamp.txt").write_text(DUEDATE, encoding="utf-8")
    with ThreadPoolExecutor(1) as pool:
        sockets = grader_cases.ipc_kernels()
        again = pool.submit(grader_cases.nbgrader, plain, "autograde", A, "--force", "--student", "bar", *sockets)
        run_grader(ours, regrade, tmp_path)
        again.result()
    assert submission_record(ours)["bar"] == submission_record(plain)["bar"]
    assert submission_record(ours)["bar"]["late"] == 0 and submission_record(ours)["bar"]["notebooks"]["p1"][2] is None


PLUGIN = """from nbgrader.plugins import BasePlugin


class Blarg(BasePlugin):
    def late_submission_penalty(self, student_id, score, total_seconds_late):
        return int(total_seconds_late / 3600)  # a point an hour late, as nbgrader's test's plugin
"""


def test_a_late_penalty_plugin_beside_the_courses_config(tmp_path):
    """test_late_submission_penalty_plugin: late_plugin.py at the course root, named by
    `c.AssignLatePenalties.plugin_class`; 4 h late loses its 1 point, 1 h late 1 of 2."""
    ours, plain, downloads = build(
        tmp_path,
        "c.AssignLatePenalties.plugin_class = 'late_plugin.Blarg'\n",
        {"p1": "submitted-unchanged.ipynb"},
        {},
        {
            "foo": {"p1.ipynb": "submitted-unchanged.ipynb", "timestamp.txt": "2015-02-02 18:58:23.948203" + LA},
            "bar": {"p1.ipynb": "submitted-changed.ipynb", "timestamp.txt": HOUR_LATE},
        },
        root_files={"late_plugin.py": PLUGIN},
        duedate=DUEDATE,
        roster=("foo", "bar"),
    )
    rows = grade_both(ours, plain, downloads, tmp_path)
    check_same(ours, plain, rows)
    penalties = {s: r["notebooks"]["p1"][2] for s, r in submission_record(ours).items()}
    assert penalties == {"foo": 1, "bar": 1}
