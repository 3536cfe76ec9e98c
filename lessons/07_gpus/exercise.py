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
# # Exercise 7: GPUs
#
# Five small tools for working with devices, and one question to answer. Write
# your code where it says `YOUR CODE HERE` (delete the `raise
# NotImplementedError()` line), then run the test cell under it: silence means
# the visible checks pass. When grading, more checks of the same behaviour run on
# other inputs, so make the code right, not just the examples.
#
# Everything here runs on a CPU-only machine too. To check the GPU branches of
# your code anyway, the tests **simulate** other machines (two CUDA GPUs, or a
# Mac with MPS): for a moment they replace PyTorch's device functions with
# stand-ins, in `torch.cuda`, `torch.mps`, `torch.backends.mps` and
# `torch.accelerator` alike, so the vendor-specific functions and the lecture's
# `torch.accelerator` both work. Call them through their modules, as
# `torch.cuda.device_count()` or `torch.accelerator.device_count()`: a name
# imported on its own (`from torch.cuda import device_count`) keeps the real
# function, which the tests cannot replace.
#
# Each requirement the tests check ends with its name in brackets, such as
# `[clause call_module]`: a test that fails is about one of them.
#
# Use only `torch`, the standard library, `numpy` and `matplotlib`.

# %%
import time

import matplotlib.pyplot as plt
import torch

_ = torch.manual_seed(0)  # the same random examples on every run

# %% [markdown]
# ## Set-up for the tests (run it; no need to read it)
#
# The next cell defines the machinery the test cells use: `_simulated(...)`
# pretends the machine has CUDA GPUs or MPS, and `_host_reads(fn)` counts how
# often values travel from a simulated device back to the host (item 5). In
# JupyterLab its code is folded: run it, and click its left edge to unfold it.

# %% jupyter={"source_hidden": true}
# Test machinery, not part of any answer. `_simulated(cuda=N, mps=...)` swaps PyTorch's device
# functions for stand-ins and puts the real ones back; each synchronize only notes which device it
# waited for. `_host_reads(fn)` runs fn(device) on a simulated device, `cpu:0`, which computes like
# the CPU but counts every read back to the host: `.item()`, `.cpu()`, `.tolist()`, `.numpy()`,
# `float(t)`, `.to("cpu")`, printing, `if t > 0:`, `torch.tensor([...])` of device values, writing
# them into a CPU tensor. Random numbers drawn on it differ from the CPU's, as on a real device.
from contextlib import contextmanager

from torch.overrides import TorchFunctionMode
from torch.utils._pytree import tree_flatten


def _index_on(kind, where, current):
    """The index of the `kind` device that `where` (None, an int, a string or a torch.device) names."""
    if where is None or isinstance(where, int):
        return current if where is None else where
    where = torch.device(where)
    if where.type != kind:
        raise ValueError(f"a {kind} function was given a {where.type} device")
    return current if where.index is None else where.index


@contextmanager
def _simulated(cuda=0, mps=False, log=None):
    """Pretend the machine has `cuda` CUDA devices (device 0 current) and (or not) MPS; every
    synchronize appends the torch.device it waits for to the list `log`."""
    kind = "cuda" if cuda else "mps" if mps else None
    count = cuda or int(mps)
    state = {"current": 0}
    log = [] if log is None else log

    def wait(device_kind, where=None):
        if kind != device_kind:
            raise RuntimeError(f"no {device_kind} device on this (simulated) machine")
        index = _index_on(device_kind, where, state["current"])
        if not 0 <= index < count:
            raise RuntimeError(f"there is no device {device_kind}:{index} on this (simulated) machine")
        log.append(torch.device(device_kind, index))

    def exchange(index):
        previous = state["current"]
        if index is not None and index >= 0:
            state["current"] = _index_on(kind or "cuda", index, previous)
        return previous

    def select(where, /):
        exchange(_index_on(kind or "cuda", where, state["current"]))

    def accelerator_synchronize(where=None, /):
        if kind is None:
            raise RuntimeError("torch.accelerator.synchronize needs an accelerator")
        wait(kind, where)

    stand_ins = {
        (torch.cuda, "is_available"): lambda: cuda > 0,
        (torch.cuda, "device_count"): lambda: cuda,
        (torch.cuda, "current_device"): lambda: state["current"],
        (torch.cuda, "set_device"): select,
        (torch.cuda, "_exchange_device"): exchange,
        (torch.cuda, "_maybe_exchange_device"): exchange,
        (torch.cuda, "synchronize"): lambda where=None: wait("cuda", where),
        (torch.backends.mps, "is_available"): lambda: mps,
        (torch.backends.mps, "is_built"): lambda: mps,
        (torch.mps, "is_available"): lambda: mps,
        (torch.mps, "device_count"): lambda: int(mps),
        (torch.mps, "synchronize"): lambda: wait("mps"),
        (torch.accelerator, "is_available"): lambda: kind is not None,
        (torch.accelerator, "current_accelerator"):
            lambda check_available=False: None if kind is None else torch.device(kind),
        (torch.accelerator, "device_count"): lambda: count,
        (torch.accelerator, "current_device_index"): lambda: state["current"],
        (torch.accelerator, "current_device_idx"): lambda: state["current"],
        (torch.accelerator, "set_device_index"): select,
        (torch.accelerator, "set_device_idx"): select,
        (torch.accelerator, "synchronize"): accelerator_synchronize,
        (torch._C, "_accelerator_exchangeDevice"): exchange,
        (torch._C, "_accelerator_maybeExchangeDevice"): exchange,
    }
    saved = {(module, name): getattr(module, name) for module, name in stand_ins if hasattr(module, name)}
    for (module, name), stand_in in stand_ins.items():
        if (module, name) in saved:
            setattr(module, name, stand_in)
    try:
        yield log
    finally:
        for (module, name), real in saved.items():
            setattr(module, name, real)


_SIMULATED_DEVICE = torch.device("cpu", 0)
# Tensor methods that hand a value (or a whole tensor) from the device to the host.
_TO_HOST = {"item", "tolist", "numpy", "cpu", "__array__", "__float__", "__int__", "__bool__", "__index__",
            "__repr__", "__format__", "__str__"}
# Functions that read every tensor in a Python list one by one (torch.tensor([t0, t1, ...])).
_FROM_LIST = {"tensor", "as_tensor", "asarray"}
# Random draws made on the device: a real device has its own generator, so they differ from the CPU's.
_IN_PLACE_RANDOM = {"normal_", "uniform_", "random_", "bernoulli_", "exponential_"}
_RANDOM = {"rand", "randn", "randint", "randperm", "normal", "rand_like", "randn_like", "randint_like"}


def _on_device(value):
    return isinstance(value, torch.Tensor) and getattr(value, "_on_simulated_device", False)


class _HostReads(TorchFunctionMode):
    """Counts reads from `_SIMULATED_DEVICE` back to the host while active."""

    def __init__(self):
        super().__init__()
        self.count = 0
        self.device_ops = set()  # the names of the functions that ran on the device's values

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = getattr(func, "__name__", "")
        inputs = [a for a in tree_flatten((args, kwargs))[0] if isinstance(a, torch.Tensor)]
        on_device = [t for t in inputs if _on_device(t)]
        if on_device:
            self.device_ops.add(name)
        targets = [a for a in tree_flatten((args[1:], kwargs))[0] if isinstance(a, (str, torch.device))]
        target = torch.device(targets[0]) if name == "to" and targets else kwargs.get("device")
        to_device = target is not None and torch.device(target) == _SIMULATED_DEVICE
        result = func(*args, **kwargs)
        drawn_on_device = to_device or (name.endswith("_like") and kwargs.get("device") is None and on_device)
        if name in _RANDOM and drawn_on_device and isinstance(result, torch.Tensor):
            result = result.flatten().roll(1).reshape(result.shape)  # a device's generator draws other numbers
        if name in _IN_PLACE_RANDOM and args and _on_device(args[0]):
            with torch.no_grad():
                args[0].copy_(args[0].flatten().roll(1).reshape(args[0].shape))
        if name in _FROM_LIST and args and isinstance(args[0], (list, tuple)):
            self.count += len(on_device)         # each element is read on its own
            on_device = []
        elif name in {"copy_", "__setitem__"} and args and not _on_device(args[0]):
            self.count += len(on_device) > 0     # written into a host tensor
            on_device = []
        elif on_device and (name in _TO_HOST or (name == "to" and target is not None and not to_device)):
            self.count += 1
            if any(result is t for t in inputs):  # `.cpu()` of a CPU tensor returns itself;
                result = result.clone()          # a real device would hand back a host copy
            on_device = []
        if on_device or to_device:
            for out in tree_flatten(result)[0]:
                if isinstance(out, torch.Tensor):
                    out._on_simulated_device = True
        return result


def _host_reads(fn):
    """How many times fn(device) reads values from a simulated device back to the host."""
    with _HostReads() as reads:
        fn(_SIMULATED_DEVICE)
    return reads.count


def _device_ops(fn):
    """The names of the torch functions that fn(device) ran on values of a simulated device."""
    with _HostReads() as reads:
        fn(_SIMULATED_DEVICE)
    return reads.device_ops

# %% [markdown]
# ## 1. One device with a fallback
#
# Write `try_gpu(i=0)`. [clause real_device] It returns `torch.device("cuda:i")` if there are more
# than `i` CUDA devices; [clause cuda_count] otherwise `torch.device("mps")` if `i == 0` and MPS is
# available; otherwise `torch.device("cpu")`. [clause fallbacks]
#
# Spell out each fallback with the vendor-specific queries
# (`torch.cuda.device_count()`, `torch.backends.mps.is_available()`), or build
# it on `torch.accelerator` as the lecture's `pick_device` does: on the machines
# this exercise is about (CUDA GPUs, a Mac with MPS, or neither) both give the
# same device.

# %% answer grade_id="try_gpu"
def try_gpu(i=0):
    ### BEGIN SOLUTION
    if torch.cuda.device_count() > i:
        return torch.device(f"cuda:{i}")
    if i == 0 and torch.backends.mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")
    ### END SOLUTION

# %% tests grade_id="test_try_gpu" points=2
def _device(value, what):
    """value as a torch.device: only a torch.device, or a plain string naming one, counts as a device."""
    assert type(value) is torch.device or type(value) is str, \
        f"{what} should be a torch.device, got a {type(value).__name__}: build it with torch.device(...)."
    try:
        return torch.device(value)
    except RuntimeError:
        raise AssertionError(f"{what} is {value!r}, which names no device: build it with torch.device(...).")


def _is(value, kind, index=None, what="What try_gpu returns"):
    """True if value is a device of that kind:index (for cpu and mps, index None and 0 both count)."""
    found = _device(value, what)
    if kind == "cuda":
        return found.type == "cuda" and found.index == index
    return found.type == kind and found.index in (None, 0)


assert _is(try_gpu(1000), "cpu"), "No machine has 1001 GPUs: try_gpu(1000) should fall back to the CPU."
with _simulated(cuda=2):
    assert _is(try_gpu(), "cuda", 0), f"With 2 CUDA GPUs, try_gpu() should be cuda:0, got {try_gpu()!r}."
    assert _is(try_gpu(1), "cuda", 1), f"With 2 CUDA GPUs, try_gpu(1) should be cuda:1, got {try_gpu(1)!r}."
    assert _is(try_gpu(2), "cpu"), \
        f"With 2 CUDA GPUs there is no cuda:2: try_gpu(2) should be the CPU, got {try_gpu(2)!r}. Compare i with the device count."
with _simulated(cuda=0, mps=False):
    assert _is(try_gpu(), "cpu"), f"Without any GPU, try_gpu() should be the CPU, got {try_gpu()!r}."
with _simulated(cuda=0, mps=True):
    assert _is(try_gpu(), "mps"), \
        f"On a Mac with MPS and no CUDA, try_gpu() should be mps, got {try_gpu()!r}: check torch.backends.mps.is_available()."
    assert _is(try_gpu(1), "cpu"), \
        f"There is only one MPS device: on a Mac try_gpu(1) should be the CPU, got {try_gpu(1)!r}."
with _simulated(cuda=1, mps=True):
    assert _is(try_gpu(0), "cuda", 0), \
        f"CUDA comes before MPS: with one CUDA GPU and MPS, try_gpu(0) should be cuda:0, got {try_gpu(0)!r}."
    assert _is(try_gpu(1), "cpu"), \
        f"With one CUDA GPU, try_gpu(1) should be the CPU (MPS is only the fallback for i == 0), got {try_gpu(1)!r}."
### BEGIN HIDDEN TESTS
with _simulated(cuda=0, mps=True):
    assert _is(try_gpu(2), "cpu"), f"There is only one MPS device: try_gpu(2) should be the CPU, got {try_gpu(2)!r}."
with _simulated(cuda=2, mps=True):
    assert _is(try_gpu(1), "cuda", 1), "With 2 CUDA GPUs (and MPS), try_gpu(1) should be cuda:1."
    assert _is(try_gpu(2), "cpu"), \
        f"With 2 CUDA GPUs, try_gpu(2) should be the CPU (MPS is only the fallback for i == 0), got {try_gpu(2)!r}."
with _simulated(cuda=8):
    assert _is(try_gpu(7), "cuda", 7), f"With 8 CUDA GPUs, try_gpu(7) should be cuda:7, got {try_gpu(7)!r}."
    assert _is(try_gpu(8), "cpu"), f"With 8 CUDA GPUs, try_gpu(8) should be the CPU, got {try_gpu(8)!r}."
with _simulated(cuda=1):
    assert _is(try_gpu(), "cuda", 0), "With one CUDA GPU, try_gpu() should be cuda:0."
    assert _is(try_gpu(1), "cpu"), \
        f"With one CUDA GPU, try_gpu(1) should be the CPU (MPS is only the fallback for i == 0), got {try_gpu(1)!r}."
### END HIDDEN TESTS

# %% [markdown]
# ## 2. All devices
#
# Write `try_all_gpus()`: a list of all CUDA devices (`cuda:0`, `cuda:1`, ...) [clause all_cuda]
# if there are any; otherwise `[torch.device("mps")]` if MPS is available; [clause mps_after_cuda]
# otherwise `[torch.device("cpu")]`. It is never empty. [clause never_empty] As in item 1, the
# vendor-specific queries and `torch.accelerator` (the lecture's `all_devices`)
# both work.

# %% answer grade_id="try_all_gpus"
def try_all_gpus():
    ### BEGIN SOLUTION
    n = torch.cuda.device_count()
    if n > 0:
        return [torch.device(f"cuda:{i}") for i in range(n)]
    if torch.backends.mps.is_available():
        return [torch.device("mps")]
    return [torch.device("cpu")]
    ### END SOLUTION

# %% tests grade_id="test_try_all_gpus" points=1
def _devices(value):
    """The result as a list of (type, index) pairs, index 0 for an unnumbered cpu or mps."""
    assert type(value) in (list, tuple), \
        f"try_all_gpus() should return a list of devices, got a {type(value).__name__}."
    found = [_device(d, "Each entry of try_all_gpus()") for d in value]
    return [(d.type, d.index if d.index is not None or d.type == "cuda" else 0) for d in found]


with _simulated(cuda=3):
    assert _devices(try_all_gpus()) == [("cuda", 0), ("cuda", 1), ("cuda", 2)], \
        f"With 3 CUDA GPUs, expected [cuda:0, cuda:1, cuda:2], got {try_all_gpus()!r}."
with _simulated(cuda=0, mps=False):
    assert _devices(try_all_gpus()) == [("cpu", 0)], \
        f"Without any GPU the list should hold the CPU, never be empty; got {try_all_gpus()!r}."
with _simulated(mps=True):
    assert _devices(try_all_gpus()) == [("mps", 0)], \
        f"On a Mac with MPS and no CUDA, expected [mps], got {try_all_gpus()!r}."
with _simulated(cuda=1, mps=True):
    assert _devices(try_all_gpus()) == [("cuda", 0)], \
        f"CUDA devices come first: with one CUDA GPU (and MPS), expected [cuda:0], got {try_all_gpus()!r}."
### BEGIN HIDDEN TESTS
with _simulated(cuda=2, mps=True):
    assert _devices(try_all_gpus()) == [("cuda", 0), ("cuda", 1)], \
        f"With 2 CUDA GPUs (and MPS), expected [cuda:0, cuda:1], got {try_all_gpus()!r}."
with _simulated(cuda=8):
    assert _devices(try_all_gpus()) == [("cuda", i) for i in range(8)], "With 8 CUDA GPUs, all 8 should be listed in order."
with _simulated(cuda=1):
    assert _devices(try_all_gpus()) == [("cuda", 0)], \
        f"With one CUDA GPU, expected [cuda:0] alone, got {try_all_gpus()!r}."
assert len(_devices(try_all_gpus())) >= 1, "On this machine the list should not be empty."
### END HIDDEN TESTS

# %% [markdown]
# ## 3. Moving a whole batch
#
# A batch from a data loader is often a nest of containers: a tuple of tensors,
# a dict with tensors and metadata, a namedtuple. Write `to_device(obj, device)`:
# it returns a copy of `obj` [clause copy] in which every tensor, however deeply nested in [clause nested]
# lists, tuples and dicts, has been moved with `.to(device)` [clause moved] (so a tensor that
# requires grad still does, as `.to` keeps it in the autograd graph). [clause grad] Every container
# comes back as the same type it was: a list stays a list, a tuple a tuple, a
# namedtuple that same namedtuple (so `batch.x` still works), a dict a dict with
# the same keys, an `OrderedDict` an `OrderedDict`. [clause same_types] Everything that is not a
# tensor or a container (numbers, strings, `None`, ...) is kept as it is. [clause kept]
#
# Tip: the `meta` device exists on every machine, so you can try this out even
# without a GPU: `to_device(batch, torch.device("meta"))`.

# %% answer grade_id="to_device"
def to_device(obj, device):
    ### BEGIN SOLUTION
    if isinstance(obj, torch.Tensor):
        return obj.to(device)
    if isinstance(obj, dict):
        return type(obj)((key, to_device(value, device)) for key, value in obj.items())
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):  # a namedtuple takes its fields one by one
        return type(obj)(*(to_device(item, device) for item in obj))
    if isinstance(obj, (list, tuple)):
        return type(obj)(to_device(item, device) for item in obj)
    return obj
    ### END SOLUTION

# %% tests grade_id="test_to_device" points=2
from collections import OrderedDict, namedtuple


def _check_moved(out, given, device, where="the batch"):
    """out is `given` with every tensor moved to `device`: the same container types, keys and values."""
    if isinstance(given, torch.Tensor):
        assert isinstance(out, torch.Tensor) and type(out.device) is torch.device and out.device == device, \
            f"{where} should come back as a tensor on {device}: call .to(device) on every tensor you reach."
        assert out.shape == given.shape and out.dtype == given.dtype, f"{where} changed its shape or dtype: only its device should change."
        assert out.requires_grad == given.requires_grad, \
            f"{where} lost requires_grad on the way: move it with .to(device), which keeps it in the autograd graph " \
            "(no .detach(), no torch.no_grad())."
        if device.type != "meta":
            assert torch.equal(out.cpu(), given.cpu()), f"{where} changed its values: only its device should change."
    elif isinstance(given, (list, tuple, dict)):
        assert type(out) is type(given), \
            f"{where} is a {type(given).__name__} but it came back as a {type(out).__name__}: rebuild each container " \
            "with the type it had, type(obj)(...) (a namedtuple takes its fields one by one: type(obj)(*items))."
        if isinstance(given, dict):
            assert list(out) == list(given), f"The dict {where} should keep its keys, in order."
            for key in given:
                _check_moved(out[key], given[key], device, f"{where}[{key!r}]")
        else:
            assert len(out) == len(given), f"The {type(given).__name__} {where} should keep its length, {len(given)}: keep the values that are not tensors too."
            for k, (a, b) in enumerate(zip(out, given)):
                _check_moved(a, b, device, f"{where}[{k}]")
    else:
        assert out is given, \
            f"{where} is not a tensor or a container: it should be kept as the very same object, got {out!r}."


def _moved_to(obj, device, where):
    """to_device(obj, device), checked against obj."""
    try:
        out = to_device(obj, device)
    except TypeError as error:
        raise AssertionError(f"to_device raised {error!r} on {where}: a namedtuple's constructor takes its fields "
                             "one by one, type(obj)(*items), not one iterable.") from error
    _check_moved(out, obj, device, where)
    return out


_meta = torch.device("meta")
_batch = {"x": torch.ones(2, 3), "pair": (torch.zeros(4), 3), "items": [torch.arange(2), "name"]}
_moved = _moved_to(_batch, _meta, "batch")
assert _batch["x"].device.type == "cpu" and _batch["items"][0].device.type == "cpu", \
    "The original tensors should stay where they were: .to() returns a new tensor."
assert _moved["items"] is not _batch["items"], \
    "The caller's list came back itself: build a new list, and leave the batch you were given as it was."
_moved_to(torch.ones(2), _meta, "tensor")
_moved_to({1: [None, "a name"], "empty": ((), [], {})}, _meta, "text_batch")
_Batch = namedtuple("_Batch", ["x", "y", "ids"])
_moved = _moved_to(_Batch(torch.ones(2, 2), torch.zeros(2), ["a", "b"]), _meta, "named_batch")
assert _moved.x.device == _meta, "The namedtuple's field .x should hold the moved tensor."
_moved_to(OrderedDict([("z", torch.ones(1)), ("a", torch.zeros(1))]), _meta, "ordered_batch")
### BEGIN HIDDEN TESTS
_moved_to([({"a": [torch.ones(1), (torch.zeros(2), None)]},), 2.5, None, (), [], {}], _meta, "deep_batch")
_moved_to({"w": torch.arange(3.0), 7: "seven"}, torch.device("cpu"), "cpu_batch")
_Pair = namedtuple("_Pair", "first second")
_moved_to(OrderedDict([("pairs", [_Pair(torch.ones(3), {"y": torch.zeros(1)}), _Pair(1, "x")]), ("n", 2)]), _meta,
          "pairs_batch")
_moved_to(_Pair((), []), _meta, "empty_pair")
_weight = torch.ones(3, requires_grad=True)  # .to(device) keeps a tensor that requires grad in the graph
_moved_to(_weight, _meta, "weight")
_moved_to({"w": _weight, "named": _Pair(_weight, [_weight, (_weight,)]), "ordered": OrderedDict(w=_weight)}, _meta,
          "trainable_batch")
_zeros, _one_hot = torch.zeros(5000), torch.zeros(5000)  # print alike ("0., 0., ..., 0."), differ in the middle
_one_hot[2500] = 1.0
to_device(_zeros, torch.device("cpu"))
assert to_device(_one_hot, torch.device("cpu"))[2500].item() == 1.0, \
    "A second batch that prints like the first should be moved with its own values: move what you are given on every call."
### END HIDDEN TESTS

# %% [markdown]
# ## 4. Timing with synchronization
#
# Write `timed(fn, device, repeats=10)`: it calls `fn()` `repeats` times [clause calls_fn] and
# returns the **seconds per call** (a float). [clause per_call] Accelerators run asynchronously,
# CUDA GPUs and Apple's MPS alike, so when `device` is not the CPU, wait for
# **that** device before **each** read of the clock (`time.perf_counter()`), [clause sync_each_read] as
# the lecture's `synchronize` helper does: `torch.accelerator.synchronize`
# works for any accelerator, `torch.cuda.synchronize` and
# `torch.mps.synchronize` for their own kind. [clause sync_own_kind] Give the CUDA and the
# accelerator functions the device: [clause sync_named] without it they wait for the *current*
# device, which on a machine with two GPUs may not be the one you were given.
# On the CPU nothing is queued: there is nothing to wait for [clause cpu_no_sync] (on a machine
# without an accelerator every one of these raises). A warm-up call before
# timing is allowed, outside the timed window. [clause warm_up] The lecture's
# `torch.utils.benchmark.Timer` is a fine clock too (its own synchronize waits
# for the current device only: wait for yours in the timed statement, as the
# lecture's `per_call` does).
#
# The tests run `timed` on simulated machines with a simulated clock, on which
# every call of `fn` takes a fixed time, so your result must be that time.

# %% answer grade_id="timed"
def timed(fn, device, repeats=10):
    ### BEGIN SOLUTION
    device = torch.device(device)

    def sync():
        if device.type != "cpu":
            torch.accelerator.synchronize(device)

    sync()
    start = time.perf_counter()
    for _ in range(repeats):
        fn()
    sync()
    return (time.perf_counter() - start) / repeats
    ### END SOLUTION

# %% tests grade_id="test_timed" points=2
import math
import numbers
import threading
import timeit

_MACHINES = {"cuda": "two CUDA GPUs", "mps": "Apple's MPS", "cpu": "no accelerator"}
# The clocks a timing function may read; the test replaces each (in the time module, and timeit's
# default timer) with a simulated clock that only the simulated work of fn moves forward.
_CLOCKS = ("perf_counter", "perf_counter_ns", "monotonic", "monotonic_ns", "time", "time_ns")


def _timed_with_log(device, repeats, machine, cost=0.05):
    """Run timed(fn, device[, repeats]) on a simulated machine (`machine`: "cuda", "mps" or "cpu",
    see _MACHINES) where each call of fn takes exactly `cost` seconds of the simulated clock; return
    (result, log): the log lists "fn", "clock" (a read of a clock) and the device of each synchronize."""
    answer = timed  # looked up before anything is patched: without a timed, nothing is left patched
    log, now, test_thread = [], [1000.0], threading.get_ident()

    def simulated(clock, nanoseconds):
        def read():
            if threading.get_ident() != test_thread:
                return clock()  # the kernel's other threads keep the real clock
            log.append("clock")
            return int(now[0] * 1e9) if nanoseconds else now[0]
        return read

    def fn():
        log.append("fn" if torch.is_grad_enabled() else "fn without gradients")
        now[0] += cost

    saved_clocks = {name: getattr(time, name) for name in _CLOCKS}
    saved_timer = timeit.default_timer
    # Clocks the answer holds under names of its own (`from time import perf_counter`, a default
    # argument, timeit's own default timer) are replaced as well.
    stand_ins = {id(clock): simulated(clock, name.endswith("_ns")) for name, clock in saved_clocks.items()}
    stand_ins[id(saved_timer)] = simulated(saved_timer, False)
    saved_names = {k: v for k, v in getattr(answer, "__globals__", {}).items() if id(v) in stand_ins and callable(v)}
    holders = [f for f in (answer, timeit.timeit, timeit.repeat, timeit.Timer.__init__) if getattr(f, "__defaults__", None)]
    saved_defaults = [(f, f.__defaults__) for f in holders]
    with _simulated(cuda=2 if machine == "cuda" else 0, mps=machine == "mps", log=log):
        for name, clock in saved_clocks.items():
            setattr(time, name, stand_ins[id(clock)])
        timeit.default_timer = stand_ins[id(saved_timer)]
        getattr(answer, "__globals__", {}).update({k: stand_ins[id(v)] for k, v in saved_names.items()})
        for f in holders:
            f.__defaults__ = tuple(stand_ins.get(id(d), d) for d in f.__defaults__)
        try:
            result = answer(fn, device, repeats) if repeats is not None else answer(fn, device)
        except Exception as error:
            advice = ("nothing needs synchronizing on the CPU, and without an accelerator every synchronize function "
                      "raises" if device.type == "cpu" else
                      f"synchronize the device {device} with torch.accelerator.synchronize or with "
                      f"torch.{device.type}.synchronize, not with another kind's function")
            raise AssertionError(f"On a simulated machine with {_MACHINES[machine]}, timed(fn, {device}) raised "
                                 f"{error!r}: {advice}.") from error
        finally:
            for name, clock in saved_clocks.items():
                setattr(time, name, clock)
            timeit.default_timer = saved_timer
            getattr(answer, "__globals__", {}).update(saved_names)
            for f, d in saved_defaults:
                f.__defaults__ = d
    return result, log


def _check_timed(device, repeats, machine, cost=0.05):
    """timed on the simulated machine calls fn `repeats` times, returns `cost`, and has the named
    device idle at every read of the clock."""
    result, log = _timed_with_log(device, repeats, machine, cost)
    repeats = 10 if repeats is None else repeats
    assert "fn without gradients" not in log, \
        "timed called fn with gradients switched off (torch.no_grad()): fn may be a training step that calls " \
        "backward, so call it just as it is."
    calls = log.count("fn")
    assert calls >= repeats, f"fn should be called `repeats` ({repeats}) times, it was called {calls} times."
    assert isinstance(result, numbers.Real) and not isinstance(result, bool), \
        f"timed should return a number of seconds (a float), got a {type(result).__name__}."
    assert math.isclose(result, cost, rel_tol=1e-6), \
        f"Each call of fn took exactly {cost} s of the simulated clock, but timed returned {result}: divide the " \
        "time of the timed calls by their number, report seconds (not ms), and keep any warm-up call out of " \
        "the timed window (start the clock after it)."
    if device.type == "cpu":
        return log
    named = torch.device(device.type, device.index or 0)  # a device without an index means the current one, 0
    idle, started, others = False, False, set()
    for entry in log:
        if entry == "fn":
            idle, started, others = False, True, set()
        elif isinstance(entry, torch.device):
            idle = idle or entry == named
            others |= set() if entry == named else {str(entry)}
        elif not idle:  # a read of the clock while calls of fn may still be queued
            assert not others, \
                f"timed was given {device} but synchronized {', '.join(sorted(others))}: without an argument " \
                "synchronize waits for the current device, not the one named: give it the device as its argument."
            assert started, \
                f"For the device {device}, synchronize before the first clock read as well, so work queued " \
                "before timed was called is not counted."
            raise AssertionError(
                f"For the device {device}, timed read the clock while calls of fn could still be queued: "
                "synchronize right before every read of the clock, the one after the last call included.")
    return log


_check_timed(torch.device("cpu"), 5, "cuda")
_check_timed(torch.device("cpu"), None, "cpu")
_check_timed(torch.device("cuda"), 5, "cuda")
_check_timed(torch.device("mps"), 5, "mps")
### BEGIN HIDDEN TESTS
_check_timed(torch.device("cuda:1"), None, "cuda", cost=0.02)
_check_timed(torch.device("cuda", 0), 4, "cuda", cost=0.5)
_check_timed(torch.device("mps"), 3, "mps", cost=1.5)
_check_timed(torch.device("cpu"), 2, "mps")
_check_timed(torch.device("cpu"), 1, "cpu", cost=0.25)
_calls = []
_fn = lambda: _calls.append(1)
timed(_fn, torch.device("cpu"), repeats=3)
timed(_fn, torch.device("cpu"), repeats=3)
assert len(_calls) >= 6, \
    f"timed called the same fn {len(_calls)} times over two calls of 3 repeats: time it again on every call."
### END HIDDEN TESTS

# %% [markdown]
# ## 5. Keep results on the device
#
# Write `log_norms(n, size, device, on_device=True)`. It first seeds the random
# number generator (`torch.manual_seed` with a fixed number of your choice, or a
# seeded `torch.Generator`), so that every call returns the same values. [clause seeded] Then, for
# each of `n` steps, it draws two fresh `size x size` matrices [clause fresh] with `torch.randn`
# **on the CPU** (so the values do not depend on the device), [clause cpu_draws] moves them to
# `device`, [clause on_device_work] multiplies them (`A @ B`) and takes the Frobenius norm of the product. [clause formula]
#
# - `on_device=True`: keep the norms on the device and move them to the CPU
#   **once**, at the end. [clause once]
# - `on_device=False`: move each norm to the CPU as soon as it is computed
#   (`.item()`), in every step. [clause every_step]
#
# Either way return a list of `n` Python floats; [clause floats] both ways give the same list.
# Besides the values, the tests count how often values cross from the device to
# the host (on a simulated device, see `_host_reads` above), whatever call makes
# them cross.

# %% answer grade_id="log_norms"
def log_norms(n, size, device, on_device=True):
    ### BEGIN SOLUTION
    generator = torch.Generator().manual_seed(0)
    norms = []
    for _ in range(n):
        A = torch.randn(size, size, generator=generator).to(device)
        B = torch.randn(size, size, generator=generator).to(device)
        norm = torch.linalg.matrix_norm(A @ B)
        norms.append(norm if on_device else norm.item())
    if on_device:
        return torch.stack(norms).cpu().tolist()
    return norms
    ### END SOLUTION

# %% tests grade_id="test_log_norms" points=2
_cpu = torch.device("cpu")
_kept = log_norms(5, 64, _cpu, on_device=True)
assert isinstance(_kept, list) and len(_kept) == 5, f"Expected a list of 5 norms, got {type(_kept).__name__}."
assert all(isinstance(v, float) for v in _kept), "The norms should be Python floats: use .tolist() or .item()."
_moved = log_norms(5, 64, _cpu, on_device=False)
assert _kept == _moved, "on_device=True and on_device=False should give exactly the same list: are both seeded the same way?"
torch.manual_seed(123)
_ = torch.rand(10)
assert log_norms(5, 64, _cpu) == _kept, "Two calls should give the same list: seed inside log_norms."
assert len(set(_kept)) == 5, "Every step should draw fresh matrices, so the norms should differ: seed once, before the loop."
# For A, B with N(0, 1) entries, every entry of A @ B has variance `size`, so the squared Frobenius
# norm has mean size**3 and the norm is close to size**1.5. Over 500 seeds the mean ratio of 5 norms
# for size 64 stayed within 0.97-1.03; the spectral norm gives about 0.3, torch.rand about 2.
_ratio = sum(_kept) / len(_kept) / 64 ** 1.5
assert 0.9 < _ratio < 1.1, \
    f"The norms are off by a factor {_ratio:.2f} from what N(0, 1) matrices give: use torch.randn, A @ B and the Frobenius norm."

# What the item is about: how often values cross from the device to the host.
_once = _host_reads(lambda device: log_norms(6, 8, device, on_device=True))
assert _once == 1, \
    f"With on_device=True the 6 norms should reach the host once, at the end; values crossed {_once} times. " \
    "Do not move or convert each norm (.item(), .cpu(), float(), torch.tensor(list)) when on_device is True: " \
    "torch.stack them on the device and move the stack once (.cpu().tolist() or .tolist())."
_every = _host_reads(lambda device: log_norms(6, 8, device, on_device=False))
assert _every >= 6, \
    f"With on_device=False each of the 6 norms should be moved as soon as it is computed; values crossed only {_every} " \
    "times. Does the function ignore on_device? Call .item() on every norm inside the loop when on_device is False."
_default = _host_reads(lambda device: log_norms(6, 8, device))
assert _default == 1, f"on_device=True is the default, so log_norms(6, 8, device) should move the norms once; they crossed {_default} times."
# The work itself happens on the device: a product computed on the CPU and moved there afterwards is no device work.
_MATRIX_PRODUCTS = {"__matmul__", "__rmatmul__", "matmul", "mm", "bmm", "einsum", "multi_dot", "tensordot", "addmm",
                    "chain_matmul"}
for _mode in (True, False):
    _ops = _device_ops(lambda device: log_norms(3, 8, device, on_device=_mode))
    assert _ops & _MATRIX_PRODUCTS, \
        f"With on_device={_mode} no matrix product ran on the device: move A and B to the device first, then " \
        "multiply them there (A @ B) and take the norm there; moving only the finished norm does no device work."
assert log_norms(3, 64, _cpu) == _kept[:3], \
    "The first norms should not depend on n: seed once at the start and draw the matrices step by step."
_simulated_values = []
_host_reads(lambda device: _simulated_values.append(log_norms(5, 64, device)))
assert _simulated_values == [_kept], \
    "On another device log_norms should return the same list of floats as on the CPU: draw on the CPU, then move."
### BEGIN HIDDEN TESTS
_kept = log_norms(40, 9, _cpu)
assert _kept == log_norms(40, 9, _cpu, on_device=False), "Both modes should agree for other sizes as well."
# Size 9, 40 norms: over 500 seeds the mean ratio stayed within 0.93-1.05; torch.rand gives about 0.78.
_ratio = sum(_kept) / len(_kept) / 9 ** 1.5
assert 0.88 < _ratio < 1.12, f"The norms are off by a factor {_ratio:.2f}: use torch.randn, A @ B and the Frobenius norm."
_one = log_norms(1, 3, _cpu)
assert isinstance(_one, list) and len(_one) == 1 and isinstance(_one[0], float), "n=1 should give a list with one float."
assert log_norms(2, 9, _cpu) == _kept[:2], \
    "The first norms should not depend on n: seed once at the start and draw the matrices step by step."
_once = _host_reads(lambda device: log_norms(25, 4, device))
assert _once == 1, \
    f"on_device=True (the default) should move the 25 norms to the host once; values crossed {_once} times."
_every = _host_reads(lambda device: log_norms(25, 4, device, on_device=False))
assert _every >= 25, \
    f"on_device=False should move every one of the 25 norms as it is computed; only {_every} crossings: is on_device ignored?"
assert _host_reads(lambda device: log_norms(1, 4, device, on_device=False)) >= 1, "n=1 should still move its norm."
_simulated_values = []
_host_reads(lambda device: _simulated_values.append(log_norms(7, 5, device)))
assert _simulated_values == [log_norms(7, 5, _cpu)], \
    "On another device log_norms should return the same list of floats as on the CPU: draw on the CPU, then move."
if torch.accelerator.is_available():  # a real GPU or MPS here: its values must match the CPU's
    _real = torch.accelerator.current_accelerator()
    _on_real, _reference = log_norms(5, 64, _real), log_norms(5, 64, _cpu)
    assert max(abs(a - b) / b for a, b in zip(_on_real, _reference)) < 1e-3, \
        f"On this machine's {_real.type} device log_norms should give the CPU's values (up to rounding): draw " \
        "the matrices on the CPU, then move them; a device's own generator draws other numbers."
### END HIDDEN TESTS

# %% [markdown]
# ## 6. Look where the time goes
#
# The cell below uses your `timed` and `log_norms` on the best device of your
# machine (`try_gpu()`), for a few matrix sizes, with the norms moved every step
# and once. Run it and look at the plot. (Without a GPU the plot shows the CPU;
# to see a GPU's curves, open this notebook in Colab with a GPU runtime, under
# Runtime > Change runtime type, and run it there.)

# %%
device = try_gpu()
sizes = [4, 16, 64, 128]


def fastest(size, on_device, rounds=7):
    """The fastest of `rounds` timings (each the mean of 2 calls): the one least disturbed by other programs."""
    return min(timed(lambda: log_norms(20, size, device, on_device), device, repeats=2) for _ in range(rounds))


threads = torch.get_num_threads()
torch.set_num_threads(1)  # as torch.utils.benchmark.Timer does: one CPU thread is steadier on a busy machine
try:
    for on_device, label in ((False, ".item() every step"), (True, "moved once at the end")):
        seconds = [fastest(size, on_device) for size in sizes]
        _ = plt.plot(sizes, [s * 1e3 for s in seconds], marker="o", label=label)
finally:
    torch.set_num_threads(threads)
plt.xscale("log")
plt.yscale("log")
plt.xlabel("matrix size (rows = columns)")
plt.ylabel("time per call of log_norms(20, ...) (ms, fastest of 7)")
plt.title(f"20 matrix products and norms on {device.type}")
plt.legend()
plt.show()

# %% [markdown]
# Explain the plot in a few sentences; every question can be answered from a
# CPU-only plot and the lecture. (Each point is the fastest of 7 timings, on
# one CPU thread, so a busy machine shifts the curves little.)
#
# 1. Read the slopes: for which sizes is the time per call almost flat, and
#    where does it grow steeply? What does each part of the curve spend its
#    time on (the products, and what else does each call of `log_norms` do)?
# 2. On your machine, how far apart are the two curves, and why is `.item()`
#    in every step cheap or expensive *here*?
# 3. On a CUDA GPU each `.item()` makes the CPU wait for the GPU. Yet on an
#    NVIDIA H200 the two curves of this plot (sizes 4 to 128) came out within
#    0.84-1.18x of each other, and even drawing all the matrices before the
#    loop and moving them in one copy made "moved once" faster than ".item()
#    every step" by only 1.04-1.21x. Using the lecture's section on timing,
#    explain why: what does each step's plain `.to(device)` copy of two fresh
#    CPU matrices wait for, and where does a step spend its time when a
#    product of two 128 x 128 matrices takes the GPU a few microseconds? What
#    would have to change for moving the norms once to pay off clearly?

# %% manual [markdown] grade_id="timing_answer" points=2
# Model answer: (1) For small matrices the products are tiny, so the time is
# fixed overhead per step: Python, dispatching each operation, drawing the
# random matrices on the CPU and (on a GPU) launching kernels and copying the
# matrices to the device. The curve is flat there. For large matrices the
# `size**3` multiply-adds of the products (and the `size**2` random numbers
# drawn) take over and the time grows steeply. (2) On a CPU both curves nearly
# coincide: nothing runs asynchronously, so `.item()` has nothing to wait for
# and only reads a number already in memory. (3) A plain copy from ordinary
# (pageable) CPU memory to the GPU is queued behind the work already on the GPU
# and returns only when it is done, so it waits for the previous step's product
# and norm: both variants synchronize at every step. And the GPU's share of a
# step is tiny: a few microseconds of products next to the CPU drawing two
# random matrices, Python, dispatch and kernel launches. The GPU is idle most of
# the time, so when `.item()` asks it to finish there is almost nothing left to
# wait for; it adds one short wait and one 4-byte copy per step, which is why
# the curves stay within about 1.2x, and why removing the per-step copy alone
# gains so little: the CPU's own work per step still sets the pace. Moving the
# norms once pays off when the GPU has real work to overlap with the CPU's:
# the inputs already on the device (moved once before the loop, from pinned
# memory with `non_blocking=True`, or drawn there with a device generator,
# which gives other values), so the loop only queues products and norms, and
# enough arithmetic per step (larger matrices, batched products) that the GPU,
# not the CPU, is the bottleneck. Then the CPU queues steps ahead while the GPU
# computes, and `.item()` in every step throws that overlap away.

# %% [markdown]
# ## Summary
#
# - `try_gpu` and `try_all_gpus` pick existing devices and fall back gracefully.
# - A recursive `to_device` moves whole batches while keeping their structure
#   and every container's type (namedtuples and `OrderedDict`s included).
# - Time accelerator code (CUDA, MPS) with a synchronize of the device you time
#   before every clock read, and none on the CPU; keep warm-up calls out of the
#   timed window.
# - Keep results on the device and move them once; `.item()` in a loop
#   synchronizes every step, and so does a plain copy of fresh CPU data to the
#   device: move inputs before the loop, not inside it.
