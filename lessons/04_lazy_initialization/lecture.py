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
#     title: Lazy initialization
# ---

# %% [markdown]
# # Lesson 4: Lazy initialization
#
# So far every layer was told its input width up front: `nn.Linear(20, 256)`.
# Often we would rather not work that out by hand, for instance after a stack of
# convolutions, or when the input width is only known once the data is loaded.
# *Lazy* layers leave the input size open and read it off the first batch that
# flows through them. This lesson shows what such a layer looks like before and
# after that first batch, and the traps that come with it.

# %% [markdown]
# We need `torch`, `nn`, and two helpers from `torch.nn.parameter` that recognise
# parameters still waiting for their shape.

# %%
import torch
from torch import nn
from torch.nn.parameter import UninitializedParameter, is_lazy

# %% [markdown]
# Tutorials written for older PyTorch releases often silence a `UserWarning`
# that every new lazy layer used to raise. PyTorch 2.4 removed that warning, so
# this course needs no filter for it. The documentation of lazy modules still
# calls them experimental, with an API that may change: a reason to check what a
# lazy layer does rather than assume, as this lesson does.

# %% [markdown]
# ## A network that does not know its input width
#
# `nn.LazyLinear(out_features)` takes only the output width. Printed, the missing
# input width shows as `in_features=0`.

# %%
net = nn.Sequential(nn.LazyLinear(256), nn.ReLU(), nn.LazyLinear(10))
print(net)

# %% [markdown]
# The weights exist as objects, but they are placeholders of the class
# `UninitializedParameter`: no shape, no values. `is_lazy` tells them apart from
# ordinary parameters.

# %%
weight = net[0].weight
print(type(weight).__name__)
print("lazy:", is_lazy(weight))
print("an UninitializedParameter:", isinstance(weight, UninitializedParameter))

# %% [markdown]
# The `state_dict` already lists every entry, but each value is still a
# placeholder.

# %%
for name, value in net.state_dict().items():
    print(f"{name:10s} {type(value).__name__}")

# %% [markdown]
# Asking a placeholder for its `.shape` fails. We catch the error and print its
# type and first sentence, so the notebook keeps running. `.size()` does
# answer, but with a dummy `(0,)`, not the shape the weight will get.

# %%
try:
    weight.shape
except RuntimeError as error:
    print(type(error).__name__ + ":", str(error).split(".")[0])
print("weight.size():", tuple(weight.size()))

# %% [markdown]
# Counting parameters, a common first look at a model, fails for the same reason.

# %%
try:
    sum(p.numel() for p in net.parameters())
except ValueError as error:
    print(type(error).__name__ + ":", str(error).split(" in ")[0])

# %% [markdown]
# Only some layers have a lazy twin: `Linear`, the convolutions and transposed
# convolutions of one, two and three dimensions, and `BatchNorm` and
# `InstanceNorm` of each dimension. The rest take their sizes up front:
# `LayerNorm` and `GroupNorm`, `Embedding` (its input holds indices, and its
# table's size is the vocabulary's, not a width it could read off a batch),
# the recurrent layers and attention. For those, compute the width before
# building them (the end of this lesson shows how).

# %%
twins = [name for name in dir(nn) if name.startswith("Lazy")]
print(len(twins), "lazy layers:", ", ".join(name.removeprefix("Lazy") for name in twins))
print("no lazy twin:", [name for name in ("LayerNorm", "GroupNorm", "Embedding", "LSTM", "GRU", "MultiheadAttention")
                        if not hasattr(nn, "Lazy" + name)])

# %% [markdown]
# ## The first forward pass fixes the shapes
#
# Running one batch through the network lets each lazy layer read the width of
# the input it receives, create its weights with that shape and fill them with
# the layer's usual default initialization (for `LazyLinear` the very same as
# `nn.Linear`'s, lesson 3: `kaiming_uniform_` with `a = sqrt(5)`, not Xavier).

# %%
torch.manual_seed(0)
X = torch.rand(2, 20)
print("output shape:", tuple(net(X).shape))
for name, value in net.state_dict().items():
    print(f"{name:10s} {type(value).__name__:10s} {tuple(value.shape)}")

# %% [markdown]
# Now the counting works: 20·256 + 256 + 256·10 + 10 numbers.

# %%
print(sum(p.numel() for p in net.parameters()))

# %% [markdown]
# Look at the printed network again: the layers are no longer `LazyLinear`. At
# the start of its first call, in the forward pre-hook that gives its weights
# their shapes (before its `forward` runs), a lazy layer turns itself into the
# ordinary layer it stands for, here `nn.Linear`. Even the class of the module
# object changes.

# %%
print(net)
print("type(net[0]):", type(net[0]).__name__)
print("type(net[0]) == nn.Linear:", type(net[0]) == nn.Linear)

# %% [markdown]
# Before the forward pass the class is `LazyLinear`, a subclass of `nn.Linear`.
# Keep the two tests apart: `type(m) == nn.Linear` is `False` for a lazy layer,
# `isinstance(m, nn.Linear)` is already `True`.

# %%
fresh = nn.LazyLinear(3)
print("type:", type(fresh).__name__)
print("type(m) == nn.Linear:", type(fresh) == nn.Linear)
print("isinstance(m, nn.Linear):", isinstance(fresh, nn.Linear))

# %% [markdown]
# Loading a `state_dict` is the other way a placeholder gets its shape: the
# loaded tensor's shape is copied into it. The class, though, changes only in
# the pre-hook of the first call, so after `load_state_dict` the weights are
# real while the layer is still a `LazyLinear`.

# %%
loaded = nn.LazyLinear(3)
loaded.load_state_dict(nn.Linear(4, 3).state_dict())
print("after load_state_dict:", type(loaded).__name__, "| weight lazy:", is_lazy(loaded.weight),
      "| shape:", tuple(loaded.weight.shape))
loaded(torch.zeros(1, 4))
print("after the first call: ", type(loaded).__name__)

# %% [markdown]
# The other direction fails: a `state_dict` saved *before* the dry run holds
# the placeholders themselves. Since torch 2.6, `torch.load` reads files with
# `weights_only=True` by default, which rebuilds only tensors and a short list
# of safe types; `UninitializedParameter` is not among them, so the file is
# refused with an `UnpicklingError`. Save after the dry run. (Passing
# `weights_only=False` would load it, but it also lets the file run any code:
# only for files you made yourself.) Tools that trace or compile a model,
# `torch.export` and the older TorchScript (`torch.jit.script`), refuse
# placeholders in the same way: materialize first.

# %%
import io

unsaved = io.BytesIO()
torch.save(nn.Sequential(nn.LazyLinear(3)).state_dict(), unsaved)
unsaved.seek(0)
try:
    torch.load(unsaved)
except Exception as error:  # pickle.UnpicklingError
    print(type(error).__name__, "| lists the placeholder's class:", "UninitializedParameter" in str(error))
ready = nn.Sequential(nn.LazyLinear(3))
with torch.no_grad():
    ready(torch.zeros(1, 4))  # the dry run
saved = io.BytesIO()
torch.save(ready.state_dict(), saved)
saved.seek(0)
print("after the dry run:", {name: tuple(t.shape) for name, t in torch.load(saved).items()})

# %% [markdown]
# ## Initializers and lazy layers
#
# Many initializers in the wild, and in older tutorials, look like this one: a
# function applied with `net.apply` (lesson 3) that picks the layers to touch
# by their exact type. Lesson 3 tested with `isinstance` instead; we come back
# to that below.

# %%
def init_normal(m):
    if type(m) == nn.Linear:
        nn.init.normal_(m.weight, mean=0.0, std=0.01)
        nn.init.zeros_(m.bias)

# %% [markdown]
# Applied to a lazy network *before* the first forward pass, it does nothing at
# all: no module has the type `nn.Linear` yet. No error, no warning. The first
# forward pass then fills the weights with the default initialization, and our
# choice is lost.

# %%
torch.manual_seed(0)
lazy_net = nn.Sequential(nn.LazyLinear(256), nn.ReLU(), nn.LazyLinear(10))
lazy_net.apply(init_normal)
lazy_net(torch.rand(2, 20))
std = lazy_net[0].weight.std().item()
print(f"std of the first weight: {std:.3f} (we asked for 0.010)")

# %% [markdown]
# Lesson 3's test, `isinstance(m, nn.Linear)`, does not rescue it either: now
# the initializer reaches the placeholder and fails loudly. That is better than
# failing silently, but still not what we want.

# %%
def init_normal_isinstance(m):
    if isinstance(m, nn.Linear):
        nn.init.normal_(m.weight, mean=0.0, std=0.01)
        nn.init.zeros_(m.bias)

try:
    nn.Sequential(nn.LazyLinear(256), nn.ReLU(), nn.LazyLinear(10)).apply(init_normal_isinstance)
except ValueError as error:
    print(type(error).__name__ + ":", str(error).split(" in ")[0])

# %% [markdown]
# ## The dry run
#
# The fix is to give the layers their shapes first: pass one example batch
# through the network, a *dry run*, and only then apply the initializer. Only
# the trailing sizes matter, so a small batch of zeros will do. Two details
# keep the dry run from changing anything but the shapes:
#
# - `torch.no_grad()`: we are not training, so no graph is recorded;
# - `net.eval()`: some layers behave differently in training mode. BatchNorm
#   updates its running statistics on every training-mode forward pass, and
#   `no_grad` does **not** stop that (the statistics are buffers, not
#   gradients); in training mode it also refuses an input with a single value
#   per channel, such as one sample. In eval mode (with the default
#   `track_running_stats=True`) it only reads its running statistics.
#
# Switching to eval mode must not outlive the dry run. Before it, remember the
# mode of *every* submodule, not just of the network: a net in `train()` may
# hold a BatchNorm frozen in `eval()` on purpose. Restore each one's own mode
# in a `finally:` block, so the modes come back also when the dry run raises,
# and the error still reaches you. Calling `net.train()` afterwards would be
# wrong: it would wake that frozen BatchNorm.
#
# Switching modes is our job: the docstring of the hook that materializes lazy
# layers (`LazyModuleMixin._infer_parameters`) says the module is put into
# evaluation mode for that pass, but in torch 2.13 its code never does so, as
# the BatchNorm demonstration below shows.

# %%
def materialize(net, example_input):
    """Run one batch through `net` in eval mode without recording gradients, so
    that every lazy layer gets its shape; each submodule's mode is restored."""
    modes = {module: module.training for module in net.modules()}
    net.eval()
    try:
        with torch.no_grad():
            net(example_input)
    finally:
        for module, training in modes.items():
            module.train(training)
    return net

torch.manual_seed(0)
lazy_net = nn.Sequential(nn.LazyLinear(256), nn.ReLU(), nn.LazyLinear(10))
materialize(lazy_net, torch.zeros(2, 20))
lazy_net.apply(init_normal)
std = lazy_net[0].weight.std().item()
print(f"std of the first weight: {std:.3f} (we asked for 0.010)")
print("bias all zero:", bool((lazy_net[0].bias == 0).all()))

# %% [markdown]
# Why eval mode? Here is the naive dry run, in training mode, on a network with
# BatchNorm. One sample fails outright (BatchNorm gets one value per channel),
# and a larger batch quietly moves the running statistics although no gradient
# was recorded.

# %%
def bn_net():
    return nn.Sequential(nn.LazyLinear(4), nn.LazyBatchNorm1d(), nn.ReLU(), nn.LazyLinear(1))

try:
    with torch.no_grad():
        bn_net()(torch.zeros(1, 6))
except ValueError as error:
    print("train mode, one sample:", type(error).__name__ + ":", str(error).split(",")[0])

torch.manual_seed(0)
naive = bn_net()
with torch.no_grad():
    naive(torch.randn(8, 6) + 5)
print("train mode under no_grad: batches tracked =", int(naive[1].num_batches_tracked),
      "| running mean moved:", bool((naive[1].running_mean != 0).any()))

careful = materialize(bn_net(), torch.randn(1, 6) + 5)
print("materialize (eval mode):   batches tracked =", int(careful[1].num_batches_tracked),
      "| running mean moved:", bool((careful[1].running_mean != 0).any()),
      "| back in training mode:", careful.training and careful[1].training)

# %% [markdown]
# The rule in training mode is "more than one value per channel", not "more
# than one sample": one sequence of 4 steps gives `BatchNorm1d` 4 values per
# channel and passes, while one 1x1 image gives `BatchNorm2d` a single value
# and fails.

# %%
print("one sequence of 4 steps:", tuple(nn.BatchNorm1d(3)(torch.randn(1, 3, 4)).shape))
try:
    nn.BatchNorm2d(3)(torch.randn(1, 3, 1, 1))
except ValueError as error:
    print("one 1x1 image:", type(error).__name__ + ":", str(error).split(",")[0])

# %% [markdown]
# The restore rule in action: a network in training mode whose BatchNorm was
# frozen in eval mode keeps both modes, and a dry run that fails (here the widths
# do not fit) still hands back the modes before its error arrives.

# %%
frozen = bn_net()
frozen[1].eval()  # statistics frozen on purpose, e.g. for fine-tuning
materialize(frozen, torch.randn(8, 6))
print("net training:", frozen.training, "| BatchNorm training:", frozen[1].training)

misfit = nn.Sequential(nn.LazyLinear(3), nn.Linear(5, 1))  # 3 features out, 5 expected
try:
    materialize(misfit, torch.zeros(2, 4))
except RuntimeError as error:
    print("the dry run failed:", type(error).__name__, "| net back in training mode:", misfit.training)

# %% [markdown]
# An eval-mode dry run reaches only the layers that eval mode runs. A branch
# that only runs while training, such as an auxiliary head that adds a second
# loss, is skipped, and its lazy layer stays a placeholder. So after any dry run,
# check that nothing is still lazy.

# %%
class WithAuxHead(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.LazyLinear(8)
        self.head = nn.Linear(8, 1)
        self.aux = nn.LazyLinear(3)  # a second output, used only for a training loss

    def forward(self, X):
        H = torch.relu(self.body(X))
        if self.training:
            return self.head(H), self.aux(H)
        return self.head(H)


aux_net = materialize(WithAuxHead(), torch.zeros(2, 5))
print("body lazy:", is_lazy(aux_net.body.weight), "| aux head lazy:", is_lazy(aux_net.aux.weight))

# %% [markdown]
# Here the fix is simple: the auxiliary head's input width is the body's output
# width, written in the code, so give it a sized `nn.Linear(8, 3)`. Where the
# width is not known, run that branch's layers yourself on an example of their
# input.

# %% [markdown]
# In eval mode under `torch.no_grad()` the dry run leaves nothing behind but the
# new weights: no gradients, no statistics, the old modes, and the weights
# train as usual afterwards.

# %%
print("any gradient stored:", any(p.grad is not None for p in lazy_net.parameters()))
lazy_net(torch.rand(4, 20)).sum().backward()
print("gradient reached the first layer:", lazy_net[0].weight.grad is not None)

# %% [markdown]
# Most optimizers, `SGD` and `Adam` among them, may even be built *before* the
# dry run. Materializing does not replace a placeholder with a new tensor: it
# fills in the same `Parameter` object (and changes its class), so the
# optimizer already holds the real weights. Not every optimizer waits for its
# first `step()`, though: `Adagrad` creates its per-parameter state in its
# constructor, and a placeholder has no shape to create it with. The safe
# order, and the one PyTorch's documentation of lazy modules uses, is the dry
# run first and the optimizer after. `Muon` (new in torch 2.9) is stricter
# still: it accepts only 2-D parameters, so it rejects the placeholders and,
# after the dry run, every bias too. It is meant for the hidden weight
# matrices, with another optimizer such as `AdamW` for everything else.

# %%
torch.manual_seed(0)
early = nn.Sequential(nn.LazyLinear(4), nn.ReLU(), nn.LazyLinear(1))
placeholders = list(early.parameters())
optimizer = torch.optim.SGD(early.parameters(), lr=0.1)
materialize(early, torch.zeros(1, 3))
print("the same objects after the dry run:", all(a is b for a, b in zip(placeholders, early.parameters())))
before = early[0].weight.detach().clone()
early(torch.randn(8, 3)).pow(2).mean().backward()
optimizer.step()
print("the optimizer moved the first weight:", not torch.equal(before, early[0].weight))

try:
    torch.optim.Adagrad(nn.Sequential(nn.LazyLinear(4)).parameters())
except ValueError as error:
    print("Adagrad on placeholders:", type(error).__name__ + ":", str(error).split(" in ")[0])
try:
    torch.optim.Muon(early.parameters())  # after the dry run, biases included
except ValueError as error:
    print("Muon on every parameter:", type(error).__name__ + ":", str(error).split(" whereas")[0])
matrices = [p for p in early.parameters() if p.ndim == 2]
muon = torch.optim.Muon(matrices)
adamw = torch.optim.AdamW([p for p in early.parameters() if p.ndim != 2])
print("Muon holds", len(matrices), "weight matrices; AdamW the", len(adamw.param_groups[0]["params"]), "biases")

# %% [markdown]
# Do the dry run by *calling* the network, `net(x)`, never with `net.forward(x)`.
# A lazy layer fills in its shape in a forward pre-hook, and hooks run only when
# a module is called; `net.forward(x)` skips the hooks of `net` itself. Inside
# an `nn.Sequential` that goes unnoticed, because `Sequential.forward` calls each
# child normally. But when `net` is itself a lazy layer, its hook never runs and
# the placeholder reaches the matrix product. (PyTorch's error message says to
# "call `forward`" with a dummy batch: it means calling the module.)

# %%
layer = nn.LazyLinear(3)
try:
    with torch.no_grad():
        layer.forward(torch.zeros(2, 5))
except ValueError as error:
    print("layer.forward(x):", type(error).__name__ + ":", str(error).split(" in ")[0])
print("still lazy:", layer.has_uninitialized_params())
with torch.no_grad():
    layer(torch.zeros(2, 5))
print("after layer(x):", type(layer).__name__, tuple(layer.weight.shape))

# %% [markdown]
# Every lazy layer can report on itself with `has_uninitialized_params()` (only
# while it is lazy: the plain class it turns into has no such method), and
# `is_lazy` works on any single parameter.

# %%
lazy_net = nn.Sequential(nn.LazyLinear(8), nn.ReLU(), nn.LazyLinear(1))
print("before the dry run:", lazy_net[0].has_uninitialized_params(), is_lazy(lazy_net[2].weight))
materialize(lazy_net, torch.zeros(1, 5))
print("after the dry run: ", is_lazy(lazy_net[0].weight), is_lazy(lazy_net[2].weight))

# %% [markdown]
# Buffers can be lazy too. A `LazyBatchNorm1d(affine=False)` has no parameters
# at all, yet its running statistics wait for their shape as
# `UninitializedBuffer` placeholders. `is_lazy` recognises them, and the
# layer's `has_uninitialized_params()` counts them despite its name, so a
# "still lazy?" check should look at buffers as well as parameters.

# %%
stats_only = nn.LazyBatchNorm1d(affine=False)
print("parameters:", len(list(stats_only.parameters())))
print("lazy buffers:", [name for name, b in stats_only.named_buffers() if is_lazy(b)])
print("has_uninitialized_params():", stats_only.has_uninitialized_params())

# %% [markdown]
# ## Mixing lazy and sized layers
#
# Lazy and ordinary layers go together in one network. The most common pattern
# leaves only the first layer lazy: every later width is written in the code
# anyway.

# %%
mixed = nn.Sequential(nn.LazyLinear(64), nn.ReLU(), nn.Linear(64, 10))
print("first weight lazy before:", is_lazy(mixed[0].weight))
materialize(mixed, torch.zeros(1, 33))
print(mixed)

# %% [markdown]
# The other way round works too: a sized first layer followed by a lazy one,
# which then learns its input width from the layer before it.

# %%
mixed = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.LazyLinear(10))
materialize(mixed, torch.zeros(1, 20))
print(mixed[2])

# %% [markdown]
# One caveat, which PyTorch's documentation states for lazy modules: they are
# initialized *after* the sized ones. A sized layer draws its random weights
# when it is built; a lazy layer draws them at the dry run, later. Whether that
# changes anything depends on the order. When every layer is lazy, or the lazy
# ones come last, the draws happen in the same order as in the sized twin, and
# one seed gives identical weights. Only when a sized layer comes *after* a
# lazy one does it take the draws the lazy layer would have had, and then the
# weights differ from that lazy layer on (the layers before it still match). (A
# random example batch drawn between the seed and the dry run would shift the
# lazy draws too; we dry-run with zeros.)

# %%
def seeded(build):
    """The network `build()` makes right after seeding, dry-run with zeros."""
    torch.manual_seed(0)
    return materialize(build(), torch.zeros(1, 4))

def same_weights(a, b):
    return all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))

sized_twin = seeded(lambda: nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2)))
all_lazy = seeded(lambda: nn.Sequential(nn.LazyLinear(8), nn.ReLU(), nn.LazyLinear(2)))
lazy_last = seeded(lambda: nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.LazyLinear(2)))
lazy_first = seeded(lambda: nn.Sequential(nn.LazyLinear(8), nn.ReLU(), nn.Linear(8, 2)))
print("all lazy        == sized twin:", same_weights(all_lazy, sized_twin))
print("sized, then lazy == sized twin:", same_weights(lazy_last, sized_twin))
print("lazy, then sized == sized twin:", same_weights(lazy_first, sized_twin))
torch.manual_seed(0)
drawn_first = nn.Linear(8, 2)
print("the sized layer after the lazy one got the seed's first draw:",
      torch.equal(lazy_first[2].weight, drawn_first.weight))

# %% [markdown]
# ## When the shapes do not fit
#
# A lazy layer infers only its *own* input width. Its output width is fixed, and
# if a sized layer after it expects something else, the forward pass fails.
# Here the lazy layer produces 32 features while the next layer wants 64. (We
# print the start of the message; the rest names the two shapes, here a 2x32
# activation against 64x10, the transpose of the next layer's 10x64 weight,
# since `nn.Linear` computes `X @ W.T`.)

# %%
broken = nn.Sequential(nn.LazyLinear(32), nn.ReLU(), nn.Linear(64, 10))
try:
    broken(torch.zeros(2, 20))
except RuntimeError as error:
    print(type(error).__name__ + ":", str(error).split(" (")[0])

# %% [markdown]
# Note that the failed pass still got as far as the first layer: it is now an
# ordinary `Linear` with 20 inputs. A failed dry run can leave a network half
# materialized, so rebuild it after fixing the widths.

# %%
print(broken[0])

# %% [markdown]
# The second kind of mismatch comes later: once materialized, the shapes are
# fixed for good. A batch with a different feature width fails like it would
# for any sized layer.

# %%
net = materialize(nn.Sequential(nn.LazyLinear(8), nn.ReLU(), nn.LazyLinear(2)), torch.zeros(1, 20))
try:
    net(torch.zeros(2, 30))
except RuntimeError as error:
    print(type(error).__name__ + ":", str(error).split(" (")[0])

# %% [markdown]
# ## Inputs of varying size
#
# What may vary is everything except the dimension a layer reads its width
# from. `nn.Linear` works on the last dimension, so the batch size and any extra
# leading dimensions are free.

# %%
for shape in [(2, 20), (7, 20), (3, 5, 20)]:
    print(shape, "->", tuple(net(torch.zeros(shape)).shape))

# %% [markdown]
# Images are the classic case where sizes change: a convolution accepts any
# height and width, but the flattened feature vector after it grows with the
# image. A lazy linear layer fixes its width on the first image size it sees,
# and the next size breaks it.

# %%
conv_net = nn.Sequential(nn.LazyConv2d(4, kernel_size=3), nn.ReLU(), nn.Flatten(), nn.LazyLinear(10))
materialize(conv_net, torch.zeros(1, 3, 28, 28))
print("first linear layer:", conv_net[3])
try:
    conv_net(torch.zeros(1, 3, 32, 32))
except RuntimeError as error:
    print(type(error).__name__ + ":", str(error).split(" (")[0])

# %% [markdown]
# An adaptive pooling layer brings every image to the same grid before the
# flattening, so the linear layer always sees the same width, whatever the
# image size.

# %%
pooled_net = nn.Sequential(nn.LazyConv2d(4, kernel_size=3), nn.ReLU(),
                           nn.AdaptiveAvgPool2d((5, 5)), nn.Flatten(), nn.LazyLinear(10))
materialize(pooled_net, torch.zeros(1, 3, 28, 28))
print("first linear layer:", pooled_net[4])
for size in [28, 32, 64]:
    out = pooled_net(torch.zeros(2, 3, size, size))
    print(f"{size}x{size} images ->", tuple(out.shape))

# %% [markdown]
# Sometimes the number of features itself differs: one sensor reports 3
# readings, another 5. No single linear layer takes both widths, lazy or not.
# What works is parameter tying (lesson 2): each width gets its own input layer,
# and every width shares the rest of the network. The input layers live in an
# `nn.ModuleDict` (its keys must be strings) so that they are registered like
# any other child.

# %%
class WidthNet(nn.Module):
    """One input layer per feature width in `widths`, one shared body."""

    def __init__(self, widths, hidden=16, out_features=1):
        super().__init__()
        self.inputs = nn.ModuleDict({str(d): nn.Linear(d, hidden) for d in widths})
        self.body = nn.Sequential(nn.ReLU(), nn.Linear(hidden, out_features))

    def forward(self, X):
        return self.body(self.inputs[str(X.shape[-1])](X))


torch.manual_seed(0)
width_net = WidthNet([3, 5])
for width in [3, 5]:
    print(f"width {width}: output", tuple(width_net(torch.randn(4, width)).shape))
for name, value in width_net.state_dict().items():
    print(f"{name:16s} {tuple(value.shape)}")

# %% [markdown]
# Both widths train the shared body: its gradient is the sum of what each
# width contributes.

# %%
width_net.zero_grad()
width_net(torch.randn(4, 3)).sum().backward()
from_3 = width_net.body[1].weight.grad.clone()
width_net(torch.randn(4, 5)).sum().backward()
print("the shared weight's gradient changed with the second width:",
      not torch.equal(width_net.body[1].weight.grad, from_3))

# %% [markdown]
# Here the widths were listed up front. When they are not known in advance, the
# network can add the input layer for a new width the first time one arrives,
# and a lazy layer then reads the width for you (the exercise asks for that).
# Two cautions. A layer created inside `forward` is created on the default
# device and dtype unless told otherwise, so make it where the rest of the
# network lives (the next section shows why that matters). And unlike a
# placeholder, which becomes the real weight in place, a layer created later is
# a new object: an optimizer built before it existed does not train it. Send one
# batch of every width through the network before building the optimizer.

# %% [markdown]
# ## Lazy layers and devices
#
# Where do the weights appear? Not where the example input lives: a lazy
# layer's placeholder already has a device and a dtype, and materializing
# creates the real tensor with those. They are the ones given to the
# constructor (`nn.LazyLinear(8, device=..., dtype=...)`) or set by a later
# `.to()`; otherwise the defaults, the CPU and float32 unless
# `torch.set_default_device` or `torch.set_default_dtype` changed them. So the
# order matters: **move the network first, then do the dry run** with an input
# on the same device (`net.to(device, dtype)`). PyTorch's own documentation of
# lazy modules does the same: `.cuda()` right after construction, before any
# dry run.
#
# The helper below picks a GPU if there is one (CUDA or Apple MPS) and the CPU
# otherwise. On a CPU-only machine we stand in for "another device" with
# PyTorch's `meta` device (tensors with shapes but no data), which makes the
# wrong order fail in the same way.

# %%
def try_gpu(i=0):
    """The i-th CUDA device if it exists, else MPS (for i == 0) if available, else the CPU."""
    if torch.cuda.device_count() > i:
        return torch.device(f"cuda:{i}")
    if i == 0 and torch.backends.mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")

device = try_gpu()
other = device if device.type != "cpu" else torch.device("meta")

# The wrong order: the net stays on the CPU, the example batch lives elsewhere.
wrong_order = nn.Sequential(nn.LazyLinear(8), nn.ReLU(), nn.LazyLinear(2))
try:
    materialize(wrong_order, torch.zeros(2, 20, device=other))
except RuntimeError as error:
    # The wording differs between backends (CUDA, MPS, meta); each names a device or the CPU.
    assert "device" in str(error) or "cpu" in str(error).lower(), error
    print("dry run with the input on another device: RuntimeError (tensors on different devices)")
print("the first weight was created on the net's own device, the CPU:", wrong_order[0].weight.device.type == "cpu")

# The right order: move the (still lazy) network, then the dry run. `.to()`
# keeps the placeholders lazy when it moves them between real devices (CPU,
# CUDA, MPS) or dtypes. Not so for `meta`: there it swaps them for ordinary
# empty parameters, so without a GPU the CPU stands in for it here.
right_order = nn.Sequential(nn.LazyLinear(8), nn.ReLU(), nn.LazyLinear(2)).to(device)
materialize(right_order, torch.zeros(2, 20, device=device))
print("moved first: weights on the input's device:", right_order[0].weight.device.type == device.type)
print("shape:", tuple(right_order[0].weight.shape))

# %% [markdown]
# The dtype follows the same rule: a float32 lazy net fed float64 data creates
# float32 weights and then fails; `.to(torch.float64)` first works.

# %%
try:
    materialize(nn.Sequential(nn.LazyLinear(3)), torch.zeros(2, 5, dtype=torch.float64))
except RuntimeError as error:
    print("float64 input, float32 net:", type(error).__name__ + ":", str(error).split(",")[0])
double_net = materialize(nn.Sequential(nn.LazyLinear(3)).to(torch.float64), torch.zeros(2, 5, dtype=torch.float64))
print("moved to float64 first:", double_net[0].weight.dtype)

# %% [markdown]
# ## What comes next: a lazy layer of your own, parallel wrappers, and no laziness at all
#
# **Your own lazy layer.** `torch.nn.modules.lazy.LazyModuleMixin` supplies the
# machinery: the pre-hook that calls your `initialize_parameters(*inputs)` at
# the first call, and the loading of a `state_dict` into placeholders. The
# layer creates each parameter as an `UninitializedParameter()`; its
# `initialize_parameters` gives it a shape with `materialize(shape)` and fills
# it. The mixin comes first among the base classes. Here, a learned scale per
# feature, one for each feature of the first input:

# %%
from torch.nn.modules.lazy import LazyModuleMixin


class LazyFeatureScale(LazyModuleMixin, nn.Module):
    """Multiplies each feature by its own learned scale, starting at 1."""

    def __init__(self):
        super().__init__()
        self.scale = UninitializedParameter()

    def initialize_parameters(self, X):
        if self.has_uninitialized_params():
            with torch.no_grad():
                self.scale.materialize((X.shape[-1],))
                nn.init.ones_(self.scale)

    def forward(self, X):
        return X * self.scale


feature_scale = LazyFeatureScale()
print("before:", is_lazy(feature_scale.scale))
feature_scale(torch.rand(2, 7))
print("after: ", is_lazy(feature_scale.scale), tuple(feature_scale.scale.shape), type(feature_scale.scale).__name__)
reloaded = LazyFeatureScale()
reloaded.load_state_dict(feature_scale.state_dict())
print("a fresh one loads the state_dict:", tuple(reloaded.scale.shape))

# %% [markdown]
# **Dry-run before wrapping for several GPUs.** `DistributedDataParallel`
# checks every parameter when it is built and refuses a placeholder ("Modules
# with uninitialized parameters can't be used with DistributedDataParallel");
# `nn.DataParallel` refuses when it copies the model onto its GPUs, by calling
# each module's `_replicate_for_data_parallel()`, which a lazy module answers
# with an error. (Building the real wrappers needs a process group or several
# GPUs, so we call the refusing method directly.) The dry run comes first.

# %%
unready = nn.Sequential(nn.LazyLinear(4), nn.ReLU(), nn.LazyLinear(1))
print("placeholders DDP would refuse:", [name for name, p in unready.named_parameters() if is_lazy(p)])
try:
    unready[0]._replicate_for_data_parallel()
except RuntimeError as error:
    print("DataParallel's copy: RuntimeError:", str(error).split(".")[0])
materialize(unready, torch.zeros(1, 3))
print("after the dry run:", [name for name, p in unready.named_parameters() if is_lazy(p)])

# %% [markdown]
# **No laziness at all.** The width a lazy layer waits for can also be worked
# out in `__init__`: send an empty batch of the right image size through a
# throwaway copy of the convolutions on the `meta` device, where nothing is
# allocated or drawn, and read the flattened width off the output's shape.
# The model then consists of ordinary layers from the start, so every tool
# (initializers by type, parameter counts, optimizers, the parallel wrappers)
# works at once. The price: the image size is fixed when the model is built,
# which a lazy layer also fixes, at its first call.

# %%
def conv_features(in_channels):
    return nn.Sequential(nn.Conv2d(in_channels, 8, kernel_size=3), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten())


class ConvClassifier(nn.Module):
    def __init__(self, in_channels, height, width, classes):
        super().__init__()
        with torch.device("meta"):  # a throwaway copy: shapes only
            flat = conv_features(in_channels)(torch.empty(1, in_channels, height, width)).shape[-1]
        self.features = conv_features(in_channels)
        self.head = nn.Linear(flat, classes)

    def forward(self, X):
        return self.head(self.features(X))


classifier = ConvClassifier(3, 28, 28, classes=10)
print(classifier.head, "| any placeholders:", any(is_lazy(p) for p in classifier.parameters()))
print("output:", tuple(classifier(torch.zeros(2, 3, 28, 28)).shape))

# %% [markdown]
# ## Summary
#
# - `nn.LazyLinear`, `nn.LazyConv2d`, `nn.LazyBatchNorm1d` and friends leave the
#   input size open; their parameters (and some buffers) are placeholders
#   without shape, `UninitializedParameter` and `UninitializedBuffer`, until the
#   first forward pass or a loaded `state_dict`.
# - The `state_dict` lists the placeholders before, real tensors after.
# - A lazy layer becomes the plain layer (`nn.Linear`) in the pre-hook of its
#   first call, so an initializer keyed on `type(m) == nn.Linear` silently
#   skips lazy layers, and one keyed on `isinstance` fails on the placeholders.
#   After `load_state_dict` the weights are real but the class is still lazy.
# - Do a dry run first, then initialize: one small example batch under
#   `torch.no_grad()` in **eval mode** (a train-mode dry run moves BatchNorm's
#   running statistics even under `no_grad`, and one value per channel fails
#   there), restoring each submodule's own mode in a `finally:` block, also
#   when the dry run raises.
# - An eval-mode dry run skips branches that run only in training mode; check
#   that nothing is still lazy afterwards.
# - Most optimizers (`SGD`, `Adam`) also work when built before the dry run,
#   because the placeholders become the real weights in place; one that creates
#   state in its constructor (`Adagrad`) fails on placeholders. The safe order,
#   the one PyTorch's documentation uses: dry run first, optimizer after.
#   `Muon` takes only 2-D parameters, before or after the dry run: give it the
#   weight matrices and `AdamW` the rest.
# - Only `Linear`, the convolutions and `BatchNorm`/`InstanceNorm` have lazy
#   twins; `LayerNorm`, `Embedding`, RNNs and attention need their sizes.
# - Dry-run before saving: `torch.load`'s default `weights_only=True` refuses
#   a `state_dict` of placeholders; `torch.export` and TorchScript refuse
#   them too.
# - Lazy weights are created on the network's own device and dtype, not the
#   input's: `.to(device, dtype)` first, then the dry run.
# - Lazy layers are initialized after sized ones, so when a sized layer follows
#   a lazy one, the same seed gives other weights than a sized twin.
# - Lazy and sized layers mix freely; a lazy layer infers only its own input
#   width, so mismatched widths still fail, and a failed pass may leave the
#   network half materialized.
# - Once materialized, the feature width is fixed; batch and leading dimensions
#   may vary, and adaptive pooling absorbs varying image sizes. Different
#   feature widths need one input layer each (an `nn.ModuleDict`) in front of a
#   shared body.
# - Dry-run by calling `net(x)`: `net.forward(x)` skips `net`'s own hooks, the
#   ones a lazy layer materializes in.
# - A lazy layer of your own: `LazyModuleMixin` first among the bases,
#   `UninitializedParameter()` in `__init__`, `materialize(shape)` in
#   `initialize_parameters`. Dry-run before `DistributedDataParallel` or
#   `DataParallel`, which refuse placeholders. Or skip laziness: a pass through
#   a `meta` copy of the convolutions in `__init__` gives the width up front.
#
# Now practise in the exercise notebook `exercises/04_lazy_initialization/04_lazy_initialization.ipynb`.
