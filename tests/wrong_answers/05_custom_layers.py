# Wrong answers students really write for exercise 5, one cell each.
# Each must lose exactly its own item's points (see tools/cells.py).

# %% wrong id=CenteredLayer clause=all_entries -- centres each row instead of the whole tensor
class CenteredLayer(nn.Module):
    def forward(self, X):
        return X - X.mean(dim=-1, keepdim=True)

# %% wrong id=CenteredLayer clause=all_entries -- centres each column (mean over the batch)
class CenteredLayer(nn.Module):
    def forward(self, X):
        return X - X.mean(dim=0)

# %% wrong id=CenteredLayer clause=no_change -- subtracts in place, changing the caller's tensor
class CenteredLayer(nn.Module):
    def forward(self, X):
        X -= X.mean()
        return X

# %% wrong id=CenteredLayer clause=formula -- detaches the mean, so the gradient is not centred
class CenteredLayer(nn.Module):
    def forward(self, X):
        return X - X.mean().detach()

# %% wrong id=MyLinear clause=gradients fails=test_MyLinear_gradients -- uses .data in forward, so no gradient reaches W and b
class MyLinear(nn.Module):
    def __init__(self, in_units, units):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(in_units, units) / in_units**0.5)
        self.bias = nn.Parameter(torch.randn(units))

    def forward(self, X):
        return F.relu(X @ self.weight.data + self.bias.data)

# %% wrong id=MyLinear clause=formula fails=test_MyLinear,test_MyLinear_gradients -- stores W as (units, in_units) like nn.Linear
class MyLinear(nn.Module):
    def __init__(self, in_units, units):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(units, in_units) / in_units**0.5)
        self.bias = nn.Parameter(torch.randn(units))

    def forward(self, X):
        return F.relu(X @ self.weight.T + self.bias)

# %% wrong id=MyLinear clause=formula fails=test_MyLinear,test_MyLinear_gradients -- forgets the ReLU
class MyLinear(nn.Module):
    def __init__(self, in_units, units):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(in_units, units) / in_units**0.5)
        self.bias = nn.Parameter(torch.randn(units))

    def forward(self, X):
        return X @ self.weight + self.bias

# %% wrong id=MyLinear clause=parameters fails=test_MyLinear,test_MyLinear_gradients -- plain tensors with requires_grad instead of nn.Parameter
class MyLinear(nn.Module):
    def __init__(self, in_units, units):
        super().__init__()
        self.weight = (torch.randn(in_units, units) / in_units**0.5).requires_grad_()
        self.bias = torch.randn(units, requires_grad=True)

    def forward(self, X):
        return F.relu(X @ self.weight + self.bias)

# %% wrong id=TensorReduction clause=formula fails=test_TensorReduction,test_TensorReduction_gradients says=index_used_twice -- multiplies x by itself element-wise (only i == j terms)
class TensorReduction(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(in_features, in_features, out_features))

    def forward(self, x):
        return torch.einsum("ijk,bi,bi->bk", self.weight, x, x)

# %% wrong id=TensorReduction clause=shape fails=test_TensorReduction,test_TensorReduction_gradients -- puts out_features first in W
class TensorReduction(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(out_features, in_features, in_features))

    def forward(self, x):
        return torch.einsum("kij,bi,bj->bk", self.weight, x, x)

# %% wrong id=TensorReduction clause=formula fails=test_TensorReduction,test_TensorReduction_gradients says=x[0] -- uses the first example's x for the whole batch
class TensorReduction(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(in_features, in_features, out_features))

    def forward(self, x):
        y = torch.einsum("ijk,i,j->k", self.weight, x[0], x[0])
        return y.expand(x.shape[0], -1)

# %% wrong id=TensorReduction clause=gradients fails=test_TensorReduction_gradients -- loops, but reads W through .data, so no gradient reaches it
class TensorReduction(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(in_features, in_features, out_features))

    def forward(self, x):
        y = x.new_zeros(x.shape[0], self.weight.shape[2])
        for b in range(x.shape[0]):
            for k in range(self.weight.shape[2]):
                y[b, k] = x[b] @ self.weight.data[:, :, k] @ x[b]
        return y

# %% wrong id=TensorReduction clause=gradients fails=test_TensorReduction,test_TensorReduction_gradients says=cut_off -- loops, writing Python numbers (.item()) into a CPU tensor: detached, and on the CPU whatever x's device
class TensorReduction(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(in_features, in_features, out_features))

    def forward(self, x):
        y = torch.zeros(x.shape[0], self.weight.shape[2])
        for b in range(x.shape[0]):
            for k in range(self.weight.shape[2]):
                y[b, k] = (x[b] @ self.weight[:, :, k] @ x[b]).item()
        return y

# %% wrong id=FourierHalf clause=count -- keeps n // 2 coefficients, one too few for odd n
class FourierHalf(nn.Module):
    def forward(self, X):
        return torch.fft.fft(X)[..., : X.shape[-1] // 2]

# %% wrong id=FourierHalf clause=count -- returns the whole rfft (n // 2 + 1 coefficients)
class FourierHalf(nn.Module):
    def forward(self, X):
        return torch.fft.rfft(X)

# %% wrong id=FourierHalf clause=last_dim -- slices the first dimension instead of the last
class FourierHalf(nn.Module):
    def forward(self, X):
        return torch.fft.fft(X)[: (X.shape[-1] + 1) // 2]

# %% wrong id=FourierHalf clause=last_dim -- transforms along the first dimension
class FourierHalf(nn.Module):
    def forward(self, X):
        n = X.shape[-1]
        return torch.fft.fft(X, dim=0)[..., : (n + 1) // 2]

# %% wrong id=FourierHalf clause=complex -- returns magnitudes instead of the complex coefficients
class FourierHalf(nn.Module):
    def forward(self, X):
        n = X.shape[-1]
        return torch.fft.fft(X).abs()[..., : (n + 1) // 2]

# %% wrong id=TensorReduction clause=formula fails=test_TensorReduction,test_TensorReduction_gradients -- pairs x[b] with the x of every other example too (sums over two batch indices)
class TensorReduction(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(in_features, in_features, out_features))

    def forward(self, x):
        return torch.einsum("ijk,bi,cj->bk", self.weight, x, x)

# %% wrong id=CenteredLayer clause=formula -- subtracts the mean as a Python number, which autograd treats as a constant
class CenteredLayer(nn.Module):
    def forward(self, X):
        return X - X.mean().item()

# %% wrong id=FourierHalf clause=gradients -- computes the transform with numpy, which cuts the graph: no gradient reaches the input
class FourierHalf(nn.Module):
    def forward(self, X):
        import numpy as np
        n = X.shape[-1]
        return torch.from_numpy(np.fft.fft(X.detach().cpu().numpy()))[..., : (n + 1) // 2]

# %% wrong id=MyLinear seen_on=device -- moves its output to the CPU "to be safe", whatever device the input is on
class MyLinear(nn.Module):
    def __init__(self, in_units, units):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(in_units, units) / in_units**0.5)
        self.bias = nn.Parameter(torch.randn(units))

    def forward(self, X):
        return F.relu(X @ self.weight + self.bias).cpu()

# %% wrong id=MyLinear clause=init fails=test_MyLinear_init -- starts W and b at zero: every unit outputs relu(0) = 0 whatever the input, and no gradient ever moves them
class MyLinear(nn.Module):
    def __init__(self, in_units, units):
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(in_units, units))
        self.bias = nn.Parameter(torch.zeros(units))

    def forward(self, X):
        return F.relu(X @ self.weight + self.bias)

# %% wrong id=MyLinear clause=init fails=test_MyLinear_init -- allocates W and b with torch.empty and never fills them, so they hold whatever was in memory
class MyLinear(nn.Module):
    def __init__(self, in_units, units):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(in_units, units))
        self.bias = nn.Parameter(torch.empty(units))

    def forward(self, X):
        return F.relu(X @ self.weight + self.bias)

# %% wrong id=MyLinear clause=init_scale fails=test_MyLinear_init -- draws W with an unscaled torch.randn(in_units, units), so the output grows like sqrt(in_units)
class MyLinear(nn.Module):
    def __init__(self, in_units, units):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(in_units, units))
        self.bias = nn.Parameter(torch.randn(units))

    def forward(self, X):
        return F.relu(X @ self.weight + self.bias)

# %% wrong id=CenteredLayer clause=no_parameters -- keeps a learnable shift, initialized to zero, so the layer owns a parameter
class CenteredLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.shift = nn.Parameter(torch.zeros(()))

    def forward(self, X):
        return X - X.mean() + self.shift

# %% wrong id=MyLinear clause=init_no_seed fails=test_MyLinear_init -- seeds torch's generator in __init__, so every layer starts from the same weights and the caller's random numbers restart
class MyLinear(nn.Module):
    def __init__(self, in_units, units):
        super().__init__()
        torch.manual_seed(0)
        self.weight = nn.Parameter(torch.randn(in_units, units) / in_units**0.5)
        self.bias = nn.Parameter(torch.zeros(units))

    def forward(self, X):
        return F.relu(X @ self.weight + self.bias)

# %% wrong id=TensorReduction clause=no_seed fails=test_TensorReduction -- seeds torch's generator in __init__, so the caller's random numbers restart at every layer built
class TensorReduction(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        torch.manual_seed(0)
        self.weight = nn.Parameter(torch.randn(in_features, in_features, out_features) / in_features)

    def forward(self, x):
        return torch.einsum("ijk,bi,bj->bk", self.weight, x, x)

# %% wrong id=CenteredLayer clause=device seen_on=device -- builds its tensor of means on the CPU (torch.ones(X.shape)), which an input on a GPU cannot be combined with
class CenteredLayer(nn.Module):
    def forward(self, X):
        return X - torch.ones(X.shape) * X.mean()
