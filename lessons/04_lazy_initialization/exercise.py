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
# # Exercise 4: Lazy initialization
#
# Three small tools for working with lazy layers, a network for inputs of
# varying width, and two questions to answer.
# Write your code where it says `YOUR CODE HERE` (delete the
# `raise NotImplementedError()` line), then run the test cell under it: silence
# means the visible checks pass. When grading, more checks of the same behaviour
# run on other inputs, so make the code right, not just the examples.
#
# Each requirement the tests check ends with its name in brackets, such as
# `[clause call_module]`: a test that fails is about one of them.
#
# Use only `torch`, the standard library, `numpy` and `matplotlib`.

# %%
import torch
from torch import nn

_ = torch.manual_seed(0)  # the same random examples on every run

# %% [markdown]
# ## 1. Is anything still lazy?
#
# Write `has_uninitialized_params(module)`: it returns `True` while **any** [clause any]
# parameter or buffer of `module`, or of any module inside it, [clause any_inside] is still a lazy
# placeholder, and `False` otherwise. Parameters wait as
# `torch.nn.parameter.UninitializedParameter`, buffers as
# `torch.nn.parameter.UninitializedBuffer`: a `LazyBatchNorm1d(affine=False)`
# has no parameters at all, but its running statistics are lazy buffers, so it
# counts as lazy [clause buffers] (torch's own `has_uninitialized_params()` method of a lazy
# layer counts buffers too). A placeholder stops being lazy as soon as it gets a
# shape: after the first forward pass, or when a `state_dict` is loaded into it.
# The module's class is no guide: [clause not_class] after `load_state_dict` a `LazyLinear` keeps
# its class until its first call, though its weights are real.
#
# Hint: a placeholder cannot tell you its shape (`.shape` raises an error, and
# `.size()` gives a dummy `(0,)`, the very shape of a real empty tensor such as
# `torch.empty(0)`, which is not lazy); test what kind of object it is. [clause kind_not_size]

# %% answer grade_id="has_uninitialized_params"
def has_uninitialized_params(module):
    ### BEGIN SOLUTION
    placeholders = (nn.parameter.UninitializedParameter, nn.parameter.UninitializedBuffer)
    tensors = [*module.parameters(), *module.buffers()]
    return any(isinstance(t, placeholders) for t in tensors)
    ### END SOLUTION

# %% tests grade_id="test_has_uninitialized_params" points=2
_net = nn.Sequential(nn.LazyLinear(4), nn.ReLU(), nn.LazyLinear(2))
try:
    _result = has_uninitialized_params(_net)
except (ValueError, RuntimeError) as _error:
    raise AssertionError("A placeholder has no shape yet (.shape raises RuntimeError, .numel() ValueError, .size() "
                         "gives a dummy (0,)): test what kind of object each parameter is instead.") from _error
assert _result is True, "A network of fresh lazy layers still has placeholders: expected True."
with torch.no_grad():
    _net(torch.zeros(1, 3))
assert has_uninitialized_params(_net) is False, \
    "After a forward pass every weight has a shape: expected False."
assert has_uninitialized_params(nn.Linear(3, 2)) is False, "A sized nn.Linear has no lazy parameters: expected False."
_mixed = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.LazyLinear(2))
assert has_uninitialized_params(_mixed) is True, \
    "One lazy layer among sized ones is enough for True: are you requiring all parameters to be lazy?"
_stats = nn.LazyBatchNorm1d(affine=False)  # no parameters, two lazy buffers
assert has_uninitialized_params(_stats) is True, \
    "LazyBatchNorm1d(affine=False) has lazy buffers (UninitializedBuffer): look at module.buffers() too."
_stats.eval()
with torch.no_grad():
    _stats(torch.zeros(2, 4))
assert has_uninitialized_params(_stats) is False, \
    "After a forward pass the lazy buffers have shapes too: expected False."
_loaded = nn.LazyLinear(3)
_loaded.load_state_dict(nn.Linear(4, 3).state_dict())
assert has_uninitialized_params(_loaded) is False, \
    "A lazy layer whose weights were loaded from a state_dict has real weights (its class is still LazyLinear " \
    "until its first call): test the parameters, not the module's class."
_empty = nn.Linear(3, 2)
_empty.register_buffer("mask", torch.empty(0))  # a real buffer that happens to hold nothing
assert has_uninitialized_params(_empty) is False, \
    "A real empty buffer (torch.empty(0), size (0,)) is not lazy, though a placeholder's dummy size is (0,) too: " \
    "test whether each tensor is an UninitializedParameter or UninitializedBuffer, not its size."
### BEGIN HIDDEN TESTS
assert has_uninitialized_params(nn.ReLU()) is False, "A module without parameters has nothing lazy: expected False."
assert has_uninitialized_params(nn.Sequential()) is False, "An empty container has nothing lazy: expected False."
_deep = nn.Sequential(nn.Sequential(nn.Linear(2, 2), nn.Sequential(nn.LazyLinear(3))), nn.Linear(3, 1))
assert has_uninitialized_params(_deep) is True, \
    "A lazy layer nested two containers deep was missed: look at all parameters, not just the top module's own."
assert has_uninitialized_params(nn.LazyLinear(5)) is True, "A single fresh LazyLinear is lazy: expected True."
_loaded = nn.LazyConv2d(2, 3)
_loaded.load_state_dict(nn.Conv2d(4, 2, 3).state_dict())
assert has_uninitialized_params(_loaded) is False, \
    "A lazy convolution whose weights were loaded from a state_dict has real weights: test the parameters, not the class."
_deep_stats = nn.Sequential(nn.Linear(3, 5), nn.Sequential(nn.ReLU(), nn.LazyBatchNorm1d(affine=False)))
assert has_uninitialized_params(_deep_stats) is True, \
    "A lazy buffer nested inside sized layers was missed: look at every buffer, not just the top module's own."
_loaded_stats = nn.LazyBatchNorm2d(affine=False)
_loaded_stats.load_state_dict(nn.BatchNorm2d(6, affine=False).state_dict())
assert has_uninitialized_params(_loaded_stats) is False, \
    "Lazy buffers loaded from a state_dict have shapes now: expected False."
assert has_uninitialized_params(nn.BatchNorm1d(4)) is False, \
    "A sized BatchNorm has ordinary buffers (running statistics), nothing lazy: expected False."
_conv = nn.Sequential(nn.LazyConv2d(2, 3), nn.Flatten(), nn.Linear(8, 1))
assert has_uninitialized_params(_conv) is True, "A lazy convolution is lazy too: expected True."
_result = has_uninitialized_params(_net)
assert isinstance(_result, bool), f"Return a plain bool, not {type(_result).__name__}."
_holder = nn.Module()
_holder.unused = nn.Parameter(torch.zeros(0))  # a real parameter with no entries
assert has_uninitialized_params(nn.Sequential(nn.Linear(2, 2), nn.Sequential(_holder))) is False, \
    "A real parameter of size (0,) is not lazy, though a placeholder's dummy size is (0,) too: test whether each " \
    "tensor is an UninitializedParameter or UninitializedBuffer, not its size."
_empty_lazy = nn.Sequential(nn.LazyLinear(2))
_empty_lazy.register_buffer("mask", torch.empty(0))
assert has_uninitialized_params(_empty_lazy) is True, \
    "A lazy layer next to a real empty buffer is still lazy: expected True."
_fresh, _loaded = nn.LazyLinear(3), nn.LazyLinear(3)  # both print as LazyLinear(in_features=0, ...)
_loaded.load_state_dict(nn.Linear(4, 3).state_dict())
assert bool(has_uninitialized_params(_fresh)) and not has_uninitialized_params(_loaded), \
    "Two LazyLinear layers that print alike, one still lazy and one loaded from a state_dict, should get their own " \
    "answers: look at the module given, on every call."
### END HIDDEN TESTS

# %% [markdown]
# ## 2. Dry run, then initialize
#
# Write `apply_init(net, example_input, init_fn=None)`:
#
# 1. materialize every lazy parameter with a dry forward pass of `example_input`
#    through `net`, **without recording gradients** [clause no_grad] and **in eval mode**, so that [clause modes_eval]
#    BatchNorm layers (with the default `track_running_stats=True`) neither
#    update their running statistics nor reject an input with one value per
#    channel (such as one sample);
# 2. give every submodule back its **own** previous training mode, [clause modes] in a
#    `try`/`finally`, so that this happens **also when the dry run raises**; [clause when_it_raises]
#    the error itself still reaches the caller (do not catch it); [clause when_it_raises_error]
# 3. then, if `init_fn` is given, [clause after_dry_run] apply it to every submodule with `net.apply`; [clause init_fn_apply]
# 4. return `net`. [clause returns_net]
#
# Remember the mode of every submodule (`net.modules()`), not just of `net`, and
# restore each one; calling `net.train()` afterwards is not the same. For
# example:
#
# ```python
# net = nn.Sequential(nn.LazyLinear(4), nn.LazyBatchNorm1d(), nn.ReLU())  # in train() when built
# net[1].eval()                      # BatchNorm frozen on purpose, e.g. for fine-tuning
# apply_init(net, torch.randn(1, 3))
# net.training, net[1].training      # (True, False): each module got its own mode back
# ```
#
# Call the network as `net(example_input)`: a lazy layer fills in its shape in
# a forward pre-hook, and `net.forward(...)` skips the hooks of `net` itself (so
# a bare `nn.LazyLinear` passed as `net` would never materialize). [clause call_module] After
# `apply_init` the network must train normally: a later forward pass with
# gradients and `backward()` has to work. [clause trains_after]

# %% answer grade_id="apply_init"
def apply_init(net, example_input, init_fn=None):
    ### BEGIN SOLUTION
    modes = {module: module.training for module in net.modules()}
    net.eval()
    try:
        with torch.no_grad():
            net(example_input)
    finally:
        for module, training in modes.items():
            module.train(training)
    if init_fn is not None:
        net.apply(init_fn)
    return net
    ### END SOLUTION

# %% tests grade_id="test_apply_init" points=1
def _is_placeholder(p):
    return isinstance(p, nn.parameter.UninitializedParameter)

def _ones_init(m):
    """Keyed on the exact type, like many initializers in the wild."""
    if type(m) == nn.Linear:
        nn.init.ones_(m.weight)
        nn.init.zeros_(m.bias)

_net = nn.Sequential(nn.LazyLinear(8), nn.ReLU(), nn.LazyLinear(3))
_out = apply_init(_net, torch.zeros(2, 5))
assert _out is _net, "apply_init should return the network it was given."
assert not any(_is_placeholder(p) for p in _net.parameters()), \
    "Some parameters are still lazy: did you run example_input through the network?"
assert _net[0].weight.shape == (8, 5) and _net[2].weight.shape == (3, 8), \
    "The weights should take their shapes from example_input (5 features in)."

_net = apply_init(nn.Sequential(nn.LazyLinear(8), nn.ReLU(), nn.LazyLinear(3)), torch.zeros(2, 5), _ones_init)
assert bool((_net[0].weight == 1).all()) and bool((_net[2].weight == 1).all()), \
    "init_fn left the weights unchanged: apply it with net.apply only after the dry run has made the layers nn.Linear."
assert bool((_net[0].bias == 0).all()), "init_fn should have zeroed the biases."

_single = nn.LazyLinear(3)  # the network is itself one lazy layer
try:
    apply_init(_single, torch.zeros(2, 5))
except ValueError as _error:
    raise AssertionError(
        "apply_init(nn.LazyLinear(3), x) used the placeholder weight: net.forward(x) skips the hooks of net itself, "
        "and a lazy layer materializes in one of them; call net(example_input).") from _error
assert tuple(_single.weight.shape) == (3, 5), "A single lazy layer passed as the network should get its shape."

_grad_modes = []
_net = nn.Sequential(nn.LazyLinear(4), nn.ReLU(), nn.LazyLinear(1))
_net.register_forward_hook(lambda module, args, output: _grad_modes.append(torch.is_grad_enabled()))
apply_init(_net, torch.zeros(1, 6))
assert _grad_modes, \
    "A forward hook on the network itself never ran: call net(example_input); net.forward(example_input) skips net's own hooks."
assert not any(_grad_modes), "The dry run recorded gradients: wrap the forward pass in torch.no_grad()."
assert all(p.grad is None for p in _net.parameters()), "The dry run should leave no gradients behind."

_sized = nn.Linear(3, 2)
_before = _sized.weight.detach().clone()
apply_init(_sized, torch.zeros(4, 3))
assert torch.equal(_sized.weight, _before), "Without init_fn the weights of a sized layer must stay as they were."

# The net still trains: a few SGD steps on a fixed batch lower the loss.
_bn = apply_init(nn.Sequential(nn.LazyLinear(4), nn.LazyBatchNorm1d(), nn.ReLU(), nn.LazyLinear(1)), torch.randn(4, 6))
torch.manual_seed(3)
_X, _y = torch.randn(16, 6), torch.randn(16, 1)
_optimizer = torch.optim.SGD(_bn.parameters(), lr=0.05)
_losses = []
try:
    for _ in range(5):
        _optimizer.zero_grad()
        _loss = nn.functional.mse_loss(_bn(_X), _y)
        _loss.backward()
        _optimizer.step()
        _losses.append(_loss.item())
except RuntimeError as _error:
    raise AssertionError("The network cannot be trained after apply_init: weights made under torch.inference_mode() "
                         "cannot take part in backward; use torch.no_grad() for the dry run.") from _error
assert _losses[-1] < _losses[0], "After apply_init the network should still train (the loss did not go down)."
### BEGIN HIDDEN TESTS
torch.manual_seed(7)
_net = apply_init(nn.Sequential(nn.LazyLinear(4), nn.ReLU(), nn.LazyLinear(1)), torch.randn(5, 6))
assert all(p.grad is None for p in _net.parameters()), "The dry run should leave no gradients behind."
_net(torch.randn(3, 6)).sum().backward()
assert all(p.grad is not None for p in _net.parameters()), \
    "The network cannot be trained after apply_init: inference_mode tensors cannot be used for backward; use torch.no_grad()."

_visited = []
_net = nn.Sequential(nn.LazyLinear(4), nn.Sequential(nn.ReLU(), nn.LazyLinear(2)))
apply_init(_net, torch.zeros(1, 3), _visited.append)
assert len(_visited) == len(list(_net.modules())), \
    "init_fn should be called once for every submodule (and the network itself): use net.apply(init_fn)."

_conv = nn.Sequential(nn.LazyConv2d(2, 3), nn.ReLU(), nn.Flatten(), nn.LazyLinear(5))
apply_init(_conv, torch.zeros(1, 1, 6, 6), _ones_init)
assert _conv[0].weight.shape == (2, 1, 3, 3) and _conv[3].weight.shape == (5, 32), \
    "Lazy convolutions and the linear layer after them should take their shapes from the example image."
assert bool((_conv[3].weight == 1).all()), "init_fn should reach the linear layer of a convolutional net."

_sized = nn.Sequential(nn.Linear(3, 3), nn.ReLU(), nn.Linear(3, 2))
_before = [p.detach().clone() for p in _sized.parameters()]
apply_init(_sized, torch.zeros(4, 3))
assert all(torch.equal(a, b) for a, b in zip(_before, _sized.parameters())), \
    "Without init_fn the weights of a sized network must stay as they were."
apply_init(_sized, torch.zeros(4, 3), _ones_init)
assert bool((_sized[2].weight == 1).all()), "init_fn should also work on a network that had no lazy layers."

_wide = apply_init(nn.Sequential(nn.LazyLinear(2)), torch.zeros(3, 7, 11))
assert _wide[0].weight.shape == (2, 11), "Extra leading dimensions in example_input should be allowed."

_lone_lazy = apply_init(nn.LazyLinear(4), torch.zeros(3, 6), _ones_init)
assert _lone_lazy.weight.shape == (4, 6) and bool((_lone_lazy.weight == 1).all()), \
    "A single lazy layer as the network should be materialized by net(x) and then initialized by init_fn."
# A network on another device: PyTorch's meta device (shapes, no data) stands in for a GPU.
_meta = nn.Sequential(nn.LazyLinear(3, device="meta"), nn.ReLU(), nn.LazyLinear(2, device="meta"))
try:
    _out = apply_init(_meta, torch.zeros(2, 4, device="meta"))
except (RuntimeError, NotImplementedError) as _error:
    raise AssertionError("apply_init failed on a network on another device (the meta device stands in for a GPU): "
                         "run the dry run where the network is and return the network itself, not a copy moved to "
                         "the CPU.") from _error
assert _out is _meta and {p.device.type for p in _meta.parameters()} == {"meta"} and _meta[2].weight.shape == (2, 3), \
    "A network on another device (meta stands in for a GPU) should be materialized there and returned itself, not " \
    "moved to the CPU."
_twins = [nn.Sequential(nn.LazyLinear(3), nn.ReLU(), nn.LazyLinear(2)) for _ in range(2)]
_x = torch.randn(2, 5)
assert all(apply_init(_twin, _x) is _twin for _twin in _twins) and not any(
    isinstance(p, nn.parameter.UninitializedParameter) for _twin in _twins for p in _twin.parameters()), \
    "Two fresh networks that look alike, with one example input: apply_init should materialize and return each " \
    "network it is given, on every call, keeping nothing from an earlier call."
### END HIDDEN TESTS

# %% tests grade_id="test_apply_init_modes" points=1
# The dry run in eval mode, and every submodule back in its own mode afterwards.
_bn = nn.Sequential(nn.LazyLinear(4), nn.LazyBatchNorm1d(), nn.ReLU(), nn.LazyLinear(1))
try:
    apply_init(_bn, torch.randn(1, 6) + 5)  # one sample (one value per channel), far from zero mean
except ValueError as _error:
    raise AssertionError("BatchNorm rejected a single sample: the dry run ran in training mode; "
                         "switch the network to eval mode (net.eval()) for it.") from _error
assert int(_bn[1].num_batches_tracked) == 0 and bool((_bn[1].running_mean == 0).all()), \
    "The dry run changed BatchNorm's running statistics: run it in eval mode (net.eval()), no_grad alone does not stop them."
assert all(m.training for m in _bn.modules()), \
    "The network and all its submodules were in training mode before apply_init and should be again afterwards: " \
    "restore the mode of every submodule, not just of net."

_frozen_bn = nn.Sequential(nn.LazyLinear(4), nn.LazyBatchNorm1d(), nn.ReLU())
_frozen_bn[1].eval()  # one submodule in eval inside a net in train()
apply_init(_frozen_bn, torch.randn(1, 3))
assert _frozen_bn.training and _frozen_bn[0].training and not _frozen_bn[1].training, \
    "Each submodule should get back its own mode (the BatchNorm was in eval, the rest in train): remember " \
    "module.training for every module in net.modules() and restore each, instead of calling net.train()."
### BEGIN HIDDEN TESTS
_frozen = nn.Sequential(nn.LazyLinear(3), nn.LazyBatchNorm1d()).eval()
apply_init(_frozen, torch.randn(4, 2))
assert not _frozen.training and not _frozen[1].training, \
    "A network in eval mode should stay in eval mode: restore the mode it had, do not call net.train()."
_mixed = nn.Sequential(nn.LazyLinear(3), nn.LazyBatchNorm1d(), nn.Dropout(0.5))
_mixed[1].eval()  # e.g. BatchNorm statistics frozen for fine-tuning
apply_init(_mixed, torch.randn(4, 2))
assert _mixed.training and not _mixed[1].training and _mixed[2].training, \
    "Each submodule should get back its own mode (here BatchNorm was in eval, the rest in train)."
_stats = nn.Sequential(nn.LazyLinear(3), nn.LazyBatchNorm1d())
apply_init(_stats, torch.randn(8, 2) * 3 + 1)
assert bool((_stats[1].running_var == 1).all()) and int(_stats[1].num_batches_tracked) == 0, \
    "BatchNorm's running statistics should be untouched by the dry run, for any batch size."
_conv_bn = nn.Sequential(nn.LazyConv2d(3, 3), nn.LazyBatchNorm2d(), nn.ReLU(), nn.Flatten(), nn.LazyLinear(2))
apply_init(_conv_bn, torch.randn(1, 2, 5, 5) * 4 + 2)  # one image, far from zero mean
assert int(_conv_bn[1].num_batches_tracked) == 0 and bool((_conv_bn[1].running_mean == 0).all()) \
    and bool((_conv_bn[1].running_var == 1).all()), \
    "BatchNorm2d's running statistics moved during the dry run: it has to run in eval mode."
assert all(m.training for m in _conv_bn.modules()), \
    "A convolutional net in training mode should be back in training mode after apply_init."
_deep = nn.Sequential(nn.LazyLinear(4), nn.Sequential(nn.LazyBatchNorm1d(), nn.ReLU()))
_deep[1][0].eval()  # a BatchNorm frozen one level down, inside a block in train()
apply_init(_deep, torch.randn(2, 3))
assert [m.training for m in _deep.modules()] == [True, True, True, False, True], \
    "A BatchNorm frozen in eval inside a nested block was put back into train(): remember the mode of every " \
    "module in net.modules() (not only net and its direct children) and restore each one."
### END HIDDEN TESTS

# %% tests grade_id="test_apply_init_when_it_raises" points=1
# A dry run that raises: the error reaches the caller, and the modes come back just as after a dry run that
# works (try/finally). Which modes are the right ones is the previous cell's business; here only that an
# error in the dry run changes nothing about them.
def _modes(net):
    return [m.training for m in net.modules()]

_works = nn.Sequential(nn.LazyLinear(3), nn.Linear(3, 1))
apply_init(_works, torch.zeros(2, 4))
assert _works[0].weight.shape == (3, 4), \
    "apply_init should first work when the dry run succeeds (see the first tests cell of this item)."
_failing = nn.Sequential(nn.LazyLinear(3), nn.Linear(5, 1))  # 3 features out, 5 expected: the dry run raises
try:
    apply_init(_failing, torch.zeros(2, 4))
except RuntimeError:
    pass
else:
    raise AssertionError("The dry run of a network whose widths do not fit raised no error: "
                         "let the error reach the caller (try/finally, without an except that swallows it).")
assert _modes(_failing) == _modes(_works), \
    "When the dry run raises, the network should still get its training mode back (as it does when the dry run " \
    "works): restore it in a finally block."
### BEGIN HIDDEN TESTS
_works = nn.Sequential(nn.LazyLinear(4), nn.LazyBatchNorm1d(), nn.Sequential(nn.ReLU(), nn.Linear(4, 1)))
_failing = nn.Sequential(nn.LazyLinear(4), nn.LazyBatchNorm1d(), nn.Sequential(nn.ReLU(), nn.Linear(7, 1)))
_works[1].eval()
_failing[1].eval()  # frozen BatchNorm; the nested Linear expects 7 features, gets 4: the dry run raises
apply_init(_works, torch.randn(3, 2))
try:
    apply_init(_failing, torch.randn(3, 2))
except RuntimeError:
    pass
else:
    raise AssertionError("A dry run that fails deep inside the network should raise its error to the caller.")
assert _modes(_failing) == _modes(_works), \
    "After a failing dry run every submodule should have its own mode back, as after one that works: restore " \
    "the modes in a finally block."
_works_eval = nn.Sequential(nn.LazyLinear(3), nn.Linear(3, 1)).eval()
_failing_eval = nn.Sequential(nn.LazyLinear(3), nn.Linear(5, 1)).eval()
apply_init(_works_eval, torch.zeros(2, 4))
try:
    apply_init(_failing_eval, torch.zeros(2, 4))
except RuntimeError:
    pass
else:
    raise AssertionError("The dry run of a network in eval mode whose widths do not fit raised no error.")
assert _modes(_failing_eval) == _modes(_works_eval), \
    "A network in eval mode should stay in eval mode after a failing dry run, as after one that works."
### END HIDDEN TESTS

# %% [markdown]
# ## 3. What shapes did the network get?
#
# Write `infer_shapes(net, input_shape)`: materialize `net` with a dry run,
# then return a list of `(qualified_name, shape_tuple)` pairs, one for every
# parameter, in the order of `named_parameters()`, [clause named_parameters] for example
# `[('0.weight', (8, 5)), ('0.bias', (8,)), ...]`. [clause list_of_pairs]
#
# - The dry run feeds one tensor of **zeros** [clause zeros] with shape `input_shape` (which
#   includes the batch dimension) [clause input_shape] to `net(...)`. The zeros have the dtype and
#   device of the network's first parameter (`next(iter(net.parameters()))`; a
#   lazy placeholder knows its dtype and device too), so a network moved with
#   `.to(torch.float64)` or to a GPU works. [clause dtype_device] A network without parameters gets
#   `torch.zeros(input_shape)`, float32 on the CPU.
# - As in item 2, the dry run runs **in eval mode** under `torch.no_grad()`, [clause eval_no_grad] and
#   every submodule gets its own training mode back afterwards, also when the
#   dry run raises (the error still reaches the caller). [clause modes] BatchNorm's running
#   statistics must not move.

# %% answer grade_id="infer_shapes"
def infer_shapes(net, input_shape):
    ### BEGIN SOLUTION
    first = next(iter(net.parameters()), None)
    if first is None:
        zeros = torch.zeros(input_shape)
    else:
        zeros = torch.zeros(input_shape, dtype=first.dtype, device=first.device)
    modes = {module: module.training for module in net.modules()}
    net.eval()
    try:
        with torch.no_grad():
            net(zeros)
    finally:
        for module, training in modes.items():
            module.train(training)
    return [(name, tuple(p.shape)) for name, p in net.named_parameters()]
    ### END SOLUTION

# %% tests grade_id="test_infer_shapes" points=2
_net = nn.Sequential(nn.LazyLinear(8), nn.ReLU(), nn.LazyLinear(3))
_shapes = infer_shapes(_net, (2, 5))
assert isinstance(_shapes, list), f"infer_shapes should return a list of pairs, not {type(_shapes).__name__}."
assert [name for name, _ in _shapes] == ["0.weight", "0.bias", "2.weight", "2.bias"], \
    "The names should be the qualified names of named_parameters(), in order."
assert [tuple(shape) for _, shape in _shapes] == [(8, 5), (8,), (3, 8), (3,)], \
    "The shapes do not match a 5-feature input: is the zero input built with input_shape?"
assert all(isinstance(shape, tuple) and all(isinstance(n, int) for n in shape) for _, shape in _shapes), \
    "Each shape should be a tuple of ints, e.g. tuple(p.shape)."

_seen, _grad_modes = [], []
_probe = nn.Sequential(nn.LazyLinear(2))
_probe.register_forward_pre_hook(lambda module, args: _seen.append(args[0].clone()))
_probe.register_forward_hook(lambda module, args, output: _grad_modes.append(torch.is_grad_enabled()))
infer_shapes(_probe, (3, 4))
assert len(_seen) == 1 and _seen[0].shape == (3, 4) and not _seen[0].any(), \
    "The network should see one tensor of zeros with exactly input_shape."
assert not any(_grad_modes), "The dry run recorded gradients: run net(zeros) under torch.no_grad()."

_bn = nn.Sequential(nn.LazyLinear(3), nn.LazyBatchNorm1d(), nn.Dropout(0.5))  # in train(), as built
_bn[2].eval()  # except the Dropout
_shapes = infer_shapes(_bn, (4, 2))
assert int(_bn[1].num_batches_tracked) == 0 and bool((_bn[1].running_mean == 0).all()), \
    "The dry run moved BatchNorm's running statistics: run it in eval mode (net.eval()); no_grad alone does not stop them."
assert _bn.training and _bn[1].training and not _bn[2].training, \
    "Each submodule should get back its own mode (the Dropout was in eval, the rest in train): remember " \
    "module.training for every module in net.modules() and restore each."
assert _shapes == [("0.weight", (3, 2)), ("0.bias", (3,)), ("1.weight", (3,)), ("1.bias", (3,))], \
    "Only parameters belong in the list: buffers like running_mean come from state_dict(), not named_parameters()."

try:
    _shapes = infer_shapes(nn.Sequential(nn.LazyLinear(2)).to(torch.float64), (3, 4))
except RuntimeError as _error:
    raise AssertionError("A network moved to float64 failed: make the zeros with the dtype and device of the "
                         "network's first parameter.") from _error
assert _shapes == [("0.weight", (2, 4)), ("0.bias", (2,))], "Wrong shapes for a float64 network."
assert infer_shapes(nn.ReLU(), (2, 2)) == [], "A module without parameters should give an empty list."

_failing = nn.Sequential(nn.LazyLinear(3), nn.Linear(5, 1))  # 3 features out, 5 expected: the dry run raises
try:
    infer_shapes(_failing, (2, 4))
except RuntimeError:
    pass
else:
    raise AssertionError("The dry run of a network whose widths do not fit raised no error: let it reach the caller.")
assert _failing.training and _failing[1].training, \
    "When the dry run raises, the network should still get its training mode back: restore it in a finally block."
### BEGIN HIDDEN TESTS
_conv = nn.Sequential(nn.LazyConv2d(4, 3), nn.ReLU(), nn.Flatten(), nn.LazyLinear(2))
_shapes = infer_shapes(_conv, (1, 3, 6, 6))
assert _shapes == [("0.weight", (4, 3, 3, 3)), ("0.bias", (4,)), ("3.weight", (2, 64)), ("3.bias", (2,))], \
    "Wrong shapes for a lazy convolutional net: input_shape already includes the batch dimension."
assert not any(isinstance(p, nn.parameter.UninitializedParameter) for p in _conv.parameters()), \
    "infer_shapes should leave the network materialized."

_nested = nn.Sequential()
_nested.add_module("body", nn.Sequential(nn.Linear(6, 4), nn.ReLU(), nn.LazyLinear(5)))
_nested.add_module("head", nn.LazyLinear(1, bias=False))
assert infer_shapes(_nested, (3, 6)) == [("body.0.weight", (4, 6)), ("body.0.bias", (4,)),
                                          ("body.2.weight", (5, 4)), ("body.2.bias", (5,)),
                                          ("head.weight", (1, 5))], \
    "Names should be fully qualified ('body.2.weight') and every parameter listed, sized ones too."

_bn = nn.Sequential(nn.LazyLinear(6), nn.LazyBatchNorm1d(), nn.Dropout(0.5)).eval()
_bn[0].train()
_bn[1].train()
assert infer_shapes(_bn, (1, 3)) == [("0.weight", (6, 3)), ("0.bias", (6,)), ("1.weight", (6,)), ("1.bias", (6,))], \
    "Only parameters belong in the list (buffers like running_mean come from state_dict()), and a batch of one " \
    "must work: in eval mode a BatchNorm with running statistics (the default) accepts one value per channel."
assert int(_bn[1].num_batches_tracked) == 0 and bool((_bn[1].running_var == 1).all()), \
    "BatchNorm's running statistics moved during the dry run: it has to run in eval mode."
assert [m.training for m in _bn.modules()] == [False, True, True, False], \
    "Each submodule should get back its own mode (here the network and its Dropout were in eval, the layers in train)."

_failing = nn.Sequential(nn.LazyLinear(4), nn.LazyBatchNorm1d(), nn.Sequential(nn.ReLU(), nn.Linear(7, 1)))
_failing[1].eval()  # the nested Linear expects 7 features, gets 4: the dry run raises
try:
    infer_shapes(_failing, (3, 2))
except RuntimeError:
    pass
else:
    raise AssertionError("A dry run that fails deep inside the network should raise its error to the caller.")
assert [m.training for m in _failing.modules()] == [True, True, False, True, True, True], \
    "After a failing dry run every submodule should have its own mode back (the BatchNorm in eval, the rest in train)."

_seen = []
_probe = nn.Sequential(nn.LazyLinear(2), nn.ReLU(), nn.LazyLinear(1)).to(torch.float64)
_probe.register_forward_pre_hook(lambda module, args: _seen.append(args[0].clone()))
assert infer_shapes(_probe, (5, 1, 3)) == [("0.weight", (2, 3)), ("0.bias", (2,)), ("2.weight", (1, 2)), ("2.bias", (1,))], \
    "Wrong shapes for a float64 network fed an input with an extra leading dimension."
assert len(_seen) == 1 and _seen[0].shape == (5, 1, 3) and _seen[0].dtype == torch.float64 and not _seen[0].any(), \
    "The network should see one tensor of zeros with exactly input_shape and the network's dtype."
_seen = []
_no_params = nn.Sequential(nn.ReLU(), nn.Flatten())
_no_params.register_forward_pre_hook(lambda module, args: _seen.append(args[0].clone()))
assert infer_shapes(_no_params, (2, 3, 4)) == [], "A network without parameters should give an empty list."
assert len(_seen) == 1 and _seen[0].shape == (2, 3, 4) and _seen[0].dtype == torch.float32, \
    "A network without parameters should get float32 zeros of input_shape (torch.zeros(input_shape))."

# A network on another device: PyTorch's meta device (shapes, no data) stands in for a GPU.
_meta = nn.Sequential(nn.LazyLinear(2, device="meta"), nn.ReLU(), nn.LazyLinear(1, device="meta"))
try:
    _shapes = infer_shapes(_meta, (3, 4))
except RuntimeError as _error:
    raise AssertionError("A network on another device than the CPU failed: make the zeros on the device (and with "
                         "the dtype) of the network's first parameter.") from _error
assert _shapes == [("0.weight", (2, 4)), ("0.bias", (2,)), ("2.weight", (1, 2)), ("2.bias", (1,))], \
    "Wrong shapes for a network that lives on another device."

_deep = nn.Sequential(nn.LazyLinear(4), nn.Sequential(nn.LazyBatchNorm1d(), nn.ReLU()))
_deep[1][0].eval()  # a BatchNorm frozen one level down, inside a block in train()
infer_shapes(_deep, (2, 3))
assert [m.training for m in _deep.modules()] == [True, True, True, False, True], \
    "A BatchNorm frozen in eval inside a nested block was put back into train(): remember the mode of every " \
    "module in net.modules() (not only net and its direct children) and restore each one."
_twins = [nn.Sequential(nn.LazyLinear(3), nn.ReLU(), nn.LazyLinear(2)) for _ in range(2)]
for _twin in _twins:
    infer_shapes(_twin, (2, 5))
assert not any(isinstance(p, nn.parameter.UninitializedParameter) for _twin in _twins for p in _twin.parameters()), \
    "Two fresh networks that look alike, with one input shape: infer_shapes should materialize each network it is given, on every call."
### END HIDDEN TESTS

# %% [markdown]
# ## 4. Inputs of varying width
#
# D2L asks what to do with inputs of varying dimensionality. When samples come
# with different numbers of features, give each width its own input layer and
# let all widths share the rest of the network (the lecture's `WidthNet`), but
# this time the widths are **not** known in advance.
#
# Write a module `MultiWidthNet(hidden=16, out_features=1)`:
#
# - `net(X)` takes `X` of shape `(batch, d)` for any width `d` and returns a
#   tensor of shape `(batch, out_features)`; [clause sizes]
# - the first time a width `d` arrives, the network adds an input layer for it
#   that maps `d` features to `hidden` (an `nn.LazyLinear(hidden)` reads `d` for
#   you); every later input of width `d`, whatever its batch size, goes through
#   that same layer; [clause layer_per_width]
# - every width then shares one body: a ReLU followed by **one**
#   `nn.Linear(hidden, out_features)`, the same module for all widths. [clause shared_body] With
#   `W_d, b_d` the weight and bias of the input layer for width `d` and `W, b`
#   those of the shared output layer, `net(X)` computes
#   `relu(X @ W_d.T + b_d) @ W.T + b`; [clause formula]
# - every layer is registered (seen by `parameters()`, `state_dict()`, `.to()`),
#   so keep the input layers in an `nn.ModuleDict` (its keys must be strings); [clause registered]
# - a new input layer is made where the network lives: on the device and with
#   the dtype of the network (not of the input `X`), which you can read from the
#   shared output layer's weight (`nn.LazyLinear(hidden, device=..., dtype=...)`). [clause dtype]
#   A layer made with the defaults would be float32 on the CPU, so a width that
#   first arrives after `net.to(torch.float64)` (or after moving the net to a GPU)
#   would fail. The tests check the dtype and the device, the device on
#   PyTorch's `meta` device (tensors with a shape but no data), which stands in
#   for a GPU on any machine: after `net.to("meta")` a new width's layer must be
#   on `meta` too.
#
# Set no seed inside: [clause no_seed] layers draw from torch's generator as it stands. Layers
# added by a new width are not in an optimizer built before they existed: in
# practice, send one batch of every width before building it.

# %% answer grade_id="MultiWidthNet"
class MultiWidthNet(nn.Module):
    ### BEGIN SOLUTION
    def __init__(self, hidden=16, out_features=1):
        super().__init__()
        self.hidden = hidden
        self.inputs = nn.ModuleDict()
        self.body = nn.Sequential(nn.ReLU(), nn.Linear(hidden, out_features))

    def forward(self, X):
        key = str(X.shape[-1])
        if key not in self.inputs:
            shared = self.body[1].weight  # where the network lives now
            self.inputs[key] = nn.LazyLinear(self.hidden, device=shared.device, dtype=shared.dtype)
        return self.body(self.inputs[key](X))
    ### END SOLUTION

# %% tests grade_id="test_MultiWidthNet" points=2
def _weight_shapes(module):
    """Shapes of the 2-D parameters (the weights of the linear layers), sorted."""
    return sorted(tuple(p.shape) for p in module.parameters() if p.dim() == 2)

def _linear_layer(net, shape, what):
    """The one registered linear layer whose weight has `shape`, whatever its attribute name."""
    found = [m for m in net.modules() if isinstance(m, nn.Linear)
             and not isinstance(m.weight, nn.parameter.UninitializedParameter) and tuple(m.weight.shape) == shape]
    assert len(found) == 1, \
        f"Expected one registered linear layer with a {shape} weight ({what}), found {len(found)}: are the layers " \
        "registered, sized by the constructor's hidden and out_features, with one output layer shared by all widths?"
    return found[0]

def _check_function(net, X, hidden, out_features):
    """net(X) against relu(X @ W_d.T + b_d) @ W.T + b, written out from the net's own parameters."""
    Y = net(X)
    first = _linear_layer(net, (hidden, X.shape[-1]), f"the input layer for width {X.shape[-1]}")
    last = _linear_layer(net, (out_features, hidden), "the shared output layer")
    expected = torch.relu(X @ first.weight.T + first.bias) @ last.weight.T + last.bias
    assert Y.dtype == X.dtype, f"A {X.dtype} input to a {X.dtype} network gave a {Y.dtype} output."
    assert Y.shape == expected.shape and torch.allclose(Y, expected, rtol=1e-5, atol=1e-6), \
        f"net(X) for width {X.shape[-1]} is not relu(X @ W_d.T + b_d) @ W.T + b: is the ReLU between the input " \
        "layer and the shared output layer (not after the output, not missing)?"

torch.manual_seed(40)
_net = MultiWidthNet(hidden=16, out_features=2)
_x3, _x5 = torch.randn(4, 3), torch.randn(6, 5)
_y3 = _net(_x3)
assert tuple(_y3.shape) == (4, 2), f"A (4, 3) input should give a (4, 2) output, got {tuple(_y3.shape)}."
try:
    _y5 = _net(_x5)
except RuntimeError as _error:
    raise AssertionError("A second width (5 after 3) failed: one lazy layer fixes its width at the first batch; "
                         "add an input layer for each new width.") from _error
assert tuple(_y5.shape) == (6, 2), f"A (6, 5) input should give a (6, 2) output, got {tuple(_y5.shape)}."
assert torch.equal(_net(_x3), _y3), \
    "The same width-3 input gave another output the second time: reuse the layer made for width 3, do not make a new one."
assert torch.allclose(_net(_x3[:2]), _y3[:2], rtol=1e-5, atol=1e-6), \
    "Two rows of width 3 did not go through the layer made for width 3: a new batch size of a known width must not " \
    "add a layer; key the input layers on the width X.shape[-1]."
assert _weight_shapes(_net) == [(2, 16), (16, 3), (16, 5)], \
    f"Expected registered weights (16, 3), (16, 5) and one shared (2, 16), got {_weight_shapes(_net)}: keep the " \
    "input layers in an nn.ModuleDict (not a plain dict) and use one Linear(hidden, out_features) for all widths."
_net.zero_grad()
(_net(_x3).sum() + _net(_x5).sum()).backward()
_no_grad = [name for name, p in _net.named_parameters() if p.grad is None]
assert not _no_grad, f"{_no_grad} got no gradient: every registered layer should take part in forward."
with torch.no_grad():
    _check_function(_net, _x3, 16, 2)
    _check_function(_net, _x5, 16, 2)
_net.to(torch.float64)  # the input layers made so far move with the rest
assert all(p.dtype == torch.float64 for p in _net.parameters()), \
    ".to(torch.float64) missed some layers: are they all registered?"
try:
    _y64 = _net(_x3.double())
except RuntimeError as _error:
    raise AssertionError("After .to(torch.float64) a known width should work with float64 input: keep the input "
                         "layers in an nn.ModuleDict, so that .to() moves them.") from _error
assert _y64.dtype == torch.float64, "Outputs of a float64 network should be float64."
_default = MultiWidthNet()
assert tuple(_default(torch.randn(3, 4)).shape) == (3, 1), \
    "The defaults should be hidden=16, out_features=1 (and the layers sized by the constructor's arguments)."
assert _weight_shapes(_default) == [(1, 16), (16, 4)], \
    f"With the defaults, expected weights (16, 4) and (1, 16), got {_weight_shapes(_default)}."

### BEGIN HIDDEN TESTS
torch.manual_seed(41)
_net = MultiWidthNet(hidden=8, out_features=3)
_inputs = {1: torch.randn(5, 1), 7: torch.randn(2, 7), 2: torch.randn(3, 2)}
_first = {d: _net(x) for d, x in _inputs.items()}
assert all(tuple(y.shape) == (x.shape[0], 3) for y, x in zip(_first.values(), _inputs.values())), \
    "With hidden=8 and out_features=3 every output should have 3 columns: use the constructor's arguments."
assert all(torch.equal(_net(x), _first[d]) for d, x in _inputs.items()), \
    "A width seen before should go through the same input layer again, even after other widths came in between."
assert _weight_shapes(_net) == [(3, 8), (8, 1), (8, 2), (8, 7)], \
    f"Expected one input layer per width and one shared (3, 8) layer, got weights {_weight_shapes(_net)}."
_count = len(list(_net.parameters()))
_other_batch = _net(torch.randn(9, 7))
assert tuple(_other_batch.shape) == (9, 3) and len(list(_net.parameters())) == _count, \
    "A new batch size of a known width must not add a layer: key the input layers on the width X.shape[-1]."
assert len(_net.state_dict()) == _count, "Every parameter should appear in state_dict()."
with torch.no_grad():
    for _d, _x in _inputs.items():
        _check_function(_net, _x, 8, 3)
_net.to("meta")  # widths 1, 7 and 2 seen on the CPU; the meta device (shapes, no data) stands in for a GPU
try:
    with torch.no_grad():
        _y_meta = _net(torch.zeros(6, 7, device="meta"))
except (RuntimeError, NotImplementedError) as _error:
    raise AssertionError("A known width failed after net.to('meta') (the meta device stands in for a GPU): keep "
                         "every layer registered so that .to() moves it, and return the output where it was "
                         "computed (no .cpu()).") from _error
assert _y_meta.device.type == "meta" and tuple(_y_meta.shape) == (6, 3), \
    f"A (6, 7) input to a network moved to the meta device should give a (6, 3) output there, got " \
    f"{tuple(_y_meta.shape)} on {_y_meta.device.type}: return the output where it was computed."
_default = MultiWidthNet(out_features=4)
assert tuple(_default(torch.randn(3, 2)).shape) == (3, 4), \
    "MultiWidthNet(out_features=4) should keep hidden=16 and give 4 columns."
assert _weight_shapes(_default) == [(4, 16), (16, 2)], \
    f"With hidden=16 and out_features=4, expected weights (16, 2) and (4, 16), got {_weight_shapes(_default)}."

torch.manual_seed(42)
_net = MultiWidthNet(hidden=8, out_features=3)
_net(torch.randn(5, 1)), _net(torch.randn(2, 7))  # two widths seen in float32
_net.to(torch.float64)
assert all(p.dtype == torch.float64 for p in _net.parameters()), \
    ".to(torch.float64) missed some layers: are they all registered?"
assert _net(torch.randn(4, 7, dtype=torch.float64)).dtype == torch.float64, \
    "After .to(torch.float64) a known width should work with float64 input."
with torch.no_grad():
    _check_function(_net, torch.randn(3, 1, dtype=torch.float64), 8, 3)
    _check_function(_net, torch.randn(6, 7, dtype=torch.float64), 8, 3)
# Building layers draws from torch's generator as it stands (no seed inside).
_after = []
for _seed in (5, 6):
    torch.manual_seed(_seed)
    MultiWidthNet(hidden=4)(torch.zeros(1, 3))
    _after.append(torch.rand(1))
assert not torch.equal(*_after), \
    "After building and calling a MultiWidthNet, torch's random numbers no longer depend on the seed set before: " \
    "set no seed in __init__ or forward."
### END HIDDEN TESTS

# %% tests grade_id="test_MultiWidthNet_dtype" points=1
# A width first seen after .to(...): its input layer is made where the network lives now (its dtype and device).
# (What the network computes, and that .to() moves the layers made so far, is the first tests cell's business;
# here only where a new input layer is made.)
_net64 = MultiWidthNet().to(torch.float64)
_x4 = torch.randn(3, 4, dtype=torch.float64)
try:
    with torch.no_grad():
        _y4 = _net64(_x4)
except RuntimeError as _error:
    raise AssertionError("A width first seen after net.to(torch.float64) failed: make the new input layer with the "
                         "device and dtype of the network (e.g. of the output layer's weight), not the defaults.") from _error
assert _y4.dtype == torch.float64, f"A float64 input to a float64 network gave a {_y4.dtype} output."
assert all(p.dtype == torch.float64 for p in _net64.parameters()), \
    "The input layer made after .to(torch.float64) should be float64 too, like the rest of the network."
_net = MultiWidthNet()
with torch.no_grad():
    _net(torch.randn(2, 3))  # width 3 seen in float32
_net.to(torch.float64)
try:
    with torch.no_grad():
        _y5 = _net(torch.randn(3, 5, dtype=torch.float64))
except RuntimeError as _error:
    raise AssertionError("A new width (5) after net.to(torch.float64), with width 3 seen before it, failed: make each "
                         "new input layer, when it is made, on the network's current device and dtype (not those it "
                         "had when it was built or first called).") from _error
assert _y5.dtype == torch.float64, f"A float64 input to a float64 network gave a {_y5.dtype} output."
# The network's dtype, not the input's: a float32 batch of a new width sent to a float64 network may fail, but the
# input layer it makes must be float64 all the same.
_net64 = MultiWidthNet().to(torch.float64)
try:
    with torch.no_grad():
        _net64(torch.randn(2, 6))
except Exception:
    pass  # rejecting float32 data is fine; what matters is the layer the call made
assert {p.dtype for p in _net64.parameters()} == {torch.float64}, \
    "A float32 batch of a new width left a float32 input layer in a float64 network: make the new layer with the " \
    "dtype and device of the network (the shared output layer's weight), not those of the input X."
# The network's device too. PyTorch's meta device (shapes, no data) stands in for a GPU, so any machine can check
# it. The call itself may fail there (a lazy layer moved to meta with .to() before its first call stops being lazy,
# which a GPU does not do): what is graded here is where the layers that the call made live once it is over.
def _layers_made(net, call):
    """Run call() without gradients; the modules that got new parameters while it ran and were called in it or
    kept in `net` (the new input layers), even if the call raised."""
    made, called = {}, set()

    def record(module, name, param):
        made[id(module)] = module

    def enter(module, args):
        called.add(id(module))

    hooks = [torch.nn.modules.module.register_module_parameter_registration_hook(record),
             torch.nn.modules.module.register_module_forward_pre_hook(enter)]
    try:
        with torch.no_grad():
            call()
    except Exception:
        pass  # a failed call is judged by what it left behind (see above)
    finally:
        for hook in hooks:
            hook.remove()
    kept = {id(m) for m in net.modules()}
    return [m for key, m in made.items() if key in called or key in kept]

_meta = MultiWidthNet(hidden=8, out_features=3).to("meta")
_made = _layers_made(_meta, lambda: _meta(torch.zeros(5, 4, device="meta")))
assert _made, \
    "A width first seen after net.to('meta') made no input layer: make one for every new width, with the device " \
    "and dtype read from the network's own weight as it is (a .cpu() copy of a meta tensor fails)."
_where = {p.device.type for m in _made for p in m.parameters()}
assert _where == {"meta"}, \
    f"After net.to('meta') a new width's input layer is on {sorted(_where - {'meta'})}, not on the meta device " \
    "where the network lives: make each new input layer on the network's device (the device of the shared output " \
    "layer's weight), not on the default CPU."
### BEGIN HIDDEN TESTS
torch.manual_seed(42)
_net = MultiWidthNet(hidden=8, out_features=3)
_net(torch.randn(5, 1)), _net(torch.randn(2, 7))  # two widths seen in float32
_net.to(torch.float64)
try:
    with torch.no_grad():
        _y9 = _net(torch.randn(6, 9, dtype=torch.float64) * 3)
        _y9_again = _net(torch.randn(3, 9, dtype=torch.float64))
except RuntimeError as _error:
    raise AssertionError("A new width after net.to(torch.float64), with widths seen before it, failed: make each "
                         "new input layer on the network's current device and dtype.") from _error
assert _y9.dtype == _y9_again.dtype == torch.float64, "Outputs of a float64 network should be float64."
assert {p.dtype for p in _net.parameters()} == {torch.float64}, \
    "An input layer added after .to(torch.float64) should be float64 too."
_net.to(torch.float32)  # and back: a width first seen now lives in float32 again
try:
    with torch.no_grad():
        _y11 = _net(torch.randn(4, 11))
except RuntimeError as _error:
    raise AssertionError("A new width after net.to(torch.float64) and back to float32 failed: read the network's "
                         "dtype each time a new input layer is made.") from _error
assert _y11.dtype == torch.float32 and all(p.dtype == torch.float32 for p in _net.parameters()), \
    "An input layer added after .to(torch.float32) should be float32, like the rest of the network."
_net.to(torch.float64)
try:
    with torch.no_grad():
        _net(torch.randn(3, 2))  # float32 data of a new width into the float64 network
except Exception:
    pass
assert {p.dtype for p in _net.parameters()} == {torch.float64}, \
    "A float32 batch of a new width left a float32 input layer in a float64 network: make the new layer with the " \
    "network's dtype and device, not the input's."
_net.to("meta")  # widths 1, 7, 9, 11 and 2 were seen on the CPU; the meta device stands in for a GPU
for _x in (torch.zeros(17, 13, device="meta", dtype=torch.float64),  # a new width, data where the network lives
           torch.randn(19, 6)):  # a new width, CPU data into the network on the meta device (it may be rejected)
    _made = _layers_made(_net, lambda: _net(_x))
    assert _made and {(p.device.type, p.dtype) for m in _made for p in m.parameters()} == {("meta", torch.float64)}, \
        f"A new width ({_x.shape[-1]}) after net.to('meta') made no input layer, or made it off the meta device " \
        "where the network lives: make each new layer on the network's current device and dtype (the shared " \
        "output layer's weight), not the input's or the defaults."
try:
    with torch.device("meta"):  # built on the meta device from the start
        _built = MultiWidthNet(hidden=4, out_features=2)
except (RuntimeError, NotImplementedError) as _error:
    raise AssertionError("Building the network inside `with torch.device('meta'):` failed: make the layers with the "
                         "defaults, without moving them to the CPU.") from _error
assert {p.device.type for p in _built.parameters()} == {"meta"}, \
    "A network built inside `with torch.device('meta'):` should live there: make the layers with the defaults, " \
    "without moving them to the CPU."
_made = _layers_made(_built, lambda: _built(torch.zeros(3, 5, device="meta")))
assert _made and {p.device.type for m in _made for p in m.parameters()} == {"meta"}, \
    "A network built on the meta device made a new width's input layer elsewhere (or none): make each new layer " \
    "on the network's device (the shared output layer's weight)."
### END HIDDEN TESTS

# %% [markdown]
# ## 5. In your own words
#
# (a) A network gives only its first layer's input size, `nn.Linear(20, 256)`,
# and every later layer is lazy. What happens, and when are the later sizes
# known? (b) What happens if the data does not match, for example a lazy layer
# after `nn.Linear(20, 256)` is materialized and then a batch with 30 features
# arrives, or a sized layer after a lazy one expects a different width than the
# lazy one produces? When do you find out?

# %% manual [markdown] grade_id="lazy_answer" points=2
# (a) It works: the first layer is fully defined, and each lazy layer reads its
# input width from the output of the layer before it during the first forward
# pass (256 for the second layer, then whatever that one produces). Until that
# pass the later weights are placeholders, so counting parameters or
# initializing by type must wait for a dry run. Most optimizers (`SGD`, `Adam`)
# built before the dry run still work, since materializing fills in the very
# `Parameter` objects they already hold; but one that creates state in its
# constructor (`Adagrad`) fails on the placeholders. So build the optimizer
# after the dry run, as PyTorch's documentation does. (`Muon` refuses them too,
# and after the dry run still refuses every bias: it takes only 2-D weights.)
#
# (b) The shapes are fixed after materialization, so the 30-feature batch fails
# in the first layer with a shape error ("mat1 and mat2 shapes cannot be
# multiplied"); lazy layers never adapt again. A lazy layer infers only its
# own input width, not its output width, so a sized layer after it that expects
# another width also fails with a shape error. Either way you find out only at
# run time, not when the model is built: on the first forward pass that meets
# the mismatch (the first 30-feature batch; for the two layers that do not fit,
# the very first pass). The failed pass may already have materialized the
# layers before the error.

# %% [markdown]
# ## 6. Inputs of varying dimensionality
#
# A net `nn.Sequential(nn.LazyLinear(8), nn.ReLU(), nn.LazyLinear(2))` is dry-run
# with a batch of shape `(4, 10)`. Afterwards it receives inputs of shape
# `(3, 7, 10)`, `(4, 12)` and `(10,)`. Which work, what are the output shapes,
# and why? Besides one input layer per width (item 4), what would you do if the
# size really varies from sample to sample (sentences of different lengths,
# images of different sizes)?

# %% manual [markdown] grade_id="varying_dims_answer" points=1
# `nn.Linear` acts on the last dimension only and treats every leading dimension
# as batch, so `(3, 7, 10)` works and gives `(3, 7, 2)`, and `(10,)` works as a
# single unbatched sample and gives `(2,)`. `(4, 12)` fails with a shape error:
# the dry run fixed the first weight at `(8, 10)`, and lazy layers never adapt
# again. When the size varies, make it fixed before the first lazy or linear
# layer: pad or truncate sequences to one length (or pool over the sequence,
# e.g. a mean over time), and resize images or use adaptive pooling
# (`nn.AdaptiveAvgPool2d`) so the flattened width no longer depends on the input
# size. One input layer per width suits a few known kinds of input (sensors with
# 3 or 5 readings), not widths that change from sample to sample.

# %% [markdown]
# ## Summary
#
# - Lazy parameters and buffers are placeholders (`UninitializedParameter`,
#   `UninitializedBuffer`) until a forward pass (or a loaded `state_dict`) gives
#   them a shape.
# - Materialize with a dry run under `torch.no_grad()` **in eval mode** (BatchNorm
#   statistics stay untouched, one value per channel is fine), give every
#   submodule its own mode back in a `finally:` block, then initialize with
#   `net.apply`.
# - Shapes come from the data: check them once after the dry run, fed zeros of
#   the network's own dtype and device.
# - Inputs of different widths: one input layer per width in an `nn.ModuleDict`,
#   created on first sight where the network lives, in front of one shared body.
