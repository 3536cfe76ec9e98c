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

from nbgrader.preprocessors import NbGraderPreprocessor

HIDDEN = re.compile(r"^[ \t]*### BEGIN HIDDEN TESTS.*?### END HIDDEN TESTS[^\n]*\n?", re.S | re.M)


class HideHiddenTests(NbGraderPreprocessor):
    def preprocess_cell(self, cell, resources, index):
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type == "code" and meta.get("grade"):
            cell.source = HIDDEN.sub("", cell.source).rstrip() + "\n"
            for output in cell.get("outputs", []):
                if output.output_type == "error":
                    output.traceback = [f"{output.ename}: {output.evalue}"]
        return cell, resources


def generate(assignment: str, db_url: str | None = None, root: Path | None = None) -> list[Path]:
    from . import course
    from .grade import Options, course_config
    from .pipeline import feedback_steps

    config = course_config(Options(assignment, Path("."), db_url=db_url, root=root))
    config.GenerateFeedback.preprocessors = feedback_steps()
    api = course.api(config)
    result = api.generate_feedback(assignment)
    if not result["success"]:
        raise RuntimeError(result.get("error") or result.get("log"))
    folder = Path(api.coursedir.root) / api.coursedir.feedback_directory
    return sorted(folder.glob(f"*/{assignment}/*.html"))
