"""nbgrader's Execute step, hardened for untrusted notebooks.

nbgrader drops a submission whose kernel dies ("Removing failed assignment"),
lets a cell that ignores SIGINT burn the timeout of every later cell, and keeps
all output in memory however much a cell prints. This step instead:

- runs the kernel in the sandbox (see sandbox.py) with a private scratch folder;
- gives the whole notebook a time limit as well as each cell;
- after a timeout, interrupts; a kernel that does not answer within a grace
  period is killed;
- when the kernel dies or is killed (os._exit, exit(), a segfault, a cell that
  ignored the interrupt), marks the cell it was running with an error output
  naming the cell and the cause, starts a fresh kernel, runs the answer and set-up
  cells before that cell again (as a student's "run all" would; their first outputs
  are kept, the cell that killed a kernel is never run again, nor are cells that
  timed out) and grades the rest: a crash costs the cell that crashed and the cells
  that need what it defined. At most `max_restarts` fresh kernels a notebook; past
  that, or past the notebook's time limit, every later code cell gets an error
  output saying why it did not run (a graded cell without outputs would
  otherwise count as passed);
- after a cell timed out, later cells get at most `limit_after_timeout` seconds:
  a loop in one item called by several tests costs the full limit once;
- keeps at most `max_output_bytes` of output per cell;
- stops every process a cell started when the cell ends: a fork bomb's copies
  of the kernel would otherwise hold the process quota and break later cells
  at random, so a regrade could give another score.

The reasons are also written into the notebook's metadata
(`metadata.grader.problems`, see pipeline.py) for the rows and the report.

Without bubblewrap it refuses to run student code (each submission's error says how
to install it) unless the course trusts its students: `use_safe_autograde(c,
trusted=True)` sets `c.GuardedExecute.trusted_student_code`.
"""

from __future__ import annotations

import copy
import os
import shutil
import sys
import tempfile
import time
from queue import Empty

import psutil
from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel
from nbclient.exceptions import DeadKernelError
from nbclient.util import run_sync
from nbformat import NotebookNode
from nbgrader.preprocessors import Execute
from traitlets import Bool, Float, Int, List, Unicode, default

from . import processes, trusted
from . import sandbox as sandbox_tool
from .sandbox import SandboxedKernelManager
from .template import grader_kernel_name
from .test_path import TrustedTestPath
from .uids import SCRATCH_PREFIX

# A plain os.fork() in a cell copies the whole kernel, sockets included: the
# copies would answer the grader's requests too and make grades random. Any copy
# that finishes a cell exits before it can reply (multiprocessing children never
# get back to the kernel loop, so they are unaffected). Written as one line with
# default arguments so that nothing is left in the student's namespace.
# exit() and quit() in a kernel only ask it to stop a moment later (IPython's ask_exit): the
# notebook went on and died in a later cell, wrongly named. Here they end the kernel at once,
# with a status of their own, so the cell that called them is the one that fails.
EXIT_STATUS = 86
EXIT_GUARD = "get_ipython().ask_exit = lambda *_, _exit=__import__('os')._exit: _exit(" + str(EXIT_STATUS) + ")"
FORK_GUARD = (
    "get_ipython().events.register('post_run_cell', "
    "lambda *_, _os=__import__('os'), _pid=__import__('os').getpid(): "
    "_os.getpid() == _pid or _os._exit(0))"
)


def error_output(ename: str, evalue: str) -> NotebookNode:
    return NotebookNode(output_type="error", ename=ename, evalue=evalue, traceback=[f"{ename}: {evalue}"])


class GraderFailure(RuntimeError):
    """The grader could not run a submission (no student code ran): it is *not graded*,
    never a zero. The message is the cause in one line; grade.py finds it in nbgrader's log."""

    def __init__(self, cause: str):
        super().__init__(cause)
        self.cause = cause

    def __str__(self) -> str:
        return f"{FAILURE_MARK}{self.cause}"


FAILURE_MARK = "not graded: "
# (assignment, student) -> the cause of the last GraderFailure in this process.
FAILURES: dict[tuple[str | None, str | None], str] = {}


class GuardedExecute(TrustedTestPath, Execute):
    notebook_timeout = Float(600, help="seconds the whole notebook may run").tag(config=True)
    interrupt_grace = Float(5, help="seconds a kernel has to stop after an interrupt").tag(config=True)
    max_output_bytes = Int(1_000_000, help="output kept per cell, in bytes").tag(config=True)
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
    max_restarts = Int(
        3,
        help="fresh kernels started for one notebook after student code killed one; past that, "
        "the cells not yet run score zero with the reason",
    ).tag(config=True)
    limit_after_timeout = Float(
        10,
        help="seconds each cell may run once a cell of the notebook timed out (never more than "
        "the cell limit): a loop in one answer that several tests call costs the limit once",
    ).tag(config=True)
    preload = List(
        Unicode(),
        ["torch"],
        help=(
            "modules imported while the kernel starts, so that a cell's time limit measures the "
            "student's code rather than the loading of big libraries"
        ),
    ).tag(config=True)

    _deadline = None
    _current = None
    _scratch = ""
    _cells_started = False
    _dead: set = set()  # cells that stopped a kernel: never run again
    _resume = -1  # on a fresh kernel, cells up to here ran before: only answers and set-up run again

    # nbconvert re-runs NotebookClient.__init__ inside preprocess(), resetting
    # attributes set here: these must be trait defaults.
    # A flood of output can take longer to drain than nbclient's 4 s default.
    # Not raising is safe: nbgrader's on_cell_executed adds the reply's error
    # to the cell when its error output never arrived, so no failure is lost.
    @default("iopub_timeout")
    def _default_iopub_timeout(self):
        return 15

    # A graded kernel has nothing to save on the way out: killing it at once saves
    # the graceful shutdown's round trip and wait (about 0.1 s a notebook).
    @default("shutdown_kernel")
    def _default_shutdown_kernel(self):
        return "immediate"

    @default("raise_on_iopub_timeout")
    def _default_raise_on_iopub_timeout(self):
        return False

    @default("extra_arguments")
    def _default_extra_arguments(self):
        imports = "".join(f"__import__({name!r}); " for name in self.preload)
        # The trusted test runner starts last: after torch is loaded, before any student code.
        return [f"--IPKernelApp.exec_lines={imports}{FORK_GUARD}; {EXIT_GUARD}; {trusted.BOOT_LINE}"]

    # Grading kernels only: the grader's own kernel spec (template.py), never the students' python3.
    @default("kernel_name")
    def _default_kernel_name(self):
        return grader_kernel_name()

    @default("timeout_func")
    def _default_timeout_func(self):
        return self._cell_timeout

    # -- limits ---------------------------------------------------------------
    def _cell_timeout(self, cell) -> int:
        remaining = self._deadline - time.monotonic() if self._deadline else self.timeout
        limit = self.timeout or remaining
        if self._timed_out and self.limit_after_timeout:
            limit = min(limit, self.limit_after_timeout)
        return max(1, int(min(limit, remaining) + 0.999))

    def output(self, outs, msg, display_id, cell_index):
        content = msg.get("content", {})
        size = len(str(content.get("text", ""))) + sum(len(str(v)) for v in content.get("data", {}).values())
        used = self._output_sizes.get(cell_index, 0)
        self._output_sizes[cell_index] = used + size
        if used + size > self.max_output_bytes:
            if used <= self.max_output_bytes:
                note = f"[output truncated by the grader after {self.max_output_bytes} bytes]\n"
                outs.append(NotebookNode(output_type="stream", name="stdout", text=note))  # stderr would fail the cell
                self._problems.append(f"{self._name(cell_index)}: output truncated")
            return None
        return super().output(outs, msg, display_id, cell_index)

    async def _async_handle_timeout(self, timeout, cell=None):
        expired = self._deadline is not None and time.monotonic() >= self._deadline - 0.5
        reply = await super()._async_handle_timeout(timeout, cell)
        if expired:
            raise DeadKernelError(f"the notebook ran past its time limit of {self.notebook_timeout:.0f} s")
        # A kernel that honours the interrupt answers the execute request soon.
        deadline = time.monotonic() + self.interrupt_grace
        while time.monotonic() < deadline:
            try:
                msg = await self.kc.shell_channel.get_msg(timeout=0.2)
            except Empty:
                continue
            if msg["msg_type"] == "execute_reply":
                self._timed_out.add(self._current)
                self._problems.append(f"{self._name(self._current)}: timed out after {timeout} s and was interrupted")
                return reply
        self._timed_out.add(self._current)
        raise DeadKernelError(f"a cell ran past {timeout} s and ignored the interrupt")

    # -- the trusted test path (trusted.py, runner.py) -----------------------------
    async def async_start_new_kernel_client(self):
        kc = await super().async_start_new_kernel_client()
        self._runner = trusted.RunnerChannel(self._scratch, timeout=self.startup_timeout)
        return kc

    # nbclient binds its sync names to its own coroutines: bind them to these.
    start_new_kernel_client = run_sync(async_start_new_kernel_client)

    def _kernel_gone(self, closed: bool = False) -> str | None:
        """Why the kernel is gone, or None while it runs. When the channel closed, the
        process's exit is read a moment later: wait for it (3 s at most), to name the cause."""
        deadline = time.monotonic() + (3 if closed else 0)
        reason = self._exit_reason()
        while reason is None and time.monotonic() < deadline:
            time.sleep(0.02)
            reason = self._exit_reason()
        return reason

    # -- running --------------------------------------------------------------
    async def _async_check_alive(self) -> None:
        try:
            await super()._async_check_alive()
        except DeadKernelError:
            self._death = self._exit_reason() or "the kernel died"
            raise

    def preprocess_cell(self, cell, resources, index):
        if cell.cell_type != "code" or index in self._dead:
            return cell, self.resources
        if index <= self._resume:
            # A fresh kernel after a crash: the answer and set-up cells before it run again, their
            # first outputs kept; tests already scored, cells that timed out and cells the student
            # added (no nbgrader metadata: a memory hog or a process killer would strike again,
            # differently on each launch path) are not run again.
            if trusted.is_test_cell(cell) or index in self._timed_out or not cell.metadata.get("nbgrader"):
                return cell, self.resources
            kept = copy.deepcopy(cell.outputs), cell.get("execution_count")
            try:
                return self._run_cell(cell, resources, index)
            finally:
                cell.outputs, cell["execution_count"] = kept
        return self._run_cell(cell, resources, index)

    def _run_cell(self, cell, resources, index):
        self._current = index
        try:
            return super().preprocess_cell(cell, resources, index)
        finally:
            self._stop_cell_processes()

    def _stop_cell_processes(self) -> None:
        """Kill everything below the kernel process (the kernel itself lives on)."""

        kernel = self.km.kernel_process() if hasattr(self.km, "kernel_process") else None
        if kernel is None:
            return
        try:
            strays = [p for p in processes.descendants(kernel) if processes.running(p)]
        except psutil.Error:
            return
        for stray in strays:
            try:
                stray.kill()
            except psutil.Error:
                pass
        # Killed is dead enough: a zombie waits for the kernel to reap it, which it may
        # never do (waiting for zombies to vanish cost 2 s in every later cell).
        deadline = time.monotonic() + 2
        while any(processes.running(p) for p in strays) and time.monotonic() < deadline:
            time.sleep(0.01)

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

    def preprocess(self, nb, resources=None, km=None):
        try:
            return self._grade_notebook(nb, resources, km)
        except GraderFailure as failure:
            # Where nbgrader runs in this process (the grader's workers), the cause is read back
            # from here: their nbgrader log is quieted.
            info = (resources or {}).get("nbgrader", {})
            FAILURES[(info.get("assignment"), info.get("student"))] = failure.cause
            raise

    def _grade_notebook(self, nb, resources, km):
        self._problems, self._flags = [], []
        meta = nb.metadata.setdefault("grader", {})
        if meta.get("invalid"):
            # Nothing of the student's to run: every graded test scores zero.
            self._current = None
            self._mark_not_run(nb, "the submission could not be read", note=False)
            return nb, resources
        use_sandbox = self._use_sandbox()
        path = (resources or {}).get("metadata", {}).get("path") or os.getcwd()
        scratch = tempfile.mkdtemp(prefix=SCRATCH_PREFIX)
        for name in os.listdir(path):
            source = os.path.join(path, name)
            if os.path.isfile(source) and not name.endswith(".ipynb"):
                shutil.copy(source, scratch)
        os.chmod(scratch, 0o700)
        self._scratch, self._runner, self._flags = scratch, None, []
        self._imports = trusted.release_imports(nb)
        # nbgrader's Execute.__init__ always passes AsyncKernelManager as an
        # argument (so a trait default would never apply): set ours here.
        self.kernel_manager_class = SandboxedKernelManager
        self.config.SandboxedKernelManager.scratch = scratch
        self.config.SandboxedKernelManager.enabled = use_sandbox
        resources = dict(resources or {})
        resources["metadata"] = dict(resources.get("metadata", {}), path=scratch)
        self._deadline = time.monotonic() + self.notebook_timeout
        self._cells_started, self._dead, self._resume, self._timed_out = False, set(), -1, set()
        failures: list[str] = []
        try:
            while True:
                self._output_sizes, self._current, self._death = {}, None, None
                trusted.install(scratch)
                try:
                    nb, resources = super().preprocess(nb, resources, km)
                    break
                except DeadKernelError as exc:
                    reason = self._death if str(exc) == "Kernel died" and self._death else str(exc)
                except Exception as exc:  # a broken kernel start must not lose the submission
                    reason = f"{type(exc).__name__}: {exc}"
                finally:
                    if self._runner is not None:
                        self._runner.close()
                        self._runner = None
                self.km, self.kc = None, None
                if self._cells_started:
                    # The student's code ran: what stopped the kernel is the student's (graded).
                    if self._restart_after(nb, reason):
                        continue
                    break
                # Nothing of the student's ran: the grader failed. Retry what may pass (not a missing interpreter).
                cause, lasting = self._start_failure(reason)
                failures.append(cause)
                if lasting or len(failures) > self.start_retries:
                    raise GraderFailure(cause)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        meta = nb.metadata.setdefault("grader", {})
        known = meta.setdefault("problems", [])
        known.extend(p for p in self._problems if p not in known)
        flags = meta.setdefault("flags", [])
        flags.extend(f for f in self._flags if f not in flags)
        return nb, resources

    def _restart_after(self, nb, reason: str) -> bool:
        """The kernel stopped while student code ran: mark the cell it ran, and say whether a
        fresh kernel goes on with the rest (False: the cells left are marked as not run)."""
        dead = self._current
        if dead is None:  # no fresh kernel after a crash (the grader's failure): graded with what ran
            cause, _ = self._start_failure(reason)
            self._mark_not_run(nb, f"no fresh kernel started after a crash ({cause})", start=self._resume + 1)
            return False
        late = time.monotonic() >= self._deadline - 1
        if late or len(self._dead) >= self.max_restarts:
            if not late:
                reason += f" (the kernel's {len(self._dead) + 1}th stop; the grader starts {self.max_restarts} fresh ones at most)"
            self._mark_not_run(nb, reason, start=dead)
            return False
        self._dead.add(dead)
        self._resume = max(self._resume, dead)
        self._problems.append(f"{self._name(dead)}: {reason}; a fresh kernel ran the cells after it")
        nb.cells[dead].outputs.append(error_output("KernelDied", f"{self._name(dead)}: {reason}"))
        return True

    def _start_failure(self, reason: str) -> tuple[str, bool]:
        """Why no kernel answered, in one line, naming an interpreter the sandbox cannot see;
        and whether the cause lasts (no point trying again) or may be gone on the next try."""
        try:
            argv = list(KernelSpecManager().get_kernel_spec(self.kernel_name).argv) or [sys.executable]
        except NoSuchKernel:
            return f"kernel did not start (no kernel spec named {self.kernel_name!r})", True
        if argv[0] in ("python", "python3"):
            argv[0] = sys.executable  # what jupyter_client runs for ipykernel's own spec
        interpreter = argv[0] if os.path.isabs(argv[0]) else shutil.which(argv[0]) or argv[0]
        if not os.path.exists(interpreter):
            return f"kernel did not start (interpreter {interpreter} is missing)", True
        if self.config.SandboxedKernelManager.enabled and not sandbox_tool.visible(interpreter):
            return f"kernel did not start (interpreter {interpreter} not visible in the sandbox)", True
        return f"kernel did not start ({reason.splitlines()[0] if reason else 'no reason given'})", False

    def _name(self, index) -> str:
        """A cell as the student knows it: the name of a graded cell, else its position."""
        try:
            meta = self.nb.cells[index].metadata.get("nbgrader", {})
        except (AttributeError, IndexError, TypeError):
            meta = {}
        graded = meta.get("grade") or meta.get("solution")
        return meta["grade_id"] if graded and meta.get("grade_id") else f"cell {index + 1}"

    def _exit_reason(self) -> str | None:
        process = getattr(getattr(self.km, "provisioner", None), "process", None)
        code = process.poll() if process is not None else None
        if code is None:
            return None
        if code == EXIT_STATUS:
            return "the notebook called exit() or quit(), which ends the kernel"
        if code < 0 or code >= 128:
            signal_number = -code if code < 0 else code - 128
            return f"the kernel was killed by signal {signal_number}"
        return f"the kernel exited with status {code}"

    def _mark_not_run(self, nb, reason: str, note: bool = True, start: int | None = None) -> None:
        if start is None:
            start = self._current if self._current is not None else 0
        if note:
            self._problems.append(f"{self._name(start)}: {reason}")
        for index, cell in enumerate(nb.cells):
            if cell.cell_type != "code" or index < start or index in self._dead:
                continue
            if index == start:
                cell.outputs.append(error_output("KernelDied", reason))
            else:
                cell.outputs = [error_output("NotRun", f"not run: {reason} in an earlier cell")]
