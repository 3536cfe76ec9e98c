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
#     title: Parameter management
# ---

# %% [markdown]
# # Lesson 2: Parameter management
#
# A model is trained by changing its parameters. This lesson is about reaching
# them: reading them by name, looking at their values and gradients, sharing one
# set between several layers, counting them and freezing some of them.

# %%
import warnings

import torch
from torch import nn

_ = torch.manual_seed(0)

# %% [markdown]
# We start with a small multilayer perceptron: 4 inputs, 8 hidden units, 1 output.

# %%
net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
X = torch.rand(2, 4)
print(net(X).shape)

# %% [markdown]
# ## The `state_dict` of a layer
#
# Every module can hand out its state as an ordered dictionary from names to
# tensors. For the output layer those are its `weight` (shape
# `(out_features, in_features)`) and its `bias`.

# %%
layer_state = net[2].state_dict()
print(type(layer_state).__name__)
for name, tensor in layer_state.items():
    print(name, tuple(tensor.shape), tensor.dtype)

# %% [markdown]
# ## The `state_dict` of a whole net
#
# Asked on a container, the keys carry the path to each tensor: `0.weight` is the
# weight of child `0`. It is a common belief that every layer appears; only
# modules that own parameters or buffers have entries (strictly: persistent
# buffers, plus any extra state a module chooses to save). The ReLU at index 1
# has no state, so it has no keys, while a BatchNorm layer lists its running
# statistics (buffers) next to its weights.

# %%
for name, tensor in net.state_dict().items():
    print(f"{name:10s} {tuple(tensor.shape)}")
print("ReLU:", list(nn.ReLU().state_dict()))
print("BatchNorm1d:", list(nn.BatchNorm1d(4).state_dict()))

# %% [markdown]
# ## What a parameter is
#
# A parameter is an `nn.Parameter`: a tensor subclass that a module registers
# automatically when it is assigned as an attribute. It requires gradients by
# default; `.data` is the same storage seen without autograd.

# %%
bias = net[2].bias
print(type(bias).__name__)
print(isinstance(bias, torch.Tensor), bias.requires_grad)
print(bias.data)

# %% [markdown]
# "Seen without autograd" is meant literally. Tutorials often edit weights with
# `param.data += 1` as if it were a harmless shortcut; it changes the values
# behind autograd's back. Autograd keeps a reference to the tensors a backward
# pass needs, not a copy, so a backward pass after the edit computes the
# gradient from the new values, silently wrong. The same edit written as
# `with torch.no_grad(): param += 1` is still an in-place change autograd
# tracks (it counts versions of every tensor), so backward notices and raises
# instead of returning garbage. Edit parameters under `torch.no_grad()`, not
# through `.data`.

# %%
w = nn.Parameter(torch.tensor([2.0]))
loss = (w * w).sum()          # d(loss)/dw = 2w = 4 at w = 2; autograd saves w
w.data += 1                   # invisible to autograd
loss.backward()
print("after a .data edit, grad =", w.grad.item(), "(2w was 4 when the loss was computed)")

w = nn.Parameter(torch.tensor([2.0]))
loss = (w * w).sum()
with torch.no_grad():
    w += 1                    # autograd records that w changed
try:
    loss.backward()
except RuntimeError as error:
    print("after a no_grad edit: RuntimeError:", str(error).split(":")[0])

# %% [markdown]
# ## `grad` is `None` until the first backward pass
#
# The `.grad` slot is created by `backward()`, not by the constructor.

# %%
print(net[2].weight.grad is None)
net(X).sum().backward()
print(net[2].weight.grad is None, net[2].weight.grad.shape)

# %% [markdown]
# ## All parameters at once
#
# `parameters()` yields the tensors (what an optimizer needs);
# `named_parameters()` yields `(qualified name, tensor)` pairs, the same names as
# in the `state_dict`.

# %%
print(len(list(net.parameters())))
for name, param in net.named_parameters():
    print(f"{name:10s} {tuple(param.shape)}")

# %% [markdown]
# A qualified name also works as a key into the `state_dict`, and as a path with
# `get_parameter`.

# %%
print(torch.equal(net.state_dict()["2.bias"], net[2].bias))
print(net.get_parameter("2.bias") is net[2].bias)

# %% [markdown]
# ## Nested blocks from factory functions
#
# A function that returns a fresh block can be called in a loop; `add_module`
# gives each copy a name of our choice, here with a space in it. (A name may
# not contain a dot, be empty, or repeat an existing attribute such as
# `forward`: lesson 1 shows the `KeyError`.)

# %%
def block1():
    return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 4), nn.ReLU())


def block2():
    net = nn.Sequential()
    for i in range(4):
        net.add_module(f"block {i}", block1())
    return net


torch.manual_seed(1)
rgnet = nn.Sequential(block2(), nn.Linear(4, 1))
print(rgnet)

# %% [markdown]
# The qualified names now have three levels: outer index, block name, layer index.

# %%
names = [name for name, _ in rgnet.named_parameters()]
print(len(names))
print(names[:4])

# %% [markdown]
# Indexing walks the same path. In an `nn.Sequential` an integer picks the
# i-th child whatever its name; a name needs attribute access (`getattr`, since
# this one has a space) or `get_submodule`.

# %%
first = rgnet[0][1][0]
print(first)
print(first is getattr(rgnet[0], "block 1")[0])
print(first is rgnet.get_submodule("0.block 1.0"))

# %% [markdown]
# ## Tied parameters: one module, used twice
#
# Putting the *same* module object at two places in a net makes both places use
# one set of parameters. The indices differ but the objects are identical.

# %%
torch.manual_seed(2)
shared = nn.Linear(8, 8)
tied = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), shared, nn.ReLU(), shared, nn.ReLU(), nn.Linear(8, 1))
print(tied[2] is tied[4])
print(tied[2].weight is tied[4].weight)

# %% [markdown]
# Editing one place edits the other: there is only one tensor.

# %%
with torch.no_grad():
    tied[2].weight[0, 0] = 100.0
print(tied[4].weight[0, 0].item())

# %% [markdown]
# `named_parameters()` lists the shared tensors once, under their first name
# (`2.weight`); the `state_dict` keeps one entry per place (`4.weight` too).

# %%
print([name for name, _ in tied.named_parameters()])
print(list(tied.state_dict()))

# %% [markdown]
# ## Gradients of both uses add up
#
# If a weight is used twice, the chain rule gives a sum: one term per use. To see
# it, build an *untied* twin in which places 2 and 4 are two separate copies with
# the same values. The twin computes the same output, but its two copies collect
# the gradient of each use separately.

# %%
import copy

torch.manual_seed(3)
shared = nn.Linear(8, 8)
tied = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), shared, nn.ReLU(), shared, nn.ReLU(), nn.Linear(8, 1))
untied = copy.deepcopy(tied)                # deepcopy keeps the tie ...
untied[4] = copy.deepcopy(untied[2])        # ... so give place 4 its own copy
print(tied[2] is tied[4], untied[2] is untied[4])

X = torch.rand(16, 4)
print(torch.allclose(tied(X), untied(X)))

# %% [markdown]
# One backward pass through each: the tied weight's gradient equals the sum of
# the two per-use gradients of the twin.

# %%
tied(X).sum().backward()
untied(X).sum().backward()

per_use_sum = untied[2].weight.grad + untied[4].weight.grad
print(torch.allclose(tied[2].weight.grad, per_use_sum))
print(torch.allclose(tied[2].weight.grad, untied[2].weight.grad))  # one use alone is not enough

# %% [markdown]
# ## Gradients accumulate until zeroed
#
# `backward()` *adds* into `.grad`; it never overwrites it. Two backward passes on
# the same loss give twice the gradient of one.

# %%
torch.manual_seed(4)
layer = nn.Linear(3, 1)
x = torch.rand(5, 3)

layer(x).sum().backward()
once = layer.weight.grad.clone()
layer(x).sum().backward()
print(torch.allclose(layer.weight.grad, 2 * once))

# %% [markdown]
# That is why a training loop clears the gradients before each step, with
# `optimizer.zero_grad()` or `module.zero_grad()`. Since PyTorch 2.0 both set
# `.grad` back to `None` by default.

# %%
layer.zero_grad()
print(layer.weight.grad is None)
layer(x).sum().backward()
print(torch.allclose(layer.weight.grad, once))

# %% [markdown]
# Accumulation is also a feature: summing the gradients of several small batches
# before one optimizer step gives the gradient of one big batch (here with a sum
# loss, so the parts simply add up).

# %%
layer.zero_grad()
layer(x[:2]).sum().backward()
layer(x[2:]).sum().backward()
print(torch.allclose(layer.weight.grad, once))

# %% [markdown]
# ## Counting parameters
#
# The size of a model is the number of scalars in its parameters. `parameters()`
# already skips duplicates, so a tied weight is counted once.

# %%
def count(module):
    return sum(p.numel() for p in module.parameters())


print(count(net), count(rgnet))
print(count(tied), count(untied))

# %% [markdown]
# ## Freezing parameters
#
# Setting `requires_grad=False` freezes a parameter: backward no longer computes
# its gradient, so an optimizer leaves it alone, as long as its `.grad` is
# `None` (more on that below). A common use is fine-tuning only the last layer
# of a pretrained net.

# %%
for name, param in rgnet.named_parameters():
    if name.startswith("0."):
        param.requires_grad_(False)

trainable = sum(p.numel() for p in rgnet.parameters() if p.requires_grad)
print(trainable, "of", count(rgnet))

rgnet(torch.rand(2, 4)).sum().backward()
print(rgnet[0][0][0].weight.grad is None, rgnet[1].weight.grad is not None)

# %% [markdown]
# Should the optimizer get only the trainable parameters? The optimizers in
# `torch.optim` skip every parameter whose `.grad` is `None`: no step, no
# weight decay, no momentum. A parameter frozen before it ever had a gradient
# keeps `.grad` at `None`, so for the update itself it makes no difference
# whether the optimizer holds it. It is *not* true that an optimizer given
# every parameter keeps state for the frozen ones: plain SGD (no momentum)
# keeps no state at all, and SGD with momentum, Adam and most others create a
# parameter's state at its first step with a gradient. What does differ:
#
# - Adagrad is the exception: it allocates its running sum for every parameter
#   it holds as soon as it is built, frozen ones included;
# - a parameter frozen after a `backward()` still has that `.grad`, and an
#   optimizer that holds it applies the stale gradient at its next step (next
#   cell); `zero_grad()` sets it to `None`, which stops the updates, while a
#   gradient of zeros does not (the cell after);
# - unfreezing later (`requires_grad_(True)`) makes it train again only with an
#   optimizer that holds it;
# - `param_groups` list exactly what you gave, which is what you see when you
#   inspect or checkpoint the optimizer.
#
# Passing only the trainable ones states the intent and rules out stale and
# zeroed gradients alike.

# %%
trainable_params = [p for p in rgnet.parameters() if p.requires_grad]
for opt_class in (torch.optim.SGD, torch.optim.Adam, torch.optim.Adagrad):
    given_all = opt_class(rgnet.parameters(), lr=0.1)
    given_trainable = opt_class(trainable_params, lr=0.1)
    for opt in (given_all, given_trainable):
        opt.step()                            # rgnet has gradients from the backward pass above
    held = [sum(len(g["params"]) for g in opt.param_groups) for opt in (given_all, given_trainable)]
    with_state = [len(opt.state) for opt in (given_all, given_trainable)]
    print(f"{opt_class.__name__:8s} holds {held[0]:2d} vs {held[1]} tensors,"
          f" keeps state for {with_state[0]:2d} vs {with_state[1]}")

torch.manual_seed(3)
layer = nn.Linear(2, 1)
layer(torch.ones(1, 2)).sum().backward()
layer.weight.requires_grad_(False)           # frozen after backward: .grad is still there
before = layer.weight.detach().clone()
torch.optim.SGD(layer.parameters(), lr=0.1).step()
print("a stale gradient still moved the frozen weight:", not torch.equal(before, layer.weight))

# %% [markdown]
# A zeroed gradient is not the same as no gradient. `zero_grad(set_to_none=False)`
# (the default before PyTorch 2.0, and still found in older code) fills
# `.grad` with zeros instead of removing it. The optimizer then steps the
# frozen parameter like any other: SGD's momentum keeps moving it along its
# old velocity, Adam keeps stepping on its running averages of past gradients,
# and weight decay keeps shrinking it. With `None` it stays put.

# %%
optimizers = {
    "SGD, momentum 0.9  ": lambda params: torch.optim.SGD(params, lr=0.1, momentum=0.9),
    "AdamW, weight decay": lambda params: torch.optim.AdamW(params, lr=0.1, weight_decay=0.1),
}
for label, make_optimizer in optimizers.items():
    for set_to_none in (True, False):
        torch.manual_seed(3)
        layer = nn.Linear(2, 1)
        optimizer = make_optimizer(layer.parameters())
        layer(torch.ones(1, 2)).sum().backward()
        optimizer.step()                          # one ordinary step fills momentum / moments
        layer.weight.requires_grad_(False)        # freeze the weight, keep training the bias
        optimizer.zero_grad(set_to_none=set_to_none)
        before = layer.weight.detach().clone()
        layer(torch.ones(1, 2)).sum().backward()
        optimizer.step()
        state = "None " if layer.weight.grad is None else "zeros"
        print(f"{label} | frozen weight's grad {state} | moved: {not torch.equal(before, layer.weight)}")

# %% [markdown]
# ## Training a tied network
#
# Do tied weights stay tied while training, and what does the shared layer's
# gradient look like? Take the tied MLP from above and train it for a few SGD
# steps on random data, watching every layer's gradient and the shared weight.
# A forward hook on the shared layer records, for each of its two calls, the
# weight gradient that call contributes (for `y = x @ W.T + b` that is
# `grad_y.T @ x`), so each step can check that `.grad` is their sum.

# %%
torch.manual_seed(4)
shared = nn.Linear(8, 8)
tied = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), shared, nn.ReLU(), shared, nn.ReLU(), nn.Linear(8, 1))
X, y = torch.randn(64, 4), torch.randn(64, 1)
optimizer = torch.optim.SGD(tied.parameters(), lr=0.05)
print("tensors the optimizer holds:", sum(len(g["params"]) for g in optimizer.param_groups),
      "(an untied twin, with four Linear layers, would hold 8)")

per_call = []  # one weight-gradient term per call of `shared`, filled during backward


def record_call(module, inputs, output):
    x = inputs[0].detach()
    output.register_hook(lambda grad_y: per_call.append(grad_y.T @ x))


hook = shared.register_forward_hook(record_call)
start = shared.weight.detach().clone()
print("norms of the weight gradients of the first, shared and last layers, and of the shared")
print("gradient's two terms (call 1, call 2), with the cosine between those terms\n")
print(f"{'step':>4} {'loss':>7} {'first':>7} {'shared':>7} {'call 1':>7} {'call 2':>7} {'last':>7} {'cosine':>7}  one tensor")
for step in range(5):
    optimizer.zero_grad()
    per_call.clear()
    loss = nn.functional.mse_loss(tied(X), y)
    loss.backward()
    assert len(per_call) == 2 and torch.allclose(shared.weight.grad, per_call[0] + per_call[1], atol=1e-7)
    first, shared_grad, last = (tied[i].weight.grad.norm().item() for i in (0, 2, 6))
    call_2, call_1 = (term.norm().item() for term in per_call)  # backward reaches the later call first
    cosine = nn.functional.cosine_similarity(per_call[0].flatten(), per_call[1].flatten(), dim=0).item()
    optimizer.step()
    print(f"{step:4d} {loss.item():7.4f} {first:7.4f} {shared_grad:7.4f} {call_1:7.4f} {call_2:7.4f} {last:7.4f}"
          f" {cosine:+7.2f}  {tied[2].weight is tied[4].weight}")
hook.remove()
print(f"the shared weight moved by {(shared.weight - start).norm().item():.4f} in 5 steps;"
      f" places 2 and 4 still equal: {torch.equal(tied[2].weight, tied[4].weight)}")

# %% [markdown]
# The two places never drift apart: there is one tensor, updated once per step.
# Its gradient is the sum of one term per call (the loop checks that at every
# step). The table shows the norm of that sum next to each term's norm, and the
# cosine between the two terms. Here the terms are far from parallel (a small
# negative cosine), yet the sum is longer than either term, so the shared weight
# takes a bigger step than either use alone would ask for. Terms pointing the
# same way would add up to nearly the sum of their norms; strongly opposed
# terms would cancel and the shared weight would hardly move.

# %% [markdown]
# ## In practice: snapshots and parameter groups
#
# `state_dict()` does not copy anything. Its tensors are the module's own
# parameters and buffers (detached from autograd, but sharing their memory), so
# the dictionary changes whenever the model does. Keeping
# `best = model.state_dict()` as "the best model so far" keeps a window onto
# the live weights, and every later optimizer step moves it. A snapshot needs
# copies: clone every tensor, or `copy.deepcopy` the whole dictionary.
# (`torch.save` writes copies to disk, so a saved file is safe.)

# %%
torch.manual_seed(5)
model = nn.Sequential(nn.Linear(4, 8), nn.LayerNorm(8), nn.ReLU(), nn.Linear(8, 1))
best = model.state_dict()                                         # shares memory with the model
snapshot = {name: t.clone() for name, t in model.state_dict().items()}
with torch.no_grad():
    model[0].weight.add_(1.0)                                     # training goes on
print("state_dict() followed the change:", torch.equal(best["0.weight"], model[0].weight))
print("the cloned snapshot kept the old values:", not torch.equal(snapshot["0.weight"], model[0].weight))
print("copy.deepcopy copies too:", copy.deepcopy(best)["0.weight"].data_ptr() != model[0].weight.data_ptr())

# %% [markdown]
# An optimizer does not need one setting for all parameters. Given a list of
# dictionaries, each with its own `"params"`, it keeps one *parameter group*
# per dictionary, and any setting written in a group overrides the default for
# that group. Two common uses:
#
# - a smaller learning rate for a pretrained body than for a new head;
# - no weight decay on biases and normalization weights. Decay pulls values
#   towards zero, a sensible prior for a weight matrix but not for a bias or a
#   LayerNorm scale (a scale of zero switches its unit off), and there are few
#   of them to regularize anyway. In a model built from linear layers and
#   LayerNorm, like this one, they are exactly the parameters with one
#   dimension. That rule is a shortcut, not a law: an embedding table has two
#   dimensions, a learned scalar none, so in other models pick the groups by
#   module type or by name.
#
# A parameter may sit in one group only: listed in two groups, the optimizer
# raises `ValueError`. Listed twice *inside one group*, it only warns and then
# updates that tensor once per listing (shown below).

# %%
matrices = [p for p in model.parameters() if p.ndim >= 2]
vectors = [p for p in model.parameters() if p.ndim < 2]       # biases and LayerNorm weights
optimizer = torch.optim.AdamW([
    {"params": matrices, "weight_decay": 0.01},
    {"params": vectors, "weight_decay": 0.0},
], lr=1e-3)
for group in optimizer.param_groups:
    print(f"{len(group['params'])} tensors, lr {group['lr']}, weight decay {group['weight_decay']}")

optimizer = torch.optim.SGD([
    {"params": model[:3].parameters(), "lr": 1e-4},   # a pretrained body: small steps
    {"params": model[3].parameters()},                # the new head: the default below
], lr=1e-2, momentum=0.9)
print([group["lr"] for group in optimizer.param_groups])
try:
    torch.optim.SGD([{"params": matrices}, {"params": model.parameters()}], lr=0.1)
except ValueError as error:
    print("ValueError:", error)

# %% [markdown]
# Tied models are where a duplicate slips in. `model.parameters()` yields each
# tensor once, but a list built module by module, `[*model[2].parameters(),
# *model[4].parameters()]` for a module used at places 2 and 4, holds the
# shared tensors twice. The optimizer warns, then steps each listing: with
# plain SGD the shared weight moves by `2 * lr * grad` instead of
# `lr * grad` (here on the CPU; momentum and Adam's moments are likewise
# applied per listing). Build groups from `parameters()` or
# `named_parameters()`, which skip repeats.

# %%
torch.manual_seed(9)
shared = nn.Linear(3, 3)
tied_pair = nn.Sequential(nn.Linear(3, 3), nn.Tanh(), shared, nn.Tanh(), shared)
per_module = [p for i in (0, 2, 4) for p in tied_pair[i].parameters()]
print("tensors: parameters()", len(list(tied_pair.parameters())), "| concatenated per module", len(per_module))
for label, params in [("parameters()", tied_pair.parameters()), ("per module  ", per_module)]:
    tied_pair.zero_grad()
    tied_pair(torch.ones(2, 3)).sum().backward()
    before, grad = shared.weight.detach().clone(), shared.weight.grad.clone()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sgd = torch.optim.SGD(params, lr=0.1)
    sgd.step()
    moved = (shared.weight.detach() - before).norm() / (0.1 * grad.norm())
    print(f"{label}: warnings {len(caught)}, shared weight moved by {moved.item():.1f} x lr x grad")

# %% [markdown]
# ## What comes next: tied embeddings, frozen BatchNorm, accumulation with a mean loss
#
# **One parameter in two modules.** Tying does not need the same module twice:
# assigning one `nn.Parameter` to two modules registers it in both. Language
# models tie their output layer to their input embedding this way
# (`head.weight = embedding.weight`): an `nn.Embedding(vocab, d)` weight and an
# `nn.Linear(d, vocab)` weight have the same shape `(vocab, d)`.

# %%
torch.manual_seed(6)
vocab, d = 100, 16
embedding, head = nn.Embedding(vocab, d), nn.Linear(d, vocab, bias=False)
head.weight = embedding.weight                       # one tensor, registered in both
language_model = nn.Sequential(embedding, nn.Linear(d, d), nn.Tanh(), head)
print("the same object:", language_model[3].weight is language_model[0].weight)
print("counted once:", count(language_model), "=", vocab * d, "+", d * d + d)
tokens = torch.tensor([[1, 5, 7]])
language_model(tokens).sum().backward()
rows = int((embedding.weight.grad != 0).any(dim=1).sum())
print(f"rows with a gradient: {rows} of {vocab} (the embedding's use alone reaches only the 3 tokens' rows;"
      " the head's use reaches them all)")

# %% [markdown]
# **Frozen is not constant.** `requires_grad_(False)` stops gradients, nothing
# else. A BatchNorm layer in training mode still updates its running mean and
# variance, which are buffers, at every forward pass, so a "frozen" backbone
# keeps drifting. To really freeze a BatchNorm, also put it in `eval()` mode,
# and again after every `model.train()`, which switches it back.

# %%
torch.manual_seed(7)
norm = nn.BatchNorm1d(4).requires_grad_(False)
before = norm.running_mean.clone()
norm(torch.randn(8, 4) + 3)
print("requires_grad_(False), train mode: running mean moved:", not torch.equal(norm.running_mean, before))
norm.eval()
before = norm.running_mean.clone()
norm(torch.randn(8, 4) + 3)
print("eval mode: running mean moved:", not torch.equal(norm.running_mean, before))

# %% [markdown]
# **Accumulation with a mean loss.** The accumulation above used a sum loss.
# With the usual mean loss, each micro-batch's gradient is already an
# average, so adding `k` of them gives `k` times the big batch's gradient:
# divide each micro-batch's loss by `k` (for micro-batches of equal size).

# %%
torch.manual_seed(8)
layer, x, y = nn.Linear(3, 1), torch.rand(8, 3), torch.rand(8, 1)
mse = nn.functional.mse_loss
layer.zero_grad()
mse(layer(x), y).backward()
big_batch = layer.weight.grad.clone()
for divide in (False, True):
    layer.zero_grad()
    k = 4
    for xs, ys in zip(x.chunk(k), y.chunk(k)):
        loss = mse(layer(xs), ys)
        (loss / k if divide else loss).backward()
    print(f"losses divided by k: {divide!s:5}  equals the big batch's gradient:",
          torch.allclose(layer.weight.grad, big_batch), f"(ratio {(layer.weight.grad / big_batch).mean().item():.1f})")

# %% [markdown]
# **One number for all the gradients, and clipping.** The health of a
# training run is often read from one number: the norm of *all* gradients
# together, the 2-norm of the vector you get by laying every `.grad` end to
# end. A spike in it often comes just before the loss blows up. Capping it is
# *gradient clipping*: `torch.nn.utils.clip_grad_norm_(model.parameters(),
# max_norm)`, called between `backward()` and `step()`, computes that norm
# and, when it exceeds `max_norm`, multiplies every gradient in place by
# `max_norm / (norm + 1e-6)`, so the step keeps its direction and loses
# length. It returns the norm *before* clipping, the number to log.
# `torch.nn.utils.get_total_norm(grads)` (torch 2.6 and later) computes the
# norm alone, from a list of gradient tensors. Because `parameters()` lists a
# tied weight once, its summed gradient counts once in the norm.

# %%
torch.manual_seed(10)
model = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 1))
X, y = torch.randn(32, 4), 50 * torch.randn(32, 1)  # large targets: large gradients
nn.functional.mse_loss(model(X), y).backward()
grads = [p.grad for p in model.parameters() if p.grad is not None]
by_hand = torch.cat([g.flatten() for g in grads]).norm()
print(f"norm of all gradients: by hand {by_hand.item():.2f}, get_total_norm {torch.nn.utils.get_total_norm(grads).item():.2f}")
returned = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
print(f"clip_grad_norm_ returned {returned.item():.2f} (the norm before clipping);"
      f" after it the norm is {torch.nn.utils.get_total_norm(grads).item():.4f}")

# %% [markdown]
# **Parameters under a constraint.** Sometimes a weight should stay
# symmetric, orthogonal or of fixed length while it trains. A
# *parametrization* keeps an unconstrained tensor as the parameter and
# recomputes the weight from it, through a small module, every time
# `layer.weight` is read: `torch.nn.utils.parametrize.register_parametrization
# (layer, "weight", module)`. The optimizer trains the unconstrained tensor,
# now at `parametrizations.weight.original` (and so in the `state_dict` under
# that name), and every weight it produces satisfies the constraint. Two
# ready-made ones live in `torch.nn.utils.parametrizations`: `orthogonal`
# keeps a square weight orthogonal, and `weight_norm` splits it into a length
# per output row (`original0`) and a direction (`original1`, whose own length
# does not matter); it replaces the
# older `torch.nn.utils.weight_norm`, which is deprecated. A weight used many
# times in one forward pass (a tied layer) is recomputed at each use unless
# the pass runs inside `with parametrize.cached():`.

# %%
from torch.nn.utils import parametrize
from torch.nn.utils.parametrizations import orthogonal, weight_norm


class Symmetric(nn.Module):
    def forward(self, A):
        return A.triu() + A.triu(1).T  # the upper triangle, mirrored


torch.manual_seed(11)
layer = nn.Linear(3, 3)
parametrize.register_parametrization(layer, "weight", Symmetric())
print("parameters:", [name for name, _ in layer.named_parameters()])
rotation = orthogonal(nn.Linear(4, 4))
sgd = torch.optim.SGD([*layer.parameters(), *rotation.parameters()], lr=0.5)
for _ in range(3):
    sgd.zero_grad()
    (layer(torch.randn(8, 3)).pow(2).sum() + rotation(torch.randn(8, 4))[:, 0].sum()).backward()
    sgd.step()
W, Q = layer.weight.detach(), rotation.weight.detach()
print("after 3 steps: symmetric:", torch.equal(W, W.T), "| orthogonal:", torch.allclose(Q @ Q.T, torch.eye(4), atol=1e-5))
normed = weight_norm(nn.Linear(4, 3))
print("weight_norm:", {name: tuple(p.shape) for name, p in normed.named_parameters() if "original" in name})

# %% [markdown]
# ## Summary
#
# - `state_dict()` maps qualified names to tensors; `named_parameters()` gives the
#   same names with the `nn.Parameter` objects.
# - A parameter's `.grad` is `None` until `backward()`, and then backward passes
#   **add** into it until it is zeroed.
# - Names come from attribute names, indices or `add_module`; integers, names and
#   `get_submodule` all reach nested layers.
# - One module object used twice ties its parameters: one tensor, edits seen at
#   both places, gradients of the uses summed. `parameters()` lists it once.
# - Count with `numel()`; freeze with `requires_grad_(False)`. Optimizers skip
#   parameters whose `.grad` is `None` and most keep no state for them (Adagrad
#   does); give them only the trainable ones so that neither a stale nor a
#   zeroed gradient can move a frozen one.
# - Training keeps tied places identical; the shared gradient is the sum of one
#   term per use.
# - Only modules with parameters or buffers have `state_dict` entries.
# - Edit parameters under `torch.no_grad()`; `param.data` edits bypass autograd.
# - A gradient of zeros is still a gradient: momentum, Adam's moments and weight
#   decay keep moving a frozen parameter unless its `.grad` is `None`.
# - `state_dict()` shares memory with the model: clone it for a snapshot.
# - Parameter groups give parts of a model their own learning rate or weight
#   decay (none for biases and normalization weights). A tensor in two groups
#   raises; twice in one group it warns and is stepped twice: build groups from
#   `parameters()`, which lists a tied tensor once.
# - One `nn.Parameter` assigned to two modules is tied like a shared module
#   (`head.weight = embedding.weight`).
# - `requires_grad_(False)` leaves BatchNorm's running statistics updating in
#   training mode: freeze it with `eval()` too.
# - Accumulating the gradients of `k` micro-batches with a mean loss needs each
#   loss divided by `k`.
# - `clip_grad_norm_` caps the norm of all gradients together and returns it
#   before clipping (log it); `get_total_norm` computes it alone.
# - A parametrization (`register_parametrization`, `orthogonal`,
#   `weight_norm`) trains an unconstrained tensor and recomputes the
#   constrained weight from it at every read.
#
# Now try it yourself: `exercises/02_parameters/02_parameters.ipynb`.
