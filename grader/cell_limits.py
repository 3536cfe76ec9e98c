"""Time limits, time-outs and the output cap, one part of GuardedExecute (execute.py).

nbgrader lets a cell that ignores SIGINT burn the timeout of every later cell and keeps all
output in memory however much a cell prints. Here:

- the whole notebook has a time limit (`notebook_timeout`) as well as each cell (nbgrader's
  `timeout`); a cell never runs past the notebook's;
- after a time-out the cell is interrupted; a kernel that does not answer within
  `interrupt_grace` seconds is taken for dead, and so is one past the notebook's limit
  (kernel_deaths.py goes on from there);
- once a cell timed out, later cells get at most `limit_after_timeout` seconds (never more than
  the cell limit): a loop in one item that several tests call costs the full limit once;
- at most `max_output_bytes` of output is kept per cell, with a note where it was cut.

Test cells are stopped at the same limit by the runner (test_path.py asks `_cell_timeout`).
"""

from __future__ import annotations

import time
from queue import Empty

from nbclient.exceptions import DeadKernelError
from nbformat import NotebookNode
from traitlets import Float, Int, default

from .cell_notes import CellNotes


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


class CellLimits(CellNotes):
    """The notebook's and each cell's time limit, time-outs, and the output cap (see the module doc)."""

    notebook_timeout = Float(600, help="seconds the whole notebook may run").tag(config=True)
    interrupt_grace = Float(5, help="seconds a kernel has to stop after an interrupt").tag(config=True)
    max_output_bytes = Int(1_000_000, help="output kept per cell, in bytes").tag(config=True)
    limit_after_timeout = Float(
        10,
        help="seconds each cell may run once a cell of the notebook timed out (never more than "
        "the cell limit): a loop in one answer that several tests call costs the limit once",
    ).tag(config=True)

    _deadline: float | None = None
    _timed_out: set = set()  # cells that ran past their limit
    _output_sizes: dict

    # nbconvert re-runs NotebookClient.__init__ inside preprocess(), resetting
    # attributes set here: these must be trait defaults.
    # A flood of output can take longer to drain than nbclient's 4 s default.
    # Not raising is safe: nbgrader's on_cell_executed adds the reply's error
    # to the cell when its error output never arrived, so no failure is lost.
    @default("iopub_timeout")
    def _default_iopub_timeout(self):
        return 15

    @default("raise_on_iopub_timeout")
    def _default_raise_on_iopub_timeout(self):
        return False

    @default("timeout_func")
    def _default_timeout_func(self):
        return self._cell_timeout

    def _start_clock(self) -> None:
        """A notebook starts: its time limit runs from now, and no cell has timed out yet."""
        self._deadline = time.monotonic() + self.notebook_timeout
        self._timed_out = set()

    def _cell_timeout(self, cell) -> int:
        remaining = self._deadline - time.monotonic() if self._deadline else self.notebook_timeout
        return cell_limit(self.timeout, remaining, bool(self._timed_out), self.limit_after_timeout)

    def output(self, outs, msg, display_id, cell_index):
        size = output_bytes(msg.get("content", {}))
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
