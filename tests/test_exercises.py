"""Exercises: generated, not hand-edited; graded tests that fail on the blank
exercise and catch the wrong answers students really write while the rest of
the solution still passes. (The rules a lesson's cells follow are checked at
build time: tools/rules.py, tests/test_rules.py.)"""

import filecmp
import re

import nbformat
import pytest

from conftest import ASSIGNMENTS, ROOT
from tools import cells, course

pytestmark = pytest.mark.unit


@pytest.fixture(scope="module")
def regenerated(tmp_path_factory):
    """Every exercise regenerated from solutions/ in a scratch course."""
    root = tmp_path_factory.mktemp("course")
    course_api = course.temporary_course(root)
    for assignment in ASSIGNMENTS:
        course.generate(course_api, assignment)
    return root / "exercises"


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_exercise_is_what_nbgrader_generates_from_the_solution(regenerated, assignment):
    compared = filecmp.dircmp(regenerated / assignment, ROOT / "exercises" / assignment)
    assert compared.left_only == compared.right_only == [], "files differ: run make exercises"
    fresh = (regenerated / assignment / f"{assignment}.ipynb").read_text(encoding="utf-8")
    stored = (ROOT / "exercises" / assignment / f"{assignment}.ipynb").read_text(encoding="utf-8")
    assert fresh == stored, f"exercises/{assignment} is stale or was edited by hand: run make exercises"


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_no_solution_text_reaches_the_exercise(assignment):
    exercise = nbformat.read(ROOT / "exercises" / assignment / f"{assignment}.ipynb", as_version=4)
    solution = nbformat.read(ROOT / "solutions" / assignment / f"{assignment}.ipynb", as_version=4)
    text = "\n".join(c.source for c in exercise.cells)
    for marker in ("BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS", "END HIDDEN TESTS"):
        assert marker not in text
    hidden_blocks = r"### BEGIN (HIDDEN TESTS|SOLUTION)\n(.*?)### END (HIDDEN TESTS|SOLUTION)"
    for cell in solution.cells:
        public = re.sub(hidden_blocks, "", cell.source, flags=re.S)
        for _, block, _ in re.findall(hidden_blocks, cell.source, re.S):
            for line in block.strip().splitlines():
                # A line also in the public part (a repeated message) is no leak;
                # short lines such as "return X" also appear in instructions.
                line = line.strip()
                if len(line) > 25 and line not in public:
                    assert line not in text, f"solution or hidden test line leaked: {line}"
        if cell.metadata["nbgrader"].get("solution") and cell.cell_type == "markdown":
            assert cell.source not in text, "a model answer leaked into the exercise"


class RunsAnswers:
    """The checks that run a lesson's cells with answers swapped in, the costly part of this module.
    One subclass per lesson (below): pytest-xdist's loadscope hands each class to a worker of its
    own, so the lessons' runs go side by side instead of one worker running them all."""

    assignment = ""

    def test_every_graded_test_fails_on_the_untouched_exercise(self):
        blank = cells.graded_cells(cells.exercise(self.assignment))
        outcome = cells.run(blank)
        assert outcome, "the exercise has no graded tests"
        passing = [test_id for test_id, error in outcome.items() if error is None]
        assert passing == [], f"tests that pass on the blank exercise: {passing}"

    def test_wrong_answer_loses_exactly_its_items_points(self, wrong):
        nb_cells = cells.solution_cells(wrong.lesson)
        assert wrong.answer_id in {c["id"] for c in nb_cells if c["answer"]}
        outcome = cells.run(nb_cells, {wrong.answer_id: wrong.code})
        failed = {test_id for test_id, error in outcome.items() if error is not None}
        assert failed == set(wrong.fails)
        messages = [str(error) for error in outcome.values() if error is not None]
        assert not wrong.says or any(wrong.says.lower() in m.lower() for m in messages), (
            f"the message should name the mistake ({wrong.says!r}), got {messages}"
        )

    def test_a_correct_answer_written_differently_passes_every_test(self, right):
        nb_cells = cells.solution_cells(right.lesson)
        assert right.answer_id in {c["id"] for c in nb_cells if c["answer"]}
        outcome = cells.run(nb_cells, {right.answer_id: right.code})
        assert {test_id: repr(error) for test_id, error in outcome.items() if error is not None} == {}


def pytest_generate_tests(metafunc):
    """Each lesson's class runs that lesson's wrong and right answers (tests/*_answers/)."""
    lesson = getattr(metafunc.cls, "assignment", "")
    if "wrong" in metafunc.fixturenames:
        metafunc.parametrize("wrong", cells.read_wrong_answers(lesson), ids=str)
    if "right" in metafunc.fixturenames:
        metafunc.parametrize("right", cells.read_right_answers(lesson), ids=str)


for _assignment in ASSIGNMENTS:
    _name = f"TestAnswers_{_assignment}"
    _members: dict = {"assignment": _assignment}
    if not cells.read_right_answers(_assignment):  # nothing to run: no test, rather than a skipped one
        _members["test_a_correct_answer_written_differently_passes_every_test"] = None
    globals()[_name] = type(_name, (RunsAnswers,), _members)


def test_the_cell_runner_can_tell_a_failing_test():
    sample = [
        {"id": "a", "source": "x = 1", "tests": False, "answer": True},
        {"id": "t", "source": "assert x == 1, 'x is wrong'", "tests": True, "answer": False},
    ]
    assert cells.run(sample) == {"t": None}
    assert isinstance(cells.run(sample, {"a": "x = 2"})["t"], AssertionError)
    assert isinstance(cells.run(sample, {"a": "raise NotImplementedError()"})["t"], NameError)


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_every_tests_cell_is_failed_by_a_realistic_wrong_answer(assignment):
    """Points follow clauses: each tests cell (a clause of its item) has a mistake it catches."""
    tests = {c["id"] for c in cells.solution_cells(assignment) if c["tests"]}
    caught = {test_id for wrong in cells.read_wrong_answers(assignment) for test_id in wrong.fails}
    assert sorted(tests - caught) == [], "tests cells that no wrong-answer fixture fails"
