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

# %% right id=try_gpu -- the lecture's pick_device, built on torch.accelerator
def try_gpu(i=0):
    accelerator = torch.accelerator.current_accelerator(check_available=True)
    if accelerator is not None and torch.accelerator.device_count() > i:
        return torch.device(accelerator.type, i)
    return torch.device("cpu")

# %% right id=try_gpu -- torch.accelerator's is_available and the accelerator's name, as a string check
def try_gpu(i=0):
    if torch.accelerator.is_available():
        kind = torch.accelerator.current_accelerator().type
        if kind == "cuda" and i < torch.accelerator.device_count():
            return torch.device("cuda", i)
        if kind == "mps" and i == 0:
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

# %% right id=try_all_gpus -- the lecture's all_devices, built on torch.accelerator
def try_all_gpus():
    accelerator = torch.accelerator.current_accelerator(check_available=True)
    if accelerator is None:
        return [torch.device("cpu")]
    return [torch.device(accelerator.type, i) for i in range(torch.accelerator.device_count())]

# %% right id=try_all_gpus -- a loop that appends, handed back as a tuple
def try_all_gpus():
    found = []
    if torch.cuda.is_available():
        for index in range(torch.cuda.device_count()):
            found.append(torch.device("cuda", index))
    if not found and torch.backends.mps.is_available():
        found.append(torch.device("mps"))
    return tuple(found) or (torch.device("cpu"),)

# %% right id=to_device -- structural pattern matching, namedtuples rebuilt with _make
def to_device(obj, device):
    match obj:
        case torch.Tensor():
            return obj.to(device)
        case dict():
            return obj.__class__((key, to_device(value, device)) for key, value in obj.items())
        case tuple() if hasattr(obj, "_make"):
            return obj._make(to_device(item, device) for item in obj)
        case list() | tuple():
            return obj.__class__(to_device(item, device) for item in obj)
        case _:
            return obj

# %% right id=to_device -- torch's own pytree utilities, which know namedtuples and OrderedDicts
def to_device(obj, device):
    from torch.utils import _pytree

    return _pytree.tree_map(lambda leaf: leaf.to(device) if isinstance(leaf, torch.Tensor) else leaf, obj)

# %% right id=to_device -- a shallow copy of each container, filled in place (the caller's object untouched)
import copy


def to_device(obj, device):
    if torch.is_tensor(obj):
        return obj.to(device)
    if isinstance(obj, dict):
        out = copy.copy(obj)
        for key in out:
            out[key] = to_device(obj[key], device)
        return out
    if isinstance(obj, list):
        return [to_device(item, device) for item in obj]
    if isinstance(obj, tuple):
        items = [to_device(item, device) for item in obj]
        return type(obj)(*items) if hasattr(type(obj), "_fields") else tuple(items)
    return obj

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

# %% right id=timed -- the lecture's per_call on torch.utils.benchmark.Timer: the fastest of 3 blocks of `repeats` calls
def timed(fn, device, repeats=10):
    from torch.utils import benchmark

    def synchronize(device):
        if device.type != "cpu":
            torch.accelerator.synchronize(device)

    synchronize(device)
    timer = benchmark.Timer(stmt="fn(); synchronize(device)",
                            globals={"fn": fn, "synchronize": synchronize, "device": device})
    return min(timer.timeit(repeats).mean for _ in range(3))

# %% right id=timed -- benchmark.Timer.timeit(repeats), the device waited for in the statement
def timed(fn, device, repeats=10):
    import torch.utils.benchmark as benchmark

    wait = "torch.accelerator.synchronize(device)" if device.type != "cpu" else "pass"
    exec(wait, {"torch": torch, "device": device})
    timer = benchmark.Timer(stmt=f"fn(); {wait}", globals={"fn": fn, "torch": torch, "device": device})
    return timer.timeit(repeats).mean

# %% right id=timed -- timeit.repeat with the fastest of several runs, inside torch.cuda.device(...) for CUDA
import contextlib
import timeit


def timed(fn, device, repeats=10):
    def wait():
        if device.type == "cuda":
            with torch.cuda.device(device):
                torch.cuda.synchronize()
        elif device.type == "mps":
            torch.mps.synchronize()

    def block():
        for _ in range(repeats):
            fn()
        wait()

    wait()
    return min(timeit.repeat(block, repeat=3, number=1)) / repeats

# %% right id=timed -- nanosecond clock, per-call times summed, torch.accelerator.device_index for the device
def timed(fn, device, repeats=10):
    def idle():
        if device.type != "cpu":
            with torch.accelerator.device_index(device.index or 0):
                torch.accelerator.synchronize()

    total_ns = 0
    for _ in range(repeats):
        idle()
        begin = time.perf_counter_ns()
        fn()
        idle()
        total_ns += time.perf_counter_ns() - begin
    return total_ns / repeats / 1e9

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

# %% right id=log_norms -- torch.linalg.vector_norm of the flattened product, numpy for the one move
def log_norms(n, size, device, on_device=True):
    g = torch.Generator()
    g.manual_seed(2024)
    results = []
    for step in range(n):
        a = torch.randn((size, size), generator=g).to(device)
        b = torch.randn((size, size), generator=g).to(device)
        value = torch.linalg.vector_norm(torch.matmul(a, b).flatten())
        results.append(value if on_device else value.item())
    if not on_device:
        return results
    return [float(x) for x in torch.stack(results).cpu().numpy()]

# %% right id=log_norms -- both matrices drawn in one call and split, einsum for the product, .item() per step
def log_norms(n, size, device, on_device=True):
    torch.manual_seed(3)
    kept = None
    norms = []
    for _ in range(n):
        A, B = torch.randn(2, size, size).to(device).unbind(0)
        norm = torch.einsum("ij,jk->ik", A, B).square().sum().sqrt()
        if on_device:
            kept = norm.reshape(1) if kept is None else torch.cat([kept, norm.reshape(1)])
        else:
            norms.append(norm.item())
    return kept.cpu().tolist() if on_device else norms
