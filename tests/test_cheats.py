"""Grades that student code cannot forge, hidden tests that student code cannot read.

Every notebook of the cheat corpus (cheats.py) is graded by `python -m grader
grade`'s engine in one class: each scores what its answers earn (0 on the blank
exercise), is flagged with what it tried, and no feedback file quotes a hidden
test. Honest notebooks (magics, plots, seeds, warnings while a test runs) keep
full marks and no flag. The other paths (nbgrader's CLI, Formgrader, Dask, the
hub) run the same engine; their modules grade a cheat of their own.
"""

from __future__ import annotations

import sys

import cheats
import pytest
from submissions import ROOT, full_score, points

from conftest import selected
from grader.course import feedback
from grader.grading import grade
from grader.records import export, report
from grader.runner import trusted
from tools import course, source

pytestmark = [pytest.mark.integration, pytest.mark.sandbox]

A = cheats.A
MONITORING = hasattr(sys, "monitoring")  # Python 3.12+: one profiler sees every thread


def hidden_test_lines() -> list[str]:
    import nbformat

    source = nbformat.read(ROOT / "solutions" / A / f"{A}.ipynb", as_version=4)
    hidden = [line for cell in source.cells if cell.cell_type == "code" for line in trusted.hidden_lines(cell.source)]
    # A line the release shows too (a visible check repeated among the hidden ones) is no secret.
    release = nbformat.read(ROOT / "exercises" / A / f"{A}.ipynb", as_version=4)
    shown = "\n".join(cell.source for cell in release.cells)
    return [line for line in hidden if line not in shown]


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    import nbformat

    tmp = tmp_path_factory.mktemp("cheats")
    folder = tmp / "submissions"
    folder.mkdir()
    for cheat in cheats.CHEATS:
        nbformat.write(cheats.notebook(cheat), folder / f"{cheat.name}.ipynb")
    nbformat.write(cheats.history_leak(), folder / "history_leak.ipynb")
    nbformat.write(cheats.profiler_thread(), folder / "profiler_thread.ipynb")
    for name in cheats.HONEST:
        nbformat.write(cheats.honest(name), folder / f"honest_{name}.ipynb")
    nbformat.write(cheats.answered(A), folder / "honest_plain.ipynb")
    for name in cheats.MESSAGES:
        nbformat.write(cheats.message_notebook(name), folder / f"{name}.ipynb")
    root = tmp / "course"
    course.temporary_course(root, [A])
    rows = grade.run(grade.Options(A, folder, jobs=2, root=root, cell_timeout=30, notebook_timeout=120))
    export.write_csv(rows, tmp / "grades.csv")
    pages = feedback.generate(A, root=root)
    return {
        "rows": {r.student_id: r for r in rows},
        "root": root,
        "csv": tmp / "grades.csv",
        "feedback": {page.parent.parent.name: page.read_text() for page in pages},
    }


@pytest.mark.parametrize("cheat", cheats.CHEATS, ids=lambda c: c.name)
def test_a_cheat_earns_only_what_its_answers_earn_and_is_flagged(graded, cheat):
    row = graded["rows"][cheat.name]
    assert row.status == "flagged", (row.status, row.detail)
    assert cheat.flag.lower() in row.flags.lower(), row.flags
    if cheat.base == "blank":
        assert row.score == 0, (row.score, row.flags)
    else:
        assert row.score <= full_score(A)


@pytest.mark.parametrize("student", [c.name for c in cheats.CHEATS] + ["history_leak", *cheats.MESSAGES])
def test_no_feedback_quotes_a_hidden_test(graded, student):
    secret = hidden_test_lines()
    assert secret, "the release has hidden tests to protect"
    page = graded["feedback"][student]
    leaked = [line for line in secret if line in page]
    assert not leaked, f"{student}'s feedback quotes hidden tests: {leaked[:2]}"


def test_hidden_test_cells_show_no_student_output(graded):
    """What the student's code printed while a hidden test ran never reaches the feedback
    (test_MySequential holds hidden tests; its answer prints whenever a test builds one)."""
    import nbformat

    source = nbformat.read(ROOT / "solutions" / A / f"{A}.ipynb", as_version=4)
    cell = next(c for c in source.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "test_MySequential")
    assert trusted.HIDDEN_BEGIN in cell.source
    assert "PRINTED-WHILE-A-HIDDEN-TEST-RAN" not in graded["feedback"]["honest_prints_in_test"]


@pytest.mark.parametrize("name", [*cheats.HONEST, "plain"])
def test_honest_notebooks_keep_full_marks_and_no_flag(graded, name):
    row = graded["rows"][f"honest_{name}"]
    assert (row.score, row.status, row.flags) == (full_score(A), "graded", ""), row.detail


def test_a_students_error_in_a_hidden_test_names_its_type_message_and_line(graded):
    """Issue 46: before, only "your code raised AttributeError while a hidden test of this item
    called it". The message here names `ReLU`, which only the hidden test uses: withheld."""
    page = " ".join(graded["feedback"]["raises_in_a_hidden_test"].split())
    assert (
        "your code raised AttributeError while a hidden test of this item called it, at make_stack, line 5: "
        "`layer.reset_parameters() # fresh weights`" in page
    ), page[page.find("your code raised") :][:400]
    assert graded["rows"]["raises_in_a_hidden_test"].items["test_make_stack"] == 0


def test_a_hidden_tests_message_says_it_is_hidden(graded):
    page = graded["feedback"]["fails_a_hidden_assert"]
    assert "Hidden test: factory() should be called exactly n times; it was called 4 times." in page
    row = graded["rows"]["fails_a_hidden_assert"]
    assert (row.items["test_make_stack"], row.status, row.flags) == (0, "graded", "")


def test_a_warning_while_a_test_runs_is_shown_never_scored(graded):
    page = graded["feedback"]["honest_warns_in_test"]
    assert "a harmless warning from the answer" in page


def test_the_flags_column_names_what_was_tried_and_where(graded):
    rows = {r["student_id"]: r for r in export.read_csv(graded["csv"])}
    assert rows["honest_plain"]["flags"] == ""
    assert rows["input_transformers_cleanup"]["flags"].startswith(cheats.FIRST_ANSWER + ":")
    assert list(rows["honest_plain"])[:6] == ["student_id", "score", "max_score", "status", "detail", "flags"]


def test_a_cheat_loses_the_points_of_a_right_answer_it_broke(graded):
    """A correct answer whose tests were tampered with during the run keeps nothing for that item."""
    row = graded["rows"]["leak_caller_source"]
    item = [t for t in points(A) if t == "test_MySequential" or t.startswith("test_MySequential_")]
    assert len(item) > 1, "MySequential's clauses are tests cells of their own"
    assert all(row.items[t] == 0 for t in item), row.items
    assert row.score == full_score(A) - sum(points(A)[t] for t in item)


def test_a_profiler_in_a_thread_of_its_own_never_sees_a_test(graded):
    """No test code recorded. Before Python 3.12 the profiler sees its own thread only: full marks
    (the answers are right), no flag. From 3.12 it sees every thread: the runner took it away when
    the first test started, which was then run under it, so that item (MySequential's first
    clause) scores nothing and the notebook is flagged."""
    row = graded["rows"]["profiler_thread"]
    assert "TESTS-SEEN-BY-THE-PROFILER 0" in graded["feedback"]["profiler_thread"]
    if MONITORING:
        assert row.status == "flagged" and "sys.monitoring" in row.flags, row.flags
        assert row.score == full_score(A) - points(A)["test_MySequential"], row.items
    else:
        assert (row.score, row.status, row.flags) == (full_score(A), "graded", ""), row.detail


def test_the_class_report_lists_the_flagged(graded):
    text = report.report(A, root=graded["root"], out=graded["root"] / "report.png")
    flagged = [c.name for c in cheats.CHEATS] + (["profiler_thread"] if MONITORING else [])
    assert (
        f"flagged (tried to change how they are graded; read docs/grade-integrity.md, 'Reading a flag'): {len(flagged)}"
        in text
    )
    assert "input_transformers_cleanup: MySequential" in text


def test_formgrader_shows_the_flag_as_a_comment(graded):
    from nbgrader.api import Gradebook

    config = course.load_config(graded["root"])
    with Gradebook(config.CourseDirectory.db_url) as gradebook:
        comment = gradebook.find_comment(cheats.FIRST_ANSWER, A, A, graded["rows"]["run_cell_on_class"].grader_id)
        assert "Flagged by the grader" in comment.auto_comment and "run_cell" in comment.auto_comment


# -- names the tests look up, bound by the notebook: every lesson, every item (issue 46) ----------
LESSONS = source.lesson_ids()
GPU_ONLY = ("06_file_io", ("test_checkpoint_gpu",))  # the issue's notebook: all right but that


@pytest.fixture(scope="module")
def shadowing(tmp_path_factory, request):
    """Per lesson: every answer wrong (cheats.wrong_everywhere), the same with liars bound under
    builtin names, and the model answers with honest names of the builtins'; for lesson 6 also
    the issue's notebook (wrong only on the GPUs' generators) with those liars, or with a test
    helper of its own."""
    import nbformat

    tmp = tmp_path_factory.mktemp("shadowing")
    lessons = [lesson for lesson in LESSONS if lesson in selected(request, "lesson")]  # make lesson: one
    root = tmp / "course"
    course.temporary_course(root, lessons)
    rows = {}
    for lesson in lessons:
        folder = tmp / lesson
        folder.mkdir()
        wrong = cheats.wrong_everywhere(lesson)
        notebooks = {
            "wrong": wrong,
            "wrong_shadowed": cheats.shadowed(wrong),
            "honest": cheats.shadowed(cheats.answered(lesson), cheats.HONEST_SHADOWS),
        }
        if lesson == GPU_ONLY[0]:
            gpu = cheats.wrong_only(*GPU_ONLY)
            notebooks.update(gpu_shadowed=cheats.shadowed(gpu), gpu_helper=cheats.shadowed(gpu, cheats.SHADOWED_HELPER))
        for name, nb in notebooks.items():
            nbformat.write(nb, folder / f"{name}.ipynb")
        found = grade.run(grade.Options(lesson, folder, jobs=2, root=root, cell_timeout=30, notebook_timeout=120))
        rows.update({(lesson, r.student_id): r for r in found})
    return rows


@pytest.mark.parametrize(("lesson", "item"), [(lesson, item) for lesson in LESSONS for item in points(lesson)])
def test_builtins_bound_by_the_notebook_lift_no_item(shadowing, lesson, item):
    """The liars (`all`, `isinstance`, ... of the notebook's) change nothing the tests call: each
    item scores at most what the same wrong answers score without them, and nothing is flagged
    (binding a name is honest Python). Before, lesson 6's test_checkpoint_gpu scored 1."""
    wrong, cheat = shadowing[(lesson, "wrong")], shadowing[(lesson, "wrong_shadowed")]
    assert cheat.items[item] <= wrong.items[item], (cheat.items, cheat.detail)
    assert (cheat.status, cheat.flags) == ("graded", ""), cheat.flags


@pytest.mark.parametrize(("lesson", "name"), [(GPU_ONLY[0], "gpu_shadowed"), (GPU_ONLY[0], "gpu_helper")])
def test_the_issues_notebook_earns_nothing_for_its_wrong_item(shadowing, lesson, name):
    """All right but the GPUs' generators, with liars under builtin names or a `_call` of its own
    (a helper of lesson 6's first test, used by the later ones): 0 for that item, no flag."""
    row = shadowing[(lesson, name)]
    assert row.items[GPU_ONLY[1][0]] == 0 and row.score <= full_score(GPU_ONLY[0]) - 1, (row.items, row.detail)
    assert (row.status, row.flags) == ("graded", ""), row.flags


@pytest.mark.parametrize("lesson", LESSONS)
def test_a_right_answer_with_names_of_the_builtins_keeps_full_marks(shadowing, lesson):
    """`all = [...]`, `zip = 'data.zip'`, a `sorted` of the student's own: the tests still get the
    real builtins (before, such a notebook lost 7 of lesson 6's 12 points, 'str' object is not
    callable)."""
    row = shadowing[(lesson, "honest")]
    assert (row.score, row.status, row.flags) == (full_score(lesson), "graded", ""), (row.items, row.detail)
