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
#     gpu: true
#     title: GPUs
# ---

# %% [markdown]
# # Lesson 7: GPUs
#
# Everything so far ran on the CPU. This lesson shows how PyTorch names devices,
# how to pick one that exists, how tensors and models move between devices, what
# such moves cost, how to time GPU code correctly and how to see with the
# profiler where the time goes. It shows how a `DataLoader` keeps a GPU fed and
# how `DistributedDataParallel` with `torchrun` trains on several GPUs, and
# ends with the tools practitioners reach for next: lower precision, fewer
# kernel launches (`torch.compile`, CUDA graphs), a detector for hidden
# synchronizations, copies that overlap with computation, choosing GPUs,
# finding errors and running out of memory.
#
# The notebook runs unchanged on a CPU-only laptop, on a CUDA machine, on Apple
# silicon (MPS) and on Colab. Where the answer depends on the hardware, the code
# checks it with `assert` instead of printing it, and the few cells that must show
# something machine-specific are marked so that the output check skips them.

# %%
import logging
import os
import shutil
import subprocess
import sys
import time

import matplotlib.pyplot as plt
import torch
from torch import nn

# %% [markdown]
# ## Naming devices
#
# A `torch.device` is only a name: creating one does not need the hardware.
# `cpu` is the processor (all its cores count as one device), `cuda:i` is the
# `i`-th NVIDIA GPU, `cuda` alone means "the current CUDA device", and `mps` is
# the GPU of Apple silicon.

# %%
print(torch.device("cpu"), torch.device("cuda"), torch.device("cuda:1"), torch.device("mps"))
print(repr(torch.device("cuda", 1)))

# %% [markdown]
# ## What this machine has
#
# These calls ask the hardware, so their answers differ between machines (this
# cell's output is not checked). `device_count()` is 0 when there is no CUDA GPU.

# %% tags=["nbval-ignore-output"]
n_cuda = torch.cuda.device_count()
assert torch.cuda.is_available() == (n_cuda > 0)
print("CUDA available:", torch.cuda.is_available(), "| CUDA devices:", n_cuda)
print("MPS available: ", torch.backends.mps.is_available())

# %% [markdown]
# On a machine with an NVIDIA driver, the `nvidia-smi` tool lists the GPUs, their
# memory and the processes using them. We run it only where it exists.

# %% tags=["nbval-ignore-output"]
if shutil.which("nvidia-smi"):
    report = subprocess.run(["nvidia-smi"], capture_output=True, text=True, timeout=30)
    print(report.stdout)
else:
    print("nvidia-smi is not installed here: no NVIDIA driver, so no CUDA GPU.")

# %% [markdown]
# ## One API for every accelerator: `torch.accelerator`
#
# Since PyTorch 2.6 the `torch.accelerator` module asks the same questions for
# whichever accelerator this build of PyTorch supports (CUDA, MPS, XPU, ...),
# so code no longer needs one branch per vendor:
#
# - `torch.accelerator.is_available()`: is there a usable accelerator?
# - `torch.accelerator.current_accelerator(check_available=True)` (the
#   argument since 2.7): a `torch.device` of its type (`cuda`, `mps`, ...), or
#   `None` when there is none;
# - `torch.accelerator.device_count()`: how many devices of that type;
# - `torch.accelerator.synchronize()`: wait until its queued work is done
#   (it needs an accelerator: on a CPU-only machine it raises a `RuntimeError`).
#
# On a machine with CUDA GPUs, with Apple's MPS (always exactly one device) or
# with neither, its answers agree with the vendor-specific calls:

# %%
has_mps = torch.backends.mps.is_available()
print("is_available() agrees with CUDA and MPS:",
      torch.accelerator.is_available() == (torch.cuda.is_available() or has_mps))
print("device_count() counts the CUDA devices, or the one MPS device:",
      torch.accelerator.device_count() == (torch.cuda.device_count() or int(has_mps)))

# %% [markdown]
# ## Device helpers with fallbacks
#
# Hard-coding `"cuda"` breaks on every machine without one. Two helpers choose a
# device that exists, built on `torch.accelerator`: `pick_device(i)` gives the
# `i`-th device of the accelerator or falls back to the CPU, `all_devices()`
# lists every device of the accelerator, or the CPU alone.
#
# Before `torch.accelerator`, such helpers (often called `try_gpu` and
# `try_all_gpus`) asked each vendor in turn: first CUDA, by comparing `i` with
# `torch.cuda.device_count()`; then Apple's MPS, which has a single device and
# so can stand in for the first GPU but never for a second; then the CPU. The
# exercise asks you to write them that way, where every fallback is explicit.

# %%
def pick_device(i=0):
    """Device i of this machine's accelerator (CUDA, MPS, ...) if it has that many, else the CPU."""
    accelerator = torch.accelerator.current_accelerator(check_available=True)
    if accelerator is not None and torch.accelerator.device_count() > i:
        return torch.device(accelerator.type, i)
    return torch.device("cpu")


def all_devices():
    """Every device of this machine's accelerator, else [cpu]."""
    accelerator = torch.accelerator.current_accelerator(check_available=True)
    if accelerator is None:
        return [torch.device("cpu")]
    return [torch.device(accelerator.type, i) for i in range(torch.accelerator.device_count())]


device = pick_device()
print("a device index nobody has falls back to the CPU:", pick_device(1000) == torch.device("cpu"))
print("pick_device() is one of all_devices():", device in all_devices())
print("the accelerator's type, or cpu:",
      (torch.accelerator.current_accelerator(check_available=True) or torch.device("cpu")).type == device.type)

# %% [markdown]
# ## Where a tensor lives
#
# Every tensor has a `.device`. By default tensors are created on the CPU.

# %%
x = torch.tensor([1.0, 2.0, 3.0])
print(x.device)

# %% [markdown]
# Pass `device=` to create a tensor directly on a device, random ones too. The
# same seed gives different numbers on the CPU's and a GPU's generators, so when
# the numbers themselves must match on every machine (a test against stored
# values, as here) draw them once on the CPU and move them. In training, draw
# on the device (`torch.randn(..., device=device)`, as dropout does): a copy
# from the CPU at every step costs a transfer and, as shown below, makes the
# CPU wait for the GPU.

# %%
X = torch.ones(2, 3, device=device)
torch.manual_seed(0)
Y = torch.rand(2, 3).to(device)
print(X)
print(Y)
print("both on the chosen device:", X.device.type == Y.device.type == device.type)

# %% [markdown]
# ## Copying between devices
#
# `.to(device)` (or `.cuda()`, `.cpu()`) copies a tensor to another device. The
# copy is a **new** tensor; the original stays where it was. If the tensor is
# already on that device, `.to()` does not copy at all: it returns the very same
# object (ask for `copy=True` to force one).

# %%
print("to its own device, same object:", X.to(X.device) is X)
print("with copy=True, a new object:  ", X.to(X.device, copy=True) is not X)
other = pick_device(1)  # a second device if there is one, else the CPU
Z = X.to(other)
print("a copy is made exactly when the device changes:", (Z is not X) == (Z.device != X.device))
print("the values come along:", torch.equal(Z.cpu(), torch.ones(2, 3)))

# %% [markdown]
# ## Operands must share a device
#
# PyTorch never moves data behind your back: an operation whose tensors live on
# different devices raises an error instead. A CPU-only machine has no second
# real device, but every PyTorch has the `meta` device (tensors with a shape and
# no data), which is enough to see the rule:

# %%
on_cpu = torch.ones(2, 2)
on_meta = torch.ones(2, 2, device="meta")
try:
    on_cpu + on_meta
except RuntimeError as error:
    print("RuntimeError:", error)

# %% [markdown]
# Two exceptions. A 0-dim CPU tensor, a scalar, may be combined with a tensor on
# any device. And a CPU tensor of *indices* may index a tensor on another device
# (`x[idx]`): PyTorch copies the indices to that device for you. That copy is a
# host-to-device transfer you never see in the code; in a loop, make the
# indices on the device once instead.

# %%
idx = torch.tensor([0, 1])  # indices on the CPU
print("a scalar on the CPU with a meta tensor:", (on_meta + torch.tensor(2.0)).device)
print("a meta tensor indexed with CPU indices:", on_meta[idx].device)

# %% [markdown]
# With a real GPU the mismatch looks like this. On a CPU-only machine there is
# nothing to mix, so the cell only says so.

# %% tags=["nbval-ignore-output"]
if device.type != "cpu":
    try:
        torch.ones(2, 2, device=device) + torch.ones(2, 2)
        raise AssertionError("expected a device mismatch error")
    except RuntimeError as error:
        print("RuntimeError:", error)
else:
    print("Only the CPU here: every tensor is on the same device, nothing can mismatch.")

# %% [markdown]
# ## A model on a device
#
# `module.to(device)` moves every parameter and buffer **in place** and returns
# the module itself. The input must then be on the same device.

# %%
torch.manual_seed(1)
net = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1))
inputs = torch.rand(5, 3)
expected = net(inputs)

print("returns the same module:", net.to(device) is net)
print("all parameters moved:", all(p.device.type == device.type for p in net.parameters()))
out = net(inputs.to(device))
print(out.shape, torch.allclose(out.cpu(), expected, atol=1e-5))

# %% [markdown]
# Feeding CPU data to a model whose weights live elsewhere is the same mismatch
# as above. Again shown with `meta`, which exists everywhere:

# %%
try:
    nn.Linear(3, 4).to("meta")(torch.rand(5, 3))
except RuntimeError as error:
    print("RuntimeError:", error)

# %% [markdown]
# ## Build the optimizer after moving the model
#
# An optimizer keeps references to the parameter objects it was given, and
# some keep state per parameter. What `module.to()` does to both:
#
# - Between the CPU, CUDA, MPS and the other accelerators that store tensors
#   the same way, `.to()` keeps every `nn.Parameter` object and only swaps its
#   data (`param.data = moved`). An optimizer built before the move still holds
#   the model's parameters, and most optimizers (SGD, Adam) make no state
#   before their first step; but some make it when they are built (Adagrad
#   starts its running sums then), and that state stays where it was made.
# - Its *state* is not moved. Adam creates its running averages at the first
#   `step()`, on the device and in the dtype the parameters had then; `.to()`
#   on the model does not touch them, so the next step fails. Below, a change
#   of dtype stands in for a change of device (on a GPU the mismatch is one of
#   devices).
# - For devices outside that group (the `meta` device here; XLA's TPUs) `.to()`
#   puts *new* Parameter objects into the model. An optimizer built before
#   still holds the old ones and would silently update tensors the model no
#   longer uses.
#
# Moving the model first and then building the optimizer is right in every case.

# %%
torch.manual_seed(4)
model = nn.Linear(3, 1)
weight = model.weight
optimizer = torch.optim.Adam(model.parameters(), lr=0.1)
model(torch.rand(4, 3)).sum().backward()
optimizer.step()                      # Adam's state is created here, in float32
model.to(torch.float64)               # stands in for a move to another device
print("same Parameter object after .to(float64):", model.weight is weight)
optimizer.zero_grad()
model(torch.rand(4, 3, dtype=torch.float64)).sum().backward()
try:
    optimizer.step()
except RuntimeError:
    print("the old state does not fit the moved parameters: RuntimeError")

model = nn.Linear(3, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
model.to("meta")
print("after .to('meta') the optimizer holds the model's weight:",
      any(p is model.weight for p in optimizer.param_groups[0]["params"]))

model = nn.Linear(3, 1).to(torch.float64)        # move first ...
optimizer = torch.optim.Adam(model.parameters(), lr=0.1)   # ... then build the optimizer
model(torch.rand(4, 3, dtype=torch.float64)).sum().backward()
optimizer.step()
print("moved first, then built: the step works")

# %% [markdown]
# ## Timing GPU code correctly
#
# A GPU works **asynchronously**: a call like `A @ B` only *queues* the work and
# returns at once. Reading the clock right after it measures the queueing, not the
# work. Before each clock read we therefore wait until the device is idle.
#
# Several innocent-looking operations wait too, silently: `.item()`, `.tolist()`,
# `.cpu()` (and `.to("cpu")`), `float(t)`, `print`ing a tensor and
# `if t > 0:` all need the value on the host, so the CPU stops until the GPU
# has computed it and then copies it over. Each such call in a loop costs a
# synchronization plus a small copy. (The one exception is
# `.to("cpu", non_blocking=True)`: it returns before the copy is done, and the
# values may be read only after a synchronize.)
#
# The other direction waits too. A plain `x.to(device)` or `x.cuda()` of a CPU
# tensor queues the copy behind the work already queued on the GPU and returns
# only when the copy is done, so it also waits for all of that work. A loop
# that moves a fresh batch to the GPU at every step therefore synchronizes at
# every step, even if it never reads a value back. Only a copy from pinned
# memory with `non_blocking=True` (shown below) lets the CPU go on.
#
# `.numpy()` is *not* on the list: it works on CPU tensors only and raises a
# `TypeError` for any other device, asking for `.cpu()` first; in
# `t.cpu().numpy()` it is `.cpu()` that waits. The `meta` device shows the
# same error on every machine (a CUDA tensor's message names `cuda:0` instead):

# %%
try:
    torch.ones(3, device="meta").numpy()
except TypeError as error:
    print("TypeError:", error)

# %% [markdown]
# For the timing itself we use `torch.utils.benchmark.Timer` rather than a
# hand-written loop around `time.perf_counter()`. One hand-timed run includes
# whatever else the machine was doing at that moment, and the first call of
# anything is slow (memory is allocated, kernels are chosen). The Timer first
# runs the statement a few times to choose how many calls make one block long
# enough to measure (which also warms it up), then times block after block and
# keeps every block's time, so we can take the **fastest block**: the one least
# disturbed by other programs. It runs with one CPU thread unless told
# otherwise, so CPU numbers compare across machines. In the PyTorch this course
# pins, its clock synchronizes whatever accelerator the machine has (CUDA, MPS,
# ...) before each read; older releases synchronized CUDA only. We also
# synchronize at the end of the timed statement ourselves, with
# `torch.accelerator.synchronize`, so every block ends with the device idle on
# any release and any accelerator (MPS queues its work just as CUDA does). (On
# CUDA, a pair of `torch.cuda.Event(enable_timing=True)` recorded before and
# after the work is the other correct tool: the GPU itself notes the two times,
# and `start.elapsed_time(end)` gives the milliseconds once `end.synchronize()`
# has returned.)

# %%
# On a CUDA build of PyTorch running without a GPU (Colab's CPU runtime, say),
# importing the benchmark module logs "No CUDA runtime is found". That message
# is about compiling C++ extensions, which this lesson never does, so we quiet
# the one logger that sends it before importing.
logging.getLogger("torch.utils.cpp_extension").setLevel(logging.ERROR)
from torch.utils import benchmark


def synchronize(device):
    """Wait until all work queued on `device` is done; on the CPU nothing is queued."""
    if device.type != "cpu":
        torch.accelerator.synchronize(device)


def per_call(fn, device, min_run_time=0.03):
    """Seconds per call of fn(): the fastest block of torch's benchmark timer, each block ending with the device idle."""
    synchronize(device)
    timer = benchmark.Timer(stmt="fn(); synchronize(device)",
                            globals={"fn": fn, "synchronize": synchronize, "device": device})
    return min(timer.blocked_autorange(min_run_time=min_run_time).times)

# %% [markdown]
# Two experiments per device:
#
# 1. **Many small operations vs one batched one**: multiply 256 vectors by a
#    matrix one at a time, or all at once as one matrix product. Every call has a
#    fixed overhead (Python, dispatch, and on a GPU a kernel launch).
# 2. **Reading a result every step vs once**: 100 steps each compute a norm;
#    either `.item()` after every step (a sync and a copy per step), or keep the
#    norms on the device and move them together at the end.
#
# The numbers depend on the machine (this cell's output is not checked); each is
# the fastest of many blocks, so a busy machine changes them little.

# %% tags=["nbval-ignore-output"]
def experiments(device):
    torch.manual_seed(2)
    rows = torch.randn(256, 64).to(device)
    W = torch.randn(64, 64).to(device)
    mats = torch.randn(100, 32, 32).to(device)

    def one_by_one():
        return [row @ W for row in rows]

    def batched():
        return rows @ W

    def item_every_step():
        return [torch.linalg.matrix_norm(m @ m).item() for m in mats]

    def move_once():
        return torch.stack([torch.linalg.matrix_norm(m @ m) for m in mats]).cpu().tolist()

    assert torch.allclose(torch.stack(one_by_one()), batched(), atol=1e-4)
    assert item_every_step() == move_once() or device.type != "cpu"
    return {"256 small products": per_call(one_by_one, device),
            "1 batched product": per_call(batched, device),
            ".item() every step": per_call(item_every_step, device),
            "move once at the end": per_call(move_once, device)}


devices = [torch.device("cpu")] + ([device] if device.type != "cpu" else [])
timings = {d.type: experiments(d) for d in devices}
for name, result in timings.items():
    assert all(t > 0 for t in result.values())
    small, batched, each, once = result.values()
    print(f"{name}: 256 small products {small * 1e3:.3f} ms, one batched product {batched * 1e3:.3f} ms"
          f" (the loop takes {small / batched:.0f} times as long)")
    print(f"{name}: .item() every step {each * 1e3:.3f} ms, moved once {once * 1e3:.3f} ms"
          f" (ratio {each / once:.2f})")

# %% [markdown]
# The same numbers as a picture (milliseconds per run, fastest block; one
# colour per device):

# %%
figure, (left, right) = plt.subplots(1, 2)
for offset, (name, result) in enumerate(timings.items()):
    values = [v * 1e3 for v in result.values()]
    shift = (offset - (len(timings) - 1) / 2) * 0.35
    left.bar([0 + shift, 1 + shift], values[:2], width=0.35, label=name)
    right.bar([0 + shift, 1 + shift], values[2:], width=0.35, label=name)
left.set_xticks([0, 1], ["256 small", "1 batched"])
right.set_xticks([0, 1], [".item()\nevery step", "move once"])
left.set_yscale("log")  # the two bars differ by orders of magnitude
for axis, title in ((left, "Matrix products (log scale)"), (right, "100 norms to the host")):
    axis.set_title(title)
    axis.set_xlabel("strategy")
    axis.set_ylabel("time per run (ms)")
    axis.legend()
figure.tight_layout()
plt.show()

# %% [markdown]
# On the CPU the batched product wins by a wide margin and `.item()` is nearly
# free, because there is nothing to wait for and nothing to copy. On a GPU both
# gaps grow: each small product pays a kernel launch, and each `.item()` stalls
# the CPU until the GPU is done and then copies one number across the bus.
#
# What timing *without* synchronizing would report on a GPU: only the time to
# queue the work. (On the CPU both numbers agree, since nothing is queued.)

# %% tags=["nbval-ignore-output"]
big = torch.randn(512, 512).to(device)
synchronize(device)
start = time.perf_counter()
for _ in range(10):
    big @ big
queued = time.perf_counter() - start
synchronize(device)
finished = time.perf_counter() - start
assert finished >= queued
print(f"clock read right after queueing: {queued * 1e3:.2f} ms; after synchronize: {finished * 1e3:.2f} ms")

# %% [markdown]
# ## Where the time goes: `torch.profiler`
#
# A timer says how long a step takes; the profiler says what the time went
# to. Inside `with profile(activities=[ProfilerActivity.CPU]) as prof:` it
# records every operator torch runs (`aten::addmm`, `aten::copy_`, ...) with
# its time on the CPU and the number of calls. On CUDA, adding
# `ProfilerActivity.CUDA` records the GPU's side too: every kernel and every
# memory copy between host and device with its time on the device, and the
# CUDA runtime calls the CPU made to launch them (`cudaLaunchKernel`, the
# `cudaMemcpy...` calls) or to wait (`cudaStreamSynchronize`).
# `record_function("name")` marks a region of your own code, which then
# shows up as one entry with everything inside it.
#
# `prof.key_averages()` adds up the events of each name, and its
# `.table(sort_by=...)` lists the largest first: sort by
# `"self_cpu_time_total"` on the CPU and by `"self_device_time_total"` for
# the GPU's work. `prof.export_chrome_trace(path)` writes a timeline for a
# trace viewer (Perfetto, or `chrome://tracing`), where gaps in the GPU's row
# are time it spent waiting: for the CPU to launch the next kernel, or for the
# next batch.
#
# Below, four training steps of a small network, each with the lesson's two
# costs marked: moving a batch from the host, and reading the loss with
# `.item()`. (Kineto, the library behind the profiler, logs a line with the
# time and the process id whenever a profile starts or stops; its log level
# is read when it first starts, so we raise it above its highest level
# before the first profile, to keep those lines out of the notebook.)

# %%
os.environ.setdefault("KINETO_LOG_LEVEL", "6")
from torch.profiler import ProfilerActivity, profile, record_function

activities = [ProfilerActivity.CPU]
if device.type == "cuda":
    activities.append(ProfilerActivity.CUDA)   # the GPU's kernels and copies, with their device time

torch.manual_seed(6)
mlp = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 10)).to(device)
sgd = torch.optim.SGD(mlp.parameters(), lr=0.1)
host_batches = [(torch.randn(128, 64), torch.randint(0, 10, (128,))) for _ in range(4)]  # as a loader yields them


def train_step(X, y):
    with record_function("copy batch to device"):
        X, y = X.to(device), y.to(device)
    with record_function("forward and backward"):
        loss = nn.functional.cross_entropy(mlp(X), y)
        sgd.zero_grad()
        loss.backward()
    sgd.step()
    with record_function("read the loss"):
        return loss.item()


train_step(*host_batches[0])   # a first step outside the profile: nothing left to set up inside it
with profile(activities=activities) as prof:
    losses = [train_step(X, y) for X, y in host_batches]
events = {event.key: event for event in prof.key_averages()}
for name in ("copy batch to device", "forward and backward", "read the loss", "Optimizer.step#SGD.step",
             "aten::addmm", "aten::item"):
    print(f"{name:24} {events[name].count:3d} calls")

# %% [markdown]
# The table itself depends on the machine (its output is not checked). On the
# CPU nearly all the time is in the operators of the forward and backward
# passes and of the optimizer, and the copy region holds next to nothing,
# since the batch is already where it needs to be. On a GPU the device columns appear: the
# copy region holds a host-to-device copy per step, and "read the loss" holds
# the CPU's wait for the GPU, which `.item()` turns into CPU time.

# %% tags=["nbval-ignore-output"]
sort_key = "self_device_time_total" if device.type == "cuda" else "self_cpu_time_total"
print(prof.key_averages().table(sort_by=sort_key, row_limit=12))

# %% [markdown]
# ## GPU memory
#
# When a CUDA tensor is freed, PyTorch does not give its memory back to the
# driver. Its *caching allocator* keeps the block for the next tensor, because
# asking the driver is slow. So two numbers matter:
# `torch.cuda.memory_allocated()` (bytes held by live tensors) and
# `torch.cuda.memory_reserved()` (bytes the cache holds, live or free).
# `nvidia-smi` shows more than either: the reserved bytes plus the CUDA
# context of the process (a few hundred MiB). `max_memory_allocated()` is the
# peak since the start or the last `reset_peak_memory_stats()`, the number to
# watch when a model barely fits. `empty_cache()` returns the unused cached
# blocks to the driver, for other programs; it frees nothing a live tensor
# uses. These calls are CUDA's; torch 2.9 and later offer the same ones in
# `torch.accelerator` (`torch.accelerator.memory_allocated()`,
# `torch.accelerator.memory_reserved()` and so on) for accelerators whose
# backend provides them. The cell uses CUDA's, so it
# explains and skips itself on other machines.

# %% tags=["nbval-ignore-output"]
if device.type == "cuda":
    mib = 2**20
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats(device)
    base = torch.cuda.memory_allocated(device)
    block = torch.empty(64, 1024, 1024, device=device)  # 256 MiB of float32
    print(f"allocated with the tensor: {(torch.cuda.memory_allocated(device) - base) / mib:.0f} MiB")
    del block
    print(f"allocated after del:       {(torch.cuda.memory_allocated(device) - base) / mib:.0f} MiB")
    print(f"still reserved by the cache: {torch.cuda.memory_reserved(device) / mib:.0f} MiB")
    print(f"peak allocated:              {(torch.cuda.max_memory_allocated(device) - base) / mib:.0f} MiB")
    torch.cuda.empty_cache()
    print(f"reserved after empty_cache: {torch.cuda.memory_reserved(device) / mib:.0f} MiB")
else:
    print(f"no CUDA device here ({device.type}): the memory counters are CUDA's, so this part is skipped.")

# %% [markdown]
# ## Pinned memory and `non_blocking`
#
# A copy from ordinary (pageable) CPU memory to a CUDA GPU goes through a staging
# buffer and blocks the CPU. From **pinned** (page-locked) memory the GPU can
# copy directly, and with `non_blocking=True` the call returns at once: the CPU
# goes on (preparing the next batch, say) while the copy runs. That frees the
# *host*; it does not make the GPU copy and compute at the same time. On the
# default stream, where all our work goes, the copy waits for the kernels queued
# before it and the kernels after it wait for the copy. Overlapping a copy with
# computation needs pinned memory *and* a second stream (shown at the end).
# `DataLoader(..., pin_memory=True)` pins batches for you. Pinning needs an
# accelerator (`pin_memory()` raises a `RuntimeError` on a machine without
# one), so the cell pins only when there is a CUDA device; `non_blocking=True`
# is harmless elsewhere. Before the CPU reads data that was copied without
# blocking, synchronize.

# %%
host = torch.randn(256, 256)
if device.type == "cuda":
    host = host.pin_memory()
    assert host.is_pinned()
moved = host.to(device, non_blocking=True)
synchronize(device)
print("the copy is complete after synchronizing:", torch.equal(moved.cpu(), host))

# %% [markdown]
# How much faster? Below, host-to-device copies of 1 to 64 MiB, from pageable
# and from pinned memory, each with and without `non_blocking`, in GB/s (the
# copy is synchronized inside each timed run, so `non_blocking` shows only what
# it saves in the copy itself; its real gain is the free host). On a CUDA
# GPU expect pinned copies to be clearly faster than pageable ones, most of all
# for large copies. On a machine without a GPU there is no host-to-device copy
# and nothing to pin: we measure a plain copy within CPU memory instead, the
# baseline a bus transfer is compared with (`non_blocking` does nothing there;
# copies small enough for the processor's caches come out faster).

# %% tags=["nbval-ignore-output"]
sizes_mib = [1, 4, 16, 64]
variants = [("pageable", False)]
if device.type != "cpu":
    variants.append(("pageable", True))
if device.type == "cuda":
    variants += [("pinned", False), ("pinned", True)]
elif not torch.accelerator.is_available():
    try:
        torch.ones(1).pin_memory()
    except RuntimeError as error:
        print(f"no pinned memory without an accelerator: RuntimeError: {error}")
bandwidth = {variant: [] for variant in variants}
for size in sizes_mib:
    source = torch.ones(size * 2**20 // 4)
    target = torch.empty_like(source, device=device)
    for memory, non_blocking in variants:
        src = source.pin_memory() if memory == "pinned" else source
        seconds = per_call(lambda: target.copy_(src, non_blocking=non_blocking), device, min_run_time=0.02)
        bandwidth[(memory, non_blocking)].append(size * 2**20 / seconds / 1e9)

figure, axis = plt.subplots()
for (memory, non_blocking), values in bandwidth.items():
    label = f"{memory}{', non_blocking' if non_blocking else ''}" if device.type != "cpu" else "host to host"
    axis.plot(sizes_mib, values, "o-", label=label)
axis.set_xscale("log", base=2)
axis.set_xticks(sizes_mib, [str(size) for size in sizes_mib])
axis.set_title(f"Copies from host memory to {device.type}" if device.type != "cpu"
               else "Copies within host memory (no GPU here)")
axis.set_xlabel("copy size (MiB)")
axis.set_ylabel("bandwidth (GB/s)")
axis.legend()
plt.show()
for (memory, non_blocking), values in bandwidth.items():
    print(f"{memory:8} non_blocking={non_blocking!s:5}: {values[-1]:6.1f} GB/s at {sizes_mib[-1]} MiB")

# %% [markdown]
# ## Feeding the GPU: `DataLoader` workers and pinned batches
#
# A GPU is only as fast as its input. When making a batch takes the host a
# while (reading files, decoding images, tokenizing, augmenting in Python), the
# GPU sits idle between steps however fast it is. In a profile that shows as
# time in the loader's own events, named
# `enumerate(DataLoader)#..._DataLoaderIter.__next__`, and as gaps in the GPU's
# timeline. Three `DataLoader` arguments help:
#
# - `num_workers=k` makes the batches in `k` worker processes, each working
#   `prefetch_factor` batches ahead (2 unless set), while the main process
#   trains;
# - `pin_memory=True` has the loader put every batch in pinned memory (in a
#   thread of the main process), so that `.to(device, non_blocking=True)`
#   returns at once and the host goes on to the next step. Pinning is for
#   CUDA: without an accelerator the loader warns and does not pin, and on MPS
#   it warns too, so ask for it only where CUDA is;
# - `persistent_workers=True` keeps the workers from one epoch to the next,
#   instead of starting new ones at every `iter(loader)`.
#
# Workers are processes. On Linux they start as copies of the main process
# (fork); on macOS and Windows they start as new Python processes (spawn) and
# get the dataset by pickling, so a dataset class defined in a notebook
# cannot be found there: keep it in a `.py` file (the `TensorDataset` below is
# torch's own). Below, two workers feed the four batches of an epoch, and the
# profiler counts the loader's events: one per batch, and one more for the
# call that ends the epoch.

# %%
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(7)
dataset = TensorDataset(torch.randn(512, 64), torch.randint(0, 10, (512,)))
loader = DataLoader(dataset, batch_size=128, shuffle=True, num_workers=2,
                    pin_memory=device.type == "cuda", persistent_workers=True)
with profile(activities=activities) as prof:
    seen = 0
    for X, y in loader:
        X, y = X.to(device, non_blocking=True), y.to(device, non_blocking=True)
        seen += len(y)
    synchronize(device)   # before the host relies on copies made without blocking
assert loader.pin_memory == (device.type == "cuda")
print("examples in the epoch:", seen)
for event in prof.key_averages():
    if event.key.startswith("enumerate(DataLoader)"):
        print(f"{event.key}: {event.count} calls")
del loader   # ends its persistent workers

# %% [markdown]
# ## Independent work on two GPUs
#
# Operations on different GPUs run at the same time when nothing forces them to
# wait for each other: queue the work on `cuda:0` and on `cuda:1` first, and only
# then collect the results (which synchronizes). Timed against doing both halves
# on one GPU, two GPUs take about half as long when each half keeps its GPU
# busy. With fewer than two GPUs this cell explains and skips itself.

# %% tags=["nbval-ignore-output"]
gpus = [d for d in all_devices() if d.type == "cuda"]
if len(gpus) >= 2:
    torch.manual_seed(3)
    A = torch.randn(4096, 4096)
    on_one = [A.to(gpus[0]), A.to(gpus[0])]
    on_two = [A.to(gpus[0]), A.to(gpus[1])]

    def work(parts):
        results = [p @ p for _ in range(10) for p in parts]  # everything queued before anything is read
        for d in gpus[:2]:
            torch.cuda.synchronize(d)
        return results

    one, two = per_call(lambda: work(on_one), gpus[0]), per_call(lambda: work(on_two), gpus[0])
    assert torch.allclose(work(on_two)[0].cpu(), work(on_two)[1].cpu(), atol=1e-2)
    print(f"both halves on one GPU: {one * 1e3:.1f} ms; split over two GPUs: {two * 1e3:.1f} ms ({one / two:.1f}x)")
else:
    print(f"{len(gpus)} CUDA GPU(s) here: the two-GPU timing needs two and is skipped.")

# %% [markdown]
# ## Training on several GPUs: `DistributedDataParallel` and `torchrun`
#
# The cell above splits work between GPUs by hand. To *train* on several GPUs,
# the tool is `DistributedDataParallel` (DDP); torch's own documentation
# recommends it over `nn.DataParallel` even on a single machine. DDP runs one
# process per GPU, each with a full copy of the model and its own optimizer:
#
# - each process trains on its own share of every epoch (a
#   `DistributedSampler` deals the examples out by the process's rank);
# - during `backward()`, DDP averages the gradients over all processes (an
#   *all-reduce*, done in buckets while the backward pass is still running),
#   so every optimizer takes the same step and the copies stay identical;
# - the processes talk through a backend: `nccl` between NVIDIA GPUs, `gloo`
#   between CPUs.
#
# `torchrun` starts the processes and tells each one who it is through
# environment variables, which `init_process_group()` reads: `RANK`,
# `LOCAL_RANK` (its number on this machine, so the GPU it takes),
# `WORLD_SIZE`, and `MASTER_ADDR` and `MASTER_PORT`, where they meet. A
# training script, `train.py`:
#
# ```python
# import os
#
# import torch
# import torch.distributed as dist
# from torch import nn
# from torch.nn.parallel import DistributedDataParallel as DDP
# from torch.utils.data import DataLoader, TensorDataset
# from torch.utils.data.distributed import DistributedSampler
#
#
# def main():
#     cuda = torch.cuda.is_available()
#     dist.init_process_group("nccl" if cuda else "gloo")  # torchrun's variables say who and where
#     rank, local_rank = dist.get_rank(), int(os.environ["LOCAL_RANK"])
#     device = torch.device("cuda", local_rank) if cuda else torch.device("cpu")
#     if cuda:
#         torch.cuda.set_device(device)  # this process uses this one GPU only
#
#     torch.manual_seed(0)  # the same data in every process (DDP copies rank 0's weights to all)
#     data = TensorDataset(torch.randn(1024, 64), torch.randn(1024, 1))
#     model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 1)).to(device)
#     ddp = DDP(model, device_ids=[local_rank] if cuda else None)
#     optimizer = torch.optim.SGD(ddp.parameters(), lr=0.01)  # built after wrapping
#     sampler = DistributedSampler(data)  # a different share of each epoch for each process
#     loader = DataLoader(data, batch_size=32, sampler=sampler)
#
#     for epoch in range(3):
#         sampler.set_epoch(epoch)  # a new order every epoch, the same in every process
#         for X, y in loader:
#             loss = nn.functional.mse_loss(ddp(X.to(device)), y.to(device))
#             optimizer.zero_grad()
#             loss.backward()  # also averages the gradients over all processes
#             optimizer.step()
#     if rank == 0:
#         torch.save(model.state_dict(), "model.pt")  # the inner model: keys without "module."
#     dist.destroy_process_group()
#
#
# if __name__ == "__main__":
#     main()
# ```
#
# `torchrun --nproc-per-node 2 train.py` runs it as two processes. On a
# machine with two GPUs each process takes one, with `nccl`; on a machine
# without CUDA the same command runs two CPU processes with `gloo` (it works,
# but starting Python and torch twice takes seconds, so this notebook does not
# do it). Everything the GPUs change is in the script: the `nccl` backend,
# `torch.cuda.set_device(local_rank)` so that each process uses its own GPU,
# the model moved to that GPU before it is wrapped, and
# `device_ids=[local_rank]`. Only rank 0 saves, and it saves the inner model,
# whose keys have no `module.` prefix (lesson 6).
#
# The same machinery runs here in a world of one process:
# `init_process_group` with `rank=0` and `world_size=1`, meeting through a
# file (`init_method="file://..."`) instead of torchrun's variables, and
# `gloo` with the model on the CPU, on every machine. One process averages
# over one, so DDP trains exactly like the plain model, and the sampler deals
# all the data to the one rank.

# %%
import copy
import tempfile
from pathlib import Path

import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data.distributed import DistributedSampler

if dist.is_available():
    meeting = tempfile.TemporaryDirectory()
    dist.init_process_group("gloo", init_method=(Path(meeting.name) / "rendezvous").as_uri(), rank=0, world_size=1)
    torch.manual_seed(8)
    data = TensorDataset(torch.randn(64, 64), torch.randn(64, 1))
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 1))
    twin = copy.deepcopy(model)                      # the same start, trained without DDP
    ddp = DDP(model)
    pairs = [(ddp, torch.optim.SGD(ddp.parameters(), lr=0.01)), (twin, torch.optim.SGD(twin.parameters(), lr=0.01))]
    sampler = DistributedSampler(data)               # rank and world size from the process group
    for epoch in range(2):
        sampler.set_epoch(epoch)
        for X, y in DataLoader(data, batch_size=32, sampler=sampler):
            for net, optimizer in pairs:
                loss = nn.functional.mse_loss(net(X), y)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
    print(f"rank {dist.get_rank()} of {dist.get_world_size()}, {dist.get_backend()}: {len(sampler)} examples per epoch")
    print("DDP in a world of one trains exactly like the plain model:",
          all(torch.equal(a, b) for a, b in zip(model.parameters(), twin.parameters())))
    print("keys of the wrapper:", list(ddp.state_dict())[:2], "| of the inner model:", list(ddp.module.state_dict())[:2])
    dist.destroy_process_group()
    meeting.cleanup()
else:
    print("this PyTorch was built without torch.distributed; skipped.")

# %% [markdown]
# ## In practice: precision, fewer launches, hidden synchronizations, overlapping copies
#
# **Mixed precision.** Inside `torch.autocast(device_type, dtype)`, operations
# that gain from a lower precision (matrix products, convolutions) run in
# `bfloat16` or `float16`, operations that need the range or accuracy of
# `float32` (losses; on CUDA also `exp`, `softmax`, sums) are computed in
# `float32`, and most others keep their inputs' dtype. The model's parameters
# stay `float32`. It works on the CPU too, with `bfloat16`:

# %%
torch.manual_seed(5)
A, B = torch.randn(64, 64), torch.randn(64, 64)
with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
    C = A @ B                              # on autocast's lower-precision list
    loss = nn.functional.mse_loss(C, C.T)  # on its float32 list: bfloat16 in, float32 out
    S = C + C                              # on neither: its inputs' dtype
print("product:", C.dtype, "| loss:", loss.dtype, "| sum:", S.dtype)
error = ((C.float() - A @ B).abs().max() / (A @ B).abs().max()).item()
print("bfloat16 product within 1% of float32:", error < 0.01)

# %% [markdown]
# `bfloat16` has the range of `float32` with fewer digits, so under autocast,
# with the weights kept in `float32`, it needs nothing else. `float16` has a
# far smaller range: small gradients round to zero, so training with it scales
# the loss (`torch.amp.GradScaler`). GPUs older than NVIDIA's Ampere, such as
# Colab's T4, have no `bfloat16` hardware; `float16` it is there.
#
# Weights *stored* in `bfloat16` are another matter. With 8 significant bits,
# the numbers next to 1 are 1 - 1/256 and 1 + 1/128, so an update smaller than
# half that gap rounds away and the weight never moves. That is why autocast
# keeps the weights in `float32` (the "master copy" that optimizers for
# low-precision weights keep too):

# %%
w16, w32 = torch.ones(3, dtype=torch.bfloat16), torch.ones(3)
print("bfloat16: 1 + 0.001 == 1:", torch.equal(w16 + 1e-3, w16))
for _ in range(1000):
    w16 += 1e-3
    w32 += 1e-3
print(f"after 1000 updates of +0.001: bfloat16 weight {w16[0].item():.3f}, float32 weight {w32[0].item():.3f}")

# %% [markdown]
# **TF32.** `torch.set_float32_matmul_precision("high")` lets `float32` matrix
# products use faster internal formats (TF32 on NVIDIA GPUs since Ampere) with
# about three decimal digits, while tensors stay `float32`. The default is
# `"highest"`:

# %%
print("float32 matmul precision:", torch.get_float32_matmul_precision())

# %% [markdown]
# **Fewer launches: `torch.compile` and CUDA graphs.** The 256 small products
# of the timing section pay for Python, for dispatch and, on a GPU, for a
# kernel launch each. The first cure is the one shown there: batch the work.
# Where the work cannot be batched, two tools cut the cost per operation.
# `torch.compile(model)` (or `model.compile()`, which compiles in place)
# traces `forward` into a graph at the first call and generates code for the
# whole graph: chains of elementwise operations become one kernel each
# (Triton kernels on a GPU, C++ on the CPU), so there are fewer launches and
# fewer trips through memory. The first call compiles, which takes seconds
# (about 15 s for the loop of 256 products on the CPU of the machine this
# course is built on, which is why this notebook does not run it), and a call with a
# new input shape may compile again. It does not merge separate matrix
# products into one: compiled, that loop still calls 256 of them (we read the
# generated code). On CUDA, `torch.compile(model, mode="reduce-overhead")`
# also records the kernels in a **CUDA graph**: the whole sequence is
# captured once and then replayed with a single launch from the CPU.
# `torch.cuda.graph` (capture by hand) and `torch.cuda.make_graphed_callables`
# do the same without the compiler. A graph replays the same kernels on the
# same memory, so the shapes are fixed, new inputs are copied into the
# tensors the capture used (`make_graphed_callables` does that copy for you),
# and nothing inside may make the CPU wait (no `.item()`).

# %% [markdown]
# **Hidden synchronizations.** On CUDA,
# `torch.cuda.set_sync_debug_mode("warn")` (or `"error"`) reports operations
# that make the CPU wait for the GPU, such as `.item()`: a quick way to find
# the one hidden synchronization in a training loop. It is experimental and does
# not catch every kind.
#
# **Overlapping copies with computation.** Work on one stream runs in order. A
# copy from pinned memory issued on a *second* stream
# (`torch.cuda.Stream()`) runs while kernels on the default stream compute;
# before the default stream uses the copied tensor it must wait for the other
# stream (`wait_stream`).
#
# The cell below runs these on a CUDA GPU: autocast there, the error of a TF32
# product, the sync detector, and copies timed with and without a side stream.
# Elsewhere it explains and skips itself.

# %% tags=["nbval-ignore-output"]
if device.type == "cuda":
    half = torch.bfloat16 if torch.cuda.is_bf16_supported(including_emulation=False) else torch.float16
    A_gpu, B_gpu = A.to(device), B.to(device)
    with torch.autocast(device_type="cuda", dtype=half):
        print("autocast on CUDA, the product is", (A_gpu @ B_gpu).dtype)

    big = torch.randn(1024, 1024).to(device)
    exact = big.double() @ big.double()
    for precision in ("highest", "high"):
        torch.set_float32_matmul_precision(precision)
        relative = ((big @ big).double() - exact).abs().max() / exact.abs().max()
        print(f"float32 product with precision {precision!r}: largest relative error {relative.item():.1e}")
    torch.set_float32_matmul_precision("highest")

    total = big.sum()
    torch.cuda.set_sync_debug_mode("error")
    try:
        total.item()
    except RuntimeError as error:
        print("the sync detector caught .item():", str(error).splitlines()[0])
    finally:
        torch.cuda.set_sync_debug_mode("default")

    batches = [torch.randn(2**22).pin_memory() for _ in range(4)]   # 16 MiB each, pinned
    W = torch.randn(2048, 2048).to(device)
    side = torch.cuda.Stream()

    def copy_then_compute():
        for host_batch in batches:
            host_batch.to(device, non_blocking=True)    # same stream as the products: one after the other
            for _ in range(4):
                W @ W

    def copy_beside_compute():
        with torch.cuda.stream(side):
            moved = [b.to(device, non_blocking=True) for b in batches]   # queued on the side stream
        for _ in range(4 * len(batches)):
            W @ W                                       # the default stream computes meanwhile
        torch.cuda.current_stream().wait_stream(side)   # before anything uses `moved`
        for tensor in moved:
            tensor.record_stream(torch.cuda.current_stream())  # made on `side`, to be used on this stream

    serial, overlapped = per_call(copy_then_compute, device), per_call(copy_beside_compute, device)
    print(f"copies and products on one stream: {serial * 1e3:.2f} ms; copies on a side stream: "
          f"{overlapped * 1e3:.2f} ms")
else:
    print(f"no CUDA device here ({device.type}): streams, TF32 and the sync detector are CUDA's; skipped.")

# %% [markdown]
# ## What comes next: choosing GPUs, finding errors, running out of memory
#
# **`CUDA_VISIBLE_DEVICES`** decides which GPUs a process may see, and
# renumbers them: started with `CUDA_VISIBLE_DEVICES=2,3`, a process sees the
# machine's GPUs 2 and 3 as `cuda:0` and `cuda:1`, and with an empty value none
# at all. CUDA reads it once, when it initializes in the process (at the first
# CUDA tensor or kernel), and a change after that has no effect. Before that
# moment `torch.cuda.device_count()` reads the variable again at every call
# (through NVML, NVIDIA's management library, without initializing CUDA), so
# changing it inside a running script can make the count and the GPUs CUDA
# later uses disagree. Set it in the shell that starts the process, or in a
# child process's environment as here. This is how jobs that share a machine
# keep off each other's GPUs.
#
# On a CUDA machine the cell below starts a Python process that may see only
# this machine's last GPU, and compares the GPUs' UUIDs (unique per card): the
# child calls it `cuda:0`. (Starting a process that imports torch takes a few
# seconds, so the CPU-only run skips it.)

# %% tags=["nbval-ignore-output"]
def in_child_process(code, **env):
    """Run Python `code` in a fresh process with extra environment variables; return what it printed."""
    done = subprocess.run([sys.executable, "-c", code], env={**os.environ, **env},
                          capture_output=True, text=True, timeout=120)
    return done.stdout.strip()


if device.type == "cuda":
    last = torch.cuda.device_count() - 1
    child = in_child_process("import torch; print(torch.cuda.device_count(), torch.cuda.get_device_properties(0).uuid)",
                             CUDA_VISIBLE_DEVICES=str(last))
    count, uuid = child.split()
    print(f"the child sees {count} GPU; its cuda:0 is our cuda:{last}:",
          uuid == str(torch.cuda.get_device_properties(last).uuid))
else:
    print(f"no CUDA device here ({device.type}): nothing to renumber; skipped.")

# %% [markdown]
# **Errors arrive late.** On the CPU a bad index raises at once, at the line
# that used it. On a GPU the same indexing only queues a kernel, which fails
# later on the device ("device-side assert triggered"); the CPU hears of it
# at the next call that waits for the GPU, so the traceback points at an
# innocent line. Started with `CUDA_LAUNCH_BLOCKING=1`, every kernel launch
# waits for the kernel to finish, so the error is raised where it happened
# (slowly: only for debugging). After such an error the process's CUDA state
# is broken, and every later CUDA call fails too; the demonstration therefore
# runs in child processes.

# %%
try:
    torch.zeros(3)[torch.tensor([5])]
except IndexError as error:
    print("on the CPU, at once: IndexError:", error)

# %% tags=["nbval-ignore-output"]
late_error = """
import torch
x, index = torch.zeros(3, device="cuda"), torch.tensor([5]).cuda()
try:
    x[index]
    print("x[index] returned")
    torch.cuda.synchronize()
    print("synchronize returned")
except RuntimeError as error:
    print("RuntimeError:", str(error).splitlines()[0])
"""
if device.type == "cuda":
    for blocking in ("0", "1"):
        print(f"CUDA_LAUNCH_BLOCKING={blocking}:",
              " | ".join(in_child_process(late_error, CUDA_LAUNCH_BLOCKING=blocking).splitlines()))
else:
    print(f"no CUDA device here ({device.type}): kernels run synchronously on the CPU; skipped.")

# %% [markdown]
# **Out of memory.** An allocation the GPU cannot serve raises
# `torch.cuda.OutOfMemoryError`, a `RuntimeError` that a training loop can
# catch (to retry with a smaller batch, say). `torch.cuda.memory_summary()`
# then tells where the memory is: held by live tensors, or reserved by the
# cache but split into pieces too small for the request. For the second case,
# starting the process with `PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True`
# (newer releases also read it as `PYTORCH_ALLOC_CONF`) lets the allocator
# grow its blocks instead of leaving gaps. The usual cures for a model that does
# not fit: a smaller batch with gradient accumulation, `bfloat16` autocast, and
# activation checkpointing (`torch.utils.checkpoint`). The cell asks a CUDA GPU
# for twice its memory.

# %% tags=["nbval-ignore-output"]
print("OutOfMemoryError is a RuntimeError:", issubclass(torch.cuda.OutOfMemoryError, RuntimeError))
if device.type == "cuda":
    too_much = 2 * torch.cuda.get_device_properties(device).total_memory
    try:
        torch.empty(too_much, dtype=torch.uint8, device=device)
    except torch.cuda.OutOfMemoryError as error:
        print("OutOfMemoryError:", str(error).split(".")[0])
    print("\n".join(torch.cuda.memory_summary(device, abbreviated=True).splitlines()[:12]))
else:
    print(f"no CUDA device here ({device.type}): the allocator and its summary are CUDA's; skipped.")

# %% [markdown]
# ## Summary
#
# - A `torch.device` is a name: `cpu`, `cuda`, `cuda:i`, `mps`. Choose one with
#   helpers that fall back (`pick_device`, `all_devices`), never hard-code it.
# - `.to(device)` copies to another device and returns the same tensor when it is
#   already there; `module.to(device)` moves a model in place.
# - All operands of an operation must share a device; PyTorch raises otherwise.
#   CPU scalars and CPU index tensors are the exceptions (indices are copied
#   over for you, a hidden transfer).
# - CPU and GPU generators give different numbers for one seed: draw on the CPU
#   once where the numbers must match everywhere (tests), on the device in
#   training (a per-step copy from the CPU costs a transfer and a wait).
# - `torch.accelerator` (`is_available`, `current_accelerator`, `device_count`,
#   `synchronize`) asks the same questions for any accelerator; its
#   `synchronize` raises where there is none.
# - GPUs run asynchronously (CUDA and MPS alike): synchronize before reading a
#   clock, and time with `torch.utils.benchmark.Timer`, taking the fastest
#   block. `.item()`, `.tolist()`, `.cpu()`, `float(t)`, printing and
#   `if t > 0:` synchronize silently, and so does a plain copy of a CPU tensor
#   to the GPU (it waits for the queued work); `.numpy()` on a GPU tensor raises a
#   `TypeError` (call `.cpu()` first, which is what waits). Batch work and move
#   results once.
# - Move the model first, then build the optimizer: optimizer state stays where
#   it was created, and on some devices `.to()` even replaces the Parameter
#   objects the optimizer holds.
# - `torch.profiler.profile(activities=[ProfilerActivity.CPU])` records every
#   operator with its CPU time and call count; on CUDA `ProfilerActivity.CUDA`
#   adds the kernels, the copies and the runtime calls that launch and wait.
#   `record_function` marks your own regions, `key_averages().table()` sums
#   them up, `export_chrome_trace` writes a timeline.
# - The caching allocator keeps freed GPU memory: `memory_allocated` counts live
#   tensors, `memory_reserved` the cache, `empty_cache` returns the unused part.
# - Pinned memory (it needs an accelerator) makes host-to-GPU copies faster, and
#   `non_blocking=True` frees the host during the copy; the GPU copies while it
#   computes only when the copy runs on a second stream.
# - When the GPU waits for input, `DataLoader(num_workers=k)` makes batches in
#   worker processes (a dataset class must then be importable from a file on
#   macOS and Windows), `pin_memory=True` (on CUDA only) lets
#   `.to(device, non_blocking=True)` return at once, and
#   `persistent_workers=True` keeps the workers between epochs.
# - Training on several GPUs is `DistributedDataParallel`: one process per GPU,
#   started by `torchrun --nproc-per-node N`, a `DistributedSampler` for each
#   process's share, gradients averaged in `backward()`; `nccl` and
#   `device_ids=[local_rank]` on GPUs, `gloo` on CPUs (a world of one runs
#   anywhere).
# - `torch.compile` fuses operations into fewer kernels, and on CUDA
#   `mode="reduce-overhead"` replays them as a CUDA graph with one launch; it
#   compiles at the first call and does not batch separate products for you.
# - `torch.autocast` (bfloat16 on the CPU too), `set_float32_matmul_precision`,
#   `torch.cuda.set_sync_debug_mode` and side streams are the next tools for
#   speed. Under autocast the weights stay `float32`: weights stored in
#   `bfloat16` lose every update smaller than half the gap to the next
#   `bfloat16` number (`1 + 0.001 == 1`).
# - `CUDA_VISIBLE_DEVICES`, set before the process starts, chooses the GPUs a
#   process sees and numbers them from 0 (CUDA reads it once, at its
#   initialization; `device_count()` re-reads it until then). CUDA reports a kernel's error at a
#   later call; `CUDA_LAUNCH_BLOCKING=1` makes it point at the right line. Out
#   of memory raises `torch.cuda.OutOfMemoryError`; `memory_summary()` shows
#   where the memory went, and `expandable_segments:True` in
#   `PYTORCH_CUDA_ALLOC_CONF` fights fragmentation.
#
# Now practise in the exercise: `exercises/07_gpus/07_gpus.ipynb`.
