"""The template process itself (kernels/template.py is its client and provisioner): it imports
torch and the kernel's libraries once, then for each request forks a keeper and a kernel,
puts the kernel in the sandbox the request's spec describes (isolation/spec.py, translated by
isolation/fork.py: the same spec a normal start gives bwrap) and reports the kernel's exit. It
never runs student code itself.
"""

from __future__ import annotations

import gc
import json
import logging
import os
import select
import shutil
import signal
import socket
import struct
import sys
import tempfile
import time
import traceback

from grader.isolation import fork as sandbox_fork
from grader.isolation import linux
from grader.isolation.spec import SandboxSpec

# Imported once here, not by every kernel: the kernel's libraries (a failure stops the template,
# and kernels start normally), then a head start (ipykernel's debugger, debugpy's 110 modules, and
# what the shell imports as it starts: half a forked kernel's start-up; later torch._dynamo, which
# a kernel's first torch.optim optimizer imports: 0.8 s of CPU), skipped where it fails.
PRELOAD = ("torch", "numpy", "matplotlib", "matplotlib.font_manager", "ipykernel.kernelapp")  # font list: built once
_SHELL = "IPython.core.completerlib IPython.core.debugger IPython.core.oinspect IPython.extensions.storemagic"
HEAD_START = ("ipykernel.debugger", "sqlite3", "tornado.platform.asyncio", *_SHELL.split())
LATE_START = ("torch._dynamo",)  # after the first fork (serve): for the kernels after the first
IMPORT_ENV: dict[str, str] = {}  # what those imports put in the template's environment
# torch._dynamo notes (and makes) a compile cache folder named after the user who imports it: the
# template's own folder here, left out of IMPORT_ENV; a kernel names its own, as a normal one does.
INDUCTOR_CACHE = "TORCHINDUCTOR_CACHE_DIR"
INLINE_BACKEND = "module://matplotlib_inline.backend_inline"
LAUNCHER = "ipykernel_launcher"
log = logging.getLogger("grader.kernels.template")


# -- one kernel ------------------------------------------------------------------------------
def _close_fds(keep: set[int]) -> None:
    for fd in (int(n) for n in os.listdir("/proc/self/fd")):
        if fd > 2 and fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass


def _reset_signals() -> None:
    for sig in (signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2):
        signal.signal(sig, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)


def _start_kernel(request: dict, ready: int) -> None:
    """Turn this forked process into the kernel `request` describes (never returns)."""
    code = 1
    try:
        os.umask(request["umask"])
        os.environ.clear()
        os.environ.update(request["env"])
        for name, value in IMPORT_ENV.items():  # as those imports would have set it in the kernel
            os.environ.setdefault(name, value)
        schema_log = sys.modules.get("_pydevd_bundle._debug_adapter.pydevd_schema_log")
        if schema_log:  # debugpy's note of its pid: the kernel's, not the template's host pid
            vars(schema_log).update(_pid=os.getpid(), _pid_msg=f"{os.getpid()}: ")
        time.tzset()
        tempfile.tempdir = None
        import random

        random.seed()
        if "numpy.random" in sys.modules:
            sys.modules["numpy.random"].seed()
        _reset_matplotlib(request["env"])
        # As `python -m ipykernel_launcher` would have it: the launcher takes its
        # own first sys.path entry away; the template's (its start folder) goes the same way.
        sys.argv = [
            os.path.join(os.path.dirname(sys.modules["ipykernel"].__path__[0]), LAUNCHER + ".py"),
            *request["argv"][3:],
        ]
        del sys.path[0]
        from ipykernel.kernelapp import IPKernelApp

        # ipykernel reads JPY_PARENT_PID when it is imported (here: in the
        # template); the parent to watch is the keeper, which lives as long as the client.
        parent = os.getppid() if "JPY_PARENT_PID" in request["env"] else 0
        os.write(ready, b"ready\n")
        os.close(ready)
        ready = 2  # from here on a failure is the kernel's own, told on its stderr as a normal start's is
        try:
            IPKernelApp.launch_instance(parent_handle=parent)
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        import atexit

        atexit._run_exitfuncs()
    except BaseException:
        try:
            os.write(ready, traceback.format_exc().encode())
        except OSError:
            pass
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                pass
        os._exit(code)


def _reset_matplotlib(env: dict) -> None:
    """What importing matplotlib in this kernel would have read from its environment."""
    mpl = sys.modules.get("matplotlib")
    if mpl is None:
        return
    for name in ("get_configdir", "get_cachedir"):
        function = getattr(mpl, name)
        cells = dict(zip(function.__code__.co_freevars, function.__closure__ or ()))
        if "called" in cells:
            cells["called"].cell_contents = False
    mpl.rcParams["backend"] = env.get("MPLBACKEND") or INLINE_BACKEND


def _sandboxed_init(request: dict, plan: sandbox_fork.Plan, ready: int) -> None:
    """pid 1 of the kernel's namespaces: build the sandbox, fork the kernel, reap, exit with its status."""
    code = 70
    try:
        sandbox_fork.run(plan.init)
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, signal.SIG_DFL)
        request["env"] = plan.env
        kernel = os.fork()
        if kernel == 0:
            try:
                os.setsid()
                sandbox_fork.run(plan.kernel)
            except BaseException:
                os.write(ready, traceback.format_exc().encode())
                os._exit(70)
            _start_kernel(request, ready)
        os.close(ready)
        while True:
            try:
                pid, status = os.waitpid(-1, 0)
            except ChildProcessError:
                break
            if pid == kernel:
                # What bwrap reports: the status, or 128 + the signal that killed it.
                code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status)
                break
    except BaseException:
        try:
            os.write(ready, traceback.format_exc().encode())
        except OSError:
            pass
    os._exit(code)


def _plain_kernel(request: dict, ready: int) -> None:
    try:
        os.setsid()
        if request.get("cwd"):
            os.chdir(request["cwd"])
    except BaseException:
        os.write(ready, traceback.format_exc().encode())
        os._exit(70)
    _start_kernel(request, ready)


def _send(conn: socket.socket, message: dict) -> None:
    try:
        conn.sendall(json.dumps(message).encode() + b"\n")
    except OSError:
        pass


def _child_of(pid: int, proc_fd: int) -> int | None:
    """The outer pid of `pid`'s first child (the kernel below its init), read from the host's /proc."""
    try:
        fd = os.open(f"{pid}/task/{pid}/children", os.O_RDONLY, dir_fd=proc_fd)
        with os.fdopen(fd) as handle:
            children = handle.read().split()
        return int(children[0]) if children else None
    except OSError:
        return None


def _keeper(conn: socket.socket, request: dict, fds: list[int], base: str) -> None:
    """One kernel's keeper (forked by the template, never runs student code; never returns)."""
    try:
        _reset_signals()
        os.setsid()
        for target, fd in enumerate(fds[:3]):
            os.dup2(fd, target)
        for fd in fds:
            if fd > 2:
                os.close(fd)
        sandbox = request.get("sandbox")
        plan = sandbox_fork.plan(SandboxSpec.from_json(sandbox), base) if sandbox else None
        if plan is not None and plan.keeper:
            linux.unshare(plan.keeper)
        read_end, ready = os.pipe()
        child = os.fork()
        if child == 0:
            conn.close()
            os.close(read_end)
            _close_fds({ready})
            if plan is not None:
                _sandboxed_init(request, plan, ready)
            _plain_kernel(request, ready)
        os.close(ready)
        report = b""
        while not report.startswith(b"ready\n"):
            chunk = os.read(read_end, 65536)
            if not chunk:
                break
            report += chunk
        os.close(read_end)
        kernel = child
        if sandbox and report.startswith(b"ready\n"):
            proc = os.open("/proc", os.O_RDONLY | os.O_DIRECTORY)
            deadline = time.monotonic() + 5
            kernel = None
            while kernel is None and time.monotonic() < deadline:
                kernel = _child_of(child, proc)
                if kernel is None:
                    time.sleep(0.005)
            os.close(proc)
        if not report.startswith(b"ready\n") or kernel is None:
            os.kill(child, signal.SIGKILL)
            os.waitpid(child, 0)
            _send(conn, {"error": report.decode(errors="replace").strip() or "the kernel did not start"})
            os._exit(0)
        _send(conn, {"pid": kernel, "init": child})
        pidfd = os.pidfd_open(child)
        watched = [conn.fileno(), pidfd]
        while True:
            readable, _, _ = select.select(watched, [], [])
            if pidfd in readable:
                _, status = os.waitpid(child, 0)
                _send(conn, {"exit": os.waitstatus_to_exitcode(status)})
                os._exit(0)
            if conn.fileno() in readable:
                try:
                    data = conn.recv(4096)
                except OSError:
                    data = b""
                if not data:  # the client is gone: so is its kernel (a closed socket stays
                    os.kill(child, signal.SIGKILL)  # readable: watch only the child from now on)
                    watched = [pidfd]
    except BaseException:
        _send(conn, {"error": traceback.format_exc()})
    os._exit(0)


# -- the client's check of the socket it connects to (Template.fork in kernels/template.py) -------------
def same_user(conn: socket.socket) -> None:
    """Refuse a template socket served by another user (a path is checked once; the peer, always)."""
    _pid, uid, _gid = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))
    if uid != os.geteuid():
        raise ConnectionRefusedError(f"the template's socket is served by uid {uid}")


def _import(names: tuple[str, ...], folder: str, required: bool) -> None:
    """Import `names` once for every kernel (a failure skipped unless `required`: a kernel imports
    what its versions need itself), noting what they put in the environment in IMPORT_ENV."""
    before = dict(os.environ)
    os.environ.setdefault(INDUCTOR_CACHE, os.path.join(folder, "inductor"))
    try:
        for name in names:
            try:
                __import__(name)
            except ImportError:
                if required:
                    raise
    finally:
        if INDUCTOR_CACHE not in before:
            os.environ.pop(INDUCTOR_CACHE, None)
    IMPORT_ENV.update((k, v) for k, v in os.environ.items() if before.get(k) != v)  # debugpy sets one


# -- the template process -----------------------------------------------------------------------------
def _freeze() -> None:
    """What the template has imported, out of every later garbage collection (gc.freeze): a kernel
    forked from it would otherwise walk torch's objects at each full collection (IPython runs one
    as the kernel shuts down), writing to every page that holds one and so copying it."""
    gc.collect()  # what is garbage now is freed, not kept forever
    gc.freeze()


def serve(folder: str) -> None:
    """The template: import once, then fork a keeper and kernel per request on `folder`/socket."""
    parent = os.getppid()
    _import(PRELOAD, folder, required=True)
    _import(HEAD_START, folder, required=False)
    _freeze()
    base = os.path.join(folder, "root")
    os.makedirs(base, exist_ok=True)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # keepers are reaped by the kernel
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(os.path.join(folder, "socket"))
    listener.listen(16)
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    # Nobody reads these pipes from now on: a full pipe must never block the template.
    quiet = os.open(os.devnull, os.O_WRONLY)
    for fd in (1, 2):
        os.dup2(quiet, fd)
    os.close(quiet)
    late: tuple[str, ...] = LATE_START
    try:
        while os.getppid() == parent:  # ends with its client
            if not select.select([listener], [], [], 1.0)[0]:
                continue
            conn, _ = listener.accept()
            try:
                conn.settimeout(10)
                message, fds, _, _ = socket.recv_fds(conn, 1 << 20, 8)
                while not message.endswith(b"\n"):
                    more = conn.recv(1 << 20)
                    if not more:
                        break
                    message += more
                request = json.loads(message)
                conn.settimeout(None)
            except (OSError, ValueError) as exc:
                _send(conn, {"error": f"bad request: {exc}"})
                conn.close()
                continue
            if os.fork() == 0:
                listener.close()
                _keeper(conn, request, fds, base)
            conn.close()
            for fd in fds:
                os.close(fd)
            if late:  # once a first kernel is on its way: a template that forks one never pays
                _import(late, folder, required=False)
                _freeze()
                late = ()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
