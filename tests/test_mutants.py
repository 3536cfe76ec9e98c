"""Mutation testing (tools/mutants.py, issue 42): the report of `make mutants` is current and
shows every behaviour-changing mutant killed; each operator makes the mutant it should; and
the tool tells a weak test from a strong one on a tiny lesson held in memory."""

import ast
import re

import pytest

from tools import cells, mutants
from tools.mutant_operators import mutants as make_mutants

pytestmark = pytest.mark.unit

ITEM_LINE = re.compile(r"^(\S+) (\S+): killed (\d+) of (\d+), (\d+) equivalent$")
SUMMARY = re.compile(r"^mutants: killed (\d+) of (\d+), (\d+) equivalent, (\d+) survived$")
RERUN = "a test or reference cell changed since the mutation report: run make mutants"


@pytest.fixture(scope="module")
def report():
    assert mutants.REPORT.exists(), f"{mutants.REPORT.relative_to(mutants.ROOT)} is missing: run make mutants"
    lines = mutants.REPORT.read_text(encoding="utf-8").splitlines()
    fingerprints = {words[1]: words[2] for words in (line.split() for line in lines) if words[:1] == ["fingerprint"]}
    items = {(m[1], m[2]): tuple(map(int, m.groups()[2:])) for m in map(ITEM_LINE.match, lines) if m}
    totals = [tuple(map(int, m.groups())) for m in map(SUMMARY.match, lines) if m]
    survivors = [line for line in lines if line.startswith("survivor ")]
    assert len(totals) == 1, "the mutation report has no (or several) 'mutants: killed ...' lines: run make mutants"
    return fingerprints, items, totals[0], survivors


def test_the_report_matches_the_current_cells_and_tools(report):
    recorded = report[0]
    current = mutants.fingerprints()
    changed = sorted(name for name in current.keys() | recorded.keys() if current.get(name) != recorded.get(name))
    assert not changed, f"{RERUN} (changed: {', '.join(changed)})."


def test_the_report_shows_every_behaviour_changing_mutant_killed(report):
    _, items, (killed, total, equivalent, survived), survivors = report
    assert survived == 0 and not survivors, (
        f"{survived} mutants survive the tests ({', '.join(s.split(' ', 1)[1] for s in survivors[:5])} ...): "
        "write the test that kills each (python -m tools.mutants LESSON --survivors shows them), or list it in "
        "tests/mutants/equivalent.txt with its reason if no test can tell it apart."
    )
    sums = [sum(counts[k] for counts in items.values()) for k in range(3)]
    assert sums == [killed, total, equivalent], (
        "the report's total line does not add up its item lines: run make mutants"
    )


def test_every_item_has_at_least_five_behaviour_changing_mutants(report):
    items = report[1]
    answers = {(lesson, c["id"]) for lesson in mutants.lessons() for c in cells.solution_cells(lesson) if c["answer"]}
    assert set(items) == answers, f"the report's items are not the lessons' answer cells: {RERUN}."
    few = {f"{lesson} {item}": total - equivalent for (lesson, item), (_, total, equivalent) in items.items()}
    few = {name: n for name, n in few.items() if n < 5}
    assert not few, (
        f"fewer than five behaviour-changing mutants for {few}: the answer is too short for the operators to test "
        "its tests; ask more of the item or add an operator that fits it."
    )


# -- each operator on a tiny cell; the def lines and the defaults outside the markers come from the release.

CELL = """\
class Net(nn.Module):
    def __init__(self, size=3):
        super().__init__()
        ### BEGIN SOLUTION
        self.scale = nn.Parameter(torch.ones(size))
        self.register_buffer("offset", torch.zeros(size), persistent=False)
        ### END SOLUTION

    def forward(self, x, n=2):
        ### BEGIN SOLUTION
        y = x[1:] * self.scale + 0.5
        if n > 0 and not self.training:
            y = y.to(x.device, dtype=torch.float64)
        return y[:n]
        ### END SOLUTION
"""
SCALE = "self.scale = nn.Parameter(torch.ones(size))"
BUFFER = 'self.register_buffer("offset", torch.zeros(size), persistent=False)'
Y = "y = x[1:] * self.scale + 0.5"
EXPECTED = [  # (id, text in CELL, what replaces it in the mutant)
    ("delete@5:8", SCALE, "pass"),
    ("swap@5:8", f"{SCALE}\n        {BUFFER}", f"{BUFFER}\n        {SCALE}"),
    ("no_grad@11:8", Y, f"with torch.no_grad():\n            {Y}"),
    ("return@11:8:None", Y, f"return None\n        {Y}"),
    ("return@11:8:x", Y, f"return x\n        {Y}"),
    ("kwarg@6:58:persistent", ", persistent=False", ""),
    ("kwarg@13:31:dtype", ", dtype=torch.float64", ""),
    ("detach@11:12", Y, "y = (x[1:] * self.scale + 0.5).detach()"),
    ("cpu@14:15", "return y[:n]", "return y[:n].cpu()"),
    ("parameter@5:21", "nn.Parameter(torch.ones(size))", "torch.ones(size)"),
    ("buffer@6:8", BUFFER, 'setattr(self, "offset", torch.zeros(size))'),
    ("constant@11:14:2", "x[1:]", "x[2:]"),
    ("constant@11:14:0", "x[1:]", "x[0:]"),
    ("constant@12:15:-1", "n > 0", "n > -1"),
    ("constant@11:33:1.0", "+ 0.5", "+ 1.0"),
    ("constant@6:69:True", "persistent=False", "persistent=True"),
    ("constant@6:29:''", '"offset"', '""'),
    ("index@11:12:drop-lower", "x[1:]", "x[:]"),
    ("index@14:15:drop-upper", "y[:n]", "y[:]"),
    ("index@14:15:upper-1", "y[:n]", "y[:n - 1]"),
    ("compare@12:11:>to>=", "n > 0", "n >= 0"),
    ("compare@12:11:>to<=", "n > 0", "n <= 0"),
    ("boolop@12:11:or", "n > 0 and not", "n > 0 or not"),
    ("not@12:21", "and not self.training", "and self.training"),
    ("binop@11:12:+to-", "+ 0.5", "- 0.5"),
    ("binop@11:12:*to/", "x[1:] * self", "x[1:] / self"),
]


@pytest.mark.parametrize(("mutant_id", "old", "new"), EXPECTED, ids=[e[0] for e in EXPECTED])
def test_each_operator_makes_the_mutant_it_should(mutant_id, old, new):
    made = {m.id: m.source for m in make_mutants(CELL)}
    assert mutant_id in made, f"no mutant {mutant_id}: the operator missed its site (made {sorted(made)})."
    assert CELL.count(old) == 1, f"the test's own fragment {old!r} should occur once in the cell"
    expected = ast.unparse(ast.parse(CELL.replace(old, new)))
    assert made[mutant_id] == expected, f"{mutant_id} changed something other than {old!r} into {new!r}."


LAYER_CELL = """\
def init(m):
    ### BEGIN SOLUTION
    if isinstance(m, nn.Linear):
        nn.init.zeros_(m.bias)
    ### END SOLUTION
"""


@pytest.mark.parametrize(
    ("mutant_id", "old", "new"),
    [("part@4:23:weight", "m.bias", "m.weight"), ("module_type@3:7", "nn.Linear", "nn.Module")],
)
def test_the_layer_operators_pick_the_wrong_part_and_every_module(mutant_id, old, new):
    made = {m.id: m.source for m in make_mutants(LAYER_CELL)}
    assert made.get(mutant_id) == ast.unparse(ast.parse(LAYER_CELL.replace(old, new))), sorted(made)


CONTEXT_CELL = """\
def build(net, x, flags):
    ### BEGIN SOLUTION
    with torch.no_grad():
        out = net.body(x)
    w = torch.randn(3, 3)
    net.scale.requires_grad_(False)
    net.ready = True
    noise = torch.rand_like(out)
    return out + noise @ w
    ### END SOLUTION
"""
CONTEXT_EXPECTED = [  # (id, text in CONTEXT_CELL, what replaces it): the operators made from readers' loopholes
    ("unwith@3:4", "with torch.no_grad():\n        out = net.body(x)", "out = net.body(x)"),
    ("seed@3:4", "    ### BEGIN SOLUTION\n", "    ### BEGIN SOLUTION\n    torch.manual_seed(0)\n"),
    ("toggle@6:4", "requires_grad_(False)", "requires_grad_(not net.scale.requires_grad)"),
    ("toggle@7:4", "net.ready = True", "net.ready = not net.ready"),
    ("cpu_constant@8:12", "torch.rand_like(out)", "torch.rand(out.shape)"),
    ("zeros@5:8", "torch.randn(3, 3)", "torch.zeros(3, 3)"),
]


@pytest.mark.parametrize(("mutant_id", "old", "new"), CONTEXT_EXPECTED, ids=[e[0] for e in CONTEXT_EXPECTED])
def test_each_context_operator_makes_the_mutant_it_should(mutant_id, old, new):
    made = {m.id: m.source for m in make_mutants(CONTEXT_CELL)}
    assert mutant_id in made, f"no mutant {mutant_id}: the operator missed its site (made {sorted(made)})."
    assert CONTEXT_CELL.count(old) == 1, f"the test's own fragment {old!r} should occur once in the cell"
    assert made[mutant_id] == ast.unparse(ast.parse(CONTEXT_CELL.replace(old, new))), made[mutant_id]


MODULE_CELL = """\
class Block(nn.Module):
    def forward(self, x):
        ### BEGIN SOLUTION
        return self.inner(self.layers[0](x))
        ### END SOLUTION
"""


def test_a_module_call_becomes_a_call_of_its_forward_and_a_drawn_decorator_is_dropped():
    made = {m.id: m.source for m in make_mutants(MODULE_CELL)}
    for mutant_id, old, new in [
        ("forward@4:15", "self.inner(", "self.inner.forward("),
        ("forward@4:26", "self.layers[0](x)", "self.layers[0].forward(x)"),
    ]:
        assert made.get(mutant_id) == ast.unparse(ast.parse(MODULE_CELL.replace(old, new))), sorted(made)
    decorated = "@torch.no_grad()\ndef f(t):\n    ### BEGIN SOLUTION\n    return t.mul_(2)\n    ### END SOLUTION\n"
    made = {m.id: m.source for m in make_mutants(decorated)}
    assert made.get("unwith@1:1:decorator") == ast.unparse(ast.parse(decorated.replace("@torch.no_grad()\n", ""))), (
        sorted(made)
    )


def test_a_function_that_keeps_its_results_in_a_module_dict_answers_a_second_call_from_it():
    source = "def f(xs):\n    ### BEGIN SOLUTION\n    xs = list(xs)\n    return len(xs)\n    ### END SOLUTION\n"
    (memo,) = [m for m in make_mutants(source) if m.id.startswith("memo@")]
    space: dict = {}
    exec(memo.source, space)
    assert space["f"]([1, 2]) == 2 and space["f"]([1, 2]) == 2 and space["f"]((1, 2, 3)) == 3
    space["_mutant_memo"][repr(([4],))] = 99  # keyed by the arguments as given, before the body rebinds them
    assert space["f"]([4]) == 99


def test_only_the_code_between_the_markers_is_mutated_and_every_mutant_is_new_and_compiles():
    made = make_mutants(CELL)
    student_lines = {5, 6} | set(range(11, 15))
    outside = [m.id for m in made if int(m.id.split("@")[1].split(":")[0]) not in student_lines]
    assert not outside, f"mutants outside the solution markers (the release's def lines and defaults): {outside}"
    texts = [m.source for m in made]
    assert len(set(texts)) == len(texts), "two mutants have the same text: duplicates should be dropped"
    assert ast.unparse(ast.parse(CELL)) not in texts, "a mutant equal to the reference was kept"
    for m in made:
        compile(m.source, m.id, "exec")


# -- end to end, on a tiny lesson in memory (answer cell, then its test cell), in forked children.


def lesson(test: str, body: str = "return x * 2") -> dict[str, list[dict]]:
    answer = f"def double(x):\n    ### BEGIN SOLUTION\n    {body}\n    ### END SOLUTION\n"
    return {
        "tiny": [
            {"id": "double", "source": answer, "answer": True, "tests": False},
            {"id": "test_double", "source": test, "answer": False, "tests": True},
        ]
    }


WEAK = "assert double(2) == 4, 'double(2) should be 4'\n"
STRONG = "assert double(3) == 6, 'double(3) should be 6'\n"
PLUS = "binop@3:11:*to+"  # x + 2: equal to x * 2 at x = 2 only


# double is a pure function of x: a result kept under x's repr is the result it would compute again.
PURE = {("tiny", "double", "memo@3:4"): ("a pure function: a result kept by its argument's repr is the same", 9)}


def test_a_weak_test_lets_a_mutant_survive_and_the_tool_reports_it():
    (item,), errors = mutants.mutate(lesson(WEAK), equivalents=PURE, workers=2, limit=5)
    assert not errors, errors
    assert [m.id for m in item.survivors] == [PLUS], f"only x + 2 should pass `double(2) == 4`, got {item.killed}"
    assert item.line() == f"tiny double: killed {len(item.mutants) - 2} of {len(item.mutants)}, 1 equivalent"
    assert mutants.summary([item]).endswith(", 1 equivalent, 1 survived")
    diff = "\n".join(mutants.survivor_diffs(item))
    assert "-    return x * 2" in diff and "+    return x + 2" in diff, diff
    listed = {**PURE, ("tiny", "double", PLUS): ("the test cannot tell (it can)", 1)}
    (item,), errors = mutants.mutate(lesson(WEAK), equivalents=listed, workers=2, limit=5)
    assert not errors and not item.survivors and item.equivalent[PLUS] == "the test cannot tell (it can)"


def test_a_strong_test_kills_it_and_its_equivalents_entry_turns_stale():
    listed = {**PURE, ("tiny", "double", PLUS): ("no reason", 7), ("tiny", "double", "delete@9:9"): ("gone", 8)}
    (item,), errors = mutants.mutate(lesson(STRONG), equivalents=listed, workers=2, limit=5)
    assert not item.survivors and len(item.killed) == len(item.mutants) - 1 >= 5, item.killed
    assert any(":7: stale entry" in e and "is killed" in e for e in errors), errors
    assert any(":8: stale entry" in e and "names no mutant" in e for e in errors), errors


def test_a_mutant_that_spins_forever_is_killed_and_sleeps_are_simulated():
    spin = "while x > 1:\n        x = x / 2\n    return x"  # x * 2 in the loop never ends
    slept = (
        "import time\n_t = time.perf_counter()\ntime.sleep(1000)\n"
        "assert time.perf_counter() - _t >= 1000 and halve(8) == 1, 'sleeps should be simulated'\n"
    )
    cells_ = lesson(slept, spin)["tiny"]
    cells_[0]["source"] = cells_[0]["source"].replace("double", "halve")
    (item,), errors = mutants.mutate({"tiny": cells_}, limit=0.5)
    assert not errors, errors
    assert item.killed["binop@4:12:/to*"].startswith("time-out"), item.killed
