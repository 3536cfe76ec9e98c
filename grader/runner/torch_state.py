"""The kernel's side, written into the kernel's start-up file with runner/assembly.py (trusted.RUNNER_PARTS):
torch's dispatcher. One line of torch.library replaces the kernel behind any operator for every
thread (`Library("aten", "IMPL").impl("allclose", lambda *a, **k: True, "CPU")` makes
`torch.allclose`, `torch.equal` and `assert_close` pass), and no Python attribute changes. From
kernel start the runner refuses a kernel or fallback for an aten or prims operator on any key
but Meta (shapes only, no values: what torch's own lazy registrations use), and tells the
dispatch keys a thread has switched on or off (a thread-local change left behind by student code
a test called would steer the rest of the tests)."""

TORCH_NAMESPACES = ("aten", "prims", "prim")
# The methods of torch._C._DispatchModule (a library) that register a kernel or a fallback.
GUARDED = (
    "impl",
    "impl_t_t",
    "impl_with_aoti_compile",
    "fallback",
    "fallback_fallthrough",
    "register_ad_inplace_or_view_fallback",
)


def guard_dispatcher(torch, refuse, seal):
    """Install the guards on torch._C; return `dispatch_state()`, the calling thread's dispatch
    keys switched on and off, as text. Student code reaches the guards (they stand where torch's
    own functions stood), so each is sealed (`seal`, runner_data.make_seal's): none hands out the
    originals it calls, `refuse`, or the runner's namespace."""
    C = torch._C
    _type, _str, _id, _any, _exception = type, str, id, any, Exception
    torch_namespaces = TORCH_NAMESPACES
    module_type, key_type, key_name = C._DispatchModule, C.DispatchKey, C._dispatch_key_name
    has_kernel, as_text = C._dispatch_has_kernel, C._dispatch_keyset_to_string
    included, excluded = C._dispatch_tls_local_include_set, C._dispatch_tls_local_exclude_set
    make_library, guarded = C._dispatch_library, GUARDED
    originals = {name: module_type.__dict__.get(name) for name in guarded}  # what this torch has
    namespaces = {}  # id of a library made since start -> (library, its namespace)
    what = "replacing the kernel of one of torch's operators (torch.library)"

    def library(kind, ns, *args, **kwargs):
        made = make_library(kind, ns, *args, **kwargs)
        namespaces[_id(made)] = (made, ns)
        return made

    def is_torch_op(library, name):
        if _type(name) is not _str:
            return True
        if "::" in name:
            return name.split("::", 1)[0] in torch_namespaces
        known = namespaces.get(_id(library))
        if known is not None and known[0] is library:
            return known[1] in torch_namespaces
        try:  # a library made before start (torch's own): named after the operator it would touch
            return _any(has_kernel(f"{ns}::{name}") for ns in torch_namespaces)
        except _exception:
            return True

    def is_meta(dispatch):
        return (_type(dispatch) is _str and dispatch == "Meta") or (
            _type(dispatch) is key_type and key_name(dispatch) == "Meta"
        )

    def guard_named(method):
        """`method(self, name, dispatch, ...)` of a library, refused for one of torch's operators."""
        original = originals[method]

        def guard(self, name, dispatch="", *args, **kwargs):
            if is_torch_op(self, name) and not is_meta(dispatch):
                refuse(what)
            return original(self, name, dispatch, *args, **kwargs)

        return guard

    def impl_with_aoti_compile(self, ns, name, dispatch, *args, **kwargs):
        if (_type(ns) is not _str or ns in torch_namespaces) and not is_meta(dispatch):
            refuse(what)
        return originals["impl_with_aoti_compile"](self, ns, name, dispatch, *args, **kwargs)

    def no_fallback(self, *args, **kwargs):
        refuse("a dispatcher fallback (torch.library)")

    guards = {
        "impl": guard_named("impl"),
        "impl_t_t": guard_named("impl_t_t"),
        "impl_with_aoti_compile": impl_with_aoti_compile,
    }
    for name in guarded:
        if originals[name] is not None:
            setattr(module_type, name, seal(guards.get(name, no_fallback)))
    C._dispatch_library = seal(library)

    def dispatch_state():
        return as_text(included()) + as_text(excluded())

    return dispatch_state


def torch_state(torch, refuse, seal):
    """The references the runner keeps of torch at start, by name, with the dispatcher's guards
    installed and sealed (`guard_dispatcher`): what a judge's data treats as a tensor (tensor_types,
    size_type, tensor_tolist, dtype_name), the torch function and dispatch mode stacks
    (function_stack, pop_function_mode, dispatch_stack) and `dispatch_state`. Without torch,
    stand-ins that find nothing."""
    if torch is None:
        return {
            "tensor_types": (),
            "size_type": None,
            "tensor_tolist": None,
            "dtype_name": None,
            "function_stack": lambda: 0,
            "pop_function_mode": None,
            "dispatch_stack": lambda: 0,
            "dispatch_state": lambda: "",
        }
    C = torch._C
    return {
        "tensor_types": (torch.Tensor, torch.nn.Parameter),  # what a judge receives as a tensor
        "size_type": torch.Size,
        "tensor_tolist": C.TensorBase.tolist,
        "dtype_name": C.TensorBase.__dict__["dtype"].__get__,
        "function_stack": C._len_torch_function_stack,
        "pop_function_mode": C._pop_torch_function_stack,
        "dispatch_stack": getattr(C, "_len_torch_dispatch_stack", lambda: 0),
        "dispatch_state": guard_dispatcher(torch, refuse, seal),
    }
