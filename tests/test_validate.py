"""A student's `nbgrader validate`, with the course's config and with the hub's users' config:
each failed test's hint arrives whole (nbgrader cuts lines at 90 characters unless told), and
nothing a student cannot act on is printed (the kernel's start-up warnings)."""

import functools
import os
import re
import subprocess
from pathlib import Path

import grader_cases
import nbformat
import pytest
import submissions
from nbgrader.api import Gradebook

from conftest import ROOT
from grader import judges
from grader.course import feedback
from grader.grading import grade
from grader.kernels.template import GRADER_KERNEL
from grader.runner import trusted
from tools import cells, course

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

    from grader import pipeline
    from grader.course import nbgrader_course as course

    limit = course.load_config(ROOT).Execute.timeout  # the course's own config
    unset = Config()
    pipeline.student_validate(unset)
    assert unset.Execute.timeout == limit, "validate's cell limit is not the course's"
    chosen = Config()
    chosen.Execute.timeout = 5
    pipeline.student_validate(chosen)
    assert chosen.Execute.timeout == 5, "a limit the config sets was overridden"


# -- validate's verdict is the grade's ------------------------------------------------------------
FAILED_CELL = re.compile(r"The following cell failed:\n(.*?)\nThe error was:", re.S)


def visible_only(source: str) -> str:
    """A tests cell as validate runs it: no hidden tests (so no judge), no judge marker line."""
    return judges.MARKER.sub("", feedback.HIDDEN.sub("", source))


def fixtures() -> dict[str, nbformat.NotebookNode]:
    """Every right and wrong answer of lesson A, each in its own notebook, by a file-safe name."""
    found = {f"right{n}": r for n, r in enumerate(cells.read_right_answers(A))}
    found |= {f"wrong{n}": w for n, w in enumerate(cells.read_wrong_answers(A))}
    return {name: submissions.answered(A, {f.answer_id: f.code}) for name, f in found.items()}


# The verdicts' kernels fork from the suite's warm template (as nbval's do): 1.2 s a notebook
# instead of 2.6 s for a plain python3 kernel, which imports torch again each time. Nothing of a
# verdict depends on how the kernel started; the plain start a student gets is checked above
# (test_validate_shows_the_whole_hint_and_no_noise, three configs).
TEMPLATE_KERNEL = f"--Execute.kernel_name={GRADER_KERNEL}"


def start_validate(paths: list, cwd) -> subprocess.Popen:
    """`nbgrader validate` on the notebooks at once, from `cwd`, started (the grading runs meanwhile)."""
    env = grader_cases.cli_env(PYTHONUNBUFFERED="1")  # the log (stderr) and the report (stdout) in order
    return subprocess.Popen(
        [str(grader_cases.BIN / "nbgrader"), "validate", TEMPLATE_KERNEL, *map(str, paths)],
        cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip


def validate_verdicts(paths: list, started: subprocess.Popen) -> dict[str, set[str]]:
    """The test cells each notebook fails, from the report of the validate run `started` on `paths`."""
    tests = {
        c.metadata.nbgrader.grade_id: flat(c.source) for c in submissions.exercise(A).cells if trusted.is_test_cell(c)
    }
    said, _ = started.communicate()
    sections = re.split(r"\[ValidateApp \| INFO\] Validating '([^']+)'\n", said)[1:]
    verdicts = {}
    for path, report in zip(sections[::2], sections[1::2]):
        failed = {flat(block) for block in FAILED_CELL.findall(report)}
        verdicts[Path(path).stem] = {name for name, source in tests.items() if source in failed}
        assert ("Success!" in report) == (not verdicts[Path(path).stem]), report[-3000:]
    assert len(verdicts) == len(paths), said[-3000:]
    return verdicts


# The fixtures' names, for the tests' ids (the notebooks are made once, by the fixture below).
FIXTURES = [f"right{n}" for n in range(len(cells.read_right_answers(A)))]
FIXTURES += [f"wrong{n}" for n in range(len(cells.read_wrong_answers(A)))]


@pytest.fixture(scope="module")
def verdicts(tmp_path_factory) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """Every fixture of lesson A validated and graded once, side by side: (the test cells
    `nbgrader validate` says each fails, the code cells each loses points in at grading). Graded
    against its visible tests only (a course whose source has no hidden tests); half the fixtures
    are validated from the course folder, half from a folder outside it (the environment's config)."""
    tmp = tmp_path_factory.mktemp("validate-verdicts")
    root = tmp / "course"
    course.temporary_course(root, [A])
    source = root / "solutions" / A / f"{A}.ipynb"
    nb = nbformat.read(source, as_version=4)
    for cell in nb.cells:
        if trusted.is_test_cell(cell):
            cell.source = visible_only(cell.source)
    nbformat.write(nb, source)
    folder, outside = tmp / "class", tmp / "home"
    folder.mkdir(), outside.mkdir()
    for name, notebook in fixtures().items():
        nbformat.write(notebook, folder / f"{name}.ipynb")
    paths = sorted(folder.glob("*.ipynb"))
    halves = [(paths[::2], start_validate(paths[::2], ROOT)), (paths[1::2], start_validate(paths[1::2], outside))]
    try:
        rows = grade.run(grade.Options(A, folder, jobs=2, root=root, cell_timeout=60, notebook_timeout=300))
    except BaseException:
        for _, started in halves:
            started.kill()
        raise
    said = validate_verdicts(*halves[0]) | validate_verdicts(*halves[1])
    assert {row.status for row in rows} == {"graded"}, [(r.student_id, r.detail) for r in rows]
    graded = {}
    with Gradebook(course.load_config(root).CourseDirectory.db_url) as gradebook:
        for name in said:
            grades = gradebook.find_submission_notebook(A, A, name).grades
            graded[name] = {g.name for g in grades if g.cell.cell_type == "code" and g.score < g.max_score}
    return said, graded


@pytest.mark.sandbox
@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_validate_gives_the_grades_verdict_for_every_right_and_wrong_answer(verdicts, name):
    """Every fixture of lesson A fails at grading exactly the cells `nbgrader validate` says it
    fails: the same rules on both sides (a warning, a hint, a time limit), so a student who passes
    validate can lose points only to a clause a hidden test checks."""
    said, graded = verdicts
    assert graded[name] == said[name], (name, "graded", sorted(graded[name]), "validate", sorted(said[name]))


@pytest.mark.sandbox
def test_the_fixtures_fail_some_visible_tests_and_pass_others(verdicts):
    said, _ = verdicts
    assert set(said) == set(FIXTURES)
    assert any(said.values()) and not all(said.values()), "the fixtures fail some visible tests and pass others"
