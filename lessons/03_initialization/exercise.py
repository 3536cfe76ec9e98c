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
# # Exercise 3: Parameter initialization
#
# Four functions to write and one question to answer. Write your code where it
# says `YOUR CODE HERE` (delete the `raise NotImplementedError()` line), then run
# the test cell under it: silence means the visible checks pass. When grading,
# more checks of the same behaviour run on other inputs, so make the code right,
# not just the examples.
#
# Several tests are statistical: they draw many random numbers and compare
# proportions and spreads with generous margins. A correct answer fails them
# with a probability below 1e-12, and the wrong distributions students usually
# write miss the margins by far. They check the features of a distribution
# that matter here, not every detail, so passing them is strong evidence, not
# a proof, that a distribution is right.
#
# Each requirement the tests check ends with its name in brackets, such as
# `[clause call_module]`: a test that fails is about one of them.
#
# Use only `torch`, the standard library, `numpy` and `matplotlib`.

# %%
import math

import torch
from torch import nn

_ = torch.manual_seed(0)

# %% [markdown]
# ## Set-up for the tests (run it; no need to read it)
#
# The next cell defines `_simulated_gpu()`, which lets the tests check your code
# on a GPU that the CPU plays, with a real GPU's rules, on any machine. In
# JupyterLab its code is folded: run it, and click its left edge to unfold it.

# %% jupyter={"source_hidden": true}
# include: simulated_gpu.py

# %% [markdown]
# ## 1. A small normal initializer
#
# Write `init_normal(m)`, meant for `net.apply(init_normal)`: if `m` is an
# `nn.Linear`, fill its weight with samples from N(0, 0.01²) [clause normal_std] (standard deviation
# 0.01) and set its bias to zero, [clause bias_zero] **in place** (the layer keeps its parameter
# objects, so an optimizer built before still trains them); [clause in_place] leave every other
# kind of module untouched. [clause only_linear]
# Some `nn.Linear` layers are built with `bias=False`: they have no bias to zero. [clause no_bias]
# Draw from torch's generator as it stands (set no seed inside): each layer gets
# its own values, and the caller's random numbers go on where they were. [clause no_seed]

# %% answer grade_id="init_normal"
def init_normal(m):
    ### BEGIN SOLUTION
    if isinstance(m, nn.Linear):
        nn.init.normal_(m.weight, mean=0.0, std=0.01)
        if m.bias is not None:
            nn.init.zeros_(m.bias)
    ### END SOLUTION

# %% tests grade_id="test_init_normal" points=2
# Bounds: 10**6 weights from N(0, 0.01**2). The sample std has a standard error of
# 0.01 / sqrt(2 * 10**6) = 7e-6 and the mean one of 0.01 / 1000 = 1e-5, so the
# margins 5e-4 (std) and 2e-4 (mean) are 20+ standard errors: a correct answer
# never fails. Wrong scales are far off: std 1e-4 (variance passed as std),
# std 1 or mean 0.01 (arguments swapped), the default init's std 0.018.
# The share of |w| < 0.01 is 0.683 for a normal law and 0.577 for a uniform one
# of the same std; its standard error is 5e-4, the margin 0.01.
torch.manual_seed(10)
_net = nn.Sequential(nn.Linear(1000, 1000), nn.ReLU(), nn.Linear(1000, 10))
_params = [_net[0].weight, _net[0].bias]
_net.apply(init_normal)
assert _net[0].weight is _params[0] and _net[0].bias is _params[1], \
    "init_normal replaced the layer's weight or bias with a new tensor: fill the existing parameters in place (nn.init.normal_, nn.init.zeros_), so an optimizer built earlier still trains them."
_w = _net[0].weight.detach()
assert abs(_w.std().item() - 0.01) < 5e-4, \
    f"The weights' std is {_w.std().item():.4g}, not 0.01: pass std=0.01 (not the variance 0.01**2, nor as the mean)."
assert abs(_w.mean().item()) < 2e-4, f"The weights' mean is {_w.mean().item():.4g}, not 0: is the mean set to 0?"
assert abs((_w.abs() < 0.01).float().mean().item() - 0.6827) < 0.01, \
    "The weights do not look normal (68% within one std): use a normal, not a uniform, distribution."
assert not _net[0].bias.any() and not _net[2].bias.any(), "The biases should be exactly zero."
assert abs(_net[2].weight.std().item() - 0.01) < 1e-3, "Every nn.Linear in the net should be initialized."
_plain = nn.Sequential(nn.Linear(20, 30, bias=False), nn.LayerNorm(30))
_norm_before = {name: t.clone() for name, t in _plain[1].state_dict().items()}
try:
    _plain.apply(init_normal)
except (AttributeError, TypeError) as _error:
    raise AssertionError("init_normal crashed on nn.Linear(..., bias=False): check m.bias is not None first.") from _error
assert all(torch.equal(t, _norm_before[name]) for name, t in _plain[1].state_dict().items()), \
    "The LayerNorm changed, but only nn.Linear layers should be touched: check the module type first."
### BEGIN HIDDEN TESTS
torch.manual_seed(11)
_net = nn.Sequential(nn.Conv1d(3, 8, 5), nn.BatchNorm1d(8), nn.ReLU(), nn.Flatten(),
                     nn.Linear(500, 400, bias=False), nn.LayerNorm(400))
_before = {name: t.clone() for name, t in _net.state_dict().items()}
try:
    _net.apply(init_normal)
except (AttributeError, TypeError) as _error:
    raise AssertionError("init_normal crashed on nn.Linear(..., bias=False): check m.bias is not None first.") from _error
_after = _net.state_dict()
for _name in ["0.weight", "0.bias", "1.weight", "1.bias", "1.running_mean", "5.weight", "5.bias"]:
    assert torch.equal(_after[_name], _before[_name]), \
        f"{_name} changed, but only nn.Linear layers should be touched: check the module type first."
assert abs(_net[4].weight.std().item() - 0.01) < 5e-4 and abs(_net[4].weight.mean().item()) < 2e-4, \
    "A Linear without bias should still get N(0, 0.01**2) weights."
_single = nn.Linear(300, 400)
init_normal(_single)
assert abs(_single.weight.std().item() - 0.01) < 5e-4 and not _single.bias.any(), \
    "Called directly on one nn.Linear, init_normal should initialize it."
assert _single.weight.is_leaf and _single.weight.requires_grad, \
    "After init the weight should still be a trainable leaf parameter."
_layer = nn.Linear(200, 300)
_held = torch.optim.SGD(_layer.parameters(), lr=0.1).param_groups[0]["params"]  # built before init
_layer.apply(init_normal)
assert abs(_held[0].std().item() - 0.01) < 1e-3 and not _held[1].any(), \
    "An optimizer built before init_normal still holds the old values: change the parameters in place, do not assign new ones."
_text = nn.Sequential(nn.Embedding(300, 400), nn.Linear(400, 300))  # an embedding's weight is 2-D, like a Linear's
_table = _text[0].weight.detach().clone()
_text.apply(init_normal)
assert torch.equal(_text[0].weight, _table), \
    "An nn.Embedding's weight changed: it is 2-D like a Linear's, but only nn.Linear layers should be touched, so " \
    "check the module's type (isinstance(m, nn.Linear)), not the shape of its weight."
assert abs(_text[1].weight.std().item() - 0.01) < 1e-3, "The nn.Linear after an nn.Embedding should be initialized too."
# torch's global generator: init_normal draws from it and leaves it running; a seed set inside would
# give every layer of a shape the same weights and restart everyone's random numbers at each call.
torch.manual_seed(12)
_a, _b = nn.Linear(30, 30), nn.Linear(30, 30)
_a.apply(init_normal)
_b.apply(init_normal)
assert not torch.equal(_a.weight, _b.weight), \
    "Two layers of the same shape got the same weights: init_normal should draw fresh values from torch's " \
    "generator as it runs, not set a seed (torch.manual_seed) inside."
_after = []
for _seed in (13, 14):
    torch.manual_seed(_seed)
    init_normal(nn.Linear(5, 5))
    _after.append(torch.rand(3))
assert not torch.equal(*_after), \
    "After init_normal, torch's random numbers no longer depend on the seed set before it: do not reseed the " \
    "global generator (torch.manual_seed) inside init_normal."
### END HIDDEN TESTS

# %% [markdown]
# ## 2. A strange distribution, written by hand
#
# Write `weird_init_(tensor)`. It changes `tensor` **in place** [clause in_place] so that each
# entry, independently, is [clause independent]
#
# - uniform on [5, 10] with probability 1/4,
# - exactly 0 with probability 1/2,
# - uniform on [-10, -5] with probability 1/4, [clause distribution]
#
# and returns the same tensor (on whatever device it lives: a tensor on a GPU
# takes part in an operation only with tensors on that GPU (0-d ones aside), so make what you
# compute from it there, e.g. `torch.rand_like`). [clause in_place_device] The change must not
# be recorded by autograd, so that it also works on a parameter (`nn.Parameter`)
# that requires gradients. [clause in_place_no_autograd]
#
# Hint: there is a way with one uniform draw and one multiplication.

# %% answer grade_id="weird_init_"
def weird_init_(tensor):
    ### BEGIN SOLUTION
    with torch.no_grad():
        tensor.uniform_(-10, 10)
        tensor.mul_(tensor.abs() >= 5)
    return tensor
    ### END SOLUTION

# %% tests grade_id="test_weird_init_" points=2
# Bounds: n = 200 000 entries. Each share below is a binomial proportion whose
# standard error is at most sqrt(0.25 / n) = 0.0011; the margin 0.01 is 9
# standard errors, so a correct answer fails with probability below 1e-18 (and
# the seed makes the run repeatable). Every wrong answer we know misses by 0.25
# or more: U(5, 10) with probability 1/2, no negative side (3/4 zeros), no
# zeroing (no zeros at all), or the inside (-5, 5) kept instead of the outside.
torch.manual_seed(20)
_t = torch.empty(400, 500)
_out = weird_init_(_t)
_t = _out if isinstance(_out, torch.Tensor) else _t  # the values it made (in place or not: the next cell checks)
_ok = (_t == 0) | ((_t.abs() >= 5) & (_t.abs() <= 10))
assert _ok.all(), \
    "Every entry should be 0 or have 5 <= |x| <= 10: is the mask keeping |x| >= 5, and is the range (-10, 10)?"
assert abs((_t == 0).float().mean().item() - 0.5) < 0.01, \
    f"{(_t == 0).float().mean().item():.3f} of the entries are 0, expected 1/2."
assert abs((_t > 0).float().mean().item() - 0.25) < 0.01, \
    f"{(_t > 0).float().mean().item():.3f} of the entries are in [5, 10], expected 1/4."
assert abs((_t < 0).float().mean().item() - 0.25) < 0.01, \
    f"{(_t < 0).float().mean().item():.3f} of the entries are in [-10, -5], expected 1/4."
### BEGIN HIDDEN TESTS
# The positive part should be uniform on [5, 10]: about 50 000 values with std
# 5 / sqrt(12) = 1.44, so the mean has a standard error of 0.0065 (margin 0.05)
# and the share below 7.5 one of 0.0022 (margin 0.02). Each fifth of [5, 10]
# should hold a fifth of the values: standard error 0.0018, margin 0.02, while
# the mean of two uniforms on [5, 10] puts 0.08 in the first fifth and
# N(7.5, 1.25**2) clamped to [5, 10] puts 0.115 there.
# The negative part is checked the same way. Zero positions should not
# follow a pattern: zero shares over halves of 100 000 entries have standard
# error 0.0016 (margin 0.015).
_pos, _neg = _t[_t > 0], _t[_t < 0]
assert abs(_pos.mean().item() - 7.5) < 0.05 and abs(_neg.mean().item() + 7.5) < 0.05, \
    "The non-zero values should be uniform on [5, 10] and [-10, -5] (means 7.5 and -7.5)."
assert abs((_pos < 7.5).float().mean().item() - 0.5) < 0.02 and abs((_neg > -7.5).float().mean().item() - 0.5) < 0.02, \
    "The non-zero values should be spread uniformly over [5, 10] and [-10, -5]."
for _part in (_pos, -_neg):
    _fifths = torch.histc(_part.float(), bins=5, min=5.0, max=10.0) / _part.numel()
    assert bool(((_fifths - 0.2).abs() < 0.02).all()), \
        "The non-zero values should be uniform on [5, 10] and [-10, -5], a fifth of them in each fifth of the " \
        f"range; the shares are {[round(_f, 3) for _f in _fifths.tolist()]}: draw them with one uniform law."
assert _pos.unique().numel() > 1000, "The non-zero values should be continuous, not a few fixed numbers."
# Each entry picks its part (positive, zero, negative) on its own: not by its row, its column, its
# neighbours or its position. Two independent entries land in the same part with probability
# 1/16 + 1/4 + 1/16 = 0.375; over 200 000 pairs (the same entry in two calls with other seeds, or
# neighbours) the standard error is below 0.0015 and the margin 0.03 is 20 of them. A fixed pattern
# agrees with itself across calls every time, and a rule by position (every fourth entry, a quarter
# of the rows...) gives neighbours that agree 0, 1/4 or every time. Each row (500 entries) and each
# column (400) should hold about half zeros: by Hoeffding's bound a share 0.25 away from 1/2 has
# probability below 1e-19 for a correct answer, while a rule by row or column gives 0 or 1.
_kind = torch.sign(_t)  # 1, 0 or -1: the part of each entry
torch.manual_seed(22)
_t2 = torch.empty(400, 500)
_t2 = _out if isinstance(_out := weird_init_(_t2), torch.Tensor) else _t2
for _what, _same in (("neighbours in a row", _kind[:, 1:] == _kind[:, :-1]),
                     ("neighbours in a column", _kind[1:] == _kind[:-1]),
                     ("the same entry in two calls", _kind == torch.sign(_t2))):
    _share = _same.float().mean().item()
    assert abs(_share - 0.375) < 0.03, \
        f"Each entry's part (positive, zero or negative) should be drawn at random on its own, but for {_what} " \
        f"the part is the same {_share:.3f} of the time, not 0.375: is a fixed pattern of positions, rows or " \
        "columns (or a seed set inside weird_init_) deciding it?"
_zero = (_t == 0).float()
_shares = torch.cat([_zero.mean(dim=1), _zero.mean(dim=0)])  # each row's, then each column's share of zeros
_worst = _shares[(_shares - 0.5).abs().argmax()].item()
assert abs(_worst - 0.5) < 0.25, \
    f"A row or column of a (400, 500) tensor is {_worst:.2f} zeros instead of about half: decide zero or not " \
    "for each entry at random, not by its row or column."
_z = (_t == 0).flatten().float()
assert abs(_z[0::2].mean().item() - 0.5) < 0.015 and abs(_z[: _z.numel() // 2].mean().item() - 0.5) < 0.015, \
    "Which entries are zero should be random, not a fixed pattern."
torch.manual_seed(21)
_d = torch.empty(20, 50, 200, dtype=torch.float64)
_d = _out if isinstance(_out := weird_init_(_d), torch.Tensor) else _d
assert abs((_d == 0).double().mean().item() - 0.5) < 0.01, "A 3-D tensor should also get half zeros."
_again = torch.empty(20, 50, 200, dtype=torch.float64)
_again = _out if isinstance(_out := weird_init_(_again), torch.Tensor) else _again
assert not torch.equal(_again, _d), "Two calls should give different random values: do not reseed inside weird_init_."
### END HIDDEN TESTS

# %% tests grade_id="test_weird_init__in_place" points=1
# In place, returned, and not recorded by autograd (on a parameter, as net.apply would give it).
_t = torch.ones(40, 50)  # 1 is never a value weird_init_ makes: an entry left as it was shows
assert weird_init_(_t) is _t, "weird_init_ should change the tensor in place and return that same tensor (not None, not a copy)."
assert not bool((_t == 1).any()), "The tensor itself should hold the new values: change it in place."
_p = nn.Parameter(torch.empty(300, 300))
try:
    _r = weird_init_(_p)
except RuntimeError as _error:
    raise AssertionError("weird_init_ fails on an nn.Parameter: do the in-place changes inside torch.no_grad().") from _error
assert _r is _p and _p.is_leaf and _p.grad_fn is None and _p.requires_grad, \
    "On a parameter, weird_init_ should leave a trainable leaf that autograd did not record: use torch.no_grad()."
### BEGIN HIDDEN TESTS
_d = torch.ones(20, 50, 20, dtype=torch.float64)
assert weird_init_(_d) is _d and _d.dtype == torch.float64 and _d.shape == (20, 50, 20), \
    "weird_init_ should work in place on any shape and dtype (here a 3-D float64 tensor)."
assert not bool((_d == 1).any()), "A 3-D float64 tensor should be changed in place too."
_q = nn.Parameter(torch.empty(7, 3, dtype=torch.float64))
assert weird_init_(_q) is _q and _q.grad_fn is None and _q.requires_grad, \
    "A float64 parameter should stay a trainable leaf as well: use torch.no_grad()."
_again = torch.ones(40, 50)  # a second tensor that looks like the first: changed in place and returned too
assert weird_init_(_again) is _again and not bool((_again == 1).any()), \
    "A second call, on another tensor of the same shape and values, should change and return that tensor too."
# A parameter on a GPU, which the CPU plays with a real GPU's rules (the set-up cell's _simulated_gpu).
torch.manual_seed(23)
with _simulated_gpu() as _gpu:
    _m = nn.Parameter(torch.ones(300, 40, device=_gpu))  # 1 is never a value weird_init_ makes
    try:
        _r = weird_init_(_m)
    except (RuntimeError, TypeError) as _error:
        raise AssertionError(f"weird_init_ failed on a parameter on a GPU ({_error}): make every tensor it uses "
                             "where the parameter lives (torch.rand_like(tensor), tensor.abs() >= 5), since an "
                             "operation on a GPU tensor cannot take a CPU tensor (only a copy_ can).") from _error
assert _r is _m and _m.device == _gpu and _m.requires_grad and _m.grad_fn is None, \
    "On a GPU weird_init_ should change the parameter where it lives and return that same parameter, not a copy " \
    "moved to the CPU."
assert not bool((_m == 1).any()), "On a GPU the parameter itself should hold the new values: change it in place."
### END HIDDEN TESTS

# %% [markdown]
# ## 3. Using it on a net
#
# Write `my_init(m)`, meant for `net.apply(my_init)`: if `m` is an `nn.Linear`,
# apply your `weird_init_` to its weight [clause weight] (call it, do not copy its code). [clause calls_weird_init] Other
# modules stay untouched. [clause only_linear]

# %% answer grade_id="my_init"
def my_init(m):
    ### BEGIN SOLUTION
    if isinstance(m, nn.Linear):
        weird_init_(m.weight)
    ### END SOLUTION

# %% tests grade_id="test_my_init" points=1
# These tests grade my_init alone (weird_init_ has its own tests above). While they
# run, the weird_init_ that my_init calls is a stand-in that marks the tensor it is
# given, so a weird_init_ that is wrong, or never returns, costs only its own item.
# An answer that reaches weird_init_ another way (a default argument bound to it)
# is compared instead with what your own weird_init_ makes of a copy of each weight:
# a two-sample Kolmogorov-Smirnov distance, the largest gap between the two
# empirical CDFs. With at least 18 000 entries on each side the distance between
# two samples of one distribution stays below 0.05 except with probability under
# 1e-19, while every wrong answer we know is 0.25 or more away. The tests call
# my_init under torch.no_grad(), so a weird_init_ that forgets no_grad costs only
# its own item.
_MARK = 0.125  # what the stand-in writes: no default initialization gives a whole tensor of it
_given = []


def _stand_in(tensor):
    """weird_init_ while these tests run: marks the tensor it gets, in place."""
    _given.append(tensor)
    with torch.no_grad():
        return tensor.fill_(_MARK)


def _with_stand_in(call):
    """Run call() under torch.no_grad() with the stand-in as my_init's weird_init_; whether it was used."""
    _given.clear()
    names = getattr(my_init, "__globals__", {})
    own = names.get("weird_init_")
    if own is not None:
        names["weird_init_"] = _stand_in
    try:
        with torch.no_grad():
            call()
    finally:
        if own is not None:
            names["weird_init_"] = own
    return bool(_given)


def _ks_distance(a, b):
    """Largest gap between the empirical CDFs of the entries of a and b."""
    a, b = a.detach().flatten().double().sort().values, b.detach().flatten().double().sort().values
    points = torch.cat([a, b])
    cdf_a = torch.searchsorted(a, points, right=True) / a.numel()
    cdf_b = torch.searchsorted(b, points, right=True) / b.numel()
    return (cdf_a - cdf_b).abs().max().item()


def _initialized(weight, before, stood_in):
    """Whether my_init gave `weight` (which held `before`) to weird_init_: marked by the stand-in,
    or, when my_init reached weird_init_ another way, distributed as weird_init_ makes a copy of it."""
    if stood_in:
        return bool((weight.detach() == _MARK).all())
    copy = before.clone()
    with torch.no_grad():
        weird_init_(copy)
    return _ks_distance(weight, copy) < 0.05


torch.manual_seed(30)
_net = nn.Sequential(nn.Linear(120, 150), nn.ReLU(),
                     nn.Sequential(nn.Linear(150, 140), nn.BatchNorm1d(140)), nn.Linear(140, 130))
_linears = [_net[0], _net[2][0], _net[3]]
_before = [m.weight.detach().clone() for m in _linears]
_bn = _net[2][1].weight.detach().clone()
_biases = [m.bias.detach().clone() for m in _linears]
_weights = [m.weight for m in _linears]
_stood_in = _with_stand_in(lambda: _net.apply(my_init))
assert all(m.weight is w for m, w in zip(_linears, _weights)), \
    "my_init replaced a weight with a new Parameter: pass the layer's own weight to weird_init_, which changes it in place."
_done = [_initialized(m.weight, b, _stood_in) for m, b in zip(_linears, _before)]
assert _done[0] and _done[2], \
    "The nn.Linear weights were not initialized by weird_init_: call weird_init_(m.weight) when m is an nn.Linear."
assert _done[1], \
    "The Linear inside the nested block was not initialized: handle the module you are given, net.apply visits the rest."
assert torch.equal(_net[2][1].weight, _bn), "The BatchNorm weight changed: only nn.Linear modules should be touched."
assert all(torch.equal(m.bias, b) for m, b in zip(_linears, _biases)), "Only the weights should change, not the biases."
### BEGIN HIDDEN TESTS
torch.manual_seed(31)
_net = nn.Sequential(nn.Conv1d(2, 4, 3), nn.Flatten(), nn.Linear(200, 100, bias=False), nn.LayerNorm(100))
_conv = _net[0].weight.detach().clone()
_norm = _net[3].weight.detach().clone()
_before = _net[2].weight.detach().clone()
_param = _net[2].weight
_stood_in = _with_stand_in(lambda: _net.apply(my_init))
assert torch.equal(_net[0].weight, _conv), "A Conv1d weight changed: only nn.Linear modules should be touched."
assert torch.equal(_net[3].weight, _norm), "A LayerNorm weight changed: only nn.Linear modules should be touched."
assert _initialized(_net[2].weight, _before, _stood_in), "A Linear without bias should get weird_init_ on its weight too."
assert _net[2].weight is _param and isinstance(_param, nn.Parameter), \
    "The weight should stay the layer's own parameter: change it in place."
_lone = nn.Linear(150, 150)
_before = _lone.weight.detach().clone()
_stood_in = _with_stand_in(lambda: my_init(_lone))
assert _initialized(_lone.weight, _before, _stood_in), \
    "Called directly on one nn.Linear, my_init should initialize its weight."
_text = nn.Sequential(nn.Embedding(200, 100), nn.Linear(100, 200))  # an embedding's weight is 2-D, like a Linear's
_table = _text[0].weight.detach().clone()
_before = _text[1].weight.detach().clone()
_stood_in = _with_stand_in(lambda: _text.apply(my_init))
assert torch.equal(_text[0].weight, _table), \
    "An nn.Embedding's weight changed: it is 2-D like a Linear's, but only nn.Linear modules should be touched, so " \
    "check the module's type (isinstance(m, nn.Linear)), not the shape of its weight."
assert _initialized(_text[1].weight, _before, _stood_in), "The nn.Linear after an nn.Embedding should be initialized too."
### END HIDDEN TESTS

# %% [markdown]
# ## 4. Watching activations
#
# Write `activation_stds(net, x)`: run `net` on `x` and return a list with the
# standard deviation of the output [clause outputs] of every `nn.Linear` inside `net` (at any
# depth), [clause every_linear] in the order in which they run during the forward pass, [clause order] as plain
# numbers, not tensors [clause plain_numbers] (Python floats from `.item()`; numpy floats do too, and a
# tuple does as well as a list). The tests check that the forward pass records no
# autograd graph (run it under `torch.no_grad()`) [clause no_trace] and that `net` is left as you
# found it (no hooks left on it). [clause no_trace_hooks]
#
# Hint: a forward hook (`module.register_forward_hook(fn)`) sees each module's
# output; it returns a handle whose `remove()` takes the hook off again.

# %% answer grade_id="activation_stds"
def activation_stds(net, x):
    ### BEGIN SOLUTION
    stds = []

    def record(module, inputs, output):
        stds.append(output.std().item())

    handles = [m.register_forward_hook(record) for m in net.modules() if isinstance(m, nn.Linear)]
    try:
        with torch.no_grad():
            net(x)
    finally:
        for handle in handles:
            handle.remove()
    return stds
    ### END SOLUTION

# %% tests grade_id="test_activation_stds" points=2
# Outputs have at least 4096 entries, so the sample and the population std
# differ by under 1.3e-4 relative; the tolerance 1e-3 accepts both.
import numbers


def _plain_numbers(values):
    """Python or numpy floats (numbers.Real), not tensors."""
    return all(isinstance(v, numbers.Real) and not isinstance(v, bool) for v in values)


def _close(got, expected):
    return len(got) == len(expected) and all(math.isclose(float(g), e, rel_tol=1e-3) for g, e in zip(got, expected))

torch.manual_seed(40)
_net = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 16))
_x = torch.randn(256, 32)
_got = activation_stds(_net, _x)
with torch.no_grad():
    _h1 = _net[0](_x)
    _h2 = _net[2](torch.relu(_h1))
    _h3 = _net[4](torch.relu(_h2))
_expected = [_h1.std().item(), _h2.std().item(), _h3.std().item()]
assert _got is not None and len(_got) == 3, \
    f"Expected 3 values (one per nn.Linear, not per module), got {None if _got is None else len(_got)}."
assert _close(_got, _expected), \
    f"Expected the stds of the linear layers' outputs {[round(e, 4) for e in _expected]}, got {_got}."
assert _plain_numbers(_got), \
    f"The values should be plain numbers such as Python floats (use .item()), got {sorted({type(v).__name__ for v in _got})}."

### BEGIN HIDDEN TESTS
torch.manual_seed(41)
_net = nn.Sequential(nn.Linear(16, 32), nn.Sequential(nn.ReLU(), nn.Linear(32, 32), nn.Tanh()), nn.Linear(32, 8))
_x = torch.randn(512, 16) * 3
with torch.no_grad():
    _h1 = _net[0](_x)
    _h2 = _net[1][1](torch.relu(_h1))
    _h3 = _net[2](torch.tanh(_h2))
assert _close(activation_stds(_net, _x), [_h1.std().item(), _h2.std().item(), _h3.std().item()]), \
    "A Linear nested inside a block should be found too: look at all modules (net.modules() or hooks), not only children."

class _Reversed(nn.Module):
    def __init__(self):
        super().__init__()
        self.late = nn.Linear(32, 16)   # registered first, runs second
        self.early = nn.Linear(24, 32)

    def forward(self, x):
        return self.late(torch.relu(self.early(x)))

_rev = _Reversed()
_x = torch.randn(300, 24)
with torch.no_grad():
    _h1 = _rev.early(_x)
    _h2 = _rev.late(torch.relu(_h1))
try:
    _got = activation_stds(_rev, _x)
except (RuntimeError, TypeError) as _error:
    raise AssertionError("activation_stds failed on a custom module: run net(x) itself and record outputs with hooks.") from _error
assert _close(_got, [_h1.std().item(), _h2.std().item()]), \
    "The values should follow the forward pass, not the order of registration: record outputs while net(x) runs."
assert _plain_numbers(_got), "Every value should be a plain number (a Python float, .item()), for a custom module too."
_lin = nn.Linear(64, 64)
_x = torch.randn(128, 64)
with torch.no_grad():
    _expected = [_lin(_x).std().item()]
assert _close(activation_stds(_lin, _x), _expected), "A single nn.Linear as the net should give one value."
assert _close(activation_stds(_lin, _x), _expected), "A second call should give the same single value."
_none = activation_stds(nn.Sequential(nn.ReLU(), nn.Tanh()), _x)
assert _none is not None and list(_none) == [], "A net without nn.Linear gives an empty list."
# Two nets of one architecture with other weights, on the same input: each gets its own values.
_twins = [nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 8)) for _ in range(2)]
_x = torch.randn(128, 64)
_stds = [activation_stds(_twin, _x) for _twin in _twins]
with torch.no_grad():
    _expected = [[_twin[0](_x).std().item(), _twin[2](torch.relu(_twin[0](_x))).std().item()] for _twin in _twins]
assert all(_close(_got, _want) for _got, _want in zip(_stds, _expected)), \
    "Two nets of the same architecture but other weights should each give their own stds: measure the net given, on every call."
# An in-place activation (torchvision's nets use nn.ReLU(inplace=True)) overwrites the Linear's output
# tensor itself once the forward pass goes on: only a std taken inside the hook sees the output.
torch.manual_seed(43)
_net = nn.Sequential(nn.Linear(20, 64), nn.ReLU(inplace=True), nn.Linear(64, 10))
_x = torch.randn(256, 20)
with torch.no_grad():
    _h1 = _net[0](_x)
    _h2 = _net[2](torch.relu(_h1))
assert _close(activation_stds(_net, _x), [_h1.std().item(), _h2.std().item()]), \
    "With nn.ReLU(inplace=True) after a Linear, the std should be the Linear's output as it came out: take the " \
    "std inside the hook, since a kept output tensor is overwritten in place by the activation afterwards."
### END HIDDEN TESTS

# %% tests grade_id="test_activation_stds_no_trace" points=1
# Measuring leaves no trace: no autograd graph recorded, no hook left on the net.
torch.manual_seed(42)
_net = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 4))
_x = torch.randn(64, 8)
_grad_enabled = []
_probe = _net[0].register_forward_hook(lambda m, i, o: _grad_enabled.append(torch.is_grad_enabled()))
activation_stds(_net, _x)
_probe.remove()
assert _grad_enabled, "The net's own forward pass never ran: call net(x), its layers' outputs are what we want."
assert not any(_grad_enabled), \
    "The forward pass recorded an autograd graph: run net(x) under torch.no_grad() (detaching afterwards is too late)."
assert all(len(m._forward_hooks) == 0 for m in _net.modules()), \
    "Hooks are left on the net: remove each one with the handle that register_forward_hook returned."
### BEGIN HIDDEN TESTS
class _Reversed(nn.Module):
    def __init__(self):
        super().__init__()
        self.late = nn.Linear(32, 16)   # registered first, runs second
        self.early = nn.Linear(24, 32)

    def forward(self, x):
        return self.late(torch.relu(self.early(x)))

_rev = _Reversed()
_x = torch.randn(300, 24)
try:
    activation_stds(_rev, _x)
except Exception:
    pass  # its values are the first tests cell's business; what it leaves behind is this one's
assert all(len(m._forward_hooks) == 0 for m in _rev.modules()), \
    "Hooks are left on the net: remove each one with the handle that register_forward_hook returned."
assert all(p.grad is None for p in _rev.parameters()), "activation_stds should not compute gradients."
_recording = []
_rev.early.register_forward_hook(lambda m, i, o: _recording.append(o.requires_grad))
try:
    activation_stds(_rev, _x)
except Exception:
    pass
assert not any(_recording), \
    "The outputs inside the forward pass still require grad, so a graph was recorded: use torch.no_grad()."
### END HIDDEN TESTS

# %% [markdown]
# ## 5. In your own words
#
# Pick one initializer from `torch.nn.init` that the lecture did not use (for
# example `sparse_`, `eye_` or `dirac_`). Say in two or three sentences what it
# does and in which situation you would choose it.

# %% manual [markdown] grade_id="initializer_answer" points=2
# Model answer (one of several): `dirac_` fills a convolution weight of shape
# `(out_channels, in_channels, *kernel)` with a 1 at the kernel's centre linking
# output channel `i` to input channel `i`, and 0 everywhere else, so the layer
# (with zero bias and `same` padding) returns its input unchanged; surplus output
# channels are zero. It is the convolutional `eye_`: choose it to start a deep
# convolutional stack or a newly inserted layer as the identity, so that adding
# the layer does not change what the network computes and training moves it
# away from the identity only as far as the loss asks. `sparse_` is another
# good answer: it draws each weight from `N(0, std**2)` and then zeroes a
# fraction `sparsity` of every column, giving each unit a few random inputs (an
# old recipe for deep and recurrent nets). Its `generator=` seeds the values
# only: the zeros' positions come from the global generator.

# %% [markdown]
# ## Summary
#
# - An initializer for `net.apply` checks the module type and fills tensors in
#   place with `nn.init` functions.
# - Your own distributions are built from simple draws and masks, in place,
#   under `torch.no_grad()`.
# - Forward hooks let you watch every layer's output without changing `forward`.
