"""The grader's side of the trusted test path, one part of GuardedExecute (execute/guarded.py).

A test cell does not run as the notebook's code: the runner in the kernel (runner/assembly.py) runs it
from the release's source, on the grader's request, and answers with a record the grade is
read from (runner/trusted.py). A judged item's data then goes to its judge outside the kernel
(judges.py). Any other code cell runs as nbclient runs it, and the runner is asked afterwards
whether it saw a hook point changed. Flags name the cell; errors of the student's own cells
are noted so that the tests they break have a cause.

GuardedExecute hands each test cell (`runs_test`) to `TestPath.run_test` instead of nbclient, and
calls `after_cell` after any other code cell; the parts it is given are named in the class.
"""

from __future__ import annotations

from nbclient.exceptions import DeadKernelError

from grader import judges
from grader.execute.cell_limits import Limits
from grader.execute.cell_notes import Notes
from grader.execute.kernel_deaths import Deaths
from grader.runner import trusted


class TestPath:
    """Test cells through the runner, judged items through their judge (see the module doc). One
    a notebook, given the parts it writes to: `notes`, `limits` (the cell's limit, time-outs),
    `deaths` (the cause of a kernel's end); `gone()` says why the kernel is gone (None while it
    runs). `runner` is the channel of the kernel running now (set as each kernel starts)."""

    __test__ = False  # not a pytest class, whatever its name

    def __init__(self, notes: Notes, limits: Limits, deaths: Deaths, imports: dict, gone):
        self.notes, self.limits, self.deaths = notes, limits, deaths
        self.imports, self.gone = imports, gone
        self.runner: trusted.RunnerChannel | None = None
        self._words: frozenset[str] | None = None  # trusted.hidden_words of the notebook, once

    def runs_test(self, cell) -> bool:
        """Whether the cell is a test the runner runs (not nbclient): a test cell that does not
        delete globals, with a runner to run it."""
        return (
            self.runner is not None
            and cell.cell_type == "code"
            and bool(cell.source.strip())
            and trusted.is_test_cell(cell)
            and not trusted.deletes_globals(cell.source)
        )

    def after_cell(self, cell, index) -> None:
        """A code cell nbclient ran: the runner is asked whether it saw a hook point changed, and
        an error of the student's own is noted."""
        if self.runner is None or cell.cell_type != "code" or not cell.source.strip():
            return
        reply = self._request(index, {"op": "check"}, timeout=30)
        if reply is not None:
            self.notes.flag(index, reply["flags"])
        self._note_error(cell, index)

    def _request(self, index, message: dict, timeout: float, late: str = "") -> dict | None:
        """One request to the runner; None when the notebook broke the channel (flagged)."""
        try:
            return self.runner.request(message, timeout, self.gone)
        except trusted.ChannelBroken as exc:
            self.notes.flag(index, [str(exc)])
            return None
        except TimeoutError:
            raise DeadKernelError(late or f"the kernel did not answer within {timeout:.0f} s") from None
        except EOFError as exc:
            self.deaths.cause = str(exc)
            raise DeadKernelError("Kernel died") from None

    def run_test(self, cell, cell_index):
        """A test cell: run by the runner, scored from its record only; its outputs are the record's."""
        # Every function the test defines, sealed (trusted.seal_functions): line numbers below are the result's.
        source = trusted.seal_functions(trusted.python_source(judges.without_judge(cell.source)))
        hidden = trusted.HIDDEN_BEGIN in cell.source
        timeout = self.limits.cell_timeout(cell)
        message = {
            "op": "run",
            "source": trusted.mark_hidden_start(source),
            "imports": self.imports,
            "timeout": timeout,
        }
        # The runner stops a test at `timeout`; one that will not stop costs its kernel after the grace.
        late = self.limits.interrupt_ignored(timeout)
        try:
            reply = self._request(cell_index, message, timeout=timeout + self.limits.interrupt_grace, late=late)
        except DeadKernelError as exc:
            if str(exc) == late:
                self.limits.ignored_interrupt(cell_index, timeout)
            raise
        if reply is not None and reply.get("timed_out"):
            self.limits.timed_out_interrupted(cell_index, timeout)
        if reply is not None and reply.get("truncated"):
            self.limits.output_truncated(cell_index)
        if reply is None:
            reply = {
                "passed": False,
                "ename": "GraderFlag",
                "by_test": True,
                "message": "not run: the notebook broke the grader's channel to its tests",
            }
        self.notes.flag(cell_index, reply.get("flags", []))
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
        return cell

    def _secret_words(self) -> frozenset[str]:
        """trusted.hidden_words of this notebook (its hidden tests are the release's), once a notebook."""
        if self._words is None:
            self._words = trusted.hidden_words([cell.source for cell in self.notes.nb.cells])
        return self._words

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
            for i, cell in enumerate(self.notes.nb.cells[:index])
            if cell.cell_type == "code" and not trusted.is_trusted_cell(cell) and not trusted.is_test_cell(cell)
        ]
        for exact in (True, False):
            for i, cell in reversed(candidates):
                lines = [line.strip() for line in cell.source.splitlines()]
                if (exact and lines[number - 1 : number] == [text]) or (not exact and text in lines):
                    return (
                        f"{self.notes.name(i)}, line {lines.index(text) + 1 if not exact else number}" + f": `{text}`"
                    )
        return shown + " of your code"

    def _note_error(self, cell, index) -> None:
        """An error in a cell of the student's own (an answer that raises after a correct def, say)
        scores nothing by itself: the notes name it, so that the tests it breaks have a cause."""
        if trusted.is_trusted_cell(cell) or trusted.is_test_cell(cell) or index in self.limits.timed_out:
            return
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error":
                message = str(output.get("evalue", "")).strip().split("\n")[0][:80]
                self.notes.problem(
                    index, f"raised {output.get('ename', 'an error')}" + (f": {message}" if message else "")
                )
                return

    def _judge(self, index, judge: judges.Judge, reply: dict, timeout: int) -> dict:
        """The test passed in the kernel; now the judge decides from data (judges.py)."""
        message = {
            "op": "collect",
            "source": trusted.seal_functions(judge.collect),
            "imports": self.imports,
            "timeout": timeout,
        }
        late = self.limits.interrupt_ignored(timeout)
        collected = self._request(index, message, timeout=timeout + self.limits.interrupt_grace, late=late)
        if collected is None:
            return dict(reply, passed=False, ename="GraderFlag", message="not judged: the notebook broke the channel")
        self.notes.flag(index, collected.get("flags", []))
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
