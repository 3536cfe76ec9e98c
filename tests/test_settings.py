"""A grading run's settings are resolved once (grader/grading/settings.py): the command line's Options and
the course's config become one Run, which the workers, the Dask tasks and the rows read. Nothing
after resolve reads the course's config file again."""

from __future__ import annotations

import pickle

import nbformat
import pytest
from nbgrader_docs_course import MINIMAL_CONFIG

from grader.grading import grade, settings
from grader.isolation import sandbox
from tools import cells, course

# The grading test below runs a kernel in the sandbox; the pieces are marked unit (make test-fast).
pytestmark = pytest.mark.integration

A = "01_blocks"


@pytest.fixture
def course_root(tmp_path):
    root = tmp_path / "course"
    (root).mkdir()
    (root / "nbgrader_config.py").write_text(MINIMAL_CONFIG + "c.Execute.timeout = 17\n", encoding="utf-8")
    return root


@pytest.mark.unit
def test_resolve_reads_the_course_once_into_one_value(course_root):
    options = settings.Options(A, course_root, cell_timeout=settings.COURSE_LIMIT, root=course_root, memory_mb=512)
    run = settings.resolve(options)
    assert run.options.cell_timeout == 17, "the course's own limit, as nbgrader reads it"
    assert run.config.GuardedExecute.timeout == 17 and run.config.SandboxedKernelManager.memory_mb == 512
    assert run.config.CourseDirectory.course_id == "course101"
    assert run.config.Autograde.autograde_preprocessors, "the course's engine is the grader's"
    assert settings.resolve(run) is run, "a Run is resolved already"
    # A worker's copy adds its own sandbox user and folders; the run's value stays as it was.
    copy = settings.worker_config(run, 4321, root="/elsewhere")
    assert copy.SandboxedKernelManager.uid == 4321 and copy.CourseDirectory.root == "/elsewhere"
    assert "uid" not in run.config.SandboxedKernelManager and run.config.CourseDirectory.root == str(course_root)
    # What a local worker or a Dask task is sent.
    assert pickle.loads(pickle.dumps(run)).config == run.config


@pytest.mark.unit
def test_a_setting_nbgrader_refuses_is_named_by_resolve(course_root):
    (course_root / "nbgrader_config.py").write_text(MINIMAL_CONFIG + 'c.Execute.timeout = "soon"\n', encoding="utf-8")
    with pytest.raises(settings.BadSetting, match="Execute.timeout"):
        settings.resolve(settings.Options(A, course_root, cell_timeout=settings.COURSE_LIMIT, root=course_root))
    # A limit the command line gave does not need the course's.
    assert (
        settings.resolve(settings.Options(A, course_root, cell_timeout=None, root=course_root)).options.cell_timeout
        is None
    )


@pytest.mark.sandbox
def test_the_workers_grade_from_the_resolved_run_not_the_config_file(tmp_path):
    """After resolve, the course's config file is made unreadable as config: a worker that read
    it again would fail the run. The class grades all the same, with the run's limits."""
    assert sandbox.available()
    root = tmp_path / "course"
    course.temporary_course(root, [A])
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    nbformat.write(cells.answered(A), downloads / f"honest_{A}.ipynb")
    run = grade.resolve(grade.Options(A, downloads, jobs=1, root=root, cell_timeout=30, notebook_timeout=120))
    (root / "nbgrader_config.py").write_text("raise RuntimeError('the config file was read again')\n")
    (row,) = grade.run(run)
    assert row.status == "graded" and row.score == row.max_score > 0, row
