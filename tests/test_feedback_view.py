"""What a student reads on the feedback page: a written answer the instructor has not
graded yet says so (no "0.0 / 2"), and the page's total is the grader's CSV row (the
autograded score out of the autograded points, the written points on a line of their
own) until the instructor grades it; then the page shows the manual grade. And
`python -m grader feedback` on a gradebook without grades names the cause."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys

import grader_cases
import nbformat
import pytest
import submissions

from conftest import ROOT
from grader.course import feedback
from grader.grading import grade
from grader.records import export
from tools import course

pytestmark = [pytest.mark.integration, pytest.mark.sandbox]

A = grader_cases.A
STUDENT = "ana"
UNREADABLE = "zed"
HEADER = re.compile(rf"{A} \(Score: ([\d.]+) / ([\d.]+)\)")
WAITING = re.compile(r"written answers not graded yet \(([\d.]+) points\)")


def written_answers() -> dict[str, float]:
    """Grade id -> points of each written (manually graded) answer, from the released exercise."""
    return {
        cell.metadata["nbgrader"]["grade_id"]: cell.metadata["nbgrader"]["points"]
        for cell in submissions.exercise(A).cells
        if cell.cell_type == "markdown" and cell.metadata.get("nbgrader", {}).get("grade")
    }


def no_grades_message(db_url: str) -> str:
    return f"no grades for {A} in {db_url}; grade first, or pass the --db-url you graded with"


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """A correct hand-in of exercise 1, autograded in a scratch course; its written answers wait.
    Beside it, an unreadable hand-in (graded as the blank exercise)."""
    tmp = tmp_path_factory.mktemp("feedback_view")
    folder = tmp / "submissions"
    folder.mkdir()
    nbformat.write(submissions.answered(A), folder / f"{STUDENT}.ipynb")
    (folder / f"{UNREADABLE}.ipynb").write_text('{"cells": [', encoding="utf-8")
    root = tmp / "course"
    course.temporary_course(root, [A])
    rows = grade.run(grade.Options(A, folder, jobs=1, root=root, cell_timeout=30, notebook_timeout=120))
    export.write_csv(rows, tmp / "grades.csv")
    found = {row["student_id"]: row for row in export.read_csv(tmp / "grades.csv")}
    row = found[STUDENT]
    assert row["status"] == "graded", row
    return {"root": root, "row": row, "unreadable": found[UNREADABLE]}


def page_of(root, student: str = STUDENT) -> str:
    pages = feedback.generate(A, root=root)
    (page,) = [p for p in pages if p.parts[-3] == student]
    return page.read_text(encoding="utf-8")


def text(html: str) -> str:
    return " ".join(re.sub(r"<[^>]+>", " ", html).split())


def cell_header(html: str, grade_id: str) -> str:
    """The words on the header of the cell `grade_id` (its score, or that it waits)."""
    found = re.search(rf'<a name="{grade_id}"></a>.*?<div class="panel-heading">(.*?)</div>', html, re.S)
    assert found, f"no cell {grade_id} on the page"
    return text(found[1])


def contents_entry(html: str, grade_id: str) -> str:
    """The line of the page's contents that links to the cell `grade_id`."""
    found = re.search(rf'<li><a href="#{grade_id}">(.*?)</li>', html, re.S)
    assert found, f"no contents entry for {grade_id}"
    return text(found[1])


def test_an_ungraded_written_answer_says_so_and_the_page_adds_up_the_csv_row(graded):
    written = written_answers()
    assert written, "exercise 1 has a written answer to wait for"
    row = graded["row"]
    # The CSV: the autograded tests' score and points; the written points apart.
    assert (float(row["score"]), float(row["max_score"])) == (grader_cases.FULL, grader_cases.FULL)
    assert float(row["needs_manual"]) == sum(written.values())
    html = page_of(graded["root"])
    for grade_id, points in written.items():
        for words in (cell_header(html, grade_id), contents_entry(html, grade_id)):
            assert "not graded yet" in words, words
            assert f"0.0 / {float(points)}" not in words and "Score" not in words, words
    for test_id, points in grader_cases.POINTS.items():
        assert f"Score: {float(points)} / {float(points)}" in cell_header(html, test_id)
    # The score line: points so far out of all the notebook's points, the written ones waiting.
    header = HEADER.search(text(html))
    assert header, text(html)[:500]
    total = float(row["max_score"]) + sum(written.values())
    assert (float(header[1]), float(header[2])) == (float(row["score"]), total)
    waiting = WAITING.search(text(html))
    assert waiting and float(waiting[1]) == float(row["needs_manual"]), text(html)[:500]


def test_the_score_line_means_the_same_on_an_unreadable_submissions_page(graded):
    """Graded as the blank exercise: nothing earned out of the same total as every other page
    (its blank written answers are graded 0 by nbgrader, so nothing waits)."""
    row = graded["unreadable"]
    assert row["status"] == "invalid" and float(row["score"]) == 0, row
    page = text(page_of(graded["root"], UNREADABLE))
    header = HEADER.search(page)
    assert header, page[:500]
    assert (float(header[1]), float(header[2])) == (0.0, float(row["max_score"]) + sum(written_answers().values()))
    assert not WAITING.search(page)


def test_a_manual_grade_shows_on_the_regenerated_page(graded, tmp_path):
    from nbgrader.api import Gradebook

    root = tmp_path / "course"
    shutil.copytree(graded["root"], root)  # its own gradebook: the first test's stays ungraded
    written = written_answers()
    given = {grade_id: points / 2 for grade_id, points in written.items()}
    with Gradebook(course.load_config(root).CourseDirectory.db_url) as gradebook:
        for grade_id, score in given.items():
            gradebook.find_grade(grade_id, A, A, STUDENT).manual_score = score
        gradebook.db.commit()
    html = page_of(root)
    assert "not graded yet" not in html
    for grade_id, points in written.items():
        assert f"Score: {float(given[grade_id])} / {float(points)}" in cell_header(html, grade_id)
    header = HEADER.search(text(html))
    assert header, text(html)[:500]
    full = grader_cases.FULL + sum(written.values())
    assert (float(header[1]), float(header[2])) == (grader_cases.FULL + sum(given.values()), full)


def test_feedback_on_a_gradebook_without_grades_names_the_cause(tmp_path):
    root = tmp_path / "course"
    course.temporary_course(root, [A])
    db_url = course.load_config(root).CourseDirectory.db_url
    done = subprocess.run(
        [sys.executable, "-m", "grader", "feedback", A, "--root", str(root)], cwd=ROOT, capture_output=True, text=True
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stderr.strip() == no_grades_message(db_url), done.stderr
    assert not (root / "feedback").exists()


def test_feedback_with_another_db_url_names_that_gradebook(tmp_path, capsys):
    from grader.__main__ import main

    root = tmp_path / "course"
    course.register(course.temporary_course(root, [A]), A)  # the assignment is known, nobody is graded
    other = f"sqlite:///{tmp_path / 'elsewhere.db'}"
    for db_url, extra in ((course.load_config(root).CourseDirectory.db_url, []), (other, ["--db-url", other])):
        assert main(["feedback", A, "--root", str(root), *extra]) == 1
        assert capsys.readouterr().err.strip() == no_grades_message(db_url)
    assert not (tmp_path / "elsewhere.db").exists(), "a gradebook that is not there is not created"


@pytest.mark.unit
@pytest.mark.parametrize("printed", ["plain", "str repr", "bytes repr", "json", "html"])
def test_a_hidden_line_is_scrubbed_in_every_form_a_program_prints_text(printed):
    """A notebook that got hold of a test's source and printed it quoted (a leak once reached the
    feedback as a bytes repr, escaped newlines and all) still shows no hidden line."""
    import html
    import json

    from nbformat import NotebookNode

    line = 'assert count(nn.ReLU()) == 0, "A module without parameters has 0 of them."'
    source = f"x = 1\n{line}\n"
    text = {
        "plain": source,
        "str repr": repr(source),
        "bytes repr": repr(source.encode()),
        "json": json.dumps(source),
        "html": html.escape(source),
    }[printed]
    output = NotebookNode(output_type="stream", name="stdout", text=text)
    feedback._scrub_output(output, feedback.quoted_forms([line]))
    assert "count(nn.ReLU())" not in output.text and "[hidden test]" in output.text, output.text


# -- what a failed test cell with hidden tests says (trusted.test_outputs) --------------------------
HIDDEN_CELL = """assert make_stack(nn.Linear, 1) is not None
### BEGIN HIDDEN TESTS
_stack = make_stack(_secret_factory, 3)
assert len(_counted_secretly) == 3, "factory() should be called exactly n times."
### END HIDDEN TESTS
"""
ANSWER_CELL = "def make_stack(factory, n):\n    layer = factory()\n    layer.reset_parameters()\n"


def evalue(reply: dict, where: str = "") -> str:
    from grader.runner import trusted

    secret = trusted.hidden_lines(HIDDEN_CELL)
    words = trusted.hidden_words([ANSWER_CELL, HIDDEN_CELL])
    (output,) = trusted.test_outputs(dict(reply, passed=False), True, secret, words, where)
    return output.evalue


@pytest.mark.unit
def test_a_students_error_in_a_hidden_test_shows_its_type_message_and_line():
    """Issue 46: an answer that raises while a hidden test calls it is told its error's type, its
    message when that quotes nothing of the hidden test only, and its own line; a message with a
    word that only the hidden test has (`_secret_factory`) is withheld."""
    from grader.runner import trusted

    assert trusted.hidden_words([ANSWER_CELL, HIDDEN_CELL]) >= {"_secret_factory", "_counted_secretly"}
    assert "make_stack" not in trusted.hidden_words([ANSWER_CELL, HIDDEN_CELL])  # the visible part has it
    where = "make_stack, line 3: `layer.reset_parameters()`"
    reply = {"ename": "AttributeError", "message": "'Linear' object has no attribute 'reset_parameters'"}
    assert evalue(reply, where) == (
        "your code raised AttributeError while a hidden test of this item called it, at make_stack, line 3: "
        "`layer.reset_parameters()`: 'Linear' object has no attribute 'reset_parameters'"
    )
    quoting = {"ename": "TypeError", "message": "_secret_factory() takes 0 positional arguments but 1 was given"}
    assert evalue(quoting, where).endswith(
        "`layer.reset_parameters()` (its message is not shown: it quotes the hidden test)"
    )
    leaking = {"ename": "ValueError", "message": "seen: _stack = make_stack(_secret_factory, 3)"}
    assert evalue(leaking).endswith("called it: seen: [hidden test]")  # a whole hidden line: scrubbed, as ever
    assert evalue({"ename": "KeyError"}) == "your code raised KeyError while a hidden test of this item called it"


@pytest.mark.unit
def test_a_hidden_tests_message_is_labelled_hidden_and_a_visible_ones_is_not():
    from grader.runner import trusted

    reply = {"ename": "AssertionError", "message": "factory() should be called exactly n times.", "by_test": True}
    assert evalue(reply) == "Hidden test: factory() should be called exactly n times."
    (visible,) = trusted.test_outputs(dict(reply, passed=False), False, [])
    assert visible.evalue == "factory() should be called exactly n times."
    judged = {"ename": "CheckedOutsideTheKernel", "message": "checked outside your kernel: ...", "by_test": True}
    assert evalue(judged) == "checked outside your kernel: ..."


# --- The feedback pages' exporter: nbconvert's page, without a second pass that adds nothing ---

PIXEL = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="


def _page_notebook(image: bool):
    """A notebook like a graded exercise: a badge with alt text, code, a stream, markdown with
    HTML; with `image`, a plot (an image without alt text) as well."""
    outputs = [nbformat.v4.new_output("stream", text="1\n")]
    if image:
        outputs.append(nbformat.v4.new_output("display_data", data={"image/png": PIXEL, "text/plain": "<Figure>"}))
    nb = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_markdown_cell(
                '<a href="https://x"><img src="https://x/badge.svg" alt="Open In Colab"/></a>'
            ),
            nbformat.v4.new_code_cell("print(1)", outputs=outputs),
            nbformat.v4.new_markdown_cell("# Part\n*x* <b>y</b> a<br>b"),
        ]
    )
    nb.metadata["language_info"] = {"name": "python"}
    return nb


@pytest.mark.unit
@pytest.mark.parametrize("template, image", [("classic", False), ("classic", True), ("lab", False)])
def test_the_feedback_exporter_gives_the_document_nbconvert_gives(template, image):
    from bs4 import BeautifulSoup
    from nbconvert.exporters import HTMLExporter

    nb = _page_notebook(image)
    ours, _ = feedback.FeedbackExporter(template_name=template).from_notebook_node(nb)
    theirs, _ = HTMLExporter(template_name=template).from_notebook_node(nb)
    if template == "classic" and not image:  # nothing for nbconvert's pass to add: left as rendered
        assert ours != theirs and str(BeautifulSoup(ours, features="html.parser")) == theirs
    else:  # an image without alt text, or JupyterLab's cells: nbconvert's pass, to the byte
        assert ours == theirs
    assert (feedback.MISSING_ALT in ours) == image


@pytest.mark.unit
@pytest.mark.parametrize(
    "page, rewritten",
    [
        ('<p><img src="a.png" alt="a plot"/></p>', False),
        ("<p><img alt src=a.png></p>", False),
        ("<p>no image at all</p>", False),
        ('<p><img src="a.png"/></p>', True),
        ("<p><IMG SRC=a.png></p>", True),
        ('<p><img data-alt="x" src="a.png"></p>', True),
        ('<p><img src="a.png" alt="x"><img src="b.png"></p>', True),
        ('<div class="jp-Notebook"><div class="jp-Cell-inputWrapper"></div></div>', True),
    ],
)
def test_a_page_gets_nbconverts_pass_when_it_has_an_image_without_alt_or_lab_cells(page, rewritten):
    assert feedback.rewritten_by_nbconvert(page) == rewritten


@pytest.mark.unit
def test_every_feedback_path_uses_the_exporter():
    """The grader's feedback command, and nbgrader's generate_feedback and Formgrader's button
    through the course's config (pipeline.use_safe_autograde)."""
    from traitlets.config import Config

    from grader import pipeline

    config = Config()
    pipeline.use_safe_autograde(config)
    assert config.GenerateFeedback.exporter_class is feedback.FeedbackExporter
