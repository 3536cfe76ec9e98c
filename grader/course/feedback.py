"""HTML feedback per student, without revealing hidden tests, and honest about grades to come.

nbgrader builds feedback from the autograded notebooks, whose test cells were
restored from the instructor's source: hidden tests included, and a failing
hidden assert would also show in its traceback. Before rendering, test cells
lose their hidden region and their error outputs keep only the error's name and
message (our tests' messages explain the failure in one sentence).

nbgrader also shows a written answer the instructor has not graded yet as a score
of 0. Here such a cell says "not graded yet", and the page's score line means the same
on every page: the points earned so far out of all the notebook's points (tests and
written answers), with the points still to grade on a line of their own. A blank
written answer (an unreadable submission is graded as the blank exercise) is graded 0
by nbgrader itself, so it does not wait. The grader's CSV gives the same numbers
apart: score and max_score of the autograded tests, needs_manual for the written answers.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

from bs4 import BeautifulSoup
from nbconvert.exporters import HTMLExporter, TemplateExporter
from nbconvert.filters.highlight import Highlight2HTML
from nbconvert.filters.widgetsdatatypefilter import WidgetsDataTypeFilter
from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor
from nbgrader.api import Gradebook, MissingEntry
from nbgrader.preprocessors import GetGrades, NbGraderPreprocessor

from grader.course import nbgrader_course as course
from grader.runner.trusted import hidden_lines, scrub

HIDDEN = re.compile(r"^[ \t]*### BEGIN HIDDEN TESTS.*?### END HIDDEN TESTS[^\n]*\n?", re.S | re.M)
# Cell metadata GradesSoFar sets on an answer that has neither an automatic nor a manual grade
# (TEMPLATE reads it by this name).
NOT_GRADED = "not_graded_yet"
# nbgrader's feedback template, the one GenerateFeedback uses unless a course picks another.
NBGRADER_TEMPLATE = "feedback"
SQLITE_FILE = "sqlite:///"  # then the file's path, absolute or relative to the current folder
NO_GRADES_MESSAGE = "no grades for {assignment} in {db_url}; grade first, or pass the --db-url you graded with"

# The course's page extends nbgrader's (index.html.j2 of the exporter's template, nbgrader's
# "feedback"): the same cells and styles, but its own heading, contents and cell headers where
# an answer waits for the instructor.
TEMPLATE = """{%- extends 'index.html.j2' -%}

{%- macro mark(cell) -%}
{%- if cell.metadata.nbgrader.not_graded_yet -%}
not graded yet, {{ cell.metadata.nbgrader.points | float | round(2) }} points
{%- else -%}
Score: {{ cell.metadata.nbgrader.score | float | round(2) }} / {{ cell.metadata.nbgrader.points | float | round(2) }}
{%- endif -%}
{%- endmacro -%}

{%- macro comments(cell) -%}
{%- if cell.metadata.nbgrader.comment -%}
<div class="panel-footer"><b>Comments:</b> {{ cell.metadata.nbgrader.comment | markdown2html | strip_files_prefix }}</div>
{%- endif -%}
{%- endmacro -%}

{%- macro waiting_header(cell, label) -%}
<a name="{{ cell.metadata.nbgrader.grade_id }}"></a><a name="comment-{{ cell.metadata.nbgrader.grade_id }}"></a>
<div class="panel-heading">
  <span class="nbgrader-label">{{ label }}</span>
  <span class="pull-right not-graded-yet">{{ mark(cell) }} <a href="#top">(Top)</a></span>
</div>
{%- endmacro -%}

{% block body %}
<body>
<a name="top"></a>
<div class="container">
<div class="panel panel-default">
<div class="panel-heading">
  <h4>{{ resources.nbgrader.notebook }} (Score: {{ resources.nbgrader.score | float | round(2) }} / {{ resources.nbgrader.max_score | float | round(2) }})</h4>
  {%- if resources.nbgrader.not_graded_points %}
  <p class="not-graded-yet">written answers not graded yet ({{ resources.nbgrader.not_graded_points | float | round(2) }} points): the score counts the rest</p>
  {%- endif %}
  <div id="toc">
  <ol>
  {%- for cell in nb.cells if cell.metadata.nbgrader %}
    {%- set meta = cell.metadata.nbgrader %}
    {%- if meta.grade or meta.task %}
    <li><a href="#{{ meta.grade_id }}">
      {%- if meta.task %}Task{% elif cell.cell_type == "markdown" %}Written answer
      {%- elif meta.solution %}Code answer{% else %}Test <code>{{ meta.grade_id }}</code>{% endif -%}
    </a> ({{ mark(cell) }})</li>
    {%- endif %}
    {%- if meta.comment %}
    <li><a href="#comment-{{ meta.grade_id }}">Comment</a></li>
    {%- endif %}
  {%- endfor %}
  {%- if resources.nbgrader.late_penalty > 0 %}
    <li class="late-penalty">Late submission penalty (Score: -{{ resources.nbgrader.late_penalty | float | round(2) }})</li>
  {%- endif %}
  </ol>
  </div>
</div>
<div class="panel-body">
<div id="notebook" class="border-box-sizing">
<div class="container" id="notebook-container">
{{ self.body_loop() }}
</div>
</div>
</div>
</div>
</div>
</body>
{% endblock body %}

{% block markdowncell scoped %}
{%- if cell.metadata.nbgrader and cell.metadata.nbgrader.not_graded_yet -%}
<div class="cell border-box-sizing text_cell rendered">
{{ self.empty_in_prompt() }}
<div class="panel panel-primary nbgrader_cell">
{{ waiting_header(cell, "Student's task" if cell.metadata.nbgrader.task else "Student's answer") }}
<div class="panel-body"><div class="text_cell_render border-box-sizing rendered_html">
{{ cell.source | markdown2html | strip_files_prefix }}
</div></div>
{{ comments(cell) }}
</div>
</div>
{%- else -%}
{{ super() }}
{%- endif -%}
{% endblock markdowncell %}

{% block input %}
{%- if cell.metadata.nbgrader and cell.metadata.nbgrader.not_graded_yet -%}
<div class="panel panel-primary nbgrader_cell">
{{ waiting_header(cell, "Student's answer") }}
<div class="panel-body"><div class="input_area">
{{ cell.source | highlight_code(metadata=cell.metadata) }}
</div></div>
{{ comments(cell) }}
</div>
{%- else -%}
{{ super() }}
{%- endif -%}
{% endblock input %}
"""


def quoted_forms(lines: list[str]) -> list[str]:
    """Each hidden-test line as printed plainly and in the forms a program prints text quoted:
    inside a repr or JSON string (escaped quotes, backslashes and newlines), HTML-escaped. A
    notebook that got hold of a test's source and printed its repr (a bytes or str repr, as one
    leak did) must not get its lines past the scrub."""
    forms = []
    for line in lines:
        escaped = line.encode("unicode_escape").decode("ascii")
        variants = {
            line,
            escaped,
            escaped.replace("'", "\\'"),
            escaped.replace('"', '\\"'),
            json.dumps(line)[1:-1],
            html.escape(line),
            html.escape(line, quote=False),
        }
        forms.extend(sorted(variants, key=len, reverse=True))
    return forms


def _scrub_output(output, secret: list[str]) -> None:
    if "text" in output:
        output.text = scrub(output.text, secret)
    if output.output_type == "error":
        output.evalue = scrub(output.evalue, secret)
        output.traceback = [f"{output.ename}: {output.evalue}"]
    for kind, value in output.get("data", {}).items():
        if isinstance(value, str) and kind.startswith("text/"):
            output.data[kind] = scrub(value, secret)


class HideHiddenTests(NbGraderPreprocessor):
    """Test cells lose their hidden region; every output of every cell loses any
    hidden-test line it quotes (whatever a notebook managed to print)."""

    def preprocess(self, nb, resources):
        secret = quoted_forms(
            [line for cell in nb.cells if cell.cell_type == "code" for line in hidden_lines(cell.source)]
        )
        for cell in nb.cells:
            meta = cell.metadata.get("nbgrader", {})
            if cell.cell_type == "code" and meta.get("grade"):
                cell.source = HIDDEN.sub("", cell.source).rstrip() + "\n"
            for output in cell.get("outputs", []):
                _scrub_output(output, secret)
        return nb, resources


class GradesSoFar(GetGrades):
    """nbgrader's GetGrades, telling an answer nobody has graded yet from one graded 0.

    Such a cell is marked NOT_GRADED and not_graded_points holds its points; max_score stays
    the notebook's whole total, so the score line reads the same on every page. Whatever exports the page (the grader, nbgrader's
    generate_feedback, Formgrader) renders it with TEMPLATE, which shows the marks:
    this step gives its exporter that template when the exporter would use nbgrader's,
    as the course's config (pipeline.use_safe_autograde) names only the steps.
    """

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        exporter = self.parent
        if (
            isinstance(exporter, TemplateExporter)
            and exporter.template_name == NBGRADER_TEMPLATE
            and not exporter.raw_template
        ):
            exporter.raw_template = TEMPLATE

    def _get_score(self, cell, resources) -> None:
        grade = self.gradebook.find_grade(
            cell.metadata["nbgrader"]["grade_id"], self.notebook_id, self.assignment_id, self.student_id
        )
        cell.metadata.nbgrader["score"] = grade.score
        cell.metadata.nbgrader["points"] = grade.max_score
        cell.metadata.nbgrader[NOT_GRADED] = course.waits_for_hand(grade)

    def preprocess(self, nb, resources):
        nb, resources = super().preprocess(nb, resources)
        waiting = sum(cell.metadata.nbgrader["points"] for cell in nb.cells if _not_graded(cell))
        resources["nbgrader"]["not_graded_points"] = waiting
        return nb, resources


def _not_graded(cell) -> bool:
    return bool(cell.metadata.get("nbgrader", {}).get(NOT_GRADED))


# What nbconvert's HTML exporter rewrites in a rendered page: an image without alt text (it gets a
# placeholder) and JupyterLab's cells (they get a tab stop). An image tag the pattern cannot read
# whole (a ">" inside an attribute) counts as one without alt: the page then gets the pass.
IMAGE_TAG = re.compile(r"<img\b[^>]*>", re.IGNORECASE)
HAS_ALT = re.compile(r"\salt(?=[\s=/>])", re.IGNORECASE)
LAB_CELLS = "jp-Notebook"
MISSING_ALT = "No description has been provided for this image"


def rewritten_by_nbconvert(page: str) -> bool:
    """Whether nbconvert's pass over `page` would change it (see FeedbackExporter)."""
    return LAB_CELLS in page or any(not HAS_ALT.search(tag) for tag in IMAGE_TAG.findall(page))


class FeedbackExporter(HTMLExporter):
    """nbconvert's HTML exporter, without its second pass over a page where that pass adds nothing.

    After rendering, HTMLExporter parses the whole page with BeautifulSoup to add alt text to
    images and tab stops to JupyterLab's cells, then writes the page out again: half of what a
    feedback page costs. nbgrader's feedback template is the classic one, so a page whose
    images all have alt text (the exercise's Colab badge has) has nothing to gain from it and is
    kept as rendered: the same document, only written out as rendered. Any other page gets the
    same pass as nbconvert's (tests/test_feedback_view.py compares the two)."""

    def from_notebook_node(self, nb, resources=None, **kw):
        language = nb.metadata.get("language_info", {})
        lexer = language.get("pygments_lexer", language.get("name"))
        self.register_filter(
            "highlight_code", self.filters.get("highlight_code", Highlight2HTML(pygments_lexer=lexer, parent=self))
        )
        resources = self._init_resources(resources)
        self.register_filter(
            "filter_data_type",
            WidgetsDataTypeFilter(notebook_metadata=self._nb_metadata, parent=self, resources=resources),
        )
        page, resources = TemplateExporter.from_notebook_node(self, nb, resources, **kw)
        if not rewritten_by_nbconvert(page):
            return page, resources
        soup = BeautifulSoup(page, features="html.parser")
        for image in soup.select("img:not([alt])"):
            image.attrs["alt"] = MISSING_ALT
        for cell in soup.select(".jp-Notebook div.jp-Cell-inputWrapper, .jp-Notebook div.jp-OutputArea-output"):
            cell.attrs["tabindex"] = "0"
        return str(soup), resources


def use_course_feedback(c) -> None:
    """nbgrader's GenerateFeedback as this course writes its pages: ungraded answers told apart,
    hidden tests and their tracebacks removed, rendered by FeedbackExporter."""
    c.GenerateFeedback.preprocessors = [GradesSoFar, HideHiddenTests, CSSHTMLHeaderPreprocessor]
    c.GenerateFeedback.exporter_class = FeedbackExporter


class NoGrades(Exception):
    """The gradebook holds no graded submission of the assignment: nbgrader would fail without a cause."""


def graded_submissions(db_url: str, assignment: str) -> int:
    """How many submissions of `assignment` the gradebook at `db_url` holds; 0 also when a
    SQLite gradebook's file does not exist (it is not created by asking)."""

    if db_url.startswith(SQLITE_FILE) and not Path(db_url.removeprefix(SQLITE_FILE)).is_file():
        return 0
    with Gradebook(db_url) as gradebook:
        try:
            return len(gradebook.find_assignment(assignment).submissions)
        except MissingEntry:
            return 0


def generate(assignment: str, db_url: str | None = None, root: Path | None = None) -> list[Path]:
    """Feedback pages of every graded student of `assignment`; NoGrades when the gradebook has none."""
    config = course.load_config(root, db_url)
    use_course_feedback(config)
    api = course.api(config)
    if not graded_submissions(api.coursedir.db_url, assignment):
        raise NoGrades(NO_GRADES_MESSAGE.format(assignment=assignment, db_url=api.coursedir.db_url))
    result = api.generate_feedback(assignment)
    if not result["success"]:
        raise RuntimeError(result.get("error") or result.get("log"))
    folder = Path(api.coursedir.root) / api.coursedir.feedback_directory
    return sorted(folder.glob(f"*/{assignment}/*.html"))
