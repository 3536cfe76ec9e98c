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
from pathlib import Path

from jupyter_client.manager import AsyncKernelManager
from traitlets import Bool, Int, Unicode

INSTALL_HINT = ("bubblewrap (bwrap) is needed to isolate student code: install it with "
                "`sudo apt-get install bubblewrap` (Debian/Ubuntu) or `sudo dnf install bubblewrap` "
                "(Fedora), or pass --no-sandbox to grade without isolation.")
SYSTEM_FOLDERS = ("/usr", "/etc", "/opt/conda")
FIRST_UID = 64000
# The only variables a student's kernel gets from the grader's environment
# (everything else, tokens and database passwords included, stays out).
PASSED_THROUGH = ("PATH", "LANG", "LANGUAGE", "TZ")
PASSED_THROUGH_PREFIXES = ("LC_",)


def clean_environment(scratch: str) -> dict[str, str]:
    """The whole environment of a student's kernel: an allowlist, never the instructor's variables."""
    env = {k: v for k, v in os.environ.items()
           if k in PASSED_THROUGH or k.startswith(PASSED_THROUGH_PREFIXES)}
    env.setdefault("PATH", os.defpath)
    bin_dir = os.path.dirname(sys.executable)  # the kernel's interpreter and its tools
    if bin_dir not in env["PATH"].split(os.pathsep):
        env["PATH"] = bin_dir + os.pathsep + env["PATH"]
    env.update(HOME=scratch, TMPDIR="/tmp", MPLCONFIGDIR=os.path.join(scratch, ".matplotlib"),
               PYTHONNOUSERSITE="1")
    return env


def available() -> bool:
    return shutil.which("bwrap") is not None and shutil.which("prlimit") is not None


def _ancestors(path: str) -> list[str]:
    parts = Path(path).parts[1:-1]
    return ["/" + "/".join(parts[: i + 1]) for i in range(len(parts))]


def command(inner: list[str], scratch: str, sockets: str, *, memory_mb: int, max_processes: int,
            file_mb: int, uid: int | None) -> list[str]:
    """The bwrap command line that runs `inner` in a sandbox around `scratch`."""
    args = ["bwrap", "--die-with-parent", "--clearenv", "--unshare-net", "--unshare-pid", "--unshare-ipc",
            "--unshare-uts", "--unshare-cgroup-try", "--hostname", "grader",
            "--dev", "/dev", "--proc", "/proc", "--perms", "1777", "--tmpfs", "/tmp"]
    for folder in SYSTEM_FOLDERS:
        if os.path.isdir(folder):
            args += ["--ro-bind", folder, folder]
    for name in ("lib", "lib64", "lib32", "bin", "sbin"):
        target = os.path.join("/", name)
        if os.path.islink(target):
            args += ["--symlink", os.readlink(target), target]
        elif os.path.isdir(target):
            args += ["--ro-bind", target, target]
    # The interpreter and its environment, wherever they live (a venv inside the
    # course folder, a pyenv build under /root): read-only, and reachable by the
    # sandbox user, whatever the permissions of the folders above them.
    environments = sorted({os.path.realpath(sys.prefix), os.path.realpath(sys.base_prefix)})
    mounts = [(p, p, "--ro-bind") for p in environments] + [(scratch, scratch, "--bind"),
                                                             (sockets, sockets, "--bind")]
    # Folders bwrap would create on its own are private (0700) to root: make
    # each one on the way explicitly, except /tmp (a 1777 tmpfs) and folders
    # inside the read-only system binds, which exist already.
    bound = [f for f in SYSTEM_FOLDERS if os.path.isdir(f)]
    made = set()
    for _, target, _ in mounts:
        for parent in _ancestors(target + "/x"):
            inside_bind = any(parent == f or parent.startswith(f + "/") for f in bound)
            if parent not in made and parent != "/tmp" and not inside_bind:
                made.add(parent)
                args += ["--perms", "0755", "--dir", parent]
    for source, target, kind in mounts:
        args += [kind, source, target]
    args += ["--chdir", scratch]
    for name, value in clean_environment(scratch).items():
        args += ["--setenv", name, value]
    limits = [shutil.which("prlimit") or "prlimit", f"--as={memory_mb * 1024 * 1024}",
              f"--nproc={max_processes}", f"--fsize={file_mb * 1024 * 1024}", "--nofile=256", "--core=0", "--"]
    if uid is not None:
        # Root keeps only the two capabilities needed to become the sandbox user,
        # and setpriv drops those before the kernel starts.
        args += ["--cap-drop", "ALL", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--",
                 shutil.which("setpriv") or "setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups",
                 "--inh-caps=-all", "--bounding-set=-all", "--"]
    else:
        args += ["--unshare-user", "--cap-drop", "ALL", "--"]
    return args + limits + inner


class SandboxedKernelManager(AsyncKernelManager):
    """A kernel manager whose kernel runs in a bubblewrap sandbox over unix sockets."""

    scratch = Unicode("", help="folder the kernel may write to (its working directory)").tag(config=True)
    memory_mb = Int(2048, help="address-space limit of each process, in MiB").tag(config=True)
    max_processes = Int(32, help="processes and threads the sandbox user may have (a kernel uses ~13)").tag(config=True)
    file_mb = Int(256, help="largest file the kernel may write, in MiB").tag(config=True)
    uid = Int(-1, help="uid to run as when the grader is root (-1: first uid of this grader slot)").tag(config=True)
    enabled = Bool(True, help="False runs the kernel unsandboxed (--no-sandbox)").tag(config=True)

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self._sockets = tempfile.mkdtemp(prefix="grader-kernel-")
        os.chmod(self._sockets, 0o700)
        self.transport = "ipc"
        self.ip = os.path.join(self._sockets, "kernel")
        self.connection_file = os.path.join(self._sockets, "kernel.json")

    def _sandbox_uid(self) -> int | None:
        if os.geteuid() != 0:
            return None
        return self.uid if self.uid >= 0 else FIRST_UID

    def format_kernel_cmd(self, extra_arguments=None):
        cmd = super().format_kernel_cmd(extra_arguments)
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
        return command(cmd, scratch, self._sockets, memory_mb=self.memory_mb,
                       max_processes=self.max_processes, file_mb=self.file_mb, uid=uid)

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
        """The kernel's own process (a psutil.Process), or None once it is gone.

        It is the first Python process down from the launched one: in the
        sandbox, bwrap comes first (its command line names ipykernel too), and
        copies a student made with os.fork() come later.
        """
        import psutil

        process = getattr(self.provisioner, "process", None)
        if process is None:
            return None
        try:
            top = psutil.Process(process.pid)
            return next(p for p in [top, *top.children(recursive=True)]
                        if os.path.basename(p.cmdline()[0]).startswith("python"))
        except (psutil.Error, StopIteration, IndexError):
            return None

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

    async def _async_cleanup_resources(self, restart: bool = False) -> None:
        await super()._async_cleanup_resources(restart)
        if not restart:
            shutil.rmtree(self._sockets, ignore_errors=True)

    cleanup_resources = _async_cleanup_resources
