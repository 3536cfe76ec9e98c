"""Kernel deaths and fresh kernels, one part of GuardedExecute (execute/guarded.py).

nbgrader drops a submission whose kernel dies ("Removing failed assignment"). Here, when the
kernel dies or is killed while student code runs (os._exit, exit() or quit(), a segfault, the
sandbox's kill, a cell that ignored the interrupt or ran past the notebook's limit: see
execute/cell_limits.py), the cell it was running gets an error output naming the cell and the cause.
A fresh kernel then runs the answer and set-up cells before that cell again, as a student's
"run all" would (their first outputs are kept; the cell that killed a kernel is never run again,
nor are cells that timed out, tests already scored, or cells the student added), and grades the
rest: a crash costs the cell that crashed and the cells that need what it defined.

At most `max_restarts` fresh kernels a notebook; past that, or past the notebook's time limit,
every later code cell gets an error output saying why it did not run (a graded cell without
outputs would otherwise count as passed). A kernel that stopped before any student code ran is
no death but a failed start: execute/kernel_start.py tries again or the submission is *not graded*.
"""

from __future__ import annotations

import time

from grader.execute.cell_limits import Limits
from grader.execute.cell_notes import Notes, error_output
from grader.execute.kernel_start import EXIT_STATUS
from grader.runner import trusted


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


def process_exit(km) -> str | None:
    """Why the kernel process of the kernel manager `km` ended, or None while it runs."""
    process = getattr(getattr(km, "provisioner", None), "process", None)
    return exit_reason(process.poll() if process is not None else None)


def kernel_gone(km, closed: bool = False) -> str | None:
    """Why the kernel of `km` is gone, or None while it runs. When the channel closed, the
    process's exit is read a moment later: wait for it (3 s at most), to name the cause."""
    deadline = time.monotonic() + (3 if closed else 0)
    reason = process_exit(km)
    while reason is None and time.monotonic() < deadline:
        time.sleep(0.02)
        reason = process_exit(km)
    return reason


class Deaths:
    """One notebook's kernel deaths (see the module doc): which cells stopped a kernel, where a
    fresh kernel resumes, why the last one died. GuardedExecute makes one a notebook (an
    unreadable submission's too: the last notebook's deaths never decide this one's marks)."""

    def __init__(self, notes: Notes, limits: Limits, max_restarts: int):
        self.notes, self.limits, self.max_restarts = notes, limits, max_restarts
        self.cells_started = False  # student code ran on some kernel of this notebook
        self.dead: set[int] = set()  # cells that stopped a kernel: never run again
        self.resume = -1  # on a fresh kernel, cells up to here ran before: only answers and set-up run again
        self.cause: str | None = None  # why the kernel process ended, read when nbclient found it dead

    def runs(self, cell, index: int) -> str:
        """How the cell `index` runs on this kernel: "skip" (not code, or it killed a kernel),
        "replay" (it ran before a crash: its first outputs are kept) or "run"."""
        if cell.cell_type != "code" or index in self.dead:
            return "skip"
        if index <= self.resume:
            return "replay" if replays(cell, index, self.limits.timed_out) else "skip"
        return "run"

    def restart_after(self, nb, reason: str, start_cause) -> bool:
        """The kernel stopped while student code ran: mark the cell it ran, and say whether a
        fresh kernel goes on with the rest (False: the cells left are marked as not run).
        `start_cause(reason)` names a failed start (execute/kernel_start.py)."""
        dead = self.notes.current
        if dead is None:  # no fresh kernel after a crash (the grader's failure): graded with what ran
            self.mark_not_run(
                nb, f"no fresh kernel started after a crash ({start_cause(reason)})", start=self.resume + 1
            )
            return False
        late = self.limits.seconds_left() <= 1
        if late or len(self.dead) >= self.max_restarts:
            if not late:
                reason += f" (the kernel's {len(self.dead) + 1}th stop; the grader starts {self.max_restarts} fresh ones at most)"
            self.mark_not_run(nb, reason, start=dead)
            return False
        self.dead.add(dead)
        self.resume = max(self.resume, dead)
        self.notes.problem(dead, f"{reason}; a fresh kernel ran the cells after it")
        nb.cells[dead].outputs.append(error_output("KernelDied", f"{self.notes.name(dead)}: {reason}"))
        return True

    def mark_not_run(self, nb, reason: str, note: bool = True, start: int | None = None) -> None:
        """The cell `start` (by default the one running) gets an error output with the reason; every
        later code cell that never killed a kernel gets "not run", replacing its outputs."""
        if start is None:
            start = self.notes.current if self.notes.current is not None else 0
        if note:
            self.notes.problem(start, reason)
        for index, cell in enumerate(nb.cells):
            if cell.cell_type != "code" or index < start or index in self.dead:
                continue
            if index == start:
                cell.outputs.append(error_output("KernelDied", reason))
            else:
                cell.outputs = [error_output("NotRun", f"not run: {reason} in an earlier cell")]
