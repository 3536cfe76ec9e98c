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
# # Exercise 1: Layers and blocks
#
# Four blocks to build and one question to answer. Write your code where it says
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
# Each requirement the tests check ends with its name in brackets, such as
# `[clause call_module]`: a test that fails is about one of them.
#
# Use only `torch`, the standard library, `numpy` and `matplotlib`.

# %%
from collections import OrderedDict

import torch
from torch import nn
from torch.nn import functional as F

_ = torch.manual_seed(0)  # the same random examples on every run

# %% [markdown]
# ## Set-up for the tests (run it; no need to read it)
#
# The next cell defines `_simulated_gpu()`, which lets the tests run your blocks
# on a GPU that the CPU plays, with a real GPU's rules, on any machine. In
# JupyterLab its code is folded: run it, and click its left edge to unfold it.

# %% jupyter={"source_hidden": true}
# include: simulated_gpu.py

# %% [markdown]
# ## 1. A sequential container of your own
#
# Write `MySequential`, a block that chains its child modules in order, like
# `nn.Sequential`. It takes the modules positionally, `MySequential(m1, m2, m3)`,
# **or** as one `OrderedDict` mapping names to modules, in which case those names
# are the children's names (`'hidden.weight'` in the `state_dict`). [clause ordereddict]
#
# The children must be *registered* so that `parameters()`, `state_dict()`,
# `.to()` and `print` see them. [clause registered] `net[i]` returns the module at position `i` and
# `len(net)` counts the positions. As in `nn.Sequential`, a module passed twice
# (`MySequential(lin, act, lin2, act)`) sits at both positions and is applied
# both times. [clause repeated] Apply each child by calling it, `module(X)`, never
# `module.forward(X)`: only the call runs the child's hooks and initializes a
# lazy child such as `nn.LazyLinear` ("Always call the module", in the lecture). [clause call_module]

# %% answer grade_id="MySequential"
class MySequential(nn.Module):
    def __init__(self, *modules):
        super().__init__()
        ### BEGIN SOLUTION
        if len(modules) == 1 and isinstance(modules[0], OrderedDict):
            named = modules[0].items()
        else:
            named = ((str(i), module) for i, module in enumerate(modules))
        for name, module in named:
            self.add_module(name, module)
        ### END SOLUTION

    def forward(self, X):
        ### BEGIN SOLUTION
        # Not self.children(): it yields a module passed twice only once.
        for module in self._modules.values():
            X = module(X)
        return X
        ### END SOLUTION

    def __getitem__(self, i):
        ### BEGIN SOLUTION
        return list(self._modules.values())[i]
        ### END SOLUTION

    def __len__(self):
        ### BEGIN SOLUTION
        return len(self._modules)
        ### END SOLUTION

# %% tests grade_id="test_MySequential" points=1
torch.manual_seed(1)
_layers = [nn.Linear(6, 5), nn.ReLU(), nn.Linear(5, 3)]
_net = MySequential(*_layers)
_X = torch.randn(4, 6)
assert len(list(_net.parameters())) == 4, \
    "parameters() misses the children's weights: are the modules kept in a plain list instead of being registered?"
assert len(_net) == 3, "len(net) should count the child modules."
assert _net[0] is _layers[0] and _net[2] is _layers[2], "net[i] should return the i-th module you passed in."
try:
    _out, _error = _net(_X), ""
except RuntimeError as _e:
    _out, _error = None, f" (it raised: {_e})"
assert _out is not None and torch.equal(_out, _layers[2](_layers[1](_layers[0](_X)))), \
    f"forward should apply the modules one after another, in the order given{_error}."
_runs = []
_hooked = nn.Linear(6, 5)
_hooked.register_forward_hook(lambda module, args, output: _runs.append(module))
MySequential(_hooked, nn.ReLU())(_X)
assert len(_runs) == 1, f"A forward hook on a child ran {len(_runs)} times in one forward pass instead of once" + \
    (": call each module, module(X); module.forward(X) skips its hooks." if not _runs else ".")
assert "Linear(in_features=6" in repr(_net), "print(net) should show the children: are they registered?"
_net.to(torch.float64)
assert _layers[0].weight.dtype == torch.float64, \
    ".to() did not reach the children: are they registered with add_module (or as attributes)?"
### BEGIN HIDDEN TESTS
torch.manual_seed(2)
_a, _b = nn.Linear(3, 3), nn.Linear(3, 3)
_order = MySequential(_a, nn.ReLU(), _b, nn.Tanh())
_Y = torch.randn(5, 3)
assert torch.equal(_order(_Y), torch.tanh(_b(torch.relu(_a(_Y))))), \
    "forward should apply the modules one after another, in the order given."
_moved = MySequential(_a, nn.ReLU(), _b)
_moved.to(torch.float64)
assert _a.weight.dtype == torch.float64, \
    ".to() did not reach the children: are they registered with add_module (or as attributes)?"
assert "Linear" in repr(MySequential(nn.Linear(2, 2))), \
    "print(net) should show the children: are they registered?"
_single = nn.Linear(2, 2)
assert MySequential(_single)[0] is _single and len(MySequential(_single)) == 1, \
    "A single module passed positionally should be the only child."
torch.manual_seed(7)
_a, _b = nn.Linear(3, 4), nn.Linear(4, 2)
_Y = torch.randn(5, 3)
_chained = MySequential(_a, nn.Tanh(), _b)(_Y)
assert _chained.requires_grad, \
    "The output of a chain of Linear layers carries no gradient: is forward run under torch.no_grad(), or an output detached?"
_chained.sum().backward()
_grads = [None if p.grad is None else p.grad.clone() for p in (_a.weight, _b.weight)]
_a.zero_grad()
_b.zero_grad()
nn.Sequential(_a, nn.Tanh(), _b)(_Y).sum().backward()  # the same modules in torch's own container
assert all(g is not None and torch.allclose(g, p.grad) for g, p in zip(_grads, (_a.weight, _b.weight))), \
    "backward should reach every child with the gradients nn.Sequential gives: is forward run under torch.no_grad(), or an output detached?"
# On a GPU (the set-up cell simulates one, with its rules): the output stays there, net[i] is the module itself.
with _simulated_gpu() as _gpu:
    _m1, _m2 = nn.Linear(3, 4, device=_gpu), nn.Linear(4, 2, device=_gpu)
    _on_gpu = MySequential(_m1, nn.ReLU(), _m2)
    try:
        _got, _raised = _on_gpu(torch.randn(5, 3, device=_gpu)), ""
    except (RuntimeError, TypeError) as _e:
        _got, _raised = None, f" (it raised: {_e})"
    try:
        _first, _error = _on_gpu[0], ""
    except (RuntimeError, TypeError) as _e:
        _first, _error = None, f" (it raised: {_e})"
assert _got is not None and _got.device == _gpu and _got.shape == (5, 2), \
    f"With every module and the input on a GPU, the output should stay there{_raised}: does forward move a result to the CPU?"
assert _first is _m1 and _m1.weight.device == _gpu, \
    f"net[0] should return the module itself, left on its device{_error}: is it moved (.cpu()) or copied?"
# Hooks and lazy modules work only through the call, module(X): a lazy first child, hooks on the others.
_lazy, _act, _last, _runs = nn.LazyLinear(4), nn.ReLU(), nn.Linear(4, 2), []
for _m in (_act, _last):
    _m.register_forward_hook(lambda module, args, output: _runs.append(module))
try:
    _got, _error = MySequential(_lazy, _act, _last)(torch.randn(5, 3)), ""
except (RuntimeError, ValueError) as _e:
    _got, _error = None, f" (it raised: {str(_e).split('. ')[0]})"
assert _got is not None and not nn.parameter.is_lazy(_lazy.weight), \
    f"A lazy child (nn.LazyLinear) was not initialized by the forward pass{_error}: call each module, module(X); module.forward(X) skips the hook that gives it its shape."
assert len(_runs) == 2 and _runs[0] is _act and _runs[1] is _last, \
    "The children's forward hooks should each run once per forward pass, in order: call each module, module(X); module.forward(X) skips its hooks."
### END HIDDEN TESTS

# %% tests grade_id="test_MySequential_ordereddict" points=1
# One OrderedDict of (name, module) pairs instead of modules passed one by one.
_X = torch.randn(4, 6)
try:
    _named, _error = MySequential(OrderedDict([("hidden", nn.Linear(6, 5)), ("act", nn.ReLU()), ("out", nn.Linear(5, 3))])), ""
except TypeError as _e:
    _named, _error = None, f" ({_e})"
assert _named is not None, \
    f"MySequential(OrderedDict(...)) failed{_error}: register each (name, module) pair of the dict, not the dict itself."
assert "hidden.weight" in _named.state_dict(), \
    "With an OrderedDict, the children should be registered under its keys ('hidden.weight' is missing)."
assert _named(_X).shape == (4, 3), "forward on an OrderedDict-built net should give the last layer's output shape."
### BEGIN HIDDEN TESTS
_a, _b = nn.Linear(3, 3), nn.Linear(3, 3)
_named = MySequential(OrderedDict([("first", _a), ("second", _b)]))
assert list(_named.state_dict()) == ["first.weight", "first.bias", "second.weight", "second.bias"], \
    "With an OrderedDict, the children should be registered under its keys, in its order."
assert len(_named) == 2 and _named[1] is _b, "net[i] and len(net) should also work for an OrderedDict-built net."
### END HIDDEN TESTS

# %% tests grade_id="test_MySequential_repeated" points=1
# A module passed twice is applied twice, as nn.Sequential does.
_double = nn.Linear(1, 1)  # doubles its input
with torch.no_grad():
    _double.weight.fill_(2.0)
    _double.bias.zero_()
_twice = MySequential(_double, _double)
assert len(_twice) == 2, \
    "len(net) should count positions, so a module passed twice counts twice: is it registered under one name only, or does len count children(), which yields it once?"
assert _twice(torch.ones(1, 1)).item() == 4.0, \
    "A module passed twice should be applied twice (1 -> 2 -> 4): does forward loop over children() or a set, which yield each module object only once?"
try:
    _second = _twice[1]
except IndexError:
    _second = None
assert _second is _double, \
    "net[1] should be the module passed second, even when it was also passed first: does net[i] index children(), which yields it once?"
### BEGIN HIDDEN TESTS
_Y = torch.randn(5, 3)
_lin, _act = nn.Linear(3, 3), nn.Tanh()
_repeated = MySequential(_lin, _act, _lin, _act)
assert torch.equal(_repeated(_Y), torch.tanh(_lin(torch.tanh(_lin(_Y))))), \
    "Modules passed twice should be applied at every position they were passed: loop over the registered positions, not children()."
assert len(_repeated) == 4, "len(net) should count every position, repeated modules included."
try:
    _positions = [_repeated[i] for i in range(4)]
except IndexError:
    _positions = None
assert _positions is not None and all(m is e for m, e in zip(_positions, [_lin, _act, _lin, _act])), \
    "net[i] should return the module passed at position i, repeated modules included: index the registered positions, not children()."
assert len(list(_repeated.parameters())) == 2, "A module passed twice still has one set of parameters."
### END HIDDEN TESTS

# %% [markdown]
# ## 2. Two branches side by side
#
# Write `ParallelBlock(net1, net2, dim=-1)`. Its `forward(X)` runs both networks
# on the same input `X` [clause same_input] (calling them, `net1(X)`, not `net1.forward(X)`) [clause call_module] and
# concatenates their outputs along `dim`. [clause concat_dim] The block uses the two networks it is
# given, not copies: their parameters are the block's parameters, so training
# the block trains them. [clause same_networks] It leaves them (and the output) on the device they are on. [clause device]

# %% answer grade_id="ParallelBlock"
class ParallelBlock(nn.Module):
    def __init__(self, net1, net2, dim=-1):
        super().__init__()
        ### BEGIN SOLUTION
        self.net1 = net1
        self.net2 = net2
        self.dim = dim
        ### END SOLUTION

    def forward(self, X):
        ### BEGIN SOLUTION
        return torch.cat((self.net1(X), self.net2(X)), dim=self.dim)
        ### END SOLUTION

# %% tests grade_id="test_ParallelBlock" points=2
# judged outside the kernel: parallel_block
torch.manual_seed(3)
_n1, _n2 = nn.Linear(4, 2), nn.Linear(4, 3)
_block = ParallelBlock(_n1, _n2)
_X = torch.randn(5, 4)
_out = _block(_X)
assert _out.shape == (5, 5), \
    f"Expected shape (5, 5) from outputs of widths 2 and 3 joined on the last dim, got {tuple(_out.shape)}."
assert torch.equal(_out, torch.cat([_n1(_X), _n2(_X)], dim=-1)), \
    "The output should be net1(X) followed by net2(X), both computed from the same X."
assert len(list(_block.parameters())) == 4, \
    "The block should own both networks' parameters: keep them as attributes, not in a plain list."
assert {id(p) for p in _block.parameters()} == {id(p) for p in (*_n1.parameters(), *_n2.parameters())}, \
    "The block's parameters should be those of the networks it was given: keep net1 and net2 themselves, not copies, so that training the block trains them."
_rows = ParallelBlock(nn.Linear(4, 3), nn.Linear(4, 3), dim=0)(_X)
assert _rows.shape == (10, 3), f"With dim=0 the two (5, 3) outputs should be stacked into (10, 3), got {tuple(_rows.shape)}."
### BEGIN HIDDEN TESTS
torch.manual_seed(4)
_n1, _n2 = nn.Linear(3, 3), nn.Linear(3, 3)
_X = torch.randn(2, 3)
_rows = ParallelBlock(_n1, _n2, dim=0)(_X)
assert _rows.shape == (4, 3) and torch.equal(_rows, torch.cat([_n1(_X), _n2(_X)], dim=0)), \
    "With dim=0 the two outputs should be stacked along the first dimension: is dim passed on?"
_X3 = torch.randn(2, 5, 3)
_mid = ParallelBlock(_n1, nn.Identity(), dim=1)(_X3)
assert _mid.shape == (2, 10, 3) and torch.equal(_mid, torch.cat([_n1(_X3), _X3], dim=1)), \
    "With dim=1 on a 3-D input the outputs should be joined along the middle dimension."
_block = ParallelBlock(nn.Identity(), nn.Linear(3, 1))
_block.to(torch.float64)
assert _block(torch.ones(2, 3, dtype=torch.float64)).shape == (2, 4), \
    ".to() should reach both branches: are they registered?"
_n1, _n2 = nn.Linear(3, 2), nn.Linear(3, 2)
ParallelBlock(_n1, _n2)(torch.randn(4, 3)).sum().backward()
assert all(_p.grad is not None and _p.grad.abs().sum() > 0 for _p in (_n1.weight, _n2.weight)), \
    "Gradients should reach both branches: do not detach a branch's output or compute it under torch.no_grad()."
with _simulated_gpu() as _gpu:  # a GPU, simulated by the set-up cell with its rules
    _n1, _n2 = nn.Linear(3, 2, device=_gpu), nn.Linear(3, 4, device=_gpu)
    try:
        _got, _raised = ParallelBlock(_n1, _n2)(torch.randn(6, 3, device=_gpu)), ""
    except (RuntimeError, TypeError) as _e:
        _got, _raised = None, f" (it raised: {_e})"
assert _got is not None and _got.device == _gpu and _got.shape == (6, 6), \
    f"With both branches and the input on a GPU, the output should stay there{_raised}: is a branch or the result moved to the CPU?"
assert _n1.weight.device == _gpu and _n2.weight.device == _gpu, \
    "The block should keep the branches it was given where they are: is a branch moved (.cpu()) in __init__?"
# Hooks and lazy modules work only through the call, net(X): a lazy first branch, a hook on the second.
_lazy, _n2, _runs = nn.LazyLinear(2), nn.Linear(3, 4), []
_n2.register_forward_hook(lambda module, args, output: _runs.append(module))
try:
    _got, _error = ParallelBlock(_lazy, _n2)(torch.randn(5, 3)), ""
except (RuntimeError, ValueError) as _e:
    _got, _error = None, f" (it raised: {str(_e).split('. ')[0]})"
assert _got is not None and not nn.parameter.is_lazy(_lazy.weight), \
    f"A lazy branch (nn.LazyLinear) was not initialized by the forward pass{_error}: call each branch, net1(X); net1.forward(X) skips the hook that gives it its shape."
assert len(_runs) == 1, \
    f"A forward hook on a branch ran {len(_runs)} times in one forward pass instead of once: call each branch, net2(X); net2.forward(X) skips its hooks."
### BEGIN JUDGE
def judge():
    """Run by the grader in its own process, never in the kernel (grader/judges.py)."""
    from grader.judges import Judge, Rejected, close, exact_int, linear, tensor, transpose

    collect = """\
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
_jruns = []
_j7 = nn.Linear(3, 2)
_j7.register_forward_hook(lambda module, args, output: _jruns.append(1))
ParallelBlock(nn.Identity(), _j7)(_jx)
judged["hook_runs"] = len(_jruns)
"""

    def check(data):
        x = tensor(data["x"], "the input")
        outs = [linear(x, tensor(w, "a weight"), tensor(b, "a bias")) for w, b in data["nets"]]
        close(tensor(data["last"], "ParallelBlock(net1, net2)(X)"), [a + b for a, b in zip(outs[0], outs[1])],
              "ParallelBlock(net1, net2)(X), net1(X) and net2(X) joined on the last dim,")
        close(tensor(data["first"], "ParallelBlock(net1, net2, dim=0)(X)"), outs[2] + outs[3],
              "ParallelBlock(net1, net2, dim=0)(X), the two outputs stacked along dim 0,")
        if exact_int(data["parameters"], "len(list(block.parameters()))") != 4:
            raise Rejected("the block should own both networks' 4 parameters")
        runs = exact_int(data["hook_runs"], "the number of times net2's forward hook ran")
        if runs != 1:
            raise Rejected(f"a forward hook on net2 ran {runs} times in one forward pass instead of once: "
                           "call each branch, net2(X); net2.forward(X) skips its hooks")
        # d(sum of the output)/d(weight) of a Linear layer: each row is the sum of the input's rows.
        column_sums = [sum(column) for column in transpose(x)]
        for name, grad, rows in zip(("net1", "net2"), data["grads"], (2, 4)):
            what = f"the gradient of {name}'s weight after ParallelBlock(net1, net2)(X).sum().backward()"
            if grad is None:
                raise Rejected(f"no gradient reaches the {name} given to the block: use the networks given, not copies, "
                               "and do not detach a branch or run it under torch.no_grad()")
            close(tensor(grad, what), [column_sums] * rows, what)

    return Judge("ParallelBlock", collect, check)
### END JUDGE
### END HIDDEN TESTS

# %% [markdown]
# ## 3. A stack of fresh copies
#
# Write `make_stack(factory, n)`: it returns an `nn.Sequential` of `n` modules, [clause sequential]
# each made by its **own** call `factory()` and kept as that call returned it. [clause own_call] No
# two layers may share parameters, and every call builds a new stack (set no seed
# inside: the layers draw from torch's generator as it stands). [clause new_each_call]

# %% answer grade_id="make_stack"
def make_stack(factory, n):
    ### BEGIN SOLUTION
    return nn.Sequential(*(factory() for _ in range(n)))
    ### END SOLUTION

# %% tests grade_id="test_make_stack" points=2
_stack = make_stack(lambda: nn.Linear(3, 3), 4)
assert isinstance(_stack, nn.Sequential), "make_stack should return an nn.Sequential."
assert len(_stack) == 4, f"Expected 4 layers, got {len(_stack)}."
assert len({id(m) for m in _stack}) == 4, \
    "The same module object appears more than once: call factory() once per layer instead of repeating one result."
assert len({p.data_ptr() for p in _stack.parameters()}) == 8, \
    "Some layers share parameters: each layer needs its own factory() call."
assert not torch.equal(_stack[0].weight, _stack[1].weight), \
    "The layers start from identical weights: call factory() once per layer instead of copying one layer."
### BEGIN HIDDEN TESTS
_calls = []
def _counting_factory():
    _calls.append(1)
    return nn.Sequential(nn.Linear(2, 2), nn.ReLU())
_stack = make_stack(_counting_factory, 3)
assert len(_calls) == 3, f"factory() should be called exactly n times; it was called {len(_calls)} times."
assert _stack(torch.ones(1, 2)).shape == (1, 2), "The stack should run its layers in order."
assert len(make_stack(nn.ReLU, 1)) == 1, "make_stack(factory, 1) should hold one module."
assert len(make_stack(nn.ReLU, 0)) == 0, "make_stack(factory, 0) should be an empty nn.Sequential."
_big = make_stack(lambda: nn.Linear(4, 4), 6)
with torch.no_grad():
    _big[0].weight.zero_()
assert all(_big[i].weight.abs().sum() > 0 for i in range(1, 6)), \
    "Changing one layer changed the others: the layers share their weights."
_made = []
def _gpu_factory():  # layers on a GPU, simulated by the set-up cell with its rules
    _made.append(nn.Linear(2, 2, device=_gpu))
    return _made[-1]
with _simulated_gpu() as _gpu:
    try:
        _stack, _error = make_stack(_gpu_factory, 3), ""
    except (RuntimeError, TypeError) as _e:
        _stack, _error = None, f" (it raised: {_e})"
assert _stack is not None and all(m is e for m, e in zip(_stack, _made)) and all(m.weight.device == _gpu for m in _made), \
    f"The stack should hold the modules factory() returned, as they are{_error}: are they moved (.cpu(), .to()) or copied?"
_factory = lambda: nn.Linear(3, 3)
_one, _two = make_stack(_factory, 2), make_stack(_factory, 2)  # the same factory twice: two stacks of new layers
assert _one is not _two and _one[0] is not _two[0] and not torch.equal(_one[0].weight, _two[0].weight), \
    "Two calls with the same factory should build two stacks of new layers with their own random weights: " \
    "build the stack on every call, keep nothing from an earlier one, and set no seed."
torch.manual_seed(3)
make_stack(_factory, 2)
_after = [torch.rand(1)]
torch.manual_seed(4)
make_stack(_factory, 2)
_after.append(torch.rand(1))
assert not torch.equal(*_after), \
    "After make_stack, torch's random numbers no longer depend on the seed set before it: do not seed inside."
### END HIDDEN TESTS

# %% [markdown]
# ## 4. Constants and control flow in `forward`
#
# Write `FixedHiddenMLP(in_features=20)`:
#
# - a constant random weight of shape `(in_features, in_features)`, drawn once at
#   construction with `torch.rand` (from torch's generator as it stands: set no
#   seed inside), [clause drawn_once] [clause buffer_rand] held as a **buffer**: it is saved in the
#   `state_dict` and follows `.to()`, but it is not a parameter and is never trained; [clause buffer]
# - one `nn.Linear(in_features, in_features)`, used **twice** in `forward`. [clause linear_twice]
#
# `forward(X)`: apply the linear layer (call it, `self.linear(X)`, so that its
# hooks run); [clause call_module] compute `X @ W` with the constant weight
# `W` (a matrix product, the weight on the right; note that `F.linear(X, W)`
# would compute `X @ W.T` instead), [clause matmul_right] add 1 and apply ReLU; apply the *same*
# linear layer again; then, while the sum of absolute values is greater than 1,
# halve it; [clause halve_loop] return the sum of all entries (a scalar). Both uses of the linear
# layer are part of the computation that `backward()` differentiates, [clause gradients] and after
# `net.to(torch.float64)` the net runs on float64 inputs. [clause buffer_float64] Built inside
# `with torch.device(...)`, the net is made on that device. [clause buffer_device]

# %% answer grade_id="FixedHiddenMLP"
class FixedHiddenMLP(nn.Module):
    def __init__(self, in_features=20):
        super().__init__()
        ### BEGIN SOLUTION
        self.register_buffer("rand_weight", torch.rand(in_features, in_features))
        self.linear = nn.Linear(in_features, in_features)
        ### END SOLUTION

    def forward(self, X):
        ### BEGIN SOLUTION
        X = self.linear(X)
        X = F.relu(X @ self.rand_weight + 1)
        X = self.linear(X)
        while X.abs().sum() > 1:
            X = X / 2
        return X.sum()
        ### END SOLUTION

# %% tests grade_id="test_FixedHiddenMLP" points=2
def _parts(net):
    """The constant (in, in) weight (wherever it is kept) and the one linear layer."""
    (linear,) = [m for m in net.modules() if isinstance(m, nn.Linear)]
    inside = [id(p) for p in linear.parameters()]
    kept = [*net.buffers(), *net.parameters(), *[v for v in vars(net).values() if isinstance(v, torch.Tensor)]]
    constants = list({id(t): t for t in kept if id(t) not in inside and t.dim() == 2}.values())
    assert len(constants) == 1, "Expected one constant (in_features, in_features) weight besides the linear layer."
    return constants[0], linear

torch.manual_seed(5)
_net = FixedHiddenMLP()
_X = torch.rand(2, 20)
_y = _net(_X)
assert _y.dim() == 0, f"forward should return a scalar (0-dim tensor), got shape {tuple(_y.shape)}."
assert abs(_y.item()) <= 1 + 1e-6, "After the loop the absolute sum is at most 1: is the while-loop there?"
assert torch.equal(_net(_X), _y), \
    "Two calls on the same input should agree: is the constant weight drawn anew in forward instead of once in __init__?"

# A case worked out by hand: in_features=2, the linear layer is the identity and
# W = [[0, 1], [0, 0]]. For X = [[3, 0]]: X @ W = [0, 3]; +1 and ReLU give [1, 4];
# the identity keeps [1, 4]; halving three times gives [0.125, 0.5]; the sum is 0.625.
_small = FixedHiddenMLP(2)
_weight, _linear = _parts(_small)
with torch.no_grad():
    _weight.copy_(torch.tensor([[0.0, 1.0], [0.0, 0.0]]))
    _linear.weight.copy_(torch.eye(2))
    _linear.bias.zero_()
_hand = _small(torch.tensor([[3.0, 0.0]])).item()
assert _hand != 1.0, "The constant weight is applied as X @ W.T (F.linear(X, W) does that): use X @ W."
assert abs(_hand - 0.625) < 1e-6, \
    f"For the worked example the output should be 0.625, got {_hand}: check the order linear -> X @ W + 1 -> relu -> same linear -> halve -> sum."
### BEGIN HIDDEN TESTS
def _reference(net, X):
    """The specified computation on the net's own constant and linear layer (copied, so the net's
    gradients stay untouched): its output and d(output)/d(the layer's weight and bias)."""
    constant, linear = _parts(net)
    weight, bias = (t.detach().clone().requires_grad_(True) for t in (linear.weight, linear.bias))
    H = F.relu(F.linear(X, weight, bias) @ constant.detach() + 1)
    H = F.linear(H, weight, bias)
    while H.abs().sum() > 1:
        H = H / 2
    y = H.sum()
    y.backward()
    return y.detach(), weight.grad, bias.grad

def _close(got, want):
    return got is not None and got.shape == want.shape and bool((got - want).norm() <= 1e-4 * want.norm() + 1e-12)

def _check(net, X, case):
    want, weight_grad, bias_grad = _reference(net, X)
    _, linear = _parts(net)
    net.zero_grad()
    got = net(X)
    assert torch.allclose(got, want), f"The output differs from the specified computation {case}."
    assert got.requires_grad, \
        f"The output carries no gradient {case}: is the whole forward run under torch.no_grad(), or the result detached?"
    got.backward()
    assert _close(linear.weight.grad, weight_grad) and _close(linear.bias.grad, bias_grad), \
        f"The linear layer's gradient differs from the specified computation's {case}: both uses of the layer must " \
        "reach backward; is one of them run under torch.no_grad() or detached?"

# W = 0 and a layer with weight diag(3, -1): relu(0 + 1) = [1, 1], then [3, -1]. The sum of absolute
# values is 4, then 2, then 1, which is not greater than 1: halved twice, the output is (3 - 1) / 4 = 0.5.
_signs = FixedHiddenMLP(2)
_weight, _linear = _parts(_signs)
with torch.no_grad():
    _weight.zero_()
    _linear.weight.copy_(torch.diag(torch.tensor([3.0, -1.0])))
    _linear.bias.zero_()
_out = _signs(torch.tensor([[5.0, -3.0]])).item()
_hints = {
    1.0: ": the loop tests the absolute value of the sum (X.sum().abs(): 2, then 1) instead of the sum of absolute values (X.abs().sum()).",
    2.0: ": nothing was halved; is the while-loop there?",
    0.25: ": it halved once more at exactly 1; halve only while the sum is greater than 1.",
}
assert _out == 0.5, \
    f"With [3, -1] before the loop, halving while the sum of absolute values (4, then 2, then 1) is greater than 1 gives 0.5, got {_out}" + \
    _hints.get(_out, ".")
_runs = []
_linear.register_forward_hook(lambda module, args, output: _runs.append(module))
_signs(torch.rand(3, 2))
assert len(_runs) == 2, \
    f"A forward hook on the linear layer ran {len(_runs)} times in one forward pass instead of twice: apply the layer by calling it, " \
    "self.linear(X); self.linear.forward(X), or F.linear with its weight, skips its hooks."
_check(_net, _X, "on the first example")
torch.manual_seed(6)
_net = FixedHiddenMLP(7)
_X = torch.rand(3, 7) * 10
_y = _net(_X)
assert abs(_y.item()) <= 1 + 1e-6, "After the loop the absolute sum is at most 1: is the while-loop there?"
assert torch.equal(_net(_X), _y), "Two calls on the same input should agree: is the constant drawn in forward?"
_check(_net, _X, "for in_features=7")
_big = FixedHiddenMLP(30)
_check(_big, torch.rand(4, 30) * 100, "on a large input")
# W = 0 and the identity layer: relu(0 + 1) = [1, 1], absolute sum 2, halved once to [0.5, 0.5],
# whose absolute sum is exactly 1, not greater: the loop stops and the output is 1.0.
_edge = FixedHiddenMLP(2)
_weight, _linear = _parts(_edge)
with torch.no_grad():
    _weight.zero_()
    _linear.weight.copy_(torch.eye(2))
    _linear.bias.zero_()
_out = _edge(torch.tensor([[5.0, -3.0]])).item()
assert _out == 1.0, \
    f"When the absolute sum is exactly 1 the loop should stop (halve only while it is greater than 1), got {_out} instead of 1.0."

_X = torch.rand(4, 30) * 100
torch.manual_seed(9)
_here = FixedHiddenMLP(30)(_X)
torch.manual_seed(9)  # the simulated GPU draws from the CPU's generator: the same net, on the GPU
with _simulated_gpu() as _gpu:  # the net and its input on a GPU, simulated by the set-up cell with its rules
    with torch.device(_gpu):
        _on_gpu = FixedHiddenMLP(30)
    _away = _on_gpu(_X.to(_gpu))
assert _away.device == _gpu and torch.allclose(_away.as_subclass(torch.Tensor), _here, rtol=1e-4, atol=1e-6), \
    "For a net and an input on a GPU the output should stay on the GPU, with the CPU's value: does forward move a " \
    "result to the CPU (.cpu()), or make a tensor on the CPU?"
### END HIDDEN TESTS

# %% tests grade_id="test_FixedHiddenMLP_buffer" points=1
# The constant is a buffer: not trained, saved in the state_dict, moved by .to().
torch.manual_seed(5)
_net = FixedHiddenMLP()
assert len(list(_net.buffers())) == 1 and list(_net.buffers())[0].shape == (20, 20), \
    "Expected one (20, 20) buffer: register the constant weight with register_buffer."
assert len(list(_net.parameters())) == 2, \
    "Only the linear layer's weight and bias should be parameters: is the constant an nn.Parameter, or are there two linear layers?"
assert all(name in _net.state_dict() for name, _ in _net.named_buffers()), \
    "The constant weight is missing from the state_dict, so a saved model would lose it: register a persistent buffer (no persistent=False)."
_net.to(torch.float64)
try:
    _y64, _error = _net(torch.rand(2, 20, dtype=torch.float64)), ""
except RuntimeError as _e:
    _y64, _error = None, f" (it raised: {_e})"
assert _y64 is not None and _y64.dtype == torch.float64, \
    f"After net.to(torch.float64), forward on a float64 input should run in float64{_error}: does forward use a tensor that .to() does not convert, such as a plain attribute kept next to the buffer?"
### BEGIN HIDDEN TESTS
torch.manual_seed(6)
_net = FixedHiddenMLP(7)
assert list(_net.buffers())[0].shape == (7, 7), "The constant weight should be (in_features, in_features)."
assert [name for name, _ in _net.named_buffers() if name in _net.state_dict()] != [], \
    "The constant weight should be saved in the state_dict (a persistent buffer)."
_net(torch.rand(3, 7) * 10).backward()
(_lin,) = [m for m in _net.modules() if isinstance(m, nn.Linear)]
assert _lin.weight.grad is not None, "Gradients should reach the linear layer."
assert not list(_net.buffers())[0].requires_grad, "The constant weight must not require gradients."
_net.to(torch.float64)
assert list(_net.buffers())[0].dtype == torch.float64, ".to() should convert the constant too: it must be a buffer."
_other = FixedHiddenMLP(7)
_net.load_state_dict(_other.state_dict())
_X = torch.rand(3, 7) * 10
# (a forward that draws its constant anew is test_FixedHiddenMLP's to fail, not this clause's)
assert not torch.equal(_other(_X), _other(_X)) or torch.allclose(_net(_X.double()).float(), _other(_X), rtol=1e-4, atol=1e-6), \
    "After load_state_dict, forward should use the loaded constant: does forward read a tensor other than the registered buffer (a plain attribute that .to() left behind)?"
with _simulated_gpu() as _gpu, torch.device(_gpu):  # a default device: a GPU, simulated by the set-up cell
    try:
        _on_gpu, _error = FixedHiddenMLP(7), ""
        _on_gpu(torch.rand(3, 7) * 10)
    except (RuntimeError, TypeError) as _e:
        _on_gpu, _error = None, f" (it raised: {_e})"
assert _on_gpu is not None and all(t.device == _gpu for t in [*_on_gpu.buffers(), *_on_gpu.parameters()]), \
    f"Built under `with torch.device(gpu)`, the constant and the layer should be made on that GPU and run there{_error}: does __init__ move something to the CPU?"
_W = list(FixedHiddenMLP(50).buffers())[0]
assert bool((_W >= 0).all() and (_W < 1).all()), \
    "The constant weight should be drawn with torch.rand, uniform on [0, 1); some values fall outside (torch.randn?)."
# 2500 draws of U(0, 1): the mean has a standard error of 0.006 and the std one of 0.003.
assert abs(_W.mean().item() - 0.5) < 0.05 and abs(_W.std().item() - 12 ** -0.5) < 0.03, \
    f"The constant weight should be uniform on [0, 1) (mean 0.5, std 0.29), got mean {_W.mean().item():.3f} and " \
    f"std {_W.std().item():.3f}: draw it with torch.rand, not zeros or a constant."
torch.manual_seed(7)
_a = FixedHiddenMLP(5)
_after = [torch.rand(1)]
torch.manual_seed(8)
_b = FixedHiddenMLP(5)
_after.append(torch.rand(1))
assert not torch.equal(list(_a.buffers())[0], list(_b.buffers())[0]) and not torch.equal(*_after), \
    "Two FixedHiddenMLPs built after different seeds got the same constant, or torch's random numbers restart after " \
    "building one: draw from torch's generator as it stands, set no seed in __init__."
### END HIDDEN TESTS

# %% [markdown]
# ## 5. In your own words
#
# A container keeps its child modules in a plain Python list, `self.layers =
# [nn.Linear(4, 4), nn.ReLU()]`, and its `forward` loops over that list. The
# forward pass works. What goes wrong, and when would you notice? Name at least
# two consequences.

# %% manual [markdown] grade_id="plain_list_answer" points=2
# `nn.Module` only registers modules assigned directly as attributes (or added
# with `add_module`); a list hides them. What follows depends on whether the
# model registers anything else.
#
# - If every layer sits in the list, `parameters()` is empty and you notice at
#   once: `torch.optim.SGD(net.parameters(), lr=0.1)` raises
#   `ValueError: optimizer got an empty parameter list`.
# - If other layers are registered (say a head assigned as an attribute), the
#   optimizer is built from those alone and training runs without an error;
#   the loss may even fall, but the hidden layers never change. You notice
#   late: when you count or inspect the parameters, or when results stay poor.
#
# The listed layers are also missing from `state_dict()`, so a saved and
# reloaded model comes back with fresh random layers (you notice when its
# accuracy collapses after loading); `.to(device)` and `.double()` skip them,
# so on a GPU the first forward pass fails with a device-mismatch error;
# `print(net)` does not show them, and `net.train()`/`net.eval()` do not reach
# their dropout or batch-norm layers. Use `nn.ModuleList` or `add_module`.

# %% [markdown]
# ## Summary
#
# - Registration is what makes a module part of a model: attributes,
#   `add_module`, `nn.ModuleList`/`nn.ModuleDict`, never a plain list.
# - `forward` is ordinary Python: branches, loops and constants are allowed.
# - Constants that belong to a model are buffers: saved and moved, not trained.
# - A factory called once per layer gives independent layers; one object
#   repeated gives shared weights.
