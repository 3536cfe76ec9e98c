"""Items judged outside the kernel: the kernel hands back data, the grader's process decides.

A test cell runs inside the student's kernel, where the student's objects can lie: an int
whose `==` is always true, an object whose `__torch_function__` answers `torch.equal` with
True. For the items below the in-kernel test is not the last word. After it passes, the
trusted runner executes the judge's `collect` code (grader code, never in the notebook),
which calls the student's answer on fixed inputs and binds `judged` to the results; the
runner turns them into plain data (exact ints, floats, strings, lists, tuples, dicts;
a real `torch.Tensor` becomes `("tensor", dtype, nested lists)`; honest other forms of a
value arrive as that value: an OrderedDict as a dict, a numpy integer as an int; anything
else becomes `("object", type name)`), and the grader's process, which never imports student
code, recomputes what the answer should have given from the parameters it got back, in plain
Python. The cell scores only if both agree. Judges compare values, never types, and a
rejection is a failed check with a message that says what was expected, never a flag: an
answer can pass the in-kernel test and fail here honestly (the judge's inputs are other
ones), so only the runner's evidence of tampering flags a notebook.

A test cell opts in with a line `# judged outside the kernel: NAME` (restored from the
release at autograde, so a student cannot remove it). docs/grade-integrity.md lists which
items are judged where.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass

MARKER = re.compile(r"^# judged outside the kernel: (\w+)\s*$", re.MULTILINE)


class Rejected(Exception):
    """The data does not show the behaviour the item asks for; the message is the student's."""


@dataclass(frozen=True)
class Judge:
    name: str
    answer: str  # the graded answer it judges (docs and messages)
    collect: str  # run by the runner in the kernel; binds `judged`
    check: Callable[[dict], None]  # raises Rejected


def named_in(source: str) -> Judge | None:
    """The judge a test cell names, if any (an unknown name is the course's bug: KeyError)."""
    found = MARKER.search(source)
    return JUDGES[found.group(1)] if found else None


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


# -- plain data back into numbers ------------------------------------------------------
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


# -- the judges ---------------------------------------------------------------------------
PARALLEL_BLOCK = """\
torch.manual_seed(21)
_j1, _j2, _j3, _j4 = nn.Linear(3, 2), nn.Linear(3, 4), nn.Linear(3, 3), nn.Linear(3, 3)
_jx = torch.randn(5, 3)
judged = {
    "x": _jx,
    "nets": [[n.weight, n.bias] for n in (_j1, _j2, _j3, _j4)],
    "last": ParallelBlock(_j1, _j2)(_jx),
    "first": ParallelBlock(_j3, _j4, dim=0)(_jx),
    "parameters": len(list(ParallelBlock(_j1, _j2).parameters())),
}
_j5, _j6 = nn.Linear(3, 2), nn.Linear(3, 4)
ParallelBlock(_j5, _j6)(_jx).sum().backward()
judged["grads"] = [_j5.weight.grad, _j6.weight.grad]
"""


def check_parallel_block(data: dict) -> None:
    x = tensor(data["x"], "the input")
    outs = [linear(x, tensor(w, "a weight"), tensor(b, "a bias")) for w, b in data["nets"]]
    close(
        tensor(data["last"], "ParallelBlock(net1, net2)(X)"),
        [a + b for a, b in zip(outs[0], outs[1])],
        "ParallelBlock(net1, net2)(X), net1(X) and net2(X) joined on the last dim,",
    )
    close(
        tensor(data["first"], "ParallelBlock(net1, net2, dim=0)(X)"),
        outs[2] + outs[3],
        "ParallelBlock(net1, net2, dim=0)(X), the two outputs stacked along dim 0,",
    )
    if exact_int(data["parameters"], "len(list(block.parameters()))") != 4:
        raise Rejected("the block should own both networks' 4 parameters")
    # d(sum of the output)/d(weight) of a Linear layer: each row is the sum of the input's rows.
    column_sums = [sum(column) for column in transpose(x)]
    for name, grad, rows in zip(("net1", "net2"), data["grads"], (2, 4)):
        what = f"the gradient of {name}'s weight after ParallelBlock(net1, net2)(X).sum().backward()"
        if grad is None:
            raise Rejected(f"no gradient reaches {name}: do not detach a branch or run it under torch.no_grad()")
        close(tensor(grad, what), [column_sums] * rows, what)


COUNT_PARAMETERS = """\
_jshared = nn.Linear(5, 5)
_jtied = nn.Sequential(nn.Linear(3, 5), _jshared, nn.ReLU(), _jshared)
_jtied[0].weight.requires_grad_(False)
_ja, _jb = nn.Linear(4, 4), nn.Linear(4, 4)
_jb.weight = _ja.weight
_jown = nn.Module()
_jown.scale = nn.Parameter(torch.ones(7))
_jown.inner = nn.Linear(2, 3).requires_grad_(False)
judged = {
    "weight_shared": count_parameters(nn.Sequential(_ja, _jb)),
    "own": count_parameters(_jown),
    "own_all": count_parameters(_jown, trainable_only=False),
    "tied": count_parameters(_jtied),
    "tied_all": count_parameters(_jtied, trainable_only=False),
    "batch_norm": count_parameters(nn.BatchNorm1d(6)),
    "none": count_parameters(nn.ReLU()),
}
"""


def check_count_parameters(data: dict) -> None:
    def linear_size(i, o):
        return i * o + o

    everything = linear_size(3, 5) + linear_size(5, 5)  # the shared layer once
    want = {
        "tied": everything - 3 * 5,
        "tied_all": everything,
        "batch_norm": 2 * 6,
        "none": 0,
        "weight_shared": 4 * 4 + 4 + 4,
        "own": 7,
        "own_all": 7 + linear_size(2, 3),
    }
    for key, expected in want.items():
        if exact_int(data[key], "count_parameters(...)") != expected:
            raise Rejected(f"count_parameters gave {data[key]} where {expected} was expected")


PARAM_SHAPES = """\
judged = {"shapes": param_shapes(nn.Sequential(
    nn.Linear(4, 8), nn.BatchNorm1d(8), nn.Sequential(nn.Linear(8, 3), nn.Tanh(), nn.Linear(3, 2))))}
"""


def check_param_shapes(data: dict) -> None:
    shapes = data["shapes"]
    if type(shapes) is not dict:  # any dict arrives as one (an OrderedDict too)
        raise Rejected("param_shapes should return a dict")
    want: dict[str, tuple[int, ...]] = {
        "1.weight": (8,),
        "1.bias": (8,),
    }  # a batch norm's; its running statistics are buffers
    for prefix, i, o in (("0", 4, 8), ("2.0", 8, 3), ("2.2", 3, 2)):
        want[f"{prefix}.weight"], want[f"{prefix}.bias"] = (o, i), (o,)
    if set(shapes) != set(want):
        raise Rejected(f"param_shapes gave the keys {sorted(map(str, shapes))}, expected {sorted(want)}")
    for key, value in shapes.items():
        if type(value) is not tuple or any(type(d) is not int for d in value) or value != want[key]:
            raise Rejected(f"param_shapes gave {value!r} for {key!r}, expected the tuple of ints {want[key]}")


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


MY_LINEAR = layer_run(22, "MyLinear(3, 2)", batch=6, features=3)


def my_linear_before_relu(data: dict) -> tuple[list, list, object, object]:
    """The input, X @ W + b from the returned parameters, and the parameters' gradients."""
    x = tensor(data["x"], "the input")
    weight, weight_grad = parameter(data["params"], (3, 2), "W")
    bias, bias_grad = parameter(data["params"], (2,), "b")
    return x, [[v + c for v, c in zip(row, bias)] for row in matmul(x, weight)], weight_grad, bias_grad


def check_my_linear(data: dict) -> None:
    _, before, _, _ = my_linear_before_relu(data)
    close(
        tensor(data["y"], "MyLinear(3, 2)(X)"),
        [[max(v, 0.0) for v in row] for row in before],
        "MyLinear(3, 2)(X), relu(X @ W + b),",
    )


def check_my_linear_gradients(data: dict) -> None:
    x, before, weight_grad, bias_grad = my_linear_before_relu(data)
    active = [[1.0 if v > 0 else 0.0 for v in row] for row in before]
    close(
        tensor(weight_grad, "W.grad"),
        matmul(transpose(x), active),
        "W's gradient of the summed output (X.T @ the active units)",
    )
    close(
        tensor(bias_grad, "b.grad"),
        [sum(column) for column in zip(*active)],
        "b's gradient of the summed output (the active units per output)",
    )


TENSOR_REDUCTION = layer_run(23, "TensorReduction(3, 2)", batch=4, features=3)


def check_tensor_reduction(data: dict) -> None:
    x = tensor(data["x"], "the input")
    weight, _ = parameter(data["params"], (3, 3, 2), "W")
    n = range(3)
    want = [[sum(weight[i][j][k] * row[i] * row[j] for i in n for j in n) for k in range(2)] for row in x]
    close(tensor(data["y"], "TensorReduction(3, 2)(x)"), want, "TensorReduction(3, 2)(x), sum_ij W[i,j,k] x[i] x[j],")


def check_tensor_reduction_gradients(data: dict) -> None:
    x = tensor(data["x"], "the input")
    _, grad = parameter(data["params"], (3, 3, 2), "W")
    n = range(3)
    want_grad = [[[sum(row[i] * row[j] for row in x)] * 2 for j in n] for i in n]
    close(tensor(grad, "W.grad"), want_grad, "W's gradient of the summed output")


CENTERED_LAYER = """\
torch.manual_seed(24)
_jx = torch.randn(3, 4) + 2
_jkept = _jx.clone()
judged = {"x": _jkept, "y": CenteredLayer()(_jx), "x_after": _jx,
          "parameters": len(list(CenteredLayer().parameters()))}
_jg = torch.randn(2, 3, requires_grad=True)
try:  # the gradient of one output: every entry moves the mean
    CenteredLayer()(_jg)[0, 0].backward()
except Exception:
    pass
judged["grad"] = _jg.grad
"""


def check_centered_layer(data: dict) -> None:
    x = tensor(data["x"], "the input")
    mean = sum(flat(x)) / len(flat(x))
    close(
        tensor(data["y"], "CenteredLayer()(X)"),
        [[v - mean for v in row] for row in x],
        "CenteredLayer()(X), X minus the mean of all its entries,",
    )
    close(tensor(data["x_after"], "the input after the call"), x, "the input after the call (it must not change)")
    want_grad = [[(1.0 if (row, column) == (0, 0) else 0.0) - 1 / 6 for column in range(3)] for row in range(2)]
    close(
        tensor(data["grad"], "the input's gradient"),
        want_grad,
        "the gradient of output [0, 0] with respect to the input (the mean must stay in the graph)",
    )
    if exact_int(data["parameters"], "len(list(CenteredLayer().parameters()))") != 0:
        raise Rejected("CenteredLayer should own no parameters")


JUDGES = {
    judge.name: judge
    for judge in (
        Judge("parallel_block", "ParallelBlock", PARALLEL_BLOCK, check_parallel_block),
        Judge("count_parameters", "count_parameters", COUNT_PARAMETERS, check_count_parameters),
        Judge("param_shapes", "param_shapes", PARAM_SHAPES, check_param_shapes),
        Judge("my_linear", "MyLinear", MY_LINEAR, check_my_linear),
        Judge("my_linear_gradients", "MyLinear", MY_LINEAR, check_my_linear_gradients),
        Judge("tensor_reduction", "TensorReduction", TENSOR_REDUCTION, check_tensor_reduction),
        Judge("tensor_reduction_gradients", "TensorReduction", TENSOR_REDUCTION, check_tensor_reduction_gradients),
        Judge("centered_layer", "CenteredLayer", CENTERED_LAYER, check_centered_layer),
    )
}
