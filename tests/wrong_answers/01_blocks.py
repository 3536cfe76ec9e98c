# Wrong answers students really write for exercise 1, one cell each.
# Each must lose exactly its own item's points (see tools/cells.py).

# %% wrong id=MySequential clause=registered fails=test_MySequential,test_MySequential_ordereddict,test_MySequential_repeated -- keeps the modules in a plain Python list
class MySequential(nn.Module):
    def __init__(self, *modules):
        super().__init__()
        self.layers = list(modules)

    def forward(self, X):
        for layer in self.layers:
            X = layer(X)
        return X

    def __getitem__(self, i):
        return self.layers[i]

    def __len__(self):
        return len(self.layers)

# %% wrong id=MySequential clause=ordereddict fails=test_MySequential_ordereddict,test_MySequential_repeated -- registers an OrderedDict argument as if it were one module
class MySequential(nn.Module):
    def __init__(self, *modules):
        super().__init__()
        for idx, module in enumerate(modules):
            self.add_module(str(idx), module)

    def forward(self, X):
        for module in self.children():
            X = module(X)
        return X

    def __getitem__(self, i):
        return list(self.children())[i]

    def __len__(self):
        return len(self._modules)

# %% wrong id=MySequential clause=ordereddict fails=test_MySequential_ordereddict,test_MySequential_repeated -- numbers the OrderedDict's modules instead of using its names
class MySequential(nn.Module):
    def __init__(self, *modules):
        super().__init__()
        if len(modules) == 1 and isinstance(modules[0], OrderedDict):
            modules = list(modules[0].values())
        for idx, module in enumerate(modules):
            self.add_module(str(idx), module)

    def forward(self, X):
        for module in self.children():
            X = module(X)
        return X

    def __getitem__(self, i):
        return list(self.children())[i]

    def __len__(self):
        return len(self._modules)

# %% wrong id=MySequential clause=ordereddict fails=test_MySequential_ordereddict,test_MySequential_repeated -- looks children up by str(i), which fails for named ones
class MySequential(nn.Module):
    def __init__(self, *modules):
        super().__init__()
        if len(modules) == 1 and isinstance(modules[0], OrderedDict):
            for name, module in modules[0].items():
                self.add_module(name, module)
        else:
            for idx, module in enumerate(modules):
                self.add_module(str(idx), module)

    def forward(self, X):
        for module in self.children():
            X = module(X)
        return X

    def __getitem__(self, i):
        return self._modules[str(i)]

    def __len__(self):
        return len(self._modules)

# %% wrong id=ParallelBlock clause=concat_dim -- always concatenates along dim 1, ignoring dim
class ParallelBlock(nn.Module):
    def __init__(self, net1, net2, dim=-1):
        super().__init__()
        self.net1, self.net2 = net1, net2

    def forward(self, X):
        return torch.cat((self.net1(X), self.net2(X)), dim=1)

# %% wrong id=ParallelBlock clause=same_networks -- keeps the branches in a plain list
class ParallelBlock(nn.Module):
    def __init__(self, net1, net2, dim=-1):
        super().__init__()
        self.nets = [net1, net2]
        self.dim = dim

    def forward(self, X):
        return torch.cat([net(X) for net in self.nets], dim=self.dim)

# %% wrong id=ParallelBlock clause=same_input -- feeds the first branch's output into the second
class ParallelBlock(nn.Module):
    def __init__(self, net1, net2, dim=-1):
        super().__init__()
        self.net1, self.net2, self.dim = net1, net2, dim

    def forward(self, X):
        Y = self.net1(X)
        return torch.cat((Y, self.net2(Y)), dim=self.dim)

# %% wrong id=make_stack clause=own_call -- repeats one module object n times
def make_stack(factory, n):
    return nn.Sequential(*([factory()] * n))

# %% wrong id=make_stack clause=sequential -- returns a plain list of modules
def make_stack(factory, n):
    return [factory() for _ in range(n)]

# %% wrong id=make_stack clause=own_call -- copies the first layer's weights into the others
def make_stack(factory, n):
    first = factory()
    layers = [first]
    for _ in range(n - 1):
        layer = factory()
        for p, q in zip(layer.parameters(), first.parameters()):
            p.data = q.data
        layers.append(layer)
    return nn.Sequential(*layers)

# %% wrong id=FixedHiddenMLP clause=buffer fails=test_FixedHiddenMLP_buffer -- holds the constant as a plain tensor attribute
class FixedHiddenMLP(nn.Module):
    def __init__(self, in_features=20):
        super().__init__()
        self.rand_weight = torch.rand(in_features, in_features)
        self.linear = nn.Linear(in_features, in_features)

    def forward(self, X):
        X = self.linear(X)
        X = F.relu(X @ self.rand_weight + 1)
        X = self.linear(X)
        while X.abs().sum() > 1:
            X = X / 2
        return X.sum()

# %% wrong id=FixedHiddenMLP clause=buffer fails=test_FixedHiddenMLP_buffer -- makes the constant a frozen nn.Parameter
class FixedHiddenMLP(nn.Module):
    def __init__(self, in_features=20):
        super().__init__()
        self.rand_weight = nn.Parameter(torch.rand(in_features, in_features), requires_grad=False)
        self.linear = nn.Linear(in_features, in_features)

    def forward(self, X):
        X = self.linear(X)
        X = F.relu(X @ self.rand_weight + 1)
        X = self.linear(X)
        while X.abs().sum() > 1:
            X = X / 2
        return X.sum()

# %% wrong id=FixedHiddenMLP clause=linear_twice fails=test_FixedHiddenMLP,test_FixedHiddenMLP_buffer -- uses two different linear layers
class FixedHiddenMLP(nn.Module):
    def __init__(self, in_features=20):
        super().__init__()
        self.register_buffer("rand_weight", torch.rand(in_features, in_features))
        self.linear1 = nn.Linear(in_features, in_features)
        self.linear2 = nn.Linear(in_features, in_features)

    def forward(self, X):
        X = self.linear1(X)
        X = F.relu(X @ self.rand_weight + 1)
        X = self.linear2(X)
        while X.abs().sum() > 1:
            X = X / 2
        return X.sum()

# %% wrong id=FixedHiddenMLP clause=halve_loop -- forgets the rescaling loop
class FixedHiddenMLP(nn.Module):
    def __init__(self, in_features=20):
        super().__init__()
        self.register_buffer("rand_weight", torch.rand(in_features, in_features))
        self.linear = nn.Linear(in_features, in_features)

    def forward(self, X):
        X = self.linear(X)
        X = F.relu(X @ self.rand_weight + 1)
        X = self.linear(X)
        return X.sum()

# %% wrong id=FixedHiddenMLP clause=drawn_once -- draws a new random weight on every forward call
class FixedHiddenMLP(nn.Module):
    def __init__(self, in_features=20):
        super().__init__()
        self.register_buffer("rand_weight", torch.rand(in_features, in_features))
        self.linear = nn.Linear(in_features, in_features)

    def forward(self, X):
        X = self.linear(X)
        X = F.relu(X @ torch.rand_like(self.rand_weight) + 1)
        X = self.linear(X)
        while X.abs().sum() > 1:
            X = X / 2
        return X.sum()

# %% wrong id=MySequential clause=repeated fails=test_MySequential_repeated -- loops over children(), so a module passed twice runs once
class MySequential(nn.Module):
    def __init__(self, *modules):
        super().__init__()
        if len(modules) == 1 and isinstance(modules[0], OrderedDict):
            named = modules[0].items()
        else:
            named = ((str(i), module) for i, module in enumerate(modules))
        for name, module in named:
            self.add_module(name, module)

    def forward(self, X):
        for module in self.children():
            X = module(X)
        return X

    def __getitem__(self, i):
        return list(self.children())[i]

    def __len__(self):
        return len(self._modules)

# %% wrong id=FixedHiddenMLP clause=matmul_right says=applied_as_X_@_W.T -- multiplies by the constant with F.linear, which is X @ W.T
class FixedHiddenMLP(nn.Module):
    def __init__(self, in_features=20):
        super().__init__()
        self.register_buffer("rand_weight", torch.rand(in_features, in_features))
        self.linear = nn.Linear(in_features, in_features)

    def forward(self, X):
        X = self.linear(X)
        X = F.relu(F.linear(X, self.rand_weight) + 1)
        X = self.linear(X)
        while X.abs().sum() > 1:
            X = X / 2
        return X.sum()

# %% wrong id=MySequential clause=repeated fails=test_MySequential_repeated -- runs each distinct module once (dict.fromkeys keeps the order but drops a repeat)
class MySequential(nn.Module):
    def __init__(self, *modules):
        super().__init__()
        if len(modules) == 1 and isinstance(modules[0], OrderedDict):
            named = modules[0].items()
        else:
            named = ((str(i), module) for i, module in enumerate(modules))
        for name, module in named:
            self.add_module(name, module)

    def forward(self, X):
        for module in dict.fromkeys(self._modules.values()):
            X = module(X)
        return X

    def __getitem__(self, i):
        return list(self._modules.values())[i]

    def __len__(self):
        return len(self._modules)

# %% wrong id=MySequential clause=repeated fails=test_MySequential_repeated -- forward right, but net[i] indexes children(), so a repeated module has one index
class MySequential(nn.Module):
    def __init__(self, *modules):
        super().__init__()
        if len(modules) == 1 and isinstance(modules[0], OrderedDict):
            named = modules[0].items()
        else:
            named = ((str(i), module) for i, module in enumerate(modules))
        for name, module in named:
            self.add_module(name, module)

    def forward(self, X):
        for module in self._modules.values():
            X = module(X)
        return X

    def __getitem__(self, i):
        return list(self.children())[i]

    def __len__(self):
        return len(self._modules)

# %% wrong id=MySequential clause=repeated fails=test_MySequential_repeated -- forward right, but len() counts children(), so a repeated module counts once
class MySequential(nn.Module):
    def __init__(self, *modules):
        super().__init__()
        if len(modules) == 1 and isinstance(modules[0], OrderedDict):
            named = modules[0].items()
        else:
            named = ((str(i), module) for i, module in enumerate(modules))
        for name, module in named:
            self.add_module(name, module)

    def forward(self, X):
        for module in self._modules.values():
            X = module(X)
        return X

    def __getitem__(self, i):
        return list(self._modules.values())[i]

    def __len__(self):
        return len(list(self.children()))

# %% wrong id=MySequential clause=repeated fails=test_MySequential_repeated -- keys the children by module, so a module passed twice is registered once
class MySequential(nn.Module):
    def __init__(self, *modules):
        super().__init__()
        if len(modules) == 1 and isinstance(modules[0], OrderedDict):
            named = modules[0].items()
        else:
            named = ((f"layer{id(module)}", module) for module in modules)
        for name, module in named:
            self.add_module(name, module)

    def forward(self, X):
        for module in self._modules.values():
            X = module(X)
        return X

    def __getitem__(self, i):
        return list(self._modules.values())[i]

    def __len__(self):
        return len(self._modules)

# %% wrong id=FixedHiddenMLP clause=buffer fails=test_FixedHiddenMLP_buffer -- registers the constant as a non-persistent buffer, so the state_dict leaves it out
class FixedHiddenMLP(nn.Module):
    def __init__(self, in_features=20):
        super().__init__()
        self.register_buffer("rand_weight", torch.rand(in_features, in_features), persistent=False)
        self.linear = nn.Linear(in_features, in_features)

    def forward(self, X):
        X = self.linear(X)
        X = F.relu(X @ self.rand_weight + 1)
        X = self.linear(X)
        while X.abs().sum() > 1:
            X = X / 2
        return X.sum()

# %% wrong id=make_stack clause=own_call -- deep-copies one factory() result, so every layer starts from the same weights
import copy


def make_stack(factory, n):
    first = factory()
    return nn.Sequential(*(copy.deepcopy(first) for _ in range(n)))

# %% wrong id=ParallelBlock clause=same_networks -- detaches the second branch's output, so no gradient reaches net2
class ParallelBlock(nn.Module):
    def __init__(self, net1, net2, dim=-1):
        super().__init__()
        self.net1, self.net2, self.dim = net1, net2, dim

    def forward(self, X):
        return torch.cat((self.net1(X), self.net2(X).detach()), dim=self.dim)

# %% wrong id=FixedHiddenMLP clause=buffer_rand fails=test_FixedHiddenMLP_buffer -- draws the constant with torch.randn instead of torch.rand
class FixedHiddenMLP(nn.Module):
    def __init__(self, in_features=20):
        super().__init__()
        self.register_buffer("rand_weight", torch.randn(in_features, in_features))
        self.linear = nn.Linear(in_features, in_features)

    def forward(self, X):
        X = self.linear(X)
        X = F.relu(X @ self.rand_weight + 1)
        X = self.linear(X)
        while X.abs().sum() > 1:
            X = X / 2
        return X.sum()

# %% wrong id=FixedHiddenMLP clause=gradients -- runs the shared layer's first use under torch.no_grad(), so its gradient misses that use's share
class FixedHiddenMLP(nn.Module):
    def __init__(self, in_features=20):
        super().__init__()
        self.register_buffer("rand_weight", torch.rand(in_features, in_features))
        self.linear = nn.Linear(in_features, in_features)

    def forward(self, X):
        with torch.no_grad():
            X = self.linear(X)
        X = F.relu(X @ self.rand_weight + 1)
        X = self.linear(X)
        while X.abs().sum() > 1:
            X = X / 2
        return X.sum()

# %% wrong id=FixedHiddenMLP clause=buffer_float64 fails=test_FixedHiddenMLP_buffer -- keeps the constant as a plain attribute and registers the same tensor as a buffer for show, so after .to() forward still uses the old one
class FixedHiddenMLP(nn.Module):
    def __init__(self, in_features=20):
        super().__init__()
        self.W = torch.rand(in_features, in_features)
        self.register_buffer("rand_weight", self.W)
        self.linear = nn.Linear(in_features, in_features)

    def forward(self, X):
        X = self.linear(X)
        X = F.relu(X @ self.W + 1)
        X = self.linear(X)
        while X.abs().sum() > 1:
            X = X / 2
        return X.sum()

# %% wrong id=FixedHiddenMLP clause=halve_loop -- halves while the absolute sum is at least 1, so a sum of exactly 1 is halved once more
class FixedHiddenMLP(nn.Module):
    def __init__(self, in_features=20):
        super().__init__()
        self.register_buffer("rand_weight", torch.rand(in_features, in_features))
        self.linear = nn.Linear(in_features, in_features)

    def forward(self, X):
        X = self.linear(X)
        X = F.relu(X @ self.rand_weight + 1)
        X = self.linear(X)
        while X.abs().sum() >= 1:
            X = X / 2
        return X.sum()

# %% wrong id=MySequential -- runs the children under torch.no_grad(), so no gradient reaches them
class MySequential(nn.Module):
    def __init__(self, *modules):
        super().__init__()
        if len(modules) == 1 and isinstance(modules[0], OrderedDict):
            named = modules[0].items()
        else:
            named = ((str(i), module) for i, module in enumerate(modules))
        for name, module in named:
            self.add_module(name, module)

    def forward(self, X):
        with torch.no_grad():
            for module in self._modules.values():
                X = module(X)
        return X

    def __getitem__(self, i):
        return list(self._modules.values())[i]

    def __len__(self):
        return len(self._modules)

# %% wrong id=ParallelBlock clause=device seen_on=device -- moves both outputs to the CPU before joining them, so a model on a GPU answers on the CPU
class ParallelBlock(nn.Module):
    def __init__(self, net1, net2, dim=-1):
        super().__init__()
        self.net1, self.net2, self.dim = net1, net2, dim

    def forward(self, X):
        return torch.cat((self.net1(X).cpu(), self.net2(X).cpu()), dim=self.dim)

# %% wrong id=MySequential clause=call_module says=hooks -- calls each child's forward(X) instead of the child itself, so the children's hooks never run and a lazy child is never initialized
class MySequential(nn.Module):
    def __init__(self, *modules):
        super().__init__()
        if len(modules) == 1 and isinstance(modules[0], OrderedDict):
            named = modules[0].items()
        else:
            named = ((str(i), module) for i, module in enumerate(modules))
        for name, module in named:
            self.add_module(name, module)

    def forward(self, X):
        for module in self._modules.values():
            X = module.forward(X)
        return X

    def __getitem__(self, i):
        return list(self._modules.values())[i]

    def __len__(self):
        return len(self._modules)

# %% wrong id=ParallelBlock clause=call_module says=lazy_branch -- calls net1.forward(X) and net2.forward(X) instead of the branches themselves, so their hooks never run and a lazy branch is never initialized
class ParallelBlock(nn.Module):
    def __init__(self, net1, net2, dim=-1):
        super().__init__()
        self.net1, self.net2, self.dim = net1, net2, dim

    def forward(self, X):
        return torch.cat((self.net1.forward(X), self.net2.forward(X)), dim=self.dim)

# %% wrong id=ParallelBlock clause=same_networks says=not_copies -- deep-copies the branches it is given, so training the block never reaches the caller's networks
import copy


class ParallelBlock(nn.Module):
    def __init__(self, net1, net2, dim=-1):
        super().__init__()
        self.net1, self.net2, self.dim = copy.deepcopy(net1), copy.deepcopy(net2), dim

    def forward(self, X):
        return torch.cat((self.net1(X), self.net2(X)), dim=self.dim)

# %% wrong id=FixedHiddenMLP clause=call_module says=hooks -- calls self.linear.forward(X) instead of self.linear(X), so the layer's hooks never run
class FixedHiddenMLP(nn.Module):
    def __init__(self, in_features=20):
        super().__init__()
        self.register_buffer("rand_weight", torch.rand(in_features, in_features))
        self.linear = nn.Linear(in_features, in_features)

    def forward(self, X):
        X = self.linear.forward(X)
        X = F.relu(X @ self.rand_weight + 1)
        X = self.linear.forward(X)
        while X.abs().sum() > 1:
            X = X / 2
        return X.sum()

# %% wrong id=FixedHiddenMLP clause=halve_loop says=absolute_value_of_the_sum -- halves while the absolute value of the sum is greater than 1 (X.sum().abs()), not the sum of absolute values
class FixedHiddenMLP(nn.Module):
    def __init__(self, in_features=20):
        super().__init__()
        self.register_buffer("rand_weight", torch.rand(in_features, in_features))
        self.linear = nn.Linear(in_features, in_features)

    def forward(self, X):
        X = self.linear(X)
        X = F.relu(X @ self.rand_weight + 1)
        X = self.linear(X)
        while X.sum().abs() > 1:
            X = X / 2
        return X.sum()

# %% wrong id=FixedHiddenMLP clause=call_module -- applies the layer through F.linear with its own weight and bias instead of calling it, so the layer's hooks never run
class FixedHiddenMLP(nn.Module):
    def __init__(self, in_features=20):
        super().__init__()
        self.register_buffer("rand_weight", torch.rand(in_features, in_features))
        self.linear = nn.Linear(in_features, in_features)

    def forward(self, X):
        X = F.linear(X, self.linear.weight, self.linear.bias)
        X = F.relu(X @ self.rand_weight + 1)
        X = F.linear(X, self.linear.weight, self.linear.bias)
        while X.abs().sum() > 1:
            X = X / 2
        return X.sum()

# %% wrong id=make_stack clause=new_each_call -- seeds torch's generator first, so every stack starts from the same weights and the caller's random numbers restart
def make_stack(factory, n):
    torch.manual_seed(0)
    return nn.Sequential(*(factory() for _ in range(n)))

# %% wrong id=FixedHiddenMLP clause=buffer_device fails=test_FixedHiddenMLP,test_FixedHiddenMLP_buffer -- draws the constant on the CPU by name (device="cpu"), so a net built under a GPU default device holds a CPU constant, which a GPU input cannot meet
class FixedHiddenMLP(nn.Module):
    def __init__(self, in_features=20):
        super().__init__()
        self.register_buffer("rand_weight", torch.rand(in_features, in_features, device="cpu"))
        self.linear = nn.Linear(in_features, in_features)

    def forward(self, X):
        X = self.linear(X)
        X = F.relu(X @ self.rand_weight + 1)
        X = self.linear(X)
        while X.abs().sum() > 1:
            X = X / 2
        return X.sum()

# %% wrong id=make_stack clause=own_call says=has_no_attribute -- resets each made layer's parameters "to be sure they differ", which fails for a module without reset_parameters (nn.ReLU)
def make_stack(factory, n):
    layers = [factory() for _ in range(n)]
    for layer in layers:
        layer.reset_parameters()
    return nn.Sequential(*layers)
