"""A grading run's settings, resolved once: what the command line said (Options), read with the
course's config into one value (Run) that everything after reads: the local workers, the Dask
workers, the rows. Also why nbgrader could not grade a submission, in one line.

The CLI (`python -m grader grade`) resolves at its start, so a setting nbgrader would refuse
is named before anything is graded; `grade.run` resolves Options it is given directly (a test,
a script). Formgrader's path needs none of this: nbgrader reads the course's config itself,
and the course's nbgrader_config.py calls `pipeline.use_safe_autograde`.
"""

from __future__ import annotations

import copy
import dataclasses
import os
import warnings
from dataclasses import dataclass
from pathlib import Path

from nbgrader.preprocessors import Execute
from traitlets import TraitError
from traitlets.config import Config

from grader import pipeline
from grader.course import nbgrader_course as course
from grader.execute.not_graded import FAILURE_MARK, FAILURES

# Options.cell_timeout: the course's own limit per cell, as nbgrader reads its config.
COURSE_LIMIT = "course"


@dataclass(frozen=True)
class Options:
    """What one grading run is told (the command line's words)."""

    assignment: str
    submissions: Path
    jobs: int = os.cpu_count() or 1
    # Seconds; None: no limit per cell (the notebook's limit still applies); COURSE_LIMIT: the course's.
    cell_timeout: int | None | str = 60
    notebook_timeout: int = 600
    sandbox: bool = True
    memory_mb: int = 2048
    interrupt_grace: float = 5  # seconds a kernel has to stop after an interrupt
    root: Path | None = None  # the course folder (its own nbgrader_config.py); None: the current folder
    db_url: str | None = None  # gradebook; None: the course's
    scheduler: str | None = None  # a Dask scheduler's address, or "local"; None: local worker processes
    resources: dict[str, float] | None = None  # Dask worker resources each task needs, e.g. {"GPU": 1}


@dataclass(frozen=True)
class Run:
    """A grading run, resolved: its options (the cell limit a number or None, never COURSE_LIMIT)
    and the course's config with the run's gradebook, the safe engine and the run's limits on top.
    A worker takes a copy of `config` and adds only its own sandbox user (worker_config)."""

    options: Options
    config: Config

    @property
    def assignment(self) -> str:
        return self.options.assignment


class BadSetting(ValueError):
    """A course setting nbgrader itself would refuse: named before anything is graded."""


def resolve(options: Options | Run) -> Run:
    """The run's one value: the course's config read once, the limit per cell decided (BadSetting
    names a course value nbgrader refuses), the engine and the limits set. A Run is returned as it is."""
    if isinstance(options, Run):
        return options
    config = course.load_config(options.root, options.db_url)
    if options.cell_timeout == COURSE_LIMIT:
        options = dataclasses.replace(options, cell_timeout=course_cell_timeout(config))
    # The course's own engine, as nbgrader's CLI and Formgrader run it; --no-sandbox is the
    # explicit statement that this class's code is trusted.
    pipeline.use_safe_autograde(config, trusted=not options.sandbox)
    config.GuardedExecute.timeout = options.cell_timeout
    config.GuardedExecute.notebook_timeout = options.notebook_timeout
    config.GuardedExecute.sandbox = options.sandbox
    config.GuardedExecute.interrupt_grace = options.interrupt_grace
    config.SandboxedKernelManager.memory_mb = options.memory_mb
    return Run(options, config)


def worker_config(run: Run, uid: int, **course_directory) -> Config:
    """A worker's copy of the run's config: its kernels run as sandbox user `uid`; a Dask worker
    also names its own scratch course (`root=`, `db_url=`: CourseDirectory settings)."""
    config = copy.deepcopy(run.config)
    config.SandboxedKernelManager.uid = uid
    for name, value in course_directory.items():
        config.CourseDirectory[name] = value
    return config


def quiet_nbgrader() -> None:
    """nbgrader 0.9.6 with SQLAlchemy 2.1 warns on every autograde that a SubmittedAssignment is
    not in the session; the grade is stored all the same, so the warning is noise."""
    warnings.filterwarnings("ignore", message="Object of type <Submitted")


def course_cell_timeout(config) -> int | None:
    """The course's limit per cell as nbgrader's Execute reads its config (`Execute.timeout`, or
    `ExecutePreprocessor.timeout` it inherits; nbgrader's own 30 s where neither is set). None: no
    limit, as nbclient reads None, 0 and a negative value. BadSetting names a value nbgrader refuses."""
    try:
        timeout = Execute(config=config).timeout
    except TraitError as error:
        raise BadSetting(f"the course's Execute.timeout: {error}") from None
    return timeout if timeout is not None and timeout > 0 else None


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
