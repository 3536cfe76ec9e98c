# Wrong answers students really write for exercise 7, one cell each.
# Each must lose exactly its own item's points (see tools/cells.py).

# %% wrong id=try_gpu clause=cuda_count -- returns cuda:i whenever CUDA is available, without counting the devices
def try_gpu(i=0):
    if torch.cuda.is_available():
        return torch.device(f"cuda:{i}")
    if torch.backends.mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")

# %% wrong id=try_gpu clause=cuda_count -- off by one: cuda:i when there are at least i devices
def try_gpu(i=0):
    if torch.cuda.device_count() >= i and torch.cuda.is_available():
        return torch.device(f"cuda:{i}")
    if i == 0 and torch.backends.mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")

# %% wrong id=try_gpu clause=fallbacks -- falls back to MPS for every index
def try_gpu(i=0):
    if torch.cuda.device_count() > i:
        return torch.device(f"cuda:{i}")
    if torch.backends.mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")

# %% wrong id=try_gpu clause=fallbacks -- forgets Apple's MPS
def try_gpu(i=0):
    if torch.cuda.device_count() > i:
        return torch.device(f"cuda:{i}")
    return torch.device("cpu")

# %% wrong id=try_gpu clause=real_device -- returns an object that compares equal to every device instead of choosing one
class AnyDevice:
    def __init__(self, index):
        self.index = index

    def __eq__(self, other):
        return True

    def __repr__(self):
        return f"AnyDevice({self.index})"


def try_gpu(i=0):
    return AnyDevice(i)

# %% wrong id=try_all_gpus clause=never_empty -- returns an empty list when there is no CUDA GPU
def try_all_gpus():
    return [torch.device(f"cuda:{i}") for i in range(torch.cuda.device_count())]

# %% wrong id=try_all_gpus clause=mps_after_cuda -- checks MPS before CUDA
def try_all_gpus():
    if torch.backends.mps.is_available():
        return [torch.device("mps")]
    n = torch.cuda.device_count()
    if n > 0:
        return [torch.device(f"cuda:{i}") for i in range(n)]
    return [torch.device("cpu")]

# %% wrong id=try_all_gpus clause=all_cuda -- lists only the first GPU
def try_all_gpus():
    if torch.cuda.device_count() > 0:
        return [torch.device("cuda:0")]
    if torch.backends.mps.is_available():
        return [torch.device("mps")]
    return [torch.device("cpu")]

# %% wrong id=try_all_gpus clause=all_cuda -- a list of objects that compare equal to every device
class AnyDevice:
    def __eq__(self, other):
        return True


def try_all_gpus():
    return [AnyDevice() for _ in range(max(torch.cuda.device_count(), 1))]

# %% wrong id=to_device clause=same_types -- rebuilds every dict as a dict and every tuple as a tuple: a namedtuple loses its fields, an OrderedDict its type
def to_device(obj, device):
    if isinstance(obj, torch.Tensor):
        return obj.to(device)
    if isinstance(obj, dict):
        return {key: to_device(value, device) for key, value in obj.items()}
    if isinstance(obj, list):
        return [to_device(item, device) for item in obj]
    if isinstance(obj, tuple):
        return tuple(to_device(item, device) for item in obj)
    return obj

# %% wrong id=to_device clause=same_types -- type(obj)(generator) for every tuple: a namedtuple's constructor wants its fields one by one
def to_device(obj, device):
    if isinstance(obj, torch.Tensor):
        return obj.to(device)
    if isinstance(obj, dict):
        return type(obj)((k, to_device(v, device)) for k, v in obj.items())
    if isinstance(obj, (list, tuple)):
        return type(obj)(to_device(v, device) for v in obj)
    return obj

# %% wrong id=to_device clause=moved -- hands back stand-ins whose device compares equal to every device instead of moving the tensors
class Everywhere:
    type = property(lambda self: self)

    def __eq__(self, other):
        return True


class Moved:
    def __init__(self, tensor):
        self.tensor, self.shape, self.dtype, self.device = tensor, tensor.shape, tensor.dtype, Everywhere()


def to_device(obj, device):
    if isinstance(obj, torch.Tensor):
        return Moved(obj)
    if isinstance(obj, dict):
        return type(obj)((k, to_device(v, device)) for k, v in obj.items())
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return type(obj)(*(to_device(v, device) for v in obj))
    if isinstance(obj, (list, tuple)):
        return type(obj)(to_device(v, device) for v in obj)
    return obj

# %% wrong id=to_device clause=grad -- detaches every tensor before moving it, so a tensor that requires grad leaves the graph
def to_device(obj, device):
    if isinstance(obj, torch.Tensor):
        return obj.detach().to(device)
    if isinstance(obj, dict):
        return type(obj)((k, to_device(v, device)) for k, v in obj.items())
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return type(obj)(*[to_device(v, device) for v in obj])
    if isinstance(obj, (list, tuple)):
        return type(obj)([to_device(v, device) for v in obj])
    return obj

# %% wrong id=to_device clause=same_types -- turns tuples into lists
def to_device(obj, device):
    if isinstance(obj, torch.Tensor):
        return obj.to(device)
    if isinstance(obj, dict):
        return {k: to_device(v, device) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_device(v, device) for v in obj]
    return obj

# %% wrong id=to_device clause=nested -- moves only the top level, not nested containers
def to_device(obj, device):
    if isinstance(obj, torch.Tensor):
        return obj.to(device)
    if isinstance(obj, dict):
        return {k: v.to(device) if isinstance(v, torch.Tensor) else v for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(v.to(device) if isinstance(v, torch.Tensor) else v for v in obj)
    return obj

# %% wrong id=to_device clause=kept -- drops everything that is not a tensor
def to_device(obj, device):
    if isinstance(obj, torch.Tensor):
        return obj.to(device)
    if isinstance(obj, dict):
        return {k: to_device(v, device) for k, v in obj.items() if isinstance(v, (torch.Tensor, list, tuple, dict))}
    if isinstance(obj, (list, tuple)):
        return type(obj)(to_device(v, device) for v in obj if isinstance(v, (torch.Tensor, list, tuple, dict)))
    return obj

# %% wrong id=to_device clause=copy -- builds new dicts and tuples but rewrites the caller's lists in place
def to_device(obj, device):
    if isinstance(obj, torch.Tensor):
        return obj.to(device)
    if isinstance(obj, dict):
        return {k: to_device(v, device) for k, v in obj.items()}
    if isinstance(obj, tuple):
        return tuple(to_device(v, device) for v in obj)
    if isinstance(obj, list):
        for i, v in enumerate(obj):
            obj[i] = to_device(v, device)
        return obj
    return obj

# %% wrong id=timed clause=sync_own_kind -- calls torch.cuda.synchronize for every device
def timed(fn, device, repeats=10):
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(repeats):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - start) / repeats

# %% wrong id=timed clause=sync_each_read -- synchronizes only before starting the clock
def timed(fn, device, repeats=10):
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    start = time.perf_counter()
    for _ in range(repeats):
        fn()
    return (time.perf_counter() - start) / repeats

# %% wrong id=timed clause=per_call -- returns the total time instead of the time per call
def timed(fn, device, repeats=10):
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    start = time.perf_counter()
    for _ in range(repeats):
        fn()
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return time.perf_counter() - start

# %% wrong id=timed clause=sync_each_read -- synchronizes after each call but not before the first clock read
def timed(fn, device, repeats=10):
    total = 0.0
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        total += time.perf_counter() - start
    return total / repeats

# %% wrong id=timed clause=sync_own_kind -- calls torch.cuda.synchronize for an MPS device too, which fails on a Mac
def timed(fn, device, repeats=10):
    if device.type != "cpu":
        torch.cuda.synchronize(device)
    start = time.perf_counter()
    for _ in range(repeats):
        fn()
    if device.type != "cpu":
        torch.cuda.synchronize(device)
    return (time.perf_counter() - start) / repeats

# %% wrong id=timed clause=sync_own_kind -- synchronizes CUDA only, so MPS work is still queued when the clock is read
def timed(fn, device, repeats=10):
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    start = time.perf_counter()
    for _ in range(repeats):
        fn()
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return (time.perf_counter() - start) / repeats

# %% wrong id=timed clause=cpu_no_sync -- calls torch.accelerator.synchronize() for every device, the CPU included
def timed(fn, device, repeats=10):
    torch.accelerator.synchronize()
    start = time.perf_counter()
    for _ in range(repeats):
        fn()
    torch.accelerator.synchronize()
    return (time.perf_counter() - start) / repeats

# %% wrong id=timed clause=sync_each_read -- reads the end clock before the final synchronize, while work is still queued
def timed(fn, device, repeats=10):
    accelerated = torch.device(device).type != "cpu"
    if accelerated:
        torch.accelerator.synchronize(device)
    start = time.perf_counter()
    for _ in range(repeats):
        fn()
    elapsed = time.perf_counter() - start
    if accelerated:
        torch.accelerator.synchronize(device)
    return elapsed / repeats

# %% wrong id=timed clause=sync_each_read -- imports perf_counter by name and reads the end clock before the final synchronize
from time import perf_counter


def timed(fn, device, repeats=10):
    accelerated = torch.device(device).type != "cpu"
    if accelerated:
        torch.accelerator.synchronize(device)
    start = perf_counter()
    for _ in range(repeats):
        fn()
    elapsed = perf_counter() - start
    if accelerated:
        torch.accelerator.synchronize(device)
    return elapsed / repeats

# %% wrong id=timed clause=sync_named -- torch.accelerator.synchronize() without an argument: waits for the current device, not the one named
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

# %% wrong id=timed clause=sync_named -- the vendors' synchronize without an argument: torch.cuda.synchronize() waits for the current GPU
def timed(fn, device, repeats=10):
    sync = {"cuda": torch.cuda.synchronize, "mps": torch.mps.synchronize}.get(device.type)
    if sync:
        sync()
    t0 = time.perf_counter()
    for _ in range(repeats):
        fn()
    if sync:
        sync()
    return (time.perf_counter() - t0) / repeats

# %% wrong id=timed clause=warm_up -- starts the clock before the warm-up call, so the warm-up is counted as one of the repeats
def timed(fn, device, repeats=10):
    accelerated = device.type != "cpu"
    if accelerated:
        torch.accelerator.synchronize(device)
    start = time.perf_counter()
    fn()  # warm-up
    for _ in range(repeats):
        fn()
    if accelerated:
        torch.accelerator.synchronize(device)
    return (time.perf_counter() - start) / repeats

# %% wrong id=timed clause=warm_up -- a warm-up inside the window, divided by the number of calls it made (repeats + 1)
def timed(fn, device, repeats=10):
    def sync():
        if device.type != "cpu":
            torch.accelerator.synchronize(device)
    sync()
    start = time.perf_counter()
    fn()
    sync()
    warm = time.perf_counter()
    for _ in range(repeats):
        fn()
    sync()
    return (time.perf_counter() - warm) / (repeats + 1)

# %% wrong id=timed clause=calls_fn -- decorated with @torch.no_grad() "to save autograd's bookkeeping", so a training step that calls backward fails
@torch.no_grad()
def timed(fn, device, repeats=10):
    if device.type != "cpu":
        torch.accelerator.synchronize(device)
    t0 = time.perf_counter()
    for _ in range(repeats):
        fn()
    if device.type != "cpu":
        torch.accelerator.synchronize(device)
    return (time.perf_counter() - t0) / repeats

# %% wrong id=log_norms clause=seeded -- never seeds, so two calls differ
def log_norms(n, size, device, on_device=True):
    norms = []
    for _ in range(n):
        A = torch.randn(size, size).to(device)
        B = torch.randn(size, size).to(device)
        norm = torch.linalg.matrix_norm(A @ B)
        norms.append(norm if on_device else norm.item())
    return torch.stack(norms).cpu().tolist() if on_device else norms

# %% wrong id=log_norms clause=fresh -- reseeds in every step, so every step draws the same matrices
def log_norms(n, size, device, on_device=True):
    norms = []
    for _ in range(n):
        torch.manual_seed(0)
        A = torch.randn(size, size).to(device)
        B = torch.randn(size, size).to(device)
        norm = torch.linalg.matrix_norm(A @ B)
        norms.append(norm if on_device else norm.item())
    return torch.stack(norms).cpu().tolist() if on_device else norms

# %% wrong id=log_norms clause=formula -- takes the spectral norm (ord=2) instead of the Frobenius norm
def log_norms(n, size, device, on_device=True):
    torch.manual_seed(0)
    norms = []
    for _ in range(n):
        A = torch.randn(size, size).to(device)
        B = torch.randn(size, size).to(device)
        norm = torch.linalg.matrix_norm(A @ B, ord=2)
        norms.append(norm if on_device else norm.item())
    return torch.stack(norms).cpu().tolist() if on_device else norms

# %% wrong id=log_norms clause=formula -- multiplies elementwise (A * B) instead of A @ B
def log_norms(n, size, device, on_device=True):
    torch.manual_seed(0)
    norms = []
    for _ in range(n):
        A = torch.randn(size, size).to(device)
        B = torch.randn(size, size).to(device)
        norm = torch.linalg.matrix_norm(A * B)
        norms.append(norm if on_device else norm.item())
    return torch.stack(norms).cpu().tolist() if on_device else norms

# %% wrong id=log_norms clause=floats -- returns the stacked tensor instead of a list of floats
def log_norms(n, size, device, on_device=True):
    torch.manual_seed(0)
    norms = []
    for _ in range(n):
        A = torch.randn(size, size).to(device)
        B = torch.randn(size, size).to(device)
        norms.append(torch.linalg.matrix_norm(A @ B))
    return torch.stack(norms).cpu()

# %% wrong id=log_norms clause=seeded -- seeds only the on_device=True branch
def log_norms(n, size, device, on_device=True):
    if on_device:
        torch.manual_seed(0)
    norms = []
    for _ in range(n):
        A = torch.randn(size, size).to(device)
        B = torch.randn(size, size).to(device)
        norm = torch.linalg.matrix_norm(A @ B)
        norms.append(norm if on_device else norm.item())
    return torch.stack(norms).cpu().tolist() if on_device else norms

# %% wrong id=log_norms clause=once -- ignores on_device: calls .item() in every step either way
def log_norms(n, size, device, on_device=True):
    generator = torch.Generator().manual_seed(0)
    norms = []
    for _ in range(n):
        A = torch.randn(size, size, generator=generator).to(device)
        B = torch.randn(size, size, generator=generator).to(device)
        norms.append(torch.linalg.matrix_norm(A @ B).item())
    return norms

# %% wrong id=log_norms clause=every_step -- ignores on_device: always stacks and moves once at the end
def log_norms(n, size, device, on_device=True):
    generator = torch.Generator().manual_seed(0)
    norms = []
    for _ in range(n):
        A = torch.randn(size, size, generator=generator).to(device)
        B = torch.randn(size, size, generator=generator).to(device)
        norms.append(torch.linalg.matrix_norm(A @ B))
    return torch.stack(norms).cpu().tolist()

# %% wrong id=log_norms clause=once -- keeps the norms on the device but converts them one by one at the end
def log_norms(n, size, device, on_device=True):
    generator = torch.Generator().manual_seed(0)
    norms = []
    for _ in range(n):
        A = torch.randn(size, size, generator=generator).to(device)
        B = torch.randn(size, size, generator=generator).to(device)
        norm = torch.linalg.matrix_norm(A @ B)
        norms.append(norm if on_device else norm.item())
    return [float(v) for v in norms]

# %% wrong id=log_norms clause=once -- ignores on_device: moves each norm with .cpu() in every step, stacks on the CPU
def log_norms(n, size, device, on_device=True):
    generator = torch.Generator().manual_seed(0)
    norms = []
    for _ in range(n):
        A = torch.randn(size, size, generator=generator).to(device)
        B = torch.randn(size, size, generator=generator).to(device)
        norms.append(torch.linalg.matrix_norm(A @ B).cpu())
    return torch.stack(norms).tolist()

# %% wrong id=log_norms clause=every_step -- ignores on_device: .tolist() of the stack on the device, once, either way
def log_norms(n, size, device, on_device=True):
    generator = torch.Generator().manual_seed(0)
    norms = []
    for _ in range(n):
        A = torch.randn(size, size, generator=generator).to(device)
        B = torch.randn(size, size, generator=generator).to(device)
        norms.append(torch.linalg.matrix_norm(A @ B))
    return torch.stack(norms).tolist()

# %% wrong id=log_norms clause=once -- on_device=True builds the result with torch.tensor(list of device norms), which reads each one
def log_norms(n, size, device, on_device=True):
    generator = torch.Generator().manual_seed(0)
    norms = []
    for _ in range(n):
        A = torch.randn(size, size, generator=generator).to(device)
        B = torch.randn(size, size, generator=generator).to(device)
        norm = torch.linalg.matrix_norm(A @ B)
        norms.append(norm if on_device else norm.item())
    return torch.tensor(norms).tolist() if on_device else norms

# %% wrong id=log_norms clause=once -- on_device=True writes each norm into a CPU tensor as it goes
def log_norms(n, size, device, on_device=True):
    generator = torch.Generator().manual_seed(0)
    out = torch.empty(n, dtype=torch.float32)
    norms = []
    for i in range(n):
        A = torch.randn(size, size, generator=generator).to(device)
        B = torch.randn(size, size, generator=generator).to(device)
        norm = torch.linalg.matrix_norm(A @ B)
        if on_device:
            out[i] = norm
        else:
            norms.append(norm.item())
    return out.tolist() if on_device else norms

# %% wrong id=log_norms clause=on_device_work -- ignores on_device: .to("cpu") on each product, norms computed on the host
def log_norms(n, size, device, on_device=True):
    generator = torch.Generator().manual_seed(0)
    norms = []
    for _ in range(n):
        A = torch.randn(size, size, generator=generator).to(device)
        B = torch.randn(size, size, generator=generator).to(device)
        norms.append(torch.linalg.matrix_norm((A @ B).to("cpu")).item())
    return norms

# %% wrong id=log_norms clause=cpu_draws -- draws the matrices on the device, so the values depend on the device
def log_norms(n, size, device, on_device=True):
    torch.manual_seed(0)
    norms = []
    for _ in range(n):
        A = torch.randn(size, size, device=device)
        B = torch.randn(size, size, device=device)
        norm = torch.linalg.matrix_norm(A @ B)
        norms.append(norm if on_device else norm.item())
    return torch.stack(norms).cpu().tolist() if on_device else norms

# %% wrong id=log_norms clause=cpu_draws -- draws the second matrix with randn_like from the first, already on the device
def log_norms(n, size, device, on_device=True):
    torch.manual_seed(0)
    norms = []
    for _ in range(n):
        A = torch.randn(size, size).to(device)
        B = torch.randn_like(A)
        norm = torch.linalg.matrix_norm(A @ B)
        norms.append(norm if on_device else norm.item())
    return torch.stack(norms).cpu().tolist() if on_device else norms

# %% wrong id=log_norms clause=cpu_draws -- a seeded generator on the device: the same values on every call, but not the CPU's
def log_norms(n, size, device, on_device=True):
    generator = torch.Generator(device=device).manual_seed(0)
    norms = []
    for _ in range(n):
        A = torch.randn(size, size, generator=generator, device=device)
        B = torch.randn(size, size, generator=generator, device=device)
        norm = torch.linalg.matrix_norm(A @ B)
        norms.append(norm if on_device else norm.item())
    return torch.stack(norms).cpu().tolist() if on_device else norms

# %% wrong id=log_norms clause=on_device_work says=matrix_product -- multiplies and takes the norm on the CPU and moves only the norm to the device: no device work at all
def log_norms(n, size, device, on_device=True):
    generator = torch.Generator().manual_seed(0)
    norms = []
    for _ in range(n):
        A = torch.randn(size, size, generator=generator)
        B = torch.randn(size, size, generator=generator)
        norm = torch.linalg.matrix_norm(A @ B).to(device)
        norms.append(norm if on_device else norm.item())
    if on_device:
        return torch.stack(norms).cpu().tolist()
    return norms
