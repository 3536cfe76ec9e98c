# Correct answers written differently from the model solution; every graded test must pass.

# %% right id=my_init -- binds weird_init_ as a default argument
def my_init(m, init=weird_init_):
    if isinstance(m, nn.Linear):
        init(m.weight)

# %% right id=my_init -- checks the type with type() and uses the module's weight through getattr
def my_init(m):
    if type(m) is nn.Linear:
        weird_init_(getattr(m, "weight"))

# %% right id=activation_stds -- records every module's output and keeps the Linear ones
def activation_stds(net, x):
    outputs = []
    hooks = [m.register_forward_hook(lambda mod, inp, out: outputs.append((mod, out)))
             for m in net.modules()]
    with torch.no_grad():
        net(x)
    for hook in hooks:
        hook.remove()
    return [float(out.std()) for mod, out in outputs if isinstance(mod, nn.Linear)]
