"""Grading on a Dask cluster: `python -m grader grade A --submissions DIR --scheduler ADDRESS|local`.

The client (the instructor's machine) collects the submissions, sends each one
to a worker of a running `dask scheduler` (or of a LocalCluster for
`--scheduler local`), and alone writes the gradebook and the CSV. A task:

- keeps, per worker and assignment, a private scratch course built from the
  course files the client sent (config, source and released notebook) and the
  run's settings as the client resolved them (settings.Run), with a gradebook of
  its own that nothing else reads;
- grades the one submission (every notebook of the assignment, with the files handed in
  beside them) there with the course's engine (pipeline.py), so
  the student's code runs in the bubblewrap sandbox a kernel start creates,
  never in the worker process itself;
- returns the autograded folder: the notebooks and every other file nbgrader
  left there (the hand-in's files, what the notebook wrote). The client stores
  them in its own autograded/ folder and records the scores with nbgrader's own
  SaveAutoGrades step, exactly as a local autograde does.

A worker that dies mid-task (its nanny starts a new one) does not lose the
student: the scheduler runs the task again elsewhere (Dask's
`distributed.scheduler.allowed-failures` times); a task that raises is retried
`RETRIES` times; a task that still fails gives that student a row with the
reason. `resources` (e.g. {"GPU": 1}) send each task only to workers started
with `--resources GPU=1`. A tls:// scheduler is reached with the certificates
of Dask's configuration (distributed.comm.tls.*).
"""

from __future__ import annotations

import atexit
import functools
import hashlib
import shutil
import tempfile
from dataclasses import replace
from pathlib import Path

import nbformat
from nbgrader.api import Gradebook
from nbgrader.converters import Autograde
from nbgrader.coursedir import CourseDirectory
from nbgrader.preprocessors import AssignLatePenalties, SaveAutoGrades

from grader.course import nbgrader_course as course
from grader.grading import parallel, settings
from grader.isolation.uids import claim_uid

RETRIES = 2

_worker_state: dict = {}


def course_files(config, assignment: str) -> dict[str, bytes]:
    """What a worker needs to grade `assignment`: the course's config, and the assignment's source
    and release folders (every notebook of it, and the files its notebooks read beside them)."""

    coursedir = CourseDirectory(config=config)
    root = Path(coursedir.root)
    files = {"nbgrader_config.py": (root / "nbgrader_config.py").read_bytes()}
    # Named as the course's own config names its folders, which the worker reads again.
    for kind in (coursedir.source_directory, coursedir.release_directory):
        folder = Path(coursedir.format_path(kind, ".", assignment))
        for path in sorted(folder.rglob("*")):
            if path.is_file() and ".ipynb_checkpoints" not in path.parts:
                files[f"{kind}/{assignment}/{path.relative_to(folder).as_posix()}"] = path.read_bytes()
    return files


def _worker_folder() -> str | None:
    """The local directory of the Dask worker this runs on; None outside a worker."""
    try:
        from distributed import get_worker
    except ImportError:
        return None
    try:
        return get_worker().local_directory
    except ValueError:  # not on a worker
        return None


def _scratch_api(files: dict[str, bytes], run: settings.Run):
    """This worker's private course for the run's assignment, made once per set of course files:
    the run's config (read once, on the client) with this worker's folders and sandbox user."""
    assignment = run.assignment

    key = hashlib.sha256(b"".join(files[name] for name in sorted(files))).hexdigest()[:16]
    cached = _worker_state.get(("course", assignment))
    if cached and cached[0] == key:
        return cached[1]
    if cached:  # the course changed since: its old copy is of no use
        shutil.rmtree(cached[1].coursedir.root, ignore_errors=True)
    # In the Dask worker's own folder, which Dask removes with the worker (and which the next
    # worker on the machine purges when a killed one could not): atexit alone leaked a course
    # in /tmp for every worker that was killed or stopped by its nanny.
    root = Path(tempfile.mkdtemp(prefix="course-grader-worker-", dir=_worker_folder()))
    atexit.register(shutil.rmtree, root, True)
    for name, data in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)
    settings.quiet_nbgrader()
    # A sandbox uid no other grading process on this machine uses (a local grading run,
    # Formgrader, another worker), held while this worker lives.
    config = settings.worker_config(run, claim_uid(), root=str(root), db_url=f"sqlite:///{root / 'gradebook.db'}")
    config.Exchange.root = str(root / ".exchange")
    api = course.api(config)
    course.register(api, assignment)
    _worker_state[("course", assignment)] = (key, api)
    return api


def grade_one(files: dict[str, bytes], run: settings.Run, grader_id: str, submission: dict[str, bytes]):
    """Run on a Dask worker: grade one submission (its hand-in's files, by path in the hand-in);
    returns (ok, message, {path in autograded/: its bytes} or None: the notebooks nbgrader graded
    and every other file it left there, the hand-in's and what the notebook wrote, as on a local run)."""
    api = _scratch_api(files, run)
    assignment = run.assignment
    root = Path(api.coursedir.root)
    folders = [
        root / api.coursedir.submitted_directory / grader_id,
        root / api.coursedir.autograded_directory / grader_id,
    ]
    target = folders[0] / assignment
    target.mkdir(parents=True, exist_ok=True)
    for name, data in submission.items():
        (target / name).parent.mkdir(parents=True, exist_ok=True)
        (target / name).write_bytes(data)
    try:
        result = api.autograde(assignment, grader_id, force=True, create=True)
        graded = hand_in_files(folders[1] / assignment) if (folders[1] / assignment).is_dir() else {}
        if not any(name.endswith(".ipynb") and "/" not in name for name in graded):
            graded = {}  # no notebook graded: nothing to record
        return bool(result["success"]), settings.failure_cause(result, assignment, grader_id), graded or None
    finally:
        for folder in folders:
            shutil.rmtree(folder, ignore_errors=True)


def grade_task(files: dict[str, bytes], run: settings.Run, handed_in: tuple[str, dict[str, bytes]]):
    """A cluster task (parallel.run_each's call): grade_one for a (grader_id, {file path: bytes}) pair."""
    grader_id, submission = handed_in
    return grade_one(files, run, grader_id, submission)


def hand_in_files(folder: Path) -> dict[str, bytes]:
    """Every file of a submitted folder by its path in it (sub-folders too: a data folder, a
    package), as grade.prepare put them there; links were never copied in."""
    return {
        path.relative_to(folder).as_posix(): path.read_bytes()
        for path in sorted(folder.rglob("*"))
        if path.is_file() and not path.is_symlink()
    }


def record(config, assignment: str, grader_id: str, graded: dict[str, bytes]) -> None:
    """Store a worker's autograded folder in the client's course as nbgrader's autograde leaves
    it: the submission with its timestamp (the client's submitted/ folder has the hand-in's
    timestamp.txt), each notebook's grades (SaveAutoGrades) and late penalty (AssignLatePenalties),
    zeros for a notebook the student left out, and the folder's permissions."""

    coursedir = CourseDirectory(config=config)
    folder = Path(coursedir.format_path(coursedir.autograded_directory, grader_id, assignment))
    submitted = Path(coursedir.format_path(coursedir.submitted_directory, grader_id, assignment))
    folder.mkdir(parents=True, exist_ok=True)
    try:
        timestamp = coursedir.get_existing_timestamp(str(submitted))
    except AttributeError:  # nbgrader's own error on a timestamp that is no time (grade.timestamp_problem)
        timestamp = None
    with Gradebook(coursedir.db_url, coursedir.course_id) as gradebook:
        gradebook.update_or_create_student(grader_id)
        gradebook.update_or_create_submission(assignment, grader_id, **({"timestamp": timestamp} if timestamp else {}))
    for name, data in graded.items():
        target = (folder / name).resolve()
        if not target.is_relative_to(folder.resolve()):
            continue  # never outside the student's folder (hand_in_files gives relative paths)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        if "/" in name or not name.endswith(".ipynb"):
            continue
        nb = nbformat.reads(data.decode("utf-8"), as_version=4)
        resources = {
            "nbgrader": {
                "assignment": assignment,
                "notebook": name.removesuffix(".ipynb"),
                "student": grader_id,
                "db_url": coursedir.db_url,
            }
        }
        SaveAutoGrades(config=config).preprocess(nb, resources)
        AssignLatePenalties(config=config).preprocess(nb, resources)
    with Gradebook(coursedir.db_url, coursedir.course_id) as gradebook:
        for notebook in gradebook.find_assignment(assignment).notebooks:
            if not (submitted / f"{notebook.name}.ipynb").exists():
                for grade in gradebook.find_submission_notebook(notebook.name, assignment, grader_id).grades:
                    grade.auto_score, grade.needs_manual_grade = 0, False
        gradebook.db.commit()
    Autograde(coursedir=coursedir, config=config).set_permissions(assignment, grader_id)


class ClusterUnusable(RuntimeError):
    """The Dask cluster cannot grade this class (unreachable, or no worker offers what tasks need)."""


def parse_resources(text: str) -> dict[str, float]:
    """'GPU=1,MEM=2e9' (or space-separated) -> {'GPU': 1.0, 'MEM': 2e9}, as `dask worker --resources` reads it."""
    resources = {}
    for part in text.replace(",", " ").split():
        name, sep, amount = part.partition("=")
        try:
            resources[name.strip()] = float(amount)
        except ValueError:
            sep = ""
        if not sep or not name.strip() or resources.get(name.strip(), 0) <= 0:
            raise ValueError(f"--resources {text!r}: write NAME=N with N > 0, e.g. GPU=1")
    return resources


def connect(address: str, jobs: int, resources: dict[str, float] | None = None):
    """A Dask client: to the scheduler at `address`, or to a new LocalCluster for 'local'.
    TLS (a tls:// address) takes its certificates from Dask's configuration."""
    from distributed import Client, LocalCluster

    if address == "local":
        # One single-threaded worker process per job, reachable only from this machine,
        # without a dashboard. The scheduler's health/metrics server still listens: on a
        # free loopback port, not on 8787, which another cluster may hold.
        cluster = LocalCluster(
            n_workers=jobs,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            dashboard_address=None,
            resources=resources,
            scheduler_kwargs={"dashboard_address": "127.0.0.1:0"},
        )
        return Client(cluster), cluster
    try:
        return Client(address, timeout="30s"), None
    except (OSError, TimeoutError) as error:
        raise ClusterUnusable(f"no Dask scheduler answered at {address}: {error}") from error


def _check_workers(client, resources: dict[str, float] | None) -> None:
    """Refuse at once, instead of waiting forever, when no worker can run the tasks."""
    client.wait_for_workers(1, timeout=60)
    if resources:
        offered = [w.get("resources", {}) for w in client.scheduler_info()["workers"].values()]
        if not any(all(r.get(k, 0) >= v for k, v in resources.items()) for r in offered):
            raise ClusterUnusable(
                f"no worker of the scheduler offers {resources}: start them with "
                "`dask worker ... --resources " + " ".join(f"{k}={v:g}" for k, v in resources.items()) + "`"
            )


def run_tasks(run: settings.Run, tasks: list[tuple[str, Path]]):
    """Grade (grader_id, submitted folder) pairs on the cluster; yields (grader_id, ok, message) as they finish.
    The same loop as local grading (grading/parallel.py), on the client's executor."""
    options, config = run.options, run.config
    files = course_files(config, options.assignment)
    client, cluster = connect(options.scheduler, options.jobs, options.resources)
    try:
        try:
            _check_workers(client, options.resources)
        except TimeoutError as error:
            raise ClusterUnusable(f"the Dask scheduler at {options.scheduler} has no workers") from error
        # pure=False: a key of its own for each task of each run, on a scheduler other runs may share.
        executor = client.get_executor(retries=RETRIES, pure=False, resources=options.resources)
        call = functools.partial(grade_task, files, replace(run, options=replace(options, scheduler=None)))
        handed_in = [(grader_id, hand_in_files(folder)) for grader_id, folder in tasks]
        for (grader_id, _), value, reason in parallel.run_each(executor, call, handed_in):
            if value is None:  # the task failed on every try, or its workers kept dying
                yield grader_id, False, f"grading failed on the cluster: {reason}"
                continue
            ok, message, graded = value
            if graded is not None:
                record(config, options.assignment, grader_id, graded)
            yield grader_id, ok and graded is not None, message
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
