"""nbgrader's Execute step, hardened for untrusted notebooks: `GuardedExecute`.

nbgrader drops a submission whose kernel dies ("Removing failed assignment"), lets a cell that
ignores SIGINT burn the timeout of every later cell, and keeps all output in memory however much
a cell prints. GuardedExecute instead runs each submission in the sandbox, under a time limit
for the notebook as well as for each cell, grades a kernel's death instead of dropping the
submission, caps each cell's output, stops what a cell left running, and says *not graded*
(never a zero) where the grader itself failed. Each concern is one part, in a module of its own
(listed in the class's docstring), as nbgrader's Autograde lists its preprocessors; the class
itself runs one notebook through them.

The reasons are also written into the notebook's metadata (`metadata.grader.problems`, see
pipeline.py) for the rows and the report. Its options are `c.GuardedExecute.*` in a course's
nbgrader_config.py (docs/grading.md), wherever the part that reads them lives.
"""

from __future__ import annotations

import shutil

from nbgrader.preprocessors import Execute

from . import trusted
from .cell_limits import CellLimits
from .cell_notes import CellNotes, error_output
from .kernel_deaths import KernelDeaths
from .kernel_start import EXIT_GUARD, EXIT_STATUS, KernelStart
from .not_graded import FAILURE_MARK, FAILURES, GraderFailure, remember
from .stray_processes import FORK_GUARD, StrayProcesses
from .test_path import TrustedTestPath

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


class GuardedExecute(KernelDeaths, CellLimits, KernelStart, StrayProcesses, CellNotes, TrustedTestPath, Execute):
    """nbgrader's Execute, one part per concern (each an Execute, or a mixin, of its own module):

    - `KernelStart` (kernel_start.py): the grader's kernel spec, the sandbox or not
      (`sandbox`, `trusted_student_code`), the scratch folder, the start-up lines (`preload`, the
      fork and exit guards, the runner's boot line), and failed starts tried again
      (`start_retries`);
    - `CellLimits` (cell_limits.py): the notebook's and each cell's time limit
      (`notebook_timeout`, nbgrader's `timeout`), the interrupt and its grace
      (`interrupt_grace`), the shorter limit after a time-out (`limit_after_timeout`), the
      output cap (`max_output_bytes`);
    - `KernelDeaths` (kernel_deaths.py): a kernel's death marks its cell, fresh kernels replay
      the answers and set-up cells before it and grade the rest (`max_restarts`), cells past
      the last fresh kernel are marked as not run;
    - `StrayProcesses` (stray_processes.py): what a cell left running below the kernel is
      stopped when the cell ends;
    - `CellNotes` (cell_notes.py): a cell's name as the student knows it, the run's problems and
      flags, written into `metadata.grader`;
    - `TrustedTestPath` (test_path.py): test cells run by the trusted runner, judged items
      decided by their judge;
    - not_graded.py: `GraderFailure`, the submission the grader could not run (*not graded*).

    A cell runs through `KernelDeaths.preprocess_cell` (skip or replay), then
    `StrayProcesses.preprocess_cell`, then nbgrader's Execute, whose `execute_cell` is
    `TrustedTestPath`'s. TrustedTestPath comes after the parts that supply what it asks for
    (`_cell_timeout`, `_name`, `_kernel_gone`).
    """

    def preprocess(self, nb, resources=None, km=None):
        try:
            return self._grade_notebook(nb, resources, km)
        except GraderFailure as failure:
            remember(resources, failure)
            raise

    def _grade_notebook(self, nb, resources, km):
        """One notebook: its notes and clock started, its kernels run in a scratch folder
        removed afterwards, its notes written into its metadata."""
        self._start_notes()
        # Before anything else: what the last notebook's kernels did (cells that killed one) must
        # not decide this one's "not run" marks, an unreadable submission's included.
        self._start_deaths()
        meta = nb.metadata.setdefault("grader", {})
        if meta.get("invalid"):
            # Nothing of the student's to run: every graded test scores zero.
            self._current = None
            self._mark_not_run(nb, "the submission could not be read", note=False)
            return nb, resources
        scratch, resources = self._open_scratch(resources, self._use_sandbox())
        self._imports = trusted.release_imports(nb)
        self._start_clock()
        try:
            nb, resources = self._run_kernels(nb, resources, km)
            self._keep_written()
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        self._save_notes(nb)
        return nb, resources
