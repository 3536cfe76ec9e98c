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
# # Exercise 2: Parameter management
#
# Five functions to write and two questions to answer (the second after a small
# experiment of your own). Write your code where it says `YOUR CODE HERE`
# (delete the `raise NotImplementedError()` line), then run the test cell under
# it: silence means the visible checks pass. When grading,
# more checks of the same behaviour run on other inputs, so make the code right,
# not just the examples.
#
# A test cell whose first line reads `# judged outside the kernel: ...` is
# checked twice when grading: once in the notebook, and once by the grader in
# its own process, from the plain numbers your code returns. Answer it with
# ordinary tensors and Python values; an object that only pretends to pass the
# asserts scores nothing there.
#
# Each requirement the tests check ends with its name in brackets, such as
# `[clause call_module]`: a test that fails is about one of them.
#
# Use only `torch`, the standard library, `numpy` and `matplotlib`.

# %%
from collections import OrderedDict

import torch
from torch import nn

_ = torch.manual_seed(0)

# %% [markdown]
# ## Set-up for the tests (run it; no need to read it)
#
# The next cell defines `_simulated_gpu()`, which lets the tests build your nets
# on a GPU that the CPU plays, with a real GPU's rules, on any machine. In
# JupyterLab its code is folded: run it, and click its left edge to unfold it.

# %% jupyter={"source_hidden": true}
# include: simulated_gpu.py

# %% [markdown]
# ## 1. Counting parameters
#
# Write `count_parameters(module, trainable_only=True)`: the number of scalar
# values in the parameters of `module` (a `Linear(4, 3)` has `4 * 3 + 3 = 15`), [clause numel]
# as an integer, also for a module without parameters (0). [clause integer]
#
# - A parameter used at several places (tied) is counted **once**. [clause tied_once]
# - With `trainable_only=True` (the default), parameters with
#   `requires_grad=False` are left out; with `False` every parameter counts. [clause trainable_only]
# - Buffers (such as a batch norm's running statistics) are not parameters. [clause no_buffers]

# %% answer grade_id="count_parameters"
def count_parameters(module, trainable_only=True):
    ### BEGIN SOLUTION
    return sum(p.numel() for p in module.parameters() if p.requires_grad or not trainable_only)
    ### END SOLUTION

# %% tests grade_id="test_count_parameters" points=2
# judged outside the kernel: count_parameters
assert count_parameters(nn.Linear(4, 3)) == 15, \
    "A Linear(4, 3) has 15 scalar parameters (12 weights, 3 biases): are you counting tensors instead of numel()?"
_shared = nn.Linear(5, 5)
_tied = nn.Sequential(nn.Linear(3, 5), _shared, nn.ReLU(), _shared)
assert count_parameters(_tied) == 50, \
    "The shared Linear(5, 5) was counted twice: use module.parameters(), which lists a tied parameter once."
_tied[0].weight.requires_grad_(False)
assert count_parameters(_tied) == 35, \
    "A frozen weight (requires_grad=False) should not count when trainable_only=True."
assert count_parameters(_tied, trainable_only=False) == 50, \
    "With trainable_only=False the frozen weight should count too."
_none = count_parameters(nn.ReLU())
assert _none == 0 and not isinstance(_none, float) \
    and not (isinstance(_none, torch.Tensor) and _none.is_floating_point()), \
    f"count_parameters(nn.ReLU()) should be the integer 0, got {_none!r} ({type(_none).__name__}): a sum over " \
    "no parameters must still be an integer (torch.tensor([]).sum() is the float 0.0; sum() of numel()s gives 0)."
### BEGIN HIDDEN TESTS
assert count_parameters(nn.BatchNorm1d(6)) == 12, \
    "BatchNorm1d(6) has 12 parameters; running statistics are buffers: are you counting the state_dict?"
assert count_parameters(nn.BatchNorm1d(6), trainable_only=False) == 12, \
    "With trainable_only=False, BatchNorm1d(6) still has 12 parameters: its running statistics are buffers, not parameters."
assert count_parameters(nn.ReLU()) == 0, "A module without parameters has 0 of them."
_a, _b = nn.Linear(4, 4), nn.Linear(4, 4)
_b.weight = _a.weight
assert count_parameters(nn.Sequential(_a, _b)) == 24, \
    "A weight shared between two different Linear layers should be counted once (16 + 4 + 4)."
_frozen = nn.Linear(10, 10).requires_grad_(False)
assert count_parameters(_frozen) == 0 and count_parameters(_frozen, False) == 110, \
    "A fully frozen layer has 0 trainable parameters by default and 110 in all."

class _Scaled(nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = nn.Parameter(torch.ones(7))
        self.inner = nn.Linear(2, 3)

_m = _Scaled()
_m.inner.bias.requires_grad_(False)
assert count_parameters(_m) == 13 and count_parameters(_m, trainable_only=False) == 16, \
    "A parameter held directly by a custom module counts as well, and the frozen bias only when trainable_only=False."
### BEGIN JUDGE
def judge():
    """Run by the grader in its own process, never in the kernel (grader/judges.py)."""
    from grader.judges import Judge, Rejected, exact_int

    collect = """\
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
    "batch_norm_all": count_parameters(nn.BatchNorm1d(6), trainable_only=False),
    "none": count_parameters(nn.ReLU()),
}
"""

    def check(data):
        def linear_size(i, o):
            return i * o + o

        everything = linear_size(3, 5) + linear_size(5, 5)  # the shared layer once
        want = {"tied": everything - 3 * 5, "tied_all": everything, "batch_norm": 2 * 6, "batch_norm_all": 2 * 6,
                "none": 0, "weight_shared": 4 * 4 + 4 + 4, "own": 7, "own_all": 7 + linear_size(2, 3)}
        inputs = {"tied": "a tied net with a frozen weight", "tied_all": "a tied net, trainable_only=False",
                  "batch_norm": "BatchNorm1d(6)", "batch_norm_all": "BatchNorm1d(6), trainable_only=False",
                  "none": "nn.ReLU()", "weight_shared": "two layers sharing a weight",
                  "own": "a module with its own parameter", "own_all": "a module with its own parameter, trainable_only=False"}
        for key, expected in want.items():
            got = exact_int(data[key], f"count_parameters of {inputs[key]}")
            if got != expected:
                raise Rejected(f"count_parameters of {inputs[key]} gave {got} where {expected} was expected")

    return Judge("count_parameters", collect, check)
### END JUDGE
### END HIDDEN TESTS

# %% [markdown]
# ## 2. A table of parameter shapes
#
# Write `param_shapes(module)`: a `dict` that maps each qualified name produced by
# `module.named_parameters()` (such as `'0.weight'`; [clause qualified_names] frozen parameters are
# parameters too) [clause frozen] to that parameter's shape as a tuple of ints (such as `(8, 4)`). [clause tuple_shapes]

# %% answer grade_id="param_shapes"
def param_shapes(module):
    ### BEGIN SOLUTION
    return {name: tuple(p.shape) for name, p in module.named_parameters()}
    ### END SOLUTION

# %% tests grade_id="test_param_shapes" points=1
# judged outside the kernel: param_shapes
_net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
_shapes = param_shapes(_net)
assert isinstance(_shapes, dict), f"param_shapes should return a dict, got {type(_shapes).__name__}."
assert set(_shapes) == {"0.weight", "0.bias", "2.weight", "2.bias"}, \
    f"The keys should be the qualified names from named_parameters(), got {sorted(_shapes)}."
assert all(isinstance(v, tuple) and all(type(d) is int for d in v) for v in _shapes.values()), \
    "Each shape should be a tuple of ints: convert with tuple(p.shape)."
assert _shapes == {"0.weight": (8, 4), "0.bias": (8,), "2.weight": (2, 8), "2.bias": (2,)}, \
    "Some shapes are wrong: a Linear(in, out) has weight (out, in) and bias (out,)."
### BEGIN HIDDEN TESTS
_net = nn.Sequential(OrderedDict([
    ("encoder", nn.Sequential(nn.Linear(3, 6), nn.BatchNorm1d(6))),
    ("head", nn.Linear(6, 1, bias=False)),
]))
assert param_shapes(_net) == {"encoder.0.weight": (6, 3), "encoder.0.bias": (6,), "encoder.1.weight": (6,),
                              "encoder.1.bias": (6,), "head.weight": (1, 6)}, \
    "Nested names should be qualified ('encoder.0.weight'), and buffers (running_mean) left out: use named_parameters()."
_shared = nn.Linear(2, 2)
assert set(param_shapes(nn.Sequential(_shared, nn.ReLU(), _shared))) == {"0.weight", "0.bias"}, \
    "A tied layer's parameters appear once in named_parameters(), under their first name."
assert param_shapes(nn.ReLU()) == {}, "A module without parameters gives an empty dict."
class _Sized(nn.Module):  # prints as "_Sized()" whatever its size
    def __init__(self, n):
        super().__init__()
        self.w = nn.Parameter(torch.zeros(n))

assert param_shapes(_Sized(2)) == {"w": (2,)} and param_shapes(_Sized(5)) == {"w": (5,)}, \
    "Two modules that print alike but hold parameters of other sizes should get their own shapes: read the module given."
_net = nn.Sequential(nn.Linear(2, 3), nn.Linear(3, 1))
_net[0].weight.requires_grad_(False)
assert set(param_shapes(_net)) == {"0.weight", "0.bias", "1.weight", "1.bias"}, \
    "A frozen parameter (requires_grad=False) is still a parameter: every name of named_parameters() belongs in the dict."

class _Scaled(nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = nn.Parameter(torch.ones(()))
        self.table = nn.Parameter(torch.zeros(2, 3, 4))

assert param_shapes(_Scaled()) == {"scale": (), "table": (2, 3, 4)}, \
    "A 0-dim parameter has shape () and a 3-dim one (2, 3, 4)."
### BEGIN JUDGE
def judge():
    """Run by the grader in its own process, never in the kernel (grader/judges.py)."""
    from grader.judges import Judge, Rejected

    collect = """\
_jnet = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.Sequential(nn.Linear(8, 3), nn.Tanh(), nn.Linear(3, 2)))
_jnet[2][0].requires_grad_(False)
judged = {"shapes": param_shapes(_jnet)}
"""

    def check(data):
        shapes = data["shapes"]
        if type(shapes) is not dict:  # any dict arrives as one (an OrderedDict too)
            raise Rejected("param_shapes should return a dict")
        # a batch norm's; its running statistics are buffers (the frozen 2.0 layer's parameters count too)
        want = {"1.weight": (8,), "1.bias": (8,)}
        for prefix, i, o in (("0", 4, 8), ("2.0", 8, 3), ("2.2", 3, 2)):
            want[f"{prefix}.weight"], want[f"{prefix}.bias"] = (o, i), (o,)
        if set(shapes) != set(want):
            raise Rejected(f"param_shapes gave the keys {sorted(map(str, shapes))}, expected {sorted(want)}")
        for key, value in shapes.items():
            if type(value) is not tuple or any(type(d) is not int for d in value) or value != want[key]:
                raise Rejected(f"param_shapes gave {value!r} for {key!r}, expected the tuple of ints {want[key]}")

    return Judge("param_shapes", collect, check)
### END JUDGE
### END HIDDEN TESTS

# %% [markdown]
# ## 3. Blocks of blocks
#
# Write `make_rgnet()`, returning `nn.Sequential(block2, nn.Linear(4, 1))` where
# `block2` is an `nn.Sequential` whose four children are named `'block 0'`,
# `'block 1'`, `'block 2'` and `'block 3'` (with the space), [clause names] and each of them is a
# new `nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 4), nn.ReLU())`. [clause block_layers]
# The four blocks must not share parameters, [clause no_sharing] and each starts from its own
# random weights, as four separately built blocks do, [clause own_weights] drawn from torch's
# generator as it stands (set no seed inside). [clause no_seed] Name no device: inside
# `with torch.device(...)` the whole net is made on that device. [clause device]

# %% answer grade_id="make_rgnet"
def make_rgnet():
    ### BEGIN SOLUTION
    block2 = nn.Sequential()
    for i in range(4):
        block2.add_module(f"block {i}", nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 4), nn.ReLU()))
    return nn.Sequential(block2, nn.Linear(4, 1))
    ### END SOLUTION

# %% tests grade_id="test_make_rgnet" points=2
_net = make_rgnet()
assert isinstance(_net, nn.Sequential) and len(_net) == 2, \
    "make_rgnet should return an nn.Sequential of two children: block2 and the output Linear."
assert isinstance(_net[1], nn.Linear) and (_net[1].in_features, _net[1].out_features) == (4, 1), \
    "The second child should be nn.Linear(4, 1)."
assert isinstance(_net[0], nn.Sequential), "The first child (block2) should be an nn.Sequential."
_names = [name for name, _ in _net[0].named_children()]
assert _names == ["block 0", "block 1", "block 2", "block 3"], \
    f"block2's children should be named 'block 0' to 'block 3' (add_module with a space), got {_names}."
for _block in _net[0]:
    assert [type(m) for m in _block] == [nn.Linear, nn.ReLU, nn.Linear, nn.ReLU], \
        "Each block should be Linear, ReLU, Linear, ReLU."
    assert _block[0].weight.shape == (8, 4) and _block[2].weight.shape == (4, 8), \
        "Each block's layers should be Linear(4, 8) and then Linear(8, 4)."
assert _net(torch.rand(3, 4)).shape == (3, 1), "For an input of shape (3, 4) the output should be (3, 1)."
assert not torch.equal(_net[0][0][0].weight, _net[0][3][0].weight), \
    "Blocks 0 and 3 start from the same weights: build each block anew (a copy of one block copies its values too)."
### BEGIN HIDDEN TESTS
assert "0.block 2.2.weight" in dict(_net.named_parameters()), \
    "The qualified name '0.block 2.2.weight' should exist: are the blocks registered under their names?"
assert len({id(p) for p in _net.parameters()}) == 18 and len(list(_net.parameters())) == 18, \
    "The four blocks share parameters: build a new block for each name instead of adding one block four times."
_other = make_rgnet()
assert all(p is not q for p, q in zip(_net.parameters(), _other.parameters())), \
    "Two calls of make_rgnet() should give two independent nets with their own parameters."
_same = [(_i, _j) for _i in range(4) for _j in range(_i + 1, 4)
         if torch.equal(_net[0][_i][0].weight, _net[0][_j][0].weight)]
assert not _same, \
    f"Blocks {_same} start from the same weights: build every block anew (a copy of one block copies its values too)."
torch.manual_seed(7)
_X = torch.randn(5, 4)
_h = _X
for _block in _net[0]:
    _h = torch.relu(_block[2](torch.relu(_block[0](_h))))
assert torch.allclose(_net(_X), _net[1](_h)), \
    "The output should run the four blocks in order, then the output layer."
torch.manual_seed(8)
_first = make_rgnet()
_after = [torch.rand(1)]
torch.manual_seed(9)
_second = make_rgnet()
_after.append(torch.rand(1))
assert not torch.equal(_first[0][0][0].weight, _second[0][0][0].weight) and not torch.equal(*_after), \
    "make_rgnet should draw its weights from torch's generator as it stands: with a seed set inside, two calls build " \
    "the same weights and the caller's random numbers restart at every call."
with _simulated_gpu() as _gpu, torch.device(_gpu):  # a default device: a GPU, simulated by the set-up cell
    try:
        _net, _error = make_rgnet(), ""
        _net(torch.randn(2, 4))
    except (RuntimeError, TypeError) as _e:
        _net, _error = None, f" (it raised: {_e})"
assert _net is not None and all(p.device == _gpu for p in _net.parameters()), \
    f"Under `with torch.device(gpu)` every layer should be made on that GPU and run there{_error}: is the net moved to the CPU (.cpu()) or given a device of its own?"
### END HIDDEN TESTS

# %% [markdown]
# ## 4. Tied layers
#
# Write `make_tied_mlp(width=8)`, returning
#
# ```
# nn.Sequential(nn.Linear(4, width), nn.ReLU(), shared, nn.ReLU(), shared, nn.ReLU(), nn.Linear(width, 1))
# ```
#
# where `shared` is one `nn.Linear(width, width)`: [clause width] indices 2 and 4 hold **the same
# module object**, so they share weight and bias. [clause tied] Every call builds a new net. [clause new_each_call]
# As in `make_rgnet`, name no device and set no seed. [clause no_seed]

# %% answer grade_id="make_tied_mlp"
def make_tied_mlp(width=8):
    ### BEGIN SOLUTION
    shared = nn.Linear(width, width)
    return nn.Sequential(nn.Linear(4, width), nn.ReLU(), shared, nn.ReLU(), shared, nn.ReLU(), nn.Linear(width, 1))
    ### END SOLUTION

# %% tests grade_id="test_make_tied_mlp" points=2
_net = make_tied_mlp()
assert isinstance(_net, nn.Sequential) and len(_net) == 7, "make_tied_mlp should return an nn.Sequential of 7 modules."
assert [type(m) for m in _net] == [nn.Linear, nn.ReLU, nn.Linear, nn.ReLU, nn.Linear, nn.ReLU, nn.Linear], \
    "The modules should be Linear, ReLU, Linear, ReLU, Linear, ReLU, Linear."
assert _net[2] is _net[4], \
    "Indices 2 and 4 should be the same module object: create one Linear and put it in twice (copies are not tied)."
assert _net[2].weight.shape == (8, 8) and _net[0].weight.shape == (8, 4) and _net[6].weight.shape == (1, 8), \
    "With width=8 the layers should be Linear(4, 8), the shared Linear(8, 8) and Linear(8, 1)."
assert _net(torch.rand(5, 4)).shape == (5, 1), "For an input of shape (5, 4) the output should be (5, 1)."
assert make_tied_mlp(width=5)[2].weight.shape == (5, 5), "With width=5 the shared layer should be Linear(5, 5): is width used?"
### BEGIN HIDDEN TESTS
_net = make_tied_mlp(width=3)
assert _net[2] is _net[4] and _net[2].weight.shape == (3, 3), \
    "With width=3 the shared layer should be Linear(3, 3): is width used?"
assert _net[0].weight.shape == (3, 4) and _net[6].weight.shape == (1, 3), \
    "With width=3 the first layer should be Linear(4, 3) and the last Linear(3, 1)."
assert sum(p.numel() for p in _net.parameters()) == 31, \
    "A tied MLP of width 3 has 15 + 12 + 4 = 31 distinct parameters."
_net(torch.rand(2, 4)).sum().backward()
assert _net[2].weight.grad is not None and _net[0].weight.grad is not None, "Gradients should reach every layer."
assert make_tied_mlp()[2] is not make_tied_mlp()[2], \
    "Each call should create its own shared layer, not reuse one kept outside the function."
assert make_tied_mlp(16)(torch.rand(1, 4)).shape == (1, 1), "make_tied_mlp(16) should also run."
torch.manual_seed(8)
_first = make_tied_mlp()
_after = [torch.rand(1)]
torch.manual_seed(9)
_second = make_tied_mlp()
_after.append(torch.rand(1))
assert not torch.equal(_first[2].weight, _second[2].weight) and not torch.equal(*_after), \
    "make_tied_mlp should draw its weights from torch's generator as it stands: with a seed set inside, two calls build " \
    "the same weights and the caller's random numbers restart at every call."
with _simulated_gpu() as _gpu, torch.device(_gpu):  # a default device: a GPU, simulated by the set-up cell
    try:
        _net, _error = make_tied_mlp(4), ""
        _net(torch.randn(2, 4))
    except (RuntimeError, TypeError) as _e:
        _net, _error = None, f" (it raised: {_e})"
assert _net is not None and _net[2] is _net[4] and all(p.device == _gpu for p in _net.parameters()), \
    f"Under `with torch.device(gpu)` every layer should be made on that GPU and run there, the shared one too{_error}: is a layer moved to the CPU (.cpu()) or given a device of its own?"
### END HIDDEN TESTS

# %% [markdown]
# ## 5. Freezing by name
#
# Write `freeze(module, prefixes)`: set `requires_grad=False` on every parameter [clause on_parameter]
# whose qualified name (from `named_parameters()`) **starts with** one of the
# strings in `prefixes` (a list or tuple), [clause starts_with] and return the names of the frozen
# parameters as a list. [clause returns_names] The other parameters stay as they are: one frozen
# earlier stays frozen, one that is trainable stays trainable. [clause others_kept]
#
# Example: `freeze(net, ["0."])` freezes `'0.weight'` and `'0.bias'` but not
# `'2.0.weight'`.

# %% answer grade_id="freeze"
def freeze(module, prefixes):
    ### BEGIN SOLUTION
    prefixes = tuple(prefixes)
    frozen = []
    for name, param in module.named_parameters():
        if name.startswith(prefixes):
            param.requires_grad_(False)
            frozen.append(name)
    return frozen
    ### END SOLUTION

# %% tests grade_id="test_freeze" points=2
def _make_net():
    return nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 2)))

_net = _make_net()
_names = freeze(_net, ["2.0."])
_flags = {name: p.requires_grad for name, p in _net.named_parameters()}  # read before _names is used
assert not _flags["2.0.weight"] and not _flags["2.0.bias"], \
    "After freeze(net, ['2.0.']) returned, the matching parameters still require gradients: set requires_grad on the parameter itself (not on .data or a copy), during the call (a function with yield does nothing until its result is iterated)."
assert all(_flags[n] for n in ["0.weight", "0.bias", "2.1.weight", "2.1.bias"]), \
    "Parameters whose names do not start with a prefix should stay trainable."
assert _names is not None and sorted(_names) == ["2.0.bias", "2.0.weight"], \
    f"freeze(net, ['2.0.']) should return ['2.0.weight', '2.0.bias'], got {_names}."
### BEGIN HIDDEN TESTS
_net = _make_net()
_names = freeze(_net, ("0.", "2.1.weight"))
assert _names is not None and sorted(_names) == ["0.bias", "0.weight", "2.1.weight"], \
    f"Only names that START with a prefix count ('2.0.weight' merely contains '0.'), got {_names}."
_flags = {name: p.requires_grad for name, p in _net.named_parameters()}
assert _flags == {"0.weight": False, "0.bias": False, "2.0.weight": True, "2.0.bias": True,
                  "2.1.weight": False, "2.1.bias": True}, \
    "The requires_grad flags do not match the returned names."
_net(torch.rand(2, 3)).sum().backward()
assert _net[0].weight.grad is None and _net[2][0].weight.grad is not None, \
    "After backward a frozen parameter should have no gradient and a trainable one should."
_net = _make_net()
assert list(freeze(_net, [])) == [] and all(p.requires_grad for p in _net.parameters()), \
    "With no prefixes nothing should be frozen."
_net = _make_net()
freeze(_net, ("2.1.", "0.bias"))  # called for its effect alone, its result ignored
assert [n for n, p in _net.named_parameters() if not p.requires_grad] == ["0.bias", "2.1.weight", "2.1.bias"], \
    "Called on its own line, freeze should already have frozen the matching parameters: do the work inside the call, not in a generator."
_net = _make_net()
_ids = [id(p) for p in _net.parameters()]
assert sorted(freeze(_net, ["2"])) == ["2.0.bias", "2.0.weight", "2.1.bias", "2.1.weight"], \
    "A prefix need not end at a dot: '2' matches every name starting with '2'."
assert [id(p) for p in _net.parameters()] == _ids and all(isinstance(p, nn.Parameter) for p in _net.parameters()), \
    "Freezing should change the flag on the existing parameters, not replace them."
_net = _make_net()
freeze(_net, ["2.0."])  # the visible test's call again, on a new net: it must freeze this one too
assert [n for n, p in _net.named_parameters() if not p.requires_grad] == ["2.0.weight", "2.0.bias"], \
    "freeze(net, ['2.0.']) on a second net left it trainable: freeze the net it is given, on every call."
_net = _make_net()
freeze(_net, ["0."])
freeze(_net, ["0."])  # the same call twice: still frozen, not switched back
freeze(_net, ["2.1."])  # a second call: what the first froze stays frozen
_frozen = [n for n, p in _net.named_parameters() if not p.requires_grad]
assert _frozen == ["0.weight", "0.bias", "2.1.weight", "2.1.bias"], \
    f"After freeze(net, ['0.']) and then freeze(net, ['2.1.']) the frozen parameters are {_frozen}: a parameter " \
    "that matches no prefix should stay as it is (frozen earlier means still frozen), not be set trainable again."
### END HIDDEN TESTS

# %% [markdown]
# ## 6. In your own words
#
# Why would you share parameters between two places in a network? Give at least
# two reasons, and one thing you must keep in mind when training a net with tied
# parameters.

# %% manual [markdown] grade_id="sharing_answer" points=2
# Sharing makes a model smaller: fewer parameters to store and to fit, so less
# memory and often less overfitting. It also builds in prior knowledge that two
# places should do the same thing: a convolution or a recurrent cell applies one
# set of weights at every position or time step, and a language model often ties
# its input embedding to its output layer so that a word is represented the same
# way when read and when predicted. Each shared weight also gets a gradient from
# every place it is used, so it learns from all of them at once. Keep in mind
# that those gradients are *summed*: where the uses agree, the sum is larger
# than either term and the shared weight takes a bigger step than one use would
# (the learning rate may need care); where they pull in opposite directions,
# the terms cancel and the sum can be smaller than either use alone, so the
# weight hardly moves even though each use has a large gradient. Also, editing
# or re-initializing it changes every place at once, and copying the module
# (for example with `copy.deepcopy` of a part) can silently break the tie.

# %% [markdown]
# ## 7. Watch a tied network train
#
# Build `make_tied_mlp()` and train it for five SGD steps (`lr=0.05`, MSE loss)
# on `torch.randn(64, 4)` inputs and `torch.randn(64, 1)` targets. After each
# step, print the loss and the norm of the weight gradient of each distinct
# `nn.Linear` (indices 0, 2 and 6), and check whether indices 2 and 4 still hold
# one tensor with equal values. Also build an *untied twin* of a fresh tied net
# (`twin = copy.deepcopy(net)`, then `twin[4] = copy.deepcopy(twin[2])`: same
# values, separate tensors), run one backward pass of the same loss through
# both, and compare the tied net's shared-weight gradient with the twin's
# gradients at indices 2 and 4.
#
# Answer: what happened to the two places of the shared layer during training,
# and how is the shared layer's gradient related to the twin's two gradients?
# Why? (Insert a code cell of your own for the experiment, *Insert → Insert Cell
# Below*; it is not graded.)

# %% manual [markdown] grade_id="tied_training_answer" points=1
# The two places stay identical after every step: they are one module object,
# so there is one weight tensor, and an optimizer built from `net.parameters()`
# (which lists it once) updates it once per step. (A list concatenated module by
# module would hold it twice: the optimizer only warns and steps it twice.) Its
# gradient equals the sum of the twin's two gradients (up to rounding): backward adds one term per use of the weight, and in the twin each
# copy collects only its own use's term. The sum can be longer or shorter than
# either term, depending on how the two terms are aligned, so the shared weight
# moves as both uses ask together, not as either alone. The loss goes down as
# for any network: tying changes what is learned, not whether training works.

# %% [markdown]
# ## Summary
#
# - `parameters()` lists a tied parameter once, so counting with it is right;
#   the `state_dict` lists it once per place and also holds buffers.
# - `named_parameters()` gives the qualified names used everywhere else.
# - `add_module` names children; a fresh block per name keeps them independent.
# - The same module object at two indices ties its weights.
# - Freezing is `requires_grad_(False)` on the parameter itself.
