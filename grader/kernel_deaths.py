"""Kernel deaths and fresh kernels, one part of GuardedExecute (execute.py).

nbgrader drops a submission whose kernel dies ("Removing failed assignment"). Here, when the
kernel dies or is killed while student code runs (os._exit, exit() or quit(), a segfault, the
sandbox's kill, a cell that ignored the interrupt or ran past the notebook's limit: see
cell_limits.py), the cell it was running gets an error output naming the cell and the cause.
A fresh kernel then runs the answer and set-up cells before that cell again, as a student's
"run all" would (their first outputs are kept; the cell that killed a kernel is never run again,
nor are cells that timed out, tests already scored, or cells the student added), and grades the
rest: a crash costs the cell that crashed and the cells that need what it defined.

At most `max_restarts` fresh kernels a notebook; past that, or past the notebook's time limit,
every later code cell gets an error output saying why it did not run (a graded cell without
outputs would otherwise count as passed). A kernel that stopped before any student code ran is
no death but a failed start: kernel_start.py tries again or the submission is *not graded*.
"""

from __future__ import annotations

import copy
import time

from nbclient.exceptions import DeadKernelError
from traitlets import Int

from . import trusted
from .cell_limits import CellLimits
from .cell_notes import error_output
from .kernel_start import EXIT_STATUS, KernelStart


def exit_reason(code: int | None) -> str | None:
    """Why a kernel process ended, from its exit status (None: it still runs)."""
    if code is None:
        return None
    if code == EXIT_STATUS:
        return "the notebook called exit() or quit(), which ends the kernel"
    if code < 0 or code >= 128:
        signal_number = -code if code < 0 else code - 128
        return f"the kernel was killed by signal {signal_number}"
    return f"the kernel exited with status {code}"


def replays(cell, index: int, timed_out: set) -> bool:
    """Whether a code cell that ran before a crash runs again on the fresh kernel: answers and
    set-up cells do. Tests already scored, cells that timed out and cells the student added (no
    nbgrader metadata: a memory hog or a process killer would strike again, differently on each
    launch path) do not."""
    return not (trusted.is_test_cell(cell) or index in timed_out or not cell.metadata.get("nbgrader"))


class KernelDeaths(CellLimits, KernelStart):
    """A death marks its cell; fresh kernels replay what ran and grade the rest (see the module doc)."""

    max_restarts = Int(
        3,
        help="fresh kernels started for one notebook after student code killed one; past that, "
        "the cells not yet run score zero with the reason",
    ).tag(config=True)

    _cells_started = False  # student code ran on some kernel of this notebook
    _dead: set = set()  # cells that stopped a kernel: never run again
    _resume = -1  # on a fresh kernel, cells up to here ran before: only answers and set-up run again
    _death: str | None = None  # why the kernel process ended, read when nbclient found it dead

    def _start_deaths(self) -> None:
        self._cells_started, self._dead, self._resume = False, set(), -1

    def _exit_reason(self) -> str | None:
        process = getattr(getattr(self.km, "provisioner", None), "process", None)
        return exit_reason(process.poll() if process is not None else None)

    def _kernel_gone(self, closed: bool = False) -> str | None:
        """Why the kernel is gone, or None while it runs. When the channel closed, the
        process's exit is read a moment later: wait for it (3 s at most), to name the cause."""
        deadline = time.monotonic() + (3 if closed else 0)
        reason = self._exit_reason()
        while reason is None and time.monotonic() < deadline:
            time.sleep(0.02)
            reason = self._exit_reason()
        return reason

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
            # first outputs kept.
            if not replays(cell, index, self._timed_out):
                return cell, self.resources
            kept = copy.deepcopy(cell.outputs), cell.get("execution_count")
            try:
                self._current = index
                return super().preprocess_cell(cell, resources, index)
            finally:
                cell.outputs, cell["execution_count"] = kept
        self._current = index
        return super().preprocess_cell(cell, resources, index)

    def _run_kernels(self, nb, resources, km) -> tuple:
        """Run the notebook on one kernel after another until it is done: a fresh kernel after
        student code stopped one, another try after a start that failed before any did."""
        failures: list[str] = []
        while True:
            self._output_sizes, self._current, self._death = {}, None, None
            trusted.install(self._scratch)
            try:
                return super().preprocess(nb, resources, km)
            except DeadKernelError as exc:
                reason = self._death if str(exc) == "Kernel died" and self._death else str(exc)
            except Exception as exc:  # a broken kernel start must not lose the submission
                reason = f"{type(exc).__name__}: {exc}"
            finally:
                if self._runner is not None:
                    self._runner.close()
                    self._runner = None
            self.km, self.kc = None, None
            if not self._cells_started:
                self._start_failed(failures, reason)  # raises GraderFailure when no try is left
            elif not self._restart_after(nb, reason):
                # The student's code ran: what stopped the kernel is the student's (graded).
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

    def _mark_not_run(self, nb, reason: str, note: bool = True, start: int | None = None) -> None:
        """The cell `start` (by default the one running) gets an error output with the reason; every
        later code cell that never killed a kernel gets "not run", replacing its outputs."""
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
