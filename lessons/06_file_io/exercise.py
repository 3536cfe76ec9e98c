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
# # Exercise 6: File I/O
#
# Four pieces of saving and loading to write, and one question to answer. Write
# your code where it says `YOUR CODE HERE` (delete the `raise
# NotImplementedError()` line), then run the test cell under it: silence means
# the visible checks pass. When grading, more checks of the same behaviour run on
# other inputs, so make the code right, not just the examples.
#
# Each requirement the tests check ends with its name in brackets, such as
# `[clause call_module]`: a test that fails is about one of them.
#
# Use only `torch`, the standard library, `numpy` and `matplotlib`. Your
# functions write only where they are told: every test gives them a `path`
# inside a temporary folder of its own and deletes that folder afterwards. (The
# temporary file of item 2 therefore goes next to `path`, into that same folder.)

# %%
import os
import random
import tempfile
from pathlib import Path

import torch
from torch import nn
from torch.nn import functional as F

_ = torch.manual_seed(0)  # the same random examples on every run

# %% [markdown]
# ## Set-up for the tests (run it; no need to read it)
#
# The next cell defines `_simulated_gpu()`, which lets the tests load a
# checkpoint onto a GPU that the CPU plays, with a real GPU's rules, on any
# machine. In JupyterLab its code is folded: run it, and click its left edge to
# unfold it.

# %% jupyter={"source_hidden": true}
# include: simulated_gpu.py

# %% [markdown]
# ## 1. Checkpoints that resume exactly
#
# Write two functions:
#
# - `save_checkpoint(path, model, optimizer, epoch, scheduler=None)` writes one
#   file at `path` holding everything needed to continue training; [clause whole_state]
# - `load_checkpoint(path, model, optimizer, map_location="cpu", scheduler=None)`
#   restores that state into an existing `model`, `optimizer` and, when one is
#   given, learning-rate `scheduler` [clause scheduler] (passing `map_location` on to [clause map_location]
#   `torch.load`), and **returns the saved epoch**. [clause epoch]
#
# The scheduler is optional: [clause four_arguments] the tests call both functions without one (the
# first four arguments only) and with one, such as
# `torch.optim.lr_scheduler.StepLR`, stepped after every optimizer step. `path`
# may be a string or a `pathlib.Path`. `map_location` may put the loaded
# tensors on another device (a GPU); keep in mind what that does to a saved RNG
# state. The file holds the whole state: [clause map_location_rng] a new process, with nothing but the
# file, must be able to resume from it (the tests read it back themselves). [clause file_holds]
# Call `torch.load` through `torch` (the tests simulate a GPU by replacing it
# for a moment; a name imported on its own keeps the real function).
#
# The contract: a run that saves a checkpoint, "crashes", and resumes in a fresh
# model, optimizer and scheduler from that file must end with **exactly** the
# same parameters (`torch.equal`, not `allclose`) as a run that never stopped.
# The models in the tests use dropout, and the training loop draws its data with
# `torch` and scales it with Python's `random` module, so think about everything
# that influences the next steps.
#
# On a machine with CUDA GPUs, dropout draws from each GPU's own random
# generator too. One test simulates a machine with two GPUs: for a moment it
# replaces `torch.cuda`'s generator functions (`is_available`, `device_count`,
# `get_rng_state(_all)`, `set_rng_state(_all)`, ...) with stand-ins that keep a
# state per GPU, so call them through `torch.cuda` (a name imported on its own,
# `from torch.cuda import ...`, keeps the real function). After loading, every
# GPU's generator must be exactly where it was at saving time. [clause gpu]

# %% answer grade_id="checkpoint"
def save_checkpoint(path, model, optimizer, epoch, scheduler=None):
    ### BEGIN SOLUTION
    torch.save({
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "scheduler": scheduler.state_dict() if scheduler is not None else None,
        "epoch": epoch,
        "torch_rng": torch.get_rng_state(),
        "cuda_rng": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
        "python_rng": random.getstate(),
    }, path)
    ### END SOLUTION


def load_checkpoint(path, model, optimizer, map_location="cpu", scheduler=None):
    ### BEGIN SOLUTION
    state = torch.load(path, map_location=map_location)
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    if scheduler is not None:
        scheduler.load_state_dict(state["scheduler"])
    # map_location moved the RNG states too; the generators take CPU byte tensors only
    torch.set_rng_state(state["torch_rng"].cpu())
    if state["cuda_rng"]:
        torch.cuda.set_rng_state_all([s.cpu() for s in state["cuda_rng"]])
    random.setstate(state["python_rng"])
    return state["epoch"]
    ### END SOLUTION

# %% tests grade_id="test_checkpoint" points=1
import pickle


def _make_model():
    return nn.Sequential(nn.Linear(5, 16), nn.ReLU(), nn.Dropout(0.5), nn.Linear(16, 1))


def _train(model, optimizer, scheduler, steps):
    """A few steps on random data: dropout and the data draw from torch's RNG, the data's scale from Python's."""
    model.train()
    for _ in range(steps):
        x = torch.randn(8, 5) * (0.5 + random.random())
        loss = (model(x) - x.sum(1, keepdim=True)).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if scheduler is not None:
            scheduler.step()


def _call(function, *args, **kwargs):
    """function(*args, **kwargs), with the two errors a signature or a pickled object cause explained."""
    try:
        return function(*args, **kwargs)
    except TypeError as error:
        if "scheduler" not in str(error):
            raise
        raise AssertionError(f"{function.__name__} should take an optional scheduler: add the keyword argument "
                             f"scheduler=None and handle both cases ({error}).") from error
    except pickle.UnpicklingError as error:
        raise AssertionError("torch.load refused the checkpoint: store state_dicts, tensors and plain Python "
                             "values in it, not objects such as the scheduler itself.") from error


def _check_resume(make_optimizer, epoch, make_scheduler=None, path_type=str, map_location=None):
    """Train 3+3 steps without stopping, then 3 steps, save, crash, load and 3 more: compare."""
    def build():
        model = _make_model()
        optimizer = make_optimizer(model.parameters())
        return model, optimizer, make_scheduler(optimizer) if make_scheduler else None

    torch.manual_seed(10)
    random.seed(10)
    model, optimizer, scheduler = build()
    _train(model, optimizer, scheduler, 6)
    reference = [p.detach().clone() for p in model.parameters()]

    with tempfile.TemporaryDirectory() as folder:
        path = path_type(os.path.join(folder, "checkpoint.pt"))
        torch.manual_seed(10)
        random.seed(10)
        model, optimizer, scheduler = build()
        _train(model, optimizer, scheduler, 3)
        saved_params = [p.detach().clone() for p in model.parameters()]
        saved_rng, saved_python_rng = torch.get_rng_state(), random.getstate()
        if scheduler is None:
            _call(save_checkpoint, path, model, optimizer, epoch)
        else:
            _call(save_checkpoint, path, model, optimizer, epoch, scheduler=scheduler)
            saved_lr, saved_steps = optimizer.param_groups[0]["lr"], scheduler.last_epoch
        assert os.path.exists(path), "save_checkpoint should write its file at the given path."

        # The crash: a new process with other RNG states and a fresh model, optimizer and scheduler.
        torch.manual_seed(999)
        random.seed(999)
        model, optimizer, scheduler = build()
        options = {} if map_location is None else {"map_location": map_location}
        if scheduler is not None:
            options["scheduler"] = scheduler
        got = _call(load_checkpoint, path, model, optimizer, **options)
        assert got == epoch, f"load_checkpoint should return the saved epoch {epoch}, got {got!r}."
        assert all(torch.equal(p, q) for p, q in zip(model.parameters(), saved_params)), \
            "After loading, the model's parameters differ from the saved ones: is the model's state_dict saved and loaded?"
        assert torch.equal(torch.get_rng_state(), saved_rng), \
            "After loading, torch's random number generator is not where it was at saving time: save torch.get_rng_state() and restore it with torch.set_rng_state()."
        assert random.getstate() == saved_python_rng, \
            "After loading, Python's random module is not where it was at saving time: save random.getstate() and restore it with random.setstate()."
        if scheduler is not None:
            assert scheduler.last_epoch == saved_steps and optimizer.param_groups[0]["lr"] == saved_lr, \
                f"After loading, the scheduler has counted {scheduler.last_epoch} steps instead of {saved_steps}: " \
                "save scheduler.state_dict() and load it into the scheduler given to load_checkpoint."
        _train(model, optimizer, scheduler, 3)
    assert all(torch.equal(p, q) for p, q in zip(model.parameters(), reference)), \
        "The resumed run drifts from the uninterrupted one: are the optimizer's state_dict (momentum, Adam " \
        "moments) and the scheduler's state_dict saved and loaded?"


def _tensors_in(value):
    """Every tensor of a loaded checkpoint: in dicts, lists and tuples, and the state_dicts of saved objects."""
    if isinstance(value, torch.Tensor):
        return [value]
    if callable(getattr(value, "state_dict", None)):
        value = value.state_dict()
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, (list, tuple)):
        return [tensor for item in value for tensor in _tensors_in(item)]
    return []


def _check_file_holds_the_state():
    """The file save_checkpoint writes, read back by the test: it holds every parameter and momentum buffer."""
    torch.manual_seed(30)
    random.seed(30)
    model = _make_model()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    _train(model, optimizer, None, 2)
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "checkpoint.pt")
        _call(save_checkpoint, path, model, optimizer, 3)
        saved = _tensors_in(torch.load(path, weights_only=False))  # the student's own file, read without load_checkpoint
    wanted = [*model.parameters(), *(state["momentum_buffer"] for state in optimizer.state.values())]
    missing = sum(not any(t.shape == w.shape and torch.equal(t, w) for t in saved) for w in wanted)
    assert not missing, \
        f"{missing} of the {len(wanted)} parameters and momentum buffers are not in the file save_checkpoint wrote " \
        "(read back with torch.load): a new process has only the file, so put the whole state into it, not into " \
        "a variable kept in the notebook."


_calls = []


def _counting_location(storage, location):
    """A map_location that leaves every tensor where it is and counts the calls."""
    _calls.append(location)
    return storage


# Without a scheduler, as in the contract's four-argument call, and map_location left at its default.
_check_resume(lambda params: torch.optim.SGD(params, lr=0.05, momentum=0.9), epoch=7)
_check_file_holds_the_state()
### BEGIN HIDDEN TESTS
_check_resume(lambda params: torch.optim.AdamW(params, lr=0.02, weight_decay=0.1), epoch=0, path_type=Path)
_check_resume(lambda params: torch.optim.Adam(params, lr=0.01), epoch=17)
# One file loaded twice, each time into another fresh model: both get the saved state.
with tempfile.TemporaryDirectory() as _twice_folder:
    _path = os.path.join(_twice_folder, "twice.pt")
    _model = _make_model()
    _call(save_checkpoint, _path, _model, torch.optim.SGD(_model.parameters(), lr=0.1), 6)
    for _ in range(2):
        _fresh = _make_model()
        _call(load_checkpoint, _path, _fresh, torch.optim.SGD(_fresh.parameters(), lr=0.1))
        assert all(torch.equal(p, q) for p, q in zip(_fresh.parameters(), _model.parameters())), \
            "Loading one file a second time, into another fresh model, should restore that model too: read the " \
            "file and load it on every call."
### END HIDDEN TESTS

# %% tests grade_id="test_checkpoint_scheduler" points=2
# With a learning-rate scheduler given to both functions: first one step, then a whole resume.
with tempfile.TemporaryDirectory() as _folder:
    _model = _make_model()
    _optimizer = torch.optim.SGD(_model.parameters(), lr=0.1)
    _scheduler = torch.optim.lr_scheduler.StepLR(_optimizer, step_size=1, gamma=0.5)
    _optimizer.step()
    _scheduler.step()  # one step: the learning rate is halved to 0.05
    _call(save_checkpoint, os.path.join(_folder, "one-step.pt"), _model, _optimizer, 1, scheduler=_scheduler)
    _optimizer = torch.optim.SGD(_make_model().parameters(), lr=0.1)
    _scheduler = torch.optim.lr_scheduler.StepLR(_optimizer, step_size=1, gamma=0.5)
    _call(load_checkpoint, os.path.join(_folder, "one-step.pt"), _make_model(), _optimizer, scheduler=_scheduler)
assert _scheduler.last_epoch == 1 and _optimizer.param_groups[0]["lr"] == 0.05, \
    "After loading, the scheduler should have counted its 1 step and the learning rate be 0.05: save " \
    "scheduler.state_dict() and load it into the scheduler given to load_checkpoint."
_check_resume(lambda params: torch.optim.SGD(params, lr=0.05, momentum=0.9), epoch=2,
              make_scheduler=lambda opt: torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5))
### BEGIN HIDDEN TESTS
_check_resume(lambda params: torch.optim.Adam(params, lr=0.01), epoch=17, path_type=Path,
              make_scheduler=lambda opt: torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=5))
_check_resume(lambda params: torch.optim.SGD(params, lr=0.05, momentum=0.5), epoch=5,
              make_scheduler=lambda opt: torch.optim.lr_scheduler.ExponentialLR(opt, gamma=0.7))
### END HIDDEN TESTS

# %% tests grade_id="test_checkpoint_map_location" points=1
# A pathlib.Path, and a map_location that must reach torch.load.
_calls.clear()
_check_resume(lambda params: torch.optim.SGD(params, lr=0.05, momentum=0.9), epoch=3, path_type=Path,
              map_location=_counting_location)
assert _calls, "load_checkpoint should pass its map_location argument on to torch.load."
### BEGIN HIDDEN TESTS
_check_resume(lambda params: torch.optim.AdamW(params, lr=0.02, weight_decay=0.1), epoch=0, map_location="cpu")
_calls.clear()
_check_resume(lambda params: torch.optim.SGD(params, lr=0.05, momentum=0.5), epoch=5,
              map_location=_counting_location)
assert _calls, "load_checkpoint should pass its map_location argument on to torch.load."
# A map_location that really moves tensors: onto a GPU, which the CPU plays with a real GPU's rules.
for _location in ("cuda", torch.device("cuda", 0)):
    with _simulated_gpu():
        try:
            _check_resume(lambda params: torch.optim.Adam(params, lr=0.01), epoch=9, map_location=_location)
        except (RuntimeError, TypeError) as _error:
            raise AssertionError(
                f"load_checkpoint(..., map_location={_location!r}) failed on a (simulated) GPU: {_error}. map_location "
                "moves every tensor of the file there, the saved RNG states too, and torch.set_rng_state takes a "
                "CPU tensor only: move a loaded RNG state back with .cpu().") from _error
### END HIDDEN TESTS

# %% tests grade_id="test_checkpoint_gpu" points=1
# A simulated machine with two CUDA GPUs: only their random generators are simulated (nothing is
# computed on them), through torch.cuda's generator functions, put back afterwards.
import contextlib


@contextlib.contextmanager
def _simulated_gpus(count=2):
    """Pretend the machine has `count` CUDA GPUs, GPU 0 current; yields the list of their generator
    states (16-byte uint8 tensors on the CPU, as torch.cuda.get_rng_state returns on a real GPU)."""
    states = [torch.zeros(16, dtype=torch.uint8) for _ in range(count)]

    def index(device="cuda"):
        where = torch.device("cuda", device) if isinstance(device, int) else torch.device(device)
        number = 0 if where.index is None else where.index
        if where.type != "cuda" or not 0 <= number < count:
            raise RuntimeError(f"there is no GPU {where} on this (simulated) machine with {count} GPUs")
        return number

    def get_rng_state(device="cuda"):
        return states[index(device)].clone()

    def set_rng_state(new_state, device="cuda"):
        if not (isinstance(new_state, torch.Tensor) and new_state.dtype == torch.uint8
                and new_state.device.type == "cpu" and new_state.shape == (16,)):
            raise RuntimeError("a GPU's generator state must be the uint8 tensor on the CPU that "
                               "torch.cuda.get_rng_state gave (move a loaded one back with .cpu())")
        states[index(device)] = new_state.clone()

    def set_rng_state_all(new_states):
        for number, new_state in enumerate(new_states):
            set_rng_state(new_state, number)

    def seeded(seed):
        return torch.tensor(list(int(seed).to_bytes(8, "little", signed=True)) + [0] * 8, dtype=torch.uint8)

    def manual_seed(seed):
        states[0] = seeded(seed)

    def manual_seed_all(seed):
        states[:] = [seeded(seed) for _ in range(count)]

    stand_ins = {
        "is_available": lambda: True,
        "device_count": lambda: count,
        "current_device": lambda: 0,
        "get_rng_state": get_rng_state,
        "get_rng_state_all": lambda: [state.clone() for state in states],
        "set_rng_state": set_rng_state,
        "set_rng_state_all": set_rng_state_all,
        "manual_seed": manual_seed,
        "manual_seed_all": manual_seed_all,
    }
    saved = {(module, name): getattr(module, name) for module in (torch.cuda, torch.cuda.random)
             for name in stand_ins if hasattr(module, name)}
    for module, name in saved:
        setattr(module, name, stand_ins[name])
    try:
        yield states
    finally:
        for (module, name), original in saved.items():
            setattr(module, name, original)


def _check_gpu_generators(epoch, path_type=str, with_scheduler=False):
    """Save on the simulated two-GPU machine, scramble the GPUs' generators (the crash), load: compare."""
    torch.manual_seed(40)
    random.seed(40)
    model = _make_model()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=2) if with_scheduler else None
    _train(model, optimizer, scheduler, 2)
    options = {"scheduler": scheduler} if with_scheduler else {}
    with tempfile.TemporaryDirectory() as folder, _simulated_gpus(2) as gpu_states:
        path = path_type(os.path.join(folder, "checkpoint.pt"))
        gpu_states[:] = [torch.randint(0, 256, (16,), dtype=torch.uint8) for _ in range(2)]
        saved = [state.clone() for state in gpu_states]
        _call(save_checkpoint, path, model, optimizer, epoch, **options)
        gpu_states[:] = [torch.randint(0, 256, (16,), dtype=torch.uint8) for _ in range(2)]  # the crash
        model = _make_model()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
        if with_scheduler:
            options["scheduler"] = torch.optim.lr_scheduler.StepLR(optimizer, step_size=2)
        got = _call(load_checkpoint, path, model, optimizer, **options)
        restored = [state.clone() for state in gpu_states]
    assert got == epoch, f"load_checkpoint should return the saved epoch {epoch}, got {got!r}."
    assert all(torch.equal(a, b) for a, b in zip(restored, saved)), \
        "After loading, the (simulated) GPUs' random generators are not where they were at saving time: dropout " \
        "on a GPU draws from them, so save torch.cuda.get_rng_state_all() and restore it with " \
        "torch.cuda.set_rng_state_all() (states moved back to the CPU)."


_check_gpu_generators(epoch=4)
### BEGIN HIDDEN TESTS
_check_gpu_generators(epoch=11, path_type=Path)
### END HIDDEN TESTS

# %% [markdown]
# ## 2. Atomic saving
#
# Write `atomic_save(obj, path)`, which saves `obj` with `torch.save` so that a
# crash in the middle of the write can never leave a partial file at `path`:
#
# - if the write fails, whatever file was at `path` before is still there,
#   unchanged (and if there was none, there is still none); [clause crashes_unchanged]
# - the error still reaches the caller, who must not believe the save worked; [clause crashes_error]
# - no temporary file is left behind, after a success or a failure; [clause crashes_no_temp]
# - every file (or folder) it opens is closed again, so that saving every epoch
#   never runs out of file descriptors. [clause closes]
#
# `path` may be a string or a `pathlib.Path`. [clause path_types]
#
# Write to a temporary file **in the same folder** as `path` [clause crashes_same_folder] (not in `/tmp`, not
# in the current folder), then move it into place with `os.replace`, [clause crashes_replace] which is
# atomic within one file system. Another folder may be on another file system,
# and there `os.replace` fails. The lecture wrote this recipe for any kind of
# file; here it is for `torch.save`.
#
# The tests make three kinds of crash happen: `torch.save` fails while pickling
# `obj`; the disk "fills up" as soon as anything opens the file at `path` itself
# for writing; and the final `os.replace` fails.

# %% answer grade_id="atomic_save"
def atomic_save(obj, path):
    ### BEGIN SOLUTION
    path = Path(path)
    tmp = path.with_name(f"{path.name}.{os.urandom(8).hex()}.tmp")
    # "x": a new file, created with the mode a plain save gives (the umask's); mkstemp's
    # file would be readable by its owner only, and os.replace keeps that mode.
    f = open(tmp, "xb")
    try:
        with f:
            torch.save(obj, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        os.remove(tmp)
        raise
    if os.name == "posix":  # against a power loss, the rename too (see the lecture)
        folder = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(folder)
        finally:
            os.close(folder)
    ### END SOLUTION

# %% tests grade_id="test_atomic_save" points=1
# The crashes are real, not simulated by replacing torch.save (however you
# imported it): an object that raises while torch.save pickles it, when the
# file being written is already open; a file at `path` that cannot be written
# once it is opened for writing (as on a full disk); and an os.replace that
# fails. (Making the folder read-only would not do: root, as on Colab, may
# write into it anyway.)
import builtins
import errno
import io
from contextlib import contextmanager


def _open_files():
    """Regular files this process has open, from Linux's /proc (an empty set elsewhere).
    A journal of IPython's history database, which another thread of the kernel
    may hold open at the same moment, is not counted."""
    found = set()
    if not os.path.isdir("/proc/self/fd"):
        return found
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if os.path.isfile(target) and not target.endswith("-journal"):
            found.add(target)
    return found


class _CrashWhilePickling:
    """Raises while being pickled; remembers which files were open at that moment."""
    def __init__(self):
        self.open_files = set()

    def __reduce__(self):
        self.open_files = _open_files()
        raise OSError("simulated crash while pickling")


def _failing_save(path):
    """atomic_save of an object whose pickling fails: checks what must hold after the failure."""
    folder = os.path.dirname(os.path.abspath(path))
    existed = os.path.exists(path)
    before_files, before_open = set(os.listdir(folder)), _open_files()
    crash = _CrashWhilePickling()
    try:
        atomic_save({"w": torch.zeros(10_000), "boom": crash}, path)
    except Exception:
        pass
    else:
        raise AssertionError("atomic_save returned normally although the write failed: let the error reach "
                             "the caller (clean up, then re-raise), or they believe the checkpoint was saved.")
    if existed:
        assert os.path.exists(path), \
            "After a failed save there is no file at path: the previous one must stay until the new one is complete (do not delete it first)."
    else:
        assert not os.path.exists(path), \
            "A failed very first save left a file at path: only a complete file may ever appear there."
    elsewhere = [f for f in crash.open_files - before_open if os.path.dirname(f) != os.path.realpath(folder)]
    assert not elsewhere, \
        f"The temporary file was written at {elsewhere[0]}, not in the folder of path: os.replace cannot move a file across file systems, so keep it next to path."
    left = sorted(set(os.listdir(folder)) - before_files)
    assert not left, f"A failed save left {left} behind: remove the temporary file when the write fails."


def _is_target(file, target):
    return isinstance(file, (str, bytes, os.PathLike)) and os.path.realpath(file) == os.path.realpath(target)


@contextmanager
def _disk_full_at(target):
    """While active, opening the file at `target` itself for writing really opens it (a
    mode "w" open empties it) and then fails, as a full disk would at the first write."""
    saved = builtins.open, io.open, os.open

    def crash():
        return OSError(errno.ENOSPC, "simulated: no space left on the device while writing into path itself")

    def fake_open(file, mode="r", *args, **kwargs):
        handle = saved[0](file, mode, *args, **kwargs)
        if _is_target(file, target) and any(c in mode for c in "wax+"):
            handle.close()
            raise crash()
        return handle

    def fake_os_open(file, flags, *args, **kwargs):
        fd = saved[2](file, flags, *args, **kwargs)
        if _is_target(file, target) and flags & (os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_TRUNC):
            os.close(fd)
            raise crash()
        return fd

    builtins.open = io.open = fake_open
    os.open = fake_os_open
    try:
        yield
    finally:
        builtins.open, io.open, os.open = saved


def _full_disk_save(path, obj):
    """atomic_save(obj, path) while writing into path itself fails: path must still hold a whole checkpoint."""
    with _disk_full_at(path):
        try:
            atomic_save(obj, path)
        except Exception:  # the crash may reach the caller; what counts is the file left at path
            pass
    try:
        return torch.load(path)
    except Exception as error:
        raise AssertionError("The disk filled up while atomic_save was writing into path itself, and the file at "
                             "path is now broken: write the bytes (even ones pickled in memory first) into a "
                             "temporary file next to path, then os.replace it into place.") from error


def _failing_replace_save(path, obj):
    """atomic_save(obj, path) while os.replace (and os.rename) fail: checks what must hold after the failure."""
    folder = os.path.dirname(os.path.abspath(path))
    before_files = set(os.listdir(folder))
    with open(path, "rb") as f:
        before_bytes = f.read()
    saved = os.replace, os.rename
    moved_from = []

    def fail(*args, **kwargs):
        source = args[0] if args else kwargs.get("src")
        if source is not None:
            moved_from.append(os.path.dirname(os.path.realpath(source)))
        raise OSError(errno.EACCES, "simulated: moving the finished file into place failed")

    os.replace = os.rename = fail
    try:
        atomic_save(obj, path)
    except OSError:
        pass
    else:
        raise AssertionError("atomic_save returned normally although its final os.replace failed (the test made it "
                             "fail): does it write a temporary file and move it into place with os.replace, and "
                             "does the error reach the caller?")
    finally:
        os.replace, os.rename = saved
    elsewhere = [d for d in moved_from if d != os.path.realpath(folder)]
    assert not elsewhere, \
        f"The file moved into place came from {elsewhere[0]}, not from the folder of path: os.replace cannot " \
        "move a file across file systems, so write the temporary file next to path."
    with open(path, "rb") as f:
        assert f.read() == before_bytes, "After os.replace failed, the file at path changed: write only the temporary file."
    left = sorted(set(os.listdir(folder)) - before_files)
    assert not left, f"When os.replace fails, {left} is left behind: remove the temporary file on every failure."


with tempfile.TemporaryDirectory() as _folder:
    _path = os.path.join(_folder, "model.pt")
    atomic_save({"w": torch.arange(5.0), "epoch": 1}, _path)
    _back = torch.load(_path)
    assert _back["epoch"] == 1 and torch.equal(_back["w"], torch.arange(5.0)), \
        "A normal atomic_save should leave a file at path that torch.load reads back unchanged."
    assert os.listdir(_folder) == ["model.pt"], \
        f"After a successful save the folder should hold only the file at path, not {sorted(os.listdir(_folder))}."
    try:
        atomic_save({"epoch": 2}, Path(_path))
    except TypeError as _error:
        raise AssertionError("atomic_save should accept a pathlib.Path as well as a string: build the temporary "
                             "name with pathlib or f-strings, not with +.") from _error
    assert torch.load(_path) == {"epoch": 2}, "Saving again to the same path (here a pathlib.Path) should replace the old file."
### BEGIN HIDDEN TESTS
with tempfile.TemporaryDirectory() as _folder:
    _path = Path(_folder) / "weights.pt"
    atomic_save({"w": torch.ones(3)}, _path)
    atomic_save([torch.full((2,), 7.0), "second"], _path)
    _back = torch.load(_path)
    assert _back[1] == "second" and torch.equal(_back[0], torch.full((2,), 7.0)), \
        "Saving again to the same Path should replace the old file with the new object."
    _subfolder = Path(_folder) / "run"
    _subfolder.mkdir()
    atomic_save({"epoch": 3}, str(_subfolder / "last.pt"))
    assert torch.load(_subfolder / "last.pt")["epoch"] == 3, "atomic_save should work for a path in any folder."
    assert sorted(p.name for p in Path(_folder).rglob("*")) == ["last.pt", "run", "weights.pt"], \
        f"Only the two checkpoints should be left, found {sorted(p.name for p in Path(_folder).rglob('*'))}."
    # Saving every epoch must not use up the process's file descriptors (counted on Linux).
    _count = lambda: len(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else 0
    _before = _count()
    for _ in range(20):
        atomic_save({"w": torch.ones(2)}, _path)
    _leaked = _count() - _before
    assert _leaked < 10, \
        f"After 20 saves the process holds {_leaked} more open files: close every file and folder that " \
        "atomic_save opens (with a with-block or try/finally), or a long training run runs out of them."
### END HIDDEN TESTS

# %% tests grade_id="test_atomic_save_crashes" points=2
# The three crashes: while pickling, while writing into path itself (a full disk), at the final os.replace.
with tempfile.TemporaryDirectory() as _folder:
    _path = os.path.join(_folder, "model.pt")
    _failing_save(_path)
    atomic_save({"w": torch.arange(5.0), "epoch": 1}, _path)
    _failing_save(_path)
    try:
        _back = torch.load(_path)
    except Exception as _error:
        raise AssertionError("After a save that failed halfway, the file at path is broken: "
                             "are you writing into path itself instead of a temporary file?") from _error
    assert _back["epoch"] == 1 and torch.equal(_back["w"], torch.arange(5.0)), \
        "After a failed save, path should still hold the previous checkpoint: is a partial file moved into place?"
    _back = _full_disk_save(_path, {"epoch": 3})
    assert _back["epoch"] in (1, 3), "After a crash while writing, path should hold the old or the new checkpoint."
    _failing_replace_save(_path, {"epoch": 4})
### BEGIN HIDDEN TESTS
with tempfile.TemporaryDirectory() as _folder:
    _path = Path(_folder) / "weights.pt"
    _failing_save(_path)
    atomic_save([torch.full((2,), 7.0), "second"], _path)
    _failing_save(_path)
    _back = torch.load(_path)
    assert _back[1] == "second", "When pickling fails halfway through torch.save, the previous file at path must stay intact."
    _back = _full_disk_save(_path, {"w": torch.zeros(50_000)})
    assert isinstance(_back, (list, dict)), "After a crash while writing, path should hold a whole checkpoint."
    _subfolder = Path(_folder) / "run"
    _subfolder.mkdir()
    atomic_save({"epoch": 3}, str(_subfolder / "last.pt"))
    _failing_save(str(_subfolder / "last.pt"))
    _failing_replace_save(str(_subfolder / "last.pt"), [torch.ones(4)])
    _failing_replace_save(_path, {"epoch": 9})
    assert sorted(p.name for p in Path(_folder).rglob("*")) == ["last.pt", "run", "weights.pt"], \
        f"Only the two checkpoints should be left, found {sorted(p.name for p in Path(_folder).rglob('*'))}."
### END HIDDEN TESTS

# %% [markdown]
# ## 3. Loading part of a model
#
# Transfer learning often reuses only some layers of a trained network. Write
# `load_prefix(model, state_dict, prefixes)`: copy into `model` only the entries [clause copies]
# of `state_dict` whose keys start with one of the strings in `prefixes` [clause starts_with] (a list
# or tuple, possibly empty), leave every other parameter and buffer of `model`
# untouched, [clause others_untouched] and return the keys that were loaded (any list, tuple or set of
# them). [clause returns_loaded] A key under a prefix that `model` does not have (the source network
# had an extra layer) is not loaded: skip it without an error, and do not
# return it. [clause unknown_keys] Buffers count like parameters, [clause buffers] and the model must not share
# memory with the given `state_dict` afterwards. [clause no_sharing]

# %% answer grade_id="load_prefix"
def load_prefix(model, state_dict, prefixes):
    ### BEGIN SOLUTION
    chosen = {key: value for key, value in state_dict.items() if key.startswith(tuple(prefixes))}
    result = model.load_state_dict(chosen, strict=False)
    return [key for key in chosen if key not in result.unexpected_keys]
    ### END SOLUTION

# %% tests grade_id="test_load_prefix" points=2
torch.manual_seed(20)
_net = lambda: nn.Sequential(nn.Linear(4, 6), nn.ReLU(), nn.Sequential(nn.Linear(6, 6), nn.Linear(6, 2)))
_source, _target = _net(), _net()
_before = {k: v.clone() for k, v in _target.state_dict().items()}
_loaded = load_prefix(_target, _source.state_dict(), ["0."])
assert _loaded is not None and sorted(_loaded) == ["0.bias", "0.weight"], \
    f"load_prefix should return the loaded keys ['0.bias', '0.weight'] (in any order), got {_loaded!r}: " \
    "only keys that *start* with a prefix count ('2.0.weight' merely contains '0.')."
assert torch.equal(_target[0].weight, _source[0].weight) and torch.equal(_target[0].bias, _source[0].bias), \
    "The entries under the prefix '0.' were not copied into the model."
for _key in ("2.0.weight", "2.0.bias", "2.1.weight", "2.1.bias"):
    assert torch.equal(_target.state_dict()[_key], _before[_key]), \
        f"{_key} changed: entries outside the prefixes must stay untouched (are you loading the whole state_dict?)."
_loaded = load_prefix(_target, _source.state_dict(), ("2.1.weight",))
assert sorted(_loaded) == ["2.1.weight"] and torch.equal(_target[2][1].weight, _source[2][1].weight), \
    f"A prefix may be a whole key, and prefixes may come as a tuple: expected ['2.1.weight'], got {_loaded!r}."
assert not list(load_prefix(_target, _source.state_dict(), [])), "With no prefixes nothing should be loaded."
_longer = nn.Sequential(*_net(), nn.ReLU(), nn.Linear(2, 1))    # one layer more than _target: keys 4.weight, 4.bias
_loaded = load_prefix(_target, _longer.state_dict(), ["0.", "4."])
assert sorted(_loaded) == ["0.bias", "0.weight"] and torch.equal(_target[0].weight, _longer[0].weight), \
    f"The model has no layer 4: only ['0.bias', '0.weight'] were loaded, but load_prefix returned {sorted(_loaded)}. " \
    "Return only keys the model has (load_state_dict reports the others as unexpected_keys)."

_bn_source, _bn_target = nn.BatchNorm1d(3), nn.BatchNorm1d(3)
_bn_source(torch.randn(16, 3) * 2 + 1)  # updates the running statistics (buffers)
_loaded = load_prefix(_bn_target, _bn_source.state_dict(), ["running_"])
assert torch.equal(_bn_target.running_mean, _bn_source.running_mean) and "running_mean" in set(_loaded), \
    "Buffers (BatchNorm's running_mean) under a prefix should be loaded and returned like parameters."
_state = {k: v.clone() for k, v in _source.state_dict().items()}
load_prefix(_target, _state, ["0."])
_state["0.weight"].add_(1.0)
assert not torch.equal(_target[0].weight, _state["0.weight"]), \
    "The model shares memory with the given state_dict: copy the values in (load_state_dict does) instead of assigning tensors."
### BEGIN HIDDEN TESTS
torch.manual_seed(21)
_layers = lambda: nn.Sequential(*[nn.Linear(3, 3) for _ in range(12)])
_source, _target = _layers(), _layers()
_before = {k: v.clone() for k, v in _target.state_dict().items()}
_loaded = load_prefix(_target, _source.state_dict(), ("1.", "3.weight"))
assert sorted(_loaded) == ["1.bias", "1.weight", "3.weight"], \
    f"Only keys that *start* with a prefix count ('11.weight' does not start with '1.'), got {sorted(_loaded)}."
for _key, _value in _target.state_dict().items():
    _expected = _source.state_dict()[_key] if _key in ("1.bias", "1.weight", "3.weight") else _before[_key]
    assert torch.equal(_value, _expected), f"{_key} has the wrong value after load_prefix."
with torch.no_grad():
    _target[1].weight.zero_()  # the model changed since the call: the same call again loads again
load_prefix(_target, _source.state_dict(), ("1.", "3.weight"))
assert torch.equal(_target[1].weight, _source[1].weight), \
    "The same call a second time, after the model changed, should load the entries again: keep nothing from an earlier call."
assert not list(load_prefix(_target, _source.state_dict(), ())), "With no prefixes nothing should be loaded."
_state = dict(_source.state_dict(), **{"1.scale": torch.ones(3), "head.weight": torch.ones(2, 3)})
_loaded = load_prefix(_layers(), _state, ["1.", "head."])
assert sorted(_loaded) == ["1.bias", "1.weight"], \
    f"Keys the model does not have ('1.scale', 'head.weight') are not loaded and not returned; got {sorted(_loaded)}."

_bn_source = nn.Sequential(nn.Linear(2, 4), nn.BatchNorm1d(4))
_bn_source(torch.randn(16, 2) * 3 + 1)
_bn_target = nn.Sequential(nn.Linear(2, 4), nn.BatchNorm1d(4))
_loaded = load_prefix(_bn_target, _bn_source.state_dict(), ["1."])
assert torch.equal(_bn_target[1].running_mean, _bn_source[1].running_mean), \
    "Buffers (BatchNorm's running_mean) under the prefix should be loaded too."
assert "1.running_var" in set(_loaded), "Loaded buffer keys should be returned too."

_state = {k: v.clone() for k, v in _source.state_dict().items()}
_fresh = _layers()
load_prefix(_fresh, _state, ["0."])
_state["0.weight"].add_(1.0)
assert not torch.equal(_fresh[0].weight, _state["0.weight"]), \
    "The model shares memory with the given state_dict: copy the values in (load_state_dict does) instead of assigning tensors."
### END HIDDEN TESTS

# %% [markdown]
# ## 4. Loading untrusted files safely
#
# Write `safe_load(path)`: it loads files holding tensors, lists, tuples, dicts,
# numbers, strings, `None` and `state_dict`s, onto the CPU, [clause cpu] and **raises an
# exception** for a file whose pickle would construct arbitrary objects or call
# arbitrary functions. [clause raises] It must never fall back to an unsafe load, [clause no_fallback] it must not
# trust a file just because the file says which classes it needs, [clause no_trusting] and it must
# not rely on torch's default for `weights_only` (`False` before torch 2.6, and
# an environment variable can still switch it off). [clause explicit_weights_only] `path` may be a string or a
# `pathlib.Path`.

# %% answer grade_id="safe_load"
def safe_load(path):
    ### BEGIN SOLUTION
    return torch.load(path, map_location="cpu", weights_only=True)
    ### END SOLUTION

# %% tests grade_id="test_safe_load" points=2
import argparse
import contextlib
import warnings


class _Payload:
    """A harmless stand-in for an attack: unpickling it would call os.getcwd()."""
    def __reduce__(self):
        return (os.getcwd, ())


def _save_as_if_from_gpu(obj, path):
    """torch.save(obj, path) with every storage tagged cuda:0, as on a GPU machine. torch.save
    asks its registry of device taggers (torch.serialization.register_package) where each
    storage lives; torch offers no public way to take a tagger out again, hence the private list."""
    tagger = (-1, lambda storage: "cuda:0", lambda storage, location: None)
    torch.serialization._package_registry.insert(0, tagger)
    try:
        torch.save(obj, path)
    finally:
        torch.serialization._package_registry.remove(tagger)


def _refused(path):
    """True if safe_load raises for the file at path."""
    try:
        safe_load(path)
    except Exception:
        return True
    return False


@contextlib.contextmanager
def _weights_only_default_off():
    """torch.load as torch before 2.6 had it: weights_only=False unless the call says otherwise.
    torch.load reads the environment variable TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD at every call
    (torch/serialization.py); its opposite, TORCH_FORCE_WEIGHTS_ONLY_LOAD, is unset meanwhile."""
    names = ("TORCH_FORCE_WEIGHTS_ONLY_LOAD", "TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD")
    saved = {name: os.environ.pop(name, None) for name in names}
    os.environ["TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD"] = "1"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch warns when it applies the variable
            yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


with tempfile.TemporaryDirectory() as _folder:
    _path = os.path.join(_folder, "plain.pt")
    torch.save({"w": torch.arange(3), "epoch": 4, "pair": (1, None)}, _path)
    try:
        _back = safe_load(_path)
    except Exception as _error:
        raise AssertionError("safe_load failed on a plain dict of tensors and numbers: load it with torch.load "
                             "(weights_only=True), which knows how tensors are stored.") from _error
    assert isinstance(_back, dict) and _back["epoch"] == 4 and torch.equal(_back["w"], torch.arange(3)), \
        "safe_load should load a plain dict of tensors and numbers unchanged."
    assert _back["pair"] == (1, None), "A tuple (with None in it) should load unchanged."
    torch.manual_seed(30)
    _layer = nn.Linear(3, 2)
    torch.save(_layer.state_dict(), Path(_folder) / "layer.pt")
    _fresh = nn.Linear(3, 2)
    _fresh.load_state_dict(safe_load(Path(_folder) / "layer.pt"))
    assert torch.equal(_fresh.weight, _layer.weight), "A state_dict loaded with safe_load (from a pathlib.Path) should restore a layer exactly."
    torch.save(torch.arange(4.0), Path(_folder) / "tensor.pt")
    _loaded = safe_load(Path(_folder) / "tensor.pt")
    assert isinstance(_loaded, torch.Tensor) and torch.equal(_loaded, torch.arange(4.0)) and _loaded.device.type == "cpu", \
        "A file holding a single tensor should load as that tensor, on the CPU."
    _save_as_if_from_gpu({"w": torch.arange(3.0)}, Path(_folder) / "from_gpu.pt")
    try:
        _loaded = safe_load(Path(_folder) / "from_gpu.pt")
    except Exception as _error:
        raise AssertionError("safe_load failed on a file saved on a GPU, which this machine may not have: load "
                             "onto the CPU (map_location).") from _error
    assert torch.equal(_loaded["w"].cpu(), torch.arange(3.0)) and _loaded["w"].device.type == "cpu", \
        f"A file saved on a GPU should load onto the CPU, got a tensor on {_loaded['w'].device}: pass map_location."
    _evil = os.path.join(_folder, "evil.pt")
    torch.save({"w": torch.ones(2), "extra": _Payload()}, _evil)
    assert _refused(_evil), \
        "safe_load ran a malicious pickle instead of raising: load with weights_only=True and never fall back to weights_only=False."
    with _weights_only_default_off():
        _refused_anyway = _refused(_evil)
    assert _refused_anyway, \
        "Where torch.load's default is weights_only=False (torch before 2.6, or TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1), " \
        "safe_load ran a malicious pickle: pass weights_only=True yourself instead of relying on the default."
    _odd = os.path.join(_folder, "hyperparameters.pt")
    torch.save({"w": torch.ones(2), "args": argparse.Namespace(lr=0.1)}, _odd)
    assert _refused(_odd), \
        "safe_load built an argparse.Namespace, an object of a class the file chose: refuse it (weights_only=True " \
        "does), and never allow whatever globals the file asks for."
### BEGIN HIDDEN TESTS
with tempfile.TemporaryDirectory() as _folder:
    _folder = Path(_folder)
    torch.manual_seed(30)
    _net = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4))
    torch.save(_net.state_dict(), _folder / "net.pt")
    _fresh = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4))
    _fresh.load_state_dict(safe_load(_folder / "net.pt"))
    assert all(torch.equal(a, b) for a, b in zip(_fresh.state_dict().values(), _net.state_dict().values())), \
        "A state_dict loaded with safe_load should restore the model exactly."
    _nested = [torch.ones(2), (1, 2.5, "text", None), {"inner": [torch.zeros(1), True]}]
    torch.save(_nested, _folder / "nested.pt")
    _back = safe_load(str(_folder / "nested.pt"))
    assert isinstance(_back, list) and _back[1] == (1, 2.5, "text", None) and _back[2]["inner"][1] is True, \
        "Nested lists, tuples, dicts and plain values should load unchanged."
    _tensor = torch.randn(2, 3)
    torch.save(_tensor, _folder / "tensor.pt")
    _loaded = safe_load(_folder / "tensor.pt")
    assert torch.equal(_loaded, _tensor) and _loaded.device.type == "cpu", \
        "A single tensor should load unchanged onto the CPU."
    torch.save([1, [2, {"deep": _Payload()}]], _folder / "deep.pt")
    assert _refused(_folder / "deep.pt"), "A malicious object nested deep inside a list must be refused as well."
    torch.save([argparse.Namespace(seed=1)], _folder / "namespace.pt")
    assert _refused(str(_folder / "namespace.pt")), "An object of an arbitrary class inside a list must be refused as well."
    with _weights_only_default_off():
        _refused_anyway = _refused(_folder / "deep.pt") and _refused(_folder / "namespace.pt")
    assert _refused_anyway, \
        "Where torch.load defaults to weights_only=False, safe_load built arbitrary objects: pass weights_only=True yourself."
with tempfile.TemporaryDirectory() as _folder:  # one path read twice, rewritten in between
    _path = os.path.join(_folder, "twice.pt")
    torch.save({"x": torch.ones(2)}, _path)
    safe_load(_path)
    torch.save({"x": torch.zeros(2)}, _path)
    _second = safe_load(_path)
assert torch.equal(_second["x"], torch.zeros(2)), \
    "A path read a second time, after the file was rewritten, should give the new content: read the file on every call."
### END HIDDEN TESTS

# %% [markdown]
# ## 5. In your own words
#
# Suppose you never deploy your model anywhere: it is trained and used on the
# same machine, in the same notebook. What does writing its parameters (and
# checkpoints) to disk still buy you? Give at least three concrete reasons.

# %% manual [markdown] grade_id="why_save_answer" points=2
# Model answer: (1) Recovery: a crash, a timeout on a shared cluster or a closed
# laptop does not cost the whole training run; you resume from the last
# checkpoint, and with optimizer and RNG state exactly. (2) Reproducibility and
# comparison: you can reload the exact weights behind a reported result, compare
# checkpoints from different epochs, and pick the best one (early stopping)
# instead of the last. (3) Reuse: you can start other experiments from trained
# layers (fine-tuning, transfer learning, `load_prefix`), or evaluate on new data
# later without retraining. (4) Debugging: a saved state lets you replay the step
# where the loss exploded. (5) Sharing with colleagues or a future self.

# %% [markdown]
# ## Summary
#
# - A checkpoint that resumes exactly holds the model, optimizer and scheduler
#   `state_dict`s, the epoch and every RNG state the training draws from (moved
#   back to the CPU whatever `map_location` did).
# - Write to a temporary file in the same folder, then `os.replace`: the old
#   file survives a crash, and the error still reaches the caller. (`mkstemp`
#   makes a file only its owner can read; `open(tmp, "xb")` gives the usual mode.)
# - `load_state_dict(..., strict=False)` with a filtered dict loads part of a
#   model.
# - `weights_only=True` refuses pickles that would run code; never fall back to
#   an unsafe load for files you did not write.
