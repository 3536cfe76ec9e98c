"""GPU grading: a sandboxed kernel sees exactly its worker's GPUs. Checked on fake device
nodes through the sandbox's one spec and both its translations, bwrap's command line and a
forked kernel's plan (no GPU needed; tests/test_sandbox_paths.py starts kernels both ways on
fake nodes), and by grading
lesson 7 for real: on the CPU in `make test`'s first pass (CUDA hidden), and on CUDA in its
second pass where the machine has a GPU (the Makefile runs this module again there)."""

from __future__ import annotations

import grading_checks
import nbformat
import pytest
import submissions
import torch
from dask_processes import dask_cluster

from grader.grading import grade
from grader.isolation import fork as sandbox_fork
from grader.isolation import sandbox
from grader.isolation import spec as sandbox_spec
from grader.kernels import template
from tools import course

pytestmark = [pytest.mark.gpu, pytest.mark.unit]


@pytest.fixture
def fake_gpus(tmp_path, monkeypatch):
    """Two GPUs' device nodes, as the NVIDIA driver makes them."""
    for name in ("nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "nvidia0", "nvidia1"):
        (tmp_path / name).touch()
    monkeypatch.setattr(sandbox_spec, "DEVICE_FOLDER", str(tmp_path))
    return tmp_path


def test_a_kernel_gets_the_devices_of_its_workers_gpus_only(fake_gpus, monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    nodes = sandbox_spec.gpu_devices()
    assert nodes == [str(fake_gpus / n) for n in ("nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "nvidia1")]
    spec = sandbox_spec.build("/tmp/scratch", "/tmp/sockets", uid=64000, memory_mb=2048, max_processes=32, file_mb=256)
    assert spec.devices == nodes
    assert [s for s in spec.mounts if s[0] == "dev-bind"] == [("dev-bind", n, n) for n in nodes]
    assert ("ro-bind", "/sys", "/sys") in spec.mounts
    joined = " ".join(sandbox.bwrap_args(spec, ["python"]))
    assert f"--dev-bind {fake_gpus / 'nvidia1'} {fake_gpus / 'nvidia1'}" in joined
    assert str(fake_gpus / "nvidia0") not in joined, "another worker's GPU stays out"
    # A forked kernel's sandbox would bind the same nodes (GPU kernels start normally: see below).
    assert sandbox_fork.plan(spec, "/base").init[2] == ("root", "/base", spec.mounts)


def test_cuda_visible_devices_reaches_the_kernel(fake_gpus, monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    assert sandbox_spec.clean_environment("/tmp/scratch")["CUDA_VISIBLE_DEVICES"] == "0"


def test_memory_is_limited_by_private_writable_memory_not_address_space(fake_gpus, monkeypatch):
    """The data limit, GPU or not: CUDA and the CUDA build of torch map and reserve far more address
    space than they use (grader_cases' reserves_address_space grades under it)."""
    for visible in ("0", ""):
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", visible)
        caps = sandbox_spec.limits(memory_mb=2048, max_processes=32, file_mb=256)
        assert "as" not in caps and caps["data"] == 2048 * 1024 * 1024


def test_gpu_kernels_are_not_forked_from_the_template(fake_gpus, monkeypatch):
    """A CUDA context does not survive a fork: with a GPU, kernels start normally in bwrap."""
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    assert not template.kernels_would_fork(sandboxed=True)


def test_without_a_gpu_nothing_changes(tmp_path, monkeypatch):
    monkeypatch.setattr(sandbox_spec, "DEVICE_FOLDER", str(tmp_path))
    assert sandbox_spec.gpu_devices() == []
    assert not [s for s in sandbox_spec.layout("/tmp/a", "/tmp/b") if s[0] == "dev-bind" or s[1] == "/sys"]
    assert sandbox_spec.build("/tmp/a", "/tmp/b", uid=None, memory_mb=1, max_processes=1, file_mb=1).devices == []


def graded_lesson_7(tmp_path, extra: dict[str, str] | None = None, **options) -> tuple:
    """Lesson 7's model answers, with a last cell that prints the device `try_gpu` picked, graded
    as ana's hand-in (beside the files of `extra`, name -> text) in the sandbox with `options`:
    every row, by student, and what ana's graded notebook printed."""
    lesson = "07_gpus"
    notebook = submissions.answered(lesson)
    notebook.cells.append(nbformat.v4.new_code_cell('print("GRADED ON", try_gpu().type)'))
    folder = tmp_path / "downloads"
    folder.mkdir()
    nbformat.write(notebook, folder / "ana.ipynb")
    for name, text in (extra or {}).items():
        (folder / name).write_text(text)
    root = tmp_path / "course"
    course.temporary_course(root, [lesson])
    rows = {
        row.student_id: row for row in grade.run(grade.Options(lesson, folder, root=root, cell_timeout=120, **options))
    }
    row = rows["ana"]
    assert (row.status, row.score) == ("graded", submissions.full_score(lesson)), row.detail
    return rows, grading_checks.printed(root, row.grader_id, lesson)


# What the grading kernel must see: the GPU where this process sees one (`make test`'s CUDA pass).
EXPECTED_DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


@pytest.mark.integration
@pytest.mark.sandbox
def test_lesson_7_grades_full_in_the_sandbox_on_the_device_this_machine_has(tmp_path):
    """A real grading run of lesson 7's model answers in the sandbox: full marks, on CUDA where the
    grader sees a GPU (`make test`'s CUDA pass), on the CPU otherwise; never skipped."""
    _, printed = graded_lesson_7(tmp_path, jobs=1)
    assert f"GRADED ON {EXPECTED_DEVICE}" in printed, printed[-2000:]


def self_signed(folder) -> tuple[str, str]:
    """A key and a self-signed certificate for 127.0.0.1 (PEM files in `folder`), as a real
    deployment would hand its nodes theirs: the key's path and the certificate's."""
    import datetime
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "course-grader-test")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    key_path, cert_path = folder / "key.pem", folder / "cert.pem"
    key_path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return str(key_path), str(cert_path)


@pytest.mark.integration
@pytest.mark.sandbox
def test_lesson_7_grades_full_on_a_tls_dask_worker_offering_a_gpu(tmp_path):
    """As docs/cluster.md deploys it: scheduler, worker and client talk TLS only, and a
    `dask worker --resources GPU=1` (its own process, its own kernel template) grades lesson 7
    asked for with `--resources GPU=1`, in its sandbox, on the GPU where there is one; a broken
    hand-in beside it gets its row."""
    import dask
    from distributed import Client

    key, cert = self_signed(tmp_path)
    tls = ["--tls-ca-file", cert, "--tls-cert", cert, "--tls-key", key]
    client_tls = {
        "distributed.comm.tls.ca-file": cert,
        "distributed.comm.tls.client.cert": cert,
        "distributed.comm.tls.client.key": key,
        "distributed.comm.require-encryption": True,
    }
    logs = tmp_path / "logs"
    logs.mkdir()
    with (
        dask.config.set(client_tls),
        dask_cluster(logs, [["--resources", "GPU=1"]], protocol="tls", tls=tls) as started,
    ):
        with dask.config.set({"distributed.comm.require-encryption": False}), pytest.raises((OSError, TimeoutError)):
            Client(started["address"].replace("tls://", "tcp://"), timeout="5s")  # nothing answers without TLS
        rows, printed = graded_lesson_7(
            tmp_path, {"dee.ipynb": "{"}, scheduler=started["address"], jobs=1, resources={"GPU": 1}
        )
    assert f"GRADED ON {EXPECTED_DEVICE}" in printed, printed[-2000:]
    assert rows["dee"].status == "invalid" and "not valid JSON" in rows["dee"].detail
