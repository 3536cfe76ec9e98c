"""Dask deployments other than a plain scheduler with workers (kept apart from
test_dask.py so that pytest-xdist runs them beside its shared cluster): TLS
between every node with a worker offering `--resources GPU=1`, as docs/cluster.md
describes, and `--scheduler local`."""

import subprocess

import grader_cases
import nbformat
import pytest
import submissions
from dask_processes import dask_cluster, grade_rows

pytestmark = [pytest.mark.integration, pytest.mark.sandbox]

A = grader_cases.A


def test_tls_cluster_with_a_gpu_worker(tmp_path):
    """Scheduler, worker and client talk TLS only (certificates as a real deployment would hand
    them out); a task asking for GPU=1 runs on the worker started with `--resources GPU=1`."""
    import dask
    from distributed import Client

    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-keyout",
            key,
            "-out",
            cert,
            "-subj",
            "/CN=course-grader-test",
        ],
        check=True,
        capture_output=True,
    )
    tls = ["--tls-ca-file", str(cert), "--tls-cert", str(cert), "--tls-key", str(key)]
    folder = tmp_path / "pair"
    folder.mkdir()
    nbformat.write(submissions.answered(A), folder / "ana.ipynb")
    (folder / "dee.ipynb").write_text("{")
    logs = tmp_path / "logs"
    logs.mkdir()
    client_tls = {
        "distributed.comm.tls.ca-file": str(cert),
        "distributed.comm.tls.client.cert": str(cert),
        "distributed.comm.tls.client.key": str(key),
        "distributed.comm.require-encryption": True,
    }
    with (
        dask.config.set(client_tls),
        dask_cluster(logs, [["--resources", "GPU=1"]], protocol="tls", tls=tls) as started,
    ):
        with dask.config.set({"distributed.comm.require-encryption": False}), pytest.raises((OSError, TimeoutError)):
            Client(started["address"].replace("tls://", "tcp://"), timeout="5s")  # nothing answers without TLS
        rows = grade_rows(tmp_path, folder, scheduler=started["address"], jobs=1, resources={"GPU": 1})
    assert (rows["ana"].status, rows["ana"].score) == ("graded", grader_cases.FULL)
    assert rows["dee"].status == "invalid" and "not valid JSON" in rows["dee"].detail


def test_local_scheduler_starts_its_own_cluster(tmp_path):
    folder = tmp_path / "pair"
    folder.mkdir()
    nbformat.write(submissions.answered(A), folder / "ana.ipynb")
    (folder / "dee.ipynb").write_text("{")
    rows = grade_rows(tmp_path, folder, scheduler="local", jobs=2)
    assert (rows["ana"].status, rows["ana"].score) == ("graded", grader_cases.FULL)
    assert rows["dee"].status == "invalid" and "not valid JSON" in rows["dee"].detail
