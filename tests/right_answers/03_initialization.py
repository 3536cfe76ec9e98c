# Correct answers written differently from the model solution; every graded test must pass.

# %% right id=my_init -- binds weird_init_ as a default argument
def my_init(m, init=weird_init_):
    if isinstance(m, nn.Linear):
        init(m.weight)

# %% right id=my_init -- checks the type with type() and uses the module's weight through getattr
def my_init(m):
    if type(m) is nn.Linear:
        weird_init_(getattr(m, "weight"))

# %% right id=activation_stds -- records every module's output and keeps the Linear ones
def activation_stds(net, x):
    outputs = []
    hooks = [m.register_forward_hook(lambda mod, inp, out: outputs.append((mod, out)))
             for m in net.modules()]
    with torch.no_grad():
        net(x)
    for hook in hooks:
        hook.remove()
    return [float(out.std()) for mod, out in outputs if isinstance(mod, nn.Linear)]

# %% right id=weird_init_ -- draws with numpy's own generator, which torch's seed does not reach
import numpy as np


def weird_init_(tensor):
    rng = np.random.default_rng()
    values = rng.uniform(-10, 10, size=tuple(tensor.shape))
    values[np.abs(values) < 5] = 0.0
    with torch.no_grad():
        tensor.copy_(torch.from_numpy(values))
    return tensor

# %% right id=activation_stds -- inference_mode instead of no_grad, numpy floats from the std
import numpy as np


def activation_stds(net, x):
    found = []
    handles = []
    for m in net.modules():
        if isinstance(m, nn.Linear):
            handles.append(m.register_forward_hook(lambda mod, inp, out: found.append(np.float64(out.std().item()))))
    try:
        with torch.inference_mode():
            net(x)
    finally:
        for h in handles:
            h.remove()
    return found
