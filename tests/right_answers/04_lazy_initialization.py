# Correct answers written differently from the model solution; every graded test must pass.

# %% right id=apply_init -- saves (module, mode) pairs, no_grad as a decorator
def apply_init(net, example_input, init_fn=None):
    saved = [(m, m.training) for m in net.modules()]

    @torch.no_grad()
    def dry_run():
        net.eval()
        return net(example_input)

    try:
        dry_run()
    finally:
        for m, mode in saved:
            m.training = mode
    if init_fn:
        net.apply(init_fn)
    return net

# %% right id=MultiWidthNet -- sized input layers made on first sight, other names, keys like 'w3'
class MultiWidthNet(nn.Module):
    def __init__(self, hidden=16, out_features=1):
        super().__init__()
        self.width_to_hidden = nn.ModuleDict()
        self.hidden = hidden
        self.act = nn.ReLU()
        self.head = nn.Linear(hidden, out_features)

    def forward(self, X):
        d = X.shape[-1]
        name = f"w{d}"
        if name not in self.width_to_hidden:
            layer = nn.Linear(d, self.hidden)
            self.width_to_hidden[name] = layer.to(self.head.weight.device, self.head.weight.dtype)
        return self.head(self.act(self.width_to_hidden[name](X)))

# %% right id=has_uninitialized_params -- asks torch's is_lazy about every parameter and buffer
def has_uninitialized_params(module):
    from itertools import chain
    from torch.nn.parameter import is_lazy
    return any(is_lazy(t) for t in chain(module.parameters(), module.buffers()))

# %% right id=has_uninitialized_params -- asks each lazy submodule's own has_uninitialized_params()
def has_uninitialized_params(module):
    from torch.nn.modules.lazy import LazyModuleMixin
    return any(m.has_uninitialized_params() for m in module.modules() if isinstance(m, LazyModuleMixin))

# %% right id=infer_shapes -- reads dtype and device with a loop, restores modes from a list
def infer_shapes(net, input_shape):
    options = {}
    for p in net.parameters():
        options = {"dtype": p.dtype, "device": p.device}
        break
    saved = [(m, m.training) for m in net.modules()]
    try:
        net.eval()
        with torch.no_grad():
            net(torch.zeros(*input_shape, **options))
    finally:
        for m, mode in saved:
            m.training = mode
    return list((name, tuple(p.size())) for name, p in net.named_parameters())

# %% right id=MultiWidthNet -- lazy input layers moved with .to() while still placeholders, functional ReLU
class MultiWidthNet(nn.Module):
    def __init__(self, hidden=16, out_features=1):
        super().__init__()
        self.out = nn.Linear(hidden, out_features)
        self.layers = nn.ModuleDict()

    def forward(self, X):
        key = f"d{X.shape[1]}"
        if key not in self.layers:
            self.layers[key] = nn.LazyLinear(self.out.in_features).to(self.out.weight)
        return self.out(nn.functional.relu(self.layers[key](X)))

# %% right id=infer_shapes -- zeros moved with .to(first parameter), modes saved as a list and set back by assignment
def infer_shapes(net, input_shape):
    params = list(net.parameters())
    zeros = torch.zeros(tuple(input_shape))
    if params:
        zeros = zeros.to(params[0])
    stack = [(m, m.training) for m in net.modules()]
    net.eval()
    try:
        with torch.no_grad():
            net(zeros)
    finally:
        for m, mode in stack:
            m.training = mode
    return [(name, tuple(p.shape)) for name, p in net.named_parameters()]

# %% right id=MultiWidthNet -- casts every input to the network's dtype and device before the input layer
class MultiWidthNet(nn.Module):
    def __init__(self, hidden=16, out_features=1):
        super().__init__()
        self.hidden = hidden
        self.per_width = nn.ModuleDict()
        self.relu = nn.ReLU()
        self.shared = nn.Linear(hidden, out_features)

    def forward(self, X):
        w = self.shared.weight
        X = X.to(device=w.device, dtype=w.dtype)
        if str(X.shape[-1]) not in self.per_width:
            self.per_width[str(X.shape[-1])] = nn.LazyLinear(self.hidden, device=w.device, dtype=w.dtype)
        return self.shared(self.relu(self.per_width[str(X.shape[-1])](X)))

# %% right id=has_uninitialized_params -- a loop over named parameters and buffers with an early return, torch's common base class
def has_uninitialized_params(module):
    from torch.nn.parameter import UninitializedTensorMixin
    for _, tensor in [*module.named_parameters(), *module.named_buffers()]:
        if isinstance(tensor, UninitializedTensorMixin):
            return True
    return False

# %% right id=apply_init -- set_grad_enabled(False), modes kept as a list in modules() order, net.train(False) for eval
def apply_init(net, example_input, init_fn=None):
    modules = list(net.modules())
    modes = [m.training for m in modules]
    net.train(False)
    try:
        with torch.set_grad_enabled(False):
            net(example_input)
    finally:
        for m, mode in zip(modules, modes):
            m.train(mode)
    if init_fn is not None:
        net.apply(init_fn)
    return net

# %% right id=apply_init -- a context manager of its own (contextlib) that puts each module's mode back by name
import contextlib


@contextlib.contextmanager
def _evaluating(net):
    before = {name: m.training for name, m in net.named_modules(remove_duplicate=False)}
    net.eval()
    try:
        yield
    finally:
        for name, m in net.named_modules(remove_duplicate=False):
            m.training = before[name]


def apply_init(net, example_input, init_fn=None):
    with _evaluating(net), torch.no_grad():
        net(example_input)
    if callable(init_fn):
        net.apply(init_fn)
    return net

# %% right id=infer_shapes -- torch.Size as the shape (a tuple subclass), zeros from torch.full, pairs built with zip
def infer_shapes(net, input_shape):
    first = next(net.parameters(), None)
    where = {} if first is None else {"dtype": first.dtype, "device": first.device}
    zeros = torch.full(tuple(input_shape), 0.0, **where)
    modes = [(m, m.training) for m in net.modules()]
    net.eval()
    try:
        with torch.no_grad():
            net(zeros)
    finally:
        for m, mode in modes:
            m.train(mode)
    names = [name for name, _ in net.named_parameters()]
    shapes = [p.shape for _, p in net.named_parameters()]
    return list(zip(names, shapes))

# %% right id=infer_shapes -- the whole function under @torch.no_grad() (a decorator, not a with block), modes kept in a list and set back with zip
@torch.no_grad()
def infer_shapes(net, input_shape):
    params = list(net.parameters())
    where = dict(dtype=params[0].dtype, device=params[0].device) if params else {}
    zeros = torch.zeros(*input_shape, **where)
    modules = list(net.modules())
    modes = [m.training for m in modules]
    net.train(False)
    try:
        net(zeros)
    finally:
        for m, mode in zip(modules, modes):
            m.training = mode
    return [(name, tuple(p.size())) for name, p in net.named_parameters()]

# %% right id=MultiWidthNet -- a sized nn.Linear made on first sight with device= and dtype=, applied through nn.functional.linear
class MultiWidthNet(nn.Module):
    def __init__(self, hidden=16, out_features=1):
        super().__init__()
        self.hidden = hidden
        self.inputs = nn.ModuleDict()
        self.out = nn.Linear(hidden, out_features)

    def forward(self, X):
        key = str(X.shape[-1])
        if key not in self.inputs:
            w = self.out.weight
            self.inputs[key] = nn.Linear(X.shape[-1], self.hidden, device=w.device, dtype=w.dtype)
        layer = self.inputs[key]
        return self.out(torch.relu(nn.functional.linear(X, layer.weight, layer.bias)))
