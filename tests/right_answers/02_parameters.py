# Correct answers written differently from the model solution; every graded test must pass.

# %% right id=count_parameters -- numpy: np.prod of each shape, so the count is a numpy.int64
import numpy as np


def count_parameters(module, trainable_only=True):
    return sum(np.prod(p.shape) for p in module.parameters() if p.requires_grad or not trainable_only)

# %% right id=count_parameters -- a loop over every module's own parameters, a tied one skipped by its id
def count_parameters(module, trainable_only=True):
    seen = set()
    total = 0
    for m in module.modules():
        for p in m.parameters(recurse=False):
            if id(p) in seen or (trainable_only and not p.requires_grad):
                continue
            seen.add(id(p))
            total += p.nelement()
    return total

# %% right id=count_parameters -- math.prod of p.size(), the list filtered first when trainable_only is set
import math


def count_parameters(module, trainable_only=True):
    params = list(module.parameters())
    if trainable_only:
        params = [p for p in params if p.requires_grad]
    return sum(math.prod(p.size()) for p in params)

# %% right id=count_parameters -- named_parameters into a dict, the sizes summed by torch and read back with item()
def count_parameters(module, trainable_only=True):
    kept = {name: p for name, p in module.named_parameters() if p.requires_grad or not trainable_only}
    if not kept:
        return 0
    return int(torch.tensor([p.numel() for p in kept.values()]).sum().item())

# %% right id=param_shapes -- an OrderedDict, like the state_dict, with tuple(p.size())
def param_shapes(module):
    return OrderedDict((name, tuple(p.size())) for name, p in module.named_parameters())

# %% right id=param_shapes -- a loop that fills a dict, each dimension converted with int()
def param_shapes(module):
    shapes = {}
    for name, p in module.named_parameters():
        shapes[name] = tuple(int(d) for d in p.shape)
    return shapes

# %% right id=param_shapes -- p.shape kept as it is: a torch.Size, which is a tuple of ints
def param_shapes(module):
    return {name: p.shape for name, p in module.named_parameters()}

# %% right id=make_rgnet -- the blocks from a helper function, named through an OrderedDict
def make_rgnet():
    def block():
        return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 4), nn.ReLU())

    block2 = nn.Sequential(OrderedDict((f"block {i}", block()) for i in range(4)))
    return nn.Sequential(block2, nn.Linear(4, 1))

# %% right id=make_rgnet -- deep copies of one block, each given fresh weights with reset_parameters()
import copy


def make_rgnet():
    template = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 4), nn.ReLU())
    block2 = nn.Sequential()
    for i in range(4):
        block = copy.deepcopy(template)
        for layer in block:
            if isinstance(layer, nn.Linear):
                layer.reset_parameters()
        block2.register_module("block " + str(i), block)
    return nn.Sequential(block2, nn.Linear(4, 1))

# %% right id=make_rgnet -- blocks made from a list of layers, each set as an attribute with setattr
def make_rgnet():
    block2 = nn.Sequential()
    for i in range(4):
        layers = [nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 4), nn.ReLU()]
        setattr(block2, f"block {i}", nn.Sequential(*layers))
    output = nn.Linear(4, 1)
    return nn.Sequential(block2, output)

# %% right id=make_tied_mlp -- the layers in a list, the shared pair repeated with list multiplication
def make_tied_mlp(width=8):
    shared = nn.Linear(width, width)
    layers = [nn.Linear(4, width), nn.ReLU()] + [shared, nn.ReLU()] * 2 + [nn.Linear(width, 1)]
    return nn.Sequential(*layers)

# %% right id=make_tied_mlp -- named positions through an OrderedDict, the shared layer under two names
def make_tied_mlp(width=8):
    hidden = nn.Linear(width, width)
    return nn.Sequential(OrderedDict([
        ("inp", nn.Linear(4, width)), ("act1", nn.ReLU()),
        ("hidden1", hidden), ("act2", nn.ReLU()),
        ("hidden2", hidden), ("act3", nn.ReLU()),
        ("out", nn.Linear(width, 1)),
    ]))

# %% right id=make_tied_mlp -- appended one by one to an empty nn.Sequential
def make_tied_mlp(width=8):
    net = nn.Sequential()
    shared = nn.Linear(width, width)
    net.append(nn.Linear(4, width)).append(nn.ReLU())
    for _ in range(2):
        net.append(shared).append(nn.ReLU())
    net.append(nn.Linear(width, 1))
    return net

# %% right id=freeze -- any() over the prefixes, requires_grad set by assignment
def freeze(module, prefixes):
    names = []
    for name, param in module.named_parameters():
        if any(name.startswith(prefix) for prefix in prefixes):
            param.requires_grad = False
            names.append(name)
    return names

# %% right id=freeze -- the names chosen first with a list comprehension, then frozen through a dict of parameters
def freeze(module, prefixes):
    params = dict(module.named_parameters())
    chosen = [name for name in params if any(name[:len(p)] == p for p in prefixes)]
    for name in chosen:
        params[name].requires_grad_(False)
    return chosen

# %% right id=freeze -- a regular expression of the escaped prefixes, none when the list is empty
import re


def freeze(module, prefixes):
    if not prefixes:
        return []
    pattern = re.compile("|".join(re.escape(p) for p in prefixes))
    frozen = []
    for name, param in module.named_parameters():
        if pattern.match(name):
            param.requires_grad_(requires_grad=False)
            frozen += [name]
    return frozen
