"""nbgrader's own autograde scenarios as the yardstick: each course below is built from the test
files the installed nbgrader ships (`nbgrader/tests/apps/files/`, read where the package has them;
nothing is copied into this repository), set up as nbgrader's `test_nbgrader_autograde.py` sets it
up, and graded twice: by plain `nbgrader autograde` (the course's config knows nothing of the
grader) and by `python -m grader grade ps1 --root COURSE`. The grader must give every notebook the
same score and leave the same files in `autograded/`; where it differs on purpose (a cheat flagged)
the test names it.

Three courses cover, between them: submitted-unchanged / -changed and both cheat attempts under a
config with `c.Execute.timeout = None` (test_showtraceback_exploit), the files a student hands in
beside the notebook with `exclude_overwriting`, in a sub-folder too (test_grade_overwrite_files*),
a notebook that reads its own data.txt (open_relative_file), a file the notebook writes
(test_side_effects), NBGRADER_EXECUTION (test_grade_with_validating_envvar), a notebook left out
of a two-notebook assignment whose cells share their names (test_grade_missing_notebook), and an
empty release notebook without a kernelspec (test_missing_files). The courses are built and
compared by nbgrader_scenario_courses.py; test_nbgrader_scenarios_dates.py and _autotests.py grade
the other scenarios, and test_nbgrader_scenario_map.py places every one of nbgrader's.
"""

from __future__ import annotations

from types import SimpleNamespace

import nbformat
import pytest
from nbgrader.api import Gradebook
from nbgrader_docs_course import MINIMAL_CONFIG
from nbgrader_scenario_courses import EMPTY, FILES, A, build, check_same, grade_both, texts
from traitlets.config import Config

from grader.__main__ import main
from grader.course import collect, restore
from grader.course import nbgrader_course as course
from grader.execute import kernel_start
from grader.execute.cell_limits import cell_limit
from grader.grading import grade, settings
from grader.isolation import spec as sandbox_spec
from grader.records import report

# The scenarios grade in the sandbox; the pieces below are also marked unit (make test-fast).
pytestmark = pytest.mark.integration


@pytest.mark.sandbox
def test_cheat_attempts_under_no_time_limit_and_files_handed_in_with_exclude_overwriting(tmp_path):
    """test_showtraceback_exploit (c.Execute.timeout = None) and test_grade_overwrite_files(_subdirs)."""
    helpers = {"helper.py": "print('hello!')\n", "subdir/helper.py": "print('hello!')\n"}
    given = {"data.csv": "some,other,data\n", "subdir/data.csv": "some,other,data\n"}
    mine = {"helper.py": "print('this is different!')\n", "subdir/helper.py": "print('this is different!')\n"}
    ours, plain, downloads = build(
        tmp_path,
        'c.Execute.timeout = None\nc.Autograde.exclude_overwriting = {"ps1": ["helper.py", "subdir/helper.py"]}\n',
        {"p1": "submitted-unchanged.ipynb"},
        {"data.csv": "some,data\n", "subdir/data.csv": "some,data\n", **helpers},
        {
            "foo": {"p1.ipynb": "submitted-unchanged.ipynb", "timestamp.txt": "2015-02-02 15:58:23.948203 UTC",
                    **given, **mine},
            "bar": {"p1.ipynb": "submitted-changed.ipynb"},
            "spam": {"p1.ipynb": "submitted-cheat-attempt.ipynb"},
            "eggs": {"p1.ipynb": "submitted-cheat-attempt-alternative.ipynb"},
        },
    )  # fmt: skip
    rows = grade_both(ours, plain, downloads, tmp_path, other_paths=True)
    assert {s: float(r["score"]) for s, r in rows.items()} == {"foo": 1, "bar": 2, "spam": 1, "eggs": 1}
    check_same(ours, plain, rows, flagged={s for s, r in rows.items() if r["status"] == "flagged"})
    # Points still to grade by hand, one definition: what neither nbgrader scored nor anyone marked
    # (foo's blank written answer nbgrader scored 0 does not wait; bar's written answer does).
    with Gradebook(f"sqlite:///{plain / 'gradebook.db'}") as gradebook:
        waiting = {s.student.id: course.points_to_grade_by_hand(s) for s in gradebook.find_assignment(A).submissions}
    assert {s: float(r["needs_manual"]) for s, r in rows.items()} == waiting and waiting["foo"] == 0, waiting
    with Gradebook(f"sqlite:///{ours / 'gradebook.db'}") as gradebook:  # marked in Formgrader
        for notebook in gradebook.find_submission(A, "bar").notebooks:
            for mark in notebook.grades:
                if course.waits_for_hand(mark):
                    mark.manual_score = 1
        gradebook.db.commit()
    assert report.collect_scores(A, root=ours)[-1]["bar"] == 0
    files = texts(ours, "foo")
    # The course's files over the student's, but the student's helper.py, as nbgrader's test asserts.
    assert files["data.csv"] == files["subdir/data.csv"] == "some,data\n"
    assert files["helper.py"] == files["subdir/helper.py"] == "print('this is different!')\n"


@pytest.mark.sandbox
def test_files_read_written_and_nbgrader_execution_in_one_assignment(tmp_path):
    """open_relative_file + data.txt (10 points), side-effects (side-effect.txt kept in autograded/)
    and validating-environment-variable (0: NBGRADER_EXECUTION is set while autograding)."""
    notebooks = {
        "p1": "open_relative_file.ipynb",
        "p2": "side-effects.ipynb",
        "p3": "validating-environment-variable.ipynb",
    }
    data = (FILES / "data.txt").read_text(encoding="utf-8")
    ours, plain, downloads = build(
        tmp_path,
        "",
        notebooks,
        {},
        {"foo": {**{f"{n}.ipynb": f for n, f in notebooks.items()}, "data.txt": data}},
    )
    rows = grade_both(ours, plain, downloads, tmp_path, other_paths=True)
    assert float(rows["foo"]["score"]) == 10, rows["foo"]
    assert texts(ours, "foo")["side-effect.txt"] == "a side effect"
    check_same(ours, plain, rows)


@pytest.mark.sandbox
def test_a_notebook_left_out_and_an_empty_release_without_a_kernelspec(tmp_path):
    """test_grade_missing_notebook (p1 and p2 share their cells' names: the CSV says p1:foo, p2:foo)
    and test_missing_files' empty notebook without a kernelspec (0 of 0 points, graded)."""
    ours, plain, downloads = build(
        tmp_path,
        "",
        {"p1": "submitted-unchanged.ipynb", "p2": "submitted-unchanged.ipynb", "p3": EMPTY},
        {},
        {
            "foo": {"p1.ipynb": "submitted-changed.ipynb"},
            "bar": {"p1.ipynb": "submitted-unchanged.ipynb", "p2.ipynb": "submitted-changed.ipynb", "p3.ipynb": EMPTY},
        },
    )
    rows = grade_both(ours, plain, downloads, tmp_path)
    assert {s: float(r["score"]) for s, r in rows.items()} == {"foo": 2, "bar": 3}, rows
    assert {"p1:foo", "p2:foo", "p1:bar", "p2:bar"} <= set(rows["foo"]), sorted(rows["foo"])
    assert "p2.ipynb is missing" in rows["foo"]["detail"] and "p3.ipynb is missing" in rows["foo"]["detail"]
    check_same(ours, plain, rows)


# -- the pieces, alone ------------------------------------------------------------------------------
@pytest.mark.unit
@pytest.mark.parametrize(
    ("setting", "expected"),
    [({}, 30), ({"Execute": 17}, 17), ({"ExecutePreprocessor": 5}, 5), ({"ExecutePreprocessor": 5, "Execute": 9}, 9),
     ({"Execute": None}, None), ({"Execute": 0}, None), ({"Execute": -1}, None)],
)  # fmt: skip
def test_the_courses_cell_limit_is_read_as_nbgrader_reads_it(setting, expected):
    config = Config()
    for section, value in setting.items():
        config[section].timeout = value
    assert settings.course_cell_timeout(config) == expected
    # No limit per cell: the notebook's remaining time is the cell's (never 1 s for a -1).
    limit = setting.get("Execute")
    assert cell_limit(limit, 100, False, 10) == (limit if limit and limit > 0 else 100)


@pytest.mark.unit
def test_a_cell_limit_nbgrader_refuses_is_refused_by_name_before_anything_is_graded(tmp_path, capsys):
    (tmp_path / "nbgrader_config.py").write_text(MINIMAL_CONFIG + 'c.Execute.timeout = "soon"\n', encoding="utf-8")
    (tmp_path / "downloads").mkdir()
    argv = ["grade", A, "--submissions", str(tmp_path / "downloads"), "--root", str(tmp_path), "--no-sandbox"]
    assert main(argv) == 2
    assert "Execute.timeout" in capsys.readouterr().err
    assert not (tmp_path / "grades").exists() and not (tmp_path / "gradebook.db").exists()


@pytest.mark.unit
def test_results_are_keyed_by_cell_and_by_notebook_only_where_notebooks_share_a_name():
    one = [("ps1", "foo", 1.0), ("ps1", "bar", 2.0)]
    assert grade.item_keys(one) == ["foo", "bar"]
    two = [("p1", "foo", 1.0), ("p1", "only", 1.0), ("p2", "foo", 1.0)]
    assert grade.item_keys(two) == ["p1:foo", "only", "p2:foo"]


@pytest.mark.unit
def test_a_release_without_a_kernelspec_keeps_the_submissions_as_nbgrader_does():
    released = nbformat.v4.new_notebook()
    submitted = nbformat.v4.new_notebook()
    submitted.metadata.kernelspec = {"name": "python", "display_name": "Python", "language": "python"}
    restored, notes = restore.restore(submitted, released)
    assert restored.metadata.kernelspec.name == "python" and notes == []
    assert "kernelspec" not in restore.restore(nbformat.v4.new_notebook(), released)[0].metadata


@pytest.mark.unit
def test_the_kernel_sees_nbgraders_execution_variable(monkeypatch):
    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")
    assert sandbox_spec.clean_environment("/tmp/scratch")["NBGRADER_EXECUTION"] == "autograde"


@pytest.mark.unit
def test_what_a_notebook_writes_is_kept_but_never_a_link_a_dot_name_or_an_unchanged_file(tmp_path):
    graded_in, scratch = tmp_path / "autograded", tmp_path / "scratch"
    (graded_in / "sub").mkdir(parents=True)
    scratch.mkdir()
    (graded_in / "data.txt").write_text("as handed in")
    (graded_in / "sub" / "helper.py").write_text("x = 1")
    (graded_in / "p1.ipynb").write_text("{}")
    copied = kernel_start.copy_files(str(graded_in), str(scratch))
    assert sorted(copied) == ["data.txt", "sub/helper.py"]  # the notebook is not copied in
    (scratch / "out.txt").write_text("written")
    (scratch / "sub" / "helper.py").write_text("x = 2")
    (scratch / ".ipython").mkdir()
    (scratch / ".ipython" / "history").write_text("kernel's own")
    secret = tmp_path / "secret"
    secret.write_text("instructor's")
    (scratch / "leak.txt").symlink_to(secret)
    kept = kernel_start.keep_written(str(scratch), str(graded_in), copied)
    assert kept == ["out.txt", "sub/helper.py"]
    assert (graded_in / "out.txt").read_text() == "written" and not (graded_in / "leak.txt").exists()


@pytest.mark.unit
def test_files_beside_a_handed_in_notebook_are_its_own_never_the_submissions_folders(tmp_path):
    (tmp_path / "ana" / A).mkdir(parents=True)
    nbformat.write(nbformat.v4.new_notebook(), tmp_path / "ana" / A / "p1.ipynb")
    nbformat.write(nbformat.v4.new_notebook(), tmp_path / "ben.ipynb")
    (tmp_path / "notes.txt").write_text("the instructor's")
    found = {s.student: s for s in collect.collect(tmp_path, A, ["p1"])}
    assert found["ana"].folder == tmp_path / "ana" / A
    assert found["ben"].folder is None


@pytest.mark.unit
def test_points_to_grade_by_hand_are_those_neither_scored_nor_marked():
    def mark(auto, manual, points):
        return SimpleNamespace(auto_score=auto, manual_score=manual, max_score=points)

    # A blank written answer nbgrader scored 0, a task and a written answer waiting, one marked.
    grades = [mark(0, None, 2), mark(None, None, 3), mark(None, None, 1), mark(None, 0.5, 4)]
    submission = SimpleNamespace(notebooks=[SimpleNamespace(grades=grades[:2]), SimpleNamespace(grades=grades[2:])])
    assert course.points_to_grade_by_hand(submission) == 4
    grades[1].manual_score = grades[2].manual_score = 0
    assert course.points_to_grade_by_hand(submission) == 0
