"""Items judged outside the kernel (grader/judges.py; each judge lives in its item's tests cell).

In process, without a kernel: each judge accepts the model solution and every right
answer of its item, and rejects every wrong answer of its item on its own (not only
because the in-kernel test already failed it), and each liar of the corpus really does
pass its item's in-kernel test (so only the judge stops it). Judges compare values, never
types: an honest answer in another form (an OrderedDict, a numpy integer, a 0-d tensor) is
the value it holds. Through the grader: the liars score 0 for their item, with the judge's
message and no flag (a judge's rejection accuses no one); the solutions keep full marks.
The right answers of every item are graded through the grader in tests/test_right_answers.py.
"""

from __future__ import annotations

import collections
import re

import cheats
import nbformat
import numpy
import pytest
import torch
from submissions import full_score, points

from conftest import ROOT, selected
from grader import judges
from grader.grading import grade
from grader.records import export
from grader.runner import data as runner_data
from tools import cells, course

pytestmark = [pytest.mark.integration, pytest.mark.sandbox]

JUDGED = {  # judged test cell -> (lesson, its answer, its judge), read from the lessons' test cells
    cell["id"]: (lesson, cell["id"].removeprefix("test_"), judges.in_cell(cell["source"]))
    for lesson in course.assignment_ids()
    for cell in cells.solution_cells(lesson)
    if cell["tests"] and judges.in_cell(cell["source"])
}


def judge_named(name: str) -> judges.Judge:
    return next(judge for _, _, judge in JUDGED.values() if judge.name == name)


# What the kernel's runner sends for a value (grader/runner/data.py), computed here in process.
encoded = runner_data.make_plain(
    (torch.Tensor, torch.nn.Parameter),
    torch.Size,
    torch._C.TensorBase.tolist,
    torch._C.TensorBase.__dict__["dtype"].__get__,
    numpy,
)


def judge_in_process(test_id: str, replace: dict[str, str] | None = None) -> str | None:
    """Run the lesson with `replace`d answers, then the judge's collect code, then its verdict."""
    lesson, _, judge = JUDGED[test_id]
    namespace: dict = {"__name__": "__main__"}
    for cell in cells.solution_cells(lesson):
        if not cell["tests"]:
            exec(compile((replace or {}).get(cell["id"], cell["source"]), cell["id"], "exec"), namespace)
    try:
        exec(compile(judge.collect, "<judge>", "exec"), namespace)
    except Exception as error:  # as the grader reports it: the student's code raised
        return f"raised {type(error).__name__}"
    return judges.verdict(judge, encoded(namespace.get("judged")))


@pytest.mark.unit
def test_the_docs_table_names_exactly_the_judged_items():
    """docs/grade-integrity.md's table of judged items follows the lessons (a new judged item needs its row)."""
    text = (ROOT / "docs" / "grade-integrity.md").read_text(encoding="utf-8")
    rows = set(re.findall(r"^\| (\d+) \| `(\w+)` \| kernel, then outside \|", text, re.MULTILINE))
    judged = {(str(int(lesson[:2])), judge.answer) for lesson, _, judge in JUDGED.values()}
    assert rows == judged, f"docs/grade-integrity.md's table: add {judged - rows}, remove {rows - judged}"


@pytest.mark.unit
def test_every_judged_item_has_a_liar_in_the_corpus():
    """A judge is there to stop a liar: the corpus holds one for each judged item (tests/cheats.py LIARS)."""
    assert {judge.answer for _, _, judge in JUDGED.values()} <= {liar.answer for liar in cheats.LIARS}


@pytest.mark.unit
def test_judges_are_found_in_the_lessons_and_named_once():
    names = [judge.name for _, _, judge in JUDGED.values()]
    assert len(names) >= 8 and len(set(names)) == len(names)


CELL = """\
# judged outside the kernel: doubled
assert double(2) == 4
### BEGIN HIDDEN TESTS
assert double(3) == 6
### BEGIN JUDGE
def judge():
    from grader.judges import Judge, Rejected, exact_int

    def check(data):
        if exact_int(data["six"], "double(3)") != 6:
            raise Rejected("double(3) should be 6")

    return Judge("double", "judged = {'six': double(3)}", check)
### END JUDGE
### END HIDDEN TESTS
"""


@pytest.mark.unit
def test_a_judge_is_read_from_its_cell_and_never_reaches_the_kernel():
    judge = judges.in_cell(CELL)
    assert (judge.name, judge.answer, judge.collect) == ("doubled", "double", "judged = {'six': double(3)}")
    assert judges.verdict(judge, {"six": 6}) is None
    assert judges.verdict(judge, {"six": 7}) == "checked outside your kernel: double(3) should be 6"
    kernel_source = judges.without_judge(CELL)
    assert "judge" not in kernel_source.split("### BEGIN HIDDEN TESTS")[1]
    assert kernel_source.count("\n") == CELL.count("\n")  # error lines keep their numbers
    assert judges.in_cell("assert double(2) == 4\n") is None


@pytest.mark.unit
@pytest.mark.parametrize(
    "broken, message",
    [
        (CELL.replace("# judged outside the kernel: doubled\n", ""), "needs both"),
        (CELL.replace("### END JUDGE\n", ""), "without ### END JUDGE"),
        (
            CELL.replace('return Judge("double", "judged = {\'six\': double(3)}", check)', "return check"),
            "should return",
        ),
        (CELL.replace("from grader.judges import", "from grader.nowhere import"), "ModuleNotFoundError"),
    ],
)
def test_a_malformed_judge_is_the_courses_bug_named_clearly(broken, message):
    with pytest.raises(judges.JudgeError, match=message):
        judges.in_cell(broken)


@pytest.mark.unit
@pytest.mark.parametrize("test_id", sorted(JUDGED), ids=lambda t: f"{JUDGED[t][0]}:{t}")
def test_a_judge_accepts_the_model_solution(test_id):
    assert judge_in_process(test_id) is None


RIGHT = [
    r
    for r in (r for lesson in course.assignment_ids() for r in cells.read_right_answers(lesson))
    if f"test_{r.answer_id}" in JUDGED
]
WRONG = [
    w
    for w in (w for lesson in course.assignment_ids() for w in cells.read_wrong_answers(lesson))
    if set(w.fails) & set(JUDGED) and w.seen_on != "device"
]


@pytest.mark.unit
@pytest.mark.parametrize("right", RIGHT, ids=str)
def test_a_judge_accepts_every_right_answer_of_its_item(right):
    assert judge_in_process(f"test_{right.answer_id}", {right.answer_id: right.code}) is None


@pytest.mark.unit
@pytest.mark.parametrize("wrong", WRONG, ids=str)
def test_a_judge_rejects_every_wrong_answer_of_its_item_by_itself(wrong):
    """Some judge of the cells it fails rejects it (a mistake seen only off the CPU excepted:
    the in-kernel tests catch it on the meta device, and a judge computes on the CPU)."""
    judged = [t for t in wrong.fails if t in JUDGED]
    assert any(judge_in_process(t, {wrong.answer_id: wrong.code}) is not None for t in judged)


@pytest.mark.unit
def test_the_fixtures_cover_every_judged_item():
    assert {t for w in WRONG for t in w.fails if t in JUDGED} == set(JUDGED)
    assert RIGHT, "right answers of judged items exist"


@pytest.mark.unit
@pytest.mark.parametrize("liar", cheats.LIARS, ids=lambda c: c.name)
def test_a_liar_passes_its_items_test_in_the_kernel_so_only_the_judge_stops_it(liar):
    lesson_cells = cells.solution_cells(liar.assignment)
    outcome = cells.run(lesson_cells, {liar.answer: liar.code})
    assert outcome[liar.test] is None, outcome[liar.test]
    assert judge_in_process(liar.test, {liar.answer: liar.code}) is not None


@pytest.mark.unit
def test_a_verdict_names_what_came_instead_of_a_tensor_or_an_int():
    judge = judge_named("count_parameters")
    message = judges.verdict(judge, {"tied": ("object", "_Any"), "tied_all": 50, "batch_norm": 12, "none": 0})
    assert message == (
        "checked outside your kernel: count_parameters of a tied net with a frozen weight should be "
        "an integer, but it is a _Any"
    )
    empty = {
        "tied": 35,
        "tied_all": 50,
        "batch_norm": 12,
        "batch_norm_all": 12,
        "weight_shared": 24,
        "own": 7,
        "own_all": 16,
        "none": ("tensor", "torch.float32", 0.0),
    }  # torch.tensor([]).sum()
    assert judges.verdict(judge, empty) == (
        "checked outside your kernel: count_parameters of nn.ReLU() should be "
        "an integer, but it is a torch.float32 tensor holding 0.0"
    )
    judge = judge_named("centered_layer")
    nan = {"x": ("tensor", "torch.float32", [[1.0]]), "y": ("tensor", "torch.float32", "non-finite")}
    assert "NaN or infinite" in judges.verdict(judge, dict(nan, x_after=nan["x"], parameters=0))
    assert "not of the form" in judges.verdict(judge, {"x": ("tensor", "torch.float32", [[1.0]])})
    assert "could not collect" in judges.verdict(judge, None)


@pytest.mark.unit
def test_honest_forms_of_a_value_reach_the_judge_as_that_value():
    class Counted(int):  # an int subclass is the int it holds, whatever its == says
        def __eq__(self, other):
            return True

        __hash__ = int.__hash__

    Pair = collections.namedtuple("Pair", "a b")
    sent = encoded(
        {
            "od": collections.OrderedDict([("w", torch.Size([2, 3]))]),
            "np": numpy.prod((2, 3)),
            "np_float": numpy.float32(0.5),
            "liar": Counted(7),
            "pair": Pair(1, [2]),
        }
    )
    assert sent == {"od": {"w": (2, 3)}, "np": 6, "np_float": 0.5, "liar": 7, "pair": (1, [2])}
    assert [type(sent[k]) for k in ("od", "np", "np_float", "liar", "pair")] == [dict, int, float, int, tuple]
    assert judges.exact_int(encoded(torch.tensor([3, 4]).sum()), "a count") == 7
    with pytest.raises(judges.Rejected, match="should be an integer, but it is a float"):
        judges.exact_int(encoded(numpy.float64(7.0)), "a count")


@pytest.fixture(scope="module")
def graded(tmp_path_factory, request):
    """One class per lesson with a judged item: the solution and its liars (of the lessons whose
    tests this run selected: `make lesson` grades one)."""
    tmp = tmp_path_factory.mktemp("judged")
    chosen = selected(request, "lesson") | {liar.assignment for liar in selected(request, "liar")}
    lessons = sorted({lesson for lesson, _, _ in JUDGED.values()} & chosen)
    root = tmp / "course"
    course.temporary_course(root, lessons)
    rows = {}
    for lesson in lessons:
        folder = tmp / lesson
        folder.mkdir()
        nbformat.write(cells.answered(lesson), folder / "solution.ipynb")
        for liar in (c for c in cheats.LIARS if c.assignment == lesson):
            nbformat.write(cheats.liar_notebook(liar), folder / f"{liar.name}.ipynb")
        options = grade.Options(lesson, folder, jobs=2, root=root, cell_timeout=30, notebook_timeout=120)
        found = grade.run(options)
        export.write_csv(found, tmp / f"{lesson}.csv")
        rows.update({(lesson, r.student_id): r for r in found})
    return rows


@pytest.mark.parametrize("lesson", sorted({lesson for lesson, _, _ in JUDGED.values()}))
def test_the_solution_keeps_full_marks_through_the_judges(graded, lesson):
    row = graded[(lesson, "solution")]
    assert (row.score, row.status, row.flags) == (full_score(lesson), "graded", ""), (row.detail, row.flags)


@pytest.mark.parametrize("liar", cheats.LIARS, ids=lambda c: c.name)
def test_a_liar_earns_nothing_for_its_item_without_a_flag(graded, liar):
    row = graded[(liar.assignment, liar.name)]
    assert row.items[liar.test] == 0 and row.score == 0, (row.items, row.detail)
    assert row.status == "graded" and row.flags == "", row.flags
    assert points(liar.assignment)[liar.test] > 0
