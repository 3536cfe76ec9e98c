"""Every scenario of nbgrader's own autograde tests, and where this suite grades it both ways.

`NBGRADER_SCENARIOS` maps each test method of the installed nbgrader's
`tests/apps/test_nbgrader_autograde.py` to a verdict and a place:

- "same": plain `nbgrader autograde` and the grader give the same scores, gradebook and files;
  `where` is our test that grades it both ways and compares (check_same).
- "better": the grader grades what plain nbgrader drops, or flags what it misses; `where` is our
  test that shows it.
- "differs": an intended difference, documented in docs/grading.md; `where` is "our_test: why".
- "not applicable": a switch of `nbgrader autograde` the grader does not have (it regrades
  everything it is given, every notebook of it); `where` says which.

A new nbgrader scenario fails this module until it is placed here.
"""

from __future__ import annotations

import ast
import re

import pytest
from nbgrader_scenario_courses import NBGRADER_TESTS

from conftest import ROOT

pytestmark = pytest.mark.unit

DATES = "test_timestamps_late_hand_ins_extra_files_and_what_plain_nbgrader_drops"
ZERO = "test_zero_penalty_regraded_kernelspecs_custom_permissions_and_cell_limits"
AUTOTESTS = "test_autotests_hidden_tests_and_a_groupshared_course"
CHEATS = "test_cheat_attempts_under_no_time_limit_and_files_handed_in_with_exclude_overwriting"
FILES = "test_files_read_written_and_nbgrader_execution_in_one_assignment"
LEFT_OUT = "test_a_notebook_left_out_and_an_empty_release_without_a_kernelspec"
FORCE = "--force: nbgrader skips a hand-in already in autograded/ unless forced; the grader regrades what it is given"
NOTEBOOK = "--notebook: nbgrader grades some notebooks of a hand-in; the grader grades all of them"

NBGRADER_SCENARIOS: dict[str, tuple[str, str]] = {
    "test_help": ("not applicable", "`nbgrader autograde --help-all`; the grader's is `python -m grader grade --help`"),
    "test_missing_student": ("same", DATES),  # students not in the gradebook are added, as by default
    "test_missing_assignment": ("better", "test_an_unknown_assignment_is_refused_by_name_without_a_traceback"),
    "test_grade": ("same", DATES),  # 1/7 and 2/7, "No response." on foo's blank answers
    "test_grade_autotest": ("same", AUTOTESTS),
    "test_grade_hashed_autotest": ("same", AUTOTESTS),
    "test_grade_complex_autotest": ("same", AUTOTESTS),
    "test_showtraceback_exploit": ("better", CHEATS),  # same scores; the cheat attempts are flagged
    "test_student_id_exclude": ("not applicable", "--CourseDirectory.student_id_exclude: the grader grades the "
                                "hand-ins it is given, every one"),
    "test_grade_timestamp": ("same", DATES),
    "test_grade_empty_timestamp": ("better", "test_a_hand_in_whose_timestamp_is_no_time_is_named_in_its_row"),
    "test_late_submission_penalty_none": ("same", DATES),
    "test_late_submission_penalty_zero": ("same", ZERO),  # the regrade on time drops the penalty
    "test_late_submission_penalty_plugin": ("same", "test_a_late_penalty_plugin_beside_the_courses_config"),
    "test_force": ("not applicable", FORCE + " (the course's files over the hand-in's, *.pyc left out: " + DATES + ")"),
    "test_force_f": ("not applicable", "-f, " + FORCE),
    "test_filter_notebook": ("not applicable", NOTEBOOK),
    "test_grade_overwrite_files": ("same", CHEATS),
    "test_grade_overwrite_files_subdirs": ("same", CHEATS),
    "test_side_effects": ("same", FILES),
    "test_skip_extra_notebooks": ("same", DATES),
    "test_permissions": ("same", AUTOTESTS),  # groupshared; the default 444 in every check_same
    "test_custom_permissions": ("same", ZERO),  # c.Autograde.permissions; c.AutogradeApp's too
    "test_force_single_notebook": ("not applicable", NOTEBOOK + "; " + FORCE),
    "test_update_newer": ("not applicable", "a newer timestamp.txt regrades without --force; " + FORCE),
    "test_update_newer_single_notebook": ("not applicable", NOTEBOOK),
    "test_hidden_tests_single_notebook": ("same", AUTOTESTS),
    "test_hidden_tests_autotest": ("same", AUTOTESTS),
    "test_handle_failure": ("better", DATES),  # nbgrader drops the student; the grader grades p1
    "test_handle_failure_single_notebook": ("not applicable", NOTEBOOK + " (a failing notebook: " + DATES + ")"),
    "test_missing_source_kernelspec": ("better", ZERO),  # a hand-in naming kernel "blarg" is graded
    "test_incorrect_source_kernelspec": ("differs", ZERO + ": every notebook runs in the grader's own sandboxed "
                                         "Python kernel, whatever its kernelspec names, so a release naming a "
                                         "kernel that is not installed grades; the row names the kernel"),
    "test_incorrect_submitted_kernelspec": ("same", ZERO),
    "test_no_execute": ("not applicable", "--no-execute: the grader always runs the notebook"),
    "test_many_students": ("not applicable", "nbgrader skips it (a PostgreSQL server set by hand to few "
                           "connections); the grader's PostgreSQL gradebook: test_grading_with_a_postgresql_gradebook"),
    "test_infinite_loop": ("same", ZERO),
    "test_infinite_loop_with_output": ("better", DATES),  # graded 0 (MemoryError) where nbgrader drops it
    "test_missing_files": ("better", DATES),  # an empty folder: a row that says so; the empty release: LEFT_OUT
    "test_grade_missing_notebook": ("same", LEFT_OUT),
    "test_grade_with_validating_envvar": ("same", FILES),
    "test_autograde_timeout": ("same", ZERO),  # 2 s: 0; the default 30 s: 1 (DATES)
}  # fmt: skip
VERDICTS = {"same", "better", "differs", "not applicable"}


def nbgraders_scenarios() -> list[str]:
    """The test methods of nbgrader's TestNbGraderAutograde, as the installed package has them."""
    tree = ast.parse(NBGRADER_TESTS.read_text(encoding="utf-8"))
    (autograde,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "TestNbGraderAutograde"]
    return [n.name for n in autograde.body if isinstance(n, ast.FunctionDef) and n.name.startswith("test_")]


def our_tests() -> set[str]:
    """Every test function of tests/test_*.py."""
    return {
        node.name
        for path in (ROOT / "tests").glob("test_*.py")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test_")
    }


def test_every_scenario_of_nbgraders_autograde_tests_is_placed():
    scenarios = nbgraders_scenarios()
    assert len(scenarios) == len(set(scenarios)) >= 41, scenarios
    assert set(NBGRADER_SCENARIOS) == set(scenarios), {
        "not placed here": sorted(set(scenarios) - set(NBGRADER_SCENARIOS)),
        "no longer nbgrader's": sorted(set(NBGRADER_SCENARIOS) - set(scenarios)),
    }


def test_every_verdict_names_the_test_that_checks_it_or_its_reason():
    ours = our_tests()
    problems = []
    for scenario, (verdict, where) in NBGRADER_SCENARIOS.items():
        test = where.split(":")[0]
        if verdict not in VERDICTS:
            problems.append(f"{scenario}: verdict {verdict!r}")
        elif verdict in {"same", "better"} and where not in ours:
            problems.append(f"{scenario}: {where} is no test of tests/")
        elif verdict == "differs" and (test not in ours or not where[len(test) :].strip(": ")):
            problems.append(f"{scenario}: a difference names its test and why ('test_x: why'), not {where!r}")
        elif verdict == "not applicable" and where.startswith("test_"):
            problems.append(f"{scenario}: not applicable says why, not which test")
        # A test of ours named in a reason exists too (nbgrader's own names are not ours).
        problems += [
            f"{scenario}: {name} is no test of tests/"
            for name in re.findall(r"\btest_\w+", where)
            if name not in ours and name not in NBGRADER_SCENARIOS
        ]
    assert not problems, problems


def test_each_named_difference_is_in_the_docs():
    docs = (ROOT / "docs" / "grading.md").read_text(encoding="utf-8")
    missing = [s for s, (verdict, _) in NBGRADER_SCENARIOS.items() if verdict == "differs" and s not in docs]
    assert not missing, f"docs/grading.md does not name {missing}"
