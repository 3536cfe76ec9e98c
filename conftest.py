"""Shared test setup, at the root so it also applies to the notebooks nbval collects."""

import collections
import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT / "tests"))
# One CPU thread for torch in the test workers and every process they start (set before any
# of them imports torch). The suite runs three workers and their kernels on a few cores; with
# torch's default of a thread per core each, the threads compete and spin (OpenMP) instead
# of working: the exercise checks alone took 48 s of CPU instead of 27. Grading kernels get
# one thread anyway (grader/isolation/sandbox.py, KERNEL_THREADS).
os.environ.setdefault("OMP_NUM_THREADS", "1")

from grader.kernels import template  # noqa: E402
from tools import cells, course, notebooks, source  # noqa: E402

ASSIGNMENTS = course.assignment_ids()


# The run's shared template: its own object, not the controller's template(), so that a test
# running in the controller (no xdist) that stops its process's template adopts and lets go
# of this one instead of killing it.
SHARED_TEMPLATE: list = []


def pytest_configure(config):
    """One kernel template for the whole run: the first pytest process starts it and names it in
    GRADER_TEMPLATE_FOLDER, which the test workers, the grader and nbgrader commands, Jupyter
    servers and Dask workers they start inherit, so each forks its kernels from it instead of
    starting a template of its own (importing torch and ipykernel: 1.4 s of CPU each, about 25
    times a run). A test of the template's own life lets go of it first (Template.stop) and
    starts one of its own; one whose point is another interpreter drops the variable."""
    if hasattr(config, "workerinput") or template.shared_folder():
        return  # a test worker, or a run inside a run: a live one is named already
    if template.kernels_would_fork(sandboxed=False):
        SHARED_TEMPLATE.append(template.Template())
        SHARED_TEMPLATE[0].spawn_early()


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session):
    """Name the template once it is ready, before pytest-xdist starts the workers."""
    if not SHARED_TEMPLATE:
        return
    try:
        SHARED_TEMPLATE[0].ensure_started()
    except template.TemplateUnavailable as error:
        print(f"no shared kernel template ({error}); each process starts its own")
        return
    os.environ[template.SHARED] = SHARED_TEMPLATE[0].folder


def pytest_unconfigure(config):
    for shared in SHARED_TEMPLATE:
        shared.stop()


# The longest units (a whole class on a hub in a browser; the LTI hub's tests; every right answer
# graded on two paths): handed out first, so that the short units fill the end of the run instead
# of one worker finishing them alone.
LONGEST = ("tests/test_hub.py", "tests/test_lti.py", "tests/test_right_answers.py")
# Units that mostly wait (the time-limit cases wait out their limits): next, beside the busy
# first units, where a worker that waits costs nothing, instead of at the end, where it left a
# core idle.
WAITING = ("tests/test_nbgrader_path_limits.py",)


def pytest_collection_modifyitems(config, items):
    """The order pytest-xdist hands out its units (pytest.ini: --no-loadscope-reorder): the two
    longest units, the units that mostly wait, then what loadscope's own order would be (the units
    with the most tests first),
    among units of as many tests browser tests, then the other integration tests, then units and
    notebooks. A unit is what loadscope keeps on one worker: a module, a class or a notebook.
    (Every browser module first ran four browsers at once and was no faster.)"""

    # By module: a module with a browser test (test_lab.py marks single tests) ranks as one.
    browser = {item.path for item in items if item.get_closest_marker("browser")}
    unit = {id(item): item.nodeid.rsplit("::", 1)[0] for item in items}  # as loadscope splits them
    size = collections.Counter(unit.values())

    def rank(item) -> tuple:
        kind = 0 if item.path in browser else 1 if item.get_closest_marker("integration") else 2
        name = unit[id(item)]
        return (not name.startswith(LONGEST), name not in WAITING, kind == 2, -size[name], kind)

    items.sort(key=rank)  # stable: each unit's tests stay together and in their order


# A whole, valid lesson 99 in jupytext form: tests break one rule at a time.
DEMO_LECTURE = """# ---
# jupyter:
#   jupytext:
#     notebook_metadata_filter: lesson
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
#   lesson:
#     gpu: false
#     title: Demo
# ---

# %% [markdown]
# # Lesson 99: Demo
#
# One idea.

# %%
x = 1
x

# %% [markdown]
# ## Summary
#
# Next: the exercise, `exercises/99_demo/99_demo.ipynb`.
"""
DEMO_EXERCISE = """# %% [markdown]
# # Exercise 99: Demo

# %%
import math

# %% answer grade_id="double"
def double(x):
    ### BEGIN SOLUTION
    return 2 * x
    ### END SOLUTION

# %% tests grade_id="test_double" points=2
assert double(2) == 4, "double(2) should be 4."
### BEGIN HIDDEN TESTS
assert double(-3) == -6, "double(-3) should be -6."
### END HIDDEN TESTS

# %% manual [markdown] grade_id="why" points=1
# Because.
"""
DEMO_WRONG = """# %% wrong id=double -- adds instead of multiplying
def double(x):
    return x + 2

# %% wrong id=double -- squares
def double(x):
    return x * x
"""
DEMO_RIGHT = """# %% right id=double -- adds x to itself
def double(x):
    return x + x

# %% right id=double -- shifts an int left, multiplies anything else
def double(x):
    return x << 1 if isinstance(x, int) else 2 * x

# %% right id=double -- sums a list of two
def double(x):
    return sum([x, x])
"""
DEMO_README = "# Demo course\n\n" + notebooks.TABLE_START + "\n" + notebooks.TABLE_END + "\n"


@pytest.fixture
def demo_lesson(tmp_path, monkeypatch):
    """A valid lesson, 99_demo, in a scratch tree the notebook builder and the
    rules use instead of the repository; returns its folder."""
    lesson = tmp_path / "lessons" / "99_demo"
    lesson.mkdir(parents=True)
    (lesson / "lecture.py").write_text(DEMO_LECTURE)
    (lesson / "exercise.py").write_text(DEMO_EXERCISE)
    wrong = tmp_path / "tests" / "wrong_answers"
    wrong.mkdir(parents=True)
    (wrong / "99_demo.py").write_text(DEMO_WRONG)
    right = tmp_path / "tests" / "right_answers"
    right.mkdir(parents=True)
    (right / "99_demo.py").write_text(DEMO_RIGHT)
    (tmp_path / "README.md").write_text(DEMO_README)
    monkeypatch.setattr(notebooks, "ROOT", tmp_path)
    monkeypatch.setattr(source, "ROOT", tmp_path)
    monkeypatch.setattr(cells, "ROOT", tmp_path)
    monkeypatch.setattr(cells, "WRONG_ANSWERS", wrong)
    monkeypatch.setattr(cells, "RIGHT_ANSWERS", right)
    return lesson
