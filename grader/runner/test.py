"""Running one test (trusted.RUNNER_PARTS): a test cell's source, compiled by the runner under
`<grader-test>` and executed in the runner's thread, in a namespace of its own: the notebook's
names, a private copy of the builtins, and the names the release imports taken from the modules
loaded at start (whatever the student rebound). What it prints is kept, up to a limit; past its
time limit the watchdog (runner/reset.py) stops it. Hook points are checked and put back before
and after (runner/hooks.py); a change made while it ran, or a trace, a dispatch key or a torch
mode it left behind, fails it and is named. With `collect`, the judge's `judged` value comes
back as plain literals (runner/data.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

# What a test's `def` and `lambda` are wrapped in (trusted.seal_functions writes the names into the
# test's source; runner_data.make_seal_test makes what they stand for): the sealer of a function,
# and the two that make a sealed `__new__` a staticmethod and a sealed `__init_subclass__` or
# `__class_getitem__` a classmethod, as Python does for those functions.
SEAL_NAMES = ("__grader_seal__", "__grader_seal_static__", "__grader_seal_class__")


class TestTimeout(BaseException):
    """A test ran past its time limit (a BaseException: `except Exception` does not stop it)."""


def make_namespace(
    user_ns: dict, builtins_copy: dict, all_modules: dict, modules: dict, sealers: dict | None = None
) -> Callable[[dict], dict]:
    """`namespace(imports)`: the tests' namespace, refreshed for the next test, in this order: the
    notebook's names; fresh builtins, and the real builtin under every builtin name the notebook
    binds (`all`, `isinstance`, `sorted` of the student's, or a plain `sum = 0`); the names earlier
    tests bound themselves (the helpers a test cell defines for later ones); the release's imports (name ->
    (module, attribute or None)); `sealers` (SEAL_NAMES -> runner_data.make_seal_test's) last,
    whatever the notebook named so. The test's code and every function it defines look names up
    here: whatever the notebook defines, they get the real builtins and the tests' own helpers,
    and the answers by their names. The student's own functions keep looking names up in the
    notebook's namespace, with the notebook's own `sorted`. Nothing is flagged: a name is honest
    Python, and here it changes nothing of what the test calls."""
    _dict, _getattr, _exception, _list, _type, _str = dict, getattr, Exception, list, type, str
    import_module = builtins_copy["__import__"]
    # The builtins' own module metadata (`__name__`, `__doc__`, ...) is the notebook's to keep.
    real = {
        name: value
        for name, value in builtins_copy.items()
        if name not in ("__name__", "__doc__", "__package__", "__loader__", "__spec__")
    }
    tests_ns: dict = {}
    own: dict = {}  # what the tests bound themselves, name -> value
    given: dict = {}  # what `namespace` put in for the last test

    def resolve(module_name: str, attribute: str | None) -> Any:
        module = all_modules.get(module_name) or modules.get(module_name)
        if module is None:
            module = import_module(module_name, fromlist=["_"] if "." in module_name else [])
        return module if attribute is None else _getattr(module, attribute)

    def namespace(imports: dict) -> dict:
        # Exact str names only: `in` on a str subclass of the student's would run its __hash__ here.
        for name, value in _list(tests_ns.items()):
            if _type(name) is _str and name != "__builtins__" and (name not in given or given[name] is not value):
                own[name] = value
        tests_ns.update(user_ns)
        tests_ns["__builtins__"] = _dict(builtins_copy)
        for name in _list(user_ns):
            if _type(name) is _str and name in real:
                tests_ns[name] = real[name]
        tests_ns.update(own)
        for name, (module_name, attribute) in imports.items():
            try:
                tests_ns[name] = resolve(module_name, attribute)
            except _exception:
                pass
        tests_ns.update(sealers or {})
        given.clear()
        given.update(tests_ns)
        return tests_ns

    return namespace


def make_failure(
    is_protected: Callable[[Any], bool], is_library: Callable[[str], bool] | None = None, lines: dict | None = None
) -> Callable[[BaseException, Any], dict]:
    """`failure(error, code)`: what a reply says of a test that raised `error`: its type's name,
    its message when that is one string, whether the test itself raised it (not student code it
    called), and the line of the test's own `code` it stopped at. When student code raised it,
    `where`: the innermost line of the student's own (not the runner's, a test's or a library's
    code) as (line number, its text or ""), the text read from `lines` (linecache's cache, kept at
    start, where IPython keeps each cell's lines) by exact types only: nothing of the student's is
    called here."""
    _type, _len, _str, _tuple, _list, _int, _dict = type, len, str, tuple, list, int, dict
    name_of = _type.__dict__["__name__"].__get__
    get = _dict.get

    def text_of(filename: str, number: int) -> str:
        entry = get(lines, filename) if _type(lines) is _dict else None
        if _type(entry) is not _tuple or _len(entry) != 4 or _type(entry[2]) is not _list:
            return ""
        found = entry[2][number - 1] if 0 < number <= _len(entry[2]) else ""
        return found.strip()[:200] if _type(found) is _str else ""

    def students_line(traceback: Any) -> tuple[int, str] | None:
        found = None
        while traceback is not None:
            code = traceback.tb_frame.f_code
            filename = code.co_filename
            if _type(filename) is _str and not is_protected(code) and not (is_library and is_library(filename)):
                number = traceback.tb_lineno
                found = (number, text_of(filename, number)) if _type(number) is _int else None
            traceback = traceback.tb_next
        return found

    def failure(error: BaseException, code: Any) -> dict:
        reply: dict = {"ename": name_of(_type(error))}
        if _len(args := error.args) == 1 and _type(args[0]) is _str:
            reply["message"] = args[0][:2000]
        traceback = error.__traceback__
        while traceback is not None and traceback.tb_next is not None:
            traceback = traceback.tb_next
        reply["by_test"] = traceback is not None and is_protected(traceback.tb_frame.f_code)
        tb = error.__traceback__.tb_next if error.__traceback__ is not None else None
        reply["line"] = tb and tb.tb_frame.f_code is code and tb.tb_lineno
        if not reply["by_test"]:
            reply["where"] = students_line(error.__traceback__)
        return reply

    return failure


def make_execute(
    sys: Any,
    *,
    compile: Callable,
    exec: Callable,
    set_trace: Callable,
    get_ident: Callable[[], int],
    monotonic: Callable[[], float],
    remember_test: Callable,
    watched: list,
    reset_monitoring: Callable[[], bool],
    dispatch_state: Callable[[], str],
    plain: Callable,
    capped_text: Callable,
    timeout_error: type[BaseException],
    failure: Callable[[BaseException, Any], dict],
) -> Callable[..., tuple[dict, bool, Any]]:
    """`execute(source, ns, timeout, collect)` -> (reply, whether a monitoring tool was in use,
    the thread's dispatch keys at the start). Every argument is a reference kept from start:
    `watched` is [deadline, thread] for the watchdog, `remember_test` runner_who's, `plain` and
    `capped_text` runner_data's, `failure` make_failure's."""
    _compile, _exec, _base_exception = compile, exec, BaseException

    def execute(source: str, ns: dict, timeout: float, collect: bool) -> tuple[dict, bool, Any]:
        stdout, stderr = capped_text(), capped_text()
        real_out, real_err = sys.stdout, sys.stderr
        reply = {"passed": False, "ename": "", "message": "", "by_test": False, "timed_out": False}
        set_trace(None)
        monitored, dispatch_keys, code = False, None, None
        try:
            try:
                code = _compile(source, "<grader-test>", "exec", dont_inherit=True)
                remember_test(code)
                sys.stdout, sys.stderr = stdout, stderr
                watched[1], watched[0] = get_ident(), monotonic() + timeout
                monitored = reset_monitoring()  # no tool may see the test's code
                dispatch_keys = dispatch_state()
                ns.pop("judged", None)
                _exec(code, ns)
                watched[0] = None
                if collect:
                    reply["data"] = plain(ns.get("judged"))
                reply["passed"] = True
            finally:
                watched[0] = None
        except timeout_error:
            reply.update(
                ename="TimeoutError",
                message=f"the test ran past {timeout:g} s and was stopped",
                by_test=True,
                timed_out=True,
            )
        except _base_exception as error:  # the student's code may raise anything)
            reply.update(failure(error, code))
            error.__traceback__ = None  # the frames of a failed test may hold what exhausted memory
        finally:
            sys.stdout, sys.stderr = real_out, real_err
        reply.update(stdout=stdout.getvalue(), stderr=stderr.getvalue(), truncated=stdout.truncated or stderr.truncated)
        return reply, monitored, dispatch_keys

    return execute


def make_after_test(get_trace: Callable, set_trace: Callable, torch_state: dict) -> Callable[[bool, Any], list[str]]:
    """`after_test(monitored, dispatch_keys)`: what the test's run left or met that fails it (a
    monitoring tool in use at its start, a trace function, dispatch keys switched, a torch mode
    still active), each put right. `torch_state`: runner_torch.torch_state's references."""
    dispatch_state, function_stack = torch_state["dispatch_state"], torch_state["function_stack"]
    dispatch_stack, pop_function_mode = torch_state["dispatch_stack"], torch_state["pop_function_mode"]

    def after_test(monitored: bool, dispatch_keys: Any) -> list[str]:
        during = ["a monitoring tool (sys.monitoring) in use when a test started"] if monitored else []
        if get_trace() is not None:
            during.append("a trace function set while a test ran")
            set_trace(None)
        if dispatch_keys is not None and dispatch_state() != dispatch_keys:
            during.append("torch's dispatch keys switched on or off while a test ran")
        if function_stack() or dispatch_stack():
            during.append("a torch function or dispatch mode left active while a test ran")
            while function_stack():
                pop_function_mode()
        return during

    return after_test


def make_run(
    check: Callable[[], list[str]], namespace: Callable, execute: Callable, after_test: Callable, exit_fork: Callable
):
    """`run(source, imports, timeout, collect=False)`: one test, with the hook points checked
    before and after; the reply the grader scores. `exit_fork()` ends a copy of the kernel the
    student forked (only the kernel itself answers)."""
    _bool = bool

    def run(source: str, imports: dict, timeout: float, collect: bool = False) -> dict:
        before = check()
        reply, monitored, dispatch_keys = execute(source, namespace(imports), timeout, collect)
        exit_fork()
        during = after_test(monitored, dispatch_keys) + check()
        if during:
            reply["passed"] = False
        reply.update(flags=before + during, tampered_during=_bool(during))
        return reply

    return run
