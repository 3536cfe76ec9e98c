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

# %% right id=checkpoint -- stores the scheduler only when there is one, RNG states under other names, map_location positional
def save_checkpoint(path, model, optimizer, epoch, scheduler=None):
    checkpoint = {"weights": model.state_dict(), "opt": optimizer.state_dict(), "epoch": epoch,
                  "rng": {"torch": torch.random.get_rng_state(), "python": random.getstate()}}
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
