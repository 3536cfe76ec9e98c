# Wrong answers students really write for exercise 2, one cell each.
# Each must lose exactly its own item's points (see tools/cells.py).

# %% wrong id=count_parameters clause=tied_once,no_buffers -- sums the state_dict (tied weights twice, buffers included)
def count_parameters(module, trainable_only=True):
    return sum(t.numel() for t in module.state_dict().values())

# %% wrong id=count_parameters clause=trainable_only -- ignores trainable_only
def count_parameters(module, trainable_only=True):
    return sum(p.numel() for p in module.parameters())

# %% wrong id=count_parameters clause=numel -- counts parameter tensors, not scalars
def count_parameters(module, trainable_only=True):
    return len([p for p in module.parameters() if p.requires_grad or not trainable_only])

# %% wrong id=count_parameters clause=tied_once -- walks every module's own parameters, so a weight shared by two layers counts twice
def count_parameters(module, trainable_only=True):
    return sum(p.numel() for m in module.modules() for p in m.parameters(recurse=False)
               if p.requires_grad or not trainable_only)

# %% wrong id=param_shapes clause=tuple_shapes -- stores shapes as lists
def param_shapes(module):
    return {name: list(p.shape) for name, p in module.named_parameters()}

# %% wrong id=param_shapes clause=qualified_names -- reads the state_dict, which also holds buffers
def param_shapes(module):
    return {name: tuple(t.shape) for name, t in module.state_dict().items()}

# %% wrong id=param_shapes clause=qualified_names -- uses each module's local names, so names collide
def param_shapes(module):
    shapes = {}
    for m in module.modules():
        for name, p in m.named_parameters(recurse=False):
            shapes[name] = tuple(p.shape)
    return shapes

# %% wrong id=param_shapes clause=tuple_shapes -- stores the number of elements instead of the shape
def param_shapes(module):
    return {name: p.numel() for name, p in module.named_parameters()}

# %% wrong id=make_rgnet clause=names -- names the blocks without the space
def make_rgnet():
    block2 = nn.Sequential()
    for i in range(4):
        block2.add_module(f"block{i}", nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 4), nn.ReLU()))
    return nn.Sequential(block2, nn.Linear(4, 1))

# %% wrong id=make_rgnet clause=no_sharing -- adds one block object four times
def make_rgnet():
    block = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 4), nn.ReLU())
    block2 = nn.Sequential()
    for i in range(4):
        block2.add_module(f"block {i}", block)
    return nn.Sequential(block2, nn.Linear(4, 1))

# %% wrong id=make_rgnet clause=names -- passes the blocks positionally, so they are named '0' to '3'
def make_rgnet():
    blocks = [nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 4), nn.ReLU()) for _ in range(4)]
    return nn.Sequential(nn.Sequential(*blocks), nn.Linear(4, 1))

# %% wrong id=make_rgnet clause=own_weights -- deep-copies one block four times: no shared parameters, but four equal starts
def make_rgnet():
    import copy

    block = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 4), nn.ReLU())
    block2 = nn.Sequential()
    for i in range(4):
        block2.add_module(f"block {i}", copy.deepcopy(block))
    return nn.Sequential(block2, nn.Linear(4, 1))

# %% wrong id=make_rgnet clause=block_layers -- leaves out each block's last ReLU
def make_rgnet():
    block2 = nn.Sequential()
    for i in range(4):
        block2.add_module(f"block {i}", nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 4)))
    return nn.Sequential(block2, nn.Linear(4, 1))

# %% wrong id=make_tied_mlp clause=tied -- creates two separate hidden layers
def make_tied_mlp(width=8):
    return nn.Sequential(nn.Linear(4, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU(),
                         nn.Linear(width, width), nn.ReLU(), nn.Linear(width, 1))

# %% wrong id=make_tied_mlp clause=tied -- deep-copies the shared layer, which unties it
import copy

def make_tied_mlp(width=8):
    shared = nn.Linear(width, width)
    return nn.Sequential(nn.Linear(4, width), nn.ReLU(), shared, nn.ReLU(), copy.deepcopy(shared),
                         nn.ReLU(), nn.Linear(width, 1))

# %% wrong id=make_tied_mlp clause=width -- hard-codes the width 8
def make_tied_mlp(width=8):
    shared = nn.Linear(8, 8)
    return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), shared, nn.ReLU(), shared, nn.ReLU(), nn.Linear(8, 1))

# %% wrong id=make_tied_mlp clause=new_each_call -- keeps one shared layer outside the function for every call
_SHARED = {}

def make_tied_mlp(width=8):
    shared = _SHARED.setdefault(width, nn.Linear(width, width))
    return nn.Sequential(nn.Linear(4, width), nn.ReLU(), shared, nn.ReLU(), shared, nn.ReLU(), nn.Linear(width, 1))

# %% wrong id=freeze clause=starts_with -- matches the prefix anywhere in the name
def freeze(module, prefixes):
    frozen = []
    for name, param in module.named_parameters():
        if any(prefix in name for prefix in prefixes):
            param.requires_grad_(False)
            frozen.append(name)
    return frozen

# %% wrong id=freeze clause=on_parameter -- switches off requires_grad on .data, a detached view
def freeze(module, prefixes):
    frozen = []
    for name, param in module.named_parameters():
        if name.startswith(tuple(prefixes)):
            param.data.requires_grad_(False)
            frozen.append(name)
    return frozen

# %% wrong id=freeze clause=starts_with -- needs the whole name to equal a prefix
def freeze(module, prefixes):
    frozen = []
    for name, param in module.named_parameters():
        if name in prefixes:
            param.requires_grad_(False)
            frozen.append(name)
    return frozen

# %% wrong id=freeze clause=returns_names -- freezes but forgets to return the names
def freeze(module, prefixes):
    for name, param in module.named_parameters():
        if name.startswith(tuple(prefixes)):
            param.requires_grad = False

# %% wrong id=freeze clause=on_parameter -- a generator: it freezes only while someone iterates its result, so a bare call freezes nothing
def freeze(module, prefixes):
    for name, param in module.named_parameters():
        if name.startswith(tuple(prefixes)):
            param.requires_grad_(False)
            yield name

# %% wrong id=make_rgnet clause=own_weights -- builds blocks 0 and 3 anew but deep-copies block 0 into blocks 1 and 2
def make_rgnet():
    import copy

    def block():
        return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 4), nn.ReLU())

    b0 = block()
    block2 = nn.Sequential(OrderedDict([("block 0", b0), ("block 1", copy.deepcopy(b0)),
                                        ("block 2", copy.deepcopy(b0)), ("block 3", block())]))
    return nn.Sequential(block2, nn.Linear(4, 1))

# %% wrong id=count_parameters clause=no_buffers says=buffers -- counts the buffers too when trainable_only=False (running statistics are not parameters)
def count_parameters(module, trainable_only=True):
    if trainable_only:
        return sum(p.numel() for p in module.parameters() if p.requires_grad)
    return sum(t.numel() for t in [*module.parameters(), *module.buffers()])

# %% wrong id=count_parameters clause=integer says=integer -- sums the sizes as a tensor, so a module without parameters gives the float 0.0
def count_parameters(module, trainable_only=True):
    sizes = [p.numel() for p in module.parameters() if p.requires_grad or not trainable_only]
    return torch.tensor(sizes).sum()

# %% wrong id=param_shapes clause=frozen says=frozen -- leaves out frozen parameters (requires_grad=False)
def param_shapes(module):
    return {name: tuple(p.shape) for name, p in module.named_parameters() if p.requires_grad}

# %% wrong id=freeze clause=others_kept says=frozen_earlier -- sets every flag from the match, so a second call unfreezes what the first froze
def freeze(module, prefixes):
    frozen = []
    for name, param in module.named_parameters():
        match = name.startswith(tuple(prefixes))
        param.requires_grad = not match
        if match:
            frozen.append(name)
    return frozen

# %% wrong id=make_rgnet clause=no_seed -- seeds torch's generator first "for reproducibility", so every net starts from the same weights and the caller's random numbers restart
def make_rgnet():
    torch.manual_seed(0)
    block2 = nn.Sequential()
    for i in range(4):
        block2.add_module(f"block {i}", nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 4), nn.ReLU()))
    return nn.Sequential(block2, nn.Linear(4, 1))

# %% wrong id=make_rgnet clause=device -- builds the net and then moves it to the CPU "to be safe", so a default device is ignored
def make_rgnet():
    block2 = nn.Sequential()
    for i in range(4):
        block2.add_module(f"block {i}", nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 4), nn.ReLU()))
    return nn.Sequential(block2, nn.Linear(4, 1)).cpu()

# %% wrong id=make_tied_mlp clause=no_seed -- seeds torch's generator first, so every net starts from the same weights and the caller's random numbers restart
def make_tied_mlp(width=8):
    torch.manual_seed(0)
    shared = nn.Linear(width, width)
    return nn.Sequential(nn.Linear(4, width), nn.ReLU(), shared, nn.ReLU(), shared, nn.ReLU(), nn.Linear(width, 1))
