# Correct answers written differently from the model solution; every graded test must pass.

# %% right id=MySequential -- setattr for each child, the order kept as a tuple of names, forward through functools.reduce
import functools


class MySequential(nn.Module):
    def __init__(self, *modules):
        super().__init__()
        if len(modules) == 1 and isinstance(modules[0], dict):
            pairs = list(modules[0].items())
        else:
            pairs = [(str(i), m) for i, m in enumerate(modules)]
        for name, module in pairs:
            setattr(self, name, module)
        self.order = tuple(name for name, _ in pairs)

    def forward(self, X):
        return functools.reduce(lambda out, name: getattr(self, name)(out), self.order, X)

    def __getitem__(self, i):
        return getattr(self, self.order[i])

    def __len__(self):
        return len(self.order)

# %% right id=MySequential -- register_module with a layer_ prefix for positional children, a while loop over the values
class MySequential(nn.Module):
    def __init__(self, *args):
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for key in args[0]:
                self.register_module(key, args[0][key])
        else:
            for index in range(len(args)):
                self.register_module(f"layer_{index}", args[index])

    def forward(self, X):
        layers = list(self._modules.values())
        k = 0
        while k < len(layers):
            X = layers[k](X)
            k += 1
        return X

    def __getitem__(self, i):
        key = list(self._modules.keys())[i]
        return self._modules[key]

    def __len__(self):
        return sum(1 for _ in self._modules)

# %% right id=MySequential -- the names kept in a list, each child looked up with get_submodule
class MySequential(nn.Module):
    def __init__(self, *modules):
        super().__init__()
        if len(modules) == 1 and isinstance(modules[0], OrderedDict):
            pairs = modules[0].items()
        else:
            pairs = ((f"{i}", module) for i, module in enumerate(modules))
        self.names = []
        for name, module in pairs:
            self.add_module(name, module)
            self.names.append(name)

    def forward(self, X):
        out = X
        for name in self.names:
            out = self.get_submodule(name)(out)
        return out

    def __getitem__(self, i):
        return self.get_submodule(self.names[i])

    def __len__(self):
        return len(self.names)

# %% right id=ParallelBlock -- both branches in an nn.ModuleList, torch.concat over a list comprehension
class ParallelBlock(nn.Module):
    def __init__(self, net1, net2, dim=-1):
        super().__init__()
        self.branches = nn.ModuleList([net1, net2])
        self.dim = dim

    def forward(self, X):
        return torch.concat([branch(X) for branch in self.branches], dim=self.dim)

# %% right id=ParallelBlock -- add_module under other names, the outputs computed first, torch.concatenate with axis=
class ParallelBlock(nn.Module):
    def __init__(self, net1, net2, dim=-1):
        super().__init__()
        self.add_module("left", net1)
        self.add_module("right", net2)
        self.axis = dim

    def forward(self, X):
        a = self.left(X)
        b = self.right(X)
        return torch.concatenate((a, b), axis=self.axis)

# %% right id=ParallelBlock -- an nn.ModuleDict of branches, outputs gathered in a loop, torch.cat with the dim passed positionally
class ParallelBlock(nn.Module):
    def __init__(self, net1, net2, dim=-1):
        super().__init__()
        self.nets = nn.ModuleDict({"first": net1, "second": net2})
        self.cat_dim = dim

    def forward(self, X):
        outputs = []
        for key in ("first", "second"):
            outputs.append(self.nets[key](X))
        return torch.cat(outputs, self.cat_dim)

# %% right id=make_stack -- a loop that appends each new module to an empty nn.Sequential
def make_stack(factory, n):
    stack = nn.Sequential()
    for _ in range(n):
        stack.append(factory())
    return stack

# %% right id=make_stack -- named layers through an OrderedDict
def make_stack(factory, n):
    return nn.Sequential(OrderedDict((f"layer{i}", factory()) for i in range(n)))

# %% right id=make_stack -- a list built with map, add_module with string indices
def make_stack(factory, n):
    layers = list(map(lambda _: factory(), range(n)))
    stack = nn.Sequential()
    for i, layer in enumerate(layers):
        stack.add_module(str(i), layer)
    return stack

# %% right id=FixedHiddenMLP -- other names, torch.mm, clamp for ReLU, the loop halves by multiplying with 0.5
class FixedHiddenMLP(nn.Module):
    def __init__(self, in_features=20):
        super().__init__()
        self.hidden = nn.Linear(in_features, in_features)
        self.register_buffer("W", torch.rand((in_features, in_features)))

    def forward(self, X):
        h = self.hidden(X)
        h = torch.clamp(torch.mm(h, self.W) + 1, min=0)
        h = self.hidden(h)
        while torch.sum(torch.abs(h)) > 1:
            h = h * 0.5
        return torch.sum(h)

# %% right id=FixedHiddenMLP -- the layer called through a helper method, einsum for X @ W, L1 norm in the loop
class FixedHiddenMLP(nn.Module):
    def __init__(self, in_features=20):
        super().__init__()
        self.fc = nn.Linear(in_features, in_features)
        self.register_buffer("constant", torch.rand(in_features, in_features), persistent=True)

    def _fc(self, X):
        return self.fc(X)

    def forward(self, X):
        X = self._fc(X)
        X = torch.relu(torch.einsum("bi,ij->bj", X, self.constant) + 1)
        X = self._fc(X)
        while X.norm(p=1) > 1:
            X = X.div(2)
        return X.sum()

# %% right id=FixedHiddenMLP -- the buffer drawn first into a local, a for loop over the two uses, .item() in the loop test
class FixedHiddenMLP(nn.Module):
    def __init__(self, in_features=20):
        super().__init__()
        weight = torch.rand(in_features, in_features)
        self.register_buffer("rand_weight", weight)
        self.shared = nn.Linear(in_features, in_features)

    def forward(self, X):
        for step in range(2):
            X = self.shared(X)
            if step == 0:
                X = nn.functional.relu(torch.matmul(X, self.rand_weight) + 1)
        while X.abs().sum().item() > 1:
            X = X / 2
        return X.sum()
