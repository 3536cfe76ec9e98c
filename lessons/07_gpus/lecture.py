# %% [markdown]
# # 7 GPUs
#
# Everything so far ran on the CPU. This lesson shows how PyTorch names devices,
# how to pick one that exists, how tensors and models move between devices, what
# such moves cost, and how to time GPU code correctly.
#
# The notebook runs unchanged on a CPU-only laptop, on a CUDA machine, on Apple
# silicon (MPS) and on Colab. Where the answer depends on the hardware, the code
# checks it with `assert` instead of printing it, and the few cells that must show
# something machine-specific are marked so that the output check skips them.

# %%
import shutil
import statistics
import subprocess
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

# %% tags=nbval-ignore-output
n_cuda = torch.cuda.device_count()
assert torch.cuda.is_available() == (n_cuda > 0)
print("CUDA available:", torch.cuda.is_available(), "| CUDA devices:", n_cuda)
print("MPS available: ", torch.backends.mps.is_available())

# %% [markdown]
# On a machine with an NVIDIA driver, the `nvidia-smi` tool lists the GPUs, their
# memory and the processes using them. We run it only where it exists.

# %% tags=nbval-ignore-output
if shutil.which("nvidia-smi"):
    report = subprocess.run(["nvidia-smi"], capture_output=True, text=True, timeout=30)
    print(report.stdout)
else:
    print("nvidia-smi is not installed here: no NVIDIA driver, so no CUDA GPU.")

# %% [markdown]
# ## Device helpers with fallbacks
#
# Hard-coding `"cuda"` breaks on every machine without one. Two helpers choose a
# device that exists: `try_gpu(i)` gives the `i`-th GPU or falls back (to MPS for
# the first GPU on a Mac, else to the CPU), `try_all_gpus()` lists every GPU, or
# the one fallback device.

# %%
def try_gpu(i=0):
    """cuda:i if it exists, else mps for i == 0 when available, else the CPU."""
    if torch.cuda.device_count() > i:
        return torch.device(f"cuda:{i}")
    if i == 0 and torch.backends.mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


def try_all_gpus():
    """Every CUDA device, else [mps] when available, else [cpu]."""
    n = torch.cuda.device_count()
    if n > 0:
        return [torch.device(f"cuda:{i}") for i in range(n)]
    if torch.backends.mps.is_available():
        return [torch.device("mps")]
    return [torch.device("cpu")]


device = try_gpu()
print("a GPU index nobody has falls back to the CPU:", try_gpu(1000) == torch.device("cpu"))
print("try_gpu() is one of try_all_gpus():", device in try_all_gpus())

# %% [markdown]
# ## Where a tensor lives
#
# Every tensor has a `.device`. By default tensors are created on the CPU.

# %%
x = torch.tensor([1.0, 2.0, 3.0])
print(x.device)

# %% [markdown]
# Pass `device=` to create a tensor directly on a device. Random values are the
# exception: the same seed gives different numbers on CPU and GPU generators, so
# for reproducible results draw them on the CPU and move them.

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
print("with copy=True, a new object:  ", X.to(X.device, copy=True) is X)
other = try_gpu(1)  # a second GPU if there is one, else a fallback
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
# With a real GPU the same mistake looks like this. (One exception: a 0-dim CPU
# tensor, a scalar, may be combined with a GPU tensor.) On a CPU-only machine
# there is nothing to mix, so the cell only says so.

# %% tags=nbval-ignore-output
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
# ## Timing GPU code correctly
#
# A GPU works **asynchronously**: a call like `A @ B` only *queues* the work and
# returns at once. Reading the clock right after it measures the queueing, not the
# work. Before each clock read we therefore wait until the device is idle.
#
# Several innocent-looking operations wait too, silently: `.item()`, `print`ing a
# tensor, `.numpy()`, `.cpu()`, `.tolist()` and `if tensor > 0:` all need the value
# on the host, so the CPU stops until the GPU has caught up. Each such call in a
# loop costs a synchronization plus a small copy.

# %%
def synchronize(device):
    """Block until all queued work on `device` has finished."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    elif device.type == "mps":
        torch.mps.synchronize()


def per_call(fn, device, repeats=7):
    """Median seconds per call of fn() after a warm-up call; the device is idle at every clock read."""
    fn()
    times = []
    for _ in range(repeats):
        synchronize(device)
        start = time.perf_counter()
        fn()
        synchronize(device)
        times.append(time.perf_counter() - start)
    return statistics.median(times)  # the median ignores a few calls slowed by other programs

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
# The numbers depend on the machine, so the cell checks only that they make sense.

# %% tags=nbval-ignore-output
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
    # Only what holds on any machine under any load is asserted; which variant
    # wins is measured, not promised (a busy machine can blur small gaps).
    assert all(t > 0 for t in result.values())
    print(name, {k: f"{v * 1e3:.3f} ms" for k, v in result.items()})

# %% [markdown]
# The same numbers as a picture (median milliseconds per run; one colour per
# device):

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

# %% tags=nbval-ignore-output
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
# ## Pinned memory and `non_blocking`
#
# A copy from ordinary (pageable) CPU memory to a CUDA GPU goes through a staging
# buffer and blocks the CPU. From **pinned** (page-locked) memory the GPU can
# copy directly, and with `non_blocking=True` the CPU continues while the copy
# runs, so data loading can overlap with computing. `DataLoader(...,
# pin_memory=True)` pins batches for you. Pinning needs a CUDA device, so the
# cell only pins when there is one; `non_blocking=True` is harmless elsewhere.
# Before the CPU reads data that was copied without blocking, synchronize.

# %%
host = torch.randn(256, 256)
if device.type == "cuda":
    host = host.pin_memory()
    assert host.is_pinned()
moved = host.to(device, non_blocking=True)
synchronize(device)
print("the copy is complete after synchronizing:", torch.equal(moved.cpu(), host))

# %% [markdown]
# ## Independent work on two GPUs
#
# Operations on different GPUs run at the same time when nothing forces them to
# wait for each other: queue the work on `cuda:0` and on `cuda:1` first, and only
# then collect the results (which synchronizes). With fewer than two GPUs this
# cell explains and skips itself.

# %% tags=nbval-ignore-output
gpus = [d for d in try_all_gpus() if d.type == "cuda"]
if len(gpus) >= 2:
    torch.manual_seed(3)
    A = torch.randn(1024, 1024)
    parts = [A.to(gpus[0]), A.to(gpus[1])]
    results = [p @ p for p in parts]  # both queued before either is read
    for d in gpus[:2]:
        torch.cuda.synchronize(d)
    assert torch.allclose(results[0].cpu(), results[1].cpu(), atol=1e-3)
    print("two GPUs computed the same product independently")
else:
    print(f"{len(gpus)} CUDA GPU(s) here: the two-GPU example needs two and is skipped.")

# %% [markdown]
# ## Summary
#
# - A `torch.device` is a name: `cpu`, `cuda`, `cuda:i`, `mps`. Choose one with
#   helpers that fall back (`try_gpu`, `try_all_gpus`), never hard-code it.
# - `.to(device)` copies to another device and returns the same tensor when it is
#   already there; `module.to(device)` moves a model in place.
# - All operands of an operation must share a device; PyTorch raises otherwise.
# - Draw random values on the CPU and move them, for the same numbers everywhere.
# - GPUs run asynchronously: synchronize before reading a clock. `.item()`,
#   printing and NumPy conversion synchronize silently; batch work and move
#   results once.
# - Pinned memory plus `non_blocking=True` lets copies overlap with computation.
#
# Now practise in the exercise: `exercises/07_gpus/07_gpus.ipynb`.
