"""The grader's side of the trusted test path, one part of GuardedExecute (execute.py).

A test cell does not run as the notebook's code: the runner in the kernel (runner.py) runs it
from the release's source, on the grader's request, and answers with a record the grade is
read from (trusted.py). A judged item's data then goes to its judge outside the kernel
(judges.py). Any other code cell runs as nbclient runs it, and the runner is asked afterwards
whether it saw a hook point changed. Flags name the cell; errors of the student's own cells
are noted so that the tests they break have a cause.

GuardedExecute mixes this in ahead of nbgrader's Execute and after its other parts, which supply
what is named below: the kernel and its runner channel (kernel_start.py), the limits
(cell_limits.py), a dead kernel's cause (kernel_deaths.py) and cell names and notes (cell_notes.py).
"""

from __future__ import annotations

from typing import Any

from nbclient.exceptions import DeadKernelError
from nbclient.util import run_sync

from . import judges, trusted


class TrustedTestPath:
    """Test cells through the runner, judged items through their judge (see the module doc)."""

    _runner: trusted.RunnerChannel | None = None
    _imports: dict = {}
    _death: str | None = None
    _timed_out: set = set()  # cells that ran past their limit
    _words_of: tuple | None = None  # (notebook, its trusted.hidden_words)
    # Supplied by GuardedExecute's other parts (and nbclient's NotebookClient).
    _flags: list
    _problems: list
    _cells_started: bool
    interrupt_grace: Any
    code_cells_executed: int
    nb: Any  # the notebook being graded (nbclient's NotebookClient)

    def _cell_timeout(self, cell) -> int:
        raise NotImplementedError

    def _name(self, index) -> str:
        raise NotImplementedError

    def _kernel_gone(self, closed: bool = False) -> str | None:
        raise NotImplementedError

    def _flag(self, index, flags) -> None:
        for flag in flags:
            note = f"{self._name(index)}: {flag}"
            if note not in self._flags:
                self._flags.append(note)

    def _runner_request(self, index, message: dict, timeout: float, late: str = "") -> dict | None:
        """One request to the runner; None when the notebook broke the channel (flagged)."""
        try:
            return self._runner.request(message, timeout, self._kernel_gone)
        except trusted.ChannelBroken as exc:
            self._flag(index, [str(exc)])
            return None
        except TimeoutError:
            raise DeadKernelError(late or f"the kernel did not answer within {timeout:.0f} s") from None
        except EOFError as exc:
            self._death = str(exc)
            raise DeadKernelError("Kernel died") from None

    async def async_execute_cell(self, cell, cell_index, execution_count=None, store_history=True):
        if cell.cell_type == "code" and cell.source.strip():
            self._cells_started = True
        if cell.cell_type != "code" or not cell.source.strip() or self._runner is None:
            return await super().async_execute_cell(cell, cell_index, execution_count, store_history)
        if not trusted.is_test_cell(cell) or trusted.deletes_globals(cell.source):
            result = await super().async_execute_cell(cell, cell_index, execution_count, store_history)
            reply = self._runner_request(cell_index, {"op": "check"}, timeout=30)
            if reply is not None:
                self._flag(cell_index, reply["flags"])
            self._note_error(cell, cell_index)
            return result
        # A test cell: run by the runner, scored from its record only.
        # Every function the test defines, sealed (trusted.seal_functions): line numbers below are the result's.
        source = trusted.seal_functions(trusted.python_source(judges.without_judge(cell.source)))
        hidden = trusted.HIDDEN_BEGIN in cell.source
        timeout = self._cell_timeout(cell)
        message = {
            "op": "run",
            "source": trusted.mark_hidden_start(source),
            "imports": self._imports,
            "timeout": timeout,
        }
        # The runner stops a test at `timeout`; one that will not stop costs its kernel after the grace.
        try:
            reply = self._runner_request(
                cell_index,
                message,
                timeout=timeout + self.interrupt_grace,
                late=f"a cell ran past {timeout} s and ignored the interrupt",
            )
        except DeadKernelError as exc:
            if "ignored the interrupt" in str(exc):
                self._timed_out.add(cell_index)
            raise
        if reply is not None and reply.get("timed_out"):
            self._timed_out.add(cell_index)
            self._problems.append(f"{self._name(cell_index)}: timed out after {timeout} s and was interrupted")
        if reply is not None and reply.get("truncated"):
            self._problems.append(f"{self._name(cell_index)}: output truncated")
        if reply is None:
            reply = {
                "passed": False,
                "ename": "GraderFlag",
                "by_test": True,
                "message": "not run: the notebook broke the grader's channel to its tests",
            }
        self._flag(cell_index, reply.get("flags", []))
        judge = judges.in_cell(cell.source)
        if judge is not None and reply.get("passed"):
            reply = self._judge(cell_index, judge, reply, timeout)
        # An error raised in the visible part (its line comes before the hidden tests) is the student's
        # to see, with what that part printed: nothing of the hidden part ran.
        shown = hidden and not reply.get("passed") and 0 < (reply.get("line") or 0) < trusted.hidden_start(source)
        hidden = hidden and not shown
        secret_words = self._secret_words() if hidden else frozenset()
        where = self._students_line(cell_index, reply.get("where")) if hidden else ""
        cell.outputs = trusted.test_outputs(reply, hidden, trusted.hidden_lines(cell.source), secret_words, where)
        self.code_cells_executed += 1
        return cell

    execute_cell = run_sync(async_execute_cell)

    def _secret_words(self) -> frozenset[str]:
        """trusted.hidden_words of this notebook (its hidden tests are the release's), once a notebook."""
        if self._words_of is None or self._words_of[0] is not self.nb:
            self._words_of = (self.nb, trusted.hidden_words([cell.source for cell in self.nb.cells]))
        return self._words_of[1]

    def _students_line(self, index, where) -> str:
        """The student's line an error came from (the runner's `where`: its number and text), named
        as the student knows it ("<answer cell id>, line 3: `layer.reset_parameters()`"), the cell found
        among the student's cells before the test by that line's text."""
        if not (isinstance(where, tuple) and len(where) == 2 and isinstance(where[0], int)):
            return ""
        number, text = where[0], str(where[1] or "")
        shown = f"line {number}" + (f": `{text}`" if text else "")
        if not text:
            return shown + " of your code"
        candidates = [
            (i, cell)
            for i, cell in enumerate(self.nb.cells[:index])
            if cell.cell_type == "code" and not trusted.is_trusted_cell(cell) and not trusted.is_test_cell(cell)
        ]
        for exact in (True, False):
            for i, cell in reversed(candidates):
                lines = [line.strip() for line in cell.source.splitlines()]
                if (exact and lines[number - 1 : number] == [text]) or (not exact and text in lines):
                    return f"{self._name(i)}, line {lines.index(text) + 1 if not exact else number}" + f": `{text}`"
        return shown + " of your code"

    def _note_error(self, cell, index) -> None:
        """An error in a cell of the student's own (an answer that raises after a correct def, say)
        scores nothing by itself: the notes name it, so that the tests it breaks have a cause."""
        if trusted.is_trusted_cell(cell) or trusted.is_test_cell(cell) or index in self._timed_out:
            return
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error":
                message = str(output.get("evalue", "")).strip().split("\n")[0][:80]
                note = f"{self._name(index)}: raised {output.get('ename', 'an error')}" + (
                    f": {message}" if message else ""
                )
                if note not in self._problems:
                    self._problems.append(note)
                return

    def _judge(self, index, judge: judges.Judge, reply: dict, timeout: int) -> dict:
        """The test passed in the kernel; now the judge decides from data (judges.py)."""
        message = {
            "op": "collect",
            "source": trusted.seal_functions(judge.collect),
            "imports": self._imports,
            "timeout": timeout,
        }
        collected = self._runner_request(
            index, message, timeout=timeout + self.interrupt_grace, late=f"a cell ran past {timeout} s"
        )
        if collected is None:
            return dict(reply, passed=False, ename="GraderFlag", message="not judged: the notebook broke the channel")
        self._flag(index, collected.get("flags", []))
        if collected.get("tampered_during"):
            return dict(collected, passed=False)
        if not collected.get("passed"):
            what = "ran past its time" if collected.get("timed_out") else f"raised {collected.get('ename')}"
            verdict = (
                f"checked outside your kernel: your code {what} while the grader collected {judge.answer}'s results"
            )
        else:  # a rejection fails the cell, with what was expected; it accuses no one (judges.py)
            verdict = judges.verdict(judge, collected.get("data"))
        if verdict is None:
            return reply
        return dict(reply, passed=False, ename="CheckedOutsideTheKernel", message=verdict, by_test=True)
