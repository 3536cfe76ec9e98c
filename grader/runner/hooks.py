"""The hook points the runner watches and puts back (trusted.RUNNER_PARTS). Before every test and
after every other cell the runner asks which of them changed since kernel start (detection:
`find_bent`), then puts each back (repair: `put_back`) and names them in its reply (`make_check`).

The points: IPython's input and AST transformers, the shell's traits and event callbacks, the
kernel's message handlers, methods replaced on the shell or kernel instance, sys's hooks and
import system, `sys.modules` (every module loaded at start: what `import` in a test cell gets),
the methods of IPython's and torch's classes, the functions of the modules tests use, torch's
global module and optimizer hooks, and the notebook's namespace. A library's wrapper around an
original (functools.wraps) is no change; a callback a library registers is none either.

Each `watch_*` maker takes note of its points at start (before any student code) and returns
`bent()`: a list of (what to name, how to put it back, its arguments), one per bent point, which
changes nothing; `put_back` does the putting back. A None name is no bend: a library wrapped an
original, and the wrapper becomes what start held."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

# (name for the flag, or None; the function that puts the point back; its arguments)
Bent = tuple[Any, Callable[..., Any], tuple]
Watcher = Callable[[], list[Bent]]
MISSING = object()  # stands for a name that is not there
SHELL_TRAITS = (
    "displayhook",
    "display_pub",
    "display_formatter",
    "input_transformer_manager",
    "events",
    "compile",
    "InteractiveTB",
    "SyntaxTB",
    "custom_exceptions",
    "CustomTB",
    "history_manager",
    "user_ns",
    "user_module",
)
SYS_HOOKS = ("breakpointhook", "unraisablehook")
# The modules whose functions tests use, and torch's that hold what tests build.
WATCHED_MODULES = (
    "builtins",
    "math",
    "operator",
    "copy",
    "torch",
    "torch.nn",
    "torch.nn.functional",
    "torch.nn.init",
    "torch.testing",
    "torch.testing._comparison",
    "torch.autograd",
    "torch.nn.modules.module",
    "torch.optim",
    "torch.optim.lr_scheduler",
    "numpy",
    "numpy.testing",
)
TORCH_CLASS_OWNERS = ("torch.nn", "torch.optim", "torch.optim.lr_scheduler")
TORCH_HOOK_OWNERS = ("torch.nn.modules.module", "torch.optim.optimizer")
# IPython's builtin trap puts these into builtins for the length of each cell.
TRAPPED = frozenset({"_", "__", "___", "exit", "quit", "get_ipython", "display", "__IPYTHON__"})


def find_bent(watchers: Iterable[Watcher]) -> list[Bent]:
    """Detection: every bent point the watchers see, in their order; nothing is changed."""
    return [entry for bent in watchers for entry in bent()]


def put_back(found: list[Bent]) -> list[str]:
    """Repair: put back each point `find_bent` found; the names of those that were bent."""
    for _, restore, args in found:
        restore(*args)
    return [label for label, _, _ in found if label is not None]


def make_check(watchers: list[Watcher], end_strays: Callable[[], None], take_refused: Callable[[], list[str]]):
    """`check()`: end stray processes, find and put back every bent point, and name them, with
    what the audit hook refused since the last check."""
    _find, _put_back = find_bent, put_back

    def check() -> list[str]:
        end_strays()
        return _put_back(_find(watchers)) + take_refused()

    return check


def make_same() -> Callable[[Any, Any], bool]:
    """`same(a, b)`: identity, element by element (a student's object may claim == to anything)."""
    _len, _all, _zip = len, all, zip

    def same(a: Any, b: Any) -> bool:
        return _len(a) == _len(b) and _all(x is y for x, y in _zip(a, b))

    return same


def transformer_lists(shell: Any) -> list[tuple[str, Any, str]]:
    """IPython's lists of input and AST transformers: (name for the flag, owner, attribute)."""
    manager = shell.input_transformer_manager
    return [
        ("IPython input transformers (input_transformers_cleanup)", shell, "input_transformers_cleanup"),
        ("IPython input transformers (input_transformers_post)", shell, "input_transformers_post"),
        ("IPython input transformers (cleanup_transforms)", manager, "cleanup_transforms"),
        ("IPython input transformers (line_transforms)", manager, "line_transforms"),
        ("IPython input transformers (token_transformers)", manager, "token_transformers"),
        ("IPython AST transformers", shell, "ast_transformers"),
    ]


def watch_transformers(shell: Any, same: Callable[[Any, Any], bool]) -> Watcher:
    """IPython's transformer lists: the same list objects holding the same transformers."""
    missing = MISSING
    _getattr, _setattr, _list, _any = getattr, setattr, list, any
    lists: list[tuple[str, Any, str, list, list]] = []
    for label, owner, name in transformer_lists(shell):
        original = _getattr(owner, name)
        # One list under two names (the shell's input_transformers_cleanup is its manager's
        # cleanup_transforms) is watched, and named, once.
        if not _any(original is seen for _, _, _, seen, _ in lists):
            lists.append((label, owner, name, original, _list(original)))

    def restore(owner: Any, name: str, original: list, items: list) -> None:
        original[:] = items
        if _getattr(owner, name, missing) is not original:
            _setattr(owner, name, original)

    def bent() -> list[Bent]:
        found = []
        for label, owner, name, original, items in lists:
            current = _getattr(owner, name, missing)
            if current is not original or not same(current, items):
                found.append((label, restore, (owner, name, original, items)))
        return found

    return bent


def make_library_callback(is_library: Callable[[str], bool]) -> Callable[[Any], bool]:
    """`library_callback(callback)`: whether a (bound) function is a library's code."""
    _getattr = getattr

    def library_callback(callback: Any) -> bool:
        function = _getattr(callback, "__func__", callback)
        code = _getattr(function, "__code__", None)
        return code is not None and is_library(code.co_filename)

    return library_callback


def watch_shell(shell: Any, kernel: Any, library_callback: Callable[[Any], bool]) -> Watcher:
    """The shell's traits, its event callbacks (a library may add its own), the kernel's message
    handlers, and methods replaced on the shell or kernel instance. The notebook's namespace is
    one of the traits (user_ns): a namespace of the student's own would hide the names tests
    call."""
    missing = MISSING
    _getattr, _setattr, _delattr, _callable, _type = getattr, setattr, delattr, callable, type
    _dict, _list, _set, _vars, _id, _any = dict, list, set, vars, id, any
    name_of = _type.__dict__["__name__"].__get__
    values = {name: _getattr(shell, name, missing) for name in SHELL_TRAITS}
    events = shell.events
    kept_events = {name: _list(callbacks) for name, callbacks in events.callbacks.items()}
    handlers = _dict(kernel.shell_handlers) if kernel is not None else {}
    instances = [(owner, _set(_vars(owner))) for owner in (shell, kernel) if owner is not None]

    def restore_callbacks(callbacks: list, kept: list) -> None:
        kept_ids = {_id(c) for c in kept}
        callbacks[:] = [c for c in callbacks if _id(c) in kept_ids or library_callback(c)]
        current_ids = {_id(c) for c in callbacks}
        callbacks.extend(c for c in kept if _id(c) not in current_ids)

    def restore_handlers() -> None:
        kernel.shell_handlers.clear()
        kernel.shell_handlers.update(handlers)

    def bent() -> list[Bent]:
        found: list[Bent] = [
            (f"the IPython shell's {name}", _setattr, (shell, name, original))
            for name, original in values.items()
            if _getattr(shell, name, missing) is not original
        ]
        for name, callbacks in events.callbacks.items():
            kept = kept_events.get(name, [])
            kept_ids, current_ids = {_id(c) for c in kept}, {_id(c) for c in callbacks}
            extra = [c for c in callbacks if _id(c) not in kept_ids and not library_callback(c)]
            if extra or _any(_id(c) not in current_ids for c in kept):
                found.append((f"IPython events ({name})", restore_callbacks, (callbacks, kept)))
        current = kernel.shell_handlers if kernel is not None else {}
        if _set(current) != _set(handlers) or _any(current[k] is not v for k, v in handlers.items()):
            found.append(("the kernel's message handlers (shell_handlers)", restore_handlers, ()))
        for owner, names in instances:
            for name in _set(_vars(owner)) - names:
                if _callable(_getattr(_type(owner), name, None)):
                    found.append(
                        (f"{name_of(_type(owner))}.{name} (replaced on the instance)", _delattr, (owner, name))
                    )
        return found

    return bent


def watch_sys(sys: Any, same: Callable[[Any, Any], bool]) -> Watcher:
    """sys's hooks, the import system (sys.meta_path) and every module loaded at start (sys.modules)."""
    missing = MISSING
    _getattr, _setattr, _dict, _list, set_item = getattr, setattr, dict, list, dict.__setitem__
    modules = sys.modules
    hooks = {name: _getattr(sys, name, missing) for name in SYS_HOOKS}
    meta_path, all_modules = _list(sys.meta_path), _dict(modules)

    def restore_meta_path() -> None:
        sys.meta_path[:] = meta_path

    def bent() -> list[Bent]:
        found: list[Bent] = [
            (f"sys.{name}", _setattr, (sys, name, original))
            for name, original in hooks.items()
            if _getattr(sys, name, missing) is not original
        ]
        if not same(sys.meta_path, meta_path):
            found.append(("the import system (sys.meta_path)", restore_meta_path, ()))
        found += [
            (f"sys.modules[{name!r}]", set_item, (modules, name, module))
            for name, module in all_modules.items()  # what `import` in a test cell gets
            if modules.get(name) is not module and name != "__main__"
        ]
        return found

    return bent


def class_snapshot(shell: Any, kernel: Any, modules: dict) -> list[tuple[type, dict]]:
    """(class, a copy of its namespace) for every class whose methods tests rely on: the shell's,
    the kernel's and their parts', and torch's tensor, module, optimizer and scheduler classes;
    each class once."""
    _type, _dict, _vars, _isinstance, _id, _object = type, dict, vars, isinstance, id, object
    classes: list[tuple[type, dict]] = []
    seen: set[int] = set()

    def add(cls: type, torch_only: bool = False) -> None:
        for c in cls.__mro__:
            if c is not _object and _id(c) not in seen and not (torch_only and not c.__module__.startswith("torch")):
                seen.add(_id(c))
                classes.append((c, _dict(_vars(c))))

    for part in (shell, kernel, shell.displayhook, shell.display_pub, shell.events, shell.input_transformer_manager):
        if part is not None:
            add(_type(part))
    torch = modules.get("torch")
    if torch is not None:
        owners = [modules.get(name) for name in TORCH_CLASS_OWNERS]  # what tests build
        for value in [torch.Tensor, *(v for owner in owners if owner for v in _vars(owner).values())]:
            if _isinstance(value, _type) and value.__module__.startswith("torch"):
                add(value, torch_only=True)
    return classes


def make_library_wrapper(classes: list[tuple[type, dict]], modules: dict, is_library: Callable[[str], bool]):
    """`library_wrapper(new, old, cls=None, name="")`: whether `new` is library code wrapping `old`
    (functools.wraps sets __wrapped__). On a class `cls`, the wrapper must come from the file of a
    class in its hierarchy, and a name new on it may wrap what its bases held at start (an
    optimizer class wraps an inherited step)."""
    missing = MISSING
    _getattr, _next, _range = getattr, next, range

    def library_wrapper(new: Any, old: Any, cls: Any = None, name: str = "") -> bool:
        if cls is not None:
            homes = {_getattr(modules.get(c.__module__), "__file__", None) for c in cls.__mro__}
            if _getattr(_getattr(new, "__code__", None), "co_filename", None) not in homes:
                return False
        if old is missing:
            old = _next((d[name] for b in cls.__mro__[1:] for c, d in classes if c is b and name in d), old)
        for _ in _range(5):
            code = _getattr(new, "__code__", None)
            if code is None or not is_library(code.co_filename):
                return False
            new = _getattr(new, "__wrapped__", None)
            if new is old:
                return True
        return False

    return library_wrapper


def watch_classes(classes: list[tuple[type, dict]], library_wrapper: Callable[..., bool]) -> Watcher:
    """The methods of `classes` (class_snapshot): a method replaced, added over an inherited one,
    or removed. Caches filled lazily are data, not behaviour; a library's wrapper is no change."""
    missing = MISSING
    _setattr, _delattr, _callable, _set, _vars, _any = setattr, delattr, callable, set, vars, any
    name_of = type.__dict__["__name__"].__get__

    def shadows(cls: type, name: str) -> bool:
        return _any(name in saved for c, saved in classes if c is not cls and c in cls.__mro__)

    def bent() -> list[Bent]:
        found: list[Bent] = []
        for cls, saved in classes:
            current = _vars(cls)
            for name in _set(current) | _set(saved):
                old, new = saved.get(name, missing), current.get(name, missing)
                if (
                    old is not new
                    and (_callable(old) or _callable(new))
                    and (old is not missing or shadows(cls, name))
                    and not library_wrapper(new, old, cls, name)
                ):
                    label = f"{cls.__module__}.{name_of(cls)}.{name}"
                    found.append(
                        (label, _setattr, (cls, name, old)) if name in saved else (label, _delattr, (cls, name))
                    )
        return found

    return bent


def watch_modules(modules: dict, library_wrapper: Callable[..., bool]) -> Watcher:
    """The functions (and every other name) of the modules tests use (WATCHED_MODULES), but what
    IPython's builtin trap puts into builtins for each cell; a library's wrapper is no change."""
    missing, trapped = MISSING, TRAPPED
    _dict, _vars, set_item = dict, vars, dict.__setitem__
    saved_dicts = [(name, modules[name], _dict(_vars(modules[name]))) for name in WATCHED_MODULES if name in modules]

    def bent() -> list[Bent]:
        found: list[Bent] = []
        for module_name, module, saved in saved_dicts:
            current = _vars(module)
            for name, value in saved.items():
                new = current.get(name, missing)
                if new is value or name in trapped:
                    continue
                if library_wrapper(new, value):  # e.g. torch._dynamo wraps torch.manual_seed when first imported
                    found.append((None, set_item, (saved, name, new)))
                else:
                    found.append((f"{module_name}.{name}", set_item, (current, name, value)))
        return found

    return bent


def watch_torch_hooks(modules: dict) -> Watcher:
    """torch's global module and optimizer hooks (`_global_*` registries): none added since start."""
    _len, _vars, _isinstance, _dict, clear = len, vars, isinstance, dict, dict.clear
    owners = [modules.get(name) for name in TORCH_HOOK_OWNERS]
    registries = [
        (name, value, _len(value))
        for owner in owners
        if owner
        for name, value in _vars(owner).items()
        if name[:8] == "_global_" and _isinstance(value, _dict)
    ]

    def bent() -> list[Bent]:
        return [
            (f"torch's global hooks ({name})", clear, (registry,))
            for name, registry, size in registries
            if _len(registry) != size
        ]

    return bent
