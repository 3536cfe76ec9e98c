"""GPU grading: a sandboxed kernel sees exactly its worker's GPUs. Run here on fake device
nodes (this machine has no GPU) through the sandbox's own spec and bwrap command line; on
a machine with a GPU, `make test` also grades lesson 7 there (docs/grade-integrity.md)."""

from __future__ import annotations

import pytest

from grader import sandbox, template

pytestmark = [pytest.mark.gpu, pytest.mark.unit]


@pytest.fixture
def fake_gpus(tmp_path, monkeypatch):
    """Two GPUs' device nodes, as the NVIDIA driver makes them."""
    for name in ("nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "nvidia0", "nvidia1"):
        (tmp_path / name).touch()
    monkeypatch.setattr(sandbox, "DEVICE_FOLDER", str(tmp_path))
    return tmp_path


def test_a_kernel_gets_the_devices_of_its_workers_gpus_only(fake_gpus, monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    nodes = sandbox.gpu_devices()
    assert nodes == [str(fake_gpus / n) for n in ("nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "nvidia1")]
    steps = sandbox.layout("/tmp/scratch", "/tmp/sockets")
    assert [s for s in steps if s[0] == "dev-bind"] == [("dev-bind", n, n) for n in nodes]
    assert ("ro-bind", "/sys", "/sys") in steps
    line = sandbox.command(
        ["python"], "/tmp/scratch", "/tmp/sockets", memory_mb=2048, max_processes=32, file_mb=256, uid=None, steps=steps
    )
    joined = " ".join(line)
    assert f"--dev-bind {fake_gpus / 'nvidia1'} {fake_gpus / 'nvidia1'}" in joined
    assert str(fake_gpus / "nvidia0") not in joined, "another worker's GPU stays out"


def test_cuda_visible_devices_reaches_the_kernel(fake_gpus, monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    assert sandbox.clean_environment("/tmp/scratch")["CUDA_VISIBLE_DEVICES"] == "0"


def test_memory_is_limited_without_the_address_space_limit_cuda_cannot_start_under(fake_gpus, monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    caps = sandbox.limits(memory_mb=2048, max_processes=32, file_mb=256)
    assert "as" not in caps and caps["data"] == 2048 * 1024 * 1024
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert sandbox.limits(memory_mb=2048, max_processes=32, file_mb=256)["as"] == 2048 * 1024 * 1024


def test_gpu_kernels_are_not_forked_from_the_template(fake_gpus, monkeypatch):
    """A CUDA context does not survive a fork: with a GPU, kernels start normally in bwrap."""
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    assert not template.kernels_would_fork(sandboxed=True)


def test_without_a_gpu_nothing_changes(tmp_path, monkeypatch):
    monkeypatch.setattr(sandbox, "DEVICE_FOLDER", str(tmp_path))
    assert sandbox.gpu_devices() == []
    assert not [s for s in sandbox.layout("/tmp/a", "/tmp/b") if s[0] == "dev-bind"]
