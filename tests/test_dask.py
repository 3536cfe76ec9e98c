"""Grading on a real Dask cluster: a `dask scheduler` and two `dask worker`
processes started here on 127.0.0.1 grade a class; the rows equal a `--jobs 1`
run, the student code still runs sandboxed, and a worker killed in the middle
of a task loses no student."""
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import psutil
import pytest

import grader_cases
import submissions
from grader import grade
from tools import course

A = grader_cases.A
BIN = Path(sys.executable).parent
SLOW = "import time\ntime.sleep(6)\n"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _class(folder: Path) -> None:
    wrong = submissions.first_wrong(A)
    nbformat.write(submissions.answered(A), folder / "ana.ipynb")
    nbformat.write(submissions.answered(A, {wrong.answer_id: wrong.code}), folder / "ben.ipynb")
    dies = submissions.answered(A)
    dies.cells.insert(3, nbformat.v4.new_code_cell("import os\nos._exit(3)"))
    nbformat.write(dies, folder / "cai.ipynb")
    (folder / "dee.ipynb").write_text("")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """A scheduler and two workers (each with its nanny), stopped and checked gone afterwards."""
    port = _free_port()
    logs = tmp_path_factory.mktemp("dask-logs")
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}", DASK_DISTRIBUTED__WORKER__DAEMON="False")
    scheduler = subprocess.Popen([BIN / "dask", "scheduler", "--host", "127.0.0.1", "--port", str(port),
                                  "--no-dashboard"], env=env, stdout=open(logs / "scheduler.log", "w"),
                                 stderr=subprocess.STDOUT)
    address = f"tcp://127.0.0.1:{port}"
    workers = [subprocess.Popen([BIN / "dask", "worker", address, "--nthreads", "1", "--nworkers", "1",
                                 "--host", "127.0.0.1", "--no-dashboard", "--name", f"w{i}"], env=env,
                                stdout=open(logs / f"worker{i}.log", "w"), stderr=subprocess.STDOUT)
               for i in range(2)]
    from distributed import Client

    with Client(address, timeout="30s") as client:
        client.wait_for_workers(2, timeout=60)
    processes = [scheduler, *workers]
    started = [psutil.Process(p.pid) for p in processes]
    yield {"address": address, "workers": workers}
    everything = []
    for process in started:
        try:
            everything += [process, *process.children(recursive=True)]
        except psutil.Error:
            pass
    for process in reversed(processes):
        process.terminate()
    for process in processes:
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
    gone, alive = psutil.wait_procs(everything, timeout=10)
    assert alive == [], f"processes left behind by the cluster: {alive}"


def _grade(tmp_path, folder, **options):
    root = tmp_path / "course"
    if not root.exists():
        course.temporary_course(root, [A])
    chosen = grade.Options(A, folder, cell_timeout=20, notebook_timeout=120, interrupt_grace=4, root=root, **options)
    return {row.student_id: row for row in grade.run(chosen)}


def test_rows_on_the_cluster_equal_a_single_job_run(cluster, tmp_path):
    folder = tmp_path / "class"
    folder.mkdir()
    _class(folder)
    started = time.monotonic()
    on_cluster = _grade(tmp_path / "dask", folder, scheduler=cluster["address"], jobs=2)
    cluster_seconds = time.monotonic() - started
    started = time.monotonic()
    single = _grade(tmp_path / "single", folder, jobs=1)
    single_seconds = time.monotonic() - started
    print(f"\nDask (2 workers): {cluster_seconds:.1f} s; --jobs 1: {single_seconds:.1f} s for {len(single)} students")
    assert set(on_cluster) == set(single) == {"ana", "ben", "cai", "dee"}
    for student, row in single.items():
        other = on_cluster[student]
        assert (other.score, other.status, other.detail, other.items) == (row.score, row.status, row.detail, row.items)
    assert single["ana"].score == grader_cases.FULL and single["dee"].status == "invalid"
    assert "the kernel exited with status 3" in single["cai"].detail
    autograded = tmp_path / "dask" / "course" / "autograded" / "ben" / A / f"{A}.ipynb"
    assert autograded.exists(), "the client keeps the autograded notebooks"


def _kill_a_worker_while_it_grades(worker: subprocess.Popen, deadline: float) -> bool:
    """SIGKILL the worker process (its nanny restarts it) once one of its sandboxed kernels runs."""
    nanny = psutil.Process(worker.pid)
    while time.monotonic() < deadline:
        for child in nanny.children():
            try:
                if any(p.name() == "bwrap" for p in child.children(recursive=True)):
                    child.send_signal(signal.SIGKILL)
                    return True
            except psutil.Error:
                continue
        time.sleep(0.2)
    return False


def test_a_worker_that_dies_mid_task_loses_no_student(cluster, tmp_path):
    import threading

    folder = tmp_path / "slow"
    folder.mkdir()
    for student in ("eva", "fay", "gus"):
        nb = submissions.answered(A)
        nb.cells.insert(3, nbformat.v4.new_code_cell(SLOW))
        nbformat.write(nb, folder / f"{student}.ipynb")
    killed = []
    killer = threading.Thread(target=lambda: killed.append(
        _kill_a_worker_while_it_grades(cluster["workers"][0], time.monotonic() + 60)))
    killer.start()
    rows = _grade(tmp_path, folder, scheduler=cluster["address"], jobs=2)
    killer.join()
    assert killed == [True], "the test never caught a worker in the middle of a task"
    assert {s: (r.status, r.score) for s, r in rows.items()} == \
        {s: ("graded", grader_cases.FULL) for s in ("eva", "fay", "gus")}


def test_local_scheduler_starts_its_own_cluster(tmp_path):
    folder = tmp_path / "pair"
    folder.mkdir()
    nbformat.write(submissions.answered(A), folder / "ana.ipynb")
    (folder / "dee.ipynb").write_text("{")
    rows = _grade(tmp_path, folder, scheduler="local", jobs=2)
    assert (rows["ana"].status, rows["ana"].score) == ("graded", grader_cases.FULL)
    assert rows["dee"].status == "invalid" and "not valid JSON" in rows["dee"].detail
