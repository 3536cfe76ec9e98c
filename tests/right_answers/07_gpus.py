# Correct answers written differently from the model solution; every graded test must pass.

# %% right id=try_gpu -- asks is_available() before counting, compares i < count
def try_gpu(i=0):
    if torch.cuda.is_available() and i < torch.cuda.device_count():
        return torch.device("cuda", i)
    if i == 0 and torch.backends.mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")

# %% right id=try_gpu -- builds the device from its type and index, MPS checked only for i == 0
def try_gpu(i=0):
    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if i < count:
        return torch.device("cuda", i)
    if i == 0 and torch.backends.mps.is_available():
        return torch.device("mps", 0)
    return torch.device("cpu")

# %% right id=try_gpu -- the tutorials' MPS test, is_available() and is_built()
def try_gpu(i=0):
    if i < torch.cuda.device_count():
        return torch.device(f"cuda:{i}")
    if i == 0 and torch.backends.mps.is_available() and torch.backends.mps.is_built():
        return torch.device("mps")
    return torch.device("cpu")

# %% right id=try_all_gpus -- torch.mps's own question, torch.mps.is_available()
def try_all_gpus():
    count = torch.cuda.device_count()
    if count:
        return [torch.device("cuda", i) for i in range(count)]
    return [torch.device("mps")] if torch.mps.is_available() else [torch.device("cpu")]

# %% right id=try_all_gpus -- returns device strings instead of torch.device objects
def try_all_gpus():
    if torch.cuda.device_count():
        return [f"cuda:{i}" for i in range(torch.cuda.device_count())]
    return ["mps"] if torch.backends.mps.is_available() else ["cpu"]

# %% right id=timed -- times each call on its own, synchronizing any accelerator before every clock read
def timed(fn, device, repeats=10):
    accelerated = torch.device(device).type != "cpu"
    total = 0.0
    for _ in range(repeats):
        if accelerated:
            torch.accelerator.synchronize(device)
        start = time.perf_counter()
        fn()
        if accelerated:
            torch.accelerator.synchronize(device)
        total += time.perf_counter() - start
    return total / repeats

# %% right id=timed -- the lecture's synchronize helper, with a warm-up call
def synchronize(device):
    if device.type != "cpu":
        torch.accelerator.synchronize(device)


def timed(fn, device, repeats=10):
    fn()
    synchronize(device)
    start = time.perf_counter()
    for _ in range(repeats):
        fn()
    synchronize(device)
    return (time.perf_counter() - start) / repeats

# %% right id=timed -- each vendor's own synchronize function
def timed(fn, device, repeats=10):
    def wait():
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        elif device.type == "mps":
            torch.mps.synchronize()
    wait()
    start = time.perf_counter()
    for _ in range(repeats):
        fn()
    wait()
    return (time.perf_counter() - start) / repeats

# %% right id=timed -- torch.accelerator.synchronize() without an argument, skipped on the CPU
def timed(fn, device, repeats=10):
    on_cpu = str(device).startswith("cpu")
    if not on_cpu:
        torch.accelerator.synchronize()
    start = time.perf_counter()
    for _ in range(repeats):
        fn()
    if not on_cpu:
        torch.accelerator.synchronize()
    return (time.perf_counter() - start) / repeats

# %% right id=log_norms -- global seed, float() per step, .tolist() of the stack straight from the device
def log_norms(n, size, device, on_device=True):
    torch.manual_seed(42)
    norms = []
    for _ in range(n):
        A, B = torch.randn(size, size).to(device), torch.randn(size, size).to(device)
        norm = torch.linalg.norm(A @ B)
        norms.append(norm if on_device else float(norm))
    return torch.stack(norms).tolist() if on_device else norms

# %% right id=log_norms -- a preallocated device tensor, moved with .to("cpu"); .cpu().item() per step otherwise
def log_norms(n, size, device, on_device=True):
    generator = torch.Generator().manual_seed(7)
    out = torch.empty(n, device=device)
    norms = []
    for i in range(n):
        A = torch.randn(size, size, generator=generator).to(device)
        B = torch.randn(size, size, generator=generator).to(device)
        norm = (A @ B).pow(2).sum().sqrt()
        if on_device:
            out[i] = norm
        else:
            norms.append(norm.cpu().item())
    return out.to("cpu").numpy().tolist() if on_device else norms
