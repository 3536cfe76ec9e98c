# Wrong answers students really write for exercise 3, one cell each.
# Each must lose exactly its own item's points (see tools/cells.py).

# %% wrong id=init_normal clause=normal_std -- passes the variance 0.01**2 as the standard deviation
def init_normal(m):
    if isinstance(m, nn.Linear):
        nn.init.normal_(m.weight, mean=0.0, std=0.01**2)
        if m.bias is not None:
            nn.init.zeros_(m.bias)

# %% wrong id=init_normal clause=normal_std -- passes 0.01 positionally, where it becomes the mean
def init_normal(m):
    if isinstance(m, nn.Linear):
        nn.init.normal_(m.weight, 0.01)
        if m.bias is not None:
            nn.init.zeros_(m.bias)

# %% wrong id=init_normal clause=bias_zero -- forgets the bias
def init_normal(m):
    if isinstance(m, nn.Linear):
        nn.init.normal_(m.weight, std=0.01)

# %% wrong id=init_normal clause=only_linear -- touches every module that has a weight
def init_normal(m):
    if hasattr(m, "weight"):
        nn.init.normal_(m.weight, std=0.01)
        if getattr(m, "bias", None) is not None:
            nn.init.zeros_(m.bias)

# %% wrong id=init_normal clause=no_bias -- crashes on a Linear without bias
def init_normal(m):
    if type(m) == nn.Linear:
        nn.init.normal_(m.weight, std=0.01)
        nn.init.zeros_(m.bias)

# %% wrong id=init_normal clause=normal_std -- uses a uniform law with the right std
def init_normal(m):
    if isinstance(m, nn.Linear):
        bound = 0.01 * math.sqrt(3)
        nn.init.uniform_(m.weight, -bound, bound)
        if m.bias is not None:
            nn.init.zeros_(m.bias)

# %% wrong id=weird_init_ clause=distribution -- U(5, 10) with probability 1/2 (no negative side)
def weird_init_(tensor):
    with torch.no_grad():
        tensor.uniform_(0, 10)
        tensor.mul_(tensor >= 5)
    return tensor

# %% wrong id=weird_init_ clause=distribution -- forgets the abs, so only the positive side survives
def weird_init_(tensor):
    with torch.no_grad():
        tensor.uniform_(-10, 10)
        tensor.mul_(tensor >= 5)
    return tensor

# %% wrong id=weird_init_ clause=distribution -- forgets to zero the middle
def weird_init_(tensor):
    with torch.no_grad():
        tensor.uniform_(-10, 10)
    return tensor

# %% wrong id=weird_init_ clause=distribution -- keeps the inside instead of the outside (wrong comparison)
def weird_init_(tensor):
    with torch.no_grad():
        tensor.uniform_(-10, 10)
        tensor.mul_(tensor.abs() < 5)
    return tensor

# %% wrong id=weird_init_ clause=in_place_no_autograd fails=test_weird_init__in_place -- no torch.no_grad(), so it breaks on a parameter
def weird_init_(tensor):
    tensor.uniform_(-10, 10)
    tensor *= tensor.abs() >= 5
    return tensor

# %% wrong id=weird_init_ clause=in_place_no_autograd fails=test_weird_init__in_place -- turns requires_grad off to get around autograd
def weird_init_(tensor):
    tensor.requires_grad_(False)
    tensor.uniform_(-10, 10)
    tensor *= tensor.abs() >= 5
    return tensor

# %% wrong id=weird_init_ clause=in_place fails=test_weird_init__in_place -- builds a new tensor instead of changing the argument
def weird_init_(tensor):
    values = torch.empty_like(tensor).uniform_(-10, 10)
    return values * (values.abs() >= 5)

# %% wrong id=weird_init_ clause=in_place fails=test_weird_init__in_place -- works in place but returns None
def weird_init_(tensor):
    with torch.no_grad():
        tensor.uniform_(-10, 10)
        tensor.mul_(tensor.abs() >= 5)

# %% wrong id=weird_init_ clause=distribution,in_place_device fails=test_weird_init_,test_weird_init__in_place -- draws whole numbers (and multiplies by a mask built on the CPU, which a GPU tensor refuses)
def weird_init_(tensor):
    with torch.no_grad():
        values = torch.randint(-10, 11, tensor.shape).to(tensor.dtype)
        tensor.copy_(values * (values.abs() >= 5))
        keep = torch.rand(tensor.shape) < 0.5 / (12 / 21)
        tensor.mul_(keep)
    return tensor

# %% wrong id=weird_init_ clause=independent -- reseeds inside, so every call gives the same values
def weird_init_(tensor):
    torch.manual_seed(0)
    with torch.no_grad():
        tensor.uniform_(-10, 10)
        tensor.mul_(tensor.abs() >= 5)
    return tensor

# %% wrong id=my_init clause=only_linear -- forgets the type check and crashes on layers without a weight
def my_init(m):
    weird_init_(m.weight)

# %% wrong id=my_init clause=only_linear -- touches every module that has a weight
def my_init(m):
    if hasattr(m, "weight"):
        weird_init_(m.weight)

# %% wrong id=my_init clause=weight -- initializes a copy of the weight
def my_init(m):
    if isinstance(m, nn.Linear):
        weird_init_(m.weight.detach().clone())

# %% wrong id=my_init -- only looks at the direct children of the module it gets
def my_init(m):
    if isinstance(m, nn.Sequential):
        for child in m.children():
            if isinstance(child, nn.Linear):
                weird_init_(child.weight)

# %% wrong id=activation_stds clause=every_linear -- records the output of every module, ReLUs too
def activation_stds(net, x):
    stds = []
    with torch.no_grad():
        for layer in net:
            x = layer(x)
            stds.append(x.std().item())
    return stds

# %% wrong id=activation_stds clause=every_linear -- only walks the top-level children
def activation_stds(net, x):
    stds = []
    with torch.no_grad():
        for layer in net.children():
            x = layer(x)
            if isinstance(layer, nn.Linear):
                stds.append(x.std().item())
    return stds

# %% wrong id=activation_stds clause=outputs fails=test_activation_stds,test_activation_stds_no_trace -- reports the weights' std instead of the outputs'
def activation_stds(net, x):
    return [m.weight.std().item() for m in net.modules() if isinstance(m, nn.Linear)]

# %% wrong id=activation_stds clause=order -- chains the Linear layers in registration order, skipping forward
def activation_stds(net, x):
    stds = []
    with torch.no_grad():
        for m in net.modules():
            if isinstance(m, nn.Linear):
                x = m(x)
                stds.append(x.std().item())
    return stds

# %% wrong id=activation_stds clause=no_trace_hooks fails=test_activation_stds,test_activation_stds_no_trace -- leaves the hooks on the net
def activation_stds(net, x):
    stds = []
    for m in net.modules():
        if isinstance(m, nn.Linear):
            m.register_forward_hook(lambda mod, inp, out: stds.append(out.std().item()))
    with torch.no_grad():
        net(x)
    return stds

# %% wrong id=activation_stds clause=every_linear -- returns the std of the final output only
def activation_stds(net, x):
    with torch.no_grad():
        return [net(x).std().item()]

# %% wrong id=activation_stds clause=plain_numbers -- returns 0-dim tensors instead of Python floats
def activation_stds(net, x):
    stds = []
    handles = [m.register_forward_hook(lambda mod, inp, out: stds.append(out.std()))
               for m in net.modules() if isinstance(m, nn.Linear)]
    try:
        with torch.no_grad():
            net(x)
    finally:
        for handle in handles:
            handle.remove()
    return stds

# %% wrong id=activation_stds clause=no_trace fails=test_activation_stds_no_trace -- records the graph: no torch.no_grad() around the forward pass
def activation_stds(net, x):
    stds = []
    handles = [m.register_forward_hook(lambda mod, inp, out: stds.append(out.std().item()))
               for m in net.modules() if isinstance(m, nn.Linear)]
    try:
        net(x)
    finally:
        for handle in handles:
            handle.remove()
    return stds

# %% wrong id=my_init clause=calls_weird_init -- draws its own weights instead of calling weird_init_
def my_init(m):
    if isinstance(m, nn.Linear):
        with torch.no_grad():
            m.weight.uniform_(-10, 10)

# %% wrong id=my_init clause=weight -- replaces the weight with a new Parameter instead of changing it in place
def my_init(m):
    if isinstance(m, nn.Linear):
        m.weight = nn.Parameter(weird_init_(torch.empty_like(m.weight)))

# %% wrong id=my_init clause=weight -- also runs weird_init_ on the bias
def my_init(m):
    if isinstance(m, nn.Linear):
        weird_init_(m.weight)
        if m.bias is not None:
            weird_init_(m.bias)

# %% wrong id=activation_stds clause=no_trace fails=test_activation_stds_no_trace -- detaches each output but runs the forward pass with autograd recording
def activation_stds(net, x):
    stds = []
    handles = [m.register_forward_hook(lambda mod, inp, out: stds.append(out.detach().std().item()))
               for m in net.modules() if isinstance(m, nn.Linear)]
    try:
        net(x)
    finally:
        for handle in handles:
            handle.remove()
    return stds

# %% wrong id=init_normal clause=in_place -- assigns new Parameters instead of filling the layer's own in place
def init_normal(m):
    if isinstance(m, nn.Linear):
        m.weight = nn.Parameter(torch.randn_like(m.weight) * 0.01)
        if m.bias is not None:
            m.bias = nn.Parameter(torch.zeros_like(m.bias))

# %% wrong id=weird_init_ clause=distribution fails=test_weird_init_ -- magnitudes from the mean of two uniforms: a tent on [5, 10], not uniform
def weird_init_(tensor):
    with torch.no_grad():
        mag = 5 + 2.5 * (torch.rand(tensor.shape, dtype=tensor.dtype) + torch.rand(tensor.shape, dtype=tensor.dtype))
        sign = torch.randint(0, 2, tensor.shape, dtype=tensor.dtype) * 2 - 1
        keep = (torch.rand(tensor.shape) < 0.5).to(tensor.dtype)
        tensor.copy_(mag * sign * keep)
    return tensor

# %% wrong id=weird_init_ clause=distribution fails=test_weird_init_ -- magnitudes from N(7.5, 1.25**2) clamped to [5, 10], not uniform
def weird_init_(tensor):
    with torch.no_grad():
        mag = torch.empty(tensor.shape, dtype=tensor.dtype).normal_(7.5, 1.25).clamp_(5, 10)
        sign = torch.randint(0, 2, tensor.shape, dtype=tensor.dtype) * 2 - 1
        keep = (torch.rand(tensor.shape) < 0.5).to(tensor.dtype)
        tensor.copy_(mag * sign * keep)
    return tensor

# %% wrong id=weird_init_ clause=independent -- decides the part by a fixed row pattern (rows 0, 4, 8... positive, 1, 5, 9... negative, the rest zero): the shares are right, the draws are not random
def weird_init_(tensor):
    with torch.no_grad():
        magnitude = torch.empty_like(tensor).uniform_(5, 10)
        row = torch.arange(tensor.shape[0], device=tensor.device).view(-1, *[1] * (tensor.dim() - 1)) % 4
        sign = (row == 0).to(tensor.dtype) - (row == 1).to(tensor.dtype)
        tensor.copy_(magnitude * sign)
    return tensor

# %% wrong id=weird_init_ clause=independent -- gives whole rows one part: a random quarter of the rows positive, another quarter negative
def weird_init_(tensor):
    with torch.no_grad():
        part = torch.randperm(tensor.shape[0], device=tensor.device) % 4
        part = part.view(-1, *[1] * (tensor.dim() - 1))
        sign = (part == 0).to(tensor.dtype) - (part == 1).to(tensor.dtype)
        tensor.uniform_(5, 10).mul_(sign)
    return tensor

# %% wrong id=init_normal clause=only_linear -- selects the layers by "has a 2-D weight", so an nn.Embedding is overwritten too
def init_normal(m):
    weight = getattr(m, "weight", None)
    if isinstance(weight, torch.Tensor) and weight.dim() == 2:
        nn.init.normal_(weight, std=0.01)
        if getattr(m, "bias", None) is not None:
            nn.init.zeros_(m.bias)

# %% wrong id=my_init clause=only_linear -- selects the layers by "has a 2-D weight", so an nn.Embedding is overwritten too
def my_init(m):
    if getattr(m, "weight", None) is not None and m.weight.dim() == 2:
        weird_init_(m.weight)

# %% wrong id=init_normal clause=no_seed says=set_a_seed -- seeds torch's generator inside, so every layer of a shape gets the same weights and the caller's random numbers restart
def init_normal(m):
    if isinstance(m, nn.Linear):
        torch.manual_seed(0)
        nn.init.normal_(m.weight, mean=0.0, std=0.01)
        if m.bias is not None:
            nn.init.zeros_(m.bias)

# %% wrong id=weird_init_ clause=in_place_device fails=test_weird_init__in_place seen_on=device says=on_a_GPU -- multiplies in place by a mask built on the CPU, which a tensor on a GPU refuses
def weird_init_(tensor):
    with torch.no_grad():
        values = torch.empty(tensor.shape, dtype=tensor.dtype).uniform_(-10, 10)
        tensor.copy_(values)
        tensor.mul_(values.abs() >= 5)
    return tensor

# %% wrong id=activation_stds clause=outputs says=inplace -- keeps the hooked output tensors and takes their std after the forward pass, when an in-place activation has overwritten them
def activation_stds(net, x):
    outputs = []
    handles = [m.register_forward_hook(lambda module, inputs, output: outputs.append(output))
               for m in net.modules() if isinstance(m, nn.Linear)]
    with torch.no_grad():
        net(x)
    for handle in handles:
        handle.remove()
    return [output.std().item() for output in outputs]
