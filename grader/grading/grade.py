"""Grade every submission of a folder through nbgrader, in parallel and sandboxed.

nbgrader stays the engine: the course's own config, its gradebook (SQLite by
default, any `db_url` it supports), its sanitizing (restoring locked and hidden
test cells) and its scoring. Around it, this module

- collects a folder of downloads (course/collect.py) into nbgrader's submitted/
  layout, one entry per student, unreadable files included;
- runs the course's engine (pipeline.py: lenient reading, restore, the
  sandboxed GuardedExecute, notes), exactly what nbgrader's own autograde and
  Formgrader run with the course config, so every path gives the same row;
- runs `jobs` long-lived worker processes (grading/parallel.py), each calling nbgrader's
  Python API, so the CLI's start-up is paid once per worker, not once per student.
"""

from __future__ import annotations

import fnmatch
import functools
import logging
import os
import re
import shutil
import sys
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
from nbgrader.api import Gradebook, MissingEntry
from nbgrader.coursedir import CourseDirectory
from nbgrader.utils import parse_utc

from grader.course import collect
from grader.course import nbgrader_course as course
from grader.grading import cluster, parallel
from grader.grading.settings import (  # noqa: F401 (re-exported: the grading run's options and set-up)
    Options,
    Run,
    failure_cause,
    quiet_nbgrader,
    resolve,
    worker_config,
)
from grader.isolation.uids import claim_uid
from grader.kernels import template


@dataclass
class Row:
    student_id: str
    score: float | None = 0.0  # None: not graded (the grader failed; no score is given)
    max_score: float = 0.0
    status: str = "graded"
    detail: str = ""
    flags: str = ""  # tampering the trusted runner saw, with the cell; empty when clean
    grader_id: str = ""
    items: dict[str, float] = field(default_factory=dict)
    needs_manual: float = 0.0


# -- worker processes -------------------------------------------------------------
# A worker's nbgrader API, built on its first task of a run (no pool initializer: grading/parallel.py).
_worker_api: tuple[str, object] | None = None
# What a worker needs, imported once by the fork server the workers come from.
WORKER_PRELOAD = [
    "grader.grading.grade",
    "grader.pipeline",
    "grader.execute.guarded",
    "grader.kernels.template",
    "nbgrader.apps.api",
]


def _start_early(options: Options, context) -> bool:
    """Begin starting the fork server and, where the workers' kernels would come from one, the
    template they will share, without waiting for either; returns whether a template was begun."""
    parallel.start_fork_server(context)
    if not template.kernels_would_fork(sandboxed=options.sandbox):
        return False
    try:
        template.template().spawn_early()
    except OSError:
        pass  # _shared_template tries again
    return True


def _shared_template() -> str | None:
    """The folder of the template _start_early began, once it is ready (None: it did not start;
    each worker's provisioner then tries, and logs why it starts kernels normally)."""
    shared = template.template()
    try:
        shared.ensure_started()
    except (template.TemplateUnavailable, OSError):
        return None
    return shared.folder


def _worker(run_id: str, run: Run, shared_template: str | None):
    """This worker's nbgrader API for the run `run_id`; its kernels run as a sandbox user of its own."""
    global _worker_api
    if _worker_api is not None and _worker_api[0] == run_id:
        return _worker_api[1]
    if shared_template:
        template.adopt(shared_template)
    quiet_nbgrader()
    api = course.api(worker_config(run, uid=claim_uid()))
    # nbgrader logs a false "checksum has changed" for every cell with hidden tests (a warning;
    # tampering is reported by course/restore.py instead); its errors stay, to name a failure's cause.
    api.log.setLevel(logging.ERROR)
    logging.getLogger("traitlets").setLevel(logging.CRITICAL)
    _worker_api = (run_id, api)
    return api


NOT_GRADED = "not graded"
# A run whose first submissions all fail the same way stops: the rest would fail alike.
STOP_AFTER = 3


def _autograde(run_id: str, run: Run, shared_template: str | None, grader_id: str) -> tuple[bool, str]:
    """Run in a worker: grade one submission of the run; (whether nbgrader graded it, why not)."""
    api = _worker(run_id, run, shared_template)
    result = api.autograde(run.assignment, grader_id, force=True, create=True)
    return bool(result["success"]), traceback_cause(result, failure_cause(result, run.assignment, grader_id))


# nbgrader's last word on an error it logged above: never a cause.
SEE_ABOVE = "see the the above traceback"
EXCEPTION_LINE = re.compile(r"^\s*((?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception|Exit|Interrupt|Failure)\b.*)$")


def traceback_cause(result: dict, cause: str) -> str:
    """`cause`, unless it is nbgrader's "Please see the above traceback": then that traceback's
    own last line (the exception and its message), as nbgrader logged it."""
    if SEE_ABOVE not in cause.lower() and "see the above traceback" not in cause.lower():
        return cause
    lines = str(result.get("log") or "").splitlines()
    for line in reversed(lines):
        found = EXCEPTION_LINE.match(line)
        if found and "NbGraderException" not in line:
            return found[1].strip()
    return cause


def graded_metadata(config, assignment: str, grader_id: str) -> dict | None:
    """The reasons the engine recorded (pipeline.py) in the autograded notebooks, or None if there
    is none; its "errors" entry maps each test cell that raised, as (notebook, grade id), to its
    error in one short line.
    For an assignment of several notebooks, each reason names its notebook."""
    coursedir = CourseDirectory(config=config)
    folder = Path(coursedir.format_path(coursedir.autograded_directory, grader_id, assignment))
    paths = sorted(folder.glob("*.ipynb"))
    if not paths:
        return None
    merged: dict = {"invalid": None, "problems": [], "flags": [], "errors": {}}
    for path in paths:
        nb = nbformat.read(path, as_version=4)
        meta = nb.metadata.get("grader", {})
        where = "" if len(paths) == 1 else f"{path.name}: "
        if meta.get("invalid") and len(paths) == 1:
            merged["invalid"] = meta["invalid"]
        merged["problems"] += [where + p for p in meta.get("problems", [])]
        merged["flags"] += [where + f for f in meta.get("flags", [])]
        merged["errors"].update(((path.stem, name), error) for name, error in cell_errors(nb).items())
    return merged


def notebook_names(config, assignment: str) -> list[str]:
    """The notebooks of a registered assignment, as the gradebook lists them (one, most often)."""
    with Gradebook(course.db_url(config)) as gradebook:
        return sorted(nb.name for nb in gradebook.find_assignment(assignment).notebooks)


ERROR_CHARS = 80  # of an error's message in the CSV's detail


def cell_errors(nb) -> dict[str, str]:
    """grade id -> "RuntimeError: Sizes of tensors must match ..." for each graded cell that raised."""
    errors = {}
    for cell in nb.cells:
        name = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
        raised = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
        if name and raised and raised[-1].get("ename") not in ("KernelDied", "NotRun"):  # already in the notes
            lines = str(raised[-1].get("evalue", "")).strip().splitlines()
            message = lines[0] if lines else ""
            if len(message) > ERROR_CHARS or len(lines) > 1:
                message = message[:ERROR_CHARS].rstrip() + " ..."
            errors[name] = f"{raised[-1].get('ename', 'Error')}: {message}" if message else raised[-1].get("ename", "")
    return errors


# -- the whole class ----------------------------------------------------------------
def prepare(run: Run | Options, submissions: list[collect.Submission], registered: bool = False) -> None:
    """Register the assignment, then put each handed-in file, as it is, where nbgrader reads it:
    reading, repairing and running it is the engine's work (pipeline.py), the same on every path."""
    run = resolve(run)
    api = course.api(run.config)
    if not registered:
        course.register(api, run.assignment)
    root = Path(api.coursedir.root)
    for submission in submissions:
        for folder in (api.coursedir.submitted_directory, api.coursedir.autograded_directory):
            shutil.rmtree(root / folder / submission.grader_id / run.assignment, ignore_errors=True)
        if submission.source is None:
            continue
        target = root / api.coursedir.submitted_directory / submission.grader_id / run.assignment
        target.mkdir(parents=True, exist_ok=True)
        for name, source in (submission.sources or {run.assignment: submission.source}).items():
            shutil.copyfile(source, target / f"{name}.ipynb")
        if submission.folder is not None:
            copy_handed_in(submission.folder, target, api.coursedir.ignore)
            note = timestamp_problem(target / "timestamp.txt")
            if note and note not in submission.notes:
                submission.notes.append(note)


def timestamp_problem(path: Path) -> str | None:
    """Why nbgrader will refuse a hand-in's timestamp.txt (its autograde then stops on it), or None:
    the row says so instead of nbgrader's own error about it."""
    if not path.is_file():
        return None
    text = path.read_text(encoding="utf-8", errors="replace").strip()
    try:
        if text:
            parse_utc(text)
    except ValueError:
        return f"timestamp.txt is not a time nbgrader reads ({text[:60]!r}): nbgrader refuses the hand-in"
    return None


def copy_handed_in(folder: Path, target: Path, ignore: list[str]) -> None:
    """The other files of a hand-in (a data file, a helper module, in sub-folders too) into its
    submitted/ folder, as nbgrader's collect leaves them there: every file but notebooks and what
    the course's `CourseDirectory.ignore` names; never a link (it could lead out of the hand-in)."""
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = [d for d in dirnames if not _ignored(d, ignore) and not os.path.islink(os.path.join(dirpath, d))]
        for name in filenames:
            source = Path(dirpath) / name
            if _ignored(name, ignore) or name.endswith(".ipynb") or not source.is_file() or source.is_symlink():
                continue
            destination = target / source.relative_to(folder)
            destination.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, destination)


def _ignored(name: str, patterns: list[str]) -> bool:
    return any(fnmatch.fnmatch(name, pattern) for pattern in patterns)


def _progress(done: int, total: int, started: float) -> None:
    if not sys.stderr.isatty():
        return
    width = 30
    filled = int(width * done / max(total, 1))
    rate = done / max(time.monotonic() - started, 1e-9) * 60
    sys.stderr.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} graded, {rate:.0f}/min")
    if done == total:
        sys.stderr.write("\n")
    sys.stderr.flush()


def run(settings: Run | Options) -> list[Row]:
    """Grade the class `settings` names (Options are resolved here, once); a row a student."""
    quiet_nbgrader()
    run = resolve(settings)
    options, config = run.options, run.config
    context = parallel.worker_context(WORKER_PRELOAD)
    # Both import in the background while the class is collected.
    templated = options.jobs > 1 and not options.scheduler and _start_early(options, context)
    coursedir = CourseDirectory(config=config)
    course.register(course.api(config), options.assignment)
    notebooks = notebook_names(config, options.assignment)
    submissions = collect.collect(options.submissions, options.assignment, notebooks)
    prepare(run, submissions, registered=True)
    to_grade = [s.grader_id for s in submissions if s.source is not None]
    outcome: dict[str, tuple[bool, str]] = {}
    started = time.monotonic()
    _progress(0, len(to_grade), started)
    jobs = max(1, min(options.jobs, len(to_grade)))
    results: Iterator[tuple[str, bool, str]]
    if options.scheduler and to_grade:
        a = options.assignment
        submitted = [(gid, Path(coursedir.format_path(coursedir.submitted_directory, gid, a))) for gid in to_grade]
        results = cluster.run_tasks(run, submitted)
    else:
        shared = _shared_template() if templated else None
        call = functools.partial(_autograde, uuid.uuid4().hex, run, shared)
        each = parallel.run_each(parallel.local_executor(jobs, context), call, to_grade, parallel.one_worker(context))
        results = ((gid, *value) if value else (gid, False, reason) for gid, value, reason in each)
    stopped = False
    try:
        for n, (grader_id, ok, message) in enumerate(results, 1):
            outcome[grader_id] = (ok, message)
            _progress(n, len(to_grade), started)
            causes = {m for done, m in outcome.values() if not done}
            if (
                len(outcome) == STOP_AFTER < len(to_grade)
                and len(causes) == 1
                and not any(done for done, _ in outcome.values())
            ):
                stopped = True
                break
    finally:
        if hasattr(results, "close"):
            results.close()  # stops the workers' queue (grading/parallel.py) or the cluster's tasks
    if stopped:
        cause = next(iter(causes))
        for grader_id in to_grade:
            outcome.setdefault(grader_id, (False, f"{cause} (not tried: the first {STOP_AFTER} failed the same way)"))
    # Nothing for a student to read where the grader failed (a stopped worker may leave a partial file).
    for grader_id, (ok, _) in outcome.items():
        if not ok:
            shutil.rmtree(
                coursedir.format_path(coursedir.autograded_directory, grader_id, options.assignment), ignore_errors=True
            )
    return rows(run, submissions, outcome)


def autograded_cells(assignment) -> list[tuple[str, str, float]]:
    """(notebook, grade id, points) of each autograded test cell of a gradebook assignment: a graded
    code cell that is not also an answer (nbgrader's "Manually graded answer", graded by hand)."""
    return [
        (nb.name, cell.name, cell.max_score)
        for nb in sorted(assignment.notebooks, key=lambda nb: nb.name)
        for cell in nb.grade_cells
        if cell.cell_type == "code" and cell.name not in {answer.name for answer in nb.solution_cells}
    ]


def item_keys(cells: list[tuple[str, str, float]]) -> list[str]:
    """The key of each (notebook, grade id, points), in the CSV's columns and everywhere a result is
    named: the grade id, or `<notebook>:<grade id>` where two notebooks of the assignment share it
    (nbgrader's grade ids are unique only within a notebook). One notebook: the grade ids as they are."""
    count = Counter(name for _, name, _ in cells)
    return [f"{notebook}:{name}" if count[name] > 1 else name for notebook, name, _ in cells]


def keyed_cells(assignment) -> list[tuple[str, str, str, float]]:
    """(key, notebook, grade id, points) of each autograded test cell (item_keys)."""
    cells = autograded_cells(assignment)
    return [(key, *cell) for key, cell in zip(item_keys(cells), cells, strict=True)]


def rows(settings: Run | Options, submissions, outcome) -> list[Row]:
    """A row a submission: `outcome` ({grader id: (graded, why not)}), the gradebook's grades and
    the engine's notes."""
    run = resolve(settings)
    assignment_name, config = run.assignment, run.config
    result = []
    with Gradebook(course.db_url(config)) as gradebook:
        assignment = gradebook.find_assignment(assignment_name)
        cells = keyed_cells(assignment)
        tests = [(key, points) for key, _, _, points in cells]
        max_auto = sum(points for _, points in tests)
        for submission in submissions:
            row = Row(submission.student, max_score=max_auto, grader_id=submission.grader_id)
            details = list(submission.notes)
            engine = (
                None if submission.source is None else graded_metadata(config, assignment_name, submission.grader_id)
            )
            if submission.source is None:
                row.status = "invalid"
                details.insert(0, submission.problem)
            elif engine is not None and engine.get("invalid"):
                row.status = "invalid"
                details.insert(0, engine["invalid"])
            else:
                ok, message = outcome.get(submission.grader_id, (engine is not None, "not autograded"))
                details += [p for p in (engine or {}).get("problems", []) if p not in details]
                try:
                    graded = gradebook.find_submission(assignment_name, submission.grader_id)
                except MissingEntry:
                    graded = None
                if not ok or graded is None:
                    # The grader failed, not the student: no score, and the cause, loudly.
                    row.status, row.score = NOT_GRADED, None
                    details.insert(0, message if not ok else "nbgrader kept no grades for it")
                else:
                    for key, notebook, name, _ in cells:
                        grade = gradebook.find_grade(name, notebook, assignment_name, submission.grader_id)
                        row.items[key] = grade.score
                    row.score = sum(row.items.values())
                    row.needs_manual = course.points_to_grade_by_hand(graded)
                    errors = (engine or {}).get("errors", {})
                    failed = [
                        f"{key} ({errors[notebook, name]})" if errors.get((notebook, name)) else key
                        for key, notebook, name, points in cells
                        if row.items[key] < points
                    ]
                    if failed:
                        details.append("failed: " + ", ".join(failed))
                    row.flags = "; ".join((engine or {}).get("flags", []))
                    if row.flags:
                        row.status = "flagged"
            row.detail = "; ".join(details)
            row.items = row.items or {name: 0.0 for name, _ in tests}
            result.append(row)
    return result


def not_graded_summary(rows_: list[Row]) -> str | None:
    """ "3 of 40 not graded: kernel did not start (...)", or None when every submission was graded."""
    failed = [row for row in rows_ if row.status == NOT_GRADED]
    if not failed:
        return None
    causes: dict[str, int] = {}
    for row in failed:
        cause = row.detail.split("; ")[0].split(" (not tried:")[0]
        causes[cause] = causes.get(cause, 0) + 1
    listed = "; ".join(cause if n == len(failed) else f"{cause} ({n})" for cause, n in causes.items())
    return f"{len(failed)} of {len(rows_)} not graded: {listed}"


def describe(rows_: list[Row]) -> str:
    counts: dict[str, int] = {}
    for row in rows_:
        counts[row.status] = counts.get(row.status, 0) + 1
    return ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))
