"""Release an assignment again on a running `make hub`, after a fix mid-term (docs/instructors.md).

    sudo make hub-rerelease A=01_blocks
    (python hub/rerelease.py 01_blocks, with the running hub's HUB_STATE)

The hub grades from its own copy of the sources (the grader's course folder), so a fix made in
this checkout (lessons/<id>/exercise.py, then `make notebooks LESSON=<id>`) reaches the class
only through this: it copies solutions/<id>/ into the grader's course, generates the student
version again (the release it replaces is remembered, so a student holding it is graded against
the corrected release, not told they edited it) and puts it in the exchange in place of the old
one (nbgrader's release_assignment --force), all as the grader account. No server restarts:
students who fetch from now on get the fixed exercise; those who fetched before keep theirs.
"""

from __future__ import annotations

import os
import pwd
import shutil
import sys
from pathlib import Path

import serve

GENERATE = """
import sys
from grader.course import nbgrader_course as course
course.generate(course.api(course.load_config(sys.argv[1])), sys.argv[2])
"""


def rerelease(assignment: str, state: Path) -> None:
    settings = serve.running_class(state)
    source = serve.ROOT / "solutions" / assignment
    if not (source / f"{assignment}.ipynb").exists():
        serve.fail(f"no source notebook solutions/{assignment}/{assignment}.ipynb in this checkout")
    folder, grader = Path(settings["course"]), pwd.getpwnam(settings["grader"])
    target = folder / "solutions" / assignment
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(source, target)
    for path in [target, *target.rglob("*")]:
        os.chown(path, grader.pw_uid, grader.pw_gid)
    steps = [
        [sys.executable, "-c", GENERATE, str(folder), assignment],
        [str(serve.VENV_BIN / "nbgrader"), "release_assignment", assignment, "--force"],
    ]
    for step in steps:
        done = serve.as_grader(grader, step, folder)
        if done.returncode != 0:
            serve.fail(f"{' '.join(step[-3:])} failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    print(f"{assignment} released again: students who fetch now get the fixed exercise")


if __name__ == "__main__":
    if os.geteuid() != 0 or len(sys.argv) != 2:
        serve.fail("usage, as root: python hub/rerelease.py ASSIGNMENT (sudo make hub-rerelease A=...)")
    rerelease(sys.argv[1], Path(os.environ.get("HUB_STATE") or serve.ROOT / ".hub").resolve())
