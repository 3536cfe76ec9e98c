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
