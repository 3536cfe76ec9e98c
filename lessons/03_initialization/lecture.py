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
#     title: Parameter initialization
# ---

# %% [markdown]
# # Lesson 3: Parameter initialization
#
# Before training starts, every parameter needs a value. PyTorch picks one for
# each layer, `nn.init` offers the usual alternatives, and we can write our own.
# The choice matters: it decides whether signals survive the trip through a
# deep network.

# %%
import math
from collections import OrderedDict

import matplotlib.pyplot as plt
import torch
from torch import nn

_ = torch.manual_seed(0)

# %% [markdown]
# ## What `nn.Linear` does by default
#
# The constructor of `nn.Linear(in_features, out_features)` calls its
# `reset_parameters()` method. Reading that method in the installed PyTorch
# (`torch/nn/modules/linear.py`) shows two steps, with `fan_in = in_features`:
#
# - the weight is filled by `nn.init.kaiming_uniform_(weight, a=math.sqrt(5))`;
# - the bias is filled by `nn.init.uniform_(bias, -1/sqrt(fan_in), 1/sqrt(fan_in))`.
#
# `kaiming_uniform_` draws from `U(-bound, bound)` with
# `bound = gain * sqrt(3 / fan_in)` and, for its default leaky-ReLU setting with
# slope `a`, `gain = sqrt(2 / (1 + a**2))`. With `a = sqrt(5)` the gain is
# `sqrt(1/3)` and the bound collapses to `1 / sqrt(fan_in)`. So, exactly:
#
# **weight ~ U(-1/sqrt(fan_in), 1/sqrt(fan_in)) and bias ~ U(-1/sqrt(fan_in), 1/sqrt(fan_in)),
# every entry independent.** Its standard deviation is `1/sqrt(3 * fan_in)`.

# %%
fan_in = 400
a = math.sqrt(5)
gain = math.sqrt(2 / (1 + a**2))
bound = gain * math.sqrt(3 / fan_in)
print(f"gain = {gain:.6f}, sqrt(1/3) = {math.sqrt(1 / 3):.6f}")
print(f"bound = {bound:.6f}, 1/sqrt(fan_in) = {1 / math.sqrt(fan_in):.6f}")

# %% [markdown]
# ## Checking it on a real layer
#
# First the strongest check: with the same seed, the constructor and the two
# `nn.init` calls above draw the very same numbers.

# %%
torch.manual_seed(1)
layer = nn.Linear(fan_in, 300)

torch.manual_seed(1)
weight = torch.empty(300, fan_in)
bias = torch.empty(300)
nn.init.kaiming_uniform_(weight, a=math.sqrt(5))
nn.init.uniform_(bias, -1 / math.sqrt(fan_in), 1 / math.sqrt(fan_in))
print(torch.equal(layer.weight, weight), torch.equal(layer.bias, bias))

# %% [markdown]
# Then the statistics of the 120 000 weights: all inside the bound, reaching
# almost to it, a standard deviation of `bound / sqrt(3)`, and equally many
# values in each tenth of the interval, as a uniform distribution has.

# %%
k = 1 / math.sqrt(fan_in)
w = layer.weight.detach()
print("inside [-k, k]:", bool(w.abs().max() <= k))
print("max |w| / k > 0.999:", bool(w.abs().max() / k > 0.999))
print("std / (k / sqrt(3)) within 1%:", abs(w.std().item() / (k / math.sqrt(3)) - 1) < 0.01)
share = torch.histc(w, bins=10, min=-k, max=k) / w.numel()
print("each tenth holds 10% +- 0.5%:", bool((share - 0.1).abs().max() < 0.005))
print("bias inside [-k, k]:", bool(layer.bias.abs().max() <= k))

# %% [markdown]
# ## The default is not Xavier
#
# Many tutorials say PyTorch initializes linear layers with Xavier (Glorot).
# **It does not**: the source above calls `kaiming_uniform_` with `a=sqrt(5)`,
# and no Xavier function is involved. Xavier's scale,
# `std = sqrt(2 / (fan_in + fan_out))`, depends on both widths; the default's,
# `std = 1 / sqrt(3 * fan_in)`, only on `fan_in` (for a 400 -> 100 layer: 0.063
# vs 0.029). Nor is it the "Kaiming" scale for ReLU networks
# (`std = sqrt(2 / fan_in)`), which is `sqrt(6)` times larger, although the
# function called is `kaiming_uniform_`: the `a=sqrt(5)` argument shrinks it.
# We will see below what that does to a deep ReLU stack.

# %%
torch.manual_seed(0)
wide = nn.Linear(400, 100)
print(f"default std {wide.weight.std().item():.3f} | 1/sqrt(3 fan_in) = {1 / math.sqrt(3 * 400):.3f}"
      f" | Xavier would give {math.sqrt(2 / (400 + 100)):.3f} | Kaiming (ReLU) {math.sqrt(2 / 400):.3f}")

# %% [markdown]
# ## Built-in initializers in `nn.init`
#
# Every function in `nn.init` ending in `_` fills a tensor in place and returns
# it: `normal_`, `uniform_`, `zeros_`, `constant_`, `xavier_uniform_`,
# `xavier_normal_`, `kaiming_uniform_`, `kaiming_normal_`, and more. They run
# without recording gradients, so they can be used on parameters directly.

# %%
w = torch.empty(2, 5)
print(nn.init.constant_(w, 0.5))
print(nn.init.zeros_(w) is w)

# %% [markdown]
# Two more that practitioners reach for:
#
# - `trunc_normal_(w, mean, std, a, b)` draws from a normal law and redraws
#   anything outside `[a, b]`, so no weight starts far out in a tail (vision
#   transformers use it). `a` and `b` are *absolute values*, not numbers of
#   standard deviations: the defaults `a=-2, b=2` with `std=0.02` lie 100
#   standard deviations out and cut nothing. To cut at two standard
#   deviations, pass `a=-2 * std, b=2 * std`; the cut also lowers the spread
#   to about 0.88 `std`.
# - `orthogonal_(w)` fills `w` with a (semi-)orthogonal matrix: its rows (or
#   its columns, whichever are fewer) are orthonormal, so every singular value
#   is 1 (times `gain`). Multiplying by it keeps a vector's length when `w`
#   has at least as many rows as columns, in every direction, which is why it
#   suits recurrent weights applied many times over.

# %%
torch.manual_seed(20)
std = 0.02
t = nn.init.trunc_normal_(torch.empty(128, 128), std=std)
print(f"trunc_normal_, default a, b: largest |w| = {t.abs().max().item() / std:.1f} std (nothing cut)")
t = nn.init.trunc_normal_(torch.empty(128, 128), std=std, a=-2 * std, b=2 * std)
print(f"trunc_normal_, a, b = -+2 std: largest |w| = {t.abs().max().item() / std:.1f} std, spread {t.std().item() / std:.2f} std")
q = nn.init.orthogonal_(torch.empty(256, 64))
v = torch.randn(10, 64)
print("orthogonal_: Q.T @ Q is the identity:", torch.allclose(q.T @ q, torch.eye(64), atol=1e-5),
      f"| |Qv| / |v| between {((q @ v.T).norm(dim=0) / v.norm(dim=1)).min().item():.4f}"
      f" and {((q @ v.T).norm(dim=0) / v.norm(dim=1)).max().item():.4f}")

# %% [markdown]
# ## `net.apply(fn)` visits every module
#
# `apply` calls `fn(m)` on every submodule and finally on the net itself
# (children first), so an initializer is written for one module and checks its
# type.

# %%
net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Sequential(nn.Linear(8, 8), nn.Tanh()), nn.Linear(8, 1))
visited = []
net.apply(lambda m: visited.append(type(m).__name__))
print(visited)

# %% [markdown]
# A normal initializer with a small standard deviation and zero biases:

# %%
def init_small_normal(m):
    if isinstance(m, nn.Linear):
        nn.init.normal_(m.weight, mean=0.0, std=0.01)
        nn.init.zeros_(m.bias)


torch.manual_seed(2)
net.apply(init_small_normal)
print(f"{net[0].weight.std().item():.2f}", net[0].bias.abs().max().item())

# %% [markdown]
# A constant initializer for every layer. All hidden units of a layer then
# compute the same thing and get the same gradient, so every step changes them
# alike: they stay identical copies, and a layer of 8 units works like a layer
# of one. (Only the output layer's units can part ways, when the loss compares
# each output with its own target; the hidden units below still move alike.)
# That holds as long as the network treats every hidden unit alike on every
# step, as this deterministic one does; dropout is the exception, shown next.

# %%
def init_constant(m):
    if isinstance(m, nn.Linear):
        nn.init.constant_(m.weight, 1.0)
        nn.init.zeros_(m.bias)


net.apply(init_constant)
net(torch.rand(3, 4)).sum().backward()
g = net[0].weight.grad
print("all rows of the gradient equal:", torch.allclose(g, g[0].expand_as(g)))

# %% [markdown]
# Dropout treats the units differently: each step drops a random set of them,
# so each unit sees its own share of the gradient, and the rows part ways at
# the first step. That is still no reason to start from constants: the units
# then differ only by the noise of their masks, not by a spread of starting
# points chosen to keep the signal's scale (the rest of this lesson).

# %%
torch.manual_seed(12)
dropnet = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Dropout(0.5), nn.Linear(8, 1))
dropnet.apply(init_constant)
x, y = torch.rand(16, 4), torch.rand(16, 1)
print("distinct rows of the first weight before training:", len(torch.unique(dropnet[0].weight.detach(), dim=0)))
for step in range(1, 4):
    dropnet.zero_grad()
    nn.functional.mse_loss(dropnet(x), y).backward()
    with torch.no_grad():
        for param in dropnet.parameters():
            param -= 0.01 * param.grad  # one plain gradient-descent step
    print(f"after step {step}:", len(torch.unique(dropnet[0].weight.detach(), dim=0)), "of 8")

# %% [markdown]
# One constant layer among random ones is usually harmless, though, as long as
# something above it treats its units differently. Starting one layer at zero
# is common and works: the last layer of a residual branch is often zeroed so
# that each block starts as the identity (`x + branch(x) = x`), and a LoRA
# adapter starts its second matrix at zero so that fine-tuning starts from the
# pretrained model. Row `i` of the zero layer's weight gradient is output `i`'s
# upstream gradient times the layer's input. The upstream gradients differ from
# output to output as soon as anything above the layer treats its outputs
# differently (a random layer after it, a loss that compares each output with
# its own target), so its units part ways at the first step. (If nothing does,
# say the loss is just the sum of the outputs, the rows stay equal.) The layers
# before it get gradients from the second step on, once it is no longer zero.
# (A layer with zero weight *and* bias followed by a ReLU is the exception: its
# outputs are all 0, where PyTorch takes ReLU's slope as 0, so no gradient ever
# gets through and it stays zero.)

# %%
torch.manual_seed(2)
branch = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 4))
nn.init.zeros_(branch[2].weight)
nn.init.zeros_(branch[2].bias)
x, target = torch.randn(32, 4), torch.randn(32, 4)


def rows_differ(g):
    return not torch.allclose(g, g[0].expand_as(g))


for step in range(2):
    branch.zero_grad()
    loss = ((x + branch(x) - target) ** 2).mean()  # a residual block: x + branch(x)
    loss.backward()
    last, first = branch[2].weight.grad, branch[0].weight.grad
    print(f"step {step}: zero layer's gradient rows differ: {rows_differ(last)} |"
          f" first layer's gradient is nonzero: {bool(first.abs().sum() > 0)}, rows differ: {rows_differ(first)}")
    with torch.no_grad():
        for param in branch.parameters():
            param -= 0.1 * param.grad  # one plain gradient-descent step

# %% [markdown]
# ## Different initializers for different blocks
#
# `apply` works on any submodule too, so each part of a model can get its own
# rule, chosen by the activation that follows the layer. Here the first layer
# feeds a ReLU, so it gets Kaiming for ReLU (`std = sqrt(2 / fan_in)`, which
# makes up for the half of the signal a ReLU drops). The inner block's layer
# feeds a Tanh, which is close to linear near zero, so it gets Xavier (it
# balances the variance of the forward and the backward pass,
# `std = sqrt(2 / (fan_in + fan_out))`). The output layer gets a constant.

# %%
def init_xavier(m):
    if isinstance(m, nn.Linear):
        nn.init.xavier_uniform_(m.weight)
        nn.init.zeros_(m.bias)


def init_kaiming(m):
    if isinstance(m, nn.Linear):
        nn.init.kaiming_normal_(m.weight, nonlinearity="relu")
        nn.init.zeros_(m.bias)


torch.manual_seed(3)
net[0].apply(init_kaiming)   # Linear(4, 8) -> ReLU
net[2].apply(init_xavier)    # Sequential(Linear(8, 8), Tanh)
net[3].apply(init_constant)  # the output layer
print(f"xavier bound {math.sqrt(6 / (8 + 8)):.3f}, max |w| {net[2][0].weight.abs().max().item():.3f}")
print(net[3].weight)

# %% [markdown]
# ## A custom initializer: in place, under `torch.no_grad()`
#
# Parameters require gradients, and autograd refuses in-place changes to such a
# leaf tensor while it is recording:

# %%
layer = nn.Linear(4, 4)
try:
    layer.weight.mul_(0.5)
except RuntimeError as error:
    print("refused with", type(error).__name__)

# %% [markdown]
# Inside `torch.no_grad()` nothing is recorded, so in-place changes are allowed
# and the parameter stays the same leaf tensor. Our example: the identity plus
# a little noise, a start that lets a square layer pass its input through almost
# unchanged. The identity is added through `weight.diagonal()`, a view of the
# weight's own diagonal, rather than as `torch.eye(...)`: a new tensor is made
# on the CPU unless told otherwise, and adding a CPU tensor in place to a
# weight on a GPU raises. Build helpers from the tensor they fill (a view, or
# `device=weight.device`) and they work wherever the model lives.

# %%
def near_identity_(weight, noise=0.01):
    with torch.no_grad():
        weight.normal_(0.0, noise)
        weight.diagonal().add_(1.0)  # in place on the weight's own device
    return weight


torch.manual_seed(4)
near_identity_(layer.weight)
x = torch.rand(3, 4)
print(torch.allclose(layer(x) - layer.bias, x, atol=0.05))
print(layer.weight.is_leaf, layer.weight.requires_grad)

# %% [markdown]
# ## Editing parameters directly
#
# The same works for single entries or slices, for example to set a known value
# in a test or to shift a whole layer.

# %%
with torch.no_grad():
    layer.weight[0, 0] = 42.0
    layer.bias[:] = 1.0
    layer.weight += 1
print(layer.weight[0, 0].item(), layer.bias.tolist())

# %% [markdown]
# ## Reproducible initialization
#
# Initial values come from the random number generator, so seeding it before
# building a model makes the model the same every time.

# %%
torch.manual_seed(5)
net_a = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
torch.manual_seed(5)
net_b = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
print(all(torch.equal(p, q) for p, q in zip(net_a.parameters(), net_b.parameters())))

# %% [markdown]
# The global seed also decides everything drawn later (dropout, data order). To
# keep initialization independent of that, the random `nn.init` functions take
# a `generator=` argument, their own `torch.Generator`. One exception:
# `sparse_` accepts it for its values but picks the positions of its zeros
# with `torch.randperm` from the global generator, so its zeros still move
# with the global seed.
#
# A generator belongs to one kind of device, the CPU unless created with
# `torch.Generator(device=...)`, and torch refuses to draw numbers for a CUDA
# tensor from a CPU generator (it checks that the two device types match). A
# generator on the tensor's device works, but a CUDA generator gives other
# numbers than the CPU's for the same seed. So `seeded_init` draws each weight
# on the CPU and copies it into the layer: it works wherever the model lives,
# and gives the same numbers on every machine.

# %%
def seeded_init(net, seed):
    generator = torch.Generator().manual_seed(seed)  # a CPU generator
    for m in net.modules():
        if isinstance(m, nn.Linear):
            weight = torch.empty(m.weight.shape)      # drawn on the CPU ...
            nn.init.kaiming_uniform_(weight, nonlinearity="relu", generator=generator)
            with torch.no_grad():
                m.weight.copy_(weight)                # ... and copied to the layer's device
            nn.init.zeros_(m.bias)
    return net


seeded_init(net_a, 7)
torch.rand(100)  # some other use of the global generator
seeded_init(net_b, 7)
print(all(torch.equal(p, q) for p, q in zip(net_a.parameters(), net_b.parameters())))

# %% [markdown]
# ## What the distributions look like
#
# The same `256 x 256` weight filled by four rules. The PyTorch default is the
# narrowest (std `1/sqrt(3 * 256)`), Xavier comes next (`sqrt(2 / (256 + 256))`)
# and Kaiming for ReLU is the widest (`sqrt(2 / 256)`); the normal ones have
# tails, the uniform ones hard edges.

# %%
rules = {
    "PyTorch default (uniform)": lambda t: nn.init.kaiming_uniform_(t, a=math.sqrt(5)),
    "Xavier uniform": nn.init.xavier_uniform_,
    "Xavier normal": nn.init.xavier_normal_,
    "Kaiming normal (ReLU)": lambda t: nn.init.kaiming_normal_(t, nonlinearity="relu"),
}
torch.manual_seed(6)
for label, rule in rules.items():
    values = rule(torch.empty(256, 256)).flatten().numpy()
    _ = plt.hist(values, bins=80, range=(-0.35, 0.35), density=True, histtype="step", label=label)
_ = plt.title("Weights of a 256 x 256 layer under four initializers")
_ = plt.xlabel("weight value (dimensionless)")
_ = plt.ylabel("probability density (1 / unit of weight)")
_ = plt.legend(loc="upper left", fontsize="small")
plt.show()

# %% [markdown]
# ## Scale decides whether a signal survives depth
#
# Send a batch through 30 layers of `Linear(256, 256)` + ReLU, biases zero, with
# weights `N(0, gain**2 / fan_in)`, and record the standard deviation after each
# linear layer. A ReLU drops half of the signal's energy, so only `gain = sqrt(2)`
# (Kaiming) keeps the spread constant; smaller gains make it vanish
# geometrically, larger ones make it explode. The PyTorch default (uniform with
# std `1/sqrt(3 fan_in)`, i.e. gain `1/sqrt(3)`) vanishes too.

# %%
depth, width = 30, 256


def deep_stack(weight_init):
    layers = []
    for _ in range(depth):
        linear = nn.Linear(width, width)
        weight_init(linear.weight)
        nn.init.zeros_(linear.bias)
        layers += [linear, nn.ReLU()]
    return nn.Sequential(*layers)


def stds_through(net, x):
    stds = []
    with torch.no_grad():
        for module in net:
            x = module(x)
            if isinstance(module, nn.Linear):
                stds.append(x.std().item())
    return stds


scales = {
    "PyTorch default": lambda t: nn.init.kaiming_uniform_(t, a=math.sqrt(5)),
    "gain 1 (LeCun)": lambda t: nn.init.normal_(t, 0.0, 1 / math.sqrt(width)),
    "gain sqrt(2) (Kaiming)": lambda t: nn.init.normal_(t, 0.0, math.sqrt(2 / width)),
    "gain 2": lambda t: nn.init.normal_(t, 0.0, 2 / math.sqrt(width)),
}
torch.manual_seed(7)
x = torch.randn(512, width)
curves = {label: stds_through(deep_stack(rule), x) for label, rule in scales.items()}

for label, stds in curves.items():
    _ = plt.semilogy(range(1, depth + 1), stds, marker=".", label=label)
_ = plt.title(f"Activation spread through {depth} Linear+ReLU layers (width {width})")
_ = plt.xlabel("layer index (count)")
_ = plt.ylabel("std of the linear layer's output (input units, log)")
_ = plt.legend()
plt.show()

# %% [markdown]
# The same story in numbers: the ratio of the last layer's spread to the first.

# %%
for label, stds in curves.items():
    ratio = stds[-1] / stds[0]
    trend = "vanishes" if ratio < 0.1 else "explodes" if ratio > 10 else "stays in range"
    print(f"{label:24s} {trend}")

# %% [markdown]
# ## In practice: gains, convolutions and skipping wasted work
#
# The *gain* in `xavier_*` and `kaiming_*` makes up for what the activation
# after the layer does to the variance. `nn.init.calculate_gain(name, param)`
# returns PyTorch's recommended value: 1 for no activation and for sigmoid, 5/3
# for tanh, `sqrt(2)` for ReLU, `sqrt(2 / (1 + slope**2))` for leaky ReLU and
# 3/4 for SELU. Xavier takes it as `gain=`; Kaiming takes the activation's name
# (`nonlinearity=`, with the leaky slope as `a=`) and works it out itself. The
# inner block above, which feeds a Tanh, would use the tanh gain. SELU is the
# exception to "pick the gain of the activation": a self-normalizing SELU
# network needs weights of variance `1 / fan_in`, which is
# `nonlinearity="linear"` (gain 1), as `calculate_gain`'s own documentation
# says. The 3/4 gives up that self-normalizing behaviour for steadier
# gradients.

# %%
for name, param in [("linear", None), ("sigmoid", None), ("tanh", None), ("relu", None),
                    ("leaky_relu", 0.2), ("selu", None)]:
    print(f"{name:10s} {nn.init.calculate_gain(name, param):.4f}")

torch.manual_seed(8)
w = nn.init.xavier_uniform_(torch.empty(256, 256), gain=nn.init.calculate_gain("tanh"))
print(f"Xavier with the tanh gain: std {w.std().item():.3f}, 5/3 * sqrt(2 / (256 + 256)) = {5 / 3 * math.sqrt(2 / 512):.3f}")

# %% [markdown]
# For a convolution the fans come from the weight's shape,
# `(out_channels, in_channels / groups, kernel_height, kernel_width)`:
# `fan_in = shape[1] * kernel area`, every input value one output value sees,
# and `fan_out = shape[0] * kernel area`. Kaiming's default `mode="fan_in"`
# keeps the variance of the activations steady in the forward pass;
# `mode="fan_out"` keeps that of the gradients steady in the backward pass
# instead (torchvision's ResNets use it). The two differ when a layer changes
# the number of channels or is grouped (`fan_in` counts only
# `in_channels / groups`).

# %%
conv = nn.Conv2d(16, 32, kernel_size=3)
out_channels, in_channels, kernel_h, kernel_w = conv.weight.shape
fans = {"fan_in": in_channels * kernel_h * kernel_w, "fan_out": out_channels * kernel_h * kernel_w}
torch.manual_seed(9)
for mode, fan in fans.items():
    nn.init.kaiming_normal_(conv.weight, mode=mode, nonlinearity="relu")
    print(f"mode={mode!r:10} fan {fan}: std {conv.weight.std().item():.3f}, sqrt(2 / fan) = {math.sqrt(2 / fan):.3f}")

# %% [markdown]
# Building a model runs every layer's default initialization, which is wasted
# work when every value is about to be replaced, by your own initializer or by
# a checkpoint you load: for a large model that is seconds of random numbers
# and memory for values nobody uses. On the `meta` device, parameters have
# shapes and dtypes but no memory and no values, so nothing is drawn.
# `to_empty(device=...)` then allocates real memory *without* filling it (it
# holds whatever was there before), and you fill every parameter and buffer
# yourself: with `load_state_dict`, with your initializer, or with each
# module's own `reset_parameters()`, which reruns its default initialization.
# For the model below, whose layers keep their defaults, the result with the
# same seed equals a model built the ordinary way.

# %%
def make_model():
    return nn.Sequential(nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 512), nn.LayerNorm(512),
                         nn.Linear(512, 10))


with torch.device("meta"):
    model = make_model()                # shapes only: no memory, no random numbers
print(model[0].weight.device, tuple(model[0].weight.shape))

model = model.to_empty(device="cpu")    # real memory (on the device you train on), contents undefined
torch.manual_seed(10)
for module in model.modules():
    if hasattr(module, "reset_parameters"):  # Linear, LayerNorm, convolutions, ...
        module.reset_parameters()

torch.manual_seed(10)
reference = make_model()
print(all(torch.equal(a, b) for a, b in zip(model.state_dict().values(), reference.state_dict().values())))

# %% [markdown]
# The recipe works for this model because each module that *owns* parameters
# (`Linear`, `LayerNorm`) has a public `reset_parameters()` that fills all of
# them. That is a convention, not a rule. `nn.MultiheadAttention` keeps its
# input projection in a private `_reset_parameters()`, so the loop above
# would leave it holding leftover memory, and a module you write yourself has
# no `reset_parameters()` unless you add one. Buffers are the same story: a
# buffer computed in `__init__` (a table of positions, a mask) is garbage
# after `to_empty` and must be computed again. Before trusting the loop,
# list the modules it would skip: those that own parameters or buffers
# directly but have no `reset_parameters()`.

# %%
def skipped_by_reset(model):
    """Modules that own tensors directly but have no public reset_parameters()."""
    return [name for name, module in model.named_modules()
            if not hasattr(module, "reset_parameters")
            and (any(True for _ in module.parameters(recurse=False))
                 or any(True for _ in module.buffers(recurse=False)))]


print("plain MLP:", skipped_by_reset(model))
print("attention:", skipped_by_reset(nn.Sequential(nn.MultiheadAttention(16, 2), nn.Linear(16, 4))))

# %% [markdown]
# An empty list is necessary, not sufficient. `reset_parameters()` gives each
# layer PyTorch's *default* initialization, so it undoes whatever the model's
# own `__init__` did after building its layers: an init loop over
# `self.modules()` (torchvision's ResNets have one), `self.apply(init_fn)`, or
# `nn.MultiheadAttention` setting its output projection's bias to zero. The
# check lists the attention module (it has no public `reset_parameters()`), but
# it cannot see the first two, since every layer there has one. The model below
# applies Kaiming-normal weights and zero biases in `__init__`; it passes the
# check, yet the loop gives it the default's spread and random biases. For such
# a model, run its own initialization again after the reset loop: with the same
# seed that is exactly the order an ordinary build draws in (defaults first,
# then the model's own), so the numbers match too. (They match only if the loop
# meets the layers in the order `__init__` built them; `modules()` follows the
# order they were assigned.)

# %%
def kaiming_init(module):
    if isinstance(module, nn.Linear):
        nn.init.kaiming_normal_(module.weight, nonlinearity="relu")
        nn.init.zeros_(module.bias)


class KaimingMLP(nn.Sequential):
    def __init__(self):
        super().__init__(nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
        self.apply(kaiming_init)  # the model's own initialization, after the defaults


with torch.device("meta"):
    kaiming = KaimingMLP()
print("skipped:", skipped_by_reset(kaiming))
kaiming = kaiming.to_empty(device="cpu")
torch.manual_seed(11)
for module in kaiming.modules():
    if hasattr(module, "reset_parameters"):
        module.reset_parameters()
print(f"reset loop:     weight std {kaiming[0].weight.std().item():.3f}, bias all zero {not kaiming[0].bias.any()}")
kaiming.apply(kaiming_init)  # the fix: rerun the model's own initialization, right after the loop
torch.manual_seed(11)
ordinary = KaimingMLP()
print(f"ordinary build: weight std {ordinary[0].weight.std().item():.3f}, bias all zero {not ordinary[0].bias.any()}")
print(f"own init again: weight std {kaiming[0].weight.std().item():.3f}, bias all zero {not kaiming[0].bias.any()}"
      f" (Kaiming: sqrt(2 / 512) = {math.sqrt(2 / 512):.3f})")
print("same numbers as the ordinary build:",
      all(torch.equal(a, b) for a, b in zip(kaiming.state_dict().values(), ordinary.state_dict().values())))

mha = nn.MultiheadAttention(16, 2)
print("attention out_proj.bias zero after construction:", not mha.out_proj.bias.any())
mha.out_proj.reset_parameters()
print("after out_proj.reset_parameters():             ", not mha.out_proj.bias.any())

# %% [markdown]
# ## What comes next: other layers, `skip_init`, transformer-style init
#
# Other layers have their own defaults, each from its `reset_parameters()`:
# `nn.Embedding` draws from `N(0, 1)`; the norms (`LayerNorm`, `BatchNorm*`,
# `GroupNorm`) start at weight 1 and bias 0, the identity after normalizing;
# the recurrent layers (`RNN`, `LSTM`, `GRU`) draw every weight and bias from
# `U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))`; convolutions use Linear's
# rule with the fan-in of the section above. The check below prints each
# spread divided by its rule's value, so 1 means "as documented".

# %%
torch.manual_seed(13)
embedding = nn.Embedding(10_000, 64)
print(f"Embedding: |mean| < 0.01 {abs(embedding.weight.mean().item()) < 0.01}, std {embedding.weight.std().item():.2f}")
for norm in (nn.LayerNorm(64), nn.BatchNorm1d(64), nn.GroupNorm(8, 64)):
    print(f"{type(norm).__name__}: weight all 1 {bool((norm.weight == 1).all())}, bias all 0 {bool((norm.bias == 0).all())}")
hidden = 128
lstm = nn.LSTM(32, hidden)
largest = max(p.abs().max().item() for p in lstm.parameters())
print(f"LSTM: largest |value| * sqrt(hidden) = {largest * math.sqrt(hidden):.3f}")
grouped = nn.Conv2d(16, 32, kernel_size=3, groups=2)
fan_in = grouped.weight.shape[1] * 3 * 3  # in_channels / groups * kernel area
print(f"Conv2d (groups=2): largest |weight| * sqrt(fan_in) = {grouped.weight.abs().max().item() * math.sqrt(fan_in):.3f}")

# %% [markdown]
# `nn.Embedding(n, d, padding_idx=i)` starts row `i` at zero and never gives
# it a gradient, so the padding token contributes nothing. A custom rule
# applied to the whole weight (`normal_(embedding.weight, 0, 0.02)`, as the
# transformer recipe below does) fills that row too, and since its gradient is
# always zero, training never brings it back: zero the padding row again after
# any custom initialization.

# %%
torch.manual_seed(18)
padded = nn.Embedding(6, 4, padding_idx=0)
print("after construction, padding row is zero:", not padded.weight[0].any())
nn.init.normal_(padded.weight, 0.0, 0.02)
print("after normal_, padding row is zero:     ", not padded.weight[0].any())
padded(torch.tensor([[0, 3, 0]])).sum().backward()
print("its gradient is zero (training leaves it):", not padded.weight.grad[0].any())
with torch.no_grad():
    padded.weight[padded.padding_idx].zero_()
print("after re-zeroing, padding row is zero:  ", not padded.weight[0].any())

# %% [markdown]
# One bias is best set from the data: the output layer's. With random weights
# and zero bias a new model predicts about 0 for a regression target and
# about 50 % for every class, and the first steps are spent learning the
# targets' average. Start the bias there instead: the target mean for a
# regression; for a binary classifier with a fraction `p` of positives, the
# log-odds `log(p / (1 - p))` (for softmax over classes, the log of each
# class's frequency). The initial loss then drops to what the average alone
# achieves (for the classifier, the entropy of `p`).

# %%
torch.manual_seed(19)
X = torch.randn(4096, 16)
positive = (torch.rand(4096, 1) < 0.05).float()  # 5 % positives
price = 50 + 5 * torch.randn(4096, 1)            # targets far from 0
classifier, regressor = nn.Linear(16, 1), nn.Linear(16, 1)
bce, mse = nn.functional.binary_cross_entropy_with_logits, nn.functional.mse_loss
with torch.no_grad():
    before = bce(classifier(X), positive).item(), mse(regressor(X), price).item()
    p = positive.mean()
    classifier.bias.fill_(torch.log(p / (1 - p)).item())
    regressor.bias.fill_(price.mean().item())
    after = bce(classifier(X), positive).item(), mse(regressor(X), price).item()
entropy = -(p * p.log() + (1 - p) * (1 - p).log()).item()
print(f"classifier BCE: {before[0]:.3f} -> {after[0]:.3f} (entropy of p = {entropy:.3f})")
print(f"regressor MSE:  {before[1]:.0f} -> {after[1]:.1f} (variance of the targets = {price.var().item():.1f})")

# %% [markdown]
# `torch.nn.utils.skip_init(cls, *args)` is the meta-device recipe above for
# one module: it builds the module on `meta` and calls `to_empty`, so nothing
# is drawn and the values are undefined until you fill them. The class must
# take a `device=` argument (all of torch's layers do), and its `__init__` may
# do nothing with its parameters but initialize them.

# %%
big = nn.utils.skip_init(nn.Linear, 2048, 2048)   # 4 M weights, none drawn
print(type(big).__name__, tuple(big.weight.shape), "| real memory, not meta:", not big.weight.is_meta,
      "| a parameter that learns:", big.weight.requires_grad)
torch.manual_seed(16)
nn.init.normal_(big.weight, 0.0, 0.02)            # our own rule fills every value ...
nn.init.zeros_(big.bias)                          # ... and every bias
print(f"filled: weight std {big.weight.std().item():.3f}")

# %% [markdown]
# Transformers (GPT-2 and its descendants) do not use the layers' defaults.
# Every `Linear` and `Embedding` weight is drawn from `N(0, 0.02**2)`, biases
# start at zero, and the last projection of each residual branch (attention's
# output, the MLP's second layer) gets `0.02 / sqrt(2 * n_layers)`. The reason
# is the residual stream `x = x + branch(x)`: with `n_layers` blocks of two
# branches each, `2 * n_layers` roughly independent contributions add up, and
# their variances add, so the sum's std grows like `sqrt(2 * n_layers)`;
# scaling each last projection by `1/sqrt(2 * n_layers)` cancels that growth,
# whatever the depth. Below, a stack of 12 blocks of two pre-norm MLP branches (a
# stand-in for attention plus MLP); the stream starts at std 0.02.

# %%
def residual_branch(width):
    return nn.Sequential(OrderedDict(norm=nn.LayerNorm(width), fc=nn.Linear(width, 4 * width),
                                     act=nn.GELU(), proj=nn.Linear(4 * width, width)))


class ResidualStack(nn.Module):
    def __init__(self, width, n_layers):
        super().__init__()
        self.branches = nn.ModuleList(residual_branch(width) for _ in range(2 * n_layers))

    def forward(self, x):
        for branch in self.branches:
            x = x + branch(x)
        return x


def transformer_init_(model, n_layers, std=0.02, scale_residual=True):
    for name, module in model.named_modules():
        if isinstance(module, (nn.Linear, nn.Embedding)):
            last_of_branch = scale_residual and name.endswith("proj")
            nn.init.normal_(module.weight, 0.0, std / math.sqrt(2 * n_layers) if last_of_branch else std)
        if isinstance(module, nn.Linear):
            nn.init.zeros_(module.bias)


n_layers, width = 12, 64
torch.manual_seed(14)
stack = ResidualStack(width, n_layers)
stream = 0.02 * torch.randn(64, width)
with torch.no_grad():
    for scaled in (False, True):
        torch.manual_seed(15)
        transformer_init_(stack, n_layers, scale_residual=scaled)
        added = stack(stream) - stream
        print(f"residual projections scaled: {scaled!s:5}  std of what the 24 branches added: {added.std().item():.3f}")
print(f"sqrt(2 * n_layers) = {math.sqrt(2 * n_layers):.2f}")

# %% [markdown]
# ## Summary
#
# - `nn.Linear` starts from `U(-1/sqrt(fan_in), 1/sqrt(fan_in))` for weight and
#   bias: `kaiming_uniform_` with `a = sqrt(5)`, verified above. That is not
#   Xavier, and not the Kaiming scale for ReLU either.
# - `nn.init` functions fill tensors in place; `net.apply(fn)` calls `fn` on
#   every submodule, and `fn` picks modules by type.
# - Different submodules can be initialized differently by applying to them;
#   pick the rule by the activation after the layer (Kaiming before a ReLU,
#   Xavier before a tanh, with `nn.init.calculate_gain` for the gain).
# - A deterministic network that starts all constant never breaks its
#   symmetry (dropout's random masks do, but only by noise); one zero layer
#   among random ones (residual branches, LoRA) is fine.
# - Own initializers and direct edits change parameters in place under
#   `torch.no_grad()`.
# - A seed (global, or a `torch.Generator` passed to `nn.init`) makes
#   initialization reproducible; a generator draws only for tensors of its own
#   device type, so draw on the CPU and copy for the same numbers everywhere.
#   `sparse_` still picks its zeros from the global generator.
# - A custom initializer builds what it adds from the tensor it fills (a view
#   such as `weight.diagonal()`, or `device=weight.device`), never a CPU
#   constant, so it works on any device.
# - `trunc_normal_`'s `a` and `b` are absolute bounds (`a=-2 * std` to cut at
#   two standard deviations); `orthogonal_` gives every singular value 1.
# - `calculate_gain` gives each activation's gain; a self-normalizing SELU
#   network takes `"linear"` instead of `"selu"`.
# - The scale matters: in a deep ReLU stack only the Kaiming gain keeps the
#   activations' spread steady.
# - Convolutions count `in_channels * kernel area` as `fan_in`; `mode="fan_out"`
#   scales for the backward pass instead.
# - Build big models on the `meta` device, then `to_empty()` and initialize
#   once (`reset_parameters()`, your own rule, or a checkpoint); first list the
#   modules without a public `reset_parameters()` (`nn.MultiheadAttention`,
#   your own), which the loop would leave unfilled. The loop gives every layer
#   PyTorch's default: a model whose `__init__` initializes its layers its own
#   way needs that initialization run again instead.
# - Other defaults: `Embedding` `N(0, 1)`, norms weight 1 and bias 0, RNNs
#   `U(+-1/sqrt(hidden))`, convolutions like `Linear`. `nn.utils.skip_init`
#   builds one module without drawing anything. Transformers draw from
#   `N(0, 0.02**2)` and scale each residual branch's last projection by
#   `1/sqrt(2 * n_layers)`, so what the branches add does not grow with depth.
# - Re-zero an `Embedding`'s `padding_idx` row after a custom init; start the
#   output bias at the targets' mean or the classes' log-odds.
#
# Now try it yourself: `exercises/03_initialization/03_initialization.ipynb`.
