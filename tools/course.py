"""The nbgrader course in this repository, driven in-process.

Each start of the nbgrader CLI costs seconds before any work, so make targets
and tests call nbgrader's Python API with the configuration from the repo's own
`nbgrader_config.py` (the file the CLI and formgrader read too). A test can
re-root that configuration in a temporary folder so it never touches the
repository's gradebook.

    python -m tools.course exercises [ID ...]   # regenerate exercises/ from solutions/
"""
from __future__ import annotations

import logging
import os
import shutil
import sys
from pathlib import Path

from traitlets.config import Config
from traitlets.config.loader import PyFileConfigLoader

ROOT = Path(__file__).resolve().parent.parent


def assignment_ids() -> list[str]:
    return sorted(p.name for p in (ROOT / "solutions").iterdir()
                  if (p / f"{p.name}.ipynb").exists())


def load_config(root: Path | None = None) -> Config:
    """The repo's nbgrader config; with `root`, a copy whose course lives there."""
    config = PyFileConfigLoader("nbgrader_config.py", path=str(ROOT)).load_config()
    if root is not None:
        root = Path(root)
        config.CourseDirectory.root = str(root)
        config.CourseDirectory.db_url = f"sqlite:///{root / 'gradebook.db'}"
        config.Exchange.root = str(root / "exchange")
    return config


def api(config: Config):
    from nbgrader.apps import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory

    # nbgrader creates gradebooks by running the `alembic` command: the tools of
    # this interpreter's environment must be on PATH even when it was not activated.
    bin_dir = os.path.dirname(sys.executable)
    if bin_dir not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = bin_dir + os.pathsep + os.environ.get("PATH", "")
    # nbgrader refuses to work (and says so on every call) without its exchange folder.
    Path(config.Exchange.root).mkdir(parents=True, exist_ok=True)
    coursedir = CourseDirectory(config=config)
    log = logging.getLogger("nbgrader-course")
    log.setLevel(logging.WARNING)
    return NbGraderAPI(coursedir=coursedir, config=config, log=log)


def temporary_course(root: Path, ids: list[str] | None = None):
    """A course folder at `root` holding copies of the source and released notebooks."""
    for assignment in ids or assignment_ids():
        shutil.copytree(ROOT / "solutions" / assignment, root / "solutions" / assignment)
        shutil.copytree(ROOT / "exercises" / assignment, root / "exercises" / assignment)
    return api(load_config(root))


def register(course_api, assignment: str) -> None:
    """Put `assignment` into the gradebook (what generate_assignment records) without
    rewriting the committed release: the student version is generated into a
    scratch folder of the course, and grading restores against the release."""
    from traitlets.config import Config

    config = Config(course_api.config)
    config.CourseDirectory.release_directory = os.path.join(".grader", "release")
    scratch_api = api(config)
    generate(scratch_api, assignment)


def generate(course_api, assignment: str) -> None:
    result = course_api.generate_assignment(assignment, force=True, create=True)
    if not result["success"]:
        raise RuntimeError(f"generate_assignment {assignment} failed:\n{result.get('log', '')}"
                           f"{result.get('error', '')}")


def main(argv: list[str]) -> int:
    if not argv or argv[0] != "exercises":
        print(__doc__, file=sys.stderr)
        return 2
    course_api = api(load_config())
    for assignment in argv[1:] or assignment_ids():
        generate(course_api, assignment)
        print(f"generated exercises/{assignment}/")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
