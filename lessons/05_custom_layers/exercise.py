# ---
# jupyter:
#   jupytext:
#     notebook_metadata_filter: kernelspec
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Exercise 5: Custom layers
#
# Four layers to write and one question to answer. Write your code where it says
# `YOUR CODE HERE` (delete the `raise NotImplementedError()` line), then run the
# test cell under it: silence means the visible checks pass. When grading, more
# checks of the same behaviour run on other inputs, so make the code right, not
# just the examples.
#
# A test cell whose first line reads `# judged outside the kernel: ...` is
# checked twice when grading: once in the notebook, and once by the grader in
# its own process, from the plain numbers your code returns. Answer it with
# ordinary tensors and Python values; an object that only pretends to pass the
# asserts scores nothing there.
#
# Every layer must work on whatever device its input is on. The hidden tests
# run it on a simulated GPU (the set-up cell below), which refuses, as a real
# one does, an operation mixing its tensors with CPU tensors: make any tensor you
# create on the input's device, and create parameters without naming a device,
# so that a layer built under `with torch.device(...)` gets them there, as
# `nn.Linear` does. [clause device]
#
# Each requirement the tests check ends with its name in brackets, such as
# `[clause call_module]`: a test that fails is about one of them.
#
# Use only `torch`, the standard library, `numpy` and `matplotlib`.

# %%
import torch
from torch import nn
from torch.nn import functional as F

_ = torch.manual_seed(0)  # the same random examples on every run

# %% [markdown]
# ## Set-up for the tests (run it; no need to read it)
#
# The next cell defines `_simulated_gpu()`, which lets the tests run your layers
# on a GPU that the CPU plays, with a real GPU's rules, on any machine. In
# JupyterLab its code is folded: run it, and click its left edge to unfold it.

# %% jupyter={"source_hidden": true}
# include: simulated_gpu.py

# %% [markdown]
# ## 1. A layer without parameters
#
# Write `CenteredLayer`: its `forward(X)` returns `X - X.mean()`, [clause formula] the input
# minus the mean of **all** its entries. [clause all_entries] It owns no parameters, [clause no_parameters] and it must not
# change its input. [clause no_change]

# %% answer grade_id="CenteredLayer"
class CenteredLayer(nn.Module):
    def forward(self, X):
        ### BEGIN SOLUTION
        return X - X.mean()
        ### END SOLUTION

# %% tests grade_id="test_CenteredLayer" points=1
# judged outside the kernel: centered_layer
_X = torch.tensor([[1.0, 2.0], [3.0, 10.0]])
_kept = _X.clone()
_out = CenteredLayer()(_X)
assert torch.allclose(_out, torch.tensor([[-3.0, -2.0], [-1.0, 6.0]])), \
    "Expected X minus the mean of all entries (4.0): are you taking the mean along one dimension only?"
assert torch.equal(_X, _kept), "The input was changed: compute X - X.mean() instead of subtracting in place."
assert len(list(CenteredLayer().parameters())) == 0, "CenteredLayer should own no parameters."
# By hand: output 0 is x0 - (x0 + x1 + x2) / 3, so its gradient is [2/3, -1/3, -1/3].
_X = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
CenteredLayer()(_X)[0].backward()
assert _X.grad is not None and torch.allclose(_X.grad, torch.tensor([2 / 3, -1 / 3, -1 / 3])), \
    "The gradient of output 0 should be [2/3, -1/3, -1/3], since every entry moves the mean: keep the mean in the graph (no .detach(), .item(), .data or torch.no_grad())."
### BEGIN HIDDEN TESTS
torch.manual_seed(11)
_X = torch.randn(3, 4, 5) * 3 + 2
_centred = CenteredLayer()(_X)
assert _centred.shape == _X.shape and torch.allclose(_centred, _X - _X.mean(), atol=1e-6), \
    "On a 3-D input the output should be X minus the mean of all entries, with the same shape."
_X = torch.randn(6, requires_grad=True)
_G = torch.randn(6)
(CenteredLayer()(_X) * _G).sum().backward()
assert _X.grad is not None and torch.allclose(_X.grad, _G - _G.mean(), atol=1e-6), \
    "The gradient is wrong: the mean must stay part of the computation (no .detach(), .data or torch.no_grad())."
_net = nn.Sequential(nn.Linear(3, 7), CenteredLayer())
assert abs(_net(torch.randn(4, 3)).mean().item()) < 1e-5, "Inside nn.Sequential the output should have mean 0."
# On a GPU (simulated by the set-up cell, with a real GPU's rules) the output stays there, with the same values.
_X = torch.randn(2, 3)
try:
    with _simulated_gpu() as _gpu:
        _out = CenteredLayer()(_X.to(_gpu))
except Exception as _error:
    raise AssertionError("CenteredLayer failed on an input on a GPU (simulated): compute with torch on the "
                         f"input's device, without .item(), numpy or .cpu() ({_error}).") from _error
assert isinstance(_out, torch.Tensor) and _out.device == _gpu and torch.allclose(_out.as_subclass(torch.Tensor), _X - _X.mean()), \
    f"For an input on a GPU the output should stay on that device with the CPU's values, but " f"{('its values differ' if isinstance(_out, torch.Tensor) and _out.device == _gpu else 'it is on ' + str(getattr(_out, 'device', type(_out).__name__)))}: " \
    "make every tensor the layer computes with on the input's device, and move no result to the CPU."
### BEGIN JUDGE
def judge():
    """Run by the grader in its own process, never in the kernel (grader/judges.py)."""
    from grader.judges import Judge, Rejected, close, exact_int, flat, tensor

    collect = """\
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

    def check(data):
        x = tensor(data["x"], "the input")
        mean = sum(flat(x)) / len(flat(x))
        close(tensor(data["y"], "CenteredLayer()(X)"), [[v - mean for v in row] for row in x],
              "CenteredLayer()(X), X minus the mean of all its entries,")
        close(tensor(data["x_after"], "the input after the call"), x, "the input after the call (it must not change)")
        want_grad = [[(1.0 if (row, column) == (0, 0) else 0.0) - 1 / 6 for column in range(3)] for row in range(2)]
        close(tensor(data["grad"], "the input's gradient"), want_grad,
              "the gradient of output [0, 0] with respect to the input (the mean must stay in the graph)")
        if exact_int(data["parameters"], "len(list(CenteredLayer().parameters()))") != 0:
            raise Rejected("CenteredLayer should own no parameters")

    return Judge("CenteredLayer", collect, check)
### END JUDGE
### END HIDDEN TESTS

# %% [markdown]
# ## 2. A layer with parameters
#
# Write `MyLinear(in_units, units)`: a fully connected layer with a ReLU,
# `forward(X) = relu(X @ W + b)`, where `W` has shape `(in_units, units)` and
# `b` has shape `(units,)`. [clause formula] Both are **parameters** [clause parameters] (any attribute names will
# do), and gradients must reach both of them. [clause gradients]
#
# The layer must be able to learn as it is constructed, before anyone sets its
# weights: its initial values are finite and random, [clause init] and the initial `W` keeps
# the output's scale near the input's. [clause init_scale] For inputs of variance 1 the outputs
# vary about as much as those of `nn.Linear` followed by a ReLU, at any
# `in_units`. A plain `torch.randn(in_units, units)` does not (the lecture shows
# why): divide it by `sqrt(in_units)`, or use an initializer of `nn.init`. The
# bias may start at zero. Draw from torch's generator as it stands (set no seed
# inside). [clause init_no_seed]

# %% answer grade_id="MyLinear"
class MyLinear(nn.Module):
    def __init__(self, in_units, units):
        super().__init__()
        ### BEGIN SOLUTION
        self.weight = nn.Parameter(torch.randn(in_units, units) / in_units**0.5)
        self.bias = nn.Parameter(torch.zeros(units))
        ### END SOLUTION

    def forward(self, X):
        ### BEGIN SOLUTION
        return F.relu(X @ self.weight + self.bias)
        ### END SOLUTION

# %% tests grade_id="test_MyLinear" points=2
# judged outside the kernel: my_linear
def _find_param(module, shape, what):
    """The one parameter of the given shape; attribute names do not matter."""
    found = [p for p in module.parameters() if tuple(p.shape) == tuple(shape)]
    assert len(found) == 1, \
        f"Expected one parameter of shape {tuple(shape)} for {what}: is it an nn.Parameter with this orientation?"
    return found[0]

def _my_linear_with(W_value, b_value):
    """A MyLinear whose W and b hold the given values."""
    layer = MyLinear(*W_value.shape)
    W = _find_param(layer, W_value.shape, "W (in_units, units)")
    b = _find_param(layer, b_value.shape, "b (units,)")
    with torch.no_grad():
        W.copy_(W_value)
        b.copy_(b_value)
    return layer, W, b

# A case worked out by hand: X = [[1, 2]], W = [[1, -1, 0], [2, 0, 1]],
# b = [0.5, -3, -5]. X @ W = [5, -1, 2]; + b = [5.5, -4, -3]; ReLU: [5.5, 0, 0].
_layer, _W, _b = _my_linear_with(torch.tensor([[1.0, -1.0, 0.0], [2.0, 0.0, 1.0]]), torch.tensor([0.5, -3.0, -5.0]))
_out = _layer(torch.tensor([[1.0, 2.0]]))
assert _out.shape == (1, 3), f"Expected output shape (1, 3), got {tuple(_out.shape)}."
assert torch.allclose(_out, torch.tensor([[5.5, 0.0, 0.0]])), \
    f"For the worked example the output should be [[5.5, 0, 0]], got {_out.tolist()}: compute relu(X @ W + b)."
assert sum(p.numel() for p in MyLinear(3, 2).parameters()) == 3 * 2 + 2, \
    "The parameters of MyLinear should be exactly W and b, both nn.Parameter attributes."
### BEGIN HIDDEN TESTS
def _check_my_linear(in_units, units, batch, seed):
    torch.manual_seed(seed)
    layer, W, b = _my_linear_with(torch.randn(in_units, units), torch.randn(units))
    X = torch.randn(batch, in_units)
    out = layer(X)
    assert out.shape == (batch, units), f"Expected output shape {(batch, units)}, got {tuple(out.shape)}."
    assert torch.allclose(out, torch.relu(X @ W.detach() + b.detach()), atol=1e-5), \
        "The output differs from relu(X @ W + b): is the ReLU missing?"

_check_my_linear(5, 3, batch=4, seed=20)
_check_my_linear(4, 4, batch=6, seed=21)
_check_my_linear(1, 7, batch=1, seed=22)
_check_my_linear(9, 1, batch=3, seed=23)
_layer = MyLinear(3, 2).double()
assert _layer(torch.randn(5, 3, dtype=torch.float64)).dtype == torch.float64, \
    ".double() did not reach W and b: are they registered as nn.Parameter attributes?"
_net = nn.Sequential(MyLinear(6, 4), MyLinear(4, 2))
assert _net(torch.rand(3, 6)).shape == (3, 2), "Two MyLinear layers in nn.Sequential should chain (6 -> 4 -> 2)."
assert sum(p.numel() for p in _net.parameters()) == 6 * 4 + 4 + 4 * 2 + 2, \
    "The parameters of MyLinear should be exactly W and b."
# On a GPU (simulated by the set-up cell, with a real GPU's rules): a layer built under a default device
# keeps its parameters there, as nn.Linear does, and its output stays on the input's device.
try:
    with _simulated_gpu() as _gpu:
        with torch.device(_gpu):
            _layer = MyLinear(5, 3)
        _X = torch.randn(4, 5, device=_gpu)
        _out = _layer(_X)
        _want = torch.relu(_X @ [p for p in _layer.parameters() if p.dim() == 2][0] + [p for p in _layer.parameters() if p.dim() == 1][0])
except Exception as _error:
    raise AssertionError("MyLinear failed when built and run on a GPU (simulated): create W and b without "
                         f"naming a device, and make any tensor you use on the input's device, not the CPU ({_error}).") from _error
assert all(p.device == _gpu for p in _layer.parameters()) and len(list(_layer.parameters())) == 2, \
    "Built under `with torch.device(gpu)`, MyLinear's W and b should be on that GPU (as nn.Linear's are): do not move them with .cpu()."
assert isinstance(_out, torch.Tensor) and _out.device == _gpu and _out.shape == (4, 3) and torch.allclose(_out, _want), \
    f"For an input on a GPU the output should stay on that device with the CPU's values, but " f"{('its values differ' if isinstance(_out, torch.Tensor) and _out.device == _gpu else 'it is on ' + str(getattr(_out, 'device', type(_out).__name__)))}: " \
    "make every tensor the layer computes with on the input's device, and move no result to the CPU."
### BEGIN JUDGE
def judge():
    """Run by the grader in its own process, never in the kernel (grader/judges.py)."""
    from grader.judges import Judge, close, layer_run, matmul, parameter, tensor

    def check(data):
        x = tensor(data["x"], "the input")
        weight, _ = parameter(data["params"], (3, 2), "W")
        bias, _ = parameter(data["params"], (2,), "b")
        before = [[v + c for v, c in zip(row, bias)] for row in matmul(x, weight)]
        close(tensor(data["y"], "MyLinear(3, 2)(X)"), [[max(v, 0.0) for v in row] for row in before],
              "MyLinear(3, 2)(X), relu(X @ W + b),")

    return Judge("MyLinear", layer_run(22, "MyLinear(3, 2)", batch=6, features=3), check)
### END JUDGE
### END HIDDEN TESTS

# %% tests grade_id="test_MyLinear_gradients" points=1
# judged outside the kernel: my_linear_gradients
# The worked example again: the gradient of the sum of the outputs reaches only
# the unit that is active (output 0): d/dW = [[1, 0, 0], [2, 0, 0]] (column 0
# holds X) and d/db = [1, 0, 0].
_layer, _W, _b = _my_linear_with(torch.tensor([[1.0, -1.0, 0.0], [2.0, 0.0, 1.0]]), torch.tensor([0.5, -3.0, -5.0]))
_out = _layer(torch.tensor([[1.0, 2.0]]))
assert _out.requires_grad, \
    "The output is cut off from autograd (no grad_fn), so no gradient can reach W or b: does forward use .data or a detached copy of the parameters?"
_out.sum().backward()
assert _W.grad is not None and _b.grad is not None, \
    "No gradient reached W or b: does forward use .data or a detached copy of the parameters?"
assert torch.equal(_W.grad, torch.tensor([[1.0, 0.0, 0.0], [2.0, 0.0, 0.0]])) and torch.equal(_b.grad, torch.tensor([1.0, 0.0, 0.0])), \
    "The gradients of W or b are wrong: forward should compute relu(X @ W + b) with the parameters themselves."
### BEGIN HIDDEN TESTS
def _check_my_linear_gradients(in_units, units, batch, seed):
    torch.manual_seed(seed)
    layer, W, b = _my_linear_with(torch.randn(in_units, units), torch.randn(units))
    X, G = torch.randn(batch, in_units), torch.randn(batch, units)
    W_ref, b_ref = W.detach().clone().requires_grad_(), b.detach().clone().requires_grad_()
    out = layer(X)
    assert out.requires_grad, \
        "The output is cut off from autograd (no grad_fn): does forward use .data or a detached copy of the parameters?"
    (out * G).sum().backward()
    (torch.relu(X @ W_ref + b_ref) * G).sum().backward()
    assert W.grad is not None and b.grad is not None, \
        "No gradient reached W or b: does forward use .data or a detached copy of the parameters?"
    assert torch.allclose(W.grad, W_ref.grad, atol=1e-5) and torch.allclose(b.grad, b_ref.grad, atol=1e-5), \
        "The gradients of W or b are wrong: forward should compute relu(X @ W + b) with the parameters themselves."

_check_my_linear_gradients(5, 3, batch=4, seed=20)
_check_my_linear_gradients(4, 4, batch=6, seed=21)
_check_my_linear_gradients(1, 7, batch=1, seed=22)
### BEGIN JUDGE
def judge():
    """Run by the grader in its own process, never in the kernel (grader/judges.py)."""
    from grader.judges import Judge, close, layer_run, matmul, parameter, tensor, transpose

    def check(data):
        x = tensor(data["x"], "the input")
        weight, weight_grad = parameter(data["params"], (3, 2), "W")
        bias, bias_grad = parameter(data["params"], (2,), "b")
        before = [[v + c for v, c in zip(row, bias)] for row in matmul(x, weight)]
        active = [[1.0 if v > 0 else 0.0 for v in row] for row in before]
        close(tensor(weight_grad, "W.grad"), matmul(transpose(x), active),
              "W's gradient of the summed output (X.T @ the active units)")
        close(tensor(bias_grad, "b.grad"), [sum(column) for column in zip(*active)],
              "b's gradient of the summed output (the active units per output)")

    return Judge("MyLinear", layer_run(22, "MyLinear(3, 2)", batch=6, features=3), check)
### END JUDGE
### END HIDDEN TESTS

# %% tests grade_id="test_MyLinear_init" points=1
# The layer as constructed, no weight overwritten: its values are finite, its outputs for inputs of
# variance 1 vary across the batch about as much as torch's own layers' do (between a third of
# nn.Linear's and three times randn(n, n) / sqrt(n)'s), and a backward pass gives it non-zero gradients.
def _spread(out):
    """How much each output unit varies across the batch, averaged over the units."""
    return out.detach().std(dim=0).mean().item()

def _check_init(n, seed):
    torch.manual_seed(seed)
    for shape in ((n, n), (n,)):  # memory freed here, which torch.empty may hand back, holds NaN
        torch.full(shape, float("nan")).neg_()  # made and dropped at once: its memory is free again
    layer = MyLinear(n, n)
    assert all(bool(p.isfinite().all()) for p in layer.parameters()), \
        f"MyLinear({n}, {n}) as constructed holds NaN or infinite values: give W and b initial values " \
        "(torch.empty keeps whatever was in memory)."
    X = torch.randn(256, n)
    low = _spread(F.relu(nn.Linear(n, n)(X))) / 3
    high = _spread(F.relu(X @ (torch.randn(n, n) / n**0.5))) * 3
    out = layer(X)
    spread = _spread(out)
    assert spread >= low, \
        f"As constructed, MyLinear({n}, {n})'s outputs for inputs of variance 1 vary by {spread:.3g} across the batch, " \
        f"under {low:.3g} (a third of what nn.Linear's init gives): " + \
        ("they do not depend on the input; does W start at zero?" if spread == 0 else
         "the initial W is too small; scale it like torch.randn(in_units, units) / sqrt(in_units).")
    assert spread <= high, \
        f"As constructed, MyLinear({n}, {n})'s outputs for inputs of variance 1 vary by {spread:.3g} across the batch, " \
        f"over {high:.3g} (three times what torch.randn(n, n) / sqrt(n) gives): with an unscaled initial W the " \
        "output grows like sqrt(in_units); divide W by sqrt(in_units)."
    if out.requires_grad:  # (a gradient cut off in forward is test_MyLinear_gradients' to fail)
        out.sum().backward()
        still = [name for name, p in layer.named_parameters() if p.grad is not None and not p.grad.any()]
        assert not still, \
            f"As constructed, MyLinear({n}, {n}) gets all-zero gradients for {still}: it cannot learn from there."

_check_init(64, seed=40)
### BEGIN HIDDEN TESTS
_check_init(8, seed=41)
_check_init(512, seed=42)
_layers, _after = [], []
for _seed in (43, 44):
    torch.manual_seed(_seed)
    _layers.append(MyLinear(6, 6))
    _after.append(torch.rand(1))
_x = torch.randn(4, 6)
assert not torch.equal(_layers[0](_x), _layers[1](_x)) and not torch.equal(*_after), \
    "Two MyLinear layers built after different seeds start from the same values, or torch's random numbers restart " \
    "after building one: draw from torch's generator as it stands, set no seed in __init__."
### END HIDDEN TESTS

# %% [markdown]
# ## 3. A tensor reduction layer
#
# Write `TensorReduction(in_features, out_features)`. It owns one parameter `W`
# of shape `(in_features, in_features, out_features)`. [clause shape] For `x` of shape
# `(batch, in_features)` it returns `y` of shape `(batch, out_features)` with
#
# $$y_{bk} = \sum_{i,j} W_{ijk}\, x_{bi}\, x_{bj}.$$ [clause formula]
#
# Every output is a quadratic form of the input. `torch.einsum` writes this in
# one line, but loops are fine too, as long as gradients still reach `W`. [clause gradients] Any
# initialization of `W` will do, drawn from torch's generator as it stands (set
# no seed inside). [clause no_seed]

# %% answer grade_id="TensorReduction"
class TensorReduction(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        ### BEGIN SOLUTION
        self.weight = nn.Parameter(torch.randn(in_features, in_features, out_features) / in_features)
        ### END SOLUTION

    def forward(self, x):
        ### BEGIN SOLUTION
        return torch.einsum("ijk,bi,bj->bk", self.weight, x, x)
        ### END SOLUTION

# %% tests grade_id="test_TensorReduction" points=2
# judged outside the kernel: tensor_reduction
def _find_weight(layer, in_features, out_features):
    shape = (in_features, in_features, out_features)
    found = [p for p in layer.parameters() if tuple(p.shape) == shape]
    assert len(found) == 1, f"Expected one parameter W of shape {shape}: is it an nn.Parameter with that shape?"
    return found[0]

def _worked_reduction():
    """The worked example's layer: in_features = 2, out_features = 3, W set by hand."""
    layer = TensorReduction(2, 3)
    W = _find_weight(layer, 2, 3)
    with torch.no_grad():
        W.zero_()
        W[:, :, 0] = torch.eye(2)
        W[0, 1, 1] = 1.0
        W[1, 1, 2] = 1.0
    return layer, W

# A case worked out by hand, with in_features = 2, out_features = 3 and
# x = [[1, 2], [3, -1]]. Output 0 uses W[:, :, 0] = identity, so y[b, 0] is
# x[b, 0]**2 + x[b, 1]**2: 1 + 4 = 5 and 9 + 1 = 10. Output 1 uses W[:, :, 1]
# with a single 1 at (i, j) = (0, 1), so y[b, 1] = x[b, 0] * x[b, 1]: 2 and -3.
# Output 2 has a single 1 at (1, 1): y[b, 2] = x[b, 1]**2, 4 and 1.
_layer, _W = _worked_reduction()
_y = _layer(torch.tensor([[1.0, 2.0], [3.0, -1.0]]))
assert _y.shape == (2, 3), f"Expected output shape (batch, out_features) = (2, 3), got {tuple(_y.shape)}."
assert torch.allclose(_y, torch.tensor([[5.0, 2.0, 4.0], [10.0, -3.0, 1.0]])), \
    f"For the worked example y should be [[5, 2, 4], [10, -3, 1]], got {_y.tolist()}: sum W[i, j, k] * x[b, i] * x[b, j] over both i and j, for each example b."
### BEGIN HIDDEN TESTS
def _reduction_case(in_features, out_features, batch, seed):
    """A layer with random W, an input, and y computed by the definition, one entry at a time."""
    torch.manual_seed(seed)
    layer = TensorReduction(in_features, out_features)
    W = _find_weight(layer, in_features, out_features)
    with torch.no_grad():
        W.copy_(torch.randn(W.shape))
    x = torch.randn(batch, in_features)
    expected = torch.zeros(batch, out_features)
    for b in range(batch):
        for k in range(out_features):
            expected[b, k] = x[b] @ W[:, :, k].detach() @ x[b]
    return layer, W, x, expected

for _case in [(4, 2, 3, 30), (3, 5, 4, 31), (1, 1, 1, 32), (5, 3, 2, 33)]:
    _layer, _W, _x, _expected = _reduction_case(*_case)
    _y = _layer(_x)
    assert _y.shape == _expected.shape, f"Expected output shape {tuple(_expected.shape)}, got {tuple(_y.shape)}."
    assert torch.allclose(_y, _expected, rtol=1e-4, atol=1e-4), \
        "y[b, k] should be sum over i, j of W[i, j, k] * x[b, i] * x[b, j]: check which indices are summed."
assert sum(p.numel() for p in TensorReduction(3, 2).parameters()) == 3 * 3 * 2, "The only parameter should be W."
# On a GPU (simulated by the set-up cell, with a real GPU's rules): a layer built under a default device
# keeps W there, as nn.Linear does, and its output stays on the input's device.
try:
    with _simulated_gpu() as _gpu:
        with torch.device(_gpu):
            _layer = TensorReduction(4, 2)
        _x = torch.randn(3, 4, device=_gpu)
        _y = _layer(_x)
        _want = torch.einsum("ijk,bi,bj->bk", next(_layer.parameters()), _x, _x)
except Exception as _error:
    raise AssertionError("TensorReduction failed when built and run on a GPU (simulated): create W without "
                         "naming a device, and make any tensor you fill on x's device (x.new_zeros or "
                         f"device=x.device), without .item() or .cpu() ({_error}).") from _error
assert all(p.device == _gpu for p in _layer.parameters()) and len(list(_layer.parameters())) == 1, \
    "Built under `with torch.device(gpu)`, TensorReduction's W should be on that GPU: do not move it with .cpu()."
assert isinstance(_y, torch.Tensor) and _y.device == _gpu and _y.shape == (3, 2) and torch.allclose(_y, _want, atol=1e-5), \
    f"For an input on a GPU the output should stay on that device with the CPU's values, but " f"{('its values differ' if isinstance(_y, torch.Tensor) and _y.device == _gpu else 'it is on ' + str(getattr(_y, 'device', type(_y).__name__)))}: " \
    "make every tensor the layer computes with on the input's device, and move no result to the CPU."
### BEGIN JUDGE
def judge():
    """Run by the grader in its own process, never in the kernel (grader/judges.py)."""
    from grader.judges import Judge, Rejected, close, layer_run, parameter, tensor

    def check(data):
        x = tensor(data["x"], "the input")
        weight, _ = parameter(data["params"], (3, 3, 2), "W")
        n = range(3)
        want = [[sum(weight[i][j][k] * row[i] * row[j] for i in n for j in n) for k in range(2)] for row in x]
        close(tensor(data["y"], "TensorReduction(3, 2)(x)"), want,
              "TensorReduction(3, 2)(x), sum_ij W[i,j,k] x[i] x[j],")
        first, second = data["after_seeds"]
        if type(first) is not float or first == second:
            raise Rejected("building a TensorReduction restarts torch's random numbers: set no seed in __init__")

    # after two seeds, a layer built, then one draw: equal draws mean __init__ reseeded the generator
    after_seeds = """\
judged["after_seeds"] = []
for _jseed in (45, 46):
    torch.manual_seed(_jseed)
    TensorReduction(3, 2)
    judged["after_seeds"].append(torch.rand(1).item())
"""
    collect = layer_run(23, "TensorReduction(3, 2)", batch=4, features=3) + after_seeds
    return Judge("TensorReduction", collect, check)
### END JUDGE
_after = []
for _seed in (45, 46):
    torch.manual_seed(_seed)
    TensorReduction(3, 2)
    _after.append(torch.rand(1))
assert not torch.equal(*_after), \
    "After building a TensorReduction, torch's random numbers no longer depend on the seed set before: set no seed in __init__."
### END HIDDEN TESTS

# %% tests grade_id="test_TensorReduction_gradients" points=1
# judged outside the kernel: tensor_reduction_gradients
def _reduction_grad_hint(grad, x, G):
    """What a wrong gradient of W (for the output's gradient G) shows, in words."""
    pairs = torch.einsum("bi,bi,bk->ik", x, x, G)
    if torch.allclose(grad, pairs[:, None, :].expand_as(grad)) or torch.allclose(grad, pairs[None, :, :].expand_as(grad)):
        return ": dW[i, j, k] does not change with one of i, j; forward multiplies by one entry of x twice (an index " \
            "used twice, as in the einsum 'ijk,bi,bi->bk'), where the formula pairs x[b, i] with x[b, j] ('ijk,bi,bj->bk')."
    if torch.allclose(grad, torch.einsum("i,j,bk->ijk", x[0], x[0], G)):
        return ": every example used x[0]; each example b should use its own x[b]."
    return ": dW[i, j, k] should be the sum over the examples b of x[b, i] * x[b, j] * (the gradient of y[b, k])."

# The worked example again: the loss y[0, 0] + y[1, 1] has the gradient
# dW[i, j, 0] = x[0, i] * x[0, j] = [[1, 2], [2, 4]],
# dW[i, j, 1] = x[1, i] * x[1, j] = [[9, -3], [-3, 1]] and dW[:, :, 2] = 0.
_layer, _W = _worked_reduction()
_x = torch.tensor([[1.0, 2.0], [3.0, -1.0]])
_y = _layer(_x)
assert _y.requires_grad, \
    "The output is cut off from autograd (no grad_fn), so no gradient can reach W: use the parameter itself in forward, not .data, .item() or a copy."
(_y[0, 0] + _y[1, 1]).backward()
assert _W.grad is not None, "No gradient reached W: use the parameter itself in forward, not .data or a copy."
_G = torch.tensor([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])  # the gradient of the loss y[0, 0] + y[1, 1]
assert torch.equal(_W.grad, torch.stack([torch.tensor([[1.0, 2.0], [2.0, 4.0]]),
                                         torch.tensor([[9.0, -3.0], [-3.0, 1.0]]),
                                         torch.zeros(2, 2)], dim=-1)), \
    "The gradient of W is wrong" + _reduction_grad_hint(_W.grad, _x, _G)
### BEGIN HIDDEN TESTS
def _check_reduction_gradients(in_features, out_features, batch, seed):
    torch.manual_seed(seed)
    layer = TensorReduction(in_features, out_features)
    W = _find_weight(layer, in_features, out_features)
    with torch.no_grad():
        W.copy_(torch.randn(W.shape))
    x = torch.randn(batch, in_features)
    y = layer(x)
    assert y.requires_grad, "The output is cut off from autograd: use the parameter itself in forward, not .data, .item() or a copy."
    G = torch.randn(batch, out_features)
    (y * G).sum().backward()
    expected_grad = torch.einsum("bi,bj,bk->ijk", x, x, G)
    assert W.grad is not None, "No gradient reached W: use the parameter itself in forward, not .data or a copy."
    assert torch.allclose(W.grad, expected_grad, rtol=1e-4, atol=1e-4), \
        "The gradient of W is wrong" + _reduction_grad_hint(W.grad, x, G)

_check_reduction_gradients(4, 2, batch=3, seed=30)
_check_reduction_gradients(3, 5, batch=4, seed=31)
_check_reduction_gradients(1, 1, batch=1, seed=32)
_x = torch.randn(2, 3, requires_grad=True)
TensorReduction(3, 2)(_x).sum().backward()
assert _x.grad is not None, "Gradients should also flow back to the input x."
### BEGIN JUDGE
def judge():
    """Run by the grader in its own process, never in the kernel (grader/judges.py)."""
    from grader.judges import Judge, close, layer_run, parameter, tensor

    def check(data):
        x = tensor(data["x"], "the input")
        _, grad = parameter(data["params"], (3, 3, 2), "W")
        n = range(3)
        want_grad = [[[sum(row[i] * row[j] for row in x)] * 2 for j in n] for i in n]
        close(tensor(grad, "W.grad"), want_grad, "W's gradient of the summed output")

    return Judge("TensorReduction", layer_run(23, "TensorReduction(3, 2)", batch=4, features=3), check)
### END JUDGE
### END HIDDEN TESTS

# %% [markdown]
# ## 4. A Fourier layer
#
# Write `FourierHalf`, a layer without parameters. For an input whose last
# dimension has length `n`, it returns the first `(n + 1) // 2` coefficients of [clause count]
# the discrete Fourier transform `torch.fft.fft` [clause complex] along the last dimension. [clause last_dim] All
# other dimensions (batches) are kept as they are; `n` may be odd or even.
# Like any layer in a network, it must let gradients flow back to its input. [clause gradients]

# %% answer grade_id="FourierHalf"
class FourierHalf(nn.Module):
    def forward(self, X):
        ### BEGIN SOLUTION
        n = X.shape[-1]
        return torch.fft.fft(X, dim=-1)[..., : (n + 1) // 2]
        ### END SOLUTION

# %% tests grade_id="test_FourierHalf" points=2
def _check_fourier(X, expected):
    kept = X.clone()
    out = FourierHalf()(X)
    assert tuple(out.shape) == tuple(expected.shape), \
        f"For input shape {tuple(X.shape)} expected output shape {tuple(expected.shape)}, got {tuple(out.shape)}: keep (n + 1) // 2 coefficients of the last dimension."
    assert out.is_complex(), "The Fourier coefficients are complex: do not take .real or .abs()."
    assert torch.allclose(out, expected.to(out.dtype), atol=1e-4), \
        f"Wrong values for input shape {tuple(X.shape)}: transform along the last dimension (dim=-1)."
    assert torch.equal(X, kept), "The input was changed."

# Worked out by hand from c_k = sum_j x_j exp(-2 pi i j k / n):
# [1, 2, 3, 4] (n = 4, keep 2): c_0 = 10, c_1 = 1 - 2i - 3 + 4i = -2 + 2i.
# [1, 1, 1, 1]: c_0 = 4, c_1 = 1 - i - 1 + i = 0.
# [0, 1, 0] (n = 3, keep 2): c_0 = 1, c_1 = exp(-2 pi i / 3) = -1/2 - (sqrt(3)/2) i.
_check_fourier(torch.tensor([1.0, 2.0, 3.0, 4.0]), torch.tensor([10, -2 + 2j]))
_check_fourier(torch.tensor([0.0, 1.0, 0.0]), torch.tensor([1, -0.5 - 0.75 ** 0.5 * 1j]))
_check_fourier(torch.tensor([[1.0, 2.0, 3.0, 4.0], [1.0, 1.0, 1.0, 1.0]]),
               torch.tensor([[10, -2 + 2j], [4, 0j]]))
assert len(list(FourierHalf().parameters())) == 0, "FourierHalf should own no parameters."
# Gradients flow back through the transform. For [1, 2, 3, 4] the real loss
# Re c_0 + Im c_0 + Re c_1 + Im c_1 has d/dx_j = sum over k of cos(2 pi j k / n) - sin(2 pi j k / n):
# k = 0 adds 1 to every j, k = 1 adds [1, -1, -1, 1], so the gradient is [2, 0, 0, 2].
_X = torch.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
_out = FourierHalf()(_X)
assert _out.requires_grad, \
    "The output is cut off from autograd (no grad_fn), so no gradient reaches the layers before it: transform with torch.fft, not through numpy or a detached copy."
torch.view_as_real(_out).sum().backward()
assert _X.grad is not None and torch.allclose(_X.grad, torch.tensor([2.0, 0.0, 0.0, 2.0]), atol=1e-5), \
    f"The gradient of Re + Im of the kept coefficients should be [2, 0, 0, 2], got {_X.grad}: keep the transform in torch's graph."
### BEGIN HIDDEN TESTS
def _dft_half(X):
    """The first (n + 1) // 2 DFT coefficients from the definition, as a matrix product in double precision."""
    n = X.shape[-1]
    angle = -2 * torch.pi * torch.outer(torch.arange(n), torch.arange((n + 1) // 2)).double() / n
    return X.to(torch.complex128) @ torch.polar(torch.ones_like(angle), angle)


def _check_random_fourier(shape, seed, dtype=torch.float32):
    torch.manual_seed(seed)
    X = torch.randn(shape, dtype=dtype)
    _check_fourier(X, _dft_half(X))

_check_random_fourier((8,), seed=40)
_check_random_fourier((7,), seed=41)
_check_random_fourier((2, 8), seed=42)
_check_random_fourier((3, 9), seed=43)
_check_random_fourier((2, 3, 10), seed=44)
_check_random_fourier((5, 4, 1), seed=45)
_check_random_fourier((4, 2), seed=46)
_check_random_fourier((3,), seed=47)
_check_random_fourier((6, 6), seed=48, dtype=torch.float64)
_check_random_fourier((4, 5, 6), seed=49, dtype=torch.float64)


def _check_fourier_gradient(shape, seed):
    """The gradient of a random real loss of the output, against the definition's, through autograd."""
    torch.manual_seed(seed)
    X = torch.randn(shape, dtype=torch.float64, requires_grad=True)
    X_ref = X.detach().clone().requires_grad_()
    out = FourierHalf()(X)
    assert out.requires_grad, \
        "The output is cut off from autograd (no grad_fn): transform with torch.fft, not through numpy or a detached copy."
    G = torch.randn(*out.shape, 2, dtype=torch.float64)
    (torch.view_as_real(out) * G).sum().backward()
    (torch.view_as_real(_dft_half(X_ref)) * G).sum().backward()
    assert X.grad is not None and torch.allclose(X.grad, X_ref.grad, atol=1e-6), \
        f"For input shape {tuple(shape)} the gradient reaching the input is wrong: keep the transform in torch's graph."

_check_fourier_gradient((6,), seed=50)
_check_fourier_gradient((3, 7), seed=51)
_check_fourier_gradient((2, 2, 5), seed=52)
# On a GPU (simulated by the set-up cell, with a real GPU's rules) the output stays there, with the same values.
_X = torch.randn(2, 7)
try:
    with _simulated_gpu() as _gpu:
        _out = FourierHalf()(_X.to(_gpu))
except Exception as _error:
    raise AssertionError("FourierHalf failed on an input on a GPU (simulated): compute with torch on the "
                         f"input's device (device=X.device for any tensor you make), not numpy ({_error}).") from _error
assert isinstance(_out, torch.Tensor) and _out.device == _gpu and _out.shape == (2, 4) \
    and torch.allclose(_out.as_subclass(torch.Tensor), torch.fft.fft(_X)[..., :4]), \
    f"For an input on a GPU the output should stay on that device with the CPU's values, but " f"{('its values differ' if isinstance(_out, torch.Tensor) and _out.device == _gpu else 'it is on ' + str(getattr(_out, 'device', type(_out).__name__)))}: " \
    "make every tensor the layer computes with on the input's device, and move no result to the CPU."
### END HIDDEN TESTS

# %% [markdown]
# ## 5. In your own words
#
# `CenteredLayer` and `FourierHalf` own no parameters; `MyLinear` and
# `TensorReduction` do. When should a layer own parameters, and when should it
# not? Think of what is learned, what is fixed, and what should be saved with the
# model or moved with `.to()`.

# %% manual [markdown] grade_id="own_params_answer" points=2
# A layer owns parameters when part of its computation should be *learned*:
# the values are adjusted by the optimizer, so they must be `nn.Parameter`s
# registered on the layer, appear in `parameters()` and the `state_dict`, follow
# `.to()` and receive gradients (weights, biases, scales). A layer should not own
# parameters when it is a fixed function of its input (centering, a Fourier
# transform, an activation): making anything learnable there would add values
# the optimizer changes though they are not meant to change. Fixed tensors that
# the layer still needs and that should be saved and moved with it (running
# statistics, a constant mask) are buffers, not parameters; and tensors that are
# shared with another layer belong to one owner and are reused, not copied.

# %% [markdown]
# ## Summary
#
# - A layer is an `nn.Module`; it owns `nn.Parameter`s only for what it learns.
# - Use the parameters themselves in `forward`, so that gradients reach them.
# - `einsum` states index formulas like the tensor reduction directly.
# - Parameter-free layers (centering, Fourier) fit into `nn.Sequential` as well.
