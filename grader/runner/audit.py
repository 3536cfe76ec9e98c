"""The runner's audit hook (PEP 578; trusted.RUNNER_PARTS, after runner/who.py, whose answers it
takes as arguments). sys.addaudithook cannot be undone: once the runner has added it, it sees
every audited event of the kernel to its end. It refuses, raising in the code that asked, what
reading or bending the runner or a test needs:

- frames from which the runner's or a test's frame can be reached, and a test's code, unless
  the asker is trusted (runner/who.py);
- code that claims the runner's or a test's file name (only the runner compiles those), or a
  library's file name without being that file's own text (the import system compiling it);
- gc's heap walks, all threads' frames, a second audit hook, tracing every thread;
- sys.monitoring callbacks once a test runs (only the runner may: it takes them away);
- ctypes from student code, the process's memory through /proc.

A trace or profile function student code sets is no danger to the tests (per thread; they run
in the runner's), but is recorded as an attempt. Whatever is refused or recorded is reported
with the next reply (`take_refused`)."""

from __future__ import annotations

from collections.abc import Callable
from types import MappingProxyType
from typing import Any

# Only the runner compiles code under these file names.
PROTECTED_NAMES = frozenset({"<grader-runner>", "<grader-test>"})
FRAME_ATTRS = frozenset({"tb_frame", "gi_frame", "cr_frame", "ag_frame", "f_code"})
CODE_ATTRS = frozenset({"__code__", "gi_code", "cr_code", "ag_code"})
# Read only (a mapping proxy): the audit hook keeps this very object.
ALWAYS = MappingProxyType(
    {
        "sys._current_frames": "reading all threads' frames (sys._current_frames)",
        "sys._current_exceptions": "reading all threads' exceptions (sys._current_exceptions)",
        "gc.get_objects": "walking the heap (gc.get_objects)",
        "gc.get_referrers": "walking the heap (gc.get_referrers)",
        "gc.get_referents": "walking the heap (gc.get_referents)",
        "sys.addaudithook": "adding an audit hook (sys.addaudithook)",
        "sys._settraceallthreads": "tracing every thread (sys._settraceallthreads)",
        "sys._setprofileallthreads": "profiling every thread (sys._setprofileallthreads)",
    }
)
MONITOR = "sys.monitoring.register_callback"
MAKES_CODE = ("compile", "code.__new__")
WATCHED = ("sys._getframe", "sys.settrace", "sys.setprofile", MONITOR, *MAKES_CODE)


def make_refusals() -> tuple[Callable[[str], None], Callable[[str], None], Callable[[], list[str]]]:
    """(`record(what)`, `refuse(what)`, `take_refused()`): note an attempt once; note it and raise
    in the code that asked; hand over (and forget) what was noted since the last call."""
    _list, _error = list, RuntimeError
    refused: list[str] = []

    def record(what: str) -> None:
        if what not in refused:
            refused.append(what)

    def refuse(what: str) -> None:
        record(f"refused: {what}")
        raise _error(f"the grader does not allow {what} while grading")

    def take_refused() -> list[str]:
        taken = _list(refused)
        refused.clear()
        return taken

    return record, refuse, take_refused


def make_is_file_text(open_file: Callable) -> Callable[[Any, Any], bool]:
    """`is_file_text(path, source)`: whether `source` (text or bytes) is the text of the file at `path`."""
    _isinstance, _str, _os_error = isinstance, str, OSError

    def is_file_text(path: Any, source: Any) -> bool:
        try:
            with open_file(path, "rb") as handle:
                text = handle.read()
        except _os_error:
            return False
        return text == (source.encode() if _isinstance(source, _str) else source)

    return is_file_text


def make_judge(
    who: dict[str, Callable],
    code_type: type,
    record: Callable[[str], None],
    refuse: Callable[[str], None],
    is_file_text: Callable[[Any, Any], bool],
    watched: list,
) -> Callable[[str, tuple, Any, Any, Any], None]:
    """`judge(event, args, attr, name, asker)`: refuse or record one watched event, by what it
    reaches and who asks (`asker`: the frame that caused it). `who`: runner/who.py's answers by
    name (asker_is_trusted, reaches_protected, where, is_library, is_runner, is_protected);
    `record` and `refuse` make_refusals'; `watched[0]` the running test's deadline (None
    between tests)."""
    asker_is_trusted, where, reaches_protected = who["asker_is_trusted"], who["where"], who["reaches_protected"]
    is_library, is_runner, is_protected = who["is_library"], who["is_runner"], who["is_protected"]
    _getattr, _type = getattr, type
    protected, frame_attrs, code_attrs, monitor, makes_code = (
        PROTECTED_NAMES,
        FRAME_ATTRS,
        CODE_ATTRS,
        MONITOR,
        MAKES_CODE,
    )

    def by_runner(asker: Any) -> bool:
        return asker is not None and is_runner(asker.f_code)

    def judge(event: str, args: tuple, attr: Any, name: Any, asker: Any) -> None:
        if event == "sys._getframe" or attr in frame_attrs:
            frame = args[0] if event == "sys._getframe" else _getattr(args[0], attr, None)
            if _type(frame).__name__ == "frame" and reaches_protected(frame) and not asker_is_trusted(asker):
                refuse(f"reading the grader's or a test's frames (from {where(asker)})")
        elif attr in code_attrs:
            code = _getattr(args[0], attr, None)
            if _type(code) is code_type and is_protected(code) and not asker_is_trusted(asker):
                refuse("reading a test's code")
        elif event in makes_code:
            # Only the runner names code after itself or a test; a library's name goes with
            # that file's own text (the import system compiling it), whoever asks: library
            # code can be reached through a loader, thread or executor of the student's.
            if not (by_runner(asker) or (event == "compile" and name not in protected and is_file_text(name, args[0]))):
                refuse("code that claims a library's or the grader's file name")
        elif event == monitor:
            # cProfile (%prun) monitors every thread from Python 3.12: library code may start
            # it between tests; once a test runs, only the runner (its monitoring reset) may.
            if not (by_runner(asker) or (watched[0] is None and asker_is_trusted(asker))):
                refuse("monitoring every thread (sys.monitoring)")
        elif asker is not None and not is_library(asker.f_code.co_filename) and not is_protected(asker.f_code):
            if event.startswith("ctypes."):
                refuse("ctypes (raw memory and C calls)")
            record(f"set a trace or profile function ({event})")

    return judge


def make_audit_hook(
    judge: Callable[[str, tuple, Any, Any, Any], None],
    requester: Callable[[], Any],
    is_library: Callable[[str], bool],
    refuse: Callable[[str], None],
    get_ident: Callable[[], int],
) -> Callable[[str, tuple], None]:
    """`hook(event, args)` for sys.addaudithook: lets every event it does not watch through at
    once, refuses those it always refuses, and hands the rest to `judge` with the frame that
    caused them (runner_who's `requester`). Its own events (the attributes `judge` reads) pass."""
    _isinstance, _str, _bytes, _set = isinstance, str, bytes, set
    protected, frame_attrs, code_attrs, always = PROTECTED_NAMES, FRAME_ATTRS, CODE_ATTRS, ALWAYS
    makes_code, watched_events = MAKES_CODE, WATCHED
    inside = _set()  # threads running the hook (its own events pass)

    def hook(event: str, args: tuple) -> None:
        if event == "open":
            if _isinstance(args[0], (_str, _bytes)):
                path = args[0] if _isinstance(args[0], _str) else args[0].decode(errors="replace")
                if path.startswith("/proc/") and path.endswith(("/mem", "/maps")):
                    refuse("reading the kernel's memory (/proc/.../mem)")
            return
        name = None
        if event in makes_code:  # args[1]: the file name the code will claim
            name = args[1].decode(errors="replace") if _isinstance(args[1], _bytes) else args[1]
            if not (_isinstance(name, _str) and (name in protected or is_library(name))):
                return
        attr = args[1] if event == "object.__getattr__" else None
        if not (
            event in always
            or event in watched_events
            or event.startswith("ctypes.")
            or attr in frame_attrs
            or attr in code_attrs
        ):
            return
        thread = get_ident()
        if thread in inside:  # the hook's own events pass
            return
        if event in always:
            refuse(always[event])
        inside.add(thread)
        try:
            judge(event, args, attr, name, requester())  # requester(): the frame that called this hook
        finally:
            inside.discard(thread)

    return hook
