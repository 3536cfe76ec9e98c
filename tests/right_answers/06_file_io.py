# Correct answers written differently from the model solution; every graded test must pass.

# %% right id=atomic_save -- imports save from torch and writes next to the target with a fixed suffix
def atomic_save(obj, path):
    from torch import save
    tmp = f"{path}.partial"
    try:
        save(obj, tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)

# %% right id=atomic_save -- pickles into memory first, then writes a NamedTemporaryFile next to the target
def atomic_save(obj, path):
    import io
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    folder = os.path.dirname(os.path.abspath(path))
    with tempfile.NamedTemporaryFile(dir=folder, delete=False) as f:
        f.write(buffer.getvalue())
    try:
        os.replace(f.name, path)
    except BaseException:
        os.remove(f.name)
        raise

# %% right id=checkpoint -- stores the scheduler only when there is one, RNG states under other names, one GPU at a time, map_location positional
def save_checkpoint(path, model, optimizer, epoch, scheduler=None):
    gpus = [torch.cuda.get_rng_state(i) for i in range(torch.cuda.device_count())]
    checkpoint = {"weights": model.state_dict(), "opt": optimizer.state_dict(), "epoch": epoch,
                  "rng": {"torch": torch.random.get_rng_state(), "python": random.getstate(), "gpus": gpus}}
    if scheduler is not None:
        checkpoint["sched"] = scheduler.state_dict()
    torch.save(checkpoint, path)


def load_checkpoint(path, model, optimizer, map_location="cpu", scheduler=None):
    checkpoint = torch.load(path, map_location, weights_only=True)
    model.load_state_dict(checkpoint["weights"])
    optimizer.load_state_dict(checkpoint["opt"])
    if scheduler is not None and "sched" in checkpoint:
        scheduler.load_state_dict(checkpoint["sched"])
    torch.random.set_rng_state(checkpoint["rng"]["torch"].to("cpu"))
    for i, gpu_state in enumerate(checkpoint["rng"]["gpus"]):
        torch.cuda.set_rng_state(gpu_state.to("cpu"), i)
    random.setstate(checkpoint["rng"]["python"])
    return int(checkpoint["epoch"])

# %% right id=load_prefix -- copies each chosen tensor into the model's own state_dict tensors with copy_
def load_prefix(model, state_dict, prefixes):
    own = model.state_dict()
    loaded = set()
    with torch.no_grad():
        for key, value in state_dict.items():
            if any(key.startswith(prefix) for prefix in prefixes) and key in own:
                own[key].copy_(value)
                loaded.add(key)
    return loaded

# %% right id=safe_load -- weights_only=True with the file memory-mapped
def safe_load(path):
    return torch.load(str(path), map_location=torch.device("cpu"), weights_only=True, mmap=True)

# %% right id=checkpoint -- an OrderedDict written through open file objects, the default generator's get_state/set_state, every CUDA generator (none here), weights_only=False for its own file
def save_checkpoint(path, model, optimizer, epoch, scheduler=None):
    from collections import OrderedDict
    state = OrderedDict(epoch=epoch, model=model.state_dict(), optimizer=optimizer.state_dict())
    state["scheduler"] = None if scheduler is None else scheduler.state_dict()
    state["generator"] = torch.default_generator.get_state()
    state["cuda_generators"] = torch.cuda.get_rng_state_all()
    state["random"] = random.getstate()
    with open(path, "wb") as f:
        torch.save(state, f)


def load_checkpoint(path, model, optimizer, map_location="cpu", scheduler=None):
    with open(path, "rb") as f:
        state = torch.load(f, map_location=map_location, weights_only=False)  # a file we wrote ourselves
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    if scheduler is not None:
        scheduler.load_state_dict(state["scheduler"])
    torch.default_generator.set_state(state["generator"].cpu())
    torch.cuda.set_rng_state_all([s.cpu() for s in state["cuda_generators"]])
    random.setstate(state["random"])
    return state["epoch"]

# %% right id=checkpoint -- a tuple instead of a dict, unpacked by position; the epoch stored as a tensor
def save_checkpoint(path, model, optimizer, epoch, scheduler=None):
    schedule = scheduler.state_dict() if scheduler else {}
    torch.save((model.state_dict(), optimizer.state_dict(), schedule, torch.tensor(epoch),
                torch.get_rng_state(), torch.cuda.get_rng_state_all(), random.getstate()), path)


def load_checkpoint(path, model, optimizer, map_location="cpu", scheduler=None):
    weights, optimizer_state, schedule, epoch, torch_rng, gpu_rngs, python_rng = torch.load(
        path, map_location=map_location, weights_only=True)
    model.load_state_dict(weights)
    optimizer.load_state_dict(optimizer_state)
    if scheduler:
        scheduler.load_state_dict(schedule)
    torch.set_rng_state(torch_rng.to("cpu"))
    torch.cuda.set_rng_state_all([state.cpu() for state in gpu_rngs])
    random.setstate(python_rng)
    return epoch.item()

# %% right id=atomic_save -- pathlib all the way: a hidden temporary name next to path, Path.replace, unlink on failure
def atomic_save(obj, path):
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        torch.save(obj, tmp)
        tmp.replace(path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise

# %% right id=load_prefix -- merges the chosen entries into the model's own OrderedDict and loads it strictly, returns a tuple
def load_prefix(model, state_dict, prefixes):
    from collections import OrderedDict
    merged = OrderedDict(model.state_dict())
    loaded = tuple(key for key in state_dict if key in merged and any(key.startswith(p) for p in prefixes))
    for key in loaded:
        merged[key] = state_dict[key]
    model.load_state_dict(merged)
    return loaded

# %% right id=load_prefix -- a regular expression of the escaped prefixes, the keys the model has, a sorted list
def load_prefix(model, state_dict, prefixes):
    import re
    if not prefixes:  # an empty pattern would match every key
        return []
    pattern = re.compile("|".join(re.escape(prefix) for prefix in prefixes))
    own = set(model.state_dict())
    chosen = {key: value for key, value in state_dict.items() if pattern.match(key) and key in own}
    model.load_state_dict(chosen, strict=False)
    return sorted(chosen)

# %% right id=load_prefix -- named_parameters and named_buffers, copied into with detach().copy_
def load_prefix(model, state_dict, prefixes):
    tensors = dict(model.named_parameters())
    tensors.update(model.named_buffers())
    loaded = set()
    for key, value in state_dict.items():
        if key in tensors and key.startswith(tuple(prefixes)):
            tensors[key].detach().copy_(value)
            loaded.add(key)
    return loaded

# %% right id=safe_load -- an open binary file handed to torch.load
def safe_load(path):
    with open(path, "rb") as f:
        return torch.load(f, map_location="cpu", weights_only=True)

# %% right id=safe_load -- the classic map_location function that keeps every storage on the CPU
def safe_load(path):
    return torch.load(path, map_location=lambda storage, location: storage, weights_only=True)

# %% right id=safe_load -- reads the bytes first, loads from memory
def safe_load(path):
    import io
    return torch.load(io.BytesIO(Path(path).read_bytes()), map_location="cpu", weights_only=True)
