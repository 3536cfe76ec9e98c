# Test machinery, not part of any answer. Inside `with _simulated_gpu() as gpu:` the CPU plays a
# CUDA GPU, `gpu` (cuda:0): tensors made on it or moved to it report that device and compute with
# real values on the CPU, and it refuses what a real GPU refuses: an operation mixing it with a CPU
# tensor of one or more dimensions (a 0-d CPU tensor counts as a number, as on CUDA), a CPU
# generator for values drawn on it, `.numpy()` of it, and a GPU tensor as torch's (CPU) random
# state. `torch.load(..., map_location="cuda")` puts what it loads on it. Outside it nothing changes.
from contextlib import contextmanager

from torch.overrides import TorchFunctionMode
from torch.utils._pytree import tree_flatten, tree_map

_GPU = torch.device("cuda", 0)


class _OnGPU(torch.Tensor):
    """A tensor of the simulated GPU: its values live on the CPU, it says it lives on cuda:0."""

    @property
    def device(self):
        return _GPU

    @property
    def is_cuda(self):
        return True

    @property
    def is_cpu(self):
        return False

    def __deepcopy__(self, memo):  # a copy of a GPU tensor (a parameter too) is one as well
        if id(self) not in memo:
            copied = torch.Tensor.__deepcopy__(self.detach().as_subclass(torch.Tensor), {}).as_subclass(_OnGPU)
            copied._is_param = getattr(self, "_is_param", False)
            memo[id(self)] = copied.requires_grad_(self.requires_grad)
        return memo[id(self)]


def _where(value):
    """The device a `device=` argument or a `.to()` argument names: cuda, cpu or None."""
    if isinstance(value, torch.Tensor):
        return value.device.type
    if isinstance(value, int) and not isinstance(value, bool):
        return "cuda"  # a bare index names a CUDA device
    if isinstance(value, (str, torch.device)):
        return torch.device(value).type
    return None


# What a real GPU lets mix devices: copies between devices, indexing with CPU indices, reading values.
_ANY_DEVICE = {"to", "cuda", "cpu", "copy_", "__getitem__", "__setitem__", "__get__", "__set__", "__repr__",
               "__format__", "__str__", "item", "tolist", "__bool__", "__float__", "__int__", "__index__",
               "size", "dim", "numel", "__len__", "__iter__", "requires_grad_", "detach", "detach_",
               "_has_compatible_shallow_copy_type", "module_load"}


class _SimulatedGPU(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        name = getattr(func, "__name__", "")
        tensors = [a for a in tree_flatten((args, kwargs))[0] if isinstance(a, torch.Tensor)]
        on_gpu = any(isinstance(t, _OnGPU) for t in tensors)
        target = _where(kwargs.get("device"))
        if name in {"to", "cuda"}:
            for value in [*args[1:], *kwargs.values()]:
                target = _where(value) or target
            target = "cuda" if name == "cuda" else target
        if on_gpu and name in {"numpy", "__array__"}:
            raise TypeError("can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu() to copy the "
                            "tensor to host memory first.")
        generator = kwargs.get("generator")
        drawn_on_gpu = target == "cuda" or (on_gpu and target is None)
        if generator is not None and drawn_on_gpu and generator.device.type != "cuda":
            raise RuntimeError("Expected a 'cuda' device type for generator but found 'cpu'")
        if on_gpu and name not in _ANY_DEVICE and any(not isinstance(t, _OnGPU) and t.dim() > 0 for t in tensors):
            raise RuntimeError("Expected all tensors to be on the same device, but found at least two devices, "
                               "cuda:0 and cpu!")
        if target == "cuda":  # computed on the CPU, handed back as the GPU's
            if name == "cuda":
                func, args, kwargs = torch.Tensor.to, (args[0], "cpu"), {}
            elif name == "to":
                args = tuple("cpu" if _where(a) == "cuda" and not isinstance(a, torch.Tensor) else a for a in args)
                kwargs = {k: "cpu" if k == "device" else v for k, v in kwargs.items()}
            else:
                kwargs["device"] = "cpu"
            return tree_map(lambda r: r.as_subclass(_OnGPU) if type(r) is torch.Tensor else r, func(*args, **kwargs))
        result = func(*args, **kwargs)
        if name.endswith("_") and not name.endswith("__") and args and isinstance(args[0], torch.Tensor):
            return args[0]  # in place: the tensor itself, on its own device (a GPU value copied into a CPU one)
        if name == "module_load" and not isinstance(args[0], _OnGPU):  # load_state_dict copies into a CPU model
            return result.as_subclass(torch.Tensor)
        if target == "cpu" or name == "cpu":  # moved off the GPU: a plain CPU tensor again
            return tree_map(lambda r: r.as_subclass(torch.Tensor) if isinstance(r, _OnGPU) else r, result)
        return result


def _on_gpu_all(value):
    """Every tensor in a loaded object (dicts, lists and tuples of them) put on the simulated GPU."""
    if isinstance(value, torch.Tensor):
        return value.as_subclass(_OnGPU)
    if isinstance(value, dict):
        return type(value)((key, _on_gpu_all(item)) for key, item in value.items())
    if isinstance(value, (list, tuple)) and not hasattr(value, "_fields"):
        return type(value)(_on_gpu_all(item) for item in value)
    return value


@contextmanager
def _simulated_gpu():
    real_load, real_set_rng_state = torch.load, torch.set_rng_state

    def load(f, map_location=None, *args, **kwargs):
        if _where(map_location) != "cuda":
            return real_load(f, map_location, *args, **kwargs)
        return _on_gpu_all(real_load(f, "cpu", *args, **kwargs))

    def set_rng_state(new_state):
        if isinstance(new_state, _OnGPU):
            raise TypeError("RNG state must be a torch.ByteTensor")
        return real_set_rng_state(new_state)

    swap = torch.__future__.get_swap_module_params_on_conversion()
    torch.__future__.set_swap_module_params_on_conversion(True)  # module.to(gpu) keeps what .to() gives
    torch.load = torch.serialization.load = load
    torch.set_rng_state = torch.random.set_rng_state = set_rng_state
    try:
        with _SimulatedGPU():
            yield _GPU
    finally:
        torch.load = torch.serialization.load = real_load
        torch.set_rng_state = torch.random.set_rng_state = real_set_rng_state
        torch.__future__.set_swap_module_params_on_conversion(swap)
