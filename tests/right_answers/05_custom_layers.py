# Correct answers written differently from the model solution; every graded test must pass.

# %% right id=MyLinear -- other attribute names, zero initialization, torch.addmm
class MyLinear(nn.Module):
    def __init__(self, in_units, units):
        super().__init__()
        self.W = nn.Parameter(torch.zeros(in_units, units))
        self.b = nn.Parameter(torch.zeros(units))

    def forward(self, X):
        return torch.relu(torch.addmm(self.b, X, self.W))

# %% right id=TensorReduction -- loops over the batch and the outputs, writing into a new tensor
class TensorReduction(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.W = nn.Parameter(torch.randn(in_features, in_features, out_features))

    def forward(self, x):
        y = torch.zeros(x.shape[0], self.W.shape[2], dtype=x.dtype)
        for b in range(x.shape[0]):
            for k in range(self.W.shape[2]):
                y[b, k] = x[b] @ self.W[:, :, k] @ x[b]
        return y

# %% right id=FourierHalf -- the real-input FFT, cut to the same (n + 1) // 2 coefficients
class FourierHalf(nn.Module):
    def forward(self, X):
        return torch.fft.rfft(X)[..., : (X.shape[-1] + 1) // 2]
