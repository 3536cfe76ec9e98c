"""Grading on a real Dask cluster: a `dask scheduler` and `dask worker`
processes started here on 127.0.0.1 grade a class; the rows equal a `--jobs 1`
run, the student code still runs sandboxed, a worker killed in the middle of a
task loses no student, a task asking for a resource no worker offers is refused
at once, and every process is gone afterwards. `--scheduler local`:
test_not_graded_dask.py; TLS with a GPU worker: test_gpu_sandbox.py."""

import subprocess
import threading
import time
from pathlib import Path

import cheats
import grader_cases
import nbformat
import psutil
import pytest
import submissions
from dask_processes import dask_cluster, grade_rows
from nbgrader_docs_course import check_the_documentation_course

from grader.grading.cluster import ClusterUnusable
from grader.isolation import uids

pytestmark = [pytest.mark.integration, pytest.mark.sandbox]

A = grader_cases.A
SLOW = "import time\ntime.sleep(6)\n"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """A scheduler and two plain workers."""
    with dask_cluster(tmp_path_factory.mktemp("dask-logs"), [[], []]) as started:
        yield started


def _class(folder: Path) -> None:
    """The standard kit (right, blank, one wrong), a kernel that dies, and an empty file."""
    folder.mkdir()
    for submission in submissions.standard(A):
        nbformat.write(submission.notebook, folder / f"{submission.student}.ipynb")
    dies = submissions.answered(A)
    dies.cells.insert(3, nbformat.v4.new_code_cell("import os\nos._exit(3)"))
    nbformat.write(dies, folder / "dies.ipynb")
    (folder / "empty.ipynb").write_text("")
    # A forger from the cheat corpus: the same score and flag on the cluster.
    forger = next(c for c in cheats.CHEATS if c.name == "input_transformers_cleanup")
    nbformat.write(cheats.notebook(forger), folder / "forger.ipynb")


def test_rows_on_the_cluster_equal_a_single_job_run(cluster, tmp_path):
    folder = tmp_path / "class"
    _class(folder)
    on_cluster = grade_rows(tmp_path / "dask", folder, scheduler=cluster["address"], jobs=2)
    assert [p for files in cluster["files"] for p in files.rglob("course-grader-worker-*")], (
        "the workers' scratch courses should live in their own Dask folders (Dask removes those)"
    )
    single = grade_rows(tmp_path / "single", folder, jobs=1)
    assert set(on_cluster) == set(single) == {"correct", "blank", "one_wrong", "dies", "empty", "forger"}
    for student, row in single.items():
        other = on_cluster[student]
        assert (other.score, other.status, other.detail, other.items, other.flags) == (
            row.score,
            row.status,
            row.detail,
            row.items,
            row.flags,
        )
    assert (single["forger"].score, single["forger"].status) == (0, "flagged")
    assert "input transformers" in single["forger"].flags
    for submission in submissions.standard(A):
        assert single[submission.student].score == submission.score
    assert single["empty"].status == "invalid"
    assert "the kernel exited with status 3" in single["dies"].detail
    autograded = tmp_path / "dask" / "course" / "autograded" / "one_wrong" / A / f"{A}.ipynb"
    assert autograded.exists(), "the client keeps the autograded notebooks"


def _sandboxed(process: psutil.Process) -> list[psutil.Process]:
    """The descendants of `process` that run as a sandbox user (student code's kernels)."""
    found = []
    for child in process.children(recursive=True):
        try:
            if child.uids().real >= uids.FIRST_UID:
                found.append(child)
        except psutil.Error:
            continue
    return found


def _kill_a_worker_while_it_grades(worker: subprocess.Popen, deadline: float, left: list) -> bool:
    """SIGKILL the worker process (its nanny starts a new one) once one of its sandboxed
    kernels runs; `left` gets every process the worker had started then."""
    nanny = psutil.Process(worker.pid)
    while time.monotonic() < deadline:
        for child in nanny.children():
            try:
                if _sandboxed(child):
                    left += child.children(recursive=True)
                    child.kill()
                    return True
            except psutil.Error:
                continue
        time.sleep(0.1)
    return False


def test_a_worker_that_dies_mid_task_loses_no_student(cluster, tmp_path):
    folder = tmp_path / "slow"
    folder.mkdir()
    for student in ("eva", "fay", "gus"):
        nb = submissions.answered(A)
        nb.cells.insert(3, nbformat.v4.new_code_cell(SLOW))
        nbformat.write(nb, folder / f"{student}.ipynb")
    killed, left = [], []
    killer = threading.Thread(
        target=lambda: killed.append(_kill_a_worker_while_it_grades(cluster["workers"][0], time.monotonic() + 90, left))
    )
    killer.start()
    rows = grade_rows(tmp_path, folder, scheduler=cluster["address"], jobs=2)
    killer.join()
    assert killed == [True], "the test never caught a worker in the middle of a task"
    assert {s: (r.status, r.score) for s, r in rows.items()} == {
        s: ("graded", grader_cases.FULL) for s in ("eva", "fay", "gus")
    }
    _, alive = psutil.wait_procs(left, timeout=15)
    assert alive == [], f"the killed worker's kernels outlived it: {alive}"


def test_tasks_asking_for_a_resource_no_worker_offers_are_refused_at_once(cluster, tmp_path):
    folder = tmp_path / "one"
    folder.mkdir()
    nbformat.write(submissions.answered(A), folder / "ana.ipynb")
    with pytest.raises(ClusterUnusable, match="--resources GPU=1"):
        grade_rows(tmp_path, folder, scheduler=cluster["address"], jobs=2, resources={"GPU": 1})


def test_an_assignment_of_several_notebooks_grades_on_the_cluster_as_plain_nbgrader(cluster, tmp_path):
    """nbgrader's documentation course (ps1 = problem1 + problem2): each student's two notebooks go
    to a worker as one task and come back graded whole, with plain nbgrader's scores."""
    check_the_documentation_course(tmp_path, "--scheduler", cluster["address"])
