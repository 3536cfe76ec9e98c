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
# A constant initializer. All units of a layer then compute the same thing and
# get the same gradient: they stay identical copies, which is why nobody trains
# from a constant start.

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
# ## Different initializers for different blocks
#
# `apply` works on any submodule too, so each part of a model can get its own
# rule: here Xavier for the first layer (it balances the variance of the forward
# and the backward pass, `std = sqrt(2 / (fan_in + fan_out))`), and Kaiming for
# ReLU inside the inner block.

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
net[0].apply(init_xavier)
net[2].apply(init_kaiming)
net[3].apply(init_constant)
print(f"xavier bound {math.sqrt(6 / (4 + 8)):.3f}, max |w| {net[0].weight.abs().max().item():.3f}")
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
# unchanged.

# %%
def near_identity_(weight, noise=0.01):
    with torch.no_grad():
        weight.normal_(0.0, noise)
        weight.add_(torch.eye(*weight.shape))
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
# keep initialization independent of that, the `nn.init` functions accept their
# own `torch.Generator`.

# %%
def seeded_init(net, seed):
    generator = torch.Generator().manual_seed(seed)
    for m in net.modules():
        if isinstance(m, nn.Linear):
            nn.init.kaiming_uniform_(m.weight, nonlinearity="relu", generator=generator)
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
# ## Summary
#
# - `nn.Linear` starts from `U(-1/sqrt(fan_in), 1/sqrt(fan_in))` for weight and
#   bias: `kaiming_uniform_` with `a = sqrt(5)`, verified above. That is not
#   Xavier, and not the Kaiming scale for ReLU either.
# - `nn.init` functions fill tensors in place; `net.apply(fn)` calls `fn` on
#   every submodule, and `fn` picks modules by type.
# - Different submodules can be initialized differently by applying to them.
# - Own initializers and direct edits change parameters in place under
#   `torch.no_grad()`.
# - A seed (global, or a `torch.Generator` passed to `nn.init`) makes
#   initialization reproducible.
# - The scale matters: in a deep ReLU stack only the Kaiming gain keeps the
#   activations' spread steady.
#
# Now try it yourself: `exercises/03_initialization/03_initialization.ipynb`.
