"""*Not graded* outcomes, one part of GuardedExecute (execute/guarded.py).

When the grader cannot run a submission (no sandbox where one is required, a kernel that never
started: execute/kernel_start.py), no student code ran, so the submission is *not graded*, never given a
zero. GuardedExecute raises `GraderFailure` with the cause in one line; nbgrader logs it, and
grading/grade.py (through grading/settings.py) reads the cause back: from `FAILURES` where nbgrader ran in the
grader's own process, else from the log line that carries `FAILURE_MARK`.
"""

from __future__ import annotations

FAILURE_MARK = "not graded: "
# (assignment, student) -> the cause of the last GraderFailure in this process.
FAILURES: dict[tuple[str | None, str | None], str] = {}


class GraderFailure(RuntimeError):
    """The grader could not run a submission (no student code ran): it is *not graded*,
    never a zero. The message is the cause in one line; grading/grade.py finds it in nbgrader's log."""

    def __init__(self, cause: str):
        super().__init__(cause)
        self.cause = cause

    def __str__(self) -> str:
        return f"{FAILURE_MARK}{self.cause}"


def remember(resources: dict | None, failure: GraderFailure) -> None:
    """Keep the cause for the submission that nbgrader's resources name: where nbgrader runs in
    this process (the grader's workers), the cause is read back from here, their log being quiet."""
    info = (resources or {}).get("nbgrader", {})
    FAILURES[(info.get("assignment"), info.get("student"))] = failure.cause
