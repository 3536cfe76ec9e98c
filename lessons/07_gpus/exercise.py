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
# your code anyway, the tests **simulate** other machines: for a moment they
# replace PyTorch's device queries with stand-ins. Items 1 and 2 must ask the
# vendor-specific ones, `torch.cuda.device_count()` (and
# `torch.cuda.is_available()`) and `torch.backends.mps.is_available()`; while
# they run, `torch.accelerator` raises. Item 4 may synchronize with
# `torch.accelerator.synchronize` or with the vendor-specific functions
# (`torch.cuda.synchronize`, `torch.mps.synchronize`): all of them are
# simulated there.
#
# Use only `torch`, the standard library, `numpy` and `matplotlib`.

# %%
import time

import matplotlib.pyplot as plt
import torch

_ = torch.manual_seed(0)  # the same random examples on every run

# %% [markdown]
# The tests below run on this machine as if it had CUDA GPUs or Apple's MPS:
# `_simulated` swaps in stand-ins for PyTorch's device queries and restores them.
# So call those queries through their modules, as `torch.cuda.device_count()`
# or `torch.cuda.synchronize()`: a name imported on its own
# (`from torch.cuda import device_count`) keeps the real function, which the
# tests cannot replace.
# `_host_reads` counts how often values travel from a simulated device back to
# the host (`.item()`, `.cpu()`, `.tolist()`, `.numpy()`, `float(t)`,
# `.to("cpu")`, printing, `if t > 0:`, `torch.tensor([...])` of device values,
# writing them into a CPU tensor): the device is `cpu:0`, which behaves like
# the CPU, and every tensor made from one on it counts as on the device.

# %%
from contextlib import contextmanager


def _no_accelerator_api(*args, **kwargs):
    raise AssertionError("try_gpu and try_all_gpus should ask torch.cuda.device_count() and "
                         "torch.backends.mps.is_available(), not torch.accelerator (which would also pick "
                         "accelerators the rule leaves out, such as Intel's XPU).")


@contextmanager
def _simulated(cuda=0, mps=False):
    """Pretend the machine has `cuda` CUDA devices and (or not) MPS; restore the real functions afterwards."""
    accelerator = torch.accelerator
    saved = (torch.cuda.is_available, torch.cuda.device_count, torch.backends.mps.is_available,
             torch.backends.mps.is_built, torch.mps.is_available, torch.mps.device_count,
             accelerator.is_available, accelerator.current_accelerator, accelerator.device_count)
    torch.cuda.is_available = lambda: cuda > 0
    torch.cuda.device_count = lambda: cuda
    torch.backends.mps.is_available = torch.backends.mps.is_built = torch.mps.is_available = lambda: mps
    torch.mps.device_count = lambda: int(mps)
    accelerator.is_available = accelerator.current_accelerator = accelerator.device_count = _no_accelerator_api
    try:
        yield
    finally:
        (torch.cuda.is_available, torch.cuda.device_count, torch.backends.mps.is_available,
         torch.backends.mps.is_built, torch.mps.is_available, torch.mps.device_count,
         accelerator.is_available, accelerator.current_accelerator, accelerator.device_count) = saved


from torch.overrides import TorchFunctionMode
from torch.utils._pytree import tree_flatten

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

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = getattr(func, "__name__", "")
        inputs = [a for a in tree_flatten((args, kwargs))[0] if isinstance(a, torch.Tensor)]
        on_device = [t for t in inputs if _on_device(t)]
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

# %% [markdown]
# ## 1. One device with a fallback
#
# Write `try_gpu(i=0)`. It returns `torch.device("cuda:i")` if there are more
# than `i` CUDA devices; otherwise `torch.device("mps")` if `i == 0` and MPS is
# available; otherwise `torch.device("cpu")`.
#
# The lecture's `pick_device` asks `torch.accelerator`; here you spell out each
# fallback with the vendor-specific queries (see the top of this notebook).

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
def _is(value, kind, index=None):
    """True if value names the device kind:index (for cpu and mps, index None and 0 both count)."""
    try:
        found = torch.device(value)
    except (TypeError, RuntimeError):
        raise AssertionError(f"Expected a torch.device (or a device string), got {value!r}.")
    if kind == "cuda":
        return found.type == "cuda" and found.index == index
    return found.type == kind and found.index in (None, 0)


assert _is(try_gpu(1000), "cpu"), "No machine has 1001 GPUs: try_gpu(1000) should fall back to the CPU."
with _simulated(cuda=2):
    assert _is(try_gpu(), "cuda", 0), f"With 2 CUDA GPUs, try_gpu() should be cuda:0, got {try_gpu()!r}."
    assert _is(try_gpu(1), "cuda", 1), f"With 2 CUDA GPUs, try_gpu(1) should be cuda:1, got {try_gpu(1)!r}."
    assert _is(try_gpu(2), "cpu"), \
        f"With 2 CUDA GPUs there is no cuda:2: try_gpu(2) should be the CPU, got {try_gpu(2)!r}. Compare i with torch.cuda.device_count()."
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
    assert _is(try_gpu(1), "cpu"), "With one CUDA GPU, try_gpu(1) should be the CPU."
### END HIDDEN TESTS

# %% [markdown]
# ## 2. All devices
#
# Write `try_all_gpus()`: a list of all CUDA devices (`cuda:0`, `cuda:1`, ...)
# if there are any; otherwise `[torch.device("mps")]` if MPS is available;
# otherwise `[torch.device("cpu")]`. It is never empty.

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
    assert value is not None, "try_all_gpus() returned None: return a list of devices."
    found = [torch.device(d) for d in value]
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
assert len(try_all_gpus()) >= 1, "On this machine the list should not be empty."
### END HIDDEN TESTS

# %% [markdown]
# ## 3. Moving a whole batch
#
# A batch from a data loader is often a nest of containers: a tuple of tensors,
# a dict with tensors and metadata. Write `to_device(obj, device)`: it returns a
# copy of `obj` in which every tensor, however deeply nested in lists, tuples and
# dicts, has been moved with `.to(device)`. Lists stay lists, tuples stay tuples,
# dicts stay dicts with the same keys, and everything that is not a tensor or a
# container (numbers, strings, `None`, ...) is kept as it is.
#
# Tip: the `meta` device exists on every machine, so you can try this out even
# without a GPU: `to_device(batch, torch.device("meta"))`.

# %% answer grade_id="to_device"
def to_device(obj, device):
    ### BEGIN SOLUTION
    if isinstance(obj, torch.Tensor):
        return obj.to(device)
    if isinstance(obj, dict):
        return {key: to_device(value, device) for key, value in obj.items()}
    if isinstance(obj, list):
        return [to_device(item, device) for item in obj]
    if isinstance(obj, tuple):
        return tuple(to_device(item, device) for item in obj)
    return obj
    ### END SOLUTION

# %% tests grade_id="test_to_device" points=2
_meta = torch.device("meta")
_batch = {"x": torch.ones(2, 3), "pair": (torch.zeros(4), 3), "items": [torch.arange(2), "name"]}
_moved = to_device(_batch, _meta)
assert isinstance(_moved, dict) and set(_moved) == {"x", "pair", "items"}, \
    "A dict should come back as a dict with the same keys."
assert _moved["x"].device.type == "meta" and _moved["x"].shape == (2, 3), "A tensor at the top of the dict was not moved."
assert isinstance(_moved["pair"], tuple) and len(_moved["pair"]) == 2 and _moved["pair"][0].device.type == "meta" \
    and _moved["pair"][1] == 3, \
    "A tuple should stay a tuple, with its tensors moved and its other values kept: do you recurse into tuples?"
assert isinstance(_moved["items"], list) and len(_moved["items"]) == 2 and _moved["items"][0].device.type == "meta" \
    and _moved["items"][1] == "name", \
    "A list should stay a list, with its tensors moved and its other values kept."
assert _batch["x"].device.type == "cpu", "The original tensors should stay where they were: .to() returns a new tensor."
assert _moved["items"] is not _batch["items"] and _batch["items"][0].device.type == "cpu", \
    "The caller's list was changed in place: build a new list, and leave the batch you were given as it was."
assert to_device(torch.ones(2), _meta).device.type == "meta", "A bare tensor should be moved too."
_name = "a name"
_moved = to_device({1: [None, _name], "empty": ((), [], {})}, _meta)
assert _moved[1][0] is None and _moved[1][1] is _name, \
    "Values that are not tensors (None, strings) should be the very same objects, and non-string keys kept."
assert _moved["empty"] == ((), [], {}) and [type(c) for c in _moved["empty"]] == [tuple, list, dict], \
    "Empty containers should come back empty and of the same type."
### BEGIN HIDDEN TESTS
_deep = [({"a": [torch.ones(1), (torch.zeros(2), None)]},), 2.5, None, (), [], {}]
_moved = to_device(_deep, _meta)
assert isinstance(_moved, list) and len(_moved) == 6, "The outer list should keep its length."
assert isinstance(_moved[0], tuple) and isinstance(_moved[0][0], dict), "Container types must be kept at every level."
_inner = _moved[0][0]["a"]
assert isinstance(_inner, list) and _inner[0].device.type == "meta", "A tensor nested four levels deep was not moved."
assert isinstance(_inner[1], tuple) and _inner[1][0].device.type == "meta" and _inner[1][1] is None, \
    "A tensor inside a tuple inside a list inside a dict inside a tuple was not moved, or None was changed."
assert _moved[1] == 2.5 and _moved[2] is None, "Numbers and None should be kept as they are."
assert _moved[3] == () and _moved[4] == [] and _moved[5] == {}, "Empty containers should come back empty and of the same type."
assert isinstance(_moved[3], tuple) and isinstance(_moved[4], list) and isinstance(_moved[5], dict), \
    "Empty containers should keep their types."
_tensor = torch.arange(3.0)
assert to_device(_tensor, _meta).device.type == "meta", "A bare tensor should be moved too."
_same = to_device({"w": _tensor, 7: "seven"}, torch.device("cpu"))
assert torch.equal(_same["w"], _tensor) and _same[7] == "seven", "Values (and non-string keys) should be kept."
_text = "keep me"
assert to_device([_text], _meta)[0] is _text, "Non-tensor values should be the same objects, not converted."
### END HIDDEN TESTS

# %% [markdown]
# ## 4. Timing with synchronization
#
# Write `timed(fn, device, repeats=10)`: it calls `fn()` `repeats` times and
# returns the **seconds per call** (a float). Accelerators run asynchronously,
# CUDA GPUs and Apple's MPS alike, so when `device` is not the CPU, wait for it
# before **each** read of the clock (`time.perf_counter()`), as the lecture's
# `synchronize` helper does: `torch.accelerator.synchronize` works for any
# accelerator, `torch.cuda.synchronize` and `torch.mps.synchronize` for their
# own kind. On the CPU nothing is queued: do not synchronize (on a machine
# without an accelerator every one of these raises). A warm-up call before
# timing is allowed.

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
import threading
import timeit

_MACHINES = {"cuda": "two CUDA GPUs", "mps": "Apple's MPS", "cpu": "no accelerator"}
# The clocks a timing function may read; the test logs each read (from the time module, and
# timeit's default timer).
_CLOCKS = ("perf_counter", "perf_counter_ns", "monotonic", "monotonic_ns", "time", "time_ns")


def _timed_with_log(device, repeats, machine, work=lambda: None):
    """Run timed() on a simulated machine (`machine`: "cuda", "mps" or "cpu", see _MACHINES) whose
    synchronize functions log "sync" instead of waiting; return (result, log)."""
    answer = timed  # looked up before anything is patched: without a timed, nothing is left patched
    log = []
    accelerator = torch.accelerator

    def device_type(where):
        return None if where is None or isinstance(where, int) else torch.device(where).type

    def synchronize_for(kind):
        def synchronize(where=None, *args, **kwargs):
            if machine != kind:
                raise RuntimeError(f"torch.{kind}.synchronize fails on a machine without {kind.upper()}")
            if device_type(where) not in (None, kind):
                raise ValueError(f"torch.{kind}.synchronize was given a {device_type(where)} device")
            log.append("sync")
        return synchronize

    def accelerator_synchronize(where=None, /):
        if machine == "cpu":
            raise RuntimeError("torch.accelerator.synchronize fails on a machine without an accelerator")
        if device_type(where) not in (None, machine):
            raise ValueError(f"torch.accelerator.synchronize was given a {device_type(where)} device on a {machine} machine")
        log.append("sync")

    def logged(clock):
        def read():
            if threading.current_thread() is threading.main_thread():  # not the kernel's own threads
                log.append("clock")
            return clock()
        return read

    saved = (torch.cuda.synchronize, torch.mps.synchronize, accelerator.synchronize, torch.cuda.is_available,
             torch.cuda.device_count, torch.backends.mps.is_available, torch.backends.mps.is_built,
             torch.mps.is_available, accelerator.is_available, accelerator.current_accelerator,
             accelerator.device_count)
    saved_clocks = {name: getattr(time, name) for name in _CLOCKS}
    saved_timer = timeit.default_timer
    torch.cuda.synchronize, torch.mps.synchronize = synchronize_for("cuda"), synchronize_for("mps")
    accelerator.synchronize = accelerator_synchronize
    torch.cuda.is_available = lambda: machine == "cuda"
    torch.cuda.device_count = lambda: 2 if machine == "cuda" else 0
    torch.backends.mps.is_available = torch.backends.mps.is_built = torch.mps.is_available = lambda: machine == "mps"
    for name, clock in saved_clocks.items():
        setattr(time, name, logged(clock))
    timeit.default_timer = logged(saved_timer)
    # Clocks the answer holds under names of its own (`from time import perf_counter`, a default
    # argument, timeit's own default timer) are logged as well.
    originals = {id(clock): getattr(time, name) for name, clock in saved_clocks.items()}
    originals[id(saved_timer)] = timeit.default_timer
    saved_names = {k: v for k, v in getattr(answer, "__globals__", {}).items() if id(v) in originals and callable(v)}
    getattr(answer, "__globals__", {}).update({k: originals[id(v)] for k, v in saved_names.items()})
    holders = [f for f in (answer, timeit.timeit, timeit.repeat, timeit.Timer.__init__) if getattr(f, "__defaults__", None)]
    saved_defaults = [(f, f.__defaults__) for f in holders]
    for f in holders:
        f.__defaults__ = tuple(originals.get(id(d), d) for d in f.__defaults__)
    accelerator.is_available = lambda: machine != "cpu"
    accelerator.current_accelerator = lambda check_available=False: None if machine == "cpu" else torch.device(machine)
    accelerator.device_count = lambda: {"cuda": 2, "mps": 1, "cpu": 0}[machine]

    def fn():
        log.append("fn")
        work()
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
        (torch.cuda.synchronize, torch.mps.synchronize, accelerator.synchronize, torch.cuda.is_available,
         torch.cuda.device_count, torch.backends.mps.is_available, torch.backends.mps.is_built,
         torch.mps.is_available, accelerator.is_available, accelerator.current_accelerator,
         accelerator.device_count) = saved
        for name, clock in saved_clocks.items():
            setattr(time, name, clock)
        timeit.default_timer = saved_timer
        getattr(answer, "__globals__", {}).update(saved_names)
        for f, d in saved_defaults:
            f.__defaults__ = d
    return result, log


def _check_synced(log, device, repeats):
    """The log shows a synchronize before the first timed call and after the last one, and
    right before every read of the clock."""
    for k, entry in enumerate(log):
        if entry == "clock":
            before = [e for e in log[:k] if e != "clock"]
            assert before and before[-1] == "sync", \
                f"For the device {device}, timed read the clock while work could still be queued: synchronize " \
                "right before every read of the clock, the last one included."
    log = [entry for entry in log if entry != "clock"]
    calls = [k for k, entry in enumerate(log) if entry == "fn"]
    assert len(calls) >= repeats, f"fn should be called `repeats` ({repeats}) times, it was called {len(calls)} times."
    assert "sync" in log, \
        f"For the device {device}, timed never synchronized: CUDA and MPS both queue their work, so wait for it " \
        "before each clock read (torch.accelerator.synchronize works for either)."
    assert "sync" in log[:calls[-repeats]], \
        f"For the device {device}, synchronize before the first clock read as well, so work queued earlier is not counted."
    assert log[-1] == "sync", \
        f"For the device {device}, the last calls of fn must be finished before the final clock read: synchronize after the loop."


_seconds, _log = _timed_with_log(torch.device("cpu"), 5, "cuda", work=lambda: time.sleep(0.05))
assert isinstance(_seconds, float), f"timed should return a float number of seconds, got {type(_seconds).__name__}."
assert _log.count("fn") >= 5, f"fn should be called `repeats` (5) times, it was called {_log.count('fn')} times."
# Each call sleeps 50 ms, so the time per call is just above 0.05 s; the total of 5 calls
# would be 0.25 s and milliseconds would read 50. The wide upper bound leaves room for a
# busy machine oversleeping, without letting either mistake through.
assert 0.0495 <= _seconds < 0.2, \
    f"Expected about 0.05 seconds per call, got {_seconds}: divide the total by repeats, and report seconds (not ms)."
assert "sync" not in _log, "On the CPU there is nothing to synchronize, even on a machine with a GPU: synchronize only other devices."
_seconds, _log = _timed_with_log(torch.device("cpu"), None, "cpu")
assert _log.count("fn") >= 10, "By default (repeats=10) fn should be called 10 times."

_seconds, _log = _timed_with_log(torch.device("cuda"), 5, "cuda")
_check_synced(_log, torch.device("cuda"), 5)
_seconds, _log = _timed_with_log(torch.device("mps"), 5, "mps")
_check_synced(_log, torch.device("mps"), 5)
### BEGIN HIDDEN TESTS
_seconds, _log = _timed_with_log(torch.device("cuda:1"), None, "cuda")
assert _log.count("fn") >= 10, "By default (repeats=10) fn should be called 10 times."
_check_synced(_log, torch.device("cuda:1"), 10)
_seconds, _log = _timed_with_log(torch.device("mps"), 3, "mps")
_check_synced(_log, torch.device("mps"), 3)
_seconds, _log = _timed_with_log(torch.device("cpu"), 2, "mps")
assert "sync" not in _log, "On the CPU there is nothing to synchronize, even on a Mac: synchronize only other devices."
_seconds, _log = _timed_with_log(torch.device("cpu"), 1, "cpu", work=lambda: time.sleep(0.05))
assert _log.count("fn") >= 1 and 0.049 <= _seconds < 0.2, f"With repeats=1, expected about 0.05 s, got {_seconds}."
### END HIDDEN TESTS

# %% [markdown]
# ## 5. Keep results on the device
#
# Write `log_norms(n, size, device, on_device=True)`. It first seeds the random
# number generator (`torch.manual_seed` with a fixed number of your choice, or a
# seeded `torch.Generator`), so that every call returns the same values. Then, for
# each of `n` steps, it draws two fresh `size x size` matrices with `torch.randn`
# **on the CPU** (so the values do not depend on the device), moves them to
# `device`, multiplies them (`A @ B`) and takes the Frobenius norm of the product.
#
# - `on_device=True`: keep the norms on the device and move them to the CPU
#   **once**, at the end.
# - `on_device=False`: move each norm to the CPU as soon as it is computed
#   (`.item()`), in every step.
#
# Either way return a list of `n` Python floats; both ways give the same list.
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
sizes = [4, 32, 128]
for on_device, label in ((False, ".item() every step"), (True, "moved once at the end")):
    seconds = [timed(lambda: log_norms(20, size, device, on_device), device, repeats=3) for size in sizes]
    _ = plt.plot(sizes, [s * 1e3 for s in seconds], marker="o", label=label)
plt.xscale("log")
plt.yscale("log")
plt.xlabel("matrix size (rows = columns)")
plt.ylabel("time per call of log_norms(20, ...) (ms)")
plt.title(f"20 matrix products and norms on {device.type}")
plt.legend()
plt.show()

# %% [markdown]
# Explain the plot in a few sentences; every question can be answered from a
# CPU-only plot and the lecture.
#
# 1. Read the slopes: for which sizes is the time per call almost flat, and
#    where does it grow steeply? What does each part of the curve spend its
#    time on (the products, and what else does each call of `log_norms` do)?
# 2. On your machine, how far apart are the two curves, and why is `.item()`
#    in every step cheap or expensive *here*?
# 3. On a CUDA GPU each `.item()` makes the CPU wait for the GPU. But every
#    step of `log_norms` also copies two fresh CPU matrices to the device with
#    a plain `.to(device)`: what does that copy wait for (the lecture's section
#    on timing)? Predict how far apart the two curves would be on a GPU, and
#    say what you would change in `log_norms` so that moving the norms once
#    pays off. (If you ran the notebook on a GPU, say whether your plot agrees.)

# %% manual [markdown] grade_id="timing_answer" points=2
# Model answer: (1) For small matrices the products are tiny, so the time is
# fixed overhead per step: Python, dispatching each operation, drawing the
# random matrices on the CPU and (on a GPU) launching kernels and copying the
# matrices to the device. The curve is flat there. For large matrices the
# `size**3` multiply-adds of the products dominate and time grows steeply
# (about 8 times per doubling of the size once the arithmetic dominates). (2)
# On a CPU both curves nearly coincide: nothing runs asynchronously, so
# `.item()` has nothing to wait for and only reads a number already in memory.
# (3) A plain copy from ordinary (pageable) CPU memory to the GPU is queued
# behind the work already on the GPU and returns only when it is done, so it
# waits for the previous step's product and norm. Both variants therefore
# synchronize at every step, and the CPU can never queue steps ahead: on a GPU
# the curves stay close too, `.item()` adding only a second short wait and a
# tiny copy back per step (most visible at small sizes, where fixed costs
# dominate). To let moving the norms once pay off, remove the per-step copy:
# draw all matrices before the loop and move them in one copy (or draw them on
# the device with a generator there, giving other values, or copy from pinned
# memory with `non_blocking=True`). Then the loop only queues products and
# norms, and with `on_device=True` the CPU reaches the end while the GPU is
# still working, while `.item()` still stops it at every step.

# %% [markdown]
# ## Summary
#
# - `try_gpu` and `try_all_gpus` pick existing devices and fall back gracefully.
# - A recursive `to_device` moves whole batches while keeping their structure.
# - Time accelerator code (CUDA, MPS) with a synchronize before every clock
#   read, and none on the CPU.
# - Keep results on the device and move them once; `.item()` in a loop
#   synchronizes every step, and so does a plain copy of fresh CPU data to the
#   device: move inputs before the loop, not inside it.
