"""The trusted runner's parts, each on its own, in this process: no kernel, no audit hook added
(sys.addaudithook cannot be undone), stand-ins for IPython's shell and kernel. How the parts
become the one file the kernel runs (trusted.assemble) is checked here too; the cheat corpus
(test_cheats.py) checks them together, inside real grading kernels."""

from __future__ import annotations

import _functools
import _socket
import ast
import builtins
import hmac
import os
import symtable
import sys
import threading
import types

import pytest

from grader.runner import assembly as runner
from grader.runner import audit as runner_audit
from grader.runner import channel as runner_channel
from grader.runner import hooks as runner_hooks
from grader.runner import reset as runner_reset
from grader.runner import test as runner_test
from grader.runner import torch_state as runner_torch
from grader.runner import trusted, who
from grader.runner.data import make_capped_text, make_seal, make_seal_test

pytestmark = pytest.mark.unit

LIBRARY = sys.prefix + "/lib/somewhere/library.py"  # a file name the runner counts as a library's


def frame_from(filename: str, name: str = "f"):
    """A live frame whose code claims `filename` (student code, or a library's)."""
    namespace: dict = {"sys": sys}
    exec(compile(f"def {name}():\n    return sys._getframe()\n", filename, "exec"), namespace)
    return namespace[name]()


# -- the assembly ---------------------------------------------------------------------------
def bound_names(node: ast.stmt) -> set[str]:
    """The names a module-level statement binds."""
    if isinstance(node, ast.FunctionDef | ast.ClassDef):
        return {node.name}
    if isinstance(node, ast.Import | ast.ImportFrom):
        return {(alias.asname or alias.name).split(".")[0] for alias in node.names}
    targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
    return {n.id for target in targets for n in ast.walk(target) if isinstance(n, ast.Name)}


def top_level_names(tree: ast.Module) -> set[str]:
    return {
        name for node in tree.body if not isinstance(node, ast.Import | ast.ImportFrom) for name in bound_names(node)
    }


def test_every_runner_module_is_a_part_and_each_comes_after_the_parts_it_imports():
    parts = [path.stem for path in trusted.RUNNER_PARTS]
    # Every module of the runner package but the grader's side (trusted.py) is a part.
    on_disk = sorted(p.stem for p in trusted.RUNNER_PARTS[0].parent.glob("*.py"))
    assert sorted(parts) == sorted(set(on_disk) - {"trusted", "__init__"}) and parts[-1] == "assembly"
    defined: set[str] = set()
    for path in trusted.RUNNER_PARTS:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom | ast.Import) and node not in tree.body:
                pytest.fail(f"{path.name}:{node.lineno}: the assembly reads top-level imports only")
            if isinstance(node, ast.Import):
                assert not [a.name for a in node.names if a.name.startswith("grader")], path.name
            if isinstance(node, ast.ImportFrom) and trusted.is_part_import(node) and node.module != "__future__":
                missing = {a.name for a in node.names} - defined
                assert not missing, f"{path.name} imports {missing} from a part written after it"
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("grader") and node.level == 0:
                assert trusted.is_part_import(node), f"{path.name} imports {node.module}: not a runner part"
        defined |= top_level_names(tree)


def test_the_start_up_file_leaves_out_the_parts_imports_and_keeps_their_lines():
    text = trusted.assemble()
    tree = ast.parse(text)
    assert isinstance(tree.body[0], ast.ImportFrom) and tree.body[0].module == "__future__"
    imports = [n for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    assert not [n.module for n in imports if (n.module or "").startswith("grader")]
    assert sum(n.module == "__future__" for n in imports) == 1
    # Each part's lines, blanked imports and all, follow its heading: line numbers within a part stay.
    lines = text.splitlines()
    for path in trusted.RUNNER_PARTS:
        start = lines.index(f"# -- grader/runner/{path.name}") + 1
        own = path.read_text(encoding="utf-8").splitlines()
        kept = [a == b or (a == "" and b) for a, b in zip(lines[start : start + len(own)], own)]
        assert all(kept), f"{path.name}: line {kept.index(False) + 1} differs"


def test_the_runner_is_installed_only_in_the_kernels_private_namespace():
    """Importing runner.py (or running the start-up file under another name) starts nothing; in the
    kernel, its names end in the one namespace trusted.BOOT_LINE makes, `_install` deleted."""
    assert runner.RUNNER_FILE == trusted.RUNNER_FILE and runner.RUNNER_SOCKET == trusted.RUNNER_SOCKET
    namespace = {"__name__": "not_the_kernel", "__builtins__": dict(vars(builtins))}
    before = set(sys.modules)
    exec(compile(trusted.assemble(), "<grader-runner>", "exec"), namespace)
    assert callable(namespace["_install"]) and callable(namespace["make_judge"])
    assert not {m for m in set(sys.modules) - before if m.startswith("grader")}
    assert "del _install" in runner.__loader__.get_source("grader.runner.assembly")  # type: ignore[union-attr]


COMPREHENSIONS = {"listcomp", "setcomp", "dictcomp", "genexpr"}


def test_no_closure_of_the_runner_reads_a_shared_name_when_called():
    """The runner's namespace and its copy of the builtins stay reachable from code the runner
    hands out (the guards it puts on torch's dispatcher, a test's output class): a closure that
    looked a name up there when called (a module constant, `range`, `OSError`) would do what a
    student rebound it to. Each maker takes them into its own locals at kernel start instead."""
    shared = set(dir(builtins))
    for path in trusted.RUNNER_PARTS:
        shared |= {name for node in ast.parse(path.read_text(encoding="utf-8")).body for name in bound_names(node)}
    found = []

    def visit(table, in_maker, in_closure):
        for child in table.get_children():
            closure = in_closure or (
                in_maker and child.get_type() == "function" and child.get_name() not in COMPREHENSIONS
            )
            if closure:
                found.extend(f"{table.get_name()}.{child.get_name()}: {n}" for n in child.get_globals() if n in shared)
            visit(child, in_maker or child.get_type() == "function", closure)

    for path in trusted.RUNNER_PARTS:
        visit(symtable.symtable(path.read_text(encoding="utf-8"), path.name, "exec"), False, False)
    assert not found, found


# -- what student code can reach of the runner's ---------------------------------------------------
GUARDED = runner_torch.GUARDED
MUTABLE = (list, dict, set, bytearray)


def stand_in_torch() -> types.SimpleNamespace:
    """torch with what the dispatcher's guards take of torch._C: `_DispatchModule`'s methods answer
    with their name; only aten::equal has a kernel."""

    def method(name):
        return lambda self, *args, **kwargs: (name, args)

    module_type = type("_DispatchModule", (), {name: method(name) for name in GUARDED})
    C = types.SimpleNamespace(
        _DispatchModule=module_type,
        DispatchKey=type("DispatchKey", (), {}),
        _dispatch_key_name=str,
        _dispatch_has_kernel=lambda name: name == "aten::equal",
        _dispatch_keyset_to_string=str,
        _dispatch_tls_local_include_set=lambda: "",
        _dispatch_tls_local_exclude_set=lambda: "",
        _dispatch_library=lambda kind, ns, *args: module_type(),
    )
    return types.SimpleNamespace(_C=C)


def cell_contents(cell: types.CellType) -> object:
    try:
        return cell.cell_contents
    except ValueError:  # empty: its name is not bound yet
        return None


def attribute(value: object, name: str) -> object:
    """`value.name`, or None: asking an object of a library for an attribute it lacks may raise
    anything (torch.cuda's lazy objects raise AssertionError on a machine without CUDA)."""
    try:
        return getattr(value, name, None)
    except Exception:
        return None


def reachable(roots: list, home: str) -> list:
    """Everything Python hands out, with no audited event, from `roots`: a function's globals,
    builtins, closure cells (readable and rebindable), defaults and `__wrapped__`; a bound
    method's function and self; what a class of module `home` (the runner's) or an instance of one
    holds; the items of a container. Modules, and classes and instances of other modules (torch's,
    the builtins'), are not entered."""
    seen: set[int] = set()
    found, todo = [], list(roots)
    while todo:
        value = todo.pop()
        if id(value) in seen or isinstance(value, types.ModuleType):
            continue
        seen.add(id(value))
        found.append(value)
        if isinstance(value, types.FunctionType):
            cells = [cell_contents(cell) for cell in value.__closure__ or ()]
            todo += [value.__globals__, value.__builtins__, *cells, value.__defaults__, value.__kwdefaults__]
        todo += [attribute(value, name) for name in ("__wrapped__", "__func__", "__self__")]
        if isinstance(value, type):
            todo += list(vars(value).values()) if value.__module__ == home else []
        elif isinstance(value, dict | types.MappingProxyType):
            todo += [*value.keys(), *value.values()]
        elif isinstance(value, list | tuple | set | frozenset):
            todo += list(value)
        elif type(value).__module__ == home and isinstance(attribute(value, "__dict__"), dict):
            todo += list(attribute(value, "__dict__").values())
    return found


def test_a_sealed_function_is_called_and_hands_nothing_back():
    kept: list = []

    def function(*args):
        kept.append(args)
        return "called"

    sealed = make_seal(_functools._lru_cache_wrapper)(function)
    owner = type("Owner", (), {"method": sealed})()
    assert sealed(1) == "called" and owner.method(2) == "called" and kept == [(1,), (owner, 2)]
    assert sealed.__wrapped__ is None  # torch._dynamo asks every lru_cache wrapper of torch's for one
    hidden = ("__closure__", "__globals__", "__builtins__", "__code__", "__func__", "__self__")
    assert not [name for name in hidden if hasattr(sealed, name)]
    assert function not in reachable([sealed, owner.method, type(owner)], "not the runner's")


def test_nothing_the_runner_hands_out_leads_back_to_its_namespace_or_its_state():
    """The guards on torch's dispatcher and a test's output class (its class, its methods, an
    instance: sys.stdout while a test runs), as the start-up file makes them: none reaches the
    runner's namespace, its builtins or any of its functions (whose closure cells hold its state,
    such as the list of refusals noted), and each still does its job."""
    namespace = {"__name__": "grader_runner_here", "__builtins__": dict(vars(builtins))}
    exec(compile(trusted.assemble(), "<grader-runner>", "exec"), namespace)
    record, refuse, take_refused = namespace["make_refusals"]()
    seal = namespace["make_seal"](_functools._lru_cache_wrapper)
    torch = stand_in_torch()
    namespace["guard_dispatcher"](torch, refuse, seal)
    capped_text = namespace["make_capped_text"](5, seal)
    output = capped_text()
    output.write("printed")
    module_type = torch._C._DispatchModule
    guards = [vars(module_type)[name] for name in GUARDED]  # what torch.library calls
    roots = [*guards, torch._C._dispatch_library, capped_text, output, output.write, namespace["TestTimeout"]]
    found = reachable(roots, "grader_runner_here")
    functions = [value for value in found if isinstance(value, types.FunctionType)]
    assert not [value for value in found if value is namespace or value is namespace["__builtins__"]]
    assert not [function for function in functions if function.__globals__ is namespace], functions
    assert not [
        (function, cell)
        for function in functions
        for cell in function.__closure__ or ()
        if isinstance(cell.cell_contents, MUTABLE)
    ]
    # Each still does its job: the guards refuse a kernel for torch's operators, the class keeps text.
    library, aten = torch._C._dispatch_library("IMPL", "mine"), torch._C._dispatch_library("IMPL", "aten")
    assert library.impl("op", "CPU", print) == ("impl", ("op", "CPU", print))
    assert aten.impl("equal", "Meta", print) == ("impl", ("equal", "Meta", print))
    with pytest.raises(RuntimeError, match="torch's operators"):
        aten.impl("equal", "CPU", print)
    with pytest.raises(RuntimeError, match="fallback"):
        library.fallback(print, "CPU")
    assert output.getvalue() == "print" and output.truncated and not output.isatty()
    assert len(take_refused()) == 2
    # The walk does find the namespace where it is within reach: unsealed, a guard leads there.
    unsealed = stand_in_torch()
    namespace["guard_dispatcher"](unsealed, refuse, lambda function: function)
    unsealed_guards = [vars(unsealed._C._DispatchModule)[name] for name in GUARDED]
    assert any(value is namespace for value in reachable(unsealed_guards, "grader_runner_here"))


# -- who is asking ----------------------------------------------------------------------------
def test_code_is_the_runners_or_a_tests_by_identity_not_by_name():
    file_code = compile("def outer():\n    def inner():\n        pass\n", "<grader-runner>", "exec")
    remember_test, is_runner, is_protected = who.make_known_code(file_code)
    inner = next(c for c in file_code.co_consts if isinstance(c, types.CodeType)).co_consts
    nested = next(c for c in inner if isinstance(c, types.CodeType))
    assert is_runner(file_code) and is_runner(nested) and is_protected(nested)
    forged = compile("def outer():\n    def inner():\n        pass\n", "<grader-runner>", "exec")
    assert not is_runner(forged) and not is_protected(forged)  # same name, same text: not the runner's
    test = compile("x = 1", "<grader-test>", "exec")
    assert not is_protected(test)
    remember_test(test)
    assert is_protected(test) and not is_runner(test)


def test_library_code_asking_for_frames_is_trusted_student_code_is_not():
    is_library = who.make_is_library(who.library_prefixes(sys, lambda p: p))
    assert is_library(LIBRARY) and is_library("<frozen importlib._bootstrap>")
    assert not is_library("/tmp/student.py") and not is_library("<ipython-input-1>")
    protected = compile("pass", "<grader-test>", "exec")
    _, reaches, trusted_asker, where = who.make_asker(is_library, lambda code: code is protected, sys._getframe)
    student, library = frame_from("/tmp/student.py"), frame_from(LIBRARY)
    assert not trusted_asker(student) and trusted_asker(library) and trusted_asker(None)
    assert where(student) == "your code, f" and where(None) == "C code" and where(library).startswith("library ")
    # inspect stands for whoever called it (here this file, not a library's): no trust of its own.
    giver = frame_from(sys.prefix + "/lib/python3/inspect.py", "currentframe")
    assert who.FRAME_GIVERS[0] in giver.f_code.co_filename and not trusted_asker(giver)
    assert not reaches(student)


# -- the audit hook ---------------------------------------------------------------------------
@pytest.fixture
def audit():
    """The hook with stand-ins for who is asking: `asker[0]` is the frame that 'caused' an event."""
    record, refuse, take = runner_audit.make_refusals()
    asker: list = [None]
    test_code = compile("pass", "<grader-test>", "exec")
    is_library = who.make_is_library((sys.prefix,))
    answers = {
        "asker_is_trusted": lambda frame: frame is None or is_library(frame.f_code.co_filename),
        "where": lambda frame: "your code, f",
        "reaches_protected": lambda frame: True,
        "is_library": is_library,
        "is_runner": lambda code: False,
        "is_protected": lambda code: code is test_code,
    }
    watched = [None, None]
    judge = runner_audit.make_judge(answers, types.CodeType, record, refuse, lambda path, text: False, watched)
    hook = runner_audit.make_audit_hook(judge, lambda: asker[0], is_library, refuse, threading.get_ident)
    return types.SimpleNamespace(hook=hook, take=take, asker=asker, watched=watched, test_code=test_code)


def test_the_audit_hook_lets_unwatched_events_through_and_refuses_heap_walks(audit):
    audit.hook("import", ("os", None, None, None, None))
    audit.hook("open", ("/tmp/data.csv", "r", 0))
    assert audit.take() == []
    with pytest.raises(RuntimeError, match="walking the heap"):
        audit.hook("gc.get_objects", ())
    with pytest.raises(RuntimeError, match="memory"):
        audit.hook("open", (b"/proc/self/mem", "rb", 0))
    assert audit.take() == [
        "refused: walking the heap (gc.get_objects)",
        "refused: reading the kernel's memory (/proc/.../mem)",
    ]
    assert audit.take() == []


def test_the_audit_hook_judges_frames_code_and_file_names_by_who_asks(audit):
    audit.asker[0] = frame_from("/tmp/student.py")
    with pytest.raises(RuntimeError, match="frames"):
        audit.hook("sys._getframe", (frame_from(LIBRARY),))
    function = types.FunctionType(audit.test_code, {})
    with pytest.raises(RuntimeError, match="a test's code"):
        audit.hook("object.__getattr__", (function, "__code__"))
    with pytest.raises(RuntimeError, match="file name"):
        audit.hook("compile", ("x = 1", "<grader-test>"))
    audit.hook("compile", ("x = 1", "/tmp/student.py"))  # a name of its own: no claim
    audit.hook("sys.settrace", (None,))  # recorded, not refused
    assert audit.take()[-1] == "set a trace or profile function (sys.settrace)"
    audit.asker[0] = frame_from(LIBRARY)  # library code for its own use
    audit.hook("sys._getframe", (frame_from(LIBRARY),))
    audit.hook(runner_audit.MONITOR, (1, 1, None))  # between tests: a profiler may start
    audit.watched[0] = 1.0  # a test runs: nobody but the runner may
    with pytest.raises(RuntimeError, match="monitoring"):
        audit.hook(runner_audit.MONITOR, (1, 1, None))


# -- the hook points: detection, then repair ---------------------------------------------------
class Manager:
    def __init__(self):
        self.cleanup_transforms, self.line_transforms, self.token_transformers = [], [], []


class Events:
    def __init__(self):
        self.callbacks = {"pre_run_cell": [], "post_run_cell": []}


class Shell:
    def __init__(self):
        self.input_transformer_manager, self.events = Manager(), Events()
        self.input_transformers_post, self.ast_transformers = [], []
        self.displayhook, self.display_pub, self.user_ns = print, print, {"x": 1}

    @property
    def input_transformers_cleanup(self):  # as IPython's: its manager's list under another name
        return self.input_transformer_manager.cleanup_transforms

    def run_cell(self, source):
        return source


class Kernel:
    def __init__(self):
        self.shell_handlers = {"execute_request": print}


def test_a_bent_point_is_found_named_once_and_left_alone_until_put_back():
    shell, kernel, same = Shell(), Kernel(), runner_hooks.make_same()
    watchers = [
        runner_hooks.watch_transformers(shell, same),
        runner_hooks.watch_shell(shell, kernel, runner_hooks.make_library_callback(lambda name: name == LIBRARY)),
    ]
    assert runner_hooks.find_bent(watchers) == []
    shell.input_transformers_cleanup.append(lambda lines: [])
    shell.events.callbacks["pre_run_cell"].append(lambda: None)
    kernel.shell_handlers["execute_request"] = len
    shell.run_cell = lambda source: None
    shell.user_ns = {}
    found = runner_hooks.find_bent(watchers)
    assert [label for label, _, _ in found] == [
        "IPython input transformers (input_transformers_cleanup)",  # once, for both of its names
        "the IPython shell's user_ns",
        "IPython events (pre_run_cell)",
        "the kernel's message handlers (shell_handlers)",
        "Shell.run_cell (replaced on the instance)",
    ]
    assert (
        shell.input_transformers_cleanup and kernel.shell_handlers["execute_request"] is len
    )  # detection changes nothing
    assert runner_hooks.put_back(found) == [label for label, _, _ in found]
    assert shell.input_transformers_cleanup == [] and shell.events.callbacks["pre_run_cell"] == []
    assert kernel.shell_handlers == {"execute_request": print} and shell.user_ns == {"x": 1}
    assert shell.run_cell("a") == "a" and runner_hooks.find_bent(watchers) == []


def test_a_librarys_callback_and_wrapper_are_no_bend():
    shell = Shell()
    library_callback = runner_hooks.make_library_callback(lambda name: name == LIBRARY)
    watcher = runner_hooks.watch_shell(shell, None, library_callback)
    namespace: dict = {}
    exec(compile("def on_cell(*a):\n    pass\n", LIBRARY, "exec"), namespace)
    shell.events.callbacks["post_run_cell"].append(namespace["on_cell"])
    assert watcher() == []
    module = types.ModuleType("math")
    module.sqrt = original = lambda x: x
    exec(compile("def wrapper(*a):\n    pass\n", LIBRARY, "exec"), namespace)
    modules = {"math": module}
    library_wrapper = runner_hooks.make_library_wrapper([], modules, lambda name: name == LIBRARY)
    watch = runner_hooks.watch_modules(modules, library_wrapper)
    namespace["wrapper"].__wrapped__ = original
    module.sqrt = namespace["wrapper"]
    found = watch()
    assert [label for label, _, _ in found] == [None] and runner_hooks.put_back(found) == []
    assert module.sqrt is namespace["wrapper"] and watch() == []  # the wrapper is what start held now
    module.sqrt = abs
    assert runner_hooks.put_back(watch()) == ["math.sqrt"] and module.sqrt is namespace["wrapper"]


def test_sys_hooks_the_import_system_and_modules_are_put_back():
    fake_sys = types.SimpleNamespace(breakpointhook=print, unraisablehook=print, meta_path=[1, 2], modules={"m": sys})
    watch = runner_hooks.watch_sys(fake_sys, runner_hooks.make_same())
    fake_sys.breakpointhook, fake_sys.meta_path[0], fake_sys.modules["m"] = len, 3, types
    assert runner_hooks.put_back(watch()) == [
        "sys.breakpointhook",
        "the import system (sys.meta_path)",
        "sys.modules['m']",
    ]
    assert (fake_sys.breakpointhook, fake_sys.meta_path, fake_sys.modules) == (print, [1, 2], {"m": sys})


def test_a_classs_methods_are_watched_once_each():
    class Base:
        def step(self):
            return "base"

    class Child(Base):
        pass

    classes = runner_hooks.class_snapshot(
        types.SimpleNamespace(displayhook=None, display_pub=None, events=None, input_transformer_manager=None),
        Child(),
        {},
    )
    assert [c for c, _ in classes].count(Base) == 1 and Child in [c for c, _ in classes]
    watch = runner_hooks.watch_classes(classes, runner_hooks.make_library_wrapper(classes, {}, lambda name: False))
    Child.step = lambda self: "forged"  # new on Child, shadowing Base's
    Base.step = lambda self: "forged"
    found = watch()
    assert sorted(label.rsplit(".", 2)[-2:][0] + "." + label.rsplit(".", 1)[-1] for label, _, _ in found) == [
        "Base.step",
        "Child.step",
    ]
    runner_hooks.put_back(found)
    assert Child().step() == "base" and "step" not in vars(Child)


def test_torch_global_hooks_and_the_check_that_names_what_was_refused():
    registry: dict = {}
    modules = {"torch.nn.modules.module": types.SimpleNamespace(_global_forward_hooks=registry)}
    ended = []
    check = runner_hooks.make_check(
        [runner_hooks.watch_torch_hooks(modules)], lambda: ended.append(1), lambda: ["refused: x"]
    )
    registry[1] = print
    assert check() == ["torch's global hooks (_global_forward_hooks)", "refused: x"] and registry == {} and ended


# -- running one test -----------------------------------------------------------------------------
class Stop(BaseException):
    """Stands for runner_test.TestTimeout, which the watchdog raises."""


# linecache's cache as IPython fills it for a cell: this file's lines (the student's `explode`)
LINES = {__file__: (0, None, open(__file__, encoding="utf-8").read().splitlines(True), __file__)}


@pytest.fixture
def run():
    flags: list[list[str]] = [[], []]
    known = who.make_known_code(compile("pass", "<grader-runner>", "exec"))
    execute = runner_test.make_execute(
        sys,
        compile=compile,
        exec=exec,
        set_trace=sys.settrace,
        get_ident=threading.get_ident,
        monotonic=lambda: 0.0,
        remember_test=known[0],
        watched=[None, None],
        reset_monitoring=lambda: False,
        dispatch_state=lambda: "",
        plain=lambda value: ("plain", value),
        capped_text=make_capped_text(10, make_seal(_functools._lru_cache_wrapper)),
        timeout_error=Stop,
        failure=runner_test.make_failure(known[2], lambda filename: filename.startswith(sys.prefix), LINES),
    )
    user_ns = {"answer": lambda: 41, "explode": lambda: 1 / 0, "math": "rebound by the student", "Stop": Stop}
    user_ns.update(rebind=rebind, __grader_seal__=lambda function: function)  # a student's sealer counts for nothing
    seal = make_seal(_functools._lru_cache_wrapper)
    sealers = make_seal_test(seal, runner_test.SEAL_NAMES, staticmethod, classmethod)
    namespace = runner_test.make_namespace(
        user_ns, dict(vars(builtins)), {"math": __import__("math")}, sys.modules, sealers
    )
    torch = runner_torch.torch_state(None, None, None)
    after = runner_test.make_after_test(sys.gettrace, sys.settrace, torch)
    return runner_test.make_run(lambda: flags.pop(0) if flags else [], namespace, execute, after, lambda: None)


def test_a_test_runs_in_its_own_namespace_with_the_releases_imports(run):
    reply = run("assert answer() + 1 == 42\nprint(math.pi)", {"math": ("math", None)}, timeout=5)
    assert reply["passed"] and reply["stdout"] == "3.14159265" and reply["truncated"] and reply["flags"] == []


def rebind(function):
    """A student's answer that rebinds, through a function a test handed it, what the test calls next."""
    names = getattr(function, "__globals__", None)
    if names is not None:
        names["len"] = lambda value: 42
    return function()


# A test defining functions of every kind, each handed to `rebind`; its hidden part raises on line 30.
DEFINING = """\
def helper():
    return 1
class Base:
    def __init__(self, value):
        self.value = value
class Child(Base):
    def __init__(self, value=1):
        super().__init__(value * 2)
    @staticmethod
    def twice():
        return 2
    @property
    def shown(self):
        return self.value
    def __new__(cls, *args):
        return super().__new__(cls)
    def __init_subclass__(cls):
        cls.made = True
    def make(self):
        def inner():
            return self.value
        return inner
factory = lambda: (lambda: Child(3))
handed = [helper, factory, factory(), Child.twice, Child().make(), Child, lambda: Child().shown]
results = [rebind(function) for function in handed]
class Grandchild(Child): pass
### BEGIN HIDDEN TESTS
assert len([]) == 0 and Grandchild.made and Child().shown == 2 and factory()().value == 6
assert all(not hasattr(f, name) for f in handed[:5] for name in ("__globals__", "__closure__", "__code__"))
assert helper.__name__ == "helper" and Child.make.__qualname__ == "Child.make"
raise ValueError("line 30")
"""


def test_every_function_a_test_defines_is_sealed_and_its_lines_kept(run):
    """trusted.seal_functions: a decorator line above every `def` (methods and nested functions
    too; `__new__` stays a staticmethod, `__init_subclass__` a classmethod), every `lambda`
    wrapped in a call, no other line changed; what student code gets of them has no
    `__globals__`, so `rebind` cannot reach the tests' namespace. The runner puts the sealers in
    the namespace after the notebook's names."""
    sealed = trusted.seal_functions(DEFINING)
    decorators = [f"@{name}" for name in runner_test.SEAL_NAMES]
    kept = [line for line in sealed.split("\n") if line.strip() not in decorators]
    assert [line.replace("__grader_seal__(", "").replace(")", "") for line in kept] == [
        line.replace(")", "") for line in DEFINING.split("\n")
    ]
    assert sealed.count("@__grader_seal__\n") == 7 and sealed.count("__grader_seal__(lambda") == 3
    assert (
        "@__grader_seal_static__\n    def __new__" in sealed
        and "@__grader_seal_class__\n    def __init_subclass__" in sealed
    )
    assert "@staticmethod\n    @__grader_seal__\n    def twice" in sealed  # under the test's own decorators
    reply = run(sealed, {}, timeout=5)
    line = reply["line"]
    assert (reply["ename"], reply["message"]) == ("ValueError", "line 30"), reply
    assert sealed.split("\n")[line - 1] == 'raise ValueError("line 30")' and line > trusted.hidden_start(sealed)
    assert trusted.seal_functions("def broken(:\n") == "def broken(:\n"
    unsealed = run(DEFINING, {}, timeout=5)  # the same test, unsealed: the student's rebinding wins
    assert unsealed["ename"] == "AssertionError"


# A student's shadows of builtins: liars (a cheat), and an honest `sum = 0` and `sorted` of its own.
SHADOWS = {
    "all": lambda iterable: True,
    "any": lambda iterable: True,
    "abs": lambda value: 0,
    "sorted": lambda iterable, **options: [],
    "isinstance": lambda value, kind: True,
    "len": lambda value: 0,
    "__import__": lambda *args, **kwargs: None,
    "sum": 0,
}
# The test's code and a function it defines (sealed, as the runner gets it), each looking builtins up.
CHECKING = """\
def check(values):
    assert not all(v > 5 for v in values) and not any(v > 5 for v in values) and abs(-3) == 3
    assert sorted(values) == [1, 2] and not isinstance(values, str) and len(values) == 2
    assert sum(values) == 3 and __import__("math").pi > 3
check([2, 1])
assert not all([0]) and sorted([2, 1]) == [1, 2] and mine([2, 1]) == "the student's own"
def _helper():
    return "the test's"
"""


def test_a_tests_code_and_functions_see_the_real_builtins_and_its_own_helpers():
    """Whatever builtin names the notebook binds, the test's code and the functions it defines get
    the real builtins (issue 46: `isinstance`, `all` and the like of a notebook's made lesson 6's
    simulated GPUs pass on a blank answer), and a helper an earlier test defined stays the test's,
    whatever the notebook later binds under its name; the student's own functions keep the
    notebook's `sorted`."""
    user_ns: dict = dict(SHADOWS)
    exec('def mine(values):\n    return sorted(values) == [] and "the student\'s own"', user_ns)
    user_ns["__name__"] = "__main__"
    seal = make_seal(_functools._lru_cache_wrapper)
    sealers = make_seal_test(seal, runner_test.SEAL_NAMES, staticmethod, classmethod)
    namespace = runner_test.make_namespace(user_ns, dict(vars(builtins)), {}, sys.modules, sealers)
    ns = namespace({})
    exec(trusted.seal_functions(CHECKING), ns)
    assert ns["__name__"] == "__main__"  # the notebook's own, not the builtins module's
    user_ns["_helper"] = lambda: "the student's"  # bound after the test that defined it
    ns = namespace({})
    exec('assert _helper() == "the test\'s" and check([1, 2]) is None', ns)
    unguarded = dict(user_ns, __builtins__=dict(vars(builtins)))  # the notebook's names first: the liars win
    with pytest.raises(AssertionError):
        exec(CHECKING, unguarded)


def test_a_failed_test_says_who_raised_and_where(run):
    reply = run("x = 1\nassert answer() == 42, 'wrong answer'", {}, timeout=5)
    assert (reply["passed"], reply["ename"], reply["message"], reply["by_test"], reply["line"]) == (
        False,
        "AssertionError",
        "wrong answer",
        True,
        2,
    )
    reply = run("int(answer(), base='x')", {}, timeout=5)  # raised inside a function the test called
    assert reply["ename"] == "TypeError" and reply["by_test"] is True  # C code: the test's frame is the last
    reply = run("explode()", {}, timeout=5)
    assert reply["ename"] == "ZeroDivisionError" and reply["by_test"] is False
    # the student's own line it came from, its text read from linecache's cache (never by calling anything)
    number, text = reply["where"]
    assert text == LINES[__file__][2][number - 1].strip() and "1 / 0" in text, reply["where"]
    try:
        (lambda: 1 / 0)()
    except ZeroDivisionError as error:  # an entry not of IPython's form: the line's number only
        odd = runner_test.make_failure(lambda code: False, None, {__file__: ("not", "a", "cell", "entry")})(error, None)
    assert odd["where"][1] == "" and odd["where"][0] > 0


def test_a_timeout_and_a_collected_value(run):
    reply = run("raise Stop", {}, timeout=2)
    assert reply["timed_out"] and reply["message"] == "the test ran past 2 s and was stopped"
    reply = run("judged = answer()", {}, timeout=5, collect=True)
    assert reply["passed"] and reply["data"] == ("plain", 41)


def test_a_trace_left_behind_fails_the_test_and_is_taken_away(run):
    previous = sys.gettrace()
    try:
        reply = run("import sys\nsys.settrace(lambda *a: None)", {}, timeout=5)
    finally:
        sys.settrace(previous)
    assert (
        not reply["passed"] and reply["tampered_during"] and "a trace function set while a test ran" in reply["flags"]
    )


def test_a_forked_copy_ends_itself():
    ended = []
    runner_reset.make_exit_fork(lambda: 2, 1, ended.append)()
    runner_reset.make_exit_fork(lambda: 1, 1, ended.append)()
    assert ended == [0]


# -- the channel ---------------------------------------------------------------------------------
def test_the_channel_answers_signed_and_reports_its_own_failures(tmp_path):
    def run(source, imports, timeout, collect=False):
        if source == "boom":
            raise ValueError("runner bug")
        return {"passed": True, "source": source}

    answer = runner_channel.make_answer(run, lambda: ["bent"])
    path = str(tmp_path / trusted.RUNNER_SOCKET)
    listener = runner_channel.listen(_socket, path)
    serve = runner_channel.make_serve(listener, path, _socket, answer, os.unlink, hmac.digest)

    def serve_until_closed():
        try:
            serve()
        except EOFError:
            pass

    thread = threading.Thread(target=serve_until_closed, daemon=True)
    thread.start()
    channel = trusted.RunnerChannel(str(tmp_path))
    try:
        alive = lambda final: None  # noqa: E731
        assert channel.request({"op": "run", "source": "x", "imports": {}, "timeout": 1}, 5, alive)["passed"]
        assert channel.request({"op": "check"}, 5, alive)["flags"] == ["bent"]
        failed = channel.request({"op": "collect", "source": "boom", "imports": {}, "timeout": 1}, 5, alive)
        assert failed["runner_error"] == "ValueError: runner bug" and not failed["passed"]
        assert not (tmp_path / trusted.RUNNER_SOCKET).exists()  # removed once the grader connected
    finally:
        channel.close()
        thread.join(5)
