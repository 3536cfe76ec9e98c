"""nbgrader's Execute step, hardened for untrusted notebooks: `GuardedExecute`.

nbgrader drops a submission whose kernel dies ("Removing failed assignment"), lets a cell that
ignores SIGINT burn the timeout of every later cell, and keeps all output in memory however much
a cell prints. GuardedExecute instead runs each submission in the sandbox, under a time limit
for the notebook as well as for each cell, grades a kernel's death instead of dropping the
submission, caps each cell's output, stops what a cell left running, and says *not graded*
(never a zero) where the grader itself failed. Each concern is one part, in a module of its own
(listed in the class's docstring), as nbgrader's Autograde lists its preprocessors. The class is
nbgrader's Execute and nothing else: it holds the options, makes the parts a notebook (each owns
its state; each is given the parts it uses) and runs nbclient's hooks through them.

The reasons are also written into the notebook's metadata (`metadata.grader.problems`, see
pipeline.py) for the rows and the report. Its options are `c.GuardedExecute.*` in a course's
nbgrader_config.py (docs/grading.md), wherever the part that reads them lives.
"""

from __future__ import annotations

import copy
import os
import time
from queue import Empty

from nbclient.exceptions import DeadKernelError
from nbclient.util import run_sync
from nbgrader.preprocessors import Execute
from traitlets import Bool, Float, Int, List, Unicode, default

from grader.execute.cell_limits import Limits
from grader.execute.cell_notes import Notes, error_output
from grader.execute.kernel_deaths import Deaths, kernel_gone, process_exit
from grader.execute.kernel_start import (
    EXIT_GUARD,
    EXIT_STATUS,
    Scratch,
    exec_lines,
    start_failed,
    start_failure,
    use_sandbox,
)
from grader.execute.not_graded import FAILURE_MARK, FAILURES, GraderFailure, remember
from grader.execute.stray_processes import FORK_GUARD, stop_strays_of
from grader.execute.test_path import TestPath
from grader.isolation.sandbox import SandboxedKernelManager
from grader.kernels.template import grader_kernel_name
from grader.runner import trusted

# Names code outside the grader may import from here (each lives in its part's module).
__all__ = [
    "EXIT_GUARD",
    "EXIT_STATUS",
    "FAILURES",
    "FAILURE_MARK",
    "FORK_GUARD",
    "GraderFailure",
    "GuardedExecute",
    "error_output",
]


class GuardedExecute(Execute):
    """nbgrader's Execute, one part per concern, each a class or functions of its own module:

    - execute/kernel_start.py: the grader's kernel spec, the sandbox or not (`sandbox`,
      `trusted_student_code`), the `Scratch` folder, the start-up lines (`preload`, the fork and
      exit guards, the runner's boot line), and failed starts tried again (`start_retries`);
    - execute/cell_limits.py, `Limits`: the notebook's and each cell's time limit (`notebook_timeout`,
      nbgrader's `timeout`), the interrupt's grace (`interrupt_grace`), the shorter limit after
      a time-out (`limit_after_timeout`), the output cap (`max_output_bytes`);
    - execute/kernel_deaths.py, `Deaths`: a kernel's death marks its cell, fresh kernels replay the
      answers and set-up cells before it and grade the rest (`max_restarts`), cells past the
      last fresh kernel are marked as not run;
    - execute/stray_processes.py: what a cell left running below the kernel is stopped when it ends;
    - execute/cell_notes.py, `Notes`: a cell's name as the student knows it, the run's problems and
      flags, written into `metadata.grader`;
    - execute/test_path.py, `TestPath`: test cells run by the trusted runner, judged items decided by
      their judge;
    - execute/not_graded.py: `GraderFailure`, the submission the grader could not run (*not graded*).

    The options are `c.GuardedExecute.*`, below, grouped by the part that reads them. A notebook
    gets its own Notes, Limits, Deaths, TestPath and Scratch (`_grade_notebook`); nothing of
    one notebook's run is left for the next.
    """

    # execute/kernel_start.py
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
    # execute/cell_limits.py (and nbgrader's own `timeout`, the limit of one cell)
    notebook_timeout = Float(600, help="seconds the whole notebook may run").tag(config=True)
    interrupt_grace = Float(5, help="seconds a kernel has to stop after an interrupt").tag(config=True)
    max_output_bytes = Int(1_000_000, help="output kept per cell, in bytes").tag(config=True)
    limit_after_timeout = Float(
        10,
        help="seconds each cell may run once a cell of the notebook timed out (never more than "
        "the cell limit): a loop in one answer that several tests call costs the limit once",
    ).tag(config=True)
    # execute/kernel_deaths.py
    max_restarts = Int(
        3,
        help="fresh kernels started for one notebook after student code killed one; past that, "
        "the cells not yet run score zero with the reason",
    ).tag(config=True)

    # The parts of the notebook graded now (None between notebooks).
    _notes: Notes | None = None
    _limits: Limits | None = None
    _deaths: Deaths | None = None
    _test_path: TestPath | None = None
    _scratch: Scratch | None = None

    # nbconvert re-runs NotebookClient.__init__ inside preprocess(), resetting attributes set
    # there: these must be trait defaults.
    # A flood of output can take longer to drain than nbclient's 4 s default. Not raising is
    # safe: nbgrader's on_cell_executed adds the reply's error to the cell when its error output
    # never arrived, so no failure is lost.
    @default("iopub_timeout")
    def _default_iopub_timeout(self):
        return 15

    @default("raise_on_iopub_timeout")
    def _default_raise_on_iopub_timeout(self):
        return False

    @default("timeout_func")
    def _default_timeout_func(self):
        return self._cell_timeout

    # A graded kernel has nothing to save on the way out: killing it at once saves the graceful
    # shutdown's round trip and wait (about 0.1 s a notebook).
    @default("shutdown_kernel")
    def _default_shutdown_kernel(self):
        return "immediate"

    @default("extra_arguments")
    def _default_extra_arguments(self):
        return exec_lines(self.preload)

    # Grading kernels only: the grader's own kernel spec (kernels/template.py), never the students' python3.
    @default("kernel_name")
    def _default_kernel_name(self):
        return grader_kernel_name()

    def _cell_timeout(self, cell) -> int:
        """nbclient's `timeout_func`: the notebook's Limits decide (a fresh clock outside a notebook)."""
        limits = self._limits or self._make_limits(Notes())
        return limits.cell_timeout(cell)

    def _make_limits(self, notes: Notes) -> Limits:
        return Limits(
            notes,
            self.timeout,
            self.notebook_timeout,
            self.limit_after_timeout,
            self.interrupt_grace,
            self.max_output_bytes,
        )

    # -- one notebook -----------------------------------------------------------------------
    def preprocess(self, nb, resources=None, km=None):
        try:
            return self._grade_notebook(nb, resources, km)
        except GraderFailure as failure:
            remember(resources, failure)
            raise
        finally:
            self._notes = self._limits = self._deaths = self._test_path = self._scratch = None

    def _grade_notebook(self, nb, resources, km):
        """One notebook: its parts made, its kernels run in a scratch folder removed afterwards,
        its notes written into its metadata."""
        notes = self._notes = Notes(nb)
        limits = self._limits = self._make_limits(notes)
        deaths = self._deaths = Deaths(notes, limits, self.max_restarts)
        meta = nb.metadata.setdefault("grader", {})
        if meta.get("invalid"):
            # Nothing of the student's to run: every graded test scores zero.
            deaths.mark_not_run(nb, "the submission could not be read", note=False)
            return nb, resources
        sandboxed = use_sandbox(self.sandbox, self.trusted_student_code, self.log)
        graded_in = (resources or {}).get("metadata", {}).get("path") or os.getcwd()
        scratch = self._scratch = Scratch(graded_in)
        self._test_path = TestPath(
            notes, limits, deaths, trusted.release_imports(nb), lambda closed=False: kernel_gone(self.km, closed)
        )
        # nbgrader's Execute.__init__ always passes AsyncKernelManager as an argument (so a trait
        # default would never apply): set ours here. The kernels run in the scratch folder.
        self.kernel_manager_class = SandboxedKernelManager
        self.config.SandboxedKernelManager.scratch = scratch.path
        self.config.SandboxedKernelManager.enabled = sandboxed
        resources = dict(resources or {})
        resources["metadata"] = dict(resources.get("metadata", {}), path=scratch.path)
        try:
            nb, resources = self._run_kernels(nb, resources, km)
            scratch.keep_written()
        finally:
            scratch.remove()
        notes.save(nb)
        return nb, resources

    def _run_kernels(self, nb, resources, km) -> tuple:
        """Run the notebook on one kernel after another until it is done: a fresh kernel after
        student code stopped one, another try after a start that failed before any did."""
        notes, limits, deaths, path = self._notes, self._limits, self._deaths, self._test_path
        failures: list[str] = []
        while True:
            limits.output_sizes, notes.current, deaths.cause = {}, None, None
            trusted.install(self._scratch.path)
            try:
                return super().preprocess(nb, resources, km)
            except DeadKernelError as exc:
                reason = deaths.cause if str(exc) == "Kernel died" and deaths.cause else str(exc)
            except Exception as exc:  # a broken kernel start must not lose the submission
                reason = f"{type(exc).__name__}: {exc}"
            finally:
                if path.runner is not None:
                    path.runner.close()
                    path.runner = None
            self.km, self.kc = None, None
            if not deaths.cells_started:
                # raises GraderFailure when no try is left
                start_failed(failures, *self._start_failure(reason), self.start_retries)
            elif not deaths.restart_after(nb, reason, lambda why: self._start_failure(why)[0]):
                # The student's code ran: what stopped the kernel is the student's (graded).
                return nb, resources

    def _start_failure(self, reason: str) -> tuple[str, bool]:
        return start_failure(self.kernel_name, self.config.SandboxedKernelManager.enabled, reason)

    # -- nbclient's hooks, through the parts ----------------------------------------------------
    # The kernel's client comes with the runner's channel (runner/trusted.py, execute/test_path.py).
    async def async_start_new_kernel_client(self):
        kc = await super().async_start_new_kernel_client()
        self._test_path.runner = trusted.RunnerChannel(self._scratch.path, timeout=self.startup_timeout)
        return kc

    def preprocess_cell(self, cell, resources, index):
        """A cell skipped (it killed a kernel), replayed on a fresh kernel with its first outputs
        kept, or run; whatever it left running below the kernel is stopped when it ends."""
        how = self._deaths.runs(cell, index)
        if how == "skip":
            return cell, self.resources
        kept = (copy.deepcopy(cell.outputs), cell.get("execution_count")) if how == "replay" else None
        self._notes.current = index
        try:
            return super().preprocess_cell(cell, resources, index)
        finally:
            stop_strays_of(self.km)
            if kept is not None:
                cell.outputs, cell["execution_count"] = kept

    async def async_execute_cell(self, cell, cell_index, execution_count=None, store_history=True):
        if cell.cell_type == "code" and cell.source.strip():
            self._deaths.cells_started = True
        if self._test_path.runs_test(cell):
            self._test_path.run_test(cell, cell_index)
            self.code_cells_executed += 1
            return cell
        result = await super().async_execute_cell(cell, cell_index, execution_count, store_history)
        self._test_path.after_cell(cell, cell_index)
        return result

    def output(self, outs, msg, display_id, cell_index):
        if not self._limits.keep_output(outs, msg.get("content", {}), cell_index):
            return None
        return super().output(outs, msg, display_id, cell_index)

    async def _async_handle_timeout(self, timeout, cell=None):
        """nbclient interrupts the kernel; past the notebook's limit, or when the kernel does not
        answer within the grace, it is taken for dead (Deaths goes on from there)."""
        limits, current = self._limits, self._notes.current
        expired = limits.seconds_left() <= 0.5
        reply = await super()._async_handle_timeout(timeout, cell)
        if expired:
            raise DeadKernelError(limits.past_notebook_limit())
        # A kernel that honours the interrupt answers the execute request soon.
        deadline = time.monotonic() + limits.interrupt_grace
        while time.monotonic() < deadline:
            try:
                msg = await self.kc.shell_channel.get_msg(timeout=0.2)
            except Empty:
                continue
            if msg["msg_type"] == "execute_reply":
                limits.timed_out_interrupted(current, timeout)
                return reply
        raise DeadKernelError(limits.ignored_interrupt(current, timeout))

    async def _async_check_alive(self) -> None:
        try:
            await super()._async_check_alive()
        except DeadKernelError:
            self._deaths.cause = process_exit(self.km) or "the kernel died"
            raise

    # nbclient binds its sync names to its own coroutines: bind them to these.
    start_new_kernel_client = run_sync(async_start_new_kernel_client)
    execute_cell = run_sync(async_execute_cell)
