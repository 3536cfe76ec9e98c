"""Unit tests on tiny in-memory notebooks: the grader's collect and restore
steps (the repairs every grading path runs), without kernels or nbgrader."""

import asyncio
import contextlib
import copy
import json
import os
import sqlite3
from queue import Empty

import labserver
import nbformat
import pytest

from grader.course import collect, restore
from grader.isolation import sandbox
from grader.runner import trusted

pytestmark = pytest.mark.unit


def _locked(source, grade_id, **extra):
    meta = {"schema_version": 3, "grade_id": grade_id, "locked": True, "solution": False, "grade": False, **extra}
    return {"source": source, "nbgrader": meta}


def released_notebook():
    """A released exercise in miniature: instructions, an answer, its tests."""
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    specs = [
        ("markdown", _locked("# Exercise", "intro")),
        (
            "code",
            {
                "source": "def f():\n    # YOUR CODE HERE\n    raise NotImplementedError()",
                "nbgrader": {"schema_version": 3, "grade_id": "f", "locked": False, "solution": True, "grade": False},
            },
        ),
        ("code", _locked("assert f() == 1, 'f() should return 1.'", "test_f", grade=True, points=2)),
    ]
    for kind, spec in specs:
        maker = nbformat.v4.new_markdown_cell if kind == "markdown" else nbformat.v4.new_code_cell
        cell = maker(spec["source"])
        cell.metadata["nbgrader"] = spec["nbgrader"]
        nb.cells.append(cell)
    return nb


def answered(nb=None):
    nb = copy.deepcopy(nb or released_notebook())
    nb.cells[1].source = "def f():\n    return 1"
    return nb


def _sources(nb):
    return [c.source for c in nb.cells]


# --- restore -------------------------------------------------------------------


def test_an_untouched_answered_notebook_is_restored_without_notes():
    restored, notes = restore.restore(answered(), released_notebook())
    assert notes == []
    assert _sources(restored) == _sources(answered())


def test_edited_tests_come_back_and_the_answer_stays():
    nb = answered()
    nb.cells[2].source = "assert True"
    restored, notes = restore.restore(nb, released_notebook())
    assert restored.cells[2].source == released_notebook().cells[2].source
    assert restored.cells[1].source == "def f():\n    return 1"
    assert notes == ["test_f: read-only cell was edited, restored"]


def test_deleted_tests_come_back():
    nb = answered()
    del nb.cells[2]
    restored, notes = restore.restore(nb, released_notebook())
    assert _sources(restored) == _sources(answered())
    assert notes == ["test_f: deleted, restored as released"]


def test_reordered_cells_are_put_back_in_released_order():
    nb = answered()
    nb.cells = [nb.cells[2], nb.cells[0], nb.cells[1]]
    restored, notes = restore.restore(nb, released_notebook())
    assert _sources(restored) == _sources(answered())
    assert "cells were out of the released order: put back in order" in notes


def test_stripped_metadata_is_matched_by_content_and_the_answer_found_between_neighbours():
    nb = answered()
    for cell in nb.cells:
        cell.metadata = {}
    restored, notes = restore.restore(nb, released_notebook())
    assert [c.metadata["nbgrader"]["grade_id"] for c in restored.cells] == ["intro", "f", "test_f"]
    assert restored.cells[1].source == "def f():\n    return 1"
    assert any("matched to the released cells by content" in n for n in notes)


def test_changed_points_and_kernel_are_set_back():
    nb = answered()
    nb.cells[2].metadata["nbgrader"]["points"] = 100
    nb.metadata["kernelspec"] = {"name": "ir", "display_name": "R"}
    restored, notes = restore.restore(nb, released_notebook())
    assert restored.cells[2].metadata["nbgrader"]["points"] == 2
    assert restored.metadata["kernelspec"]["name"] == "python3"
    assert "test_f: points changed to 100, restored" in notes
    assert "kernel changed to 'ir', set back to python3" in notes


def test_a_retyped_answer_is_changed_back_and_student_cells_stay_ungraded():
    nb = answered()
    nb.cells[1] = nbformat.v4.new_markdown_cell(nb.cells[1].source, metadata=nb.cells[1].metadata)
    nb.cells.insert(2, nbformat.v4.new_code_cell("print('scratch')"))
    restored, notes = restore.restore(nb, released_notebook())
    assert restored.cells[1].cell_type == "code"
    assert "f: cell type changed to markdown, changed back" in notes
    assert restored.cells[2].source == "print('scratch')" and "nbgrader" not in restored.cells[2].metadata
    ids = [c.id for c in restored.cells]
    assert len(ids) == len(set(ids)), "restored cell ids are unique"


# --- collect -------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw, reason",
    [
        (b"", "empty file"),
        (b"\x89PNG\r\n\x1a\n\x00\xff", "binary file"),
        (b'{"cells": [', "not valid JSON"),
        (b'{"name": "not a notebook"}', "JSON but not a Jupyter notebook"),
    ],
)
def test_unreadable_files_get_a_reason(tmp_path, raw, reason):
    path = tmp_path / "x.ipynb"
    path.write_bytes(raw)
    nb, problem, _ = collect.read_notebook(path)
    assert nb is None and reason in problem


def test_an_nbformat_3_notebook_is_converted_and_noted(tmp_path):
    path = tmp_path / "old.ipynb"
    path.write_text(nbformat.writes(nbformat.convert(answered(), 3)))
    nb, problem, notes = collect.read_notebook(path)
    assert problem is None and nb.nbformat == 4 and notes == ["converted from nbformat 3"]


def test_safe_ids_are_unique_and_usable_as_folder_names():
    taken = set()
    first, second = collect.safe_id("José María/..", taken), collect.safe_id("josé maría/..", taken)
    assert first != second and "/" not in first + second and not first.startswith(".")


def test_collect_gives_every_entry_a_submission(tmp_path):
    nbformat.write(answered(), tmp_path / "ana.ipynb")
    (tmp_path / "ben.ipynb").write_text("")
    (tmp_path / "cai").mkdir()
    nbformat.write(answered(), tmp_path / "cai" / "untitled.ipynb")
    nbformat.write(answered(), tmp_path / "cai" / "A.ipynb")
    (tmp_path / "dee").mkdir()
    (tmp_path / ".DS_Store").write_text(json.dumps({}))
    found = {s.student: s for s in collect.collect(tmp_path, "A")}
    assert sorted(found) == ["ana", "ben", "cai", "dee"]
    assert found["ana"].problem is None and found["ben"].problem == "empty file"
    assert found["cai"].source.name == "A.ipynb" and "2 files" in found["cai"].notes[0]
    assert found["dee"].problem == "no notebook in the folder"


# --- make check-env --------------------------------------------------------------


@pytest.mark.parametrize(
    "version, warns",
    [
        ("2.13.0+cpu", False),
        ("2.11.0+cu128", False),
        ("3.0.0", False),
        ("2.10.1", True),
        ("1.13.1", True),
        ("nightly", True),
    ],
)
def test_check_env_warns_below_the_course_torch_floor(version, warns):
    from tools import check_env

    warning = check_env.torch_floor_warning(version)
    assert (warning is not None) == warns, warning
    if warns:
        assert "2.11" in warning


@pytest.mark.parametrize("version, warns", [("2.10.0+cu126", True), ("2.11.0", False)])
def test_make_check_env_prints_the_floor_warning(monkeypatch, capsys, version, warns):
    """What `make check-env` prints, with torch pretending to be another version."""
    import torch

    from tools import check_env

    monkeypatch.setattr(torch, "__version__", version)
    monkeypatch.setattr(check_env, "nbgrader_extensions", lambda: [])  # no jupyter subprocesses
    assert check_env.main() == 0
    printed = capsys.readouterr().out
    assert f"torch       {version}" in printed
    assert ("WARNING: torch" in printed) == warns, printed


def test_new_gradebooks_get_the_schema_head_alembic_names(tmp_path):
    """course.py stamps new gradebooks with the schema head read in-process; it must be the
    revision the `alembic heads` command (what nbgrader runs) names for the installed nbgrader."""
    import subprocess
    import sys

    from nbgrader.api import Gradebook
    from nbgrader.dbutil import _temp_alembic_ini

    from grader.course import nbgrader_course as course

    alembic = os.path.join(os.path.dirname(sys.executable), "alembic")
    with _temp_alembic_ini("sqlite:////tmp/gradebook.db") as ini:
        heads = subprocess.check_output([alembic, "-c", ini, "heads"], text=True)
    assert course.gradebook_schema_head() == heads.split()[0]
    import nbgrader.api

    assert nbgrader.api.get_alembic_version is course.gradebook_schema_head, "nbgrader would still run alembic"
    with Gradebook(f"sqlite:///{tmp_path / 'gradebook.db'}"):
        pass
    with contextlib.closing(sqlite3.connect(tmp_path / "gradebook.db")) as connection:
        stamped = connection.execute("select version_num from alembic_version").fetchall()
    assert stamped == [(heads.split()[0],)]


def test_gradebooks_of_one_database_share_one_engine_and_still_close_their_connections(tmp_path):
    """course.py hands nbgrader's Gradebooks one SQLAlchemy engine per database (its compiled SQL
    is kept); what one Gradebook writes the next reads, and closing one leaves no connection open."""
    from nbgrader.api import Gradebook

    from grader.course import nbgrader_course as course  # noqa: F401 (importing it is what every grading path does)

    url = f"sqlite:///{tmp_path / 'gradebook.db'}"
    with Gradebook(url) as first:
        first.add_student("ann")
        engine = first.engine
    assert engine.pool.checkedout() == 0
    with Gradebook(url) as second:
        assert second.engine is engine, "each Gradebook made a new engine and compiled every query again"
        assert [student.id for student in second.students] == ["ann"]


def test_gradebooks_in_threads_share_an_engine_safely(tmp_path):
    """Formgrader's server can open Gradebooks in more than one thread: one closing (a new pool)
    while another works on its connection costs neither anything."""
    import threading

    from nbgrader.api import Gradebook

    from grader.course import nbgrader_course as course  # noqa: F401

    url = f"sqlite:///{tmp_path / 'gradebook.db'}"
    Gradebook(url).close()
    errors: list[BaseException] = []

    def work(thread: int) -> None:
        try:
            for turn in range(8):
                with Gradebook(url) as gradebook:
                    gradebook.add_student(f"s{thread}-{turn}")
                    gradebook.find_student(f"s{thread}-{turn}")
        except BaseException as error:  # reported below, with the thread's own traceback lost
            errors.append(error)

    threads = [threading.Thread(target=work, args=(number,)) for number in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    with Gradebook(url) as gradebook:
        assert len(gradebook.students) == 32


def test_each_open_in_memory_gradebook_is_a_database_of_its_own():
    """An in-memory SQLite database lives in its connections: two open Gradebooks on `sqlite://`
    are two databases, as with nbgrader alone, never one shared engine's."""
    from nbgrader.api import Gradebook

    from grader.course import nbgrader_course as course  # noqa: F401

    with Gradebook("sqlite://") as first, Gradebook("sqlite://") as second:
        first.add_student("ann")
        assert second.engine is not first.engine
        assert second.students == []


class _Channel:
    """A client channel that hands out the given messages, then raises Empty (nothing came)."""

    def __init__(self, messages):
        self.messages = list(messages)

    async def get_msg(self, timeout=None):
        if not self.messages:
            raise Empty
        return self.messages.pop(0)


def _status(state, parent):
    return {"msg_type": "status", "content": {"execution_state": state}, "parent_header": {"msg_id": parent}}


def test_a_grading_kernel_is_ready_once_idle_after_its_kernel_info_without_waiting_for_silence():
    """sandbox.ReadyKernelClient (the grading kernels' client) stops reading iopub at the idle
    status of its own kernel_info request: not at an earlier request's, and without the 0.2 s of
    silence jupyter_client's client waits for; with nothing on iopub it reports False (ask again)."""
    client = sandbox.ReadyKernelClient()
    later = {"msg_type": "stream", "content": {"text": "later"}, "parent_header": {"msg_id": "run"}}
    messages = [_status("busy", "info-2"), _status("idle", "info-1"), _status("idle", "info-2"), later]
    client._iopub_channel = _Channel(messages)
    assert asyncio.run(client._idle_after("info-2")) is True
    assert client._iopub_channel.messages == [later], "read past its own idle status"
    client._iopub_channel = _Channel([_status("busy", "info-3"), _status("idle", "info-1")])
    assert asyncio.run(client._idle_after("info-3")) is False
    manager = sandbox.SandboxedKernelManager()
    try:
        assert isinstance(manager.client(), sandbox.ReadyKernelClient)
    finally:
        os.rmdir(manager._sockets)


def test_test_servers_get_ports_below_the_ephemeral_range():
    """tests/labserver.free_port picks where binding to "any free port" (every kernel's ZeroMQ
    sockets) never looks, so no one takes the port before the test's server binds it."""
    top = labserver._ephemeral_start()
    ports = {labserver.free_port() for _ in range(20)}
    assert all(1024 <= port < top for port in ports) and len(ports) > 1, (top, ports)


def test_test_workers_never_pick_the_same_port(monkeypatch):
    """Each pytest-xdist worker picks from a slice of its own and never hands a port out twice:
    a hub's proxy binds seconds after the pick (another worker once took its port meanwhile)."""
    picks = {}
    for worker in range(4):
        monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", "4")
        monkeypatch.setenv("PYTEST_XDIST_WORKER", f"gw{worker}")
        picks[worker] = [labserver.free_port() for _ in range(30)]
        assert len(set(picks[worker])) == 30, "a port was handed out twice"
    for worker in range(3):
        assert max(picks[worker]) < min(picks[worker + 1]), "two workers' slices overlap"


class FakeMonitoring:
    """sys.monitoring's calls as the runner's reset uses them (Python 3.11 has no sys.monitoring)."""

    class events:  # noqa: N801 (the real namespace's name)
        PY_START, PY_RETURN, CALL, NO_EVENTS, BRANCH = 1, 2, 16, 0, 3 << 20  # BRANCH: two bits, as in 3.14

    def __init__(self):
        self.callbacks, self.tools, self.active = {}, {}, {}

    def register_callback(self, tool, event, callback):
        if event & (event - 1) or not event:
            raise ValueError("one event at a time")
        previous = self.callbacks.get((tool, event))
        self.callbacks[(tool, event)] = callback
        return previous

    def get_tool(self, tool):
        return self.tools.get(tool)

    def set_events(self, tool, events):
        self.active[tool] = events

    def free_tool_id(self, tool):
        del self.tools[tool]


def test_the_runner_takes_every_monitoring_callback_and_tool_away_before_a_test():
    from grader.runner.reset import make_monitoring_reset

    monitoring = FakeMonitoring()
    reset = make_monitoring_reset(monitoring)
    assert reset() is False  # nothing registered: nothing to flag
    monitoring.tools[2] = "cProfile"
    monitoring.active[2] = monitoring.events.PY_START
    monitoring.callbacks[(2, monitoring.events.PY_START)] = print
    monitoring.callbacks[(5, monitoring.events.CALL)] = print  # a callback on a tool id not in use
    assert reset() is True
    assert not any(monitoring.callbacks.values()) and monitoring.tools == {} and monitoring.active[2] == 0
    assert reset() is False
    assert make_monitoring_reset(None)() is False  # Python 3.11


def test_the_monitoring_reset_works_on_this_pythons_own_sys_monitoring():
    """On Python 3.12+ against the real sys.monitoring: a profiler's tool is taken away (on 3.11,
    which has none, the runner's reset is a no-op, as the stand-in above checks)."""
    import cProfile
    import sys

    from grader.runner.reset import make_monitoring_reset

    reset = make_monitoring_reset(getattr(sys, "monitoring", None))
    profiler = cProfile.Profile()
    profiler.enable()
    try:
        assert reset() is hasattr(sys, "monitoring")
    finally:
        with contextlib.suppress(ValueError):  # 3.12+: the profiler's tool id is no longer in use
            profiler.disable()
    assert reset() is False


@pytest.mark.parametrize(
    ("source", "deletes"),
    [
        ("del squares\nassert sum_of_squares(3) == 14", True),  # nbgrader's documentation course
        ("for _x in range(2):\n    del _x", True),
        ("def _check(n):\n    _tmp = n\n    del _tmp\n    return all([n])\n_check(1)", False),  # a local of its own
        ("class _T:\n    def f(self):\n        del self.x", False),
        ("_f = lambda: 1\nassert _f() == 1", False),
    ],
)
def test_only_a_del_of_a_notebook_name_sends_a_test_cell_the_plain_way(source, deletes):
    """A test cell that deletes a notebook name runs among the notebook's own names (plain nbgrader);
    a del inside a function the cell defines is that function's business, and the cell keeps the trusted
    path (a del of a local once sent lesson 5's test_MyLinear_init there, where a notebook's own `all`
    broke it)."""
    assert trusted.deletes_globals(source) is deletes
