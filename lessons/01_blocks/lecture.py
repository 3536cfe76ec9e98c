# ---
# jupyter:
#   jupytext:
#     notebook_metadata_filter: lesson
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
#   lesson:
#     gpu: false
#     title: Layers and blocks
# ---

# %% [markdown]
# # Lesson 1: Layers and blocks
#
# A *block* is anything that turns inputs into outputs and may hold parameters:
# a single layer, a group of layers, or a whole model. In PyTorch every block is
# an `nn.Module`, so the same few rules apply at every scale. This lesson builds
# blocks by hand until those rules are plain.

# %%
from collections import OrderedDict

import matplotlib.pyplot as plt
import torch
from torch import nn
from torch.nn import functional as F

# %% [markdown]
# ## A model from ready-made blocks
#
# `nn.Sequential` runs its children one after another. Here: 20 inputs, a
# hidden layer of 256 units with ReLU, and 10 outputs.

# %%
torch.manual_seed(0)
net = nn.Sequential(nn.Linear(20, 256), nn.ReLU(), nn.Linear(256, 10))
X = torch.rand(2, 20)
net(X).shape

# %% [markdown]
# `net(X)` does not call `forward` directly. It goes through
# `nn.Module.__call__`, which runs any registered hooks around `forward`. With
# no hooks the two give the same result:

# %%
torch.equal(net(X), net.forward(X))

# %% [markdown]
# Hooks are how other code attaches itself to a module without editing it:
# lazy layers (lesson 4) create their weights in a pre-hook, pruning
# (`torch.nn.utils.prune`) recomputes the masked weight in one before every
# call, and quantization tools record activations in hooks. A forward hook may
# even replace the output. Here one doubles it: `net(X)` runs the hook,
# `net.forward(X)` skips it silently. Always call the module.

# %%
def double_output(module, inputs, output):
    return 2 * output  # a forward hook that returns a value replaces the output


handle = net.register_forward_hook(double_output)
print("net(X) equals net.forward(X):    ", torch.equal(net(X), net.forward(X)))
print("net(X) equals 2 * net.forward(X):", torch.equal(net(X), 2 * net.forward(X)))
handle.remove()
print("after handle.remove():           ", torch.equal(net(X), net.forward(X)))

# %% [markdown]
# ## Writing a block
#
# A custom block needs two things: call `super().__init__()` first (it sets up
# the bookkeeping that registers children), and define `forward`. Layers
# assigned as attributes become children automatically.

# %%
class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.hidden = nn.Linear(20, 256)
        self.out = nn.Linear(256, 10)

    def forward(self, X):
        return self.out(F.relu(self.hidden(X)))


torch.manual_seed(0)
mlp = MLP()
mlp(X).shape

# %% [markdown]
# ## How children are registered
#
# Assigning an `nn.Module` to an attribute registers it: `nn.Module.__setattr__`
# sees a module and stores it in the block's `_modules` dictionary under the
# attribute's name. It does not call `add_module`, but for a new name the
# effect is the same. (For a name a plain attribute already holds they differ:
# assignment replaces the attribute, `add_module` raises `KeyError`.)
# `children()` yields the direct children; `named_children()` yields them with
# their names.

# %%
for name, child in mlp.named_children():
    print(name, "->", child)

# %% [markdown]
# `add_module(name, module)` registers a child under a name computed at run
# time, which is how containers build children in a loop.

# %%
block = nn.Module()
for i in range(3):
    block.add_module(f"layer{i}", nn.Linear(4, 4))
[name for name, _ in block.named_children()]

# %% [markdown]
# Not every string is a valid name. Dots separate the levels of a qualified
# name such as `layer0.weight`, so a name cannot contain one; it cannot be
# empty; and it cannot be an attribute the block already has (`forward`,
# `training`). Each of these raises `KeyError`. Spaces and digits are fine, and
# so is the name of an existing child: the new module silently replaces it.

# %%
for name in ["layer.3", "", "forward", "training"]:
    try:
        block.add_module(name, nn.Linear(4, 4))
    except KeyError as error:
        print(f"{name!r:10} KeyError: {error.args[0]}")
block.add_module("layer0", nn.Linear(4, 2))  # an existing child's name
print("'layer0' replaced:", block.layer0)

# %% [markdown]
# ## A sequential container from scratch
#
# A container is just a block whose `forward` runs its registered modules in
# order. This one takes modules positionally or as one `OrderedDict` of named
# modules. `forward`, `len` and indexing all read `self._modules.values()`, the
# registered *positions*, as `nn.Sequential` does. They do not use
# `self.children()`: it skips any module object it has already yielded, so a
# module registered at two positions (the same activation passed twice) would
# be run once and counted once.

# %%
class TinySequential(nn.Module):
    def __init__(self, *modules):
        super().__init__()
        if len(modules) == 1 and isinstance(modules[0], OrderedDict):
            pairs = modules[0].items()
        else:
            pairs = ((str(i), m) for i, m in enumerate(modules))
        for name, module in pairs:
            self.add_module(name, module)

    def forward(self, X):
        for module in self._modules.values():
            X = module(X)
        return X

    def __getitem__(self, i):
        return list(self._modules.values())[i]

    def __len__(self):
        return len(self._modules)


torch.manual_seed(0)
seq = TinySequential(OrderedDict(hidden=nn.Linear(20, 256), act=nn.ReLU(), out=nn.Linear(256, 10)))
print(seq(X).shape)
print(list(seq.state_dict())[:2])

# %% [markdown]
# Pass the same module twice and the difference shows. Here one `Linear` layer
# that adds 1 is used at two positions, so the input should grow by 2.
# `_modules` holds both positions; `children()` yields the layer once.

# %%
add_one = nn.Linear(1, 1)
with torch.no_grad():
    add_one.weight.fill_(1.0)
    add_one.bias.fill_(1.0)


class ChildrenLoop(TinySequential):
    """The mistake: forward and indexing walk children(), which yields each object once."""

    def forward(self, X):
        for module in self.children():
            X = module(X)
        return X

    def __getitem__(self, i):
        return list(self.children())[i]


zero = torch.zeros(1, 1)
right, wrong = TinySequential(add_one, add_one), ChildrenLoop(add_one, add_one)
print("0 through nn.Sequential     :", nn.Sequential(add_one, add_one)(zero).item())
print("0 through a _modules loop   :", right(zero).item())
print("0 through a children() loop :", wrong(zero).item())
print("len:", len(right), "| positions reachable by indexing:", [right[i] is add_one for i in range(len(right))])
try:
    wrong[1]
except IndexError:
    print("indexing through children(): position 1 of", len(wrong), "does not exist")

# %% [markdown]
# ## Lists and dicts of modules
#
# A plain Python list hides modules from PyTorch: their parameters are not
# found, saved or moved. `nn.ModuleList` and `nn.ModuleDict` are the registered
# versions of a list and a dict.

# %%
class Hidden(nn.Module):
    def __init__(self, registered):
        super().__init__()
        layers = [nn.Linear(8, 8) for _ in range(3)]
        self.layers = nn.ModuleList(layers) if registered else layers


print("plain list :", sum(p.numel() for p in Hidden(False).parameters()), "parameters")
print("ModuleList :", sum(p.numel() for p in Hidden(True).parameters()), "parameters")

# %%
heads = nn.ModuleDict({"classify": nn.Linear(8, 3), "regress": nn.Linear(8, 1)})
features = torch.ones(2, 8)
{name: tuple(head(features).shape) for name, head in heads.items()}

# %% [markdown]
# ## `forward` is ordinary Python
#
# Inside `forward` any Python works: loops, branches, constants. Calling one
# layer twice means both calls use the *same* weights. The loop below keeps
# halving the output until its absolute sum is at most 1, something no
# `nn.Sequential` can express.

# %%
class ReuseAndRescale(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(20, 20)

    def forward(self, X):
        X = F.relu(self.linear(X))
        X = self.linear(X)  # the same layer again: shared weights
        while X.abs().sum() > 1:
            X = X / 2
        return X.sum()


torch.manual_seed(0)
model = ReuseAndRescale()
print(model(X))
print("parameter tensors:", len(list(model.parameters())))

# %% [markdown]
# ## Constants: plain attribute or buffer?
#
# A constant tensor stored as a plain attribute is invisible to PyTorch.
# `register_buffer` makes it part of the model's state: it follows `.to()` and
# is saved in `state_dict`, yet it is not a parameter, so no optimizer trains it.

# %%
class WithConstants(nn.Module):
    def __init__(self):
        super().__init__()
        self.plain = torch.ones(3)
        self.register_buffer("scale", torch.ones(3))


m = WithConstants().to(torch.float64)
print("state_dict keys:", list(m.state_dict()))
print("plain dtype :", m.plain.dtype)
print("buffer dtype:", m.scale.dtype)
print("parameters  :", len(list(m.parameters())))

# %% [markdown]
# Two variants. A buffer registered with `persistent=False` still follows
# `.to()` but is left out of `state_dict`: use it for a value the constructor
# can rebuild (a mask, a table of positions), so checkpoints stay small and
# loading neither expects nor overwrites it. And since torch 2.5 a buffer can
# be declared by assignment, like a parameter: `self.name = nn.Buffer(tensor)`
# (with the same `persistent` keyword) does what `register_buffer` does, and
# the attribute then holds a plain tensor.

# %%
class BufferKinds(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("mask", torch.ones(3, 3).tril(), persistent=False)
        self.scale = nn.Buffer(torch.ones(3))  # the same as register_buffer("scale", ...)
        self.positions = nn.Buffer(torch.arange(3.0), persistent=False)


kinds = BufferKinds().to(torch.float64)
print("buffers         :", [name for name, _ in kinds.named_buffers()])
print("state_dict keys :", list(kinds.state_dict()))
print("dtypes after .to:", kinds.mask.dtype, kinds.positions.dtype, "| attribute type:", type(kinds.scale).__name__)

# %% [markdown]
# ## Nesting blocks
#
# Blocks compose: a block can hold containers that hold blocks. `print` shows
# the whole tree with each child's name.

# %%
class Nested(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 32), nn.ReLU())
        self.head = nn.Linear(32, 16)

    def forward(self, X):
        return self.head(self.body(X))


torch.manual_seed(0)
chimera = nn.Sequential(Nested(), nn.Linear(16, 20), MLP())
print(chimera(X).shape)
print(chimera)

# %% [markdown]
# ## The price of Python
#
# Every call of a tensor operation pays a fixed cost before any arithmetic:
# Python runs the call and wraps the result in a Python object, PyTorch's
# dispatcher picks the implementation for the tensors' device and autograd
# state (the kernel then picks its loop for the dtype), and memory is allocated
# for the output (on a GPU, launching the kernel comes on top). For big tensors
# that cost is invisible; for many tiny ones it is nearly all of the time.
# Below, the same arithmetic, `n` element-wise products of 8x8 matrices, is
# done three ways:
#
# - a Python loop, one multiplication per pair;
# - one call of `torch._foreach_mul`, which runs that loop in C++ (the
#   optimizers in `torch.optim` use these *foreach* operations by default for
#   GPU parameters, not for CPU ones). On a CPU it still calls the
#   multiplication once per pair, so the Python loop and its per-call argument
#   parsing go away; dispatch, allocation and the wrapping of each result
#   remain;
# - one batched multiplication of the stacked `(n, 8, 8)` tensors, which pays
#   the fixed cost once.
#
# Timing uses `torch.utils.benchmark.Timer` (on one thread by default): it runs
# the statement in blocks long enough that the clock's own cost is negligible,
# repeats the blocks, and we keep the fastest block, the one least disturbed by
# whatever else the machine is doing. (Timings vary by machine, so the plot's
# cell output is not compared.)

# %%
import logging

# On a CUDA build of PyTorch running without a GPU (Colab's CPU runtime, say),
# importing the benchmark module logs "No CUDA runtime is found". That message
# is about compiling C++ extensions, which this lesson never does, so we quiet
# the one logger that sends it before importing.
logging.getLogger("torch.utils.cpp_extension").setLevel(logging.ERROR)
from torch.utils import benchmark


def seconds(stmt, **names):
    """Seconds per run of `stmt`: the fastest of the benchmark timer's blocks."""
    measurement = benchmark.Timer(stmt=stmt, globals=names).blocked_autorange(min_run_time=0.04)
    return min(measurement.times)


torch.manual_seed(0)
sizes = [16, 64, 256, 1024]
python_times, cpp_times, batch_times = [], [], []
for n in sizes:
    A, B = torch.randn(n, 8, 8), torch.randn(n, 8, 8)
    As, Bs = list(A.unbind()), list(B.unbind())  # n separate 8x8 tensors each
    assert torch.equal(torch.stack([a * b for a, b in zip(As, Bs)]), A * B)
    assert torch.equal(torch.stack(torch._foreach_mul(As, Bs)), A * B)
    python_times.append(seconds("[a * b for a, b in zip(As, Bs)]", As=As, Bs=Bs))
    cpp_times.append(seconds("torch._foreach_mul(As, Bs)", As=As, Bs=Bs, torch=torch))
    batch_times.append(seconds("A * B", A=A, B=B))

# %% tags=["nbval-ignore-output"]
fig, ax = plt.subplots()
ax.loglog(sizes, [t * 1e3 for t in python_times], "o-", label="Python loop, one product per pair")
ax.loglog(sizes, [t * 1e3 for t in cpp_times], "^-", label="loop in C++ (torch._foreach_mul)")
ax.loglog(sizes, [t * 1e3 for t in batch_times], "s-", label="one batched product (A * B)")
ax.set_title("Many tiny operations vs one batched operation (CPU)")
ax.set_xlabel("number of 8x8 element-wise products n")
ax.set_ylabel("time per call (ms, fastest block)")
ax.legend()
plt.show()
assert all(t > 0 for t in python_times + cpp_times + batch_times)
# The sentences follow the measurement, so they are true whatever the machine did.
n = sizes[-1]
print(f"at n={n}, per product: Python loop {python_times[-1] / n * 1e6:.2f} us,"
      f" C++ loop {cpp_times[-1] / n * 1e6:.2f} us, batched {batch_times[-1] / n * 1e6:.3f} us")
print(f"moving the loop into C++ saved {1 - cpp_times[-1] / python_times[-1]:.0%} of the Python loop's time;"
      f" batching saved {1 - batch_times[-1] / python_times[-1]:.1%}")

# %% [markdown]
# When the small operations cannot be batched by hand, torch 2's answer is
# the compiler. `torch.compile(model)` or, in place, `model.compile()` records
# the tensor operations that `forward` performs on its first call, hands that
# graph to a backend (Inductor by default: C++ on a CPU, which needs a C++
# compiler installed, and Triton kernels on a GPU) and from then on runs the
# generated code, in which chains of element-wise operations are fused into a
# few kernels. Four things to know before using it:
#
# - the first call compiles, which takes seconds to minutes (longer than this
#   whole lesson runs, which is why it does not run here), and a call with a
#   new input shape or dtype can compile again;
# - Python it cannot record, such as a `while` whose condition reads a
#   tensor's value (`ReuseAndRescale` above), splits the graph: the pieces
#   are compiled and the break runs as ordinary Python;
# - `torch.compile(model)` returns a wrapper around the same parameters whose
#   `state_dict` keys all start with `_orig_mod.` (`0.weight` becomes
#   `_orig_mod.0.weight`), so save `model.state_dict()`, not the wrapper's;
#   `model.compile()` keeps the model's class and its keys;
# - `mode="reduce-overhead"` also records the GPU kernels as a CUDA graph and
#   replays it, which removes most of the launch cost lesson 7 measures.
#
# ```python
# model.compile()          # compiled in place; the first call compiles
# loss = loss_fn(model(X), y)
# ```

# %% [markdown]
# ## What comes next: training and evaluation modes, walking the whole tree
#
# Some layers compute differently while training, so `eval()` changes what a
# model returns, not only what it remembers. In training, `nn.Dropout(p)`
# zeroes each entry with probability `p` and multiplies the survivors by
# `1 / (1 - p)`, which keeps the expected value; in evaluation it returns its
# input unchanged. In training, BatchNorm normalizes each feature with the
# mean and variance *of the current batch* (and, on the side, updates its
# running averages of them), so one example alone cannot be normalized; in
# evaluation it uses the running averages, and each example's output no
# longer depends on the rest of the batch.

# %%
torch.manual_seed(0)
dropout = nn.Dropout(0.5)
print("Dropout, train:", dropout(torch.ones(6)))
print("Dropout, eval: ", dropout.eval()(torch.ones(6)))
batchnorm = nn.BatchNorm1d(3)
batch = 5 + 2 * torch.randn(8, 3)
print("BatchNorm, train, every column's mean is 0:", bool(batchnorm(batch).mean(0).abs().max() < 1e-5))
print("BatchNorm, eval, column means:", batchnorm.eval()(batch).mean(0).detach())
try:
    batchnorm.train()(batch[:1])
except ValueError as error:
    print("BatchNorm, train, one example:", error)

# %% [markdown]
# Every module has a `training` flag for that, and `net.train()` /
# `net.eval()` set it on the net *and on every module registered below it*,
# at any depth. A block of your own can read `self.training` in its
# `forward`, and the flag reaches it there. A module kept in a plain Python
# list is not registered, so the switch never reaches it.

# %%
class NoisyBlock(nn.Module):
    """Adds noise while training, nothing in evaluation."""

    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5))
        self.hidden_away = [nn.Dropout(0.5)]  # a plain list: not registered

    def forward(self, X):
        X = self.body(X)
        return X + torch.randn_like(X) if self.training else X


noisy = nn.Sequential(nn.Linear(4, 4), NoisyBlock())
noisy.eval()
print("after eval(), training flags of every registered module:", [m.training for m in noisy.modules()])
print("the dropout in the plain list:", noisy[1].hidden_away[0].training)
X4 = torch.rand(2, 4)
print("eval: two calls agree: ", torch.equal(noisy(X4), noisy(X4)))
noisy.train()
print("train: two calls agree:", torch.equal(noisy(X4), noisy(X4)))

# %% [markdown]
# The flag lives on modules, and only modules read it. The functional form
# `F.dropout(X, p)` is a plain function whose `training` argument defaults to
# `True`: a `forward` that calls it keeps dropping entries after `eval()`.
# Pass the module's flag, `F.dropout(X, p, training=self.training)`, or use an
# `nn.Dropout` child, which reads it for you.

# %%
class FunctionalDropout(nn.Module):
    def __init__(self, pass_flag):
        super().__init__()
        self.pass_flag = pass_flag

    def forward(self, X):
        if self.pass_flag:
            return F.dropout(X, 0.5, training=self.training)
        return F.dropout(X, 0.5)  # training=True whatever the module's mode


ones = torch.ones(2, 4)
for pass_flag in [False, True]:
    block = FunctionalDropout(pass_flag).eval()
    print(f"pass_flag={pass_flag!s:5}: output after eval() equals the input:", torch.equal(block(ones), ones))

# %% [markdown]
# `modules()` walks that whole tree: the net itself first, then every
# registered module at any depth, each once. `named_modules()` adds the
# qualified names (`""` for the net itself, `"1.body.1"` for a module three
# levels down), the same names `state_dict` keys start with. `children()`
# stops at the first level. To find every `nn.Linear` in a model, walk
# `modules()`.

# %%
print("children:", [name for name, _ in noisy.named_children()])
print("modules: ", [name for name, _ in noisy.named_modules()])
print("Linear layers at any depth:", sum(isinstance(m, nn.Linear) for m in noisy.modules()))

# %% [markdown]
# ## Summary
#
# - Every layer, group of layers and model is an `nn.Module`; call it as
#   `net(X)`, which runs `forward` through `__call__`.
# - Children are registered by attribute assignment or `add_module`; use
#   `nn.ModuleList`/`nn.ModuleDict`, never plain lists or dicts of modules.
# - A container runs every registered position (`_modules.values()`), not
#   `children()`, which yields a module passed twice only once.
# - `forward` is Python: reuse a layer to share weights, loop, branch.
# - Constants that belong to the model are buffers (`register_buffer`, or
#   `nn.Buffer` since torch 2.5); `persistent=False` keeps one out of
#   `state_dict`.
# - `train()` and `eval()` set the `training` flag on every registered module
#   at any depth, which changes outputs (dropout, batch statistics); a
#   functional call such as `F.dropout` needs `training=self.training`; `modules()` and `named_modules()` walk the whole tree,
#   `children()` only its first level.
# - Batch small operations: every call pays Python, the dispatcher and an
#   allocation (plus a kernel launch on a GPU); a loop moved into C++ drops
#   the Python loop but still dispatches and allocates once per tensor;
#   `torch.compile` / `model.compile()` fuses what it can record.
#
# Next: the exercise, `exercises/01_blocks/01_blocks.ipynb`.
