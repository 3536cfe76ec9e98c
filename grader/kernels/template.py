"""Kernels forked from a warm template: torch is imported once, not once per notebook.

A *template* is a Python process that has imported ipykernel, torch, numpy and
matplotlib and waits; for each kernel it forks a copy that becomes the kernel,
ready in about 0.4 s (`make bench` measures it) instead of 2 to 2.7 s.

Grading gets it through Jupyter's own extension point: the grader's kernel spec,
`course-grader` (`python -m grader.kernels.template install`, run by `make setup`),
names the provisioner `course-kernel-template` (an entry point of this
package), so the grader's workers, `nbgrader autograde` and Formgrader with the
course config (and the test suite's nbval runs, which opt in) start kernels
through `TemplateProvisioner`; students' JupyterLab and the hub's servers use
the plain `python3` spec. Each client process starts its own template on its
first kernel; the grader's pool workers adopt their parent's (`adopt`), and
every process of a session the one GRADER_TEMPLATE_FOLDER names (the test suite
shares one; see shared_folder). When the template cannot serve a kernel (not
this Python's ipykernel, a sandbox asked for without root, the template failed
to start, `GRADER_KERNEL_TEMPLATE=off`), the provisioner logs why and starts
the kernel normally, as Jupyter's own provisioner does.

Processes, for one kernel::

    client (grader worker, nbval, ...)
      `- template: root or the client's user, outside any sandbox, never runs student code
           `- keeper (one per kernel): reports the kernel's exit to the client; kills the kernel
              |                        when the client goes away
              `- kernel                                                  (plain kernels)
              `- init, pid 1 of a new pid namespace: reaps, exits with the kernel's status
                   `- kernel: its own user, limits, no capabilities      (sandboxed kernels)

A sandboxed kernel (the grader's) gets exactly what bwrap would give it: the
kernel manager's one `sandbox_spec.SandboxSpec` travels with the request, and
the fork makes it itself (isolation/fork.py: namespaces, a fresh root of the
spec's mounts, its limits, no capabilities, no new privileges, the job's
unprivileged uid, its environment). The template itself is
started with the allowlisted environment (nothing of the instructor's is in
its memory for a fork to read), holds no files of the course, and is reached
only through a socket in a folder private to the client. Nothing a kernel does
reaches it: the kernel cannot see it (pid namespace), signal it (other uid) or
write to it (copy-on-write memory). If the template dies anyway, kernels
already running are unaffected (their keeper, not the template, reports their
exit) and the next kernel starts a new template.

What a fork shares with its template that a fresh process would not: the
interpreter's hash seed and the already-imported modules (reseeded: `random`,
numpy's global generator; reset: matplotlib's config and cache folders,
`tempfile`'s folder, the time zone). `/proc/self/cmdline` names the template.
"""

from __future__ import annotations

import argparse
import asyncio
import atexit
import json
import logging
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from ipykernel.kernelspec import get_kernel_dict
from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel
from jupyter_client.provisioning import LocalProvisioner
from traitlets import Bool, Float

from grader.isolation.linux import can_sandbox
from grader.isolation.spec import SandboxSpec, clean_environment, gpu_devices
from grader.isolation.uids import is_private_folder
from grader.kernels.template_server import INLINE_BACKEND, LAUNCHER, same_user, serve

# The folder holding the grader package, where the template starts: `-m grader...` finds this grader.
PACKAGE_HOME = str(Path(__file__).resolve().parents[2])
PROVISIONER_NAME = "course-kernel-template"
# Set to "off" (or 0/false/no) to start every kernel normally, e.g. to compare (make bench).
SWITCH = "GRADER_KERNEL_TEMPLATE"
# A running template's folder that every process of a session forks from (see shared_folder).
SHARED = "GRADER_TEMPLATE_FOLDER"
# A CUDA context does not survive a fork: a kernel whose spec binds a GPU starts normally, in bwrap
# (the fork would build its sandbox all the same: tests/test_sandbox_paths.py turns this on).
FORK_GPU_KERNELS = False
# Its own logger: the notes must show even where a client quiets traitlets' (the grader does).
log = logging.getLogger("grader.kernels.template")


# -- the client side ------------------------------------------------------------------------------------
class ForkedKernel:
    """A kernel a template forked, with the parts of subprocess.Popen jupyter_client uses."""

    stdin = stdout = stderr = None

    def __init__(self, conn: socket.socket, pid: int, init: int, sandboxed: bool):
        self._conn, self.pid, self.init, self.sandboxed = conn, pid, init, sandboxed
        self.returncode: int | None = None
        self._buffer = b""

    def _read(self, timeout: float | None) -> None:
        if self.returncode is not None:
            return
        if not select.select([self._conn], [], [], timeout)[0]:
            return
        data = self._conn.recv(4096)
        if not data:  # the keeper is gone without a word: killed with the kernel
            self.returncode = -signal.SIGKILL
            return
        self._buffer += data
        while b"\n" in self._buffer:
            line, self._buffer = self._buffer.split(b"\n", 1)
            message = json.loads(line)
            if "exit" in message:
                self.returncode = message["exit"]

    def poll(self) -> int | None:
        self._read(0)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise subprocess.TimeoutExpired("kernel", timeout)
            self._read(left)
        return self.returncode

    def send_signal(self, signum: int) -> None:
        if self.poll() is None:
            if self.sandboxed:
                os.kill(self.pid, signum)
            else:  # like a kernel started in a new session: its whole group
                os.killpg(self.pid, signum)

    def kill(self) -> None:
        """The kernel and everything it started (a sandbox's init takes its namespace along)."""
        if self.poll() is None:
            if self.sandboxed:
                os.kill(self.init, signal.SIGKILL)
            else:
                os.killpg(self.pid, signal.SIGKILL)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def close(self) -> None:
        self._conn.close()


class TemplateUnavailable(Exception):
    pass


class Template:
    """This process's template, started on first use and again whenever it has died."""

    start_timeout = 120.0

    def __init__(self, adopted_folder: str | None = None):
        self.process: subprocess.Popen | None = None
        self.folder: str | None = adopted_folder
        # A template started by the process this one was forked from (the grader's
        # workers share their parent's): used, never stopped, by this process.
        self.adopted = adopted_folder is not None
        self.ready = self.adopted
        self.owner = os.getpid()
        self.lock = threading.Lock()
        self.starts = 0

    def alive(self) -> bool:
        if self.adopted:  # not our child to poll: a failed connect tells (fork() then starts our own)
            return os.path.exists(os.path.join(self.folder, "socket"))
        return self.process is not None and self.process.poll() is None

    def ensure_started(self) -> None:
        """Start the template now, or wait for the start spawn_early() began (a parent does,
        before starting workers that adopt it)."""
        with self.lock:
            if not self.alive():
                self._spawn()
            self._await_ready()

    def _start(self) -> None:
        self._spawn()
        self._await_ready()

    def spawn_early(self) -> None:
        """Begin starting the template and return at once (ensure_started() waits for it)."""
        with self.lock:
            if not self.alive():
                self._spawn()

    def _spawn(self) -> None:
        self.stop()
        self.folder = tempfile.mkdtemp(prefix="grader-template-")  # 0700: only this user reaches the socket
        Path(self.folder, "python").write_text(sys.executable)  # what processes adopting it must run
        env = clean_environment(self.folder)
        env.update(MPLBACKEND=INLINE_BACKEND, MPLCONFIGDIR=os.path.join(self.folder, "matplotlib"))
        env["PYDEVD_DISABLE_FILE_VALIDATION"] = "1"  # debugpy's note on frozen modules, as it imports
        self.process = subprocess.Popen(
            self.command(self.folder),
            cwd=PACKAGE_HOME,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        self.starts += 1
        self.ready = False
        if self.starts > 1:
            log.warning("kernel template: the previous one died; started a new one")

    def _await_ready(self) -> None:
        if self.ready:
            return
        ready, _, _ = select.select([self.process.stdout], [], [], self.start_timeout)
        line = self.process.stdout.readline() if ready else b""
        if line != b"ready\n":
            self.process.kill()
            error = self.process.stderr.read().decode(errors="replace").strip().splitlines()
            self.stop()
            raise TemplateUnavailable("the template did not start: " + (error[-1] if error else "no answer"))
        self.ready = True

    def command(self, folder: str) -> list[str]:
        return [sys.executable, "-m", "grader.kernels.template", "serve", folder]

    def stop(self) -> None:
        if self.adopted:  # the parent's: let go of it, leave it running
            self.adopted, self.folder = False, None
            return
        if self.process is not None:
            if self.process.poll() is None:
                self.process.kill()
            self.process.wait()
            for stream in (self.process.stdout, self.process.stderr):
                stream.close()
            self.process = None
        if self.folder:
            shutil.rmtree(self.folder, ignore_errors=True)
            self.folder = None

    def fork(self, request: dict, fds: list[int]) -> ForkedKernel:
        with self.lock:
            for attempt in (1, 2):
                if not self.alive():
                    self._start()
                else:
                    self._await_ready()  # begun by spawn_early() (an adopted one is ready)
                conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                try:
                    conn.connect(os.path.join(self.folder, "socket"))
                    same_user(conn)
                    socket.send_fds(conn, [json.dumps(request).encode() + b"\n"], fds)
                    conn.settimeout(60)
                    line = b""
                    while not line.endswith(b"\n"):
                        chunk = conn.recv(1)
                        if not chunk:
                            raise ConnectionError("the template closed the connection")
                        line += chunk
                    conn.settimeout(None)
                except OSError as exc:
                    conn.close()
                    if attempt == 2:
                        raise TemplateUnavailable(f"the template did not answer: {exc}") from exc
                    if self.adopted:
                        log.warning("kernel template: the shared one did not answer (%s); starting one", exc)
                    self.stop()  # dead or stuck: the next attempt starts a new one
                    continue
                answer = json.loads(line)
                if "error" in answer:
                    conn.close()
                    raise TemplateUnavailable(answer["error"].strip().splitlines()[-1])
                return ForkedKernel(conn, answer["pid"], answer["init"], bool(request.get("sandbox")))
        raise AssertionError("unreachable")


_template: Template | None = None


def template() -> Template:
    """This process's template (a forked copy of a client gets its own): the session's shared
    one where SHARED names one, else its own, started on first use."""
    global _template
    if _template is None or _template.owner != os.getpid():
        _template = Template(adopted_folder=shared_folder())

        atexit.register(_template.stop)
    return _template


def adopt(folder: str) -> None:
    """Fork this process's kernels from the running template at `folder`, which another
    process of the same user started (the grader's workers use their parent's); should it
    be gone, the next kernel starts a template of this process's own."""
    global _template
    if _template is not None and _template.owner == os.getpid() and _template.folder == folder:
        return  # this process's own (a run of one job grades in the process that started it)
    _template = Template(adopted_folder=folder)


def shared_folder() -> str | None:
    """SHARED's folder if its template is this user's (the folder closed to others, who could plant
    a socket there) and runs this process's interpreter (a kernel forked from it does)."""
    folder = os.environ.get(SHARED)
    if not folder or not os.path.exists(folder):
        return None  # not set, or its session ended
    interpreter = Path(folder, "python").read_text() if os.path.isfile(Path(folder, "python")) else ""
    if not is_private_folder(folder) or interpreter != sys.executable:
        log.warning(
            "kernel template: %s=%s is not a private template folder of %s; not used", SHARED, folder, sys.executable
        )
        return None
    return folder


def enabled_by_environment() -> bool:
    return os.environ.get(SWITCH, "on").strip().lower() not in ("0", "off", "false", "no")


def kernels_would_fork(sandboxed: bool, kernel_name: str = "course-grader") -> bool:
    """Whether this environment's `kernel_name` kernels come from a template: its kernel spec
    names the provisioner, the template is not switched off, and a sandbox can be built."""

    try:
        spec = KernelSpecManager().get_kernel_spec(kernel_name)
    except NoSuchKernel:
        return False
    named = spec.metadata.get("kernel_provisioner", {}).get("provisioner_name") == PROVISIONER_NAME
    # GPU kernels start normally (bwrap binds their device nodes): a forked CUDA context is unusable.
    return named and enabled_by_environment() and (not sandboxed or can_sandbox()) and not gpu_devices()


def _fd(value, default: int) -> tuple[int, bool]:
    """A Popen-style stream argument as a file descriptor to pass, and whether we opened it."""
    if value is None:
        return default, False
    if value in (subprocess.DEVNULL, subprocess.PIPE):
        return os.open(os.devnull, os.O_RDWR), True
    return (value if isinstance(value, int) else value.fileno()), False


class TemplateProvisioner(LocalProvisioner):
    """Jupyter's local provisioner, with kernels forked from a warm template when it can."""

    use_template = Bool(True, help="fork kernels from a warm template (off: start each one normally)").tag(config=True)
    start_timeout = Float(120, help="seconds to wait for a template to import its modules").tag(config=True)

    def _why_not(self, argv: list[str], sandbox: SandboxSpec | None) -> str | None:
        if not self.use_template or not enabled_by_environment():
            return f"switched off ({SWITCH} or TemplateProvisioner.use_template)"
        if (
            len(argv) < 3
            or argv[1:3] != ["-m", LAUNCHER]
            or os.path.realpath(shutil.which(argv[0]) or argv[0]) != os.path.realpath(sys.executable)
        ):
            return f"the kernel command is not this Python's ipykernel: {' '.join(argv[:3])}"
        if sandbox is not None and (not can_sandbox() or sandbox.uid is None):
            return "a sandboxed kernel needs the grader to run as root on x86_64 or aarch64 Linux"
        if (sandbox.devices if sandbox is not None else gpu_devices()) and not FORK_GPU_KERNELS:
            return "a GPU is visible: a CUDA context cannot be forked, bwrap binds the GPU's devices"
        return None

    async def launch_kernel(self, cmd: list[str], **kwargs: Any):
        km = self.parent
        sandbox = getattr(km, "sandbox_spec", None)
        argv = getattr(km, "kernel_argv", None) or cmd
        reason = self._why_not(argv, sandbox)
        if reason is not None and reason.startswith("switched off"):
            log.info("kernel template %s: starting the kernel normally", reason)
            return await super().launch_kernel(cmd, **kwargs)
        if reason is None:
            try:
                return await self._fork(argv, sandbox, kwargs)
            except (TemplateUnavailable, OSError) as exc:
                reason = str(exc)
        log.warning("kernel template not used (%s): starting the kernel normally", reason)
        return await super().launch_kernel(cmd, **kwargs)

    async def _fork(self, argv: list[str], sandbox: SandboxSpec | None, kwargs: dict):
        env = dict(kwargs.get("env") if kwargs.get("env") is not None else os.environ)
        if sandbox is None:
            env["JPY_PARENT_PID"] = str(os.getpid())  # as jupyter_client's launcher sets it
        umask = os.umask(0o022)
        os.umask(umask)
        request = {
            "argv": argv,
            "env": env,
            "cwd": str(kwargs.get("cwd") or os.getcwd()),
            "umask": umask,
            "sandbox": sandbox.to_json() if sandbox is not None else None,
        }
        streams = [
            _fd(kwargs.get("stdin", subprocess.DEVNULL), 0),
            _fd(kwargs.get("stdout"), 1),
            _fd(kwargs.get("stderr"), 2),
        ]
        shared = template()
        shared.start_timeout = self.start_timeout
        try:
            loop = asyncio.get_running_loop()
            process = await loop.run_in_executor(None, shared.fork, request, [fd for fd, _ in streams])
        finally:
            for fd, opened in streams:
                if opened:
                    os.close(fd)
        self.process = process  # type: ignore[assignment]  # a ForkedKernel: Popen's interface
        self.pid = process.pid
        self.pgid = None if sandbox else process.pid
        self.cwd = request["cwd"]
        return self.connection_info

    async def send_signal(self, signum: int) -> None:
        if isinstance(self.process, ForkedKernel):
            if signum == signal.SIGKILL:
                self.process.kill()
            else:
                self.process.send_signal(signum)
            return
        await super().send_signal(signum)

    async def kill(self, restart: bool = False) -> None:
        if isinstance(self.process, ForkedKernel):
            self.process.kill()
            return
        await super().kill(restart)

    async def terminate(self, restart: bool = False) -> None:
        if isinstance(self.process, ForkedKernel):
            self.process.terminate()
            return
        await super().terminate(restart)

    async def wait(self) -> int | None:
        process = self.process
        if isinstance(process, ForkedKernel):
            # Its keeper reports the exit at once; Jupyter's own loop would look every 0.1 s
            # (a tenth of a second per graded notebook).
            while process.poll() is None:
                await asyncio.sleep(0.005)
        result = await super().wait()
        if isinstance(process, ForkedKernel):
            process.close()
        return result


# -- the kernel spec that names the provisioner ------------------------------------------------------------
GRADER_KERNEL = "course-grader"


def install(prefix: str = sys.prefix) -> str:
    """Install the grader's own kernel spec, `course-grader`, whose kernels come from the template,
    and put this environment's `python3` back to ipykernel's plain spec: students' JupyterLab, the
    hub's user servers and nbval start plain kernels; only grading paths (and tests that opt in)
    use the template."""

    plain = get_kernel_dict()
    plain["argv"][0] = "python"  # as ipykernel ships it: whichever Python the client runs
    graded = json.loads(json.dumps(plain))
    graded["display_name"] = "Python 3 (course grader)"
    graded.setdefault("metadata", {})["kernel_provisioner"] = {"provisioner_name": PROVISIONER_NAME}
    manager = KernelSpecManager()
    for name, spec in (("python3", plain), (GRADER_KERNEL, graded)):
        with tempfile.TemporaryDirectory() as tmp:
            (Path(tmp) / "kernel.json").write_text(json.dumps(spec, indent=1) + "\n")
            installed = manager.install_kernel_spec(tmp, name, prefix=prefix)
    return installed


def grader_kernel_name() -> str:
    """The kernel spec grading uses: the grader's own where installed, else python3."""

    return GRADER_KERNEL if GRADER_KERNEL in KernelSpecManager().find_kernel_specs() else "python3"


def main(argv: list[str] | None = None) -> int:

    parser = argparse.ArgumentParser(prog="python -m grader.kernels.template", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("install", help="install the grader's course-grader kernel spec (template kernels)")
    serving = sub.add_parser("serve", help="run a template (started by the provisioner, not by hand)")
    serving.add_argument("folder")
    args = parser.parse_args(argv)
    if args.command == "install":
        print("kernel spec installed:", install())
        return 0
    serve(args.folder)
    return 0


if __name__ == "__main__":
    sys.exit(main())
