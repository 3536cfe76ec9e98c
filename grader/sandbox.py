"""Run a student's kernel inside a bubblewrap sandbox.

The kernel sees only the system's read-only program folders, the Python it runs
on, and one scratch folder; the course (solutions, gradebook), home folders and
other students' files are simply not there. It has a private network namespace
(no network at all), a private PID namespace (killing the sandbox kills every
process the student started) and resource limits on memory, processes, file
size and open files.

Process limits only bind a non-root user (the kernel ignores RLIMIT_NPROC for
uid 0), so when the grader runs as root each job's kernel switches to its own
unprivileged uid inside the sandbox. A kernel in a private network namespace
cannot be reached over TCP, so kernels talk to the grader over unix sockets
(jupyter's "ipc" transport) in a folder bound into the sandbox.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from queue import Empty

import psutil
from jupyter_client.asynchronous import AsyncKernelClient
from jupyter_client.manager import AsyncKernelManager
from traitlets import Bool, Int, Type, Unicode

from . import processes
from .uids import SOCKETS_PREFIX, claim_uid

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
SYSTEM_FOLDERS = ("/usr", "/etc", "/opt/conda")
HOSTNAME = "grader"
# The only variables a student's kernel gets from the grader's environment
# (everything else, tokens and database passwords included, stays out).
# CUDA_VISIBLE_DEVICES: a GPU worker's kernel sees exactly the GPUs given to its worker.
# OMP_NUM_THREADS: the instructor's choice of CPU threads per kernel (KERNEL_THREADS if unset).
PASSED_THROUGH = ("PATH", "LANG", "LANGUAGE", "TZ", "CUDA_VISIBLE_DEVICES", "OMP_NUM_THREADS")
# torch runs a CPU thread per core in every process unless told otherwise, but the grader runs
# submissions side by side (--jobs, Dask workers), one per core, and a lesson's tensors are small:
# extra threads would only compete for the same cores (OpenMP threads spin while they wait).
KERNEL_THREADS = "1"
PASSED_THROUGH_PREFIXES = ("LC_",)


def clean_environment(scratch: str) -> dict[str, str]:
    """The whole environment of a student's kernel: an allowlist, never the instructor's variables."""
    env = {k: v for k, v in os.environ.items() if k in PASSED_THROUGH or k.startswith(PASSED_THROUGH_PREFIXES)}
    env.setdefault("PATH", os.defpath)
    env.setdefault("OMP_NUM_THREADS", KERNEL_THREADS)
    bin_dir = os.path.dirname(sys.executable)  # the kernel's interpreter and its tools
    if bin_dir not in env["PATH"].split(os.pathsep):
        env["PATH"] = bin_dir + os.pathsep + env["PATH"]
    # getpass.getuser() falls back to the password file, which has no entry for a sandbox uid: name
    # the user (torch 2.11's optimizers ask, for their compile cache, and raised KeyError).
    env.update(HOME=scratch, USER="student", LOGNAME="student", TMPDIR="/tmp", PYTHONNOUSERSITE="1")
    env["MPLCONFIGDIR"] = os.path.join(scratch, ".matplotlib")
    return env


def available() -> bool:
    return shutil.which("bwrap") is not None and shutil.which("prlimit") is not None


def _ancestors(path: str) -> list[str]:
    parts = Path(path).parts[1:-1]
    return ["/" + "/".join(parts[: i + 1]) for i in range(len(parts))]


def _symlinks(path: str) -> list[str]:
    """The folders on the way to `path` (itself included) that are symlinks, outermost first."""
    found, current = [], "/"
    for part in Path(path).parts[1:]:
        current = os.path.join(current, part)
        if os.path.islink(current):
            found.append(current)
            current = os.path.realpath(current)
    return found


def visible(path: str, steps: list[tuple] | None = None) -> bool:
    """Whether `path`, as written, exists inside a sandbox built from `steps` (default: a new layout)."""
    steps = steps if steps is not None else layout("/nonexistent-scratch", "/nonexistent-sockets")
    targets = [step[2] for step in steps if step[0] in ("bind", "ro-bind", "symlink")]
    current = "/"
    for part in Path(path).parts[1:]:
        current = os.path.join(current, part)
        if any(current == t or current.startswith(t + "/") for t in targets):
            return True
    return False


def layout(scratch: str, sockets: str) -> list[tuple]:
    """The sandbox's whole filesystem, in the order it is built: one description
    that both launchers follow, bwrap's command line (command) and the kernel
    template's own mounts (template.py). Steps: ("dev", path), ("proc", path),
    ("tmpfs", path, mode), ("dir", path, mode), ("symlink", target, path),
    ("ro-bind" or "bind", source, target)."""
    steps: list[tuple] = [("dev", "/dev"), ("proc", "/proc"), ("tmpfs", "/tmp", 0o1777)]
    # A GPU's device nodes (bwrap's minimal /dev has none), and /sys, where CUDA reads its topology.
    devices = gpu_devices()
    steps += [("dev-bind", node, node) for node in devices]
    if devices:
        steps.append(("ro-bind", "/sys", "/sys"))
    for folder in SYSTEM_FOLDERS:
        if os.path.isdir(folder):
            steps.append(("ro-bind", folder, folder))
    for name in ("lib", "lib64", "lib32", "bin", "sbin"):
        target = os.path.join("/", name)
        if os.path.islink(target):
            steps.append(("symlink", os.readlink(target), target))
        elif os.path.isdir(target):
            steps.append(("ro-bind", target, target))
    # The interpreter and its environment, wherever they live (a venv inside the
    # course folder, a pyenv build under /root): read-only, and reachable by the
    # sandbox user, whatever the permissions of the folders above them.
    environments = sorted({os.path.realpath(sys.prefix), os.path.realpath(sys.base_prefix)})
    mounts = [("ro-bind", p, p) for p in environments] + [("bind", scratch, scratch), ("bind", sockets, sockets)]
    # An environment reached through a symlink (course/.venv -> elsewhere) is started by
    # that path: the same symlink, inside the sandbox, leads to the bound real folder.
    links = sorted({link for p in (sys.prefix, sys.base_prefix, sys.executable) for link in _symlinks(p)})
    mounts += [
        ("symlink", os.path.realpath(link), link)
        for link in links
        if not any(link == e or link.startswith(e + "/") for e in environments)
    ]
    # Folders bwrap would create on its own are private (0700) to root: make
    # each one on the way explicitly, except /tmp (a 1777 tmpfs) and folders
    # inside the read-only system binds, which exist already.
    bound = [f for f in SYSTEM_FOLDERS if os.path.isdir(f)]
    made = set()
    for kind, _, target in mounts:
        for parent in _ancestors(target + "/x" if kind != "symlink" else target):
            inside_bind = any(parent == f or parent.startswith(f + "/") for f in bound)
            if parent not in made and parent != "/tmp" and not inside_bind:
                made.add(parent)
                steps.append(("dir", parent, 0o755))
    return steps + mounts


# Where the NVIDIA driver's device nodes live (a test points this at fake ones).
DEVICE_FOLDER = "/dev"
NVIDIA_CONTROL = ("nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "nvidia-modeset")


def gpu_devices(visible: str | None = None) -> list[str]:
    """The NVIDIA device nodes a kernel needs for the GPUs this process may use: the control
    nodes and /dev/nvidiaN for each index in CUDA_VISIBLE_DEVICES (all of them when it is unset
    or names GPUs by UUID, which only the driver can map). Empty without an NVIDIA driver."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES") if visible is None else visible
    folder = Path(DEVICE_FOLDER)
    if not (folder / "nvidiactl").exists() or visible == "":
        return []
    gpus = sorted(p.name for p in folder.glob("nvidia[0-9]*") if p.name[6:].isdigit())
    if visible and all(part.strip().isdigit() for part in visible.split(",")):
        gpus = [f"nvidia{int(part)}" for part in visible.split(",") if (folder / f"nvidia{int(part)}").exists()]
    return [str(folder / name) for name in (*NVIDIA_CONTROL, *gpus) if (folder / name).exists()]


def limits(*, memory_mb: int, max_processes: int, file_mb: int) -> dict[str, int]:
    """Each process's resource limits (soft and hard), by resource name as prlimit and setrlimit know them.

    Memory: the data limit, on private writable memory (heap, writable private maps, counted when
    mapped, written or not), not on address space: read-only maps and reservations don't count.
    The CUDA build of torch maps ~3 GiB on import (CUDA reserves more): under a 2 GiB address-space
    limit no kernel holding that torch could run. What it does not count: docs/security.md."""
    return {
        "data": memory_mb * 1024 * 1024,
        "nproc": max_processes,
        "fsize": file_mb * 1024 * 1024,
        "nofile": 256,
        "core": 0,
    }


def command(
    inner: list[str],
    scratch: str,
    sockets: str,
    *,
    memory_mb: int,
    max_processes: int,
    file_mb: int,
    uid: int | None,
    steps: list[tuple] | None = None,
) -> list[str]:
    """The bwrap command line that runs `inner` in a sandbox around `scratch`
    (`steps`: its layout(scratch, sockets), where the caller has it already)."""
    args = [
        "bwrap",
        "--die-with-parent",
        "--clearenv",
        "--unshare-net",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--hostname",
        HOSTNAME,
    ]
    for step in steps if steps is not None else layout(scratch, sockets):
        kind = step[0]
        if kind in ("dev", "proc"):
            args += ["--" + kind, step[1]]
        elif kind in ("tmpfs", "dir"):
            args += ["--perms", format(step[2], "04o"), "--" + kind, step[1]]
        else:
            args += ["--" + kind, step[1], step[2]]
    args += ["--chdir", scratch]
    for name, value in clean_environment(scratch).items():
        args += ["--setenv", name, value]
    caps = limits(memory_mb=memory_mb, max_processes=max_processes, file_mb=file_mb)
    prlimit = [shutil.which("prlimit") or "prlimit", *(f"--{name}={value}" for name, value in caps.items()), "--"]
    if uid is not None:
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
            f"--reuid={uid}",
            f"--regid={uid}",
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
                        raise RuntimeError("Kernel died before replying to kernel_info") from None
            if reply is not None and reply["msg_type"] == "kernel_info_reply" and await self._idle_after(request):
                self._handle_kernel_info_reply(reply)
                return
            if not await self._async_is_alive():
                raise RuntimeError("Kernel died before replying to kernel_info")
            if time.monotonic() > deadline:
                raise RuntimeError(f"Kernel didn't respond in {timeout:.0f} seconds")

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
        # What a kernel template (template.py), the other launcher, needs to
        # build the same sandbox itself instead of running bwrap.
        self.kernel_argv, self.sandbox_spec = cmd, None
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
            os.chmod(self._sockets, 0o711)
            os.chmod(scratch, 0o711)
        steps = layout(scratch, self._sockets)
        self.sandbox_spec = {
            "layout": steps,
            "chdir": scratch,
            "uid": uid,
            "hostname": HOSTNAME,
            "limits": limits(memory_mb=self.memory_mb, max_processes=self.max_processes, file_mb=self.file_mb),
        }
        return command(
            cmd,
            scratch,
            self._sockets,
            memory_mb=self.memory_mb,
            max_processes=self.max_processes,
            file_mb=self.file_mb,
            uid=uid,
            steps=steps,
        )

    async def _async_start_kernel(self, **kw):
        # What a student's kernel prints outside cells is not the grader's output.
        kw.setdefault("stdout", subprocess.DEVNULL)
        kw.setdefault("stderr", subprocess.DEVNULL)
        # Sandboxed or not, the kernel sees an allowlisted environment only
        # (bwrap also starts from an empty one, --clearenv).
        kw["env"] = clean_environment(self.scratch or self._sockets)
        return await super()._async_start_kernel(**kw)

    start_kernel = _async_start_kernel

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

    cleanup_resources = _async_cleanup_resources
