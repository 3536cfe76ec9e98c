"""Run a student's kernel inside a bubblewrap sandbox.

The sandbox itself is declared once, in isolation/spec.py (what the kernel sees, may write, is and
may use); this module translates that spec into bwrap's command line (`bwrap_args`) for a normal
start, and holds the kernel manager that builds the spec for each kernel. A kernel forked from the
warm template gets the same spec, translated by isolation/fork.py.

Process limits only bind a non-root user (the kernel ignores RLIMIT_NPROC for
uid 0), so when the grader runs as root each job's kernel switches to its own
unprivileged uid inside the sandbox. A kernel in a private network namespace
cannot be reached over TCP, so kernels talk to the grader over unix sockets
(jupyter's "ipc" transport) in a folder bound into the sandbox.
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from queue import Empty

import psutil
from jupyter_client.asynchronous import AsyncKernelClient
from jupyter_client.manager import AsyncKernelManager
from traitlets import Bool, Int, Type, Unicode

from grader.isolation import processes
from grader.isolation.spec import MOUNT_KINDS, SandboxSpec, build, clean_environment
from grader.isolation.spec import (
    visible as visible,  # execute/kernel_start.py asks whether the interpreter is in the sandbox
)
from grader.isolation.uids import SOCKETS_PREFIX, claim_uid

# What to do without bubblewrap, the same words on every path; each path then
# names its own way to grade without isolation.
INSTALL_ADVICE = (
    "bubblewrap (bwrap) is needed to isolate student code: install it with "
    "`sudo apt-get install bubblewrap` (Debian/Ubuntu) or `sudo dnf install bubblewrap` "
    "(Fedora)"
)
INSTALL_HINT = INSTALL_ADVICE + ", or pass --no-sandbox to grade without isolation."
# nbgrader autograde and Formgrader read the course's nbgrader_config.py.
TRUSTED_HINT = (
    INSTALL_ADVICE + ". Only if every submission is trusted code, let it run unsandboxed: "
    "use_safe_autograde(c, trusted=True) in nbgrader_config.py."
)
# bwrap's words for the spec's namespaces and filesystem steps (sandbox_spec.NAMESPACES, MOUNT_KINDS).
BWRAP_NAMESPACES = {
    "net": "--unshare-net",
    "pid": "--unshare-pid",
    "ipc": "--unshare-ipc",
    "uts": "--unshare-uts",
    "cgroup": "--unshare-cgroup-try",
}
BWRAP_MOUNTS = {kind: "--" + kind for kind in MOUNT_KINDS}
# A kernel's stderr goes to a memory file that cannot grow past STDERR_BYTES (writes past it fail),
# read only when the kernel died before it answered: its last STDERR_LINES lines (each cut to
# STDERR_WIDTH) then name the cause. Once started, ipykernel sends what the kernel prints to the
# notebook; whatever reaches the file is never read.
STDERR_BYTES = 64 * 1024
STDERR_LINES, STDERR_WIDTH = 10, 300
# An object's address differs from kernel to kernel: without it, submissions that failed alike
# read alike (grading/grade.py stops a run whose first ones all failed the same way).
ADDRESS = re.compile(r"\b0x[0-9a-fA-F]{6,}\b")
DIED = "Kernel died before replying to kernel_info"


def available() -> bool:
    return shutil.which("bwrap") is not None and shutil.which("prlimit") is not None


def stderr_file() -> int | None:
    """A file descriptor for a kernel's stderr that holds at most STDERR_BYTES (a sealed memfd:
    the kernel can neither grow it nor unseal it), or None where the system has no such files."""
    try:
        fd = os.memfd_create("kernel-stderr", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    except (AttributeError, OSError):
        return None
    try:
        os.ftruncate(fd, STDERR_BYTES)  # the pages are allocated only as they are written
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_GROW | fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_SEAL)
    except OSError:
        os.close(fd)
        return None
    return fd


def stderr_tail(fd: int | None) -> str:
    """The last lines a kernel wrote to its stderr_file, in one line (' | ' between them)."""
    if fd is None:
        return ""
    try:
        text = os.pread(fd, STDERR_BYTES, 0).rstrip(b"\0").decode(errors="replace")
    except OSError:
        return ""
    lines = [ADDRESS.sub("0x...", " ".join(line.split()))[:STDERR_WIDTH] for line in text.splitlines()]
    # Not the lines of ^ and ~ under the code of a traceback's frame: they only point.
    return " | ".join([line for line in lines if line.strip("^~ ")][-STDERR_LINES:])


def startup_stderr_tail(km) -> str:
    """What the kernel of `km` (a SandboxedKernelManager) last wrote to its stderr, in one line."""
    return stderr_tail(getattr(km, "_stderr", None))


def _bwrap_mount(step: tuple) -> list[str]:
    kind, *operands = step
    if kind in ("tmpfs", "dir"):
        return ["--perms", format(operands[1], "04o"), BWRAP_MOUNTS[kind], operands[0]]
    return [BWRAP_MOUNTS[kind], *operands]


def bwrap_args(spec: SandboxSpec, inner: list[str]) -> list[str]:
    """The bwrap command line that runs `inner` in the sandbox `spec` describes (the normal
    start's translation of it; a kernel forked from the template gets sandbox_fork.plan's)."""
    args = ["bwrap", "--die-with-parent", "--clearenv", *(BWRAP_NAMESPACES[name] for name in spec.namespaces)]
    args += ["--hostname", spec.hostname]
    for step in spec.mounts:
        args += _bwrap_mount(step)
    args += ["--chdir", spec.chdir]
    for name, value in spec.env.items():
        args += ["--setenv", name, value]
    prlimit = [
        shutil.which("prlimit") or "prlimit",
        *(f"--{name}={value}" for name, value in spec.limits.items()),
        "--",
    ]
    if spec.uid is not None:
        # Root keeps only what becoming the sandbox user and emptying the bounding set need, and
        # setpriv drops it all. Without CAP_SETPCAP, Debian 12's setpriv (util-linux 2.38) left the
        # bounding set full silently, and Ubuntu 24.04's (2.39) starts nothing ("apply bounding set").
        args += [
            "--cap-drop",
            "ALL",
            "--cap-add",
            "CAP_SETUID",
            "--cap-add",
            "CAP_SETGID",
            "--cap-add",
            "CAP_SETPCAP",
            "--",
            shutil.which("setpriv") or "setpriv",
            f"--reuid={spec.uid}",
            f"--regid={spec.uid}",
            "--clear-groups",
            "--inh-caps=-all",
            "--bounding-set=-all",
            "--",
        ]
    else:
        args += ["--unshare-user", "--cap-drop", "ALL", "--"]
    return args + prlimit + inner


class ReadyKernelClient(AsyncKernelClient):
    """jupyter_client's client, except that `wait_for_ready` returns as soon as the kernel has
    answered kernel_info on the shell channel and gone idle for it on iopub. jupyter_client's own
    then waits for 0.2 s of silence on iopub, 0.2 s of every kernel's start; the messages it
    drains are the startup's, which nbclient ignores anyway (it reads only its own requests').
    A kernel that died is noticed within `DEATH_CHECK` seconds, not after a second's wait."""

    DEATH_CHECK = 0.1  # seconds between checks that the kernel still runs, while waiting for its answer
    ASK_AGAIN = 1.0  # seconds before asking a silent kernel again (jupyter_client's pace)

    async def _ready(self, timeout: float | None = None) -> None:
        deadline = time.monotonic() + (float("inf") if timeout is None else timeout)
        while True:
            request = self.kernel_info()
            asked = time.monotonic()
            reply = None
            while reply is None and time.monotonic() - asked < self.ASK_AGAIN:
                try:
                    reply = await self.shell_channel.get_msg(timeout=self.DEATH_CHECK)
                except Empty:
                    if not await self._async_is_alive():
                        raise RuntimeError(self._died()) from None
            if reply is not None and reply["msg_type"] == "kernel_info_reply" and await self._idle_after(request):
                self._handle_kernel_info_reply(reply)
                return
            if not await self._async_is_alive():
                raise RuntimeError(self._died())
            if time.monotonic() > deadline:
                raise RuntimeError(f"Kernel didn't respond in {timeout:.0f} seconds")

    def _died(self) -> str:
        """DIED, with the last lines the kernel wrote to its stderr (its own error, bwrap's)."""
        tail = startup_stderr_tail(self.parent)
        return f"{DIED}: {tail}" if tail else DIED

    def stop_channels(self) -> None:
        """Close the channels without waiting to deliver what is still queued. jupyter_client's
        sockets linger a second on unsent messages, and a kernel that died (or never started)
        leaves its kernel_info requests unsent: every failed start cost a second here. A kernel
        that answered has nothing queued, so nothing is lost."""
        for channel in (self._shell_channel, self._iopub_channel, self._stdin_channel, self._control_channel):
            socket = getattr(channel, "socket", None)
            if socket is not None and not socket.closed:
                socket.linger = 0
        super().stop_channels()

    async def _idle_after(self, request: str) -> bool:
        """True once iopub says the kernel is idle after `request`; False after 50 ms without a
        message (iopub not connected yet, or the kernel slow: the caller asks again, as
        jupyter_client does after 0.2 s)."""
        while True:
            try:
                msg = await self.iopub_channel.get_msg(timeout=0.05)
            except Empty:
                return False
            if (
                msg["msg_type"] == "status"
                and msg["content"].get("execution_state") == "idle"
                and msg["parent_header"].get("msg_id") == request
            ):
                return True

    wait_for_ready = _ready


class SandboxedKernelManager(AsyncKernelManager):
    """A kernel manager whose kernel runs in a bubblewrap sandbox over unix sockets."""

    client_factory = Type(ReadyKernelClient, klass=AsyncKernelClient, config=True)

    scratch = Unicode("", help="folder the kernel may write to (its working directory)").tag(config=True)
    memory_mb = Int(2048, help="private writable memory of each process (data limit), in MiB").tag(config=True)
    max_processes = Int(32, help="processes and threads the sandbox user may have (a kernel uses ~13)").tag(config=True)
    file_mb = Int(256, help="largest file the kernel may write, in MiB").tag(config=True)
    uid = Int(-1, help="uid to run as when the grader is root (-1: one claimed for this process)").tag(config=True)
    enabled = Bool(True, help="False runs the kernel unsandboxed (--no-sandbox)").tag(config=True)

    _kernel: tuple[int, psutil.Process] | None = None  # (launched pid, kernel): kernel_process
    _stderr: int | None = None  # the kernel's stderr_file (None: none, or sent where the caller said)

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self._sockets = tempfile.mkdtemp(prefix=SOCKETS_PREFIX)
        os.chmod(self._sockets, 0o700)
        self.transport = "ipc"
        self.ip = os.path.join(self._sockets, "kernel")
        self.connection_file = os.path.join(self._sockets, "kernel.json")

    def _sandbox_uid(self) -> int | None:
        if os.geteuid() != 0:
            return None
        return self.uid if self.uid >= 0 else claim_uid()

    def format_kernel_cmd(self, extra_arguments=None):
        cmd = super().format_kernel_cmd(extra_arguments)
        # What a kernel template (kernels/template.py), the other launcher, needs to
        # build the same sandbox itself instead of running bwrap.
        self.kernel_argv, self.sandbox_spec = cmd, None  # sandbox_spec: a SandboxSpec once built
        if not self.enabled:
            return cmd
        scratch = self.scratch or self._sockets
        uid = self._sandbox_uid()
        if uid is not None:
            # The kernel creates its sockets here and reads its connection file.
            # bwrap enters the folders as root without capabilities, before
            # becoming the sandbox user: they must be traversable (not listable).
            for path in (self._sockets, self.connection_file, scratch):
                os.chown(path, uid, uid)
            # The assignment's files copied in (execute/kernel_start.py) are the kernel's to change, as
            # in nbgrader's working folder; the grader's own (.grader-*) stay root's.
            for dirpath, dirnames, filenames in os.walk(scratch):
                for name in dirnames + filenames:
                    if not name.startswith(".grader"):
                        os.lchown(os.path.join(dirpath, name), uid, uid)
            os.chmod(self._sockets, 0o711)
            os.chmod(scratch, 0o711)
        self.sandbox_spec = build(
            scratch,
            self._sockets,
            uid=uid,
            memory_mb=self.memory_mb,
            max_processes=self.max_processes,
            file_mb=self.file_mb,
            private=self._private_folders(),
        )
        return bwrap_args(self.sandbox_spec, cmd)

    def _private_folders(self) -> list[str]:
        """The course's folder, which no folder bound for the interpreter may hold nor be in: the
        course config's root where there is one, and the grader's working folder."""
        root = self.config.get("CourseDirectory", {}).get("root")
        return [os.getcwd(), *([str(root)] if root else [])]

    async def _async_start_kernel(self, **kw):
        # What a student's kernel prints outside cells is not the grader's output; its stderr is
        # kept (bounded) to name the cause should it die before it answers (startup_stderr_tail).
        kw.setdefault("stdout", subprocess.DEVNULL)
        self._close_stderr()
        if "stderr" not in kw:
            self._stderr = stderr_file()
            kw["stderr"] = subprocess.DEVNULL if self._stderr is None else self._stderr
        # Sandboxed or not, the kernel sees an allowlisted environment only
        # (bwrap also starts from an empty one, --clearenv).
        kw["env"] = clean_environment(self.scratch or self._sockets)
        return await super()._async_start_kernel(**kw)

    start_kernel = _async_start_kernel

    def _close_stderr(self) -> None:
        if self._stderr is not None:
            os.close(self._stderr)
            self._stderr = None

    def kernel_process(self):
        """The kernel's own process (a psutil.Process), or None once it is gone: the first Python
        process down from the launched one (in the sandbox bwrap comes first, and copies a student
        made with os.fork() come later). Found once per launch; the grader asks after every cell."""
        process = getattr(self.provisioner, "process", None)
        if process is None:
            return None
        if self._kernel is None or self._kernel[0] != process.pid or not self._kernel[1].is_running():
            kernel = processes.first_python(process.pid)
            self._kernel = (process.pid, kernel) if kernel is not None else None
        return self._kernel[1] if self._kernel else None

    async def _async_interrupt_kernel(self) -> None:
        # A signal to the process group would stop at bwrap (another session
        # and PID namespace), and an interrupt message can be taken by a forked
        # copy of the kernel: signal the kernel process itself.
        kernel = self.kernel_process()
        if kernel is not None:
            try:
                kernel.send_signal(signal.SIGINT)
            except Exception:
                pass

    interrupt_kernel = _async_interrupt_kernel

    async def _async_wait(self, pollinterval: float = 0.005) -> None:
        # A killed kernel is gone within milliseconds; Jupyter's 0.1 s poll would cost a tenth of
        # a second per graded notebook.
        await super()._async_wait(pollinterval)

    async def _async_cleanup_resources(self, restart: bool = False) -> None:
        await super()._async_cleanup_resources(restart)
        if not restart:
            shutil.rmtree(self._sockets, ignore_errors=True)
            self._close_stderr()

    cleanup_resources = _async_cleanup_resources
