"""The runner's part that tells who is asking (trusted.RUNNER_PARTS; written into the kernel's
start-up file ahead of runner/audit.py, which asks it on every watched event).

Code is known by identity, never by its file name (a file name can be made up): the runner's
own code (every code object of the start-up file) and each test's, from the moment the runner
compiles it. A frame's asker is trusted when it is the runner, a test, or library code asking
for its own use (typing names a caller's module, torch records a stack as text); student code
never is, nor are the library helpers whose job is to hand frames back to their caller
(inspect, traceback's walkers, pdb, IPython, ...): they stand for whoever called them.

Each maker takes the references it keeps at start, before any student code."""

from __future__ import annotations

from collections.abc import Callable
from types import CodeType, FrameType
from typing import Any

# Modules and packages whose job is to hand frames or their locals back to the caller.
FRAME_GIVERS = (
    "/inspect.py",
    "/logging/__init__.py",
    "/pdb.py",
    "/bdb.py",
    "/cgitb.py",
    "/trace.py",
    "/code.py",
    "/codeop.py",
    "/pydoc.py",
    "/faulthandler.py",
)
FRAME_GIVER_PACKAGES = (
    "/IPython/",
    "/ipykernel/",
    "/stack_data/",
    "/executing/",
    "/pure_eval/",
    "/asttokens/",
    "/debugpy/",
    "/jedi/",
    "/_pydevd",
)
# traceback's text-only helpers (torch.manual_seed records a stack this way); not walk_stack.
STACK_TEXTS = frozenset({"extract_stack", "format_stack", "print_stack"})


def library_prefixes(sys: Any, realpath: Callable[[str], str]) -> tuple[str, ...]:
    """Where the interpreter's own files live (the standard library and site-packages)."""
    return tuple(sorted({p for base in (sys.prefix, sys.base_prefix, sys.exec_prefix) for p in (base, realpath(base))}))


def make_is_library(prefixes: tuple[str, ...]) -> Callable[[str], bool]:
    """`is_library(filename)`: whether code of that file name is the interpreter's or a library's."""

    def is_library(filename: str) -> bool:
        return filename.startswith(prefixes) or filename.startswith("<frozen ")

    return is_library


def make_known_code(runner_code: CodeType) -> tuple[Callable, Callable, Callable]:
    """(`remember_test(code)`, `is_runner(code)`, `is_protected(code)`): the runner's code is every
    code object under `runner_code` (the start-up file's); a test's code is remembered (and kept
    alive) to the end, since a frame a student kept holds its test's."""
    _type, _id = type, id
    code_type = _type(runner_code)

    def code_tree(code: CodeType, found: dict[int, CodeType]) -> dict[int, CodeType]:
        found[_id(code)] = code
        for const in code.co_consts:
            if _type(const) is code_type:
                code_tree(const, found)
        return found

    runner_codes: dict[int, CodeType] = code_tree(runner_code, {})
    test_codes: dict[int, CodeType] = {}

    def remember_test(code: CodeType) -> None:
        code_tree(code, test_codes)

    def is_runner(code: CodeType) -> bool:
        return runner_codes.get(_id(code)) is code

    def is_protected(code: CodeType) -> bool:
        return is_runner(code) or test_codes.get(_id(code)) is code

    return remember_test, is_runner, is_protected


def make_asker(
    is_library: Callable[[str], bool], is_protected: Callable[[CodeType], bool], getframe: Callable[[int], FrameType]
) -> tuple[Callable, Callable, Callable, Callable]:
    """(`requester()`, `reaches_protected(frame)`, `asker_is_trusted(frame)`, `where(frame)`)."""
    frame_givers, frame_giver_packages, stack_texts = FRAME_GIVERS, FRAME_GIVER_PACKAGES, STACK_TEXTS
    _any = any

    def requester() -> FrameType | None:
        """The Python frame that caused the event (the hook's caller), past ctypes' own.
        Called from the audit hook only: 0 is this function, 1 the hook, 2 the cause."""
        frame = getframe(2)
        while frame is not None and "/ctypes/" in frame.f_code.co_filename:
            frame = frame.f_back
        return frame

    def reaches_protected(frame: FrameType | None) -> bool:
        while frame is not None:
            if is_protected(frame.f_code):
                return True
            frame = frame.f_back
        return False

    def is_frame_giver(frame: FrameType) -> bool:
        name = frame.f_code.co_filename
        if name.endswith("/traceback.py"):
            return frame.f_code.co_name not in stack_texts
        return name.endswith(frame_givers) or _any(p in name for p in frame_giver_packages)

    def asker_is_trusted(asker: FrameType | None) -> bool:
        """Whoever, past the helpers that hand frames back (inspect.currentframe, ...), wants it:
        a test or the runner, or library code for its own use; never student code."""
        while asker is not None and is_library(asker.f_code.co_filename) and is_frame_giver(asker):
            asker = asker.f_back
        return asker is None or is_protected(asker.f_code) or is_library(asker.f_code.co_filename)

    def where(frame: FrameType | None) -> str:
        if frame is None:
            return "C code"
        name = frame.f_code.co_filename
        return f"{'library ' + name if is_library(name) else 'your code'}, {frame.f_code.co_name}"

    return requester, reaches_protected, asker_is_trusted, where
