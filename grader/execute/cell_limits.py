"""Time limits, time-outs and the output cap, one part of GuardedExecute (execute/guarded.py).

nbgrader lets a cell that ignores SIGINT burn the timeout of every later cell and keeps all
output in memory however much a cell prints. Here:

- the whole notebook has a time limit (`notebook_timeout`) as well as each cell (nbgrader's
  `timeout`); a cell never runs past the notebook's;
- after a time-out the cell is interrupted; a kernel that does not answer within
  `interrupt_grace` seconds is taken for dead, and so is one past the notebook's limit
  (execute/kernel_deaths.py goes on from there);
- once a cell timed out, later cells get at most `limit_after_timeout` seconds (never more than
  the cell limit): a loop in one item that several tests call costs the full limit once;
- at most `max_output_bytes` of output is kept per cell, with a note where it was cut.

Test cells are stopped at the same limit by the runner (execute/test_path.py asks `Limits.cell_timeout`).
The options are GuardedExecute's (execute/guarded.py); the interrupt itself is sent there too.
"""

from __future__ import annotations

import time

from nbformat import NotebookNode

from grader.execute.cell_notes import Notes


def cell_limit(timeout, remaining, timed_out: bool, limit_after_timeout) -> int:
    """Whole seconds a cell may run (1 at least, rounded up): the cell limit `timeout` (where
    there is none, the `remaining` seconds of the notebook's; None, 0 or a negative value is
    none, as nbclient reads them), at most `limit_after_timeout` once a cell `timed_out`, and
    never past the notebook's limit."""
    limit = timeout if timeout is not None and timeout > 0 else remaining
    if timed_out and limit_after_timeout:
        limit = min(limit, limit_after_timeout)
    return max(1, int(min(limit, remaining) + 0.999))


def output_bytes(content: dict) -> int:
    """The size an output message adds to its cell: its text and every representation of its data."""
    return len(str(content.get("text", ""))) + sum(len(str(v)) for v in content.get("data", {}).values())


class Limits:
    """One notebook's clock and limits (see the module doc): GuardedExecute makes one a notebook
    from its options (`timeout`, `notebook_timeout`, `limit_after_timeout`, `interrupt_grace`,
    `max_output_bytes`); every limit a cell gets and every "timed out" note come from here."""

    def __init__(
        self,
        notes: Notes,
        timeout: float | None,
        notebook_timeout: float,
        limit_after_timeout: float,
        interrupt_grace: float,
        max_output_bytes: int,
    ):
        self.notes = notes
        self.timeout, self.notebook_timeout = timeout, notebook_timeout
        self.limit_after_timeout, self.interrupt_grace = limit_after_timeout, interrupt_grace
        self.max_output_bytes = max_output_bytes
        self.deadline = time.monotonic() + notebook_timeout  # the notebook's limit runs from now
        self.timed_out: set[int] = set()  # cells that ran past their limit
        self.output_sizes: dict[int, int] = {}  # of the cells of the kernel running now

    def cell_timeout(self, cell=None) -> int:
        """Whole seconds the next cell may run (cell_limit); nbclient's `timeout_func`."""
        remaining = self.deadline - time.monotonic()
        return cell_limit(self.timeout, remaining, bool(self.timed_out), self.limit_after_timeout)

    def seconds_left(self) -> float:
        return self.deadline - time.monotonic()

    def timed_out_interrupted(self, index: int, timeout: float) -> None:
        """The cell `index` ran past its limit and stopped when interrupted."""
        self.timed_out.add(index)
        self.notes.problem(index, f"timed out after {timeout} s and was interrupted")

    @staticmethod
    def interrupt_ignored(timeout: float) -> str:
        """The reason a kernel is killed when a cell ran past `timeout` and kept running."""
        return f"a cell ran past {timeout} s and ignored the interrupt"

    def ignored_interrupt(self, index: int | None, timeout: float) -> str:
        """The cell `index` (None: no cell was running) ran past `timeout` and kept running: it is
        marked as timed out; the reason its kernel is killed (interrupt_ignored)."""
        if index is not None:
            self.timed_out.add(index)
        return self.interrupt_ignored(timeout)

    def past_notebook_limit(self) -> str:
        return f"the notebook ran past its time limit of {self.notebook_timeout:.0f} s"

    def keep_output(self, outs: list, content: dict, index: int) -> bool:
        """Whether an output message of the cell `index` is kept: past `max_output_bytes` it is
        not, and the first one cut leaves a note in the cell's outputs and the notes."""
        size = output_bytes(content)
        used = self.output_sizes.get(index, 0)
        self.output_sizes[index] = used + size
        if used + size <= self.max_output_bytes:
            return True
        if used <= self.max_output_bytes:
            note = f"[output truncated by the grader after {self.max_output_bytes} bytes]\n"
            outs.append(NotebookNode(output_type="stream", name="stdout", text=note))  # stderr would fail the cell
            self.output_truncated(index)
        return False

    def output_truncated(self, index: int) -> None:
        self.notes.problem(index, "output truncated")
