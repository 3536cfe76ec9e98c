"""The nbgrader course being graded, driven in-process through nbgrader's API.

A course is a folder with its own `nbgrader_config.py` (nbgrader's CLI and
Formgrader read the same file). `load_config(root)` reads the config of the
course at `root` (default: the current folder, as nbgrader's CLI does), so
`--root DIR` grades the course at DIR with DIR's own settings and writes its
outputs (gradebook, autograded/, grades/, feedback/) there.

Each start of the nbgrader CLI costs seconds before any work, so the grader
calls nbgrader's Python API instead.
"""

from __future__ import annotations

import functools
import logging
import os
import sys
from pathlib import Path

import nbformat
import nbgrader
import sqlalchemy
from alembic.config import Config as AlembicConfig
from alembic.script import ScriptDirectory
from nbgrader import api as nbgrader_api
from nbgrader.apps import NbGraderAPI
from nbgrader.coursedir import CourseDirectory
from traitlets.config import Config
from traitlets.config.loader import PyFileConfigLoader

from grader.course import history

CONFIG_FILE = "nbgrader_config.py"


@functools.cache
def gradebook_schema_head() -> str:
    """The newest revision of nbgrader's gradebook schema, which nbgrader stamps on every
    gradebook it creates.

    nbgrader finds it by running the `alembic heads` command: a second Python process that
    costs 1 to 3 s for every new gradebook (each Dask worker's scratch course, each course a
    test or `make bench` makes). alembic's own API reads the same migration scripts of the
    installed nbgrader in a millisecond; tests/test_units.py checks both give the same answer.
    """
    config = AlembicConfig()
    config.set_main_option("script_location", os.path.join(os.path.dirname(nbgrader.__file__), "alembic"))
    head = ScriptDirectory.from_config(config).get_current_head()
    if head is None:
        raise RuntimeError("nbgrader's gradebook migrations name no head revision")
    return head


@functools.lru_cache(maxsize=16)
def _engine(url: str, **options) -> sqlalchemy.Engine:
    return sqlalchemy.create_engine(url, **options)


def gradebook_engine(url: str, **options) -> sqlalchemy.Engine:
    """The SQLAlchemy engine a Gradebook of nbgrader's connects with: one per database in a process.

    nbgrader makes a new engine for every Gradebook it opens (nine for each submission it
    autogrades), and an engine keeps the SQL it has compiled, so each new one compiled every
    query again: a quarter of the grader's own CPU per submission. Gradebook.close() still closes
    its connections (Engine.dispose gives the engine a new, empty pool; a connection another
    thread's Gradebook has checked out finishes on the old one). An in-memory SQLite database
    lives only as long as its connections, so each Gradebook of one gets an engine of its own."""
    parsed = sqlalchemy.engine.make_url(url)
    if parsed.get_backend_name() == "sqlite" and parsed.database in (None, "", ":memory:"):
        return sqlalchemy.create_engine(url, **options)
    return _engine(str(url), **options)


# Every path that grades (the CLI, Formgrader, nbgrader's own commands through the course's
# nbgrader_config.py) imports this module, so each new gradebook is stamped without the process,
# and each process compiles the gradebook's SQL once.
nbgrader_api.get_alembic_version = gradebook_schema_head
nbgrader_api.create_engine = gradebook_engine


def load_config(root: Path | None = None, db_url: str | None = None) -> Config:
    """The nbgrader config of the course at `root` (default: the current folder), with `db_url`
    as its gradebook where one is given."""
    root = Path(root or os.getcwd()).resolve()
    if not (root / CONFIG_FILE).exists():
        raise FileNotFoundError(f"{root} is not an nbgrader course: it has no {CONFIG_FILE}")
    config = PyFileConfigLoader(CONFIG_FILE, path=str(root)).load_config()
    if "AutogradeApp" in config:
        # nbgrader's CLI reads its older name for Autograde's settings the same way (AutogradeApp._load_config).
        config.Autograde.merge(config.AutogradeApp)
        del config.AutogradeApp
    if "root" not in config.CourseDirectory:
        config.CourseDirectory.root = str(root)
    if db_url:
        config.CourseDirectory.db_url = db_url
    return config


def waits_for_hand(grade) -> bool:
    """Whether a gradebook grade is still to be given by hand: neither nbgrader scored it (a blank
    written answer it scores 0 does not wait) nor an instructor marked it (a written answer, a
    task, a code answer nbgrader could not score)."""
    return grade.auto_score is None and grade.manual_score is None


def points_to_grade_by_hand(submission) -> float:
    """The points of a gradebook submission still to be given by hand (waits_for_hand): the
    CSV's needs_manual, the feedback page's and the report's number."""
    return float(sum(g.max_score for nb in submission.notebooks for g in nb.grades if waits_for_hand(g)))


def course_root(config: Config) -> Path:
    return Path(config.CourseDirectory.root)


def directory(config: Config) -> CourseDirectory:
    """The course's folders, gradebook and id: its config's, or nbgrader's defaults where it sets none."""
    return CourseDirectory(config=config)


def db_url(config: Config) -> str:
    return directory(config).db_url


def api(config: Config):
    # nbgrader creates gradebooks by running the `alembic` command: the tools of
    # this interpreter's environment must be on PATH even when it was not activated.
    bin_dir = os.path.dirname(sys.executable)
    if bin_dir not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = bin_dir + os.pathsep + os.environ.get("PATH", "")
    # nbgrader refuses to work (and says so on every call) without its exchange folder.
    if "root" in config.Exchange:
        Path(config.Exchange.root).mkdir(parents=True, exist_ok=True)
    coursedir = CourseDirectory(config=config)
    # What the course's config names by module (a late-penalty plugin beside it, say) is imported
    # from the course's folder, as nbgrader's CLI, run there, imports it (its init_syspath).
    # Appended: a file in the course folder never shadows a module the grader itself imports.
    if coursedir.root not in sys.path:
        sys.path.append(coursedir.root)
    log = logging.getLogger("nbgrader-course")
    log.setLevel(logging.WARNING)
    return NbGraderAPI(coursedir=coursedir, config=config, log=log)


class NoSuchAssignment(ValueError):
    """The course has no source notebook for the assignment named."""


def generate(course_api, assignment: str) -> None:
    """Release `assignment` again; the release it replaces is remembered first (course/history.py), so
    students who fetched it are graded as holding it, not as having edited it."""
    coursedir = course_api.coursedir
    folder = Path(coursedir.format_path(coursedir.release_directory, ".", assignment))
    for notebook in folder.glob("*.ipynb") if folder.is_dir() else []:
        history.remember_release(Path(coursedir.root), assignment, notebook.stem, nbformat.read(notebook, as_version=4))
    source = Path(coursedir.format_path(coursedir.source_directory, ".", assignment))
    if not any(source.glob("*.ipynb")):
        raise NoSuchAssignment(
            f"the course at {coursedir.root} has no assignment {assignment!r}: no notebook in {source} "
            "(nbgrader: No notebooks were matched)"
        )
    result = course_api.generate_assignment(assignment, force=True, create=True)
    if not result["success"]:
        raise RuntimeError(
            f"generate_assignment {assignment} failed:\n{result.get('log', '')}{result.get('error', '')}"
        )


def register(course_api, assignment: str) -> None:
    """Put `assignment` into the gradebook (what generate_assignment records) without
    rewriting the course's committed release: the student version is generated
    into a scratch folder, and grading restores against the release."""
    config = Config(course_api.config)
    config.CourseDirectory.release_directory = os.path.join(".grader", "release")
    generate(api(config), assignment)
