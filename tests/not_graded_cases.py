"""Submissions and commands the not-graded tests share (tests/test_not_graded*.py): a class
of correct notebooks, `python -m grader grade` as an instructor runs it, and student code
that kills its own kernel, runs out of memory or never stops."""

from __future__ import annotations

import subprocess
import sys

import grader_cases
import nbformat
from submissions import answered, points

A = grader_cases.A
FULL = grader_cases.FULL


def write_class(folder, names):
    folder.mkdir()
    for name in names:
        nbformat.write(answered(A), folder / f"{name}.ipynb")


def grade_cli(root, folder, env, *extra, python=sys.executable, jobs=2, timeout: int | None = 20):
    """`python -m grader grade` as an instructor runs it, with `python` (a venv's, say)."""
    limits = ["--timeout", str(timeout)] if timeout else []
    command = [python, "-m", "grader", "grade", A, "--submissions", str(folder), "--root", str(root)]
    return subprocess.run(
        [*command, "--jobs", str(jobs), *limits, *extra], capture_output=True, text=True, env=env, cwd=root
    )


def crash(code):
    nb = answered(A)
    for cell in nb.cells:
        if cell.metadata.get("nbgrader", {}).get("grade_id") == "make_stack":
            cell.source = cell.source.replace(
                "def make_stack(factory, n):\n", "def make_stack(factory, n):\n" + code, 1
            )
    return nb


# Student code that kills its own kernel, runs out of memory or never stops (one each).
# The endless loop waits instead of spinning: stopped the same way (test_grader's loop_top
# is the busy loop), without burning the time limit on every path that grades it. The hog's
# bytes() are allocated zeroed but never written (calloc): the memory limit counts them all the
# same, so MemoryError comes at once, where writing 2 GiB raced the 5 s cell limit on a busy machine.
CRASHES = {
    "exits": "    import os\n    os._exit(1)\n",
    "hogs_memory": "    blocks = []\n    while True:\n        blocks.append(bytes(1 << 26))\n",
    "loops": "    import time\n    while True:\n        time.sleep(0.5)\n",
}


def write_crashes(folder):
    folder.mkdir(parents=True)
    for name, code in CRASHES.items():
        nbformat.write(crash(code), folder / f"{name}.ipynb")


def check_crashes_graded(scores, pages):
    """Each crash is the student's: graded, it costs only the cell it broke (a fresh kernel
    grades the items after a kernel's death), and the feedback names the cell and the cause."""
    lost = points(A)["test_make_stack"]
    assert scores == {"exits": FULL - lost, "hogs_memory": FULL - lost, "loops": FULL - lost}
    assert "test_make_stack: the kernel exited with status 1" in pages["exits"]
    hog = pages["hogs_memory"]
    at = hog.find("make_stack")
    assert "MemoryError" in hog, (
        f"no MemoryError in the memory hog's feedback; around make_stack: {hog[at : at + 3000]}"
    )
    assert "test_make_stack: timed out after 5 s" in pages["loops"]
