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
# Use only `torch`, the standard library, `numpy` and `matplotlib`. The tests
# write their files into temporary directories; so should you.

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
# ## 1. Checkpoints that resume exactly
#
# Write two functions:
#
# - `save_checkpoint(path, model, optimizer, epoch)` writes one file at `path`
#   holding everything needed to continue training;
# - `load_checkpoint(path, model, optimizer, map_location="cpu")` restores that
#   state into an existing `model` and `optimizer` (passing `map_location` on to
#   `torch.load`) and **returns the saved epoch**.
#
# The contract: a run that saves a checkpoint, "crashes", and resumes in a fresh
# model and optimizer from that file must end with **exactly** the same
# parameters (`torch.equal`, not `allclose`) as a run that never stopped. The
# models in the tests use dropout and the training loop draws random data, so
# think about everything that influences the next steps.

# %% answer grade_id="checkpoint"
def save_checkpoint(path, model, optimizer, epoch):
    ### BEGIN SOLUTION
    torch.save({
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "epoch": epoch,
        "torch_rng": torch.get_rng_state(),
        "cuda_rng": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
        "python_rng": random.getstate(),
    }, path)
    ### END SOLUTION


def load_checkpoint(path, model, optimizer, map_location="cpu"):
    ### BEGIN SOLUTION
    state = torch.load(path, map_location=map_location)
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    torch.set_rng_state(state["torch_rng"].cpu())
    if state["cuda_rng"]:
        torch.cuda.set_rng_state_all([s.cpu() for s in state["cuda_rng"]])
    random.setstate(state["python_rng"])
    return state["epoch"]
    ### END SOLUTION

# %% tests grade_id="test_checkpoint" points=4
def _make_model():
    return nn.Sequential(nn.Linear(5, 16), nn.ReLU(), nn.Dropout(0.5), nn.Linear(16, 1))


def _train(model, optimizer, steps):
    """A few steps on random data; dropout and the data both draw from the global RNG."""
    model.train()
    for _ in range(steps):
        x = torch.randn(8, 5)
        loss = (model(x) - x.sum(1, keepdim=True)).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


def _check_resume(make_optimizer, epoch, path_type=str, map_location="cpu"):
    """Train 3+3 steps without stopping, then 3 steps, save, crash, load and 3 more: compare."""
    torch.manual_seed(10)
    model = _make_model()
    optimizer = make_optimizer(model.parameters())
    _train(model, optimizer, 3)
    _train(model, optimizer, 3)
    reference = [p.detach().clone() for p in model.parameters()]

    with tempfile.TemporaryDirectory() as folder:
        path = path_type(os.path.join(folder, "checkpoint.pt"))
        torch.manual_seed(10)
        model = _make_model()
        optimizer = make_optimizer(model.parameters())
        _train(model, optimizer, 3)
        saved_params = [p.detach().clone() for p in model.parameters()]
        saved_rng = torch.get_rng_state()
        save_checkpoint(path, model, optimizer, epoch)
        assert os.path.exists(path), "save_checkpoint should write its file at the given path."

        # The crash: a new process with another RNG state and a fresh model and optimizer.
        torch.manual_seed(999)
        model = _make_model()
        optimizer = make_optimizer(model.parameters())
        got = load_checkpoint(path, model, optimizer, map_location=map_location)
        assert got == epoch, f"load_checkpoint should return the saved epoch {epoch}, got {got!r}."
        assert all(torch.equal(p, q) for p, q in zip(model.parameters(), saved_params)), \
            "After loading, the model's parameters differ from the saved ones: is the model's state_dict saved and loaded?"
        assert torch.equal(torch.get_rng_state(), saved_rng), \
            "After loading, the random number generator is not where it was at saving time: save torch.get_rng_state() and restore it with torch.set_rng_state()."
        _train(model, optimizer, 3)
    assert all(torch.equal(p, q) for p, q in zip(model.parameters(), reference)), \
        "The resumed run drifts from the uninterrupted one: is the optimizer's state_dict (momentum, Adam moments) saved and loaded?"


_check_resume(lambda params: torch.optim.SGD(params, lr=0.05, momentum=0.9), epoch=3)
### BEGIN HIDDEN TESTS
_check_resume(lambda params: torch.optim.Adam(params, lr=0.01), epoch=17, path_type=Path)
_check_resume(lambda params: torch.optim.AdamW(params, lr=0.02, weight_decay=0.1), epoch=0)
_calls = []
def _counting_location(storage, location):
    _calls.append(location)
    return storage
_check_resume(lambda params: torch.optim.SGD(params, lr=0.05, momentum=0.5), epoch=5,
              map_location=_counting_location)
assert _calls, "load_checkpoint should pass its map_location argument on to torch.load."
### END HIDDEN TESTS

# %% [markdown]
# ## 2. Atomic saving
#
# Write `atomic_save(obj, path)`, which saves `obj` with `torch.save` so that a
# crash in the middle of the write can never leave a partial file at `path`:
#
# - if the write fails, whatever file was at `path` before is still there,
#   unchanged (and if there was none, there is still none);
# - the error still reaches the caller, who must not believe the save worked;
# - no temporary file is left behind, after a success or a failure.
#
# `path` may be a string or a `pathlib.Path`.
#
# Write to a temporary file **in the same folder** as `path`, then move it into
# place with `os.replace`, which is atomic within one file system. Another
# folder (such as `/tmp`) may be on another file system, and there `os.replace`
# fails.

# %% answer grade_id="atomic_save"
def atomic_save(obj, path):
    ### BEGIN SOLUTION
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            torch.save(obj, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        os.remove(tmp)
        raise
    ### END SOLUTION

# %% tests grade_id="test_atomic_save" points=3
# The crash is real, not simulated by replacing torch.save (however you
# imported it): an object that raises while torch.save pickles it, when the
# file being written is already open. A save straight into `path` leaves a
# broken file there. (Making the folder read-only would not do: root, as on
# Colab, may write into it anyway.)
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
    elsewhere = [f for f in crash.open_files - before_open if os.path.dirname(f) != os.path.realpath(folder)]
    assert not elsewhere, \
        f"The temporary file was written at {elsewhere[0]}, not in the folder of path: os.replace cannot move a file across file systems, so keep it next to path."
    left = sorted(set(os.listdir(folder)) - before_files)
    assert not left, f"A failed save left {left} behind: remove the temporary file when the write fails."


with tempfile.TemporaryDirectory() as _folder:
    _path = os.path.join(_folder, "model.pt")
    atomic_save({"w": torch.arange(5.0), "epoch": 1}, _path)
    _back = torch.load(_path)
    assert _back["epoch"] == 1 and torch.equal(_back["w"], torch.arange(5.0)), \
        "A normal atomic_save should leave a file at path that torch.load reads back unchanged."
    assert os.listdir(_folder) == ["model.pt"], \
        f"After a successful save the folder should hold only the file at path, not {sorted(os.listdir(_folder))}."
    _failing_save(_path)
    try:
        _back = torch.load(_path)
    except Exception as _error:
        raise AssertionError("After a save that failed halfway, the file at path is broken: "
                             "are you writing into path itself instead of a temporary file?") from _error
    assert _back["epoch"] == 1 and torch.equal(_back["w"], torch.arange(5.0)), \
        "After a failed save, path should still hold the previous checkpoint: is a partial file moved into place?"
### BEGIN HIDDEN TESTS
with tempfile.TemporaryDirectory() as _folder:
    _path = Path(_folder) / "weights.pt"
    _failing_save(_path)
    assert not _path.exists(), \
        "A failed very first save must leave no file at path: only a complete file may appear there."
    atomic_save({"w": torch.ones(3)}, _path)
    atomic_save([torch.full((2,), 7.0), "second"], _path)
    _back = torch.load(_path)
    assert _back[1] == "second" and torch.equal(_back[0], torch.full((2,), 7.0)), \
        "Saving again to the same Path should replace the old file with the new object."
    _failing_save(_path)
    _back = torch.load(_path)
    assert _back[1] == "second", "When pickling fails halfway through torch.save, the previous file at path must stay intact."
    _subfolder = Path(_folder) / "run"
    _subfolder.mkdir()
    atomic_save({"epoch": 3}, str(_subfolder / "last.pt"))
    assert torch.load(_subfolder / "last.pt")["epoch"] == 3, "atomic_save should work for a path in any folder."
    _failing_save(str(_subfolder / "last.pt"))
    assert sorted(p.name for p in Path(_folder).rglob("*")) == ["last.pt", "run", "weights.pt"], \
        f"Only the two checkpoints should be left, found {sorted(p.name for p in Path(_folder).rglob('*'))}."
### END HIDDEN TESTS

# %% [markdown]
# ## 3. Loading part of a model
#
# Transfer learning often reuses only some layers of a trained network. Write
# `load_prefix(model, state_dict, prefixes)`: copy into `model` only the entries
# of `state_dict` whose keys start with one of the strings in `prefixes` (a list
# or tuple), leave every other parameter and buffer of `model` untouched, and
# return the keys that were loaded (any list, tuple or set of them).

# %% answer grade_id="load_prefix"
def load_prefix(model, state_dict, prefixes):
    ### BEGIN SOLUTION
    chosen = {key: value for key, value in state_dict.items() if key.startswith(tuple(prefixes))}
    model.load_state_dict(chosen, strict=False)
    return list(chosen)
    ### END SOLUTION

# %% tests grade_id="test_load_prefix" points=2
torch.manual_seed(20)
_source = nn.Sequential(nn.Linear(4, 6), nn.ReLU(), nn.Linear(6, 2))
_target = nn.Sequential(nn.Linear(4, 6), nn.ReLU(), nn.Linear(6, 2))
_before = {k: v.clone() for k, v in _target.state_dict().items()}
_loaded = load_prefix(_target, _source.state_dict(), ["0."])
assert _loaded is not None and sorted(_loaded) == ["0.bias", "0.weight"], \
    f"load_prefix should return the loaded keys ['0.bias', '0.weight'] (in any order), got {_loaded!r}."
assert torch.equal(_target[0].weight, _source[0].weight) and torch.equal(_target[0].bias, _source[0].bias), \
    "The entries under the prefix '0.' were not copied into the model."
assert torch.equal(_target[2].weight, _before["2.weight"]) and torch.equal(_target[2].bias, _before["2.bias"]), \
    "Entries outside the prefixes must stay untouched: are you loading the whole state_dict?"
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
assert not list(load_prefix(_target, _source.state_dict(), [])), "With no prefixes nothing should be loaded."

_bn_source = nn.Sequential(nn.Linear(2, 4), nn.BatchNorm1d(4))
_bn_source(torch.randn(16, 2) * 3 + 1)  # updates the running statistics (buffers)
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
# numbers, strings and `state_dict`s, onto the CPU, and **raises an exception**
# for a file whose pickle would construct arbitrary objects or call arbitrary
# functions. It must never fall back to an unsafe load.

# %% answer grade_id="safe_load"
def safe_load(path):
    ### BEGIN SOLUTION
    return torch.load(path, map_location="cpu", weights_only=True)
    ### END SOLUTION

# %% tests grade_id="test_safe_load" points=2
class _Payload:
    """A harmless stand-in for an attack: unpickling it would call os.getcwd()."""
    def __reduce__(self):
        return (os.getcwd, ())


with tempfile.TemporaryDirectory() as _folder:
    _path = os.path.join(_folder, "plain.pt")
    torch.save({"w": torch.arange(3), "epoch": 4}, _path)
    _back = safe_load(_path)
    assert isinstance(_back, dict) and _back["epoch"] == 4 and torch.equal(_back["w"], torch.arange(3)), \
        "safe_load should load a plain dict of tensors and numbers unchanged."
    _evil = os.path.join(_folder, "evil.pt")
    torch.save({"w": torch.ones(2), "extra": _Payload()}, _evil)
    try:
        _result = safe_load(_evil)
    except Exception:
        _result = "refused"
    assert _result == "refused", \
        "safe_load ran a malicious pickle instead of raising: load with weights_only=True and never fall back to weights_only=False."
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
    try:
        _result = safe_load(_folder / "deep.pt")
    except Exception:
        _result = "refused"
    assert _result == "refused", "A malicious object nested deep inside a list must be refused as well."
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
# - A checkpoint that resumes exactly holds the model and optimizer
#   `state_dict`s, the epoch and the RNG state.
# - Write to a temporary file in the same folder, then `os.replace`: the old
#   file survives a crash, and the error still reaches the caller.
# - `load_state_dict(..., strict=False)` with a filtered dict loads part of a
#   model.
# - `weights_only=True` refuses pickles that would run code; never fall back to
#   an unsafe load for files you did not write.
