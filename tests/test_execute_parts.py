"""GuardedExecute's parts, each alone and in process (no kernel): the limit a cell gets, the output
it may keep, why a kernel ended, which cells a fresh kernel runs again, how cells are named and
marked, a failed start, the stray processes a cell leaves, and the `c.GuardedExecute.*` options."""

from __future__ import annotations

import subprocess
import sys
import time

import nbformat
import psutil
import pytest
from traitlets.config import Config

from grader.execute import cell_limits, cell_notes, kernel_deaths, kernel_start, not_graded, stray_processes, test_path
from grader.execute.guarded import FAILURE_MARK, FAILURES, GraderFailure, GuardedExecute

pytestmark = pytest.mark.unit

ANSWER = dict(grade=False, solution=True, locked=False, grade_id="my_answer")
TEST = dict(grade=True, solution=False, locked=True, grade_id="test_my_answer", points=1)
SETUP = dict(grade=False, solution=False, locked=True, grade_id="setup")


def notebook(*roles) -> nbformat.NotebookNode:
    """One code cell per role (None: a cell the student added, no nbgrader metadata)."""
    nb = nbformat.v4.new_notebook()
    for role in roles:
        cell = nbformat.v4.new_code_cell("pass")
        if role is not None:
            cell.metadata["nbgrader"] = dict(role, schema_version=3)
        nb.cells.append(cell)
    return nb


@pytest.mark.parametrize(
    "timeout, remaining, timed_out, after, expected",
    [
        (60, 600, False, 10, 60),  # the cell limit
        (60, 600, True, 10, 10),  # after a time-out: the shorter limit
        (5, 600, True, 10, 5),  # never more than the cell limit
        (60, 600, True, 0, 60),  # limit_after_timeout 0: no shorter limit
        (60, 12.2, False, 10, 13),  # never past the notebook's limit, rounded up
        (None, 42.5, False, 10, 43),  # no cell limit: what is left of the notebook's
        (60, 0.1, False, 10, 1),  # 1 s at least
    ],
)
def test_cell_limit(timeout, remaining, timed_out, after, expected):
    assert cell_limits.cell_limit(timeout, remaining, timed_out, after) == expected


def test_output_bytes_counts_text_and_every_representation():
    assert cell_limits.output_bytes({"text": "abc"}) == 3
    assert cell_limits.output_bytes({"data": {"text/plain": "12", "text/html": "<b>1</b>"}}) == 10
    assert cell_limits.output_bytes({}) == 0


def limits(nb=None, **options) -> cell_limits.Limits:
    """A notebook's Limits alone, GuardedExecute's defaults unless `options` say otherwise."""
    values = dict(timeout=60, notebook_timeout=600, limit_after_timeout=10, interrupt_grace=5, max_output_bytes=10**6)
    return cell_limits.Limits(cell_notes.Notes(nb), **(values | options))


def test_the_limit_of_a_cell_after_a_time_out_and_near_the_notebooks():
    clock = limits(timeout=60, limit_after_timeout=10)
    assert clock.cell_timeout() == 60
    clock.timed_out_interrupted(3, 60)
    assert clock.cell_timeout() == 10 and clock.timed_out == {3}
    clock.deadline = time.monotonic() + 2.5
    assert clock.cell_timeout() == 3


def test_the_composed_step_asks_its_limits():
    execute = GuardedExecute(timeout=60, limit_after_timeout=10)
    assert execute.timeout_func(None) == 60  # outside a notebook: a fresh clock
    execute._limits = limits(timeout=60, limit_after_timeout=10)
    execute._limits.timed_out.add(3)
    assert execute.timeout_func(None) == 10


def test_each_limit_message_is_written_once_by_the_limits():
    clock = limits(notebook(ANSWER, TEST))
    clock.timed_out_interrupted(1, 7)
    assert clock.notes.problems == ["test_my_answer: timed out after 7 s and was interrupted"]
    assert clock.interrupt_ignored(7) == "a cell ran past 7 s and ignored the interrupt"
    assert clock.timed_out == {1}, "asking for the reason alone marks no cell"
    assert clock.ignored_interrupt(0, 7) == "a cell ran past 7 s and ignored the interrupt" and clock.timed_out == {
        0,
        1,
    }
    assert clock.past_notebook_limit() == "the notebook ran past its time limit of 600 s"


def test_output_cap_keeps_a_note_and_drops_the_rest():
    clock = limits(notebook(ANSWER), max_output_bytes=10)
    outs: list = []
    assert not clock.keep_output(outs, {"text": "x" * 11}, 0)
    assert outs[0].output_type == "stream" and "truncated by the grader after 10 bytes" in outs[0].text
    assert not clock.keep_output(outs, {"text": "more"}, 0)
    assert len(outs) == 1 and clock.notes.problems == ["my_answer: output truncated"]
    assert clock.keep_output(outs, {"text": "short"}, 1), "another cell has its own cap"
    # The composed step drops what its limits do not keep.
    execute = GuardedExecute(max_output_bytes=10)
    execute._limits = clock
    assert execute.output(outs, {"content": {"text": "again"}}, None, 0) is None


@pytest.mark.parametrize(
    "code, reason",
    [
        (None, None),
        (kernel_start.EXIT_STATUS, "the notebook called exit() or quit(), which ends the kernel"),
        (-9, "the kernel was killed by signal 9"),
        (137, "the kernel was killed by signal 9"),
        (1, "the kernel exited with status 1"),
        (0, "the kernel exited with status 0"),
    ],
)
def test_exit_reason(code, reason):
    assert kernel_deaths.exit_reason(code) == reason


def test_a_fresh_kernel_replays_answers_and_set_up_only():
    nb = notebook(SETUP, ANSWER, TEST, None, ANSWER)
    replayed = [i for i, cell in enumerate(nb.cells) if kernel_deaths.replays(cell, i, timed_out={4})]
    assert replayed == [0, 1]  # not the test, the student's own cell, or the answer that timed out


def test_cells_are_named_as_the_student_knows_them():
    nb = notebook(ANSWER, TEST, SETUP, None)
    names = [cell_notes.cell_name(nb, i) for i in range(4)]
    assert names == ["my_answer", "test_my_answer", "cell 3", "cell 4"]
    assert cell_notes.cell_name(nb, 9) == "cell 10" and cell_notes.cell_name(None, 0) == "cell 1"


def deaths(nb, max_restarts=3) -> kernel_deaths.Deaths:
    clock = limits(nb)
    return kernel_deaths.Deaths(clock.notes, clock, max_restarts)


def test_mark_not_run_fails_the_cell_and_every_later_one():
    nb = notebook(ANSWER, TEST, ANSWER, TEST)
    died = deaths(nb)
    died.dead = {3}
    died.notes.current = 1
    died.mark_not_run(nb, "the kernel exited with status 1")
    assert [o.ename for o in nb.cells[1].outputs] == ["KernelDied"]
    assert [o.ename for o in nb.cells[2].outputs] == ["NotRun"]
    assert nb.cells[0].outputs == [] and nb.cells[3].outputs == []  # before, and a cell that killed a kernel
    assert died.notes.problems == ["test_my_answer: the kernel exited with status 1"]


def test_a_death_restarts_until_max_restarts():
    nb = notebook(ANSWER, TEST, TEST)
    died = deaths(nb, max_restarts=1)
    died.notes.current = 1
    assert died.restart_after(nb, "the kernel was killed by signal 9", str)
    assert died.dead == {1} and died.resume == 1
    assert nb.cells[1].outputs[0].evalue == "test_my_answer: the kernel was killed by signal 9"
    assert [died.runs(cell, i) for i, cell in enumerate(nb.cells)] == ["replay", "skip", "run"]
    died.notes.current = 2
    assert not died.restart_after(nb, "the kernel exited with status 1", str)
    assert "at most" in nb.cells[2].outputs[0].evalue


def test_no_fresh_kernel_after_a_crash_marks_the_rest_with_the_start_failure():
    nb = notebook(ANSWER, TEST, TEST)
    died = deaths(nb)
    died.resume = 0
    assert not died.restart_after(nb, "port in use", lambda why: f"kernel did not start ({why})")
    assert nb.cells[1].outputs[0].evalue == "no fresh kernel started after a crash (kernel did not start (port in use))"


def test_a_start_without_a_kernel_spec_is_a_lasting_failure():
    cause, lasting = kernel_start.start_failure("no-such-kernel-here", False, "whatever")
    assert lasting and cause == "kernel did not start (no kernel spec named 'no-such-kernel-here')"


def test_start_retries_then_not_graded():
    failures: list[str] = []
    kernel_start.start_failed(failures, "kernel did not start (port in use)", False, retries=1)
    with pytest.raises(GraderFailure) as raised:
        kernel_start.start_failed(failures, "kernel did not start (port in use)", False, retries=1)
    assert str(raised.value) == f"{FAILURE_MARK}kernel did not start (port in use)"
    with pytest.raises(GraderFailure):  # a lasting cause is not tried again
        kernel_start.start_failed([], "kernel did not start (no kernel spec named 'x')", True, retries=5)


def test_a_failure_is_remembered_for_its_submission():
    not_graded.remember({"nbgrader": {"assignment": "a1", "student": "s1"}}, GraderFailure("no sandbox"))
    assert FAILURES.pop(("a1", "s1")) == "no sandbox"


def test_the_processes_a_cell_left_are_stopped():
    spawn = "import subprocess, time; [subprocess.Popen(['sleep', '60']) for _ in range(2)]; time.sleep(60)"
    kernel = subprocess.Popen([sys.executable, "-c", spawn])
    try:
        parent = psutil.Process(kernel.pid)
        deadline = time.monotonic() + 10
        while len(parent.children()) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        strays = parent.children()
        assert len(strays) == 2
        stray_processes.stop_strays(parent)
        assert not any(stray_processes.processes.running(p) for p in strays)
        assert kernel.poll() is None  # the kernel itself lives on
    finally:
        kernel.kill()
        kernel.wait()


def test_every_option_is_still_set_as_guarded_execute():
    """`c.GuardedExecute.*` is the contract of nbgrader_config.py and docs/grading.md, wherever the part lives."""
    values = dict(
        notebook_timeout=9.0,
        interrupt_grace=1.0,
        max_output_bytes=5,
        limit_after_timeout=3.0,
        sandbox=False,
        trusted_student_code=True,
        start_retries=0,
        max_restarts=7,
        preload=["math"],
        timeout=4,
    )
    config = Config()
    for name, value in values.items():
        setattr(config.GuardedExecute, name, value)
    execute = GuardedExecute(config=config)
    assert {name: getattr(execute, name) for name in values} == values
    assert execute.extra_arguments[0].startswith("--IPKernelApp.exec_lines=__import__('math'); ")
    assert execute.timeout_func(None) == 4
    assert (execute.iopub_timeout, execute.raise_on_iopub_timeout, execute.shutdown_kernel) == (15, False, "immediate")


def test_the_docstring_names_each_part_and_its_module():
    doc = GuardedExecute.__doc__
    for part in (cell_limits.Limits, kernel_deaths.Deaths, cell_notes.Notes, test_path.TestPath, kernel_start.Scratch):
        assert part.__module__.split(".")[-1] + ".py" in doc and part.__name__ in doc
    assert "stray_processes.py" in doc and "not_graded.py" in doc


def test_no_class_of_the_grader_shadows_another_through_the_mro():
    """GuardedExecute is nbgrader's Execute and nothing of ours beside: each name it defines is
    defined once among the grader's classes it is made of."""
    ours = [cls for cls in GuardedExecute.__mro__ if cls.__module__.startswith("grader.")]
    assert ours == [GuardedExecute]
    parts = (cell_limits.Limits, kernel_deaths.Deaths, cell_notes.Notes, test_path.TestPath, kernel_start.Scratch)
    for part in parts:
        assert [cls for cls in part.__mro__ if cls is not object] == [part], part


def test_an_unreadable_notebook_after_a_crash_scores_nothing():
    """The last notebook's dead cells stay with it: every test of an unreadable submission graded
    next by the same step is marked not run (none is left without an error, a pass to nbgrader)."""
    execute = GuardedExecute()
    before = notebook(ANSWER, TEST, ANSWER, TEST)
    execute._deaths = deaths(before)
    execute._deaths.dead = {1, 3}  # the cells that killed a kernel in the notebook before
    nb = notebook(ANSWER, TEST, ANSWER, TEST)
    nb.metadata["grader"] = {"invalid": "not JSON"}
    execute.preprocess(nb, {})
    assert execute._deaths is None, "nothing of a notebook's run is left for the next"
    tests = [cell for cell in nb.cells if cell.metadata["nbgrader"]["grade"]]
    assert all(any(o.output_type == "error" for o in cell.outputs) for cell in tests)
