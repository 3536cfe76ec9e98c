"""Items judged outside the kernel: the kernel hands back data, the grader's process decides.

A test cell runs inside the student's kernel, where the student's objects can lie: an int
whose `==` is always true, an object whose `__torch_function__` answers `torch.equal` with
True. For a judged item the in-kernel test is not the last word. After it passes, the trusted
runner executes the judge's `collect` code (grader code, never in the notebook), which calls
the student's answer on fixed inputs and binds `judged` to the results; the runner turns them
into plain data (exact ints, floats, strings, lists, tuples, dicts; a real `torch.Tensor`
becomes `("tensor", dtype, nested lists)`; honest other forms of a value arrive as that value:
an OrderedDict as a dict, a numpy integer as an int; anything else becomes `("object", type
name)`), and the grader's process, which never imports student code, recomputes what the answer
should have given from the parameters it got back, in plain Python. The cell scores only if
both agree. Judges compare values, never types, and a rejection is a failed check with a
message that says what was expected, never a flag: an answer can pass the in-kernel test and
fail here honestly (the judge's inputs are other ones), so only the runner's evidence of
tampering flags a notebook.

A judge lives with its item, in the lesson: the item's tests cell has a line
`# judged outside the kernel: NAME` (the student sees it) and, inside its hidden tests, a block

    ### BEGIN JUDGE
    def judge():
        from grader.judges import Judge, ...
        return Judge("the answer's name", collect_code, check)
    ### END JUDGE

This module is the toolkit those blocks use and the code that finds them; it names no lesson.
The block reaches the grader as the rest of the hidden tests do, from the release's source
restored at autograde (never from a student's cell), and never runs in the student's kernel
(without_judge). In a kernel that runs the solution as a notebook it only defines `judge`.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import re
from collections.abc import Callable
from dataclasses import dataclass

MARKER = re.compile(r"^# judged outside the kernel: (\w+)\s*$", re.MULTILINE)
JUDGE_BEGIN, JUDGE_END = "### BEGIN JUDGE", "### END JUDGE"


class Rejected(Exception):
    """The data does not show the behaviour the item asks for; the message is the student's."""


class JudgeError(Exception):
    """A tests cell's judge is malformed: the course's bug, named at `make notebooks` (tools/rules.py)."""


@dataclass(frozen=True)
class Judge:
    answer: str  # the graded answer it judges (docs and messages)
    collect: str  # run by the runner in the kernel; binds `judged`
    check: Callable[[dict], None]  # raises Rejected
    name: str = ""  # the tests cell's marker names it


def _block(source: str) -> tuple[int, int] | None:
    """The line numbers (from 0) of a cell's judge block's first and last lines, if it has one."""
    lines = source.split("\n")
    begin = next((n for n, line in enumerate(lines) if line.strip() == JUDGE_BEGIN), None)
    if begin is None:
        return None
    end = next((n for n in range(begin, len(lines)) if lines[n].strip() == JUDGE_END), None)
    if end is None:
        raise JudgeError(f"{JUDGE_BEGIN} without {JUDGE_END}")
    return begin, end


def without_judge(source: str) -> str:
    """The cell's source with its judge block's lines left empty (the kernel never runs the judge;
    the other lines keep their numbers)."""
    found = _block(source)
    if found is None:
        return source
    lines = source.split("\n")
    return "\n".join("" if found[0] <= n <= found[1] else line for n, line in enumerate(lines))


@functools.lru_cache(maxsize=64)
def in_cell(source: str) -> Judge | None:
    """The judge of a tests cell (its source as the release has it), or None when it has none.
    Every submission of a class has the same tests cells: each judge is built once."""
    marker, found = MARKER.search(source), _block(source)
    if marker is None and found is None:
        return None
    if marker is None or found is None:
        raise JudgeError(
            f"a judged tests cell needs both the line `# judged outside the kernel: NAME` and {JUDGE_BEGIN}"
        )
    name = marker.group(1)
    code = "\n".join(source.split("\n")[found[0] + 1 : found[1]])
    namespace: dict = {"__name__": f"judge_{name}"}
    try:
        exec(compile(code, f"<judge {name}>", "exec"), namespace)
        judge = namespace["judge"]()
    except Exception as error:
        raise JudgeError(f"judge {name}: {type(error).__name__}: {error}") from error
    if not isinstance(judge, Judge):
        raise JudgeError(f"judge {name}: judge() should return a grader.judges.Judge, not {type(judge).__name__}")
    return dataclasses.replace(judge, name=name)


def verdict(judge: Judge, data: object) -> str | None:
    """None when the data passes the judge, else the message for the student."""
    if type(data) is not dict:
        return f"checked outside your kernel: the grader could not collect {judge.answer}'s results"
    try:
        judge.check(data)
    except Rejected as rejected:
        return f"checked outside your kernel: {rejected}"
    except (KeyError, IndexError, TypeError, ValueError, ArithmeticError):
        return f"checked outside your kernel: {judge.answer}'s results are not of the form the item asks for"
    return None


# -- the toolkit: plain data back into numbers ------------------------------------------------------
def tensor(value: object, what: str) -> list:
    """The nested lists of a real torch.Tensor the runner sent, or Rejected naming what came instead."""
    if type(value) is tuple and len(value) == 3 and value[0] == "tensor":
        if value[2] == "non-finite":
            raise Rejected(f"{what} holds NaN or infinite values")
        return value[2]
    if type(value) is tuple and len(value) == 2 and value[0] == "object":
        raise Rejected(f"{what} should be a torch.Tensor, but it is a {value[1]}")
    raise Rejected(f"{what} should be a torch.Tensor, but it is a {type(value).__name__}")


def shape(values: object) -> tuple[int, ...]:
    dims = []
    while type(values) is list:
        dims.append(len(values))
        values = values[0] if values else None
    return tuple(dims)


def exact_int(value: object, what: str) -> int:
    """An integer the answer gave: a Python or numpy integer (the runner sends both as int) or a
    0-d integer tensor, as `torch.tensor(sizes).sum()` gives."""
    if type(value) is tuple and len(value) == 3 and value[0] == "tensor" and type(value[2]) is int:
        return value[2]
    if type(value) is not int:
        if type(value) is tuple and len(value) == 3 and value[0] == "tensor":  # the transport form of a tensor
            raise Rejected(f"{what} should be an integer, but it is a {value[1]} tensor holding {value[2]!r}")
        name = value[1] if type(value) is tuple and len(value) == 2 and value[0] == "object" else type(value).__name__
        raise Rejected(f"{what} should be an integer, but it is a {name}")
    return value


def close(got: list, want: list, what: str, tolerance: float = 1e-4) -> None:
    if shape(got) != shape(want):
        raise Rejected(f"{what} has shape {shape(got)}, expected {shape(want)}")
    for a, b in zip(flat(got), flat(want)):
        if not (type(a) is float and math.isclose(a, b, rel_tol=tolerance, abs_tol=tolerance)):
            raise Rejected(f"{what} does not hold the values the layer's own parameters give")


def flat(values) -> list:
    return [x for row in values for x in flat(row)] if type(values) is list else [values]


def matmul(a: list, b: list) -> list:
    return [[sum(x * y for x, y in zip(row, column)) for column in zip(*b)] for row in a]


def transpose(a: list) -> list:
    return [list(column) for column in zip(*a)]


def linear(x: list, weight: list, bias: list) -> list:
    """nn.Linear's function: x @ weight.T + bias."""
    return [[v + c for v, c in zip(row, bias)] for row in matmul(x, transpose(weight))]


def parameter(params: list, want: tuple[int, ...], what: str) -> tuple[list, object]:
    """The one (value, grad) pair of the given shape; attribute names are the student's choice."""
    found = [(tensor(p, what), g) for p, g in params if shape(tensor(p, what)) == want]
    if len(found) != 1:
        raise Rejected(f"expected exactly one parameter of shape {want} for {what}, found {len(found)}")
    return found[0]


def layer_run(seed: int, make: str, batch: int, features: int) -> str:
    """Collect code for a layer with parameters: fixed random values for every parameter (so
    no initialization, zeros included, hides a wrong formula), one batch, the gradients of the
    summed output."""
    return f"""\
torch.manual_seed({seed})
_jlayer = {make}
with torch.no_grad():
    for _jp in _jlayer.parameters():
        _jp.copy_(torch.randn(_jp.shape))
_jx = torch.randn({batch}, {features})
_jy = _jlayer(_jx)
judged = {{"x": _jx, "y": _jy}}
try:  # an output that is not a tensor is the judge's to name, not an error here
    _jy.sum().backward()
except Exception:
    pass
judged["params"] = [[p, p.grad] for p in _jlayer.parameters()]
"""
