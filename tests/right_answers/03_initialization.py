# Correct answers written differently from the model solution; every graded test must pass.

# %% right id=my_init -- binds weird_init_ as a default argument
def my_init(m, init=weird_init_):
    if isinstance(m, nn.Linear):
        init(m.weight)

# %% right id=my_init -- checks the type with type() and uses the module's weight through getattr
def my_init(m):
    if type(m) is nn.Linear:
        weird_init_(getattr(m, "weight"))

# %% right id=activation_stds -- records every module's output std (a tensor, taken in the hook) and keeps the Linear ones
def activation_stds(net, x):
    outputs = []
    hooks = [m.register_forward_hook(lambda mod, inp, out: outputs.append((mod, out.std())))
             for m in net.modules()]
    with torch.no_grad():
        net(x)
    for hook in hooks:
        hook.remove()
    return [float(std) for mod, std in outputs if isinstance(mod, nn.Linear)]

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

# %% right id=init_normal -- the tensors' own in-place methods under torch.no_grad(), not nn.init
def init_normal(m):
    if isinstance(m, nn.Linear):
        with torch.no_grad():
            m.weight.normal_(0, 0.01)
            if m.bias is not None:
                m.bias.zero_()

# %% right id=init_normal -- copies numpy draws into the weight, fills the bias with a constant
import numpy as np


def init_normal(m):
    if not isinstance(m, nn.Linear):
        return
    draws = np.random.default_rng().normal(loc=0.0, scale=0.01, size=tuple(m.weight.shape))
    with torch.no_grad():
        m.weight.copy_(torch.from_numpy(draws))
    if m.bias is not None:
        nn.init.constant_(m.bias, 0.0)

# %% right id=init_normal -- walks the layer's own named parameters, scales a standard normal draw
def init_normal(m):
    if type(m) in (nn.Linear,):
        for name, param in m.named_parameters(recurse=False):
            with torch.no_grad():
                if name == "weight":
                    param.copy_(torch.randn_like(param) * 0.01)
                else:
                    param.fill_(0)

# %% right id=weird_init_ -- draws the part and the magnitude separately and combines them with torch.where
def weird_init_(tensor):
    with torch.no_grad():
        u = torch.rand(tensor.shape)
        magnitude = torch.empty(tensor.shape).uniform_(5, 10)
        values = torch.where(u < 0.25, magnitude, torch.where(u < 0.5, -magnitude, torch.zeros(())))
        tensor.copy_(values)
    return tensor

# %% right id=weird_init_ -- nn.init.uniform_, then zeroes the middle by boolean indexing, no_grad as a decorator
@torch.no_grad()
def weird_init_(tensor):
    nn.init.uniform_(tensor, -10.0, 10.0)
    tensor[(tensor > -5) & (tensor < 5)] = 0.0
    return tensor

# %% right id=my_init -- reaches the weight through the .data of the parameter
def my_init(m):
    if isinstance(m, nn.Linear):
        weird_init_(m.weight.data)

# %% right id=activation_stds -- one global forward hook, numpy float32 stds from the outputs, a tuple
import numpy as np


def activation_stds(net, x):
    linears = {id(m) for m in net.modules() if isinstance(m, nn.Linear)}
    stds = []

    def watch(module, args, output):
        if id(module) in linears:
            stds.append(output.detach().cpu().numpy().std(ddof=1))

    handle = torch.nn.modules.module.register_module_forward_hook(watch)
    try:
        with torch.no_grad():
            net(x)
    finally:
        handle.remove()
    return tuple(stds)

# %% right id=weird_init_ -- magnitudes first, then zeros and signs by boolean masks read back from the tensor (nonzero on the device)
def weird_init_(tensor):
    with torch.no_grad():
        tensor.uniform_(5, 10)
        part = torch.rand_like(tensor)
        tensor[part < 0.5] = 0
        negative = part >= 0.75
        tensor[negative] = -tensor[negative]
    return tensor
