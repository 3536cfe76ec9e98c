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
#     title: Custom layers
# ---

# %% [markdown]
# # Lesson 5: Custom layers
#
# PyTorch ships many layers, but sooner or later a model needs one that does not
# exist yet. A custom layer is just an `nn.Module`: an `__init__` that creates
# whatever state the layer owns, and a `forward` that computes the output. This
# lesson builds layers with and without parameters, shows a mistake that
# silently stops learning, and checks a layer's gradients numerically. It also
# writes layers the way torch's own are written: initialized by a
# `reset_parameters()` method (so they can be built on the `meta` device),
# with constants kept as buffers and constraints kept by parametrizations.

# %%
import warnings

import torch
from torch import nn
from torch.autograd.gradcheck import GradcheckError
from torch.func import functional_call
from torch.nn import functional as F

# %% [markdown]
# ## A layer without parameters
#
# Our first layer subtracts the mean of its input, so its output averages to
# zero. It owns nothing: no weights to learn, only a computation in `forward`.

# %%
class CenteredLayer(nn.Module):
    def forward(self, X):
        return X - X.mean()

layer = CenteredLayer()
print(layer(torch.tensor([1.0, 2.0, 3.0, 4.0, 5.0])))

# %% [markdown]
# Since it is a module, it can sit inside `nn.Sequential` like any built-in
# layer. Whatever the linear layer produces, the mean of the output is zero up
# to rounding.

# %%
torch.manual_seed(0)
net = nn.Sequential(nn.Linear(8, 128), CenteredLayer())
Y = net(torch.rand(4, 8))
print("output shape:", tuple(Y.shape))
print("mean is (almost) zero:", abs(Y.mean().item()) < 1e-6)
print("parameters of the centering layer:", len(list(net[1].parameters())))

# %% [markdown]
# `X.mean()` is the mean of the *whole* batch, so an example's output depends
# on which other examples share its batch: the same input gives other outputs
# in another batch, and in a batch of one its values are centred on their own.
# To centre each example on its own, take the mean over the feature dimension
# only, keeping it for broadcasting: `X.mean(dim=-1, keepdim=True)` (what
# `LayerNorm` does before it scales).

# %%
class CenteredPerExample(nn.Module):
    def forward(self, X):
        return X - X.mean(dim=-1, keepdim=True)


torch.manual_seed(1)
example, mates = torch.rand(1, 8), torch.rand(3, 8)
for layer in (CenteredLayer(), CenteredPerExample()):
    alone, in_batch = layer(example), layer(torch.cat([example, mates]))[:1]
    print(f"{type(layer).__name__:18s} same output alone and in a batch: {torch.allclose(alone, in_batch)}")

# %% [markdown]
# ## A layer with parameters
#
# A layer that learns wraps its tensors in `nn.Parameter`. Assigning a parameter
# as an attribute registers it: it shows up in `parameters()` and the
# `state_dict`, follows `.to()`, and an optimizer built from `parameters()`
# afterwards updates it. Here is our own fully connected layer with a ReLU,
# storing the weight as `(in_units, units)` so that the forward pass is
# `X @ W + b`. The weight is drawn with lesson 3's rule, a standard normal
# divided by `sqrt(in_units)`, and the bias starts at zero.

# %%
class MyLinear(nn.Module):
    def __init__(self, in_units, units):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(in_units, units) / in_units**0.5)
        self.bias = nn.Parameter(torch.zeros(units))

    def forward(self, X):
        return F.relu(X @ self.weight + self.bias)

torch.manual_seed(0)
linear = MyLinear(5, 3)
for name, param in linear.named_parameters():
    print(f"{name:6s} {tuple(param.shape)}  requires_grad={param.requires_grad}")

# %% [markdown]
# It computes like any other layer.

# %%
torch.manual_seed(0)
print(linear(torch.rand(2, 5)))

# %% [markdown]
# Why the division: each output sums `in_units` products, so with a plain
# `torch.randn(in_units, units)` its spread grows like `sqrt(in_units)`, and a
# few such layers in a row blow the signal up. Divided by `sqrt(in_units)`, the
# spread stays the same at any width, like `nn.Linear`'s (whose default is a
# little narrower still, lesson 3).

# %%
torch.manual_seed(0)
for in_units in (64, 1024):
    X = torch.rand(256, in_units)
    plain = F.relu(X @ torch.randn(in_units, 8) + torch.randn(8))
    print(f"{in_units:4d} inputs, std of the output: plain randn {plain.std().item():5.2f} |"
          f" MyLinear {MyLinear(in_units, 8)(X).std().item():.2f} |"
          f" nn.Linear + ReLU {F.relu(nn.Linear(in_units, 8)(X)).std().item():.2f}")

# %% [markdown]
# "Afterwards" matters. An optimizer keeps its own list of the parameters it
# was given when it was built. A parameter added to the model later is
# registered on the model, but that optimizer never sees it, so it never
# changes, without any error. Build the optimizer once the model is complete,
# or hand it the newcomer with `add_param_group`.

# %%
grown = MyLinear(5, 3)
optimizer = torch.optim.SGD(grown.parameters(), lr=0.1)
grown.scale = nn.Parameter(torch.ones(3))   # added after the optimizer was built
print("registered on the layer:", [name for name, _ in grown.named_parameters()])


def holds(optimizer, param):
    return any(p is param for group in optimizer.param_groups for p in group["params"])


print("the optimizer holds scale:", holds(optimizer, grown.scale))
optimizer.add_param_group({"params": [grown.scale]})
print("after add_param_group:    ", holds(optimizer, grown.scale))

# %% [markdown]
# ## The `.data` pitfall
#
# `param.data` is a tensor that shares `param`'s numbers but bypasses autograd:
# nothing done with it is recorded. It is tempting to write it in `forward`
# ("I just want the values"). The layer below does exactly that. Its outputs
# are identical, so nothing looks wrong.

# %%
class DataLinear(MyLinear):
    def forward(self, X):
        return F.relu(X @ self.weight.data + self.bias.data)

torch.manual_seed(0)
good, bad = MyLinear(5, 3), DataLinear(5, 3)
bad.load_state_dict(good.state_dict())  # same weights, different forward
X = torch.rand(4, 5)
print("same outputs:", torch.equal(good(X), bad(X)))

# %% [markdown]
# The damage shows in the backward pass. Put each layer after a normal
# `nn.Linear` and compute a loss: `backward()` runs without complaint, but the
# custom layer's gradients stay `None`. Autograd never saw its parameters being
# used.

# %%
def grads_after_backward(custom):
    torch.manual_seed(1)
    model = nn.Sequential(nn.Linear(5, 5), custom)
    model(torch.rand(4, 5)).sum().backward()
    return {name: p.grad is not None for name, p in model.named_parameters()}

print("with .data:   ", grads_after_backward(DataLinear(5, 3)))
print("without .data:", grads_after_backward(MyLinear(5, 3)))

# %% [markdown]
# So an optimizer step leaves those weights exactly where they were: the layer
# silently never learns. The fix is simply to use the parameter itself in
# `forward` (as `MyLinear` does).

# %%
torch.manual_seed(2)
model = nn.Sequential(nn.Linear(5, 5), DataLinear(5, 3))
before = model[1].weight.detach().clone()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
model(torch.rand(4, 5)).sum().backward()
optimizer.step()
print("custom weight unchanged after a step:", torch.equal(before, model[1].weight))

# %% [markdown]
# `.data` bypasses autograd wherever it appears, not only in `forward`.
# Writing through it (`param.data += 1`) changes values behind autograd's back
# and even skips the check that catches an in-place edit: a later `backward()`
# can return a silently wrong gradient, where the same edit under
# `torch.no_grad()` raises an error (lesson 2 shows both). Edit parameters
# under `torch.no_grad()`, and leave `.data` out of new code.

# %% [markdown]
# ## Many parameters: `nn.ParameterList` and `nn.ParameterDict`
#
# When a layer owns a variable number of tensors, a plain Python list hides
# them from PyTorch, just as with modules in lesson 1. `nn.ParameterList`
# registers each entry. This layer applies one weight matrix per step.

# %%
class StepwiseLinear(nn.Module):
    def __init__(self, width, steps):
        super().__init__()
        self.weights = nn.ParameterList(nn.Parameter(torch.randn(width, width) / width**0.5)
                                        for _ in range(steps))

    def forward(self, X):
        for W in self.weights:
            X = torch.tanh(X @ W)
        return X

class HiddenInList(StepwiseLinear):
    def __init__(self, width, steps):
        nn.Module.__init__(self)
        self.weights = [nn.Parameter(torch.randn(width, width)) for _ in range(steps)]

print("ParameterList:", [name for name, _ in StepwiseLinear(4, 3).named_parameters()])
print("plain list:   ", [name for name, _ in HiddenInList(4, 3).named_parameters()])

# %% [markdown]
# `nn.ParameterDict` does the same with names as keys. Here each task gets its
# own output scale, chosen by a string at call time.

# %%
class TaskScale(nn.Module):
    def __init__(self, tasks, width):
        super().__init__()
        self.scales = nn.ParameterDict({task: nn.Parameter(torch.ones(width)) for task in tasks})

    def forward(self, X, task):
        return X * self.scales[task]

scale = TaskScale(["cats", "dogs"], 3)
with torch.no_grad():
    scale.scales["dogs"].fill_(2.0)
print([name for name, _ in scale.named_parameters()])
print(scale(torch.ones(1, 3), "cats"), scale(torch.ones(1, 3), "dogs"))

# %% [markdown]
# ## Custom layers inside `nn.Sequential`
#
# Custom layers combine freely with built-in ones.

# %%
torch.manual_seed(0)
net = nn.Sequential(MyLinear(64, 8), CenteredLayer(), StepwiseLinear(8, 2), MyLinear(8, 1))
print("output shape:", tuple(net(torch.rand(2, 64)).shape))
print("parameter tensors:", len(list(net.parameters())))

# %% [markdown]
# `nn.Sequential` hands exactly one object from each module to the next:
# whatever the previous module returned, a tensor, a tuple or a dict. So a
# layer whose `forward` needs a second argument, like `TaskScale`, does not
# fit, but a module that returns a tuple does, as long as the next one takes
# the tuple apart. An `nn.LSTM` returns `(output, (h, c))`; a one-line layer
# picks the output.

# %%
class FirstOf(nn.Module):
    def forward(self, pair):
        return pair[0]


torch.manual_seed(0)
lstm = nn.LSTM(input_size=3, hidden_size=5, batch_first=True)
print(type(lstm(torch.rand(4, 7, 3))).__name__)
sequence_net = nn.Sequential(lstm, FirstOf(), nn.Linear(5, 2))
print("output shape:", tuple(sequence_net(torch.rand(4, 7, 3)).shape))

# %% [markdown]
# ## Readable printing with `extra_repr`
#
# Printing that network is not very informative: `MyLinear` prints as
# `MyLinear()`, without its sizes. Only the entries of the `ParameterList`
# inside `StepwiseLinear` show theirs.

# %%
print(net)

# %% [markdown]
# A module prints `ClassName(...)` with whatever its `extra_repr()` method
# returns between the parentheses, the way `nn.Linear` shows its
# `in_features`. We keep the sizes on the layer and return them from
# `extra_repr`.

# %%
class MyLinear(nn.Module):
    def __init__(self, in_units, units):
        super().__init__()
        self.in_units, self.units = in_units, units
        self.weight = nn.Parameter(torch.randn(in_units, units) / in_units**0.5)
        self.bias = nn.Parameter(torch.zeros(units))

    def forward(self, X):
        return F.relu(X @ self.weight + self.bias)

    def extra_repr(self):
        return f"in_units={self.in_units}, units={self.units}"

print(nn.Sequential(MyLinear(64, 8), CenteredLayer(), MyLinear(8, 1)))

# %% [markdown]
# ## Initialization that can run again: `torch.empty` and `reset_parameters()`
#
# `MyLinear` draws its weight in `__init__`. An ordinary build is fine with
# that, but lesson 3's recipe for big models is not: build on the `meta`
# device (shapes, no memory, nothing drawn), allocate with
# `to_empty(device=...)` (real memory, undefined contents), then let every
# module that has a `reset_parameters()` fill its own tensors. `MyLinear` has
# no such method, so the loop passes it by and its weight keeps whatever the
# memory held; `torch.nn.utils.skip_init`, which does the first two steps for
# one module, refuses it outright because its `__init__` takes no `device=`.
#
# Torch's own layers follow a convention that makes the recipe work, and a
# custom layer can follow it too:
#
# - `__init__` takes `device=None, dtype=None` and creates each parameter with
#   `torch.empty(..., device=device, dtype=dtype)`: a shape and a place, no
#   values yet;
# - a public `reset_parameters()` fills every one of them in place (the
#   `nn.init` functions do that without recording anything for autograd), and
#   `__init__` ends by calling it.
#
# The rule then lives in one method: an ordinary build, the meta recipe and a
# later re-initialization all run the same code. On `meta`, drawing in place
# is allowed and does nothing, so `__init__` may call it there too.

# %%
class ResetLinear(nn.Module):
    def __init__(self, in_units, units, device=None, dtype=None):
        super().__init__()
        self.in_units, self.units = in_units, units
        self.weight = nn.Parameter(torch.empty(in_units, units, device=device, dtype=dtype))
        self.bias = nn.Parameter(torch.empty(units, device=device, dtype=dtype))
        self.reset_parameters()

    def reset_parameters(self):
        nn.init.normal_(self.weight, std=self.in_units**-0.5)  # randn / sqrt(in_units), drawn in place
        nn.init.zeros_(self.bias)

    def forward(self, X):
        return F.relu(X @ self.weight + self.bias)

    def extra_repr(self):
        return f"in_units={self.in_units}, units={self.units}"


def reset_all(model):
    """Lesson 3's loop: every module that has a reset_parameters() runs it."""
    for module in model.modules():
        if hasattr(module, "reset_parameters"):
            module.reset_parameters()

# %% [markdown]
# With one seed, the meta recipe now gives exactly the numbers of an ordinary
# build, `dtype=` builds the layer in double precision directly, and
# `skip_init` accepts it.

# %%
torch.manual_seed(5)
ordinary = nn.Sequential(ResetLinear(64, 8), ResetLinear(8, 1))
with torch.device("meta"):
    lean = nn.Sequential(ResetLinear(64, 8), ResetLinear(8, 1))   # nothing drawn, no memory
lean = lean.to_empty(device="cpu")
torch.manual_seed(5)
reset_all(lean)
print("meta, to_empty, reset_parameters: the ordinary build's numbers:",
      all(torch.equal(a, b) for a, b in zip(lean.state_dict().values(), ordinary.state_dict().values())))
print("built in float64:", ResetLinear(4, 3, dtype=torch.float64).weight.dtype)
print("skip_init builds it:", nn.utils.skip_init(ResetLinear, 4, 3))
print("the loop would find a reset_parameters() in MyLinear:", hasattr(MyLinear(4, 3), "reset_parameters"))
try:
    nn.utils.skip_init(MyLinear, 4, 3)
except RuntimeError as error:
    print("skip_init(MyLinear): RuntimeError:", error)

# %% [markdown]
# ## Checking gradients numerically
#
# Autograd computes exact gradients of whatever `forward` did, which is not
# always what we meant (as the `.data` layer showed). `torch.autograd.gradcheck`
# compares them with finite differences: it nudges each input entry by a tiny
# step and watches the output move. It treats a function of tensors, so we call
# the layer through `torch.func.functional_call`, which runs it with the weight
# and bias we pass in; that way the weight and bias are checked too, not just
# the input.

# %%
def as_function(layer):
    """The layer as a function of (input, weight, bias)."""
    return lambda X, W, b: functional_call(layer, {"weight": W, "bias": b}, (X,))

# %% [markdown]
# The finite differences need **double precision**: with float32's roughly 7
# significant digits the tiny step drowns in rounding error. So we convert the
# layer with `.double()` and make a double input that requires gradients.

# %%
torch.manual_seed(0)
layer = MyLinear(4, 3).double()
X = torch.randn(5, 4, dtype=torch.float64, requires_grad=True)
print("gradcheck passed:", torch.autograd.gradcheck(as_function(layer), (X, layer.weight, layer.bias)))

# %% [markdown]
# For comparison, the same check in float32 fails although the layer is
# correct. (gradcheck also warns about float32 inputs; we silence that warning
# inside this cell only, since the failed check already makes the point.)

# %%
layer32 = MyLinear(4, 3)
layer32.load_state_dict(layer.state_dict())  # the same weights, converted to float32
X32 = X.detach().float().requires_grad_()
with warnings.catch_warnings():
    warnings.simplefilter("ignore", UserWarning)
    ok = torch.autograd.gradcheck(as_function(layer32), (X32, layer32.weight, layer32.bias),
                                  raise_exception=False)
print("gradcheck passed in float32:", ok)

# %% [markdown]
# The same check catches the `.data` layer: numerically the output depends on
# the weight (input 1), but the gradient autograd reports is zero.

# %%
broken = DataLinear(4, 3).double()
try:
    torch.autograd.gradcheck(as_function(broken), (X, broken.weight, broken.bias))
except GradcheckError as error:
    print(type(error).__name__ + ":", str(error).splitlines()[0].rstrip(","))

# %% [markdown]
# ## A custom autograd function
#
# Sometimes autograd's own derivative is not what you want: it is slow or
# unstable for the formula as written, or the operation is not built from
# torch operations at all. Then you write the derivative yourself, as a
# `torch.autograd.Function` with two static methods: `forward` computes the
# output and saves what the backward pass needs on `ctx`; `backward` gets the
# gradient of the loss with respect to the output and returns one gradient per
# input. Our example is SiLU, `x * sigmoid(x)`, whose derivative is
# `s * (1 + x * (1 - s))` with `s = sigmoid(x)`. A module calls the function
# through `.apply`.

# %%
class SiLUFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * torch.sigmoid(x)

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        s = torch.sigmoid(x)
        return grad_output * s * (1 + x * (1 - s))


class MySiLU(nn.Module):
    def forward(self, X):
        return SiLUFunction.apply(X)


torch.manual_seed(0)
x = torch.randn(6, dtype=torch.float64, requires_grad=True)
print("same values as F.silu:", torch.allclose(MySiLU()(x), F.silu(x)))

# %% [markdown]
# A hand-written `backward` is exactly where mistakes hide: nothing compares
# it with `forward`, so a wrong derivative trains badly and raises nothing.
# `gradcheck` does the comparison, again in double precision. Below, the
# correct function passes, and a version that applied only half of the product
# rule (it keeps `sigmoid(x)`, the term from differentiating the factor `x`)
# fails.

# %%
class ForgetfulSiLU(SiLUFunction):
    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output * torch.sigmoid(x)  # only half of the product rule


print("gradcheck passed:", torch.autograd.gradcheck(SiLUFunction.apply, (x,)))
try:
    torch.autograd.gradcheck(ForgetfulSiLU.apply, (x,))
except GradcheckError as error:
    print(type(error).__name__ + ":", str(error).splitlines()[0].rstrip(","))

# %% [markdown]
# ## Tensors made inside `forward`
#
# A tensor created inside `forward` (a mask, a range of positions, a constant
# matrix) starts on the default device (the CPU unless
# `torch.set_default_device` changed it), not where the input lives; a
# floating-point one also gets the default dtype (float32 unless
# `torch.set_default_dtype` changed it; a range of positions is int64, a mask
# bool). Parameters and buffers follow `.to()` and `.double()`; such a tensor
# does not. With an input on a GPU the
# layer then fails with a device-mismatch error. With an input of another dtype
# it either fails with a dtype error (a matrix product) or, in elementwise
# arithmetic, is silently promoted: a float16 input times a float32 tensor
# comes out float32. Create it with `device=X.device, dtype=X.dtype`, or with
# `torch.zeros_like(X)`, `X.new_ones(...)` and friends, which copy both from
# `X`. Here one layer computes running sums along the last dimension as a
# product with a triangular matrix of ones, and another scales the features by
# a ramp from 0 to 1, elementwise.

# %%
class RunningSum(nn.Module):
    def forward(self, X):
        n = X.shape[-1]
        return X @ torch.ones(n, n).triu()  # float32 on the CPU, whatever X is


class RunningSumFixed(nn.Module):
    def forward(self, X):
        n = X.shape[-1]
        return X @ torch.ones(n, n, device=X.device, dtype=X.dtype).triu()


X = torch.randn(2, 4, dtype=torch.float64, requires_grad=True)
try:
    RunningSum()(X)
except RuntimeError as error:
    print("RuntimeError:", error)
print("running sums right:", torch.allclose(RunningSumFixed()(X), X.cumsum(-1)))
print("gradcheck passed:", torch.autograd.gradcheck(RunningSumFixed(), (X,)))


class Ramp(nn.Module):
    def forward(self, X):
        return X * torch.linspace(0, 1, X.shape[-1])  # float32 on the CPU, whatever X is


print("float16 input, Ramp output:", Ramp()(torch.ones(2, 4, dtype=torch.float16)).dtype)

# %% [markdown]
# ## Constants a layer keeps: non-persistent buffers
#
# `RunningSumFixed` builds its triangle of ones again at every call: a new
# allocation and a fill per forward pass, for a matrix that never changes.
# When the width is known as the layer is built, build the matrix once and
# keep it as a **buffer**: a tensor registered on the module with
# `self.register_buffer(name, tensor)` that is not a parameter (no gradient,
# not in `parameters()`). Buffers follow `.to()`, `.double()` and `.half()`
# like parameters, so the device and dtype trouble of the last section goes
# away. With `persistent=False` the buffer also stays out of the
# `state_dict`: a checkpoint does not store what the code can compute, and
# loading does not ask for it, so checkpoints written before the buffer
# existed still load strictly. (`self.triangle = nn.Buffer(tensor,
# persistent=False)` registers the same buffer by assignment.)
#
# After `to_empty` a buffer holds undefined memory like a parameter, and no
# checkpoint refills a non-persistent one. So it is filled in
# `reset_parameters()` as well: the name says parameters, but it is the
# method the meta recipe calls. (Lesson 6 meets such buffers again when it
# loads big checkpoints.)

# %%
class RunningSumBuffer(nn.Module):
    """Running sums along the last dimension, for a width fixed when the layer is built."""

    def __init__(self, width, device=None, dtype=None):
        super().__init__()
        self.register_buffer("triangle", torch.empty(width, width, device=device, dtype=dtype),
                             persistent=False)
        self.reset_parameters()

    def reset_parameters(self):
        self.triangle.fill_(1.0).triu_()

    def forward(self, X):
        return X @ self.triangle


running = RunningSumBuffer(4)
print("buffers:", [name for name, _ in running.named_buffers()], "| state_dict keys:", list(running.state_dict()))
print("an empty checkpoint loads strictly:", running.load_state_dict({}))
running.double()                                         # the buffer follows, as a parameter would
X = torch.randn(2, 4, dtype=torch.float64, requires_grad=True)
print("float64 input, running sums right:", torch.allclose(running(X), X.cumsum(-1)))
print("gradcheck passed:", torch.autograd.gradcheck(running, (X,)))
with torch.device("meta"):
    lean = RunningSumBuffer(4)
lean = lean.to_empty(device="cpu")
lean.reset_parameters()
print("built on meta, filled by reset_parameters:", torch.allclose(lean(X.float()), X.float().cumsum(-1)))

# %% [markdown]
# ## Constrained parameters: parametrizations
#
# Some layers need a parameter that stays inside a set while it trains. Our
# example is a linear layer whose weights are all positive, so that each output
# grows with each input (a *monotone* layer: a predicted price that must rise
# with the size of a flat, say). Lesson 2 introduced the tool:
# `torch.nn.utils.parametrize.register_parametrization(module, "weight", p)`
# keeps an unconstrained tensor as the parameter, at
# `parametrizations.weight.original`, and every read of `module.weight` returns
# `p(original)`. A layer that owns its constraint registers it in its own
# `__init__`, so every copy of the layer has it.
#
# Our `p` is softplus, `log(1 + exp(x))`, which is positive for every `x`.
# Its `right_inverse` maps a positive `y` back to the `x` with softplus `y`.
# With a `right_inverse`, assignment works: `layer.weight = values` stores
# `right_inverse(values)` as the original, and reading `layer.weight` gives the
# values back. That is how `reset_parameters()` sets the starting weights,
# so it needs the parametrization in place (a plain tensor assigned to a
# parameter's name raises a `TypeError`): `__init__` registers first and fills
# afterwards. Registering passes the current weight, still `torch.empty`'s
# leftovers, through `right_inverse`, which may turn them into NaN; harmless,
# since `reset_parameters()` overwrites them next.

# %%
from torch.nn.utils import parametrize


class Softplus(nn.Module):
    def forward(self, raw):
        return F.softplus(raw)

    def right_inverse(self, weight):
        return weight + torch.log(-torch.expm1(-weight))  # log(exp(weight) - 1), without overflow


class MonotoneLinear(nn.Module):
    """X @ W + b with every weight positive: each output increases with each input."""

    def __init__(self, in_units, units, device=None, dtype=None):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(in_units, units, device=device, dtype=dtype))
        self.bias = nn.Parameter(torch.empty(units, device=device, dtype=dtype))
        parametrize.register_parametrization(self, "weight", Softplus())
        self.reset_parameters()

    def reset_parameters(self):
        with torch.no_grad():
            in_units = self.weight.shape[0]
            self.weight = torch.empty_like(self.weight).uniform_(0.5 / in_units, 1.5 / in_units)
            self.bias.zero_()

    def forward(self, X):
        return X @ self.weight + self.bias

# %% [markdown]
# The optimizer trains the original, which may take any value, so the
# constraint needs no care in the training loop. (The other way, clamping the
# weight after every optimizer step, works too, but every training loop must
# remember it.) Below, the targets *fall* as the inputs grow. An
# unconstrained `nn.Linear` learns negative weights; the monotone layer's
# weights shrink towards zero and stay positive.

# %%
def fit(layer, X, y, steps=100):
    optimizer = torch.optim.SGD(layer.parameters(), lr=0.5)
    for _ in range(steps):
        optimizer.zero_grad()
        F.mse_loss(layer(X), y).backward()
        optimizer.step()
    return [round(w, 3) for w in layer.weight.detach().flatten().tolist()]


torch.manual_seed(6)
X = torch.rand(64, 3)
y = -X.sum(dim=1, keepdim=True)                     # falls with every input
monotone = MonotoneLinear(3, 1)
print("parameters:", [name for name, _ in monotone.named_parameters()])
print("nn.Linear's weights after training:     ", fit(nn.Linear(3, 1), X, y))
print("MonotoneLinear's weights after training:", fit(monotone, X, y))

# %% [markdown]
# Two consequences for code that touches the weight. An in-place initializer
# such as `nn.init.normal_(layer.weight)` fills the tensor that this one read
# computed, not the original, so it changes nothing and says nothing: assign,
# or initialize `parametrizations.weight.original`. And the layer still follows
# the convention of the `reset_parameters()` section: built on `meta`, it is filled by
# `reset_parameters()` exactly as an ordinary build is. For inference,
# `parametrize.remove_parametrizations(layer, "weight")` turns the current
# weight into a plain parameter again, so it is no longer recomputed at every
# read.

# %%
before = monotone.weight.detach().clone()
nn.init.normal_(monotone.weight)
print("nn.init.normal_ changed the weight:", not torch.equal(monotone.weight, before))

torch.manual_seed(7)
fresh = MonotoneLinear(3, 1)
with torch.device("meta"):
    lean = MonotoneLinear(3, 1)
lean = lean.to_empty(device="cpu")
torch.manual_seed(7)
lean.reset_parameters()
print("meta, to_empty, reset_parameters: the ordinary build's weight:", torch.equal(lean.weight, fresh.weight))

parametrize.remove_parametrizations(monotone, "weight")
print("after remove_parametrizations:", [name for name, _ in monotone.named_parameters()],
      "| the same weight:", torch.equal(monotone.weight, before))

# %% [markdown]
# ## What comes next: autograd functions for `torch.func`, skipped gradients, second derivatives
#
# **`setup_context`.** `SiLUFunction` above takes `ctx` in `forward`. The other
# way to write a `Function` gives `forward` only the inputs and saves what
# backward needs in a separate `setup_context(ctx, inputs, output)`. Only that
# form works under `torch.func`'s transforms (`grad`, `jacrev`, ...; `vmap`
# wants a `vmap` rule as well). Our example is a matrix product `x @ w`.
#
# **`ctx.needs_input_grad`** says, per input, whether anyone wants its
# gradient. A backward that checks it skips the work nobody uses: the
# gradient of the input data, in a model's first layer, is usually one of
# them.

# %%
class MatMulFunction(torch.autograd.Function):
    @staticmethod
    def forward(x, w):                      # no ctx here ...
        return x @ w

    @staticmethod
    def setup_context(ctx, inputs, output):  # ... it is filled here
        x, w = inputs
        ctx.save_for_backward(x, w)

    @staticmethod
    def backward(ctx, grad_output):
        x, w = ctx.saved_tensors
        asked.append(ctx.needs_input_grad)
        grad_x = grad_output @ w.T if ctx.needs_input_grad[0] else None
        grad_w = x.T @ grad_output if ctx.needs_input_grad[1] else None
        return grad_x, grad_w


asked = []
torch.manual_seed(3)
data = torch.randn(4, 3, dtype=torch.float64)                       # input data: no gradient wanted
w = torch.randn(3, 2, dtype=torch.float64, requires_grad=True)
MatMulFunction.apply(data, w).sum().backward()
print(f"needs_input_grad for (x, w): {asked[-1]}, so backward returned None for x")

grad_w = torch.func.grad(lambda w: MatMulFunction.apply(data, w).sum())(w.detach())
print("torch.func.grad agrees with backward:", torch.allclose(grad_w, w.grad))
try:
    torch.func.grad(lambda x: SiLUFunction.apply(x).sum())(x.detach())
except RuntimeError as error:
    print(f"SiLUFunction under torch.func.grad: RuntimeError, asking for setup_context: {'setup_context' in str(error)}")

# %% [markdown]
# **`gradgradcheck`.** A `backward` built from differentiable torch operations
# can itself be differentiated, which Hessian-vector products and gradient
# penalties need. `torch.autograd.gradgradcheck` checks those second
# derivatives the way `gradcheck` checks first ones. A backward that detaches
# a saved tensor (or goes through NumPy) has correct first derivatives and
# passes `gradcheck`; only `gradgradcheck` sees that its second ones are
# wrong.

# %%
class DetachingSiLU(SiLUFunction):
    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        x = x.detach()                                # cuts the graph of the backward pass
        s = torch.sigmoid(x)
        return grad_output * s * (1 + x * (1 - s))


x2 = torch.randn(2, 3, dtype=torch.float64, requires_grad=True)
print(f"MatMulFunction gradgradcheck: {torch.autograd.gradgradcheck(MatMulFunction.apply, (x2, w))}")
print(f"SiLUFunction   gradgradcheck: {torch.autograd.gradgradcheck(SiLUFunction.apply, (x,))}")
print(f"DetachingSiLU  gradcheck:     {torch.autograd.gradcheck(DetachingSiLU.apply, (x,))}")
try:
    torch.autograd.gradgradcheck(DetachingSiLU.apply, (x,))
except GradcheckError as error:
    print(f"DetachingSiLU  gradgradcheck: {type(error).__name__}: {str(error).splitlines()[0].rstrip(',')}")

# %% [markdown]
# ## Summary
#
# - A custom layer is an `nn.Module`: state in `__init__`, computation in
#   `forward`. A layer without parameters (centering) owns nothing; a mean over
#   the whole batch mixes examples, a mean over `dim=-1` centres each alone.
# - Draw a custom layer's weights with lesson 3's scale (`randn / sqrt(in_units)`),
#   or the output's spread grows with the width.
# - Learnable tensors are `nn.Parameter` attributes; a variable number of them
#   goes into `nn.ParameterList` or `nn.ParameterDict`, never a plain list.
# - Use the parameters themselves in `forward`: `.data` bypasses autograd,
#   their gradients stay `None` and they never learn, without any error. Edit
#   parameters under `torch.no_grad()`, not through `.data`.
# - An optimizer only updates the parameters it was built with: build it after
#   the model is complete.
# - Custom layers mix with built-in ones in `nn.Sequential`, which passes one
#   object (of any type) from module to module; `extra_repr` makes them print
#   their sizes.
# - `torch.autograd.gradcheck` in double precision checks a layer's gradients
#   against finite differences, and a hand-written `torch.autograd.Function`'s
#   `backward` against its `forward`; `gradgradcheck` checks second derivatives.
# - A `Function` whose `forward` takes no `ctx` and that saves in
#   `setup_context` works under `torch.func`; `ctx.needs_input_grad` lets
#   `backward` skip gradients nobody asked for.
# - Create tensors inside `forward` on the input's device and with its dtype
#   (`device=X.device, dtype=X.dtype`, `X.new_ones(...)`, `torch.zeros_like(X)`):
#   by default they are on the CPU, and floating-point ones float32, whatever
#   the input.
# - Follow torch's convention for initialization: `__init__` takes `device=`
#   and `dtype=`, creates parameters with `torch.empty`, and ends by calling a
#   public `reset_parameters()` that fills them in place. Then the meta recipe
#   (`to_empty`, then `reset_parameters()`) and `skip_init` work, and give an
#   ordinary build's numbers.
# - A constant the layer needs (a mask, a triangle of ones) is a buffer built
#   once, not a tensor rebuilt in every `forward`: it follows `.to()` and
#   `.double()`; with `persistent=False` it stays out of the `state_dict`, and
#   `reset_parameters()` fills it after `to_empty`.
# - A constrained parameter is a parametrization registered in `__init__`
#   (`register_parametrization`): the optimizer trains an unconstrained
#   tensor, every read applies the constraint. With a `right_inverse`,
#   `layer.weight = values` sets it; an in-place `nn.init` call on the
#   computed weight changes nothing.
#
# Now practise in the exercise notebook `exercises/05_custom_layers/05_custom_layers.ipynb`.
