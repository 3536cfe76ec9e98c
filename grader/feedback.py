"""HTML feedback per student, without revealing hidden tests.

nbgrader builds feedback from the autograded notebooks, whose test cells were
restored from the instructor's source: hidden tests included, and a failing
hidden assert would also show in its traceback. Before rendering, test cells
lose their hidden region and their error outputs keep only the error's name and
message (our tests' messages explain the failure in one sentence).
"""

from __future__ import annotations

import re
from pathlib import Path

from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor
from nbgrader.preprocessors import GetGrades, NbGraderPreprocessor

from . import course, settings
from .trusted import hidden_lines, scrub

HIDDEN = re.compile(r"^[ \t]*### BEGIN HIDDEN TESTS.*?### END HIDDEN TESTS[^\n]*\n?", re.S | re.M)


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
        secret = [line for cell in nb.cells if cell.cell_type == "code" for line in hidden_lines(cell.source)]
        for cell in nb.cells:
            meta = cell.metadata.get("nbgrader", {})
            if cell.cell_type == "code" and meta.get("grade"):
                cell.source = HIDDEN.sub("", cell.source).rstrip() + "\n"
            for output in cell.get("outputs", []):
                _scrub_output(output, secret)
        return nb, resources


def feedback_steps():
    """nbgrader's feedback steps with hidden tests and their tracebacks removed first."""
    return [GetGrades, HideHiddenTests, CSSHTMLHeaderPreprocessor]


def generate(assignment: str, db_url: str | None = None, root: Path | None = None) -> list[Path]:
    config = settings.course_config(settings.Options(assignment, Path("."), db_url=db_url, root=root))
    config.GenerateFeedback.preprocessors = feedback_steps()
    api = course.api(config)
    result = api.generate_feedback(assignment)
    if not result["success"]:
        raise RuntimeError(result.get("error") or result.get("log"))
    folder = Path(api.coursedir.root) / api.coursedir.feedback_directory
    return sorted(folder.glob(f"*/{assignment}/*.html"))
