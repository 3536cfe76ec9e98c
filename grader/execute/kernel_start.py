"""Starting a grading kernel, one part of GuardedExecute (execute/guarded.py).

- Which kernel: the grader's own kernel spec (kernels/template.py), never the students' python3, run by
  the sandbox's kernel manager (isolation/sandbox.py) in a private scratch folder that holds the
  assignment's other files. Without bubblewrap it refuses to run student code (the submission's
  error says how to install it) unless the course trusts its students: `use_safe_autograde(c,
  trusted=True)` sets `trusted_student_code`.
- What it runs first: the `preload` modules (so that a cell's limit measures the student's code,
  not the loading of torch), the fork guard (execute/stray_processes.py), the exit guard (below) and,
  last, the trusted runner's boot line (runner/trusted.py), whose channel opens with the kernel client.
- A start that failed before any student code ran is the grader's failure, named in one line
  (no kernel spec, an interpreter missing or not visible in the sandbox); where it may pass on
  another try (a port race, a slow start on a loaded machine) it is tried `start_retries` more
  times, and then the submission is *not graded* (execute/not_graded.py).

exit() and quit() in a kernel only ask it to stop a moment later (IPython's ask_exit): the
notebook went on and died in a later cell, wrongly named. `EXIT_GUARD` makes them end the kernel
at once with `EXIT_STATUS`, so the cell that called them is the one that fails (execute/kernel_deaths.py
names that status).
"""

from __future__ import annotations

import os
import shutil
import stat
import sys
import tempfile

from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

from grader.execute.not_graded import GraderFailure
from grader.execute.stray_processes import FORK_GUARD
from grader.isolation import sandbox as sandbox_tool
from grader.isolation.uids import SCRATCH_PREFIX
from grader.runner import trusted

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


def exec_lines(preload: list[str]) -> list[str]:
    """The kernel's extra arguments: the `preload` imports, the fork and exit guards and, last
    (after torch is loaded, before any student code), the trusted runner's boot line."""
    imports = "".join(f"__import__({name!r}); " for name in preload)
    return [f"--IPKernelApp.exec_lines={imports}{FORK_GUARD}; {EXIT_GUARD}; {trusted.BOOT_LINE}"]


def use_sandbox(sandbox: bool, trusted_student_code: bool, log) -> bool:
    """Whether kernels run in the sandbox: as `sandbox` says where bubblewrap is there; without it,
    unsandboxed only when the course trusts its students (a warning), else GraderFailure."""
    if not sandbox:
        return False
    if sandbox_tool.available():
        return True
    if trusted_student_code:
        log.warning(
            "STUDENT CODE RUNS UNSANDBOXED: bubblewrap is missing and the course config "
            "says student code is trusted (GuardedExecute.trusted_student_code)."
        )
        return False
    raise GraderFailure("refusing to run student code without a sandbox: " + sandbox_tool.TRUSTED_HINT)


class Scratch:
    """The private folder a notebook's kernels run in, with the assignment's other files (not its
    notebooks), in sub-folders too: nbgrader runs a notebook in its autograded/ folder
    (`graded_in`), which holds the student's files and the course's over them. `keep_written`
    brings what the notebook wrote back there; `remove` deletes the folder."""

    def __init__(self, graded_in: str):
        self.graded_in = graded_in
        self.path = tempfile.mkdtemp(prefix=SCRATCH_PREFIX)
        self.copied_in = copy_files(graded_in, self.path)
        os.chmod(self.path, 0o700)

    def keep_written(self) -> list[str]:
        return keep_written(self.path, self.graded_in, self.copied_in)

    def remove(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)


def start_failed(failures: list[str], cause: str, lasting: bool, retries: int) -> None:
    """No student code ran on this kernel: the grader failed, for `cause` (start_failure). Retry
    what may pass (not a missing interpreter); past `retries` more tries, GraderFailure: the
    submission is not graded."""
    failures.append(cause)
    if lasting or len(failures) > retries:
        raise GraderFailure(cause)
