"""The one grading engine: what nbgrader's own autograde runs for this course.

`nbgrader autograde`, Formgrader's **Autograde** button and `python -m grader
grade` all run nbgrader's Autograde converter with the course's
`nbgrader_config.py`, which calls `use_safe_autograde(c)`. That makes every
path read, repair, run and annotate a submission the same way:

- `SubmissionExporter` reads the submitted file leniently (course/collect.py): an
  empty, truncated, binary or non-notebook file is not dropped but replaced by
  the released exercise, marked invalid with the reason, so it gets a gradebook
  entry with score 0 instead of vanishing;
- `RestoreSubmission` (first sanitize step) puts the submission back into the
  shape of the release (course/restore.py): stripped metadata, moved, retyped,
  deleted or edited cells, changed points and kernels;
- `GuardedExecute` (execute/guarded.py) runs it in the sandbox with a clean
  environment, time limits, and kernel deaths graded instead of dropped;
- `GraderNotes` (last autograde step) writes every reason into the notebook
  as a first markdown cell, which Formgrader and the student's feedback show.

Reasons travel in the notebook's metadata, `metadata.grader`:
`{"invalid": reason or None, "problems": [...]}`; grading/grade.py reads them back
for its CSV rows, so both paths give the same row.
"""

from __future__ import annotations

import copy
import datetime
import os
import textwrap
from pathlib import Path
from typing import Any

import jsonschema
import nbformat
from nbconvert.exporters import NotebookExporter
from nbconvert.exporters.exporter import ResourcesDict
from nbconvert.filters import strip_ansi
from nbconvert.preprocessors import ClearMetadataPreprocessor
from nbgrader.api import Gradebook, MissingEntry
from nbgrader.coursedir import CourseDirectory
from nbgrader.nbgraderformat import MetadataValidator, ValidationError
from nbgrader.nbgraderformat.common import BaseMetadataValidator, SchemaTooNewError, SchemaTooOldError
from nbgrader.preprocessors import (
    AssignLatePenalties,
    CheckCellMetadata,
    ClearOutput,
    DeduplicateIds,
    Execute,
    IgnorePattern,
    LimitOutput,
    NbGraderPreprocessor,
    OverwriteCells,
    OverwriteKernelspec,
    SaveAutoGrades,
)
from nbgrader.validator import Validator
from traitlets import default

from grader.course import collect, feedback, history, restore
from grader.execute.guarded import GuardedExecute

NOTES_CELL_ID = "grader-notes"


def grader_metadata(nb) -> dict:
    meta = nb.metadata.setdefault("grader", {})
    meta.setdefault("problems", [])
    meta.setdefault("invalid", None)
    meta.setdefault("flags", [])
    return meta


def add_problems(nb, problems) -> None:
    known = grader_metadata(nb)["problems"]
    known.extend(p for p in problems if p not in known)


# Where `python -m grader grade` generates the student version of a course that has not released
# the assignment (course.register): plain nbgrader grades such a course from its source alone.
REGISTERED_RELEASE = os.path.join(".grader", "release")


def released_notebook(config, assignment: str, notebook: str) -> nbformat.NotebookNode:
    """The student version of `notebook` as the course released it (or as the grader generated it)."""
    coursedir = CourseDirectory(config=config)
    paths = [
        os.path.join(coursedir.format_path(release, ".", assignment), f"{notebook}.ipynb")
        for release in (coursedir.release_directory, REGISTERED_RELEASE)
    ]
    for path in paths:
        if os.path.exists(path):
            return nbformat.read(path, as_version=4)
    raise FileNotFoundError(
        f"no released {assignment}/{notebook}.ipynb in {os.path.dirname(paths[0])}: "
        f"release the assignment (nbgrader generate_assignment {assignment}) or grade it with python -m grader grade"
    )


class SubmissionExporter(NotebookExporter):
    """nbgrader's notebook exporter, reading what students hand in leniently."""

    def from_filename(self, filename, resources=None, **kw):
        resources = ResourcesDict() if resources is None else resources
        if not resources.get("metadata"):
            resources["metadata"] = ResourcesDict()
        # What nbconvert's own from_filename records (the run's working folder included).
        folder, basename = os.path.split(filename)
        resources["metadata"].update(
            name=os.path.splitext(basename)[0],
            path=folder,
            modified_date=datetime.datetime.fromtimestamp(os.path.getmtime(filename)).strftime("%B %d, %Y"),
        )
        nb, problem, notes = collect.read_notebook(Path(filename))
        info = resources.get("nbgrader", {})
        if nb is None:
            nb = copy.deepcopy(released_notebook(self.config, info["assignment"], info["notebook"]))
            grader_metadata(nb)["invalid"] = problem
            add_problems(nb, [f"unreadable submission ({problem}): graded as the blank exercise"])
        else:
            add_problems(nb, notes)
        return self.from_notebook_node(nb, resources=resources, **kw)


class RestoreSubmission(NbGraderPreprocessor):
    """Put a submission back into the shape of the released exercise (course/restore.py)."""

    def preprocess(self, nb, resources):
        info = resources["nbgrader"]
        released = released_notebook(self.config, info["assignment"], info["notebook"])
        root = Path(CourseDirectory(config=self.config).root)
        earlier = history.earlier_releases(root, info["assignment"], info["notebook"])
        history.remember_release(root, info["assignment"], info["notebook"], released)
        meta = copy.deepcopy(grader_metadata(nb))
        restored, notes = restore.restore(nb, released, earlier)
        restored.metadata["grader"] = meta
        add_problems(restored, notes)
        return restored, resources


class KeepWrittenGrades(NbGraderPreprocessor):
    """After SaveAutoGrades: a written answer graded by hand keeps its grade (it does not need
    review again) when its text is what it was at the previous autograde (course/history.py)."""

    def preprocess(self, nb, resources):
        info = resources["nbgrader"]
        root = Path(CourseDirectory(config=self.config).root)
        before = history.written_answers(root, info["assignment"], info["student"])
        now = {}
        with Gradebook(info["db_url"]) as gradebook:
            for cell in nb.cells:
                meta = cell.metadata.get("nbgrader", {})
                if not (meta.get("solution") and meta.get("grade")) or cell.cell_type != "markdown":
                    continue
                key = f"{info['notebook']}/{meta['grade_id']}"
                now[key] = history.digest(cell.source.strip())
                grade = gradebook.find_grade(meta["grade_id"], info["notebook"], info["assignment"], info["student"])
                if grade.manual_score is not None and before.get(key) == now[key]:
                    grade.needs_manual_grade = False
            gradebook.db.commit()
        history.remember_written_answers(root, info["assignment"], info["student"], {**before, **now})
        return nb, resources


class GraderNotes(NbGraderPreprocessor):
    """Show every reason the grader recorded as the notebook's first cell."""

    def preprocess(self, nb, resources):
        meta = grader_metadata(nb)
        nb.cells = [c for c in nb.cells if c.get("id") != NOTES_CELL_ID]
        lines = []
        if meta["invalid"]:
            lines.append(
                f"- This submission could not be read ({meta['invalid']}); it was graded as the "
                "blank exercise, 0 points. Hand in the notebook file itself (.ipynb)."
            )
        lines += [f"- {problem}" for problem in meta["problems"] if not problem.startswith("unreadable submission")]
        if meta["flags"]:
            lines.append(
                "- **Flagged for the instructor**: the notebook tried to change how it is graded. "
                "Tests ran on the grader's own path, so only the answers earned points. What was seen:"
            )
            lines += [f"  - {flag}" for flag in meta["flags"]]
        if lines:
            cell = nbformat.v4.new_markdown_cell("**Notes from the grader**\n\n" + "\n".join(lines), id=NOTES_CELL_ID)
            nb.cells.insert(0, cell)
        return nb, resources


class FlagComments(NbGraderPreprocessor):
    """Put the grader's flags into the gradebook as the auto comment of the first answer cell,
    where Formgrader shows it to whoever grades the notebook."""

    def preprocess(self, nb, resources):

        flags = grader_metadata(nb)["flags"]
        info = resources.get("nbgrader", {})
        answers = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution")]
        if not flags or not answers or "db_url" not in info:
            return nb, resources
        name = answers[0].metadata["nbgrader"]["grade_id"]
        with Gradebook(info["db_url"]) as gradebook:
            try:
                comment = gradebook.find_comment(name, info["notebook"], info["assignment"], info["student"])
            except MissingEntry:
                return nb, resources
            text = "Flagged by the grader (tests ran on its own path):\n" + "\n".join(f"- {f}" for f in flags)
            comment.auto_comment = text if not comment.auto_comment else f"{comment.auto_comment}\n\n{text}"
            gradebook.db.commit()
        return nb, resources


class _SchemaCheckedOnce(BaseMetadataValidator):
    """nbgrader's metadata check, with its JSON schema compiled once per process: nbgrader calls
    `jsonschema.validate`, which checks the schema itself again for every cell (a third of the
    grader's own CPU time per submission, measured). Same schema, same errors."""

    _compiled: dict[int, Any] = {}

    def validate_cell(self, cell) -> None:
        if "nbgrader" not in cell.metadata:
            return
        version = cell.metadata["nbgrader"].get("schema_version", 0)
        if version < self.schema_version:
            raise SchemaTooOldError(
                f"Outdated schema version: {version} (expected {self.schema_version})", version, self.schema_version
            )
        if version > self.schema_version:
            raise SchemaTooNewError(
                f"Schema version is too new: {version} (expected {self.schema_version})", version, self.schema_version
            )
        if self.schema_version not in self._compiled:
            kind = jsonschema.validators.validator_for(self.schema)
            kind.check_schema(self.schema)
            self._compiled[self.schema_version] = kind(self.schema)
        error = jsonschema.exceptions.best_match(
            self._compiled[self.schema_version].iter_errors(cell.metadata["nbgrader"])
        )
        if error is not None:
            raise error


class _MetadataValidatorOnce(MetadataValidator, _SchemaCheckedOnce):
    """nbgrader's current validator (its own checks after the schema's) over the compiled schema."""


class CheckMetadata(CheckCellMetadata):
    """nbgrader's CheckCellMetadata over the schema compiled once (see _SchemaCheckedOnce)."""

    def preprocess(self, nb, resources):
        try:
            _MetadataValidatorOnce().validate_nb(nb)
        except ValidationError:
            self.log.exception("Notebook failed to validate")
            raise ValidationError("Notebook failed to validate; the nbgrader metadata may be corrupted.") from None
        return nb, resources


def autograde_steps(execute):
    """nbgrader's autograde steps with its Execute replaced by `execute`."""
    return [
        execute,
        IgnorePattern,
        ClearMetadataPreprocessor,
        LimitOutput,
        SaveAutoGrades,
        KeepWrittenGrades,
        AssignLatePenalties,
        CheckMetadata,
        FlagComments,
        GraderNotes,
    ]


def use_safe_autograde(c, *, trusted: bool = False) -> None:
    """Make nbgrader's autograde (CLI, Formgrader, the grader) this course's safe engine,
    and its feedback (generate_feedback, Formgrader's button) free of hidden tests.

    `trusted=True` lets autograde run student code without the sandbox when
    bubblewrap is missing (a warning on every notebook); by default autograde
    refuses, with install advice.
    """
    c.Autograde.exporter_class = SubmissionExporter
    c.Autograde.sanitize_preprocessors = [
        RestoreSubmission,
        ClearOutput,
        DeduplicateIds,
        OverwriteKernelspec,
        OverwriteCells,
        CheckMetadata,
    ]
    c.Autograde.autograde_preprocessors = autograde_steps(GuardedExecute)
    c.GuardedExecute.trusted_student_code = trusted
    feedback.use_course_feedback(c)


class StudentValidateExecute(Execute):
    """`nbgrader validate`'s Execute with the kernel's start-up log off the student's screen:
    ipykernel warns there that its local sockets are not encrypted, nothing a student can act on.
    Warnings from the student's own code still show (they are the cell's output, not the log)."""

    @default("extra_arguments")
    def _default_extra_arguments(self):
        return ["--IPKernelApp.log_level=ERROR"]

    def preprocess_cell(self, cell, resources, index):
        """A warning is not a failure, as at grading (trusted.test_outputs): nbgrader counts any
        stderr output of a test cell as failed, so stderr is shown under a heading on stdout."""
        cell, resources = super().preprocess_cell(cell, resources, index)
        heading = "Printed to stderr while this cell ran (warnings are shown, never scored):\n"
        for output in cell.get("outputs", []):
            if output.get("output_type") == "stream" and output.get("name") == "stderr":
                output.name, output.text = "stdout", heading + output.text
                heading = ""
        return cell, resources


def _indent_wrapped(self, val: str) -> str:
    """nbgrader's Validator._indent, wrapping a long line instead of cutting it at `width`."""
    lines = []
    for line in val.split("\n"):
        line = strip_ansi(line)
        lead = line[: len(line) - len(line.lstrip())]  # a continuation sits under its own line, indented
        pieces = textwrap.wrap(line, max(self.width - len(self.indent), 40), subsequent_indent=lead + "    ")
        lines += [self.indent + piece for piece in pieces or [""]]
    return "\n".join(lines)


# The course's limit per cell (nbgrader_config.py sets it too), for a validate whose config sets none.
CELL_TIMEOUT = 60


def student_validate(c) -> None:
    """A student's `nbgrader validate` (the CLI and JupyterLab's Validate button): every test's
    hint whole, no kernel start-up noise, a warning not a failure (StudentValidateExecute) and the
    course's cell limit where the config sets none (nbgrader's default is 30 s). nbgrader's
    Validator offers no setting for the first two (it cuts lines at `width`, and its preprocessor
    list is not configurable), so this changes that class in the processes that load the course's
    config, and nothing else."""
    if "timeout" not in c.Execute:
        c.Execute.timeout = CELL_TIMEOUT
    Validator._indent = _indent_wrapped
    Validator.class_traits()["preprocessors"].default_value = [CheckCellMetadata, ClearOutput, StudentValidateExecute]
