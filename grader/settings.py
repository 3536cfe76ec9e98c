"""What one grading run is told (Options) and what every process that grades sets up the
same way, a local worker or a Dask worker: the course's config with the run's gradebook,
quiet nbgrader, the command line's limits, and why nbgrader could not grade a submission.
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass
from pathlib import Path

from nbgrader.preprocessors import Execute
from traitlets import TraitError

from . import course
from .not_graded import FAILURE_MARK, FAILURES


@dataclass
class Options:
    assignment: str
    submissions: Path
    jobs: int = os.cpu_count() or 1
    cell_timeout: int | None = 60  # None: no limit per cell (the notebook's limit still applies)
    notebook_timeout: int = 600
    sandbox: bool = True
    memory_mb: int = 2048
    interrupt_grace: float = 5  # seconds a kernel has to stop after an interrupt
    root: Path | None = None  # the course folder (its own nbgrader_config.py); None: the current folder
    db_url: str | None = None  # gradebook; None: the course's
    scheduler: str | None = None  # a Dask scheduler's address, or "local"; None: local worker processes
    resources: dict[str, float] | None = None  # Dask worker resources each task needs, e.g. {"GPU": 1}


def quiet_nbgrader() -> None:
    """nbgrader 0.9.6 with SQLAlchemy 2.1 warns on every autograde that a SubmittedAssignment is
    not in the session; the grade is stored all the same, so the warning is noise."""
    warnings.filterwarnings("ignore", message="Object of type <Submitted")


def course_config(options: Options):
    config = course.load_config(options.root)
    if options.db_url:
        config.CourseDirectory.db_url = options.db_url
    return config


class BadSetting(ValueError):
    """A course setting nbgrader itself would refuse: named before anything is graded."""


def course_cell_timeout(config) -> int | None:
    """The course's limit per cell as nbgrader's Execute reads its config (`Execute.timeout`, or
    `ExecutePreprocessor.timeout` it inherits; nbgrader's own 30 s where neither is set). None: no
    limit, as nbclient reads None, 0 and a negative value. BadSetting names a value nbgrader refuses."""
    try:
        timeout = Execute(config=config).timeout
    except TraitError as error:
        raise BadSetting(f"the course's Execute.timeout: {error}") from None
    return timeout if timeout is not None and timeout > 0 else None


def configure_execution(config, options: Options, uid: int) -> None:
    """The grader's command-line limits, on top of the course's config; `uid` is this worker's sandbox user."""
    config.GuardedExecute.timeout = options.cell_timeout
    config.GuardedExecute.notebook_timeout = options.notebook_timeout
    config.GuardedExecute.sandbox = options.sandbox
    config.GuardedExecute.interrupt_grace = options.interrupt_grace
    config.SandboxedKernelManager.uid = uid
    config.SandboxedKernelManager.memory_mb = options.memory_mb


def failure_cause(result: dict, assignment: str | None = None, grader_id: str | None = None) -> str:
    """Why nbgrader could not grade a submission, in one line: the engine's own cause
    (not_graded.GraderFailure) where it gave one, else nbgrader's last log line."""
    if (assignment, grader_id) in FAILURES:
        return FAILURES.pop((assignment, grader_id))
    lines = f"{result.get('log') or ''}\n{result.get('error') or ''}".strip().splitlines()
    for line in reversed(lines):
        if FAILURE_MARK in line:
            return line.split(FAILURE_MARK, 1)[1].strip()
    errors = [
        line.strip()
        for line in lines
        if line.strip().startswith(("OSError", "RuntimeError", "sqlite3", "sqlalchemy", "PermissionError"))
    ]
    return errors[-1] if errors else (lines[-1].strip() if lines else "nbgrader gave no reason")
