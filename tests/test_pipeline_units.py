"""The grader's own preprocessors on tiny in-memory notebooks (no kernel)."""

from __future__ import annotations

import copy

import nbformat
import pytest
from nbgrader.nbgraderformat import MetadataValidator, ValidationError
from nbgrader.preprocessors import CheckCellMetadata

from grader import pipeline

pytestmark = pytest.mark.unit


def graded_notebook() -> nbformat.NotebookNode:
    """An answer cell and its tests cell, with the metadata nbgrader's schema version 3 asks for."""
    nb = nbformat.v4.new_notebook()
    roles = [("x = 1", dict(grade=False, solution=True, locked=False, grade_id="x"))]
    roles.append(("assert x == 1", dict(grade=True, solution=False, locked=True, grade_id="test_x", points=2)))
    for source, role in roles:
        cell = nbformat.v4.new_code_cell(source)
        cell.metadata["nbgrader"] = dict(role, schema_version=3, task=False)
        nb.cells.append(cell)
    return nb


def broken(change) -> nbformat.NotebookNode:
    nb = graded_notebook()
    change(nb.cells[1].metadata["nbgrader"])
    return nb


BROKEN = {
    "points not a number": lambda meta: meta.update(points="two"),
    "grade id missing": lambda meta: meta.pop("grade_id"),
    "an old schema": lambda meta: meta.update(schema_version=1),
    "a newer schema": lambda meta: meta.update(schema_version=4),
    "graded without points": lambda meta: meta.pop("points"),
    "locked flag not a bool": lambda meta: meta.update(locked="yes"),
}


def outcome(check, nb):
    try:
        check(copy.deepcopy(nb))
    except Exception as error:  # the same failure, type and message, is what counts
        return type(error).__name__, str(error).splitlines()[0]
    return None


@pytest.mark.parametrize("case", [None, *BROKEN], ids=str)
def test_the_metadata_check_compiled_once_decides_as_nbgraders_does(case):
    nb = graded_notebook() if case is None else broken(BROKEN[case])
    ours = outcome(lambda n: pipeline._MetadataValidatorOnce().validate_nb(n), nb)
    assert ours == outcome(lambda n: MetadataValidator().validate_nb(n), nb)
    assert (ours is None) == (case is None), ours
    preprocessor = pipeline.CheckMetadata()
    resources: dict = {}
    assert outcome(lambda n: preprocessor.preprocess(n, resources), nb) == outcome(
        lambda n: CheckCellMetadata().preprocess(n, resources), nb
    )


def test_the_pipeline_uses_the_compiled_check_in_both_places():
    from traitlets.config import Config

    c = Config()
    pipeline.use_safe_autograde(c)
    assert pipeline.CheckMetadata in c.Autograde.sanitize_preprocessors
    assert pipeline.CheckMetadata in c.Autograde.autograde_preprocessors
    assert CheckCellMetadata not in c.Autograde.sanitize_preprocessors + c.Autograde.autograde_preprocessors
    with pytest.raises(ValidationError):
        pipeline.CheckMetadata().preprocess(broken(BROKEN["points not a number"]), {})


@pytest.fixture
def process_tree():
    """bash, below it a sleep and a second bash with two sleeps; yields the top bash's pid."""
    import subprocess
    import time

    import psutil

    tree = subprocess.Popen(["bash", "-c", "sleep 30 & bash -c 'sleep 30 & sleep 30 & wait' & wait"])
    try:
        deadline = time.monotonic() + 10
        while len(psutil.Process(tree.pid).children(recursive=True)) < 4 and time.monotonic() < deadline:
            time.sleep(0.02)
        yield tree.pid
    finally:
        for process in psutil.Process(tree.pid).children(recursive=True):
            process.kill()
        tree.kill()
        tree.wait()


def test_the_processes_below_a_kernel_are_the_ones_psutil_finds(process_tree, monkeypatch):
    """processes.descendants reads only the subtree, never the machine's process table (psutil's
    children() reads every process's stat file), and finds what psutil's full scan finds."""
    import os

    import psutil

    from grader.isolation import processes

    expected = {p.pid for p in psutil.Process(process_tree).children(recursive=True)}
    assert len(expected) == 4
    assert os.path.exists(f"/proc/{process_tree}/task/{process_tree}/children"), "the subtree path, not the fallback"
    monkeypatch.setattr(psutil.Process, "children", lambda *_, **__: pytest.fail("read the whole process table"))
    found = processes.descendants(psutil.Process(process_tree))
    assert {p.pid for p in found} == expected
    # Parents before their children: the inner bash comes before its two sleeps.
    inner = next(p for p in found if p.name() == "bash")
    assert all(found.index(inner) < found.index(p) for p in found if p.ppid() == inner.pid)


def test_a_kernels_process_is_found_once_per_launch(monkeypatch):
    """The grader asks for the kernel's process after every cell: its launched process's subtree
    is read once per launch, and a kernel that has gone is None."""
    import shutil
    import subprocess
    import sys
    import time
    from types import SimpleNamespace

    import psutil

    from grader.isolation import processes, sandbox

    # As in the sandbox: the launched process is not Python (bwrap there), the kernel is below it.
    launched = subprocess.Popen(["bash", "-c", f"{sys.executable} -c 'import time; time.sleep(30)' & wait"])
    manager = sandbox.SandboxedKernelManager()
    try:
        # Until bash's child has become Python (right after the fork it is still bash): a kernel
        # the grader asks about has answered it, so it is long past that.
        deadline = time.monotonic() + 10
        while processes.first_python(launched.pid) is None and time.monotonic() < deadline:
            time.sleep(0.02)
        (python,) = psutil.Process(launched.pid).children()
        manager.provisioner = SimpleNamespace(process=SimpleNamespace(pid=launched.pid))
        walks, walk = [], processes.descendants
        monkeypatch.setattr(processes, "descendants", lambda top: walks.append(top.pid) or walk(top))
        assert [manager.kernel_process().pid for _ in range(3)] == [python.pid] * 3
        assert walks == [launched.pid], "the subtree is read once, not after every cell"
        python.kill()
        python.wait(timeout=10)
        assert manager.kernel_process() is None
    finally:
        launched.kill()
        launched.wait()
        shutil.rmtree(manager._sockets, ignore_errors=True)
