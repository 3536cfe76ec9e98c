"""Starting a grading kernel, one part of GuardedExecute (execute.py).

- Which kernel: the grader's own kernel spec (template.py), never the students' python3, run by
  the sandbox's kernel manager (sandbox.py) in a private scratch folder that holds the
  assignment's other files. Without bubblewrap it refuses to run student code (the submission's
  error says how to install it) unless the course trusts its students: `use_safe_autograde(c,
  trusted=True)` sets `trusted_student_code`.
- What it runs first: the `preload` modules (so that a cell's limit measures the student's code,
  not the loading of torch), the fork guard (stray_processes.py), the exit guard (below) and,
  last, the trusted runner's boot line (trusted.py), whose channel opens with the kernel client.
- A start that failed before any student code ran is the grader's failure, named in one line
  (no kernel spec, an interpreter missing or not visible in the sandbox); where it may pass on
  another try (a port race, a slow start on a loaded machine) it is tried `start_retries` more
  times, and then the submission is *not graded* (not_graded.py).

exit() and quit() in a kernel only ask it to stop a moment later (IPython's ask_exit): the
notebook went on and died in a later cell, wrongly named. `EXIT_GUARD` makes them end the kernel
at once with `EXIT_STATUS`, so the cell that called them is the one that fails (kernel_deaths.py
names that status).
"""

from __future__ import annotations

import os
import shutil
import stat
import sys
import tempfile

from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel
from nbclient.util import run_sync
from traitlets import Bool, Int, List, Unicode, default

from . import sandbox as sandbox_tool
from . import trusted
from .cell_notes import CellNotes
from .not_graded import GraderFailure
from .sandbox import SandboxedKernelManager
from .stray_processes import FORK_GUARD
from .template import grader_kernel_name
from .uids import SCRATCH_PREFIX

EXIT_STATUS = 86
EXIT_GUARD = "get_ipython().ask_exit = lambda *_, _exit=__import__('os')._exit: _exit(" + str(EXIT_STATUS) + ")"


def start_failure(kernel_name: str, sandboxed: bool, reason: str) -> tuple[str, bool]:
    """Why no kernel answered, in one line, naming an interpreter the sandbox cannot see;
    and whether the cause lasts (no point trying again) or may be gone on the next try."""
    try:
        argv = list(KernelSpecManager().get_kernel_spec(kernel_name).argv) or [sys.executable]
    except NoSuchKernel:
        return f"kernel did not start (no kernel spec named {kernel_name!r})", True
    if argv[0] in ("python", "python3"):
        argv[0] = sys.executable  # what jupyter_client runs for ipykernel's own spec
    interpreter = argv[0] if os.path.isabs(argv[0]) else shutil.which(argv[0]) or argv[0]
    if not os.path.exists(interpreter):
        return f"kernel did not start (interpreter {interpreter} is missing)", True
    if sandboxed and not sandbox_tool.visible(interpreter):
        return f"kernel did not start (interpreter {interpreter} not visible in the sandbox)", True
    return f"kernel did not start ({reason.splitlines()[0] if reason else 'no reason given'})", False


# What the notebook writes is kept up to this much in all (a file alone is held by the sandbox's
# file-size limit); names of the grader's own or of the kernel's home (HOME is the scratch
# folder: .ipython, .cache, the runner's files) start with a dot and are never kept.
KEEP_WRITTEN_BYTES = 100 * 1024 * 1024


def _files(folder: str):
    """(relative path, lstat) of each regular file under `folder`, no link followed nor notebook."""
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = [d for d in dirnames if not os.path.islink(os.path.join(dirpath, d))]
        for name in filenames:
            full = os.path.join(dirpath, name)
            info = os.lstat(full)
            if stat.S_ISREG(info.st_mode) and not name.endswith(".ipynb"):
                yield os.path.relpath(full, folder), info


def copy_files(source: str, scratch: str) -> dict[str, tuple[int, int]]:
    """Every file under `source` but its notebooks into `scratch`; what was copied, by its size
    and time there."""
    copied = {}
    for relative, _ in _files(source):
        target = os.path.join(scratch, relative)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copy(os.path.join(source, relative), target)
        info = os.stat(target)
        copied[relative] = (info.st_size, info.st_mtime_ns)
    return copied


def keep_written(scratch: str, folder: str, copied: dict[str, tuple[int, int]]) -> list[str]:
    """The files the notebook wrote or changed in `scratch` (not those copied in as they were),
    copied into `folder`; never a link, a notebook, a dot-name or past KEEP_WRITTEN_BYTES."""
    kept, total = [], 0
    for relative, info in sorted(_files(scratch)):
        parts = relative.split(os.sep)
        if any(p.startswith(".") or p == "__pycache__" for p in parts) or copied.get(relative) == (
            info.st_size,
            info.st_mtime_ns,
        ):
            continue
        total += info.st_size
        if total > KEEP_WRITTEN_BYTES:
            break
        target = os.path.join(folder, relative)
        try:
            os.makedirs(os.path.dirname(target), exist_ok=True)
            fd = os.open(os.path.join(scratch, relative), os.O_RDONLY | os.O_NOFOLLOW)
            with os.fdopen(fd, "rb") as handle, open(target, "wb") as out:
                shutil.copyfileobj(handle, out)
        except OSError:
            continue  # a folder where a file was, say: nothing nbgrader would have either
        kept.append(relative)
    return kept


class KernelStart(CellNotes):
    """The kernel, its sandbox and scratch folder, its start-up lines, and failed starts (see the module doc)."""

    sandbox = Bool(True, help="run kernels in the bubblewrap sandbox").tag(config=True)
    trusted_student_code = Bool(
        False,
        help=(
            "True: where bubblewrap is missing, run student code unsandboxed (with a warning) "
            "instead of refusing to grade. Only for code you trust."
        ),
    ).tag(config=True)
    start_retries = Int(
        2,
        help="extra attempts at starting a kernel that failed before any student "
        "code ran (a port race, a slow start on a loaded machine)",
    ).tag(config=True)
    preload = List(
        Unicode(),
        ["torch"],
        help=(
            "modules imported while the kernel starts, so that a cell's time limit measures the "
            "student's code rather than the loading of big libraries"
        ),
    ).tag(config=True)

    _scratch = ""
    _graded_in = ""  # the folder nbgrader runs the notebook in (autograded/<student>/<assignment>)
    _copied_in: dict[str, tuple[int, int]] = {}
    _runner: trusted.RunnerChannel | None = None

    # A graded kernel has nothing to save on the way out: killing it at once saves
    # the graceful shutdown's round trip and wait (about 0.1 s a notebook).
    @default("shutdown_kernel")
    def _default_shutdown_kernel(self):
        return "immediate"

    @default("extra_arguments")
    def _default_extra_arguments(self):
        imports = "".join(f"__import__({name!r}); " for name in self.preload)
        # The trusted test runner starts last: after torch is loaded, before any student code.
        return [f"--IPKernelApp.exec_lines={imports}{FORK_GUARD}; {EXIT_GUARD}; {trusted.BOOT_LINE}"]

    # Grading kernels only: the grader's own kernel spec (template.py), never the students' python3.
    @default("kernel_name")
    def _default_kernel_name(self):
        return grader_kernel_name()

    def _use_sandbox(self) -> bool:
        if not self.sandbox:
            return False
        if sandbox_tool.available():
            return True
        if self.trusted_student_code:
            self.log.warning(
                "STUDENT CODE RUNS UNSANDBOXED: bubblewrap is missing and the course config "
                "says student code is trusted (GuardedExecute.trusted_student_code)."
            )
            return False
        raise GraderFailure("refusing to run student code without a sandbox: " + sandbox_tool.TRUSTED_HINT)

    def _open_scratch(self, resources, use_sandbox: bool) -> tuple[str, dict]:
        """A private scratch folder with the assignment's other files (not its notebooks), in its
        sub-folders too, where the kernels of this notebook run: nbgrader runs a notebook in its
        autograded/ folder, which holds the student's files and the course's over them. The
        resources point nbclient there; `keep_written` brings what the notebook wrote back."""
        path = (resources or {}).get("metadata", {}).get("path") or os.getcwd()
        scratch = tempfile.mkdtemp(prefix=SCRATCH_PREFIX)
        self._copied_in = copy_files(path, scratch)
        os.chmod(scratch, 0o700)
        self._scratch, self._runner, self._graded_in = scratch, None, path
        # nbgrader's Execute.__init__ always passes AsyncKernelManager as an
        # argument (so a trait default would never apply): set ours here.
        self.kernel_manager_class = SandboxedKernelManager
        self.config.SandboxedKernelManager.scratch = scratch
        self.config.SandboxedKernelManager.enabled = use_sandbox
        resources = dict(resources or {})
        resources["metadata"] = dict(resources.get("metadata", {}), path=scratch)
        return scratch, resources

    def _keep_written(self) -> None:
        """What the notebook wrote in its working folder, into the folder it was graded in
        (autograded/), as nbgrader keeps it there."""
        if self._scratch and self._graded_in:
            keep_written(self._scratch, self._graded_in, self._copied_in)

    # The kernel's client comes with the runner's channel (trusted.py, test_path.py).
    async def async_start_new_kernel_client(self):
        kc = await super().async_start_new_kernel_client()
        self._runner = trusted.RunnerChannel(self._scratch, timeout=self.startup_timeout)
        return kc

    # nbclient binds its sync names to its own coroutines: bind them to these.
    start_new_kernel_client = run_sync(async_start_new_kernel_client)

    def _start_failure(self, reason: str) -> tuple[str, bool]:
        return start_failure(self.kernel_name, self.config.SandboxedKernelManager.enabled, reason)

    def _start_failed(self, failures: list[str], reason: str) -> None:
        """No student code ran on this kernel: the grader failed. Retry what may pass (not a
        missing interpreter); past `start_retries`, the submission is not graded."""
        cause, lasting = self._start_failure(reason)
        failures.append(cause)
        if lasting or len(failures) > self.start_retries:
            raise GraderFailure(cause)
