# Correct answers written differently from the model solution; every graded test must pass.

# %% right id=CenteredLayer -- divides the sum by the number of entries instead of calling mean
class CenteredLayer(nn.Module):
    def forward(self, X):
        return X - X.sum() / X.numel()

# %% right id=CenteredLayer -- the mean over every dimension listed explicitly, kept for broadcasting
class CenteredLayer(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, X):
        return X - torch.mean(X, dim=list(range(X.dim())), keepdim=True)

# %% right id=CenteredLayer -- subtracts in place, but on a copy of the input
class CenteredLayer(nn.Module):
    def forward(self, X):
        centred = X.clone()
        centred.sub_(X.flatten().mean())
        return centred

# %% right id=MyLinear -- other attribute names, nn.init.normal_ with std 1 / sqrt(in_units), a small uniform bias, torch.addmm
class MyLinear(nn.Module):
    def __init__(self, in_units, units):
        super().__init__()
        self.W = nn.Parameter(nn.init.normal_(torch.empty(in_units, units), std=in_units**-0.5))
        self.b = nn.Parameter(torch.rand(units) * 0.1)

    def forward(self, X):
        return torch.relu(torch.addmm(self.b, X, self.W))

# %% right id=MyLinear -- register_parameter, lesson 3's scaled initialization, ReLU as clamp(min=0)
class MyLinear(nn.Module):
    def __init__(self, in_units, units):
        super().__init__()
        self.register_parameter("kernel", nn.Parameter(torch.empty(in_units, units)))
        self.register_parameter("offset", nn.Parameter(torch.empty(units)))
        nn.init.kaiming_uniform_(self.kernel, nonlinearity="relu")
        nn.init.zeros_(self.offset)

    def forward(self, X):
        return torch.clamp(X.matmul(self.kernel) + self.offset, min=0)

# %% right id=MyLinear -- both parameters in an nn.ParameterDict, F.linear with the transposed W, ReLU through torch.where
class MyLinear(nn.Module):
    def __init__(self, in_units, units):
        super().__init__()
        self.params = nn.ParameterDict({
            "W": nn.Parameter(torch.randn(in_units, units) / in_units**0.5),
            "b": nn.Parameter(torch.zeros(units)),
        })

    def forward(self, X):
        z = F.linear(X, self.params["W"].T, self.params["b"])
        return torch.where(z > 0, z, torch.zeros_like(z))

# %% right id=MyLinear -- torch's own init: W and b taken from a fresh nn.Linear (W transposed), the narrowest scale allowed
class MyLinear(nn.Module):
    def __init__(self, in_units, units):
        super().__init__()
        reference = nn.Linear(in_units, units)
        self.weight = nn.Parameter(reference.weight.detach().T.clone())
        self.bias = nn.Parameter(reference.bias.detach().clone())

    def forward(self, X):
        return F.relu(X @ self.weight + self.bias)

# %% right id=MyLinear -- nn.init.xavier_uniform_ on W and a normal bias, F.relu of torch.matmul
class MyLinear(nn.Module):
    def __init__(self, in_units, units):
        super().__init__()
        self.weight = nn.Parameter(nn.init.xavier_uniform_(torch.empty(in_units, units)))
        self.bias = nn.Parameter(torch.randn(units))

    def forward(self, X):
        return F.relu(torch.matmul(X, self.weight) + self.bias)

# %% right id=TensorReduction -- loops over the batch and the outputs, writing into a new tensor
class TensorReduction(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.W = nn.Parameter(torch.randn(in_features, in_features, out_features))

    def forward(self, x):
        y = torch.zeros(x.shape[0], self.W.shape[2], dtype=x.dtype, device=x.device)
        for b in range(x.shape[0]):
            for k in range(self.W.shape[2]):
                y[b, k] = x[b] @ self.W[:, :, k] @ x[b]
        return y

# %% right id=TensorReduction -- the outer products x[b, i] * x[b, j] flattened, then one matrix product
class TensorReduction(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.register_parameter("quadratic", nn.Parameter(torch.empty(in_features, in_features, out_features)))
        nn.init.normal_(self.quadratic, std=1 / in_features)

    def forward(self, x):
        outer = x.unsqueeze(2) * x.unsqueeze(1)  # (batch, i, j)
        return outer.reshape(x.shape[0], -1) @ self.quadratic.reshape(-1, self.quadratic.shape[-1])

# %% right id=TensorReduction -- torch.tensordot over i, then a product with x and a sum over j
class TensorReduction(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.W = nn.Parameter(torch.zeros(in_features, in_features, out_features))

    def forward(self, x):
        partial = torch.tensordot(x, self.W, dims=([1], [0]))  # (batch, j, k): sum over i
        return (partial * x[:, :, None]).sum(dim=1)

# %% right id=TensorReduction -- F.bilinear, whose weight is laid out (out, in1, in2)
class TensorReduction(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.weight = nn.Parameter(torch.rand(in_features, in_features, out_features) - 0.5)

    def forward(self, x):
        return F.bilinear(x, x, self.weight.permute(2, 0, 1))

# %% right id=FourierHalf -- the real-input FFT, cut to the same (n + 1) // 2 coefficients
class FourierHalf(nn.Module):
    def forward(self, X):
        return torch.fft.rfft(X)[..., : (X.shape[-1] + 1) // 2]

# %% right id=FourierHalf -- narrow on the last dimension, the count written as a ceiling
class FourierHalf(nn.Module):
    def forward(self, X):
        import math
        n = X.size(-1)
        return torch.fft.fft(X, dim=X.dim() - 1).narrow(-1, 0, math.ceil(n / 2))

# %% right id=FourierHalf -- the DFT as a matrix product, from the definition
class FourierHalf(nn.Module):
    def forward(self, X):
        n = X.shape[-1]
        j = torch.arange(n, dtype=X.dtype, device=X.device).unsqueeze(1)
        k = torch.arange((n + 1) // 2, dtype=X.dtype, device=X.device).unsqueeze(0)
        angle = -2 * torch.pi * j * k / n
        return torch.complex(X, torch.zeros_like(X)) @ torch.polar(torch.ones_like(angle), angle)

# %% right id=FourierHalf -- one coefficient at a time in a loop, stacked along the last dimension
class FourierHalf(nn.Module):
    def forward(self, X):
        n = X.shape[-1]
        positions = torch.arange(n, dtype=X.dtype, device=X.device)
        coefficients = []
        for k in range((n + 1) // 2):
            angle = 2 * torch.pi * k * positions / n
            coefficients.append(torch.complex((X * torch.cos(angle)).sum(-1), -(X * torch.sin(angle)).sum(-1)))
        return torch.stack(coefficients, dim=-1)
