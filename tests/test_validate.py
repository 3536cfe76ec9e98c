"""A student's `nbgrader validate`, with the course's config and with the hub's users' config:
each failed test's hint arrives whole (nbgrader cuts lines at 90 characters unless told), and
nothing a student cannot act on is printed (the kernel's start-up warnings)."""

import functools
import os
import subprocess

import grader_cases
import nbformat
import pytest
import submissions

from conftest import ROOT
from tools import cells

pytestmark = pytest.mark.integration

A = grader_cases.A
NBGRADER_WIDTH = 90  # nbgrader's default Validator.width: no line of the report is wider
NOISE = ("without encryption", "not recognized", "No nbgrader_config.py")


def flat(text: str) -> str:
    return " ".join(text.split())


@functools.cache  # both configs validate the same notebook
def long_hint() -> tuple[nbformat.NotebookNode, str]:
    """A student's notebook with one wrong answer whose visible test fails with a hint longer
    than one of nbgrader's lines, and that hint (computed by running the visible tests)."""
    for wrong in cells.read_wrong_answers(A):
        notebook = submissions.answered(A, {wrong.answer_id: wrong.code})
        error = cells.run(cells.graded_cells(notebook)).get(wrong.fails[0])
        if isinstance(error, AssertionError) and len(str(error)) > NBGRADER_WIDTH:
            return notebook, str(error)
    raise AssertionError(f"no wrong answer of {A} fails a visible test with a hint over {NBGRADER_WIDTH} characters")


@pytest.mark.parametrize("config", ["course", "hub", "anywhere"])
def test_validate_shows_the_whole_hint_and_no_noise(tmp_path, config):
    """From the course folder, on the hub, and from any folder with the course's environment
    (make setup installs its validate settings into the environment's Jupyter config)."""
    notebook, hint = long_hint()
    home = tmp_path / "student"
    home.mkdir()
    path = home / f"{A}.ipynb"
    nbformat.write(notebook, path)
    env = grader_cases.cli_env()
    if config == "hub":  # as hub/jupyterhub_config.py sets up every user's server
        env.update(
            JUPYTER_CONFIG_PATH=str(ROOT / "hub" / "config" / "users"),
            COURSE_ID="pytorch-building-blocks",
            COURSE_EXCHANGE=str(tmp_path / "exchange"),
            PYTHONPATH=os.pathsep.join([str(ROOT / "hub"), str(ROOT)]),
        )
        cwd = home
    elif config == "anywhere":  # .venv/bin/nbgrader validate run outside the course folder
        cwd = home
    else:  # JupyterLab's Validate button and the CLI, from the course folder
        cwd = ROOT
    done = subprocess.run(
        [str(grader_cases.BIN / "nbgrader"), "validate", str(path)], cwd=cwd, env=env, capture_output=True, text=True
    )
    said = done.stdout + done.stderr
    assert "VALIDATION FAILED" in said, said[-3000:]
    assert flat(hint) in flat(said), f"the hint is cut:\n{hint}\n---\n{said[-3000:]}"
    assert not [noise for noise in NOISE if noise in said], said[:3000]
    assert max(len(line) for line in done.stdout.splitlines()) <= NBGRADER_WIDTH


def test_a_warning_is_not_a_failure_in_validate_as_at_grading(tmp_path):
    """An answer that warns passes Validate when its tests pass, as it gets full marks at grading
    (nbgrader alone counts any stderr output of a test cell as a failure)."""
    warns = submissions.answer_source(A, "make_stack").replace(
        "def make_stack(factory, n):\n",
        "def make_stack(factory, n):\n    import warnings\n\n    warnings.warn('mine')\n",
        1,
    )
    assert "warnings.warn" in warns, "the model answer of make_stack changed its first line"
    path = tmp_path / f"{A}.ipynb"
    nbformat.write(submissions.answered(A, {"make_stack": warns}), path)
    done = subprocess.run(
        [str(grader_cases.BIN / "nbgrader"), "validate", str(path)],
        cwd=ROOT,
        env=grader_cases.cli_env(),
        capture_output=True,
        text=True,
    )
    assert "Success! Your notebook passes all the tests." in done.stdout, done.stdout[-3000:] + done.stderr[-2000:]


def test_validate_uses_the_courses_cell_limit_wherever_its_config_loads():
    """The hub's users' config sets no cell limit: nbgrader's 30 s would stop a cell the grader
    lets run 60 s. student_validate gives the course's limit where none is set, and keeps one set."""
    from traitlets.config import Config

    from grader import course, pipeline

    limit = course.load_config(ROOT).Execute.timeout  # the course's own config
    unset = Config()
    pipeline.student_validate(unset)
    assert unset.Execute.timeout == limit, "validate's cell limit is not the course's"
    chosen = Config()
    chosen.Execute.timeout = 5
    pipeline.student_validate(chosen)
    assert chosen.Execute.timeout == 5, "a limit the config sets was overridden"
