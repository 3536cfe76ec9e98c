"""Grading on a Dask cluster: `python -m grader grade A --submissions DIR --scheduler ADDRESS|local`.

The client (the instructor's machine) collects the submissions, sends each one
to a worker of a running `dask scheduler` (or of a LocalCluster for
`--scheduler local`), and alone writes the gradebook and the CSV. A task:

- keeps, per worker and assignment, a private scratch course built from the
  course files the client sent (config, source and released notebook), with a
  gradebook of its own that nothing else reads;
- grades the one submission there with the course's engine (pipeline.py), so
  the student's code runs in the bubblewrap sandbox a kernel start creates,
  never in the worker process itself;
- returns the autograded notebook. The client stores it in its own
  autograded/ folder and records the scores with nbgrader's own SaveAutoGrades
  step, exactly as a local autograde does.

A worker that dies mid-task (the nanny restarts it) does not lose the
student: the scheduler runs the task again, up to `RETRIES` more times; a task
that still fails gives that student a row with the reason.
"""
from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import tempfile
from dataclasses import replace
from pathlib import Path

import nbformat

RETRIES = 2
SLOTS = 200            # sandbox uids per machine for concurrent Dask workers (after the local jobs' ones)

_worker_state: dict = {}


def course_files(config, assignment: str) -> dict[str, bytes]:
    """What a worker needs to grade `assignment`: the course's config, source and release."""
    from nbgrader.coursedir import CourseDirectory

    coursedir = CourseDirectory(config=config)
    root = Path(coursedir.root)
    notebook = f"{assignment}.ipynb"
    paths = {"nbgrader_config.py": root / "nbgrader_config.py",
             f"solutions/{assignment}/{notebook}":
                 Path(coursedir.format_path(coursedir.source_directory, ".", assignment)) / notebook,
             f"exercises/{assignment}/{notebook}":
                 Path(coursedir.format_path(coursedir.release_directory, ".", assignment)) / notebook}
    return {name: path.read_bytes() for name, path in paths.items()}


def _slot() -> int:
    """A sandbox uid slot held by this worker process for its lifetime (a lock file per slot)."""
    if "slot" not in _worker_state:
        for slot in range(SLOTS):
            handle = open(os.path.join(tempfile.gettempdir(), f"course-grader-slot-{slot}.lock"), "w")
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                handle.close()
                continue
            _worker_state["slot"] = (slot, handle)
            break
        else:
            raise RuntimeError(f"more than {SLOTS} grading workers on this machine")
    return _worker_state["slot"][0]


def _scratch_api(files: dict[str, bytes], assignment: str, options):
    """This worker's private course for `assignment`, made once per set of course files."""
    from . import course, grade, pipeline
    from .sandbox import FIRST_UID

    key = hashlib.sha256(b"".join(files[name] for name in sorted(files))).hexdigest()[:16]
    cached = _worker_state.get(("course", assignment))
    if cached and cached[0] == key:
        return cached[1]
    root = Path(tempfile.mkdtemp(prefix="course-grader-worker-"))
    for name, data in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)
    grade.quiet_nbgrader()
    config = course.load_config(root)
    config.CourseDirectory.root = str(root)
    config.CourseDirectory.db_url = f"sqlite:///{root / 'gradebook.db'}"
    config.Exchange.root = str(root / ".exchange")
    pipeline.use_safe_autograde(config, trusted=not options.sandbox)
    grade.configure_execution(config, options, uid=FIRST_UID + 32 + _slot())
    api = course.api(config)
    course.register(api, assignment)
    _worker_state[("course", assignment)] = (key, api)
    return api


def grade_one(files: dict[str, bytes], assignment: str, grader_id: str, submission: bytes, options):
    """Run on a Dask worker: grade one submission; returns (ok, message, autograded notebook JSON or None)."""
    api = _scratch_api(files, assignment, options)
    root = Path(api.coursedir.root)
    folders = [root / api.coursedir.submitted_directory / grader_id, root / api.coursedir.autograded_directory / grader_id]
    target = folders[0] / assignment
    target.mkdir(parents=True, exist_ok=True)
    (target / f"{assignment}.ipynb").write_bytes(submission)
    try:
        result = api.autograde(assignment, grader_id, force=True, create=True)
        path = folders[1] / assignment / f"{assignment}.ipynb"
        log = (result.get("error") or result.get("log") or "").strip().splitlines()
        text = path.read_text(encoding="utf-8") if path.exists() else None
        return bool(result["success"]), (log[-1] if log else ""), text
    finally:
        for folder in folders:
            shutil.rmtree(folder, ignore_errors=True)


def record(config, assignment: str, grader_id: str, text: str) -> None:
    """Store a worker's autograded notebook in the client's course and gradebook (nbgrader's SaveAutoGrades)."""
    from nbgrader.api import Gradebook
    from nbgrader.coursedir import CourseDirectory
    from nbgrader.preprocessors import SaveAutoGrades

    coursedir = CourseDirectory(config=config)
    nb = nbformat.reads(text, as_version=4)
    folder = Path(coursedir.format_path(coursedir.autograded_directory, grader_id, assignment))
    folder.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, folder / f"{assignment}.ipynb")
    with Gradebook(coursedir.db_url, coursedir.course_id) as gradebook:
        gradebook.update_or_create_student(grader_id)
        gradebook.update_or_create_submission(assignment, grader_id)
    resources = {"nbgrader": {"assignment": assignment, "notebook": assignment, "student": grader_id,
                              "db_url": coursedir.db_url}}
    SaveAutoGrades(config=config).preprocess(nb, resources)


def connect(address: str, jobs: int):
    """A Dask client: to the scheduler at `address`, or to a new LocalCluster for 'local'."""
    from distributed import Client, LocalCluster

    if address == "local":
        cluster = LocalCluster(n_workers=jobs, threads_per_worker=1, processes=True, host="127.0.0.1",
                               dashboard_address="127.0.0.1:0")  # never a fixed, shared port
        return Client(cluster), cluster
    return Client(address, timeout="30s"), None


def run_tasks(options, config, tasks: list[tuple[str, Path]]):
    """Grade (grader_id, file) pairs on the cluster; yields (grader_id, ok, message) as they finish."""
    from distributed import as_completed

    files = course_files(config, options.assignment)
    client, cluster = connect(options.scheduler, options.jobs)
    try:
        futures = {}
        for grader_id, path in tasks:
            future = client.submit(grade_one, files, options.assignment, grader_id, path.read_bytes(),
                                   replace(options, scheduler=None), key=f"grade-{options.assignment}-{grader_id}",
                                   retries=RETRIES, pure=False)
            futures[future] = grader_id
        for future in as_completed(futures):
            grader_id = futures[future]
            try:
                ok, message, text = future.result()
            except Exception as error:  # the task failed on every try, or its workers kept dying
                yield grader_id, False, f"grading failed on the cluster: {type(error).__name__}: {error}"
                continue
            if text is not None:
                record(config, options.assignment, grader_id, text)
            yield grader_id, ok and text is not None, message
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
