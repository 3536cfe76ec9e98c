# Wrong answers students really write for exercise 6, one cell each.
# Each must lose exactly its own item's points (see tools/cells.py).

# %% wrong id=checkpoint clause=whole_state fails=test_checkpoint,test_checkpoint_gpu,test_checkpoint_map_location,test_checkpoint_scheduler -- saves model, optimizer and epoch but not the RNG state
def save_checkpoint(path, model, optimizer, epoch, scheduler=None):
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": epoch,
                "scheduler": scheduler.state_dict() if scheduler else None}, path)


def load_checkpoint(path, model, optimizer, map_location="cpu", scheduler=None):
    state = torch.load(path, map_location=map_location)
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    if scheduler:
        scheduler.load_state_dict(state["scheduler"])
    return state["epoch"]

# %% wrong id=checkpoint clause=whole_state fails=test_checkpoint,test_checkpoint_gpu,test_checkpoint_map_location,test_checkpoint_scheduler -- saves only the model, so momentum and Adam moments restart from zero
def save_checkpoint(path, model, optimizer, epoch, scheduler=None):
    torch.save({"model": model.state_dict(), "epoch": epoch, "rng": torch.get_rng_state(),
                "python_rng": random.getstate(), "scheduler": scheduler.state_dict() if scheduler else None}, path)


def load_checkpoint(path, model, optimizer, map_location="cpu", scheduler=None):
    state = torch.load(path, map_location=map_location)
    model.load_state_dict(state["model"])
    if scheduler:
        scheduler.load_state_dict(state["scheduler"])
    torch.set_rng_state(state["rng"].cpu())
    random.setstate(state["python_rng"])
    return state["epoch"]

# %% wrong id=checkpoint clause=whole_state fails=test_checkpoint,test_checkpoint_gpu,test_checkpoint_map_location,test_checkpoint_scheduler -- stores the initial seed and re-seeds, instead of the RNG state itself
def save_checkpoint(path, model, optimizer, epoch, scheduler=None):
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": epoch,
                "seed": torch.initial_seed(), "python_rng": random.getstate(),
                "scheduler": scheduler.state_dict() if scheduler else None}, path)


def load_checkpoint(path, model, optimizer, map_location="cpu", scheduler=None):
    state = torch.load(path, map_location=map_location)
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    if scheduler:
        scheduler.load_state_dict(state["scheduler"])
    torch.manual_seed(state["seed"])
    random.setstate(state["python_rng"])
    return state["epoch"]

# %% wrong id=checkpoint clause=whole_state fails=test_checkpoint,test_checkpoint_gpu,test_checkpoint_map_location,test_checkpoint_scheduler -- saves torch's RNG state but not the state of Python's random module
def save_checkpoint(path, model, optimizer, epoch, scheduler=None):
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": epoch,
                "rng": torch.get_rng_state(), "scheduler": scheduler.state_dict() if scheduler else None}, path)


def load_checkpoint(path, model, optimizer, map_location="cpu", scheduler=None):
    state = torch.load(path, map_location=map_location)
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    if scheduler:
        scheduler.load_state_dict(state["scheduler"])
    torch.set_rng_state(state["rng"].cpu())
    return state["epoch"]

# %% wrong id=checkpoint clause=epoch fails=test_checkpoint,test_checkpoint_gpu,test_checkpoint_map_location,test_checkpoint_scheduler -- returns the next epoch instead of the saved one
def save_checkpoint(path, model, optimizer, epoch, scheduler=None):
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": epoch,
                "rng": torch.get_rng_state(), "python_rng": random.getstate(),
                "scheduler": scheduler.state_dict() if scheduler else None}, path)


def load_checkpoint(path, model, optimizer, map_location="cpu", scheduler=None):
    state = torch.load(path, map_location=map_location)
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    if scheduler:
        scheduler.load_state_dict(state["scheduler"])
    torch.set_rng_state(state["rng"].cpu())
    random.setstate(state["python_rng"])
    return state["epoch"] + 1

# %% wrong id=checkpoint clause=map_location fails=test_checkpoint_map_location -- ignores map_location and always loads onto the CPU
def save_checkpoint(path, model, optimizer, epoch, scheduler=None):
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": epoch,
                "rng": torch.get_rng_state(), "python_rng": random.getstate(),
                "cuda_rng": torch.cuda.get_rng_state_all(),
                "scheduler": scheduler.state_dict() if scheduler else None}, path)


def load_checkpoint(path, model, optimizer, map_location="cpu", scheduler=None):
    state = torch.load(path, map_location="cpu")
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    if scheduler:
        scheduler.load_state_dict(state["scheduler"])
    torch.set_rng_state(state["rng"])
    torch.cuda.set_rng_state_all([s.cpu() for s in state["cuda_rng"]])
    random.setstate(state["python_rng"])
    return state["epoch"]

# %% wrong id=checkpoint clause=scheduler fails=test_checkpoint_scheduler -- the lecture's functions pasted as they are: no place for a scheduler
def save_checkpoint(path, model, optimizer, epoch):
    torch.save({"model": model.state_dict(),
                "optimizer": optimizer.state_dict(),
                "epoch": epoch,
                "torch_rng": torch.get_rng_state(),
                "cuda_rng": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
                "python_rng": random.getstate()}, path)


def load_checkpoint(path, model, optimizer, map_location="cpu"):
    state = torch.load(path, map_location=map_location)
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    torch.set_rng_state(state["torch_rng"].cpu())
    if state["cuda_rng"]:
        torch.cuda.set_rng_state_all([s.cpu() for s in state["cuda_rng"]])
    random.setstate(state["python_rng"])
    return state["epoch"]

# %% wrong id=checkpoint clause=four_arguments fails=test_checkpoint,test_checkpoint_gpu,test_checkpoint_map_location -- makes the scheduler a required argument, so the contract's four-argument call fails
def save_checkpoint(path, model, optimizer, epoch, scheduler):
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": epoch,
                "scheduler": scheduler.state_dict(), "rng": torch.get_rng_state(),
                "python_rng": random.getstate(),
                "cuda_rng": torch.cuda.get_rng_state_all()}, path)


def load_checkpoint(path, model, optimizer, map_location="cpu", scheduler=None):
    state = torch.load(path, map_location=map_location)
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    scheduler.load_state_dict(state["scheduler"])
    torch.set_rng_state(state["rng"].cpu())
    torch.cuda.set_rng_state_all([s.cpu() for s in state["cuda_rng"]])
    random.setstate(state["python_rng"])
    return state["epoch"]

# %% wrong id=checkpoint clause=scheduler fails=test_checkpoint_scheduler -- saves the scheduler's state but never loads it into the new scheduler
def save_checkpoint(path, model, optimizer, epoch, scheduler=None):
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": epoch,
                "rng": torch.get_rng_state(), "python_rng": random.getstate(),
                "cuda_rng": torch.cuda.get_rng_state_all(),
                "scheduler": scheduler.state_dict() if scheduler else None}, path)


def load_checkpoint(path, model, optimizer, map_location="cpu", scheduler=None):
    state = torch.load(path, map_location=map_location)
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    torch.set_rng_state(state["rng"].cpu())
    torch.cuda.set_rng_state_all([s.cpu() for s in state["cuda_rng"]])
    random.setstate(state["python_rng"])
    return state["epoch"]

# %% wrong id=checkpoint clause=scheduler fails=test_checkpoint_scheduler -- stores the scheduler object itself, which torch.load's weights_only default refuses
def save_checkpoint(path, model, optimizer, epoch, scheduler=None):
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": epoch,
                "rng": torch.get_rng_state(), "python_rng": random.getstate(),
                "cuda_rng": torch.cuda.get_rng_state_all(), "scheduler": scheduler}, path)


def load_checkpoint(path, model, optimizer, map_location="cpu", scheduler=None):
    state = torch.load(path, map_location=map_location)
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    if scheduler:
        scheduler.load_state_dict(state["scheduler"].state_dict())
    torch.set_rng_state(state["rng"].cpu())
    torch.cuda.set_rng_state_all([s.cpu() for s in state["cuda_rng"]])
    random.setstate(state["python_rng"])
    return state["epoch"]

# %% wrong id=checkpoint clause=scheduler fails=test_checkpoint_scheduler -- fast-forwards a fresh scheduler by stepping it `epoch` times instead of loading its state
def save_checkpoint(path, model, optimizer, epoch, scheduler=None):
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": epoch,
                "rng": torch.get_rng_state(), "python_rng": random.getstate(),
                "cuda_rng": torch.cuda.get_rng_state_all()}, path)


def load_checkpoint(path, model, optimizer, map_location="cpu", scheduler=None):
    state = torch.load(path, map_location=map_location)
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    if scheduler:
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "lr_scheduler.step() before optimizer.step()"
            for _ in range(state["epoch"]):
                scheduler.step()
    torch.set_rng_state(state["rng"].cpu())
    torch.cuda.set_rng_state_all([s.cpu() for s in state["cuda_rng"]])
    random.setstate(state["python_rng"])
    return state["epoch"]

# %% wrong id=atomic_save clause=crashes_unchanged fails=test_atomic_save_crashes -- overwrites the file in place with torch.save
def atomic_save(obj, path):
    torch.save(obj, path)

# %% wrong id=atomic_save clause=crashes_unchanged fails=test_atomic_save_crashes -- deletes the old file first, then writes and renames
def atomic_save(obj, path):
    if os.path.exists(path):
        os.remove(path)
    tmp = str(path) + ".tmp"
    torch.save(obj, tmp)
    os.replace(tmp, path)

# %% wrong id=atomic_save clause=crashes_unchanged fails=test_atomic_save_crashes -- moves the temporary file into place in a finally block, even after a failure
def atomic_save(obj, path):
    tmp = str(path) + ".tmp"
    try:
        torch.save(obj, tmp)
    finally:
        os.replace(tmp, path)

# %% wrong id=atomic_save clause=path_types fails=test_atomic_save,test_atomic_save_crashes -- builds the temporary name with + and breaks on a pathlib.Path
def atomic_save(obj, path):
    tmp = path + ".tmp"
    try:
        torch.save(obj, tmp)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise

# %% wrong id=atomic_save clause=crashes_no_temp fails=test_atomic_save_crashes -- leaves its temporary file behind when the write fails
def atomic_save(obj, path):
    tmp = f"{path}.tmp"
    torch.save(obj, tmp)
    os.replace(tmp, path)

# %% wrong id=atomic_save clause=crashes_same_folder fails=test_atomic_save_crashes -- writes the temporary file in the system's temp folder, maybe another file system
def atomic_save(obj, path):
    fd, tmp = tempfile.mkstemp(suffix=".pt")
    os.close(fd)
    try:
        torch.save(obj, tmp)
        os.replace(tmp, path)
    except BaseException:
        os.remove(tmp)
        raise

# %% wrong id=atomic_save clause=crashes_same_folder fails=test_atomic_save_crashes -- pickles into memory, then writes the bytes to a temporary file in the system's temp folder
def atomic_save(obj, path):
    import io

    buffer = io.BytesIO()
    torch.save(obj, buffer)
    fd, tmp = tempfile.mkstemp()
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(buffer.getvalue())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise

# %% wrong id=atomic_save clause=crashes_error fails=test_atomic_save_crashes -- catches the error and carries on, so the caller thinks the save worked
def atomic_save(obj, path):
    tmp = f"{path}.tmp"
    try:
        torch.save(obj, tmp)
        os.replace(tmp, path)
    except Exception:  # "a failed save should not stop the training run"
        if os.path.exists(tmp):
            os.remove(tmp)

# %% wrong id=atomic_save clause=crashes_replace fails=test_atomic_save,test_atomic_save_crashes -- copies the temporary file over path (not atomic) and keeps the copy
def atomic_save(obj, path):
    import shutil
    tmp = f"{path}.tmp"
    try:
        torch.save(obj, tmp)
    except BaseException:
        os.remove(tmp)
        raise
    shutil.copyfile(tmp, path)

# %% wrong id=atomic_save clause=crashes_unchanged fails=test_atomic_save_crashes -- pickles into memory first (so a pickling error cannot touch path), then writes path itself
def atomic_save(obj, path):
    import io
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    with open(path, "wb") as f:
        f.write(buffer.getvalue())

# %% wrong id=atomic_save clause=crashes_unchanged fails=test_atomic_save_crashes -- pickles into memory first, then writes path with Path.write_bytes
def atomic_save(obj, path):
    import io
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    Path(path).write_bytes(buffer.getvalue())

# %% wrong id=atomic_save clause=crashes_no_temp fails=test_atomic_save_crashes -- removes its temporary file when torch.save fails, but not when os.replace does
def atomic_save(obj, path):
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    os.close(fd)
    try:
        torch.save(obj, tmp)
    except BaseException:
        os.remove(tmp)
        raise
    os.replace(tmp, path)

# %% wrong id=load_prefix clause=starts_with,others_untouched -- loads the whole state_dict
def load_prefix(model, state_dict, prefixes):
    model.load_state_dict(state_dict, strict=False)
    return list(state_dict)

# %% wrong id=load_prefix clause=starts_with -- tests `prefix in key` instead of key.startswith(prefix)
def load_prefix(model, state_dict, prefixes):
    chosen = {k: v for k, v in state_dict.items() if any(p in k for p in prefixes)}
    model.load_state_dict(chosen, strict=False)
    return list(chosen)

# %% wrong id=load_prefix clause=copies -- assigns into model.state_dict(), which is a new dict each call
def load_prefix(model, state_dict, prefixes):
    loaded = []
    for key, value in state_dict.items():
        if key.startswith(tuple(prefixes)):
            model.state_dict()[key] = value
            loaded.append(key)
    return loaded

# %% wrong id=load_prefix clause=no_sharing -- rebinds .data to the given tensors instead of copying them
def load_prefix(model, state_dict, prefixes):
    tensors = dict(model.named_parameters())
    tensors.update(model.named_buffers())
    loaded = []
    for key, value in state_dict.items():
        if key.startswith(tuple(prefixes)):
            tensors[key].data = value
            loaded.append(key)
    return loaded

# %% wrong id=load_prefix clause=starts_with -- passes the list of prefixes straight to str.startswith, which takes a str or a tuple
def load_prefix(model, state_dict, prefixes):
    chosen = {k: v for k, v in state_dict.items() if k.startswith(prefixes)}
    model.load_state_dict(chosen, strict=False)
    return list(chosen)

# %% wrong id=load_prefix clause=copies -- picks the right keys and returns them, but never loads them into the model
def load_prefix(model, state_dict, prefixes):
    chosen = {k: v for k, v in state_dict.items() if k.startswith(tuple(prefixes))}
    model.state_dict().update(chosen)
    return list(chosen)

# %% wrong id=load_prefix clause=returns_loaded -- returns what load_state_dict returns (missing and unexpected keys), not the loaded keys
def load_prefix(model, state_dict, prefixes):
    chosen = {k: v for k, v in state_dict.items() if k.startswith(tuple(prefixes))}
    return model.load_state_dict(chosen, strict=False)

# %% wrong id=load_prefix clause=unknown_keys -- returns every key under a prefix, also those the model does not have and never loaded
def load_prefix(model, state_dict, prefixes):
    chosen = {k: v for k, v in state_dict.items() if k.startswith(tuple(prefixes))}
    model.load_state_dict(chosen, strict=False)
    return list(chosen)

# %% wrong id=load_prefix clause=buffers -- copies parameters only, so buffers such as BatchNorm's running statistics stay behind
def load_prefix(model, state_dict, prefixes):
    params = dict(model.named_parameters())
    loaded = []
    with torch.no_grad():
        for key, value in state_dict.items():
            if key.startswith(tuple(prefixes)) and key in params:
                params[key].copy_(value)
                loaded.append(key)
    return loaded

# %% wrong id=safe_load clause=raises -- turns weights_only off
def safe_load(path):
    return torch.load(path, map_location="cpu", weights_only=False)

# %% wrong id=safe_load clause=no_fallback -- falls back to an unsafe load when the safe one refuses
def safe_load(path):
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except Exception:
        return torch.load(path, map_location="cpu", weights_only=False)

# %% wrong id=safe_load clause=raises -- uses pickle directly
def safe_load(path):
    import pickle
    with open(path, "rb") as f:
        return pickle.load(f)

# %% wrong id=safe_load clause=no_trusting -- keeps weights_only=True but allows every global the file asks for
def safe_load(path):
    import importlib
    wanted = []
    for name in torch.serialization.get_unsafe_globals_in_checkpoint(path):
        module, _, attribute = name.rpartition(".")
        wanted.append(getattr(importlib.import_module(module), attribute))
    with torch.serialization.safe_globals(wanted):
        return torch.load(path, map_location="cpu", weights_only=True)

# %% wrong id=safe_load clause=raises -- swallows the refusal and returns None instead of raising
def safe_load(path):
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except Exception:
        return None

# %% wrong id=safe_load clause=cpu -- loads safely but leaves tensors on the device they were saved from
def safe_load(path):
    return torch.load(path, weights_only=True)

# %% wrong id=safe_load clause=explicit_weights_only -- relies on torch.load's default weights_only, which is True only since torch 2.6 and can be switched off
def safe_load(path):
    return torch.load(path, map_location="cpu")

# %% wrong id=checkpoint clause=gpu fails=test_checkpoint_gpu -- restores torch's CPU generator and Python's, but not the GPUs' generators
def save_checkpoint(path, model, optimizer, epoch, scheduler=None):
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": epoch,
                "rng": torch.get_rng_state(), "python_rng": random.getstate(),
                "scheduler": scheduler.state_dict() if scheduler else None}, path)


def load_checkpoint(path, model, optimizer, map_location="cpu", scheduler=None):
    state = torch.load(path, map_location=map_location)
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    if scheduler:
        scheduler.load_state_dict(state["scheduler"])
    torch.set_rng_state(state["rng"].cpu())
    random.setstate(state["python_rng"])
    return state["epoch"]

# %% wrong id=atomic_save clause=closes -- fsyncs the folder after the rename, but never closes the folder it opened for that
def atomic_save(obj, path):
    tmp = f"{path}.tmp"
    try:
        torch.save(obj, tmp)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise
    os.fsync(os.open(os.path.dirname(os.path.abspath(path)), os.O_RDONLY))

# %% wrong id=checkpoint clause=map_location_rng fails=test_checkpoint_map_location seen_on=device says=.cpu() -- restores torch's RNG state as map_location left it, which torch.set_rng_state refuses on a GPU
def save_checkpoint(path, model, optimizer, epoch, scheduler=None):
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": epoch,
                "rng": torch.get_rng_state(), "python_rng": random.getstate(),
                "cuda_rng": torch.cuda.get_rng_state_all(),
                "scheduler": scheduler.state_dict() if scheduler else None}, path)


def load_checkpoint(path, model, optimizer, map_location="cpu", scheduler=None):
    state = torch.load(path, map_location=map_location)
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    if scheduler:
        scheduler.load_state_dict(state["scheduler"])
    torch.set_rng_state(state["rng"])
    torch.cuda.set_rng_state_all([s.cpu() for s in state["cuda_rng"]])
    random.setstate(state["python_rng"])
    return state["epoch"]

# %% wrong id=checkpoint clause=file_holds fails=test_checkpoint says=new_process -- writes only the epoch and the RNG state to the file and keeps the rest in a dict of the notebook, which a new process does not have
import copy

_kept_states = {}


def save_checkpoint(path, model, optimizer, epoch, scheduler=None):
    _kept_states[str(path)] = copy.deepcopy({
        "model": model.state_dict(), "optimizer": optimizer.state_dict(),
        "scheduler": scheduler.state_dict() if scheduler else None,
        "cuda_rng": torch.cuda.get_rng_state_all(), "python_rng": random.getstate()})
    torch.save({"epoch": epoch, "rng": torch.get_rng_state()}, path)


def load_checkpoint(path, model, optimizer, map_location="cpu", scheduler=None):
    state = dict(torch.load(path, map_location=map_location), **_kept_states[str(path)])
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    if scheduler:
        scheduler.load_state_dict(state["scheduler"])
    torch.set_rng_state(state["rng"].cpu())
    torch.cuda.set_rng_state_all([s.cpu() for s in state["cuda_rng"]])
    random.setstate(state["python_rng"])
    return state["epoch"]
