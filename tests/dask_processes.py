"""A Dask cluster started for a test (`dask scheduler` and `dask worker` processes on
127.0.0.1) and a class graded through the grader's options: shared by test_dask.py and
test_gpu_sandbox.py, kept apart so that pytest-xdist runs the modules side by side."""

import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

import grader_cases
import psutil
from labserver import free_port

from grader.grading import grade
from grader.kernels import template
from tools import course

A = grader_cases.A
BIN = Path(sys.executable).parent


@contextmanager
def dask_cluster(logs: Path, workers: list[list[str]], protocol="tcp", tls: list[str] = ()):
    """`dask scheduler` and one `dask worker` (with its nanny) per entry of `workers` (extra
    arguments), on 127.0.0.1; stopped afterwards, and checked that nothing they started is left."""
    from distributed import Client

    port = free_port()
    address = f"{protocol}://127.0.0.1:{port}"
    env = grader_cases.cli_env(DASK_DISTRIBUTED__WORKER__DAEMON="False")
    # The workers stand for other machines: each starts its own kernel template, as it would
    # there, rather than fork from this run's shared one (conftest.py); test_dask's killed
    # worker is found by the kernels below it.
    env.pop(template.SHARED, None)
    processes = [
        subprocess.Popen(
            [
                BIN / "dask",
                "scheduler",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--protocol",
                protocol,
                "--no-dashboard",
                *tls,
            ],
            env=env,
            stdout=open(logs / "scheduler.log", "w"),
            stderr=subprocess.STDOUT,
        )
    ]
    # Each worker's own Dask folder, where its scratch course lives (and goes with the worker).
    folders = [logs / f"worker{i}-files" for i in range(len(workers))]
    for i, extra in enumerate(workers):
        processes.append(
            subprocess.Popen(
                [
                    BIN / "dask",
                    "worker",
                    address,
                    "--nthreads",
                    "1",
                    "--nworkers",
                    "1",
                    "--host",
                    "127.0.0.1",
                    "--no-dashboard",
                    "--name",
                    f"w{i}",
                    "--local-directory",
                    str(folders[i]),
                    *tls,
                    *extra,
                ],
                env=env,
                stdout=open(logs / f"worker{i}.log", "w"),
                stderr=subprocess.STDOUT,
            )
        )
    started = [psutil.Process(p.pid) for p in processes]
    try:
        with Client(address, timeout="30s") as client:
            client.wait_for_workers(len(workers), timeout=90)
        yield {
            "address": address,
            "workers": processes[1:],
            "files": folders,
        }
    finally:
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
        _, alive = psutil.wait_procs(everything, timeout=15)
        assert alive == [], f"processes left behind by the cluster: {alive}"
        left = [p for folder in folders for p in folder.rglob("course-grader-worker-*")]
        assert left == [], f"scratch courses left behind by the workers: {left}"


def grade_rows(tmp_path, folder, **options):
    """`folder` graded with `options` in a scratch course under `tmp_path`: each student's row."""
    root = tmp_path / "course"
    if not root.exists():
        course.temporary_course(root, [A])
    chosen = grade.Options(A, folder, cell_timeout=20, notebook_timeout=120, interrupt_grace=4, root=root, **options)
    return {row.student_id: row for row in grade.run(chosen)}
