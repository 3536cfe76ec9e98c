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
#     title: File I/O
# ---

# %% [markdown]
# # Lesson 6: File I/O (saving and loading)
#
# Training takes time, machines crash and models move between computers. This
# lesson covers how to put tensors and models on disk and get them back:
#
# - `torch.save` / `torch.load` for tensors, lists and dicts;
# - a model's `state_dict`, strict loading, and moving between GPU and CPU
#   machines with `map_location`;
# - why loading a file you did not write is dangerous, and what
#   `weights_only=True` does about it;
# - checkpoints that resume training **exactly** after a crash, with a
#   `DataLoader`'s generator and NumPy's state in them, and what loading them
#   with `weights_only=True` then needs;
# - atomic writes, so a crash *during* a save cannot destroy the last good file;
# - saving the architecture together with the parameters (`torch.export`);
# - in practice: other file formats, the key prefixes that wrappers add, and
#   loading large checkpoints without a second copy in memory;
# - what comes next: saved views, optimizer state, checkpoints written by
#   several processes.
#
# Every file here goes into a temporary directory that is deleted at the end.

# %%
import os
import random
import stat
import tempfile
import warnings
from pathlib import Path

import torch
from torch import nn
from torch.nn import functional as F

workdir = tempfile.TemporaryDirectory()
root = Path(workdir.name)

# This machine's accelerator (CUDA, MPS, ...) if it has one, else the CPU.
device = torch.accelerator.current_accelerator(check_available=True) or torch.device("cpu")

# %% [markdown]
# ## Tensors, lists and dicts
#
# `torch.save(obj, path)` writes an object, `torch.load(path)` reads it back. A
# single tensor is the simplest case.

# %%
x = torch.arange(4.0)
torch.save(x, root / "x.pt")
x_back = torch.load(root / "x.pt")
print(x_back, torch.equal(x, x_back))

# %% [markdown]
# Containers of tensors work the same way, and so do plain Python numbers and
# strings inside them. The structure comes back as it went in.

# %%
y = torch.zeros(2, 3)
torch.save([x, y], root / "pair.pt")
x2, y2 = torch.load(root / "pair.pt")
print(x2, y2.shape)

torch.save({"x": x, "y": y, "note": "two tensors", "step": 7}, root / "bundle.pt")
print(torch.load(root / "bundle.pt"))

# %% [markdown]
# ## A model's parameters: `state_dict`
#
# We save a model's `state_dict`, an ordered dict from qualified names to
# tensors (the parameters and the persistent buffers), and later load it into
# a *fresh instance* of the same class. The code defines the architecture; the
# file holds the numbers. (`torch.save(model)` also works, but it pickles the
# object; we will see in a moment why loading such a file now fails by
# default.)

# %%
class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.hidden = nn.Linear(20, 64)
        self.out = nn.Linear(64, 10)

    def forward(self, X):
        return self.out(F.relu(self.hidden(X)))


torch.manual_seed(0)
net = MLP()
X = torch.randn(2, 20)
Y = net(X)
torch.save(net.state_dict(), root / "mlp.params")
print(list(net.state_dict()))

# %% [markdown]
# Two details of `state_dict()` matter before you keep one around:
#
# - It holds parameters and **persistent** buffers only. A buffer registered
#   with `persistent=False` (a cache, a mask that is rebuilt anyway) is left
#   out, so it is neither saved nor restored.
# - Its tensors **share memory** with the model: they are the model's own
#   numbers (detached from autograd), not a copy. A "best weights so far" kept
#   as `best = model.state_dict()` changes with every later training step.
#   Writing it to a file makes a copy; in memory, clone every tensor.

# %%
layer = nn.Linear(2, 2)
layer.register_buffer("steps", torch.zeros(()))                          # persistent: saved
layer.register_buffer("scratch", torch.zeros(2), persistent=False)       # left out
print("keys:", list(layer.state_dict()))

best = layer.state_dict()                                       # meant as a snapshot
snapshot = {key: value.clone() for key, value in layer.state_dict().items()}
with torch.no_grad():
    layer.bias.add_(1.0)                                        # training goes on, in place
print("the 'snapshot' moved with the model:", torch.equal(best["bias"], layer.bias))
print("the cloned one did not:             ", not torch.equal(snapshot["bias"], layer.bias))

# %% [markdown]
# A fresh `MLP()` starts with different random weights. After
# `load_state_dict` it computes exactly the same outputs as the original.

# %%
clone = MLP()
print("before loading:", torch.equal(clone(X), Y))
clone.load_state_dict(torch.load(root / "mlp.params"))
clone.eval()
print("after loading: ", torch.equal(clone(X), Y))

# %% [markdown]
# Why not save the whole model object? `torch.save(net, ...)` pickles it: the file
# names the class `MLP` and the module it came from, and loading must import
# that code and call it to rebuild the object. Since PyTorch 2.6, `torch.load`
# defaults to `weights_only=True`, an unpickler that rebuilds only tensors,
# containers and a few safe types, because unpickling arbitrary classes can run
# arbitrary code (more on that below). So the file written a line earlier no
# longer loads by default; it would need `weights_only=False`, only for files you
# trust, or an allowlist of exactly its classes (shown below); either way the
# same class must be importable under the same name. A `state_dict` has neither
# problem.

# %%
torch.save(net, root / "whole_model.pt")
try:
    torch.load(root / "whole_model.pt")
except Exception as error:
    print(type(error).__name__ + ": torch.load's weights_only default refuses to rebuild an MLP object")

# %% [markdown]
# ## Strict loading: missing and unexpected keys
#
# `load_state_dict` matches entries **by name**. By default (`strict=True`) every
# key of the model's own `state_dict` (parameters and persistent buffers) must
# be in the dict and every entry of the dict must belong to the model. Rename
# one layer and loading fails, listing what is missing and what is unexpected.

# %%
class RenamedMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.hidden = nn.Linear(20, 64)
        self.output = nn.Linear(64, 10)  # was called `out`

    def forward(self, X):
        return self.output(F.relu(self.hidden(X)))


renamed = RenamedMLP()
try:
    renamed.load_state_dict(torch.load(root / "mlp.params"))
except RuntimeError as error:
    print(error)

# %% [markdown]
# With `strict=False` PyTorch loads every entry whose name matches and
# *returns* the keys it could not place instead of raising. Always look at that
# result: a silently skipped layer keeps its random initialization. It forgives
# names only: an entry whose name matches but whose shape differs (a new output
# layer with another number of classes, say) still raises, so drop such entries
# from the dict before loading.

# %%
result = renamed.load_state_dict(torch.load(root / "mlp.params"), strict=False)
print("missing:   ", result.missing_keys)
print("unexpected:", result.unexpected_keys)
print("hidden layer loaded:", torch.equal(renamed.hidden.weight, net.hidden.weight))

# %% [markdown]
# A new output layer for 3 classes keeps the name `out` but not the shape, and
# `strict=False` does not help; leaving out the `out.` entries does:

# %%
three_classes = MLP()
three_classes.out = nn.Linear(64, 3)
try:
    three_classes.load_state_dict(torch.load(root / "mlp.params"), strict=False)
except RuntimeError as error:
    print(str(error).splitlines()[1].strip())
body_only = {key: value for key, value in torch.load(root / "mlp.params").items() if not key.startswith("out.")}
print(three_classes.load_state_dict(body_only, strict=False))

# %% [markdown]
# The fix for a rename is to translate the keys, then load strictly again:

# %%
state = torch.load(root / "mlp.params")
fixed = {key.replace("out.", "output.", 1) if key.startswith("out.") else key: value
         for key, value in state.items()}
print(renamed.load_state_dict(fixed))
print(torch.equal(renamed(X), Y))

# %% [markdown]
# ## `map_location`: between GPU and CPU machines
#
# A tensor remembers the device it was saved from. A file written on a GPU
# machine would by default be loaded back onto that GPU, which fails on a
# laptop without one. `map_location` says where storages go while loading: a
# device (`"cpu"`), a dict such as `{"cuda:1": "cuda:0"}`, or a function.
# Loading onto the CPU and moving the model afterwards works everywhere.

# %%
on_device = torch.randn(3, 3).to(device)  # random values made on the CPU, then moved
torch.save(on_device, root / "from_device.pt")

cpu_copy = torch.load(root / "from_device.pt", map_location="cpu")
print("loaded onto the CPU:", cpu_copy.device.type == "cpu")
back = torch.load(root / "from_device.pt", map_location=device)
print("loaded onto our device:", back.device == on_device.device, torch.equal(back, on_device))

# %% [markdown]
# ## Never unpickle files you do not trust
#
# `torch.save` uses Python's `pickle`, and a pickle is a small program: it may
# name *any* importable function and ask the loader to call it. A class decides
# what it turns into through `__reduce__`. Here is a harmless "attack" whose
# payload only prints a line; a real one could call `os.system`.

# %%
class Payload:
    def __reduce__(self):
        # "to rebuild me, call print with this argument"
        return (print, ("!!! code from the file ran on your machine !!!",))


torch.save({"weight": torch.ones(2)}, root / "honest.pt")
torch.save({"weight": torch.ones(2), "extra": Payload()}, root / "evil.pt")

# %% [markdown]
# Since PyTorch 2.6, `torch.load` defaults to `weights_only=True`: an unpickler
# that only builds tensors, primitive types, lists, tuples, dicts and a short
# allow-list of PyTorch types. The honest file loads; the malicious one is
# refused **before** anything runs. You can also ask which globals a file
# wants, without running any of them.

# %%
print(torch.load(root / "honest.pt", weights_only=True))
try:
    torch.load(root / "evil.pt", weights_only=True)
except Exception as error:
    print("refused:", type(error).__name__)
print("globals the file asks for:", torch.serialization.get_unsafe_globals_in_checkpoint(root / "evil.pt"))

# %% [markdown]
# With `weights_only=False`, the old behaviour, the payload runs during loading.
# Only do this with files you produced yourself. If your own checkpoints hold
# your own classes, allow exactly those with
# `torch.serialization.add_safe_globals([MyClass])` instead.

# %%
loaded = torch.load(root / "evil.pt", weights_only=False)
print("what came back for 'extra':", loaded["extra"])

# %% [markdown]
# A file of your own that holds more than tensors, such as the whole-model file
# from above, does not need `weights_only=False` either. Ask which globals it
# needs, check that they are the ones you expect, and allow exactly those:
# `torch.serialization.add_safe_globals([...])` for the rest of the session, or
# the `torch.serialization.safe_globals([...])` context manager for one load.
# Everything not on the list is still refused. Allowing a class means trusting
# the file to build objects of it, so this too is only for files you trust.

# %%
print("the whole-model file asks for:",
      sorted(torch.serialization.get_unsafe_globals_in_checkpoint(root / "whole_model.pt")))
with torch.serialization.safe_globals([MLP, nn.Linear]):
    whole = torch.load(root / "whole_model.pt")
print(type(whole).__name__, "with the saved weights:", torch.equal(whole(X), Y))

# %% [markdown]
# ## Checkpoints: resuming training exactly
#
# To continue after a crash as if nothing had happened, a checkpoint needs more
# than the weights:
#
# - the **model** `state_dict`;
# - the **optimizer** `state_dict` (Adam's running moments, momentum buffers,
#   step counts, learning rates);
# - the **epoch** (or step) to continue from;
# - the **random number generator** states, because dropout masks and data
#   shuffling draw from them.
#
# A small model with dropout, trained with Adam on shuffled data:

# %%
torch.manual_seed(1)
data_X = torch.randn(64, 8)
data_y = data_X @ torch.randn(8, 1)


def make_model():
    return nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Dropout(0.3), nn.Linear(32, 1))


def train_epoch(model, optimizer):
    """One pass over the data in a random order; dropout and shuffling use the global RNG."""
    model.train()
    for batch in torch.randperm(len(data_X)).split(16):
        loss = F.mse_loss(model(data_X[batch]), data_y[batch])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


def save_checkpoint(path, model, optimizer, epoch, **more):
    torch.save({"model": model.state_dict(),
                "optimizer": optimizer.state_dict(),
                "epoch": epoch,
                "torch_rng": torch.get_rng_state(),
                "cuda_rng": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
                "python_rng": random.getstate(),
                **more}, path)


def load_checkpoint(path, model, optimizer, map_location="cpu"):
    state = torch.load(path, map_location=map_location)
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    # map_location moved every tensor in the file, the RNG states too; the
    # generators accept their state only as a CPU tensor of bytes.
    torch.set_rng_state(state["torch_rng"].cpu())
    if state["cuda_rng"]:
        torch.cuda.set_rng_state_all([s.cpu() for s in state["cuda_rng"]])
    random.setstate(state["python_rng"])
    return state

# %% [markdown]
# Note the `.cpu()` in `load_checkpoint`. `map_location` applies to *every*
# tensor in the file: loaded with `map_location="cuda"`, the saved RNG state
# arrives on the GPU too, and `torch.set_rng_state` refuses anything but a CPU
# tensor of bytes. The `meta` device, which exists on every machine, shows the
# same refusal:

# %%
try:
    torch.set_rng_state(torch.get_rng_state().to("meta"))
except TypeError as error:
    print("TypeError:", error)

# %% [markdown]
# The reference: four epochs without interruption.

# %%
torch.manual_seed(2)
model = make_model()
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
for epoch in range(4):
    train_epoch(model, optimizer)
uninterrupted = [p.detach().clone() for p in model.parameters()]

# %% [markdown]
# The same run, but after epoch 2 we save a checkpoint and "crash": the model,
# the optimizer and the RNG are all lost. A new process builds a fresh model
# (different random weights), loads the checkpoint and finishes the last two
# epochs. The result is identical **bit for bit**, here on the CPU. A real run
# needs more:
#
# - on a GPU, deterministic kernels, since some GPU kernels add in a varying
#   order: `torch.use_deterministic_algorithms(True)` (which also makes cuDNN
#   use deterministic algorithms) and `torch.backends.cudnn.benchmark = False`
#   (so cuDNN does not choose its algorithm by timing); older torch releases
#   also wanted the environment variable `CUBLAS_WORKSPACE_CONFIG=:4096:8`
#   for deterministic cuBLAS products and raised an error without it (torch
#   2.13 no longer asks, but setting it before the first CUDA call is harmless);
# - the rest of its state in the checkpoint: the learning-rate scheduler
#   (`scheduler.state_dict()`), the gradient scaler of mixed precision
#   (`scaler.state_dict()`), and the data sampler's position and seed;
# - on Apple GPUs, the MPS generator's state (`torch.mps.get_rng_state()`),
#   which neither `torch.get_rng_state()` nor `torch.cuda.get_rng_state_all()`
#   covers.

# %%
torch.manual_seed(2)
model = make_model()
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
for epoch in range(2):
    train_epoch(model, optimizer)
save_checkpoint(root / "ckpt.pt", model, optimizer, epoch)
del model, optimizer
torch.manual_seed(12345)  # the new process starts with some other RNG state

model = make_model()
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
start = load_checkpoint(root / "ckpt.pt", model, optimizer)["epoch"] + 1
for epoch in range(start, 4):
    train_epoch(model, optimizer)
print("resumed from epoch", start)
print("identical to the uninterrupted run:",
      all(torch.equal(p, q) for p, q in zip(model.parameters(), uninterrupted)))

# %% [markdown]
# Leave out one piece and the run drifts. Here we restore model and optimizer
# but not the RNG state: different dropout masks and a different data order.

# %%
model = make_model()
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
state = torch.load(root / "ckpt.pt")
model.load_state_dict(state["model"])
optimizer.load_state_dict(state["optimizer"])
for epoch in range(state["epoch"] + 1, 4):
    train_epoch(model, optimizer)
print("identical without the RNG state:",
      all(torch.equal(p, q) for p, q in zip(model.parameters(), uninterrupted)))

# %% [markdown]
# ## Resuming with a `DataLoader` and NumPy
#
# Real training code rarely shuffles with `torch.randperm` by hand. A
# `DataLoader` does it, and augmentation code often draws from NumPy. Both
# bring random state that the checkpoint above does not hold:
#
# - `DataLoader(..., shuffle=True, generator=g)` shuffles with its own
#   `torch.Generator`, so the order of the data no longer depends on how many
#   random numbers the model drew (one dropout layer more changes nothing).
#   Every `iter(loader)`, that is every epoch, draws from `g` twice: the
#   epoch's order, and a base seed from which worker processes
#   (`num_workers > 0`) seed torch, `random` and NumPy. Its state,
#   `g.get_state()`, is a tensor of bytes, like torch's own. (Without
#   `generator=`, both draws come from torch's global generator, whose state
#   the checkpoint above already holds.)
# - NumPy's global generator (`np.random.normal`, `np.random.shuffle`, ...)
#   has a state of its own: `np.random.get_state()` returns a tuple that holds
#   a NumPy array of 624 numbers.
#
# Both states are taken at the end of an epoch, which is the state the next
# `iter(loader)` starts from. (Resuming in the middle of an epoch also needs
# the generator's state from that epoch's start and the number of batches
# already used, to skip them.) The same small model, now fed by a loader, with
# noise from NumPy added to each batch:

# %%
import pickle
import re

import numpy as np
from torch.utils.data import DataLoader, TensorDataset


def make_loader(seed):
    """Shuffled batches of the data, in an order drawn from the loader's own generator."""
    return DataLoader(TensorDataset(data_X, data_y), batch_size=16, shuffle=True,
                      generator=torch.Generator().manual_seed(seed))


def train_epoch_from(loader, model, optimizer):
    """One epoch over the loader; NumPy's global generator adds noise to every batch."""
    model.train()
    for X, y in loader:
        noise = np.random.normal(0.0, 0.1, size=tuple(X.shape)).astype(np.float32)
        loss = F.mse_loss(model(X + torch.from_numpy(noise)), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


def data_rng_states(loader):
    return {"loader_rng": loader.generator.get_state(), "numpy_rng": np.random.get_state()}


def restore_data_rngs(state, loader):
    loader.generator.set_state(state["loader_rng"].cpu())   # a CPU tensor of bytes, as before
    np.random.set_state(state["numpy_rng"])


def start_run():
    """A run from its beginning: every seed first, so both runs below start alike."""
    torch.manual_seed(2)
    np.random.seed(2)
    model, loader = make_model(), make_loader(seed=3)
    return model, loader, torch.optim.Adam(model.parameters(), lr=0.01)


model, loader, optimizer = start_run()
for epoch in range(4):
    train_epoch_from(loader, model, optimizer)
uninterrupted = [p.detach().clone() for p in model.parameters()]

model, loader, optimizer = start_run()
for epoch in range(2):
    train_epoch_from(loader, model, optimizer)
save_checkpoint(root / "ckpt_data.pt", model, optimizer, epoch, **data_rng_states(loader))
del model, loader, optimizer
torch.manual_seed(12345)  # the new process starts with other states everywhere
np.random.seed(12345)
model, loader = make_model(), make_loader(seed=12345)
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)

# %% [markdown]
# Loading that checkpoint with the default `weights_only=True` fails: NumPy's
# array comes out of the pickle through NumPy's own functions, and the safe
# unpickler allows none of them. It names the first one it met;
# `get_unsafe_globals_in_checkpoint` lists them all.

# %%
def refused(error):
    """The part of torch.load's long message that names what it refused."""
    found = re.search(r"(Unsupported global: GLOBAL \S+|but got <class '[\w.]+'>)", str(error))
    return found.group(1) if found else str(error).splitlines()[0]


try:
    load_checkpoint(root / "ckpt_data.pt", model, optimizer)
except pickle.UnpicklingError as error:
    print("UnpicklingError:", refused(error))
print("the file asks for:", sorted(torch.serialization.get_unsafe_globals_in_checkpoint(root / "ckpt_data.pt")))

# %% [markdown]
# These rebuild an array and nothing else, so a checkpoint of our own may
# have them: `torch.serialization.safe_globals([...])` allows them for the
# loads inside its `with` block, `add_safe_globals([...])` for the rest of the
# process. The list holds the objects themselves, not their names. The
# function's module is private and moved in NumPy 2 (from `numpy.core` to
# `numpy._core`), so we ask an array for it instead of spelling it out.
#
# The list above is not the whole story. It names the globals the pickle
# refers to by name; the unpickler also checks the class of each object it
# builds, and `np.dtype("uint32")` builds an object of class
# `np.dtypes.UInt32DType`, which only the load itself reports:

# %%
rebuild_array = np.zeros(1).__reduce__()[0]          # the function NumPy's pickles call
numpy_globals = [rebuild_array, np.ndarray, np.dtype]
print("allowed:", [f"{g.__module__}.{g.__name__}" for g in numpy_globals])
try:
    with torch.serialization.safe_globals(numpy_globals):
        load_checkpoint(root / "ckpt_data.pt", model, optimizer)
except pickle.UnpicklingError as error:
    print("UnpicklingError:", refused(error))

# %% [markdown]
# With that class added, the checkpoint loads, and with every state restored
# the run ends exactly where the uninterrupted one did.

# %%
with torch.serialization.safe_globals([*numpy_globals, np.dtypes.UInt32DType]):
    state = load_checkpoint(root / "ckpt_data.pt", model, optimizer)
restore_data_rngs(state, loader)
for epoch in range(state["epoch"] + 1, 4):
    train_epoch_from(loader, model, optimizer)
print("identical to the uninterrupted run:",
      all(torch.equal(p, q) for p, q in zip(model.parameters(), uninterrupted)))

# %% [markdown]
# Two ways around the allowlist. Store the array as a list of Python ints
# (`state[1].tolist()`) and turn it back into a `uint32` array before
# `set_state`. Or draw from a NumPy `Generator` of your own
# (`np.random.default_rng(seed)`), whose state,
# `rng.bit_generator.state`, is a dict of strings and Python ints that
# `weights_only=True` loads as it is; assigning it back restores the
# generator.

# %%
rng = np.random.default_rng(4)
torch.save({"numpy_generator": rng.bit_generator.state}, root / "generator.pt")
expected = rng.normal(size=3)
rng.bit_generator.state = torch.load(root / "generator.pt")["numpy_generator"]  # weights_only=True
print("loaded without an allowlist, same draws:", np.array_equal(rng.normal(size=3), expected))

# %% [markdown]
# ## Atomic writes: a crash during a save
#
# `torch.save(obj, path)` first truncates `path`, then writes. If the process
# dies in between (out of disk, killed job, power loss), the last good
# checkpoint is gone and the new one is incomplete. We simulate such a crash
# with an object whose pickling fails halfway through the save.

# %%
class CrashHalfway:
    def __reduce__(self):
        raise OSError("simulated crash in the middle of writing")


good = {"weights": torch.ones(1000), "epoch": 5}
doomed = {"weights": torch.zeros(1000), "crash": CrashHalfway()}

# %% [markdown]
# The naive way: save the good checkpoint, then overwrite it in place and crash.

# %%
torch.save(good, root / "naive.pt")
try:
    torch.save(doomed, root / "naive.pt")
except OSError as error:
    print("save failed:", error)
try:
    torch.load(root / "naive.pt")
except Exception as error:
    print("the last good checkpoint is destroyed:", type(error).__name__)

# %% [markdown]
# The safe way writes to a temporary file **in the same directory**, forces it
# to disk, and only then renames it over the target with `os.replace`. On one
# file system a rename is atomic: readers see either the old file or the new
# one, never half of one. (A temporary file in another directory, such as
# `/tmp`, may sit on another file system, where `os.replace` cannot move it.)
# If anything fails, the temporary file is removed, the old file is untouched,
# and the error goes on to the caller, who must not believe the save worked.
# Against a crash of the program that is enough. Against a power loss one more
# step is needed: the rename is a change to the *directory*, which the system
# may also keep in memory for a while, so after the rename we flush the
# directory as well (on POSIX systems, by calling `fsync` on it).
#
# One more detail: `mkstemp` creates its file readable and writable by its
# owner only (mode `0o600`), since a temporary file may hold secrets, and
# `os.replace` keeps that mode. A checkpoint saved that way on a shared
# cluster is unreadable to the rest of the group. One `os.chmod` gives the
# file the mode `open()` would have given it: `0o666` minus the process's
# umask.
#
# Nothing in this recipe is specific to PyTorch, so we write it once for any
# file: `atomic_write(path, write)` hands an open binary file to `write`, a
# function that fills it (with `torch.save`, JSON, anything).

# %%
UMASK = os.umask(0o022)  # the only way to read the umask is to set it ...
os.umask(UMASK)          # ... and put it straight back


def atomic_write(path, write):
    """Call write(f) on a temporary file next to `path`, then move it into place in one step."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
    try:
        os.chmod(tmp, 0o666 & ~UMASK)   # mkstemp made it 0o600; give it open()'s mode
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())   # the bytes are on the disk before the name points at them
        os.replace(tmp, path)
    except BaseException:
        os.remove(tmp)
        raise
    if os.name == "posix":     # the new name itself is on the disk too (Windows cannot open a folder)
        folder = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(folder)
        finally:
            os.close(folder)


atomic_write(root / "atomic.pt", lambda f: torch.save(good, f))
try:
    atomic_write(root / "atomic.pt", lambda f: torch.save(doomed, f))
except OSError as error:
    print("save failed:", error)
survived = torch.load(root / "atomic.pt")
print("last good checkpoint intact:", survived["epoch"], torch.equal(survived["weights"], good["weights"]))
print("files starting with 'atomic':", sorted(p.name for p in root.glob("atomic*")))

fd, bare = tempfile.mkstemp(dir=root)
os.close(fd)
(root / "opened.pt").write_bytes(b"")   # what open() makes under this umask
mode = {name: stat.S_IMODE(os.stat(root / name).st_mode) for name in (bare, "opened.pt", "atomic.pt")}
print("mkstemp alone, owner only (0o600):", mode[bare] == 0o600)
print("atomic_write's file has open()'s mode:", mode["atomic.pt"] == mode["opened.pt"])

# %% [markdown]
# ## Architecture and parameters together: `torch.export`
#
# A `state_dict` needs the Python class to be useful. `torch.export` instead
# traces the model once into a graph of PyTorch operations and stores the graph
# with the parameters in one `.pt2` file. Loading it needs no model code at all,
# which is what serving and other languages want. It is not a safe format,
# though: `torch.export.load` unpickles parts of the file, so, like
# `torch.load(..., weights_only=False)`, it may run code hidden in the file.
# Load `.pt2` files only from sources you trust. (TorchScript, the older way
# with `torch.jit.script`, is deprecated in current PyTorch and warns.)
#
# We export the MLP from above in evaluation mode (why the mode matters comes
# next) and declare the batch dimension as dynamic.
#
# (Some PyTorch releases, 2.11 among them, warn while loading that "the given
# buffer is not writable": they wrap the file's bytes in tensors without
# copying them. It is harmless here, so we silence exactly that message.)

# %%
net.eval()
batch = torch.export.Dim("batch")
exported = torch.export.export(net, (X,), dynamic_shapes=({0: batch},))
torch.export.save(exported, root / "mlp.pt2")

with warnings.catch_warnings():
    warnings.filterwarnings("ignore", message="The given buffer is not writable")
    restored = torch.export.load(root / "mlp.pt2").module()  # no MLP class needed
X7 = torch.randn(7, 20)
print(type(restored).__name__, torch.allclose(restored(X7), net(X7)))

# %% [markdown]
# Layers such as dropout and BatchNorm behave differently in training and
# evaluation, and export records the mode the model is in at that moment. A
# small net with dropout, exported while still in training mode, keeps dropping
# units at every call, and the exported module refuses `.eval()`. Exported after
# `eval()`, it is deterministic and computes what the model computes. Choose the
# mode *before* exporting.

# %%
torch.manual_seed(3)
dropnet = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Dropout(0.5), nn.Linear(64, 10))
in_training = torch.export.export(dropnet.train(), (X,)).module()
print("exported in training mode, two calls agree:", torch.equal(in_training(X), in_training(X)))
try:
    in_training.eval()
except Exception as error:
    print("switching the export to eval() afterwards:", type(error).__name__)
for_inference = torch.export.export(dropnet.eval(), (X,)).module()
print("exported after eval(), equal to the model:", torch.equal(for_inference(X), dropnet(X)))

# %% [markdown]
# What this constrains: the graph records **one path** through `forward`.
#
# - Shapes are fixed unless declared dynamic. Exported without `dynamic_shapes`,
#   the model accepts only the example's batch size.
# - Python control flow that depends on tensor *values* (`if x.sum() > 0:`)
#   cannot be traced; it must be rewritten (e.g. with `torch.cond`).
# - Python-level state is frozen: the training/evaluation mode (as just seen),
#   constants, branches on arguments.
# - You get a function for inference, not your class: no custom methods. Its
#   parameters are real and gradients flow through it, but its mode is frozen,
#   so fine-tuning in training mode (dropout, BatchNorm) or changing the
#   architecture still needs the original code and a `state_dict`.

# %%
fixed_shape = torch.export.export(net, (X,))
print("example batch of 2 works:", fixed_shape.module()(X).shape)
try:
    fixed_shape.module()(X7)
except Exception as error:
    print("a batch of 7 is refused:", type(error).__name__)

# %% [markdown]
# ## In practice: other formats, wrapped models, big checkpoints
#
# **safetensors.** Model hubs often ship weights as `.safetensors` files, a
# format of the separate `safetensors` package (not part of PyTorch, so not
# used in this course): a small header that lists each tensor's name, dtype,
# shape and position, followed by the raw bytes. There is no pickle in it at
# all, so loading cannot run code, and a loader can map the file into memory
# instead of reading it. It stores tensors (and a few strings of metadata)
# only: no optimizer state with Python numbers, no epoch, unless you encode
# them as tensors yourself.
#
# **Prefixes from wrappers.** A model wrapped for speed or for several GPUs
# keeps the original under an attribute, and its `state_dict` keys gain that
# attribute's name: `torch.compile(model)` saves `_orig_mod.hidden.weight`,
# `DistributedDataParallel(model)` and `DataParallel(model)` save
# `module.hidden.weight`. Loaded into a plain model, every key is unexpected
# and every parameter missing. The real wrappers take seconds to import
# (`torch.compile`), need a process group (`DistributedDataParallel`) or GPUs
# (`DataParallel`: its constructor moves the model to the GPU only when given
# exactly one device id; with several it leaves the model where it is and its
# forward pass raises unless the model is already on the first one), so a
# stand-in that keeps the model as `self.module`, as the last two do, shows
# the problem here:

# %%
class Wrapped(nn.Module):
    def __init__(self, module):
        super().__init__()
        self.module = module

    def forward(self, *args):
        return self.module(*args)


state = Wrapped(net).state_dict()
print("keys of the wrapped model:", list(state)[:2])
try:
    MLP().load_state_dict(state)
except RuntimeError as error:
    print(error)

# %% [markdown]
# Either save the inner model (`wrapper.module.state_dict()`,
# `compiled._orig_mod.state_dict()`), or strip the prefix from a file that
# already has it. `torch.nn.modules.utils.consume_prefix_in_state_dict_if_present`
# does that in place, and leaves keys without the prefix alone:

# %%
from torch.nn.modules.utils import consume_prefix_in_state_dict_if_present

consume_prefix_in_state_dict_if_present(state, "module.")
plain = MLP()
print(plain.load_state_dict(state), torch.equal(plain(X), net(X)))

# %% [markdown]
# **Big checkpoints.** `torch.load` reads the whole file into memory, and
# `load_state_dict` then *copies* every tensor into the model's own, so for a
# moment the weights exist twice: as loaded, and in the model, which was first
# filled with random values only to overwrite them. Two options avoid that:
#
# - `torch.load(path, mmap=True)` maps the file into memory: the tensors' bytes
#   are read from the disk when they are used, not all up front;
# - a model built on the `meta` device has shapes but no memory, and
#   `load_state_dict(state, assign=True)` makes the loaded tensors its
#   parameters instead of copying them into the existing ones.
#
# Together they build a model whose parameters come straight from the file.
# (With `assign=True` the parameters are the loaded tensors, so they are on
# the device `torch.load` put them on, the CPU here.)

# %%
torch.save(net.state_dict(), root / "big.params")
with torch.device("meta"):
    lean = MLP()                                      # shapes only, no memory
print("before loading:", lean.hidden.weight.device)
lean.load_state_dict(torch.load(root / "big.params", mmap=True), assign=True)
print("after loading: ", lean.hidden.weight.device, type(lean.hidden.weight).__name__,
      torch.equal(lean(X), net(X)))

# %% [markdown]
# "All keys matched" covers the keys of the `state_dict`, and a buffer
# registered with `persistent=False` has none. Built on `meta`, such a buffer
# stays on `meta` after loading, and the first forward pass fails. The same
# holds for any tensor `__init__` computes and keeps as a plain attribute.
# Everything the file does not hold must be rebuilt, as `__init__` built it, on
# the device the parameters arrived on. Keeping that code in a method of its
# own, called by `__init__`, makes rebuilding one call:

# %%
class RampedMLP(nn.Module):
    """The MLP on inputs scaled by a fixed ramp, a buffer that is rebuilt, never saved."""

    def __init__(self):
        super().__init__()
        self.mlp = MLP()
        self.build_buffers()

    def build_buffers(self, device=None):
        self.register_buffer("ramp", torch.linspace(0, 1, 20, device=device), persistent=False)

    def forward(self, X):
        return self.mlp(X * self.ramp)


ramped = RampedMLP()
torch.save(ramped.state_dict(), root / "ramped.params")
with torch.device("meta"):
    lean_ramped = RampedMLP()
print(lean_ramped.load_state_dict(torch.load(root / "ramped.params"), assign=True))
print("still on meta:", [name for name, buffer in lean_ramped.named_buffers() if buffer.is_meta])
try:
    lean_ramped(X)
except RuntimeError as error:
    print("RuntimeError:", error)
lean_ramped.build_buffers(device=lean_ramped.mlp.hidden.weight.device)
print("after build_buffers:", torch.equal(lean_ramped(X), ramped(X)))

# %% [markdown]
# ## What comes next: views, optimizer state, several processes
#
# **A view saves its whole storage.** `torch.save` writes the storage a tensor
# looks into, so the views that share it come back sharing it. A small slice of
# a big tensor therefore writes the big one. Clone the slice to save only it.

# %%
big = torch.arange(1_000_000, dtype=torch.float32)   # 4 MB
torch.save(big[:10], root / "view.pt")
torch.save(big[:10].clone(), root / "clone.pt")
for name in ("view.pt", "clone.pt"):
    print(f"{name:9} {os.path.getsize(root / name) / 1e3:8.1f} kB")

# %% [markdown]
# **An optimizer's `state_dict` counts parameters by position.** It stores the
# parameters as numbers 0, 1, 2, ... in the order they were handed to the
# optimizer, not by name. Loaded into an optimizer that got the same
# parameters in another order (here the last layer first), the state of one
# layer lands on another; when the shapes agree, nothing complains. Build
# the optimizer the same way in the code that saves and in the code that
# loads.

# %%
torch.manual_seed(4)
pair = nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 4))
adam = torch.optim.Adam(pair.parameters(), lr=0.01)
pair(torch.randn(8, 4)).sum().backward()
adam.step()
print("parameter ids in the state_dict:", adam.state_dict()["param_groups"][0]["params"])

reordered = torch.optim.Adam([*pair[1].parameters(), *pair[0].parameters()], lr=0.01)
reordered.load_state_dict(adam.state_dict())  # no error
print("layer 1's moments are now layer 0's:",
      torch.equal(reordered.state[pair[1].weight]["exp_avg"], adam.state[pair[0].weight]["exp_avg"]))

# %% [markdown]
# **Several processes.** In data-parallel training every process holds the
# same model, so one of them, rank 0, writes the checkpoint, and all of them
# wait at a barrier until it is written before anyone reads it or moves on.
# A model split across processes (FSDP, tensor parallelism) has no single
# copy to write; `torch.distributed.checkpoint` (`dcp.save`, `dcp.load`) lets
# every process write and read its own shards into one checkpoint folder, and
# can load it into another number of processes. Below, a world of one process
# over the `gloo` backend runs the same code a real job runs.

# %%
import torch.distributed as dist
import torch.distributed.checkpoint as dcp

if dist.is_available():
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)

    def save_on_rank0(state, path):
        if dist.get_rank() == 0:
            atomic_write(path, lambda f: torch.save(state, f))
        dist.barrier()  # nobody reads or moves on before the file is complete

    save_on_rank0(net.state_dict(), root / "rank0.params")
    print("rank", dist.get_rank(), "of", dist.get_world_size(), "| rank 0's file loads:",
          torch.equal(torch.load(root / "rank0.params")["out.bias"], net.out.bias))

    dcp.save({"model": net.state_dict()}, checkpoint_id=root / "sharded")
    print("dcp wrote:", sorted(p.name for p in (root / "sharded").iterdir()))
    target = {"model": MLP().state_dict()}
    dcp.load(target, checkpoint_id=root / "sharded")  # fills the given tensors in place
    print("dcp loaded the same weights:", torch.equal(target["model"]["hidden.weight"], net.hidden.weight))
    dist.destroy_process_group()
else:
    print("this PyTorch was built without torch.distributed; skipped.")

# %% [markdown]
# Done with the files: deleting the temporary directory removes everything we
# wrote.

# %%
del lean  # its parameters still read big.params; some systems refuse to delete a mapped file
workdir.cleanup()
print(root.exists())

# %% [markdown]
# ## Summary
#
# - `torch.save`/`torch.load` handle tensors and containers of them; for models,
#   save the `state_dict` and load it into a fresh instance of the class. A
#   pickled model object no longer loads under the `weights_only=True` default.
# - A `state_dict` holds parameters and persistent buffers, and shares memory
#   with the model: clone it for a snapshot kept in memory.
# - Loading is strict by default; `strict=False` returns the missing and
#   unexpected keys, which you must check.
# - `map_location="cpu"` loads files written on any device; move afterwards.
# - Unpickling runs code. Keep `weights_only=True` (the default) for files you
#   did not write; for trusted files holding your own classes, allowlist exactly
#   those (`torch.serialization.add_safe_globals`) rather than turning it off.
# - A checkpoint holds model, optimizer, epoch and RNG states; with all four,
#   this CPU run resumes bit for bit. Real runs add scheduler, scaler and sampler
#   state (and MPS's RNG), and on a GPU need deterministic algorithms. RNG
#   states go back to the CPU (`.cpu()`) whatever `map_location` did to them.
# - A `DataLoader(generator=g)` shuffles (and seeds its workers) from `g`, and
#   NumPy's global generator has its own state: save `g.get_state()` and
#   `np.random.get_state()` too. NumPy's state holds an array, which
#   `weights_only=True` loads only with NumPy's array globals and the dtype's
#   class allowed (`safe_globals`); a `np.random.default_rng` state is plain
#   Python and needs nothing.
# - Write to a temporary file next to the target and `os.replace` it, so a
#   crash never destroys the last good checkpoint.
# - `torch.export` stores architecture and parameters as a graph: no code needed
#   to run it, at the price of fixed shapes (unless declared), one traced path
#   and frozen Python state, the training mode included: call `eval()` first.
#   Loading one unpickles, so only from sources you trust.
# - Wrappers prefix the keys (`_orig_mod.`, `module.`): save the inner model or
#   strip the prefix. `mmap=True` with `assign=True` loads big checkpoints
#   without a second copy; buffers with `persistent=False` (and tensors kept
#   as plain attributes) are not in the file and stay on `meta`: rebuild them.
#   `.safetensors` files hold tensors and no pickle.
# - `mkstemp`'s file is owner-only (`0o600`): `os.chmod` it to `open()`'s mode
#   before the rename, or the group cannot read the checkpoint.
# - Saving a view writes its whole storage: clone a slice first. An
#   optimizer's `state_dict` knows parameters by position: build the optimizer
#   in the same order when loading. In multi-process training rank 0 writes and
#   everyone waits at a barrier; sharded state goes through
#   `torch.distributed.checkpoint`.
#
# Now practise in the exercise: `exercises/06_file_io/06_file_io.ipynb`.
