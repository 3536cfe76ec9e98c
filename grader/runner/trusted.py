"""The grader's side of the trusted test path (the kernel's side is runner/assembly.py).

`GuardedExecute` (execute/kernel_start.py) starts every grading kernel with `BOOT_LINE`,
which runs runner/assembly.py before any student code. Once the kernel answers, the
grader connects to the runner's socket and sends a fresh key; from then on
every test cell goes to the runner as source text (never as a cell IPython
runs), and every other code cell is followed by a `check` of the hook points.
A reply counts only with a valid signature and the request's id; anything else
in the stream (bytes a student's code wrote into the socket) breaks the channel,
and every later test fails with a flag.

This module also turns a runner's reply into the cell outputs nbgrader scores
(`test_outputs`): an error output for a failed test, nothing of what student
code printed while a hidden test ran, and warnings shown as text, never on
stderr (nbgrader scores any stderr output as a failure).
"""

from __future__ import annotations

import ast
import functools
import hmac
import os
import re
import secrets
import select
import socket
import time
from collections.abc import Callable
from pathlib import Path

from IPython.core.inputtransformer2 import TransformerManager
from nbformat import NotebookNode

from grader.runner.test import SEAL_NAMES

# The kernel runs one file, the runner's parts in this order: each after the parts it imports
# (runner/assembly.py, the assembly, last). See `assemble`.
RUNNER_PARTS = tuple(
    Path(__file__).with_name(f"{name}.py")
    for name in (
        "who",
        "audit",
        "hooks",
        "test",
        "channel",
        "data",
        "reset",
        "torch_state",
        "assembly",
    )
)
RUNNER_FILE = ".grader-runner.py"
RUNNER_SOCKET = ".grader-runner.sock"
# Executed by the kernel at start (IPKernelApp.exec_lines), before any student code,
# with a private copy of the builtins so that patching builtins later cannot reach it.
BOOT_LINE = (
    f"exec(compile(open({RUNNER_FILE!r}).read(), '<grader-runner>', 'exec'), "
    "{'__name__': 'grader_runner', '__builtins__': dict(vars(__import__('builtins')))})"
)
HIDDEN_BEGIN, HIDDEN_END = "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"
# A hidden-test line this long is the course's secret wherever it shows up.
SECRET_LINE_LENGTH = 25


class RunnerError(Exception):
    """The runner could not be reached or answered wrongly (a grader problem until shown otherwise)."""


class ChannelBroken(Exception):
    """Something other than the runner wrote into its channel: the notebook tampered with it."""


def install(scratch: str) -> None:
    """Put the runner where the kernel's start-up line reads it (it deletes the file once read)."""
    target = os.path.join(scratch, RUNNER_FILE)
    with open(target, "w") as out:
        out.write(assemble())
    os.chmod(target, 0o644)


def is_part_import(node: ast.stmt) -> bool:
    """Whether a statement of a runner part is one the assembly leaves out: an import of another
    part (`from grader.runner.<part> import ...`) or `from __future__ import annotations`."""
    return isinstance(node, ast.ImportFrom) and (
        node.module == "__future__" or (node.module or "").startswith("grader.runner.")
    )


# Once per process: every kernel of a run gets the same file, and the parts are this grader's own
# code, which the process has imported already (an edit takes a new process, as for any module).
@functools.lru_cache(maxsize=8)
def assemble(parts: tuple[Path, ...] = RUNNER_PARTS) -> str:
    """The start-up file: the parts' sources in order, executed by BOOT_LINE in one private
    namespace. Each part's imports of other parts are left out (blank lines, so that line
    numbers within a part stay), since the earlier parts define those names in that same
    namespace; `from __future__ import annotations` is written once, first (the parts'
    annotations are never evaluated in the kernel). tests/test_runner_parts.py checks that every
    name a part imports from another is defined by an earlier one."""
    out = ["from __future__ import annotations"]
    for part in parts:
        source = part.read_text(encoding="utf-8")
        lines = source.splitlines()
        for node in ast.parse(source).body:
            if is_part_import(node):
                lines[node.lineno - 1 : node.end_lineno] = [""] * (node.end_lineno - node.lineno + 1)
        out += [f"# -- grader/runner/{part.name}", *lines]
    return "\n".join(out) + "\n"


class RunnerChannel:
    """The grader's end of one kernel's runner socket."""

    def __init__(self, scratch: str, timeout: float = 10):
        path = os.path.join(scratch, RUNNER_SOCKET)
        deadline = time.monotonic() + timeout
        while True:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                sock.connect(path)
                break
            except OSError as exc:
                sock.close()
                if time.monotonic() > deadline:
                    raise RunnerError(f"the kernel's test runner did not start ({exc.strerror})") from None
                time.sleep(0.02)
        self.sock = sock
        self.key = secrets.token_bytes(32)
        self.sock.sendall(self.key)
        self.broken: str | None = None
        self.buffer = b""

    def close(self) -> None:
        self.sock.close()

    def _read(self, size: int, deadline: float, dead: Callable[[bool], str | None]) -> bytes:
        while len(self.buffer) < size:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError
            ready, _, _ = select.select([self.sock], [], [], min(left, 0.1))
            if not ready:
                reason = dead(False)
                if reason:
                    raise EOFError(reason)
                continue
            chunk = self.sock.recv(1 << 16)
            if not chunk:
                raise EOFError(dead(True) or "the kernel closed the grader's channel")
            self.buffer += chunk
        data, self.buffer = self.buffer[:size], self.buffer[size:]
        return data

    def request(self, message: dict, timeout: float, dead: Callable[[bool], str | None]) -> dict:
        """Send one request and return the runner's signed reply to it.

        Raises TimeoutError, EOFError (the kernel died: its reason), ChannelBroken."""
        if self.broken:
            raise ChannelBroken(self.broken)
        ident = secrets.token_hex(8)
        payload = repr(dict(message, id=ident)).encode()
        try:
            self.sock.sendall(len(payload).to_bytes(4, "big") + payload)
        except OSError as exc:
            raise EOFError(dead(True) or f"the grader's channel closed ({exc.strerror})") from None
        deadline = time.monotonic() + timeout
        size = int.from_bytes(self._read(4, deadline, dead), "big")
        if size > 50_000_000:
            self.broken = "the grader's channel received bytes that are not the runner's"
            raise ChannelBroken(self.broken)
        mac = self._read(32, deadline, dead)
        body = self._read(size, deadline, dead)
        expected = hmac.digest(self.key, body, "sha256")
        try:
            reply = ast.literal_eval(body.decode()) if hmac.compare_digest(mac, expected) else None
        except (ValueError, SyntaxError, UnicodeDecodeError):
            reply = None
        if not isinstance(reply, dict) or reply.get("id") != ident:
            self.broken = "the grader's channel received a reply the runner did not sign"
            raise ChannelBroken(self.broken)
        return reply


# -- what a test cell needs ---------------------------------------------------------
def is_test_cell(cell) -> bool:
    meta = cell.metadata.get("nbgrader", {})
    return cell.cell_type == "code" and bool(meta.get("grade")) and not meta.get("solution")


def is_trusted_cell(cell) -> bool:
    """Cells whose source comes from the release, not from the student (restored at autograde)."""
    meta = cell.metadata.get("nbgrader", {})
    return cell.cell_type == "code" and bool(meta.get("locked")) and not meta.get("solution")


@functools.lru_cache(maxsize=512)
def deletes_globals(source: str) -> bool:
    """Whether a test cell deletes a name of the notebook's namespace outside any function
    (`del squares`, as nbgrader's documentation course does to check that one answer calls
    another). Such a test needs the student's namespace itself, so it runs the way plain
    nbgrader runs it (execute/guarded.py); no test of this course does."""
    try:
        tree = ast.parse(python_source(source))
    except SyntaxError:
        return False
    scopes = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
    todo: list[ast.AST] = [node for node in tree.body if not isinstance(node, scopes)]  # a def's own names are its
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Delete) and any(isinstance(t, ast.Name) for t in node.targets):
            return True
        todo.extend(child for child in ast.iter_child_nodes(node) if not isinstance(child, scopes))
    return False


@functools.lru_cache(maxsize=512)
def python_source(source: str) -> str:
    """A cell's source as plain Python (IPython magics become calls), transformed here, not in the kernel.
    Cached: every submission of a class has the same test cells (restored from the release)."""

    return TransformerManager().transform_cell(source)


# Functions Python makes a staticmethod or a classmethod when a class body defines them undecorated.
_IMPLICIT = {"__new__": SEAL_NAMES[1], "__init_subclass__": SEAL_NAMES[2], "__class_getitem__": SEAL_NAMES[2]}


@functools.lru_cache(maxsize=512)
def seal_functions(source: str) -> str:
    """`source` with every function it defines sealed when made (runner_data.make_seal_test): a
    decorator line above each `def` (under the test's own decorators: `@staticmethod` and
    `functools.wraps` get the sealed function), in classes and functions too, and each `lambda`
    (but one inside an f-string) wrapped in a call. A function a test hands to student code then
    gives no way back to the tests' namespace. Lines only ever come in as decorator lines, every
    other line keeps its text: `hidden_start` of the result is where its hidden tests begin, and
    an error's line in the result is the line of the result's own statement. Left as it is when it
    does not parse (the runner reports the error)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return source
    lines = source.split("\n")
    inline: list[tuple[int, int, str]] = []  # (line index, byte offset, text)
    above: list[tuple[int, str]] = []  # (line index, name of the sealer)
    in_fstring = {id(n) for f in ast.walk(tree) if isinstance(f, ast.JoinedStr) for n in ast.walk(f)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Lambda) and id(node) not in in_fstring and node.end_lineno is not None:
            inline.append((node.end_lineno - 1, node.end_col_offset or 0, ")"))
            inline.append((node.lineno - 1, node.col_offset, SEAL_NAMES[0] + "("))
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                implicit = isinstance(node, ast.ClassDef) and not child.decorator_list
                above.append(
                    (child.lineno - 1, _IMPLICIT.get(child.name, SEAL_NAMES[0]) if implicit else SEAL_NAMES[0])
                )
    for index, offset, text in sorted(inline, reverse=True):
        line = lines[index].encode()
        lines[index] = (line[:offset] + text.encode() + line[offset:]).decode()
    for index, name in sorted(above, reverse=True):
        indent = lines[index][: len(lines[index]) - len(lines[index].lstrip())]
        lines.insert(index, f"{indent}@{name}")
    return "\n".join(lines)


def release_imports(nb) -> dict[str, tuple[str, str | None]]:
    """Names the release binds by import (locked cells only): name -> (module, attribute or None).
    Tests get these from the modules loaded before any student code, whatever the student rebound."""
    return dict(_imports_of(tuple(cell.source for cell in nb.cells if is_trusted_cell(cell))))


@functools.lru_cache(maxsize=64)
def _imports_of(sources: tuple[str, ...]) -> tuple[tuple[str, tuple[str, str | None]], ...]:
    names: dict[str, tuple[str, str | None]] = {}
    for source in sources:
        try:
            tree = ast.parse(python_source(source))
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        names[alias.asname] = (alias.name, None)
                    else:
                        top = alias.name.split(".")[0]
                        names[top] = (top, None)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                for alias in node.names:
                    if alias.name != "*":
                        names[alias.asname or alias.name] = (node.module, alias.name)
    return tuple(names.items())


def hidden_lines(source: str) -> list[str]:
    """The lines of a test cell's hidden region long enough to be recognized anywhere."""
    lines, inside = [], False
    for line in source.splitlines():
        if HIDDEN_BEGIN in line:
            inside = True
        elif HIDDEN_END in line:
            inside = False
        elif inside and len(line.strip()) >= SECRET_LINE_LENGTH:
            lines.append(line.strip())
    return lines


def hidden_start(source: str) -> int:
    """The line number (from 1) where a test cell's hidden tests begin; past the end when it has none."""
    lines = source.splitlines()
    return next((n for n, line in enumerate(lines, 1) if HIDDEN_BEGIN in line), len(lines) + 1)


# Written to the test's stdout and stderr where its hidden tests begin (mark_hidden_start): what
# came before is the visible part's (its warnings are shown in the feedback); what came after stays
# hidden. The first mark is the grader's (student code can only print one later, or earlier,
# which shows less).
HIDDEN_MARK = "\x00grader: hidden tests begin\x00"


def mark_hidden_start(source: str) -> str:
    """`source` with its BEGIN HIDDEN TESTS line (a comment, at the start of a line) replaced by a
    statement writing HIDDEN_MARK to both streams: same lines, so error lines keep their numbers."""
    lines = source.split("\n")
    for n, line in enumerate(lines):
        if line.startswith(HIDDEN_BEGIN):
            # getattr: a stream the student's code set to None is left alone, not an error of the test.
            write = "; ".join(
                f"getattr(__import__('sys').{s}, 'write', len)({HIDDEN_MARK!r})" for s in ("stdout", "stderr")
            )
            return "\n".join([*lines[:n], write, *lines[n + 1 :]])
    return source


def split_at_hidden(text: str) -> tuple[str, str]:
    """(what the visible part printed, what the hidden part printed); all hidden without the mark."""
    before, mark, after = text.partition(HIDDEN_MARK)
    return (before, after) if mark else ("", text)


def scrub(text: str, secrets_: list[str]) -> str:
    for line in secrets_:
        text = text.replace(line, "[hidden test]")
    return text


# A word of a hidden test (a name, a number, a word of a string) that the notebook shows nowhere
# else: a message of the student's code that holds one quotes the hidden test.
WORD = re.compile(r"\w{3,}")


def hidden_words(sources: list[str]) -> frozenset[str]:
    """The words of the hidden tests in `sources` (a notebook's cells) that no other part of them has."""
    hidden: list[str] = []
    shown: list[str] = []
    for source in sources:
        inside = False
        for line in source.splitlines():
            if HIDDEN_BEGIN in line or HIDDEN_END in line:
                inside = HIDDEN_BEGIN in line
                continue
            (hidden if inside else shown).append(line)
    return frozenset(WORD.findall("\n".join(hidden))) - frozenset(WORD.findall("\n".join(shown)))


def student_error(reply: dict, secret_lines: list[str], secret_words: frozenset[str], where: str) -> str:
    """What a student reads of an exception their own code raised while a hidden test ran: its type,
    where in their code (`where`, test_path's), and its message unless that quotes the hidden test
    (a word of `secret_words`); every hidden line scrubbed as ever."""
    text = f"your code raised {reply.get('ename') or 'an error'} while a hidden test of this item called it"
    text += f", at {where}" if where else ""
    message = scrub(reply.get("message") or "", secret_lines)
    if message and secret_words.intersection(WORD.findall(message)):
        return text + " (its message is not shown: it quotes the hidden test)"
    return text + (f": {message[:500]}" if message else "")


# Errors of the grader's own, not a test's: never labelled as a hidden test's.
GRADERS = ("GraderFlag", "CheckedOutsideTheKernel")


def test_outputs(
    reply: dict,
    hidden: bool,
    secret_lines: list[str],
    secret_words: frozenset[str] = frozenset(),
    where: str = "",
) -> list[NotebookNode]:
    """The outputs nbgrader scores for one test cell, from the runner's record. `hidden`: the cell
    has hidden tests and its visible part passed; then a failure is labelled as the hidden test's
    (`Hidden test: ...`, the course's message), or, raised by the student's code, shown as
    `student_error` says (`secret_words`: hidden_words; `where`: the student's line)."""
    outputs = []
    # A test cell with hidden tests shows no prints (tests/test_cheats.py), only the visible part's warnings.
    stdout = "" if hidden else reply.get("stdout", "")
    stderr, hidden_stderr = split_at_hidden(reply.get("stderr", "")) if hidden else (reply.get("stderr", ""), "")
    if stdout:
        outputs.append(NotebookNode(output_type="stream", name="stdout", text=stdout))
    if stderr:
        text = "Printed to stderr while this test ran (warnings are shown, never scored):\n" + stderr
        outputs.append(NotebookNode(output_type="stream", name="stdout", text=text))
    if hidden_stderr:
        text = "Warnings or errors printed while the hidden tests ran (not scored; hidden).\n"
        outputs.append(NotebookNode(output_type="stream", name="stdout", text=text))
    if reply.get("passed"):
        return outputs
    ename = reply.get("ename") or "TestFailed"
    if reply.get("tampered_during"):
        ename, message = (
            "GraderFlag",
            "this test's result was discarded: the notebook changed the grader's "
            "hook points while it ran (see the grader's notes)",
        )
    elif hidden and not reply.get("by_test"):
        message = student_error(reply, secret_lines, secret_words, where)
    elif hidden and ename not in GRADERS:
        message = "Hidden test: " + (scrub(reply.get("message", ""), secret_lines) or f"{ename}, no message")
    else:
        message = scrub(reply.get("message", ""), secret_lines) if hidden else reply.get("message", "")
    outputs.append(NotebookNode(output_type="error", ename=ename, evalue=message, traceback=[f"{ename}: {message}"]))
    return outputs
