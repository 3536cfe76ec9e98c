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
