# Wrong answers students really write for exercise 4, one cell each.
# Each must lose exactly its own item's points (see tools/cells.py).
# Apart from its named mistake, each one does what the instructions ask, so
# the tests are shown to catch that mistake on its own.

# %% wrong id=has_uninitialized_params clause=any -- requires every parameter to be lazy
def has_uninitialized_params(module):
    tensors = [*module.parameters(), *module.buffers()]
    placeholders = (nn.parameter.UninitializedParameter, nn.parameter.UninitializedBuffer)
    return bool(tensors) and all(isinstance(t, placeholders) for t in tensors)

# %% wrong id=has_uninitialized_params clause=not_class -- looks for lazy module classes instead of lazy parameters
def has_uninitialized_params(module):
    return any(type(m).__name__.startswith("Lazy") for m in module.modules())

# %% wrong id=has_uninitialized_params clause=any_inside -- checks only the top module's own parameters and buffers
def has_uninitialized_params(module):
    tensors = [*module.parameters(recurse=False), *module.buffers(recurse=False)]
    return any(nn.parameter.is_lazy(t) for t in tensors)

# %% wrong id=has_uninitialized_params clause=kind_not_size -- asks each parameter for its size
def has_uninitialized_params(module):
    return any(p.numel() == 0 for p in [*module.parameters(), *module.buffers()])

# %% wrong id=has_uninitialized_params clause=buffers -- checks parameters only, so lazy buffers (LazyBatchNorm1d(affine=False)) are missed
def has_uninitialized_params(module):
    return any(isinstance(p, nn.parameter.UninitializedParameter) for p in module.parameters())

# %% wrong id=apply_init clause=after_dry_run -- initializes before the dry run
def apply_init(net, example_input, init_fn=None):
    if init_fn is not None:
        net.apply(init_fn)
    modes = {module: module.training for module in net.modules()}
    net.eval()
    try:
        with torch.no_grad():
            net(example_input)
    finally:
        for module, training in modes.items():
            module.train(training)
    return net

# %% wrong id=apply_init clause=no_grad -- records gradients during the dry run
def apply_init(net, example_input, init_fn=None):
    modes = {module: module.training for module in net.modules()}
    net.eval()
    try:
        net(example_input)
    finally:
        for module, training in modes.items():
            module.train(training)
    if init_fn is not None:
        net.apply(init_fn)
    return net

# %% wrong id=apply_init clause=trains_after -- uses inference_mode, so the weights become inference tensors
def apply_init(net, example_input, init_fn=None):
    modes = {module: module.training for module in net.modules()}
    net.eval()
    try:
        with torch.inference_mode():
            net(example_input)
    finally:
        for module, training in modes.items():
            module.train(training)
    if init_fn is not None:
        net.apply(init_fn)
    return net

# %% wrong id=apply_init clause=init_fn_apply -- calls init_fn on the network itself instead of net.apply
def apply_init(net, example_input, init_fn=None):
    modes = {module: module.training for module in net.modules()}
    net.eval()
    try:
        with torch.no_grad():
            net(example_input)
    finally:
        for module, training in modes.items():
            module.train(training)
    if init_fn is not None:
        init_fn(net)
    return net

# %% wrong id=apply_init clause=returns_net -- forgets to return the network
def apply_init(net, example_input, init_fn=None):
    modes = {module: module.training for module in net.modules()}
    net.eval()
    try:
        with torch.no_grad():
            net(example_input)
    finally:
        for module, training in modes.items():
            module.train(training)
    if init_fn is not None:
        net.apply(init_fn)

# %% wrong id=apply_init clause=modes_eval fails=test_apply_init_modes -- dry run in training mode: BatchNorm statistics move (no_grad does not stop that)
def apply_init(net, example_input, init_fn=None):
    with torch.no_grad():
        net(example_input)
    if init_fn is not None:
        net.apply(init_fn)
    return net

# %% wrong id=apply_init clause=modes fails=test_apply_init_modes -- switches to eval for the dry run and leaves the net there
def apply_init(net, example_input, init_fn=None):
    net.eval()
    with torch.no_grad():
        net(example_input)
    if init_fn is not None:
        net.apply(init_fn)
    return net

# %% wrong id=apply_init clause=modes fails=test_apply_init_modes -- puts every module back into train(), even a BatchNorm frozen in eval
def apply_init(net, example_input, init_fn=None):
    was_training = net.training
    net.eval()
    try:
        with torch.no_grad():
            net(example_input)
    finally:
        net.train(was_training)
    if init_fn is not None:
        net.apply(init_fn)
    return net

# %% wrong id=apply_init clause=when_it_raises fails=test_apply_init_when_it_raises -- restores the modes only when the dry run succeeds (no try/finally)
def apply_init(net, example_input, init_fn=None):
    modes = {module: module.training for module in net.modules()}
    net.eval()
    with torch.no_grad():
        net(example_input)
    for module, training in modes.items():
        module.train(training)
    if init_fn is not None:
        net.apply(init_fn)
    return net

# %% wrong id=apply_init clause=when_it_raises_error fails=test_apply_init_when_it_raises -- restores the modes on error but swallows the error
def apply_init(net, example_input, init_fn=None):
    modes = {module: module.training for module in net.modules()}
    net.eval()
    try:
        with torch.no_grad():
            net(example_input)
    except RuntimeError:
        pass
    finally:
        for module, training in modes.items():
            module.train(training)
    if init_fn is not None:
        net.apply(init_fn)
    return net

# %% wrong id=apply_init clause=call_module -- calls net.forward, which skips net's own hooks: a lazy layer passed as the net never materializes
def apply_init(net, example_input, init_fn=None):
    modes = {module: module.training for module in net.modules()}
    net.eval()
    try:
        with torch.no_grad():
            net.forward(example_input)
    finally:
        for module, training in modes.items():
            module.train(training)
    if init_fn is not None:
        net.apply(init_fn)
    return net

# %% wrong id=apply_init clause=modes fails=test_apply_init_modes -- dry run in eval mode but restores only the top module's flag
def apply_init(net, example_input, init_fn=None):
    was_training = net.training
    net.eval()
    try:
        with torch.no_grad():
            net(example_input)
    finally:
        net.training = was_training
    if init_fn is not None:
        net.apply(init_fn)
    return net

# %% wrong id=apply_init clause=modes fails=test_apply_init_modes -- restores the modes of net and its direct children only: a BatchNorm frozen deeper down wakes up
def apply_init(net, example_input, init_fn=None):
    modes = [(m, m.training) for m in [net, *net.children()]]
    net.eval()
    try:
        with torch.no_grad():
            net(example_input)
    finally:
        for m, training in modes:
            m.train(training)
    if init_fn is not None:
        net.apply(init_fn)
    return net

# %% wrong id=infer_shapes clause=named_parameters -- lists the state_dict, buffers included
def infer_shapes(net, input_shape):
    first = next(iter(net.parameters()), None)
    zeros = torch.zeros(input_shape) if first is None else torch.zeros(input_shape, dtype=first.dtype, device=first.device)
    modes = {module: module.training for module in net.modules()}
    net.eval()
    try:
        with torch.no_grad():
            net(zeros)
    finally:
        for module, training in modes.items():
            module.train(training)
    return [(name, tuple(t.shape)) for name, t in net.state_dict().items()]

# %% wrong id=infer_shapes clause=input_shape -- adds a batch dimension of its own
def infer_shapes(net, input_shape):
    first = next(iter(net.parameters()), None)
    zeros = torch.zeros(1, *input_shape) if first is None else torch.zeros(1, *input_shape, dtype=first.dtype, device=first.device)
    modes = {module: module.training for module in net.modules()}
    net.eval()
    try:
        with torch.no_grad():
            net(zeros)
    finally:
        for module, training in modes.items():
            module.train(training)
    return [(name, tuple(p.shape)) for name, p in net.named_parameters()]

# %% wrong id=infer_shapes clause=list_of_pairs -- returns a dict instead of a list of pairs
def infer_shapes(net, input_shape):
    first = next(iter(net.parameters()), None)
    zeros = torch.zeros(input_shape) if first is None else torch.zeros(input_shape, dtype=first.dtype, device=first.device)
    modes = {module: module.training for module in net.modules()}
    net.eval()
    try:
        with torch.no_grad():
            net(zeros)
    finally:
        for module, training in modes.items():
            module.train(training)
    return {name: tuple(p.shape) for name, p in net.named_parameters()}

# %% wrong id=infer_shapes clause=named_parameters -- uses short names from each module's own parameters
def infer_shapes(net, input_shape):
    first = next(iter(net.parameters()), None)
    zeros = torch.zeros(input_shape) if first is None else torch.zeros(input_shape, dtype=first.dtype, device=first.device)
    modes = {module: module.training for module in net.modules()}
    net.eval()
    try:
        with torch.no_grad():
            net(zeros)
    finally:
        for module, training in modes.items():
            module.train(training)
    return [(name, tuple(p.shape)) for m in net.modules() for name, p in m.named_parameters(recurse=False)]

# %% wrong id=infer_shapes clause=zeros -- uses random input instead of zeros
def infer_shapes(net, input_shape):
    first = next(iter(net.parameters()), None)
    example = torch.randn(input_shape) if first is None else torch.randn(input_shape, dtype=first.dtype, device=first.device)
    modes = {module: module.training for module in net.modules()}
    net.eval()
    try:
        with torch.no_grad():
            net(example)
    finally:
        for module, training in modes.items():
            module.train(training)
    return [(name, tuple(p.shape)) for name, p in net.named_parameters()]

# %% wrong id=infer_shapes clause=eval_no_grad -- dry run in training mode: BatchNorm statistics move (no_grad does not stop that)
def infer_shapes(net, input_shape):
    first = next(iter(net.parameters()), None)
    zeros = torch.zeros(input_shape) if first is None else torch.zeros(input_shape, dtype=first.dtype, device=first.device)
    with torch.no_grad():
        net(zeros)
    return [(name, tuple(p.shape)) for name, p in net.named_parameters()]

# %% wrong id=infer_shapes clause=modes -- switches to eval for the dry run and leaves the net there
def infer_shapes(net, input_shape):
    first = next(iter(net.parameters()), None)
    zeros = torch.zeros(input_shape) if first is None else torch.zeros(input_shape, dtype=first.dtype, device=first.device)
    net.eval()
    with torch.no_grad():
        net(zeros)
    return [(name, tuple(p.shape)) for name, p in net.named_parameters()]

# %% wrong id=infer_shapes clause=modes -- restores the modes only when the dry run succeeds (no try/finally)
def infer_shapes(net, input_shape):
    first = next(iter(net.parameters()), None)
    zeros = torch.zeros(input_shape) if first is None else torch.zeros(input_shape, dtype=first.dtype, device=first.device)
    modes = {module: module.training for module in net.modules()}
    net.eval()
    with torch.no_grad():
        net(zeros)
    for module, training in modes.items():
        module.train(training)
    return [(name, tuple(p.shape)) for name, p in net.named_parameters()]

# %% wrong id=infer_shapes clause=dtype_device -- zeros of the default dtype: a network moved to float64 fails
def infer_shapes(net, input_shape):
    modes = {module: module.training for module in net.modules()}
    net.eval()
    try:
        with torch.no_grad():
            net(torch.zeros(input_shape))
    finally:
        for module, training in modes.items():
            module.train(training)
    return [(name, tuple(p.shape)) for name, p in net.named_parameters()]

# %% wrong id=MultiWidthNet clause=layer_per_width fails=test_MultiWidthNet,test_MultiWidthNet_dtype -- one lazy input layer for every width: it fixes its width at the first batch
class MultiWidthNet(nn.Module):
    def __init__(self, hidden=16, out_features=1):
        super().__init__()
        self.net = nn.Sequential(nn.LazyLinear(hidden), nn.ReLU(), nn.Linear(hidden, out_features))

    def forward(self, X):
        return self.net(X)

# %% wrong id=MultiWidthNet clause=registered -- keeps the input layers in a plain dict, so they are not registered
class MultiWidthNet(nn.Module):
    def __init__(self, hidden=16, out_features=1):
        super().__init__()
        self.hidden = hidden
        self.inputs = {}
        self.body = nn.Sequential(nn.ReLU(), nn.Linear(hidden, out_features))

    def forward(self, X):
        d = X.shape[-1]
        if d not in self.inputs:
            shared = self.body[1].weight
            self.inputs[d] = nn.LazyLinear(self.hidden, device=shared.device, dtype=shared.dtype)
        return self.body(self.inputs[d](X))

# %% wrong id=MultiWidthNet clause=layer_per_width -- makes a new input layer on every call
class MultiWidthNet(nn.Module):
    def __init__(self, hidden=16, out_features=1):
        super().__init__()
        self.hidden = hidden
        self.inputs = nn.ModuleDict()
        self.body = nn.Sequential(nn.ReLU(), nn.Linear(hidden, out_features))

    def forward(self, X):
        key = str(X.shape[-1])
        shared = self.body[1].weight
        self.inputs[key] = nn.LazyLinear(self.hidden, device=shared.device, dtype=shared.dtype)
        return self.body(self.inputs[key](X))

# %% wrong id=MultiWidthNet clause=shared_body fails=test_MultiWidthNet,test_MultiWidthNet_dtype -- a whole network per width (made with the input's dtype): the body is not shared
class MultiWidthNet(nn.Module):
    def __init__(self, hidden=16, out_features=1):
        super().__init__()
        self.hidden, self.out_features = hidden, out_features
        self.nets = nn.ModuleDict()

    def forward(self, X):
        key = str(X.shape[-1])
        if key not in self.nets:
            self.nets[key] = nn.Sequential(nn.LazyLinear(self.hidden), nn.ReLU(),
                                           nn.Linear(self.hidden, self.out_features)).to(X.device, X.dtype)
        return self.nets[key](X)

# %% wrong id=MultiWidthNet clause=layer_per_width -- keys the input layers on the batch size instead of the width
class MultiWidthNet(nn.Module):
    def __init__(self, hidden=16, out_features=1):
        super().__init__()
        self.hidden = hidden
        self.inputs = nn.ModuleDict()
        self.body = nn.Sequential(nn.ReLU(), nn.Linear(hidden, out_features))

    def forward(self, X):
        key = str(X.shape[0])
        if key not in self.inputs:
            shared = self.body[1].weight
            self.inputs[key] = nn.LazyLinear(self.hidden, device=shared.device, dtype=shared.dtype)
        return self.body(self.inputs[key](X))

# %% wrong id=MultiWidthNet clause=sizes -- ignores the constructor's sizes
class MultiWidthNet(nn.Module):
    def __init__(self, hidden=16, out_features=1):
        super().__init__()
        self.inputs = nn.ModuleDict()
        self.body = nn.Sequential(nn.ReLU(), nn.Linear(16, 2))

    def forward(self, X):
        key = str(X.shape[-1])
        if key not in self.inputs:
            shared = self.body[1].weight
            self.inputs[key] = nn.LazyLinear(16, device=shared.device, dtype=shared.dtype)
        return self.body(self.inputs[key](X))

# %% wrong id=MultiWidthNet clause=formula -- no ReLU: the network is one linear map
class MultiWidthNet(nn.Module):
    def __init__(self, hidden=16, out_features=1):
        super().__init__()
        self.hidden = hidden
        self.inputs = nn.ModuleDict()
        self.output = nn.Linear(hidden, out_features)

    def forward(self, X):
        key = str(X.shape[-1])
        if key not in self.inputs:
            shared = self.output.weight
            self.inputs[key] = nn.LazyLinear(self.hidden, device=shared.device, dtype=shared.dtype)
        return self.output(self.inputs[key](X))

# %% wrong id=MultiWidthNet clause=formula -- the ReLU on the output instead of on the hidden layer
class MultiWidthNet(nn.Module):
    def __init__(self, hidden=16, out_features=1):
        super().__init__()
        self.hidden = hidden
        self.inputs = nn.ModuleDict()
        self.output = nn.Linear(hidden, out_features)

    def forward(self, X):
        key = str(X.shape[-1])
        if key not in self.inputs:
            shared = self.output.weight
            self.inputs[key] = nn.LazyLinear(self.hidden, device=shared.device, dtype=shared.dtype)
        return torch.relu(self.output(self.inputs[key](X)))

# %% wrong id=MultiWidthNet clause=dtype fails=test_MultiWidthNet_dtype -- makes a new input layer on the default dtype: a new width after .to(torch.float64) fails
class MultiWidthNet(nn.Module):
    def __init__(self, hidden=16, out_features=1):
        super().__init__()
        self.hidden = hidden
        self.inputs = nn.ModuleDict()
        self.body = nn.Sequential(nn.ReLU(), nn.Linear(hidden, out_features))

    def forward(self, X):
        key = str(X.shape[-1])
        if key not in self.inputs:
            self.inputs[key] = nn.LazyLinear(self.hidden)
        return self.body(self.inputs[key](X))

# %% wrong id=MultiWidthNet clause=dtype fails=test_MultiWidthNet_dtype -- remembers the dtype and device in the constructor: .to() later does not change where new input layers are made
class MultiWidthNet(nn.Module):
    def __init__(self, hidden=16, out_features=1):
        super().__init__()
        self.hidden = hidden
        self.inputs = nn.ModuleDict()
        self.body = nn.Sequential(nn.ReLU(), nn.Linear(hidden, out_features))
        self.dtype, self.device = self.body[1].weight.dtype, self.body[1].weight.device

    def forward(self, X):
        key = str(X.shape[-1])
        if key not in self.inputs:
            self.inputs[key] = nn.LazyLinear(self.hidden, device=self.device, dtype=self.dtype)
        return self.body(self.inputs[key](X))

# %% wrong id=MultiWidthNet clause=dtype fails=test_MultiWidthNet_dtype -- reads where the network lives once, at the first call, and keeps using it after .to()
class MultiWidthNet(nn.Module):
    def __init__(self, hidden=16, out_features=1):
        super().__init__()
        self.hidden = hidden
        self.inputs = nn.ModuleDict()
        self.body = nn.Sequential(nn.ReLU(), nn.Linear(hidden, out_features))
        self.where = None

    def forward(self, X):
        if self.where is None:
            shared = self.body[1].weight
            self.where = {"device": shared.device, "dtype": shared.dtype}
        key = str(X.shape[-1])
        if key not in self.inputs:
            self.inputs[key] = nn.LazyLinear(self.hidden, **self.where)
        return self.body(self.inputs[key](X))

# %% wrong id=infer_shapes clause=dtype_device -- zeros with the network's dtype but on the default device: a network on another device fails
def infer_shapes(net, input_shape):
    first = next(iter(net.parameters()), None)
    zeros = torch.zeros(input_shape) if first is None else torch.zeros(input_shape, dtype=first.dtype)
    modes = {module: module.training for module in net.modules()}
    net.eval()
    try:
        with torch.no_grad():
            net(zeros)
    finally:
        for module, training in modes.items():
            module.train(training)
    return [(name, tuple(p.shape)) for name, p in net.named_parameters()]

# %% wrong id=infer_shapes clause=modes -- restores the modes of net and its direct children only: a BatchNorm frozen deeper down wakes up
def infer_shapes(net, input_shape):
    first = next(iter(net.parameters()), None)
    zeros = torch.zeros(input_shape) if first is None else torch.zeros(input_shape, dtype=first.dtype, device=first.device)
    modes = [(m, m.training) for m in [net, *net.children()]]
    net.eval()
    try:
        with torch.no_grad():
            net(zeros)
    finally:
        for m, training in modes:
            m.train(training)
    return [(name, tuple(p.shape)) for name, p in net.named_parameters()]

# %% wrong id=MultiWidthNet clause=dtype fails=test_MultiWidthNet_dtype -- makes a new input layer with the input's dtype and device, not the network's
class MultiWidthNet(nn.Module):
    def __init__(self, hidden=16, out_features=1):
        super().__init__()
        self.hidden = hidden
        self.inputs = nn.ModuleDict()
        self.body = nn.Sequential(nn.ReLU(), nn.Linear(hidden, out_features))

    def forward(self, X):
        key = str(X.shape[-1])
        if key not in self.inputs:
            self.inputs[key] = nn.LazyLinear(self.hidden, device=X.device, dtype=X.dtype)
        return self.body(self.inputs[key](X))

# %% wrong id=has_uninitialized_params clause=kind_not_size -- takes the placeholder's dummy size (0,) as the sign of a lazy tensor, so a real empty buffer counts as lazy
def has_uninitialized_params(module):
    return any(t.size() == (0,) for t in [*module.parameters(), *module.buffers()])

# %% wrong id=MultiWidthNet clause=dtype fails=test_MultiWidthNet_dtype -- makes a new input layer with the network's dtype but ignores its device: after .to(a GPU) it lands on the CPU
class MultiWidthNet(nn.Module):
    def __init__(self, hidden=16, out_features=1):
        super().__init__()
        self.hidden = hidden
        self.inputs = nn.ModuleDict()
        self.body = nn.Sequential(nn.ReLU(), nn.Linear(hidden, out_features))

    def forward(self, X):
        key = str(X.shape[-1])
        if key not in self.inputs:
            self.inputs[key] = nn.LazyLinear(self.hidden, dtype=self.body[1].weight.dtype)
        return self.body(self.inputs[key](X))

# %% wrong id=infer_shapes clause=eval_no_grad says=recorded_gradients -- runs the dry run in eval mode but without torch.no_grad(), so it records gradients
def infer_shapes(net, input_shape):
    first = next(iter(net.parameters()), None)
    if first is None:
        zeros = torch.zeros(input_shape)
    else:
        zeros = torch.zeros(input_shape, dtype=first.dtype, device=first.device)
    modes = {module: module.training for module in net.modules()}
    net.eval()
    try:
        net(zeros)
    finally:
        for module, training in modes.items():
            module.train(training)
    return [(name, tuple(p.shape)) for name, p in net.named_parameters()]

# %% wrong id=MultiWidthNet clause=no_seed -- seeds torch's generator in __init__ "for reproducibility", so every net starts alike and the caller's random numbers restart
class MultiWidthNet(nn.Module):
    def __init__(self, hidden=16, out_features=1):
        super().__init__()
        torch.manual_seed(0)
        self.hidden = hidden
        self.inputs = nn.ModuleDict()
        self.body = nn.Sequential(nn.ReLU(), nn.Linear(hidden, out_features))

    def forward(self, X):
        key = str(X.shape[-1])
        if key not in self.inputs:
            shared = self.body[1].weight
            self.inputs[key] = nn.LazyLinear(self.hidden, device=shared.device, dtype=shared.dtype)
        return self.body(self.inputs[key](X))
