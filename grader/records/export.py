"""Write the grades of a class as CSV: one row per student of the submissions folder; and the
CSV Canvas's gradebook import reads, refused where a grade in it would be wrong."""

from __future__ import annotations

import csv
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
from nbconvert.exporters.exporter import ResourcesDict
from nbgrader.api import Gradebook
from nbgrader.coursedir import CourseDirectory
from nbgrader.preprocessors import ClearOutput, ClearSolutions, ComputeChecksums, LockCells
from nbgrader.utils import is_grade, is_solution, is_task

from grader.course import nbgrader_course as course
from grader.grading.grade import Row, item_keys
from grader.lms import canvas

COLUMNS = ["student_id", "score", "max_score", "status", "detail", "flags", "needs_manual", "grader_id"]


def write_csv(rows: list[Row], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    items = sorted({name for row in rows for name in row.items})
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(COLUMNS + items)
        for row in rows:
            writer.writerow(
                [
                    row.student_id,
                    _number(row.score),
                    _number(row.max_score),
                    row.status,
                    row.detail,
                    row.flags,
                    _number(row.needs_manual),
                    row.grader_id,
                ]
                + [_number(row.items.get(name, 0.0)) for name in items]
            )


def read_csv(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def _number(value: float | None) -> str:
    return "" if value is None else f"{value:g}"


# -- Canvas -------------------------------------------------------------------------
# Canvas's gradebook import reads a CSV whose first columns name the student (Student, ID, SIS User
# ID, SIS Login ID, Section) and whose other columns are assignments, each headed as Canvas's own
# export heads it, "Name (assignment id)": the id in parentheses is how the import finds the
# instructor's assignment (a header it does not know becomes a new assignment). A second row,
# "Points Possible", gives each column's maximum. Canvas finds a student by ID, SIS User ID or SIS
# Login ID; a blank score leaves that student's grade in Canvas as it is.
CANVAS_COLUMNS = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
ROSTER_COLUMNS = ["student_id", "name", "canvas_id", "sis_user_id", "sis_login_id", "section"]
CANVAS_ROSTER = {"Student": "name", "ID": "canvas_id", "SIS User ID": "sis_user_id", "SIS Login ID": "sis_login_id"}
CANVAS_ROSTER["Section"] = "section"


class ExportRefused(Exception):
    """The export would post a wrong or misleading grade; the message says which and why."""


def read_roster(path: Path | None) -> list[dict[str, str]]:
    """The class's LMS identities: a CSV with ROSTER_COLUMNS (only student_id is required), or
    Canvas's own gradebook export (Student, ID, SIS User ID, SIS Login ID, Section)."""
    if path is None:
        return []
    with open(path, newline="", encoding="utf-8-sig") as handle:
        reader = csv.DictReader(handle)
        fields = [f.strip() for f in reader.fieldnames or []]
        rows = [{(k or "").strip(): (v or "").strip() for k, v in row.items() if k} for row in reader]
    if "student_id" in fields:
        return rows
    if "Student" in fields and "ID" in fields:
        # Canvas's export: its "Points Possible" row has no id.
        return [{CANVAS_ROSTER[k]: v for k, v in row.items() if k in CANVAS_ROSTER} for row in rows if row.get("ID")]
    raise ValueError(
        f"{path}: a roster needs a student_id column (columns: {', '.join(ROSTER_COLUMNS)}), "
        f"or is Canvas's gradebook export ({', '.join(CANVAS_COLUMNS)})"
    )


def read_columns(path: Path | None, pairs: list[str] | None = None) -> dict[str, str]:
    """assignment -> Canvas column header, from a JSON object or a two-column CSV (assignment,column)
    file, then `ASSIGNMENT=COLUMN` pairs (which win)."""
    columns: dict[str, str] = {}
    if path is not None:
        text = path.read_text(encoding="utf-8-sig")
        if path.suffix.lower() == ".json":
            data = json.loads(text)
            if not isinstance(data, dict) or not all(isinstance(v, str) for v in data.values()):
                raise ValueError(f"{path}: a JSON column map is one object, assignment -> Canvas column header")
            columns.update({str(k): v for k, v in data.items()})
        else:
            for row in csv.reader(text.splitlines()):
                if len(row) != 2:
                    if row:
                        raise ValueError(f"{path}: each line is `assignment,Canvas column header`, not {row!r}")
                    continue
                if row[0].strip().lower() != "assignment":  # an optional header line
                    columns[row[0].strip()] = row[1].strip()
    for pair in pairs or []:
        assignment, sep, column = pair.partition("=")
        if not sep or not assignment.strip() or not column.strip():
            raise ValueError(f"--column takes ASSIGNMENT=CANVAS COLUMN, e.g. 'hw1=Homework 1 (12345)', not {pair!r}")
        columns[assignment.strip()] = column.strip()
    return columns


@dataclass
class Cell:
    points: float
    checksum: str | None
    written: bool  # graded by hand: an answer cell that is also graded, or a task


NO_CELL = Cell(0.0, None, False)
MISSING = "no autograded notebook"


def _cells(nb) -> dict[str, Cell]:
    return {
        c.metadata.nbgrader["grade_id"]: Cell(
            float(c.metadata.nbgrader.get("points", 0)),
            c.metadata.nbgrader.get("checksum"),
            is_solution(c) or is_task(c),
        )
        for c in nb.cells
        if is_grade(c) or is_task(c)
    }


def current_release(config, gradebook, assignment: str) -> dict[str, dict[str, Cell]]:
    """notebook -> graded cell -> its points and checksum as grading would record them now: nbgrader's
    own steps of generate_assignment run on the source notebook (hidden tests included), or, where the
    course has no source, what the gradebook registered last."""
    coursedir = CourseDirectory(config=config)
    folder = Path(coursedir.format_path(coursedir.source_directory, ".", assignment))
    sources = sorted(folder.glob("*.ipynb")) if folder.is_dir() else []
    if sources:
        release = {}
        for path in sources:
            nb, resources = nbformat.read(path, as_version=4), ResourcesDict()
            for step in (LockCells, ClearSolutions, ClearOutput, ComputeChecksums):
                nb, resources = step(config=config).preprocess(nb, resources)
            release[path.stem] = _cells(nb)
        return release
    found = gradebook.find_assignment(assignment)
    release = {}
    for nb in found.notebooks:
        written = {c.name for c in nb.solution_cells}
        checksums = {c.name: c.checksum for c in nb.source_cells}
        release[nb.name] = {
            c.name: Cell(float(c.max_score), checksums.get(c.name), c.name in written) for c in nb.grade_cells
        } | {c.name: Cell(float(c.max_score), checksums.get(c.name), True) for c in nb.task_cells}
    return release


def release_keys(release: dict[str, dict[str, Cell]]) -> dict[tuple[str, str], str]:
    """(notebook, cell) -> its key as the CSV's columns name it (grade.item_keys)."""
    pairs = [(notebook, name, 0.0) for notebook, cells in release.items() for name in cells]
    return {(notebook, name): key for (notebook, name, _), key in zip(pairs, item_keys(pairs), strict=True)}


def _release_change(config, assignment: str, student: str, release: dict[str, dict[str, Cell]]) -> str | None:
    """How the release differs from the one `student`'s submission was autograded against (the cells'
    points and checksums nbgrader wrote into the autograded notebook), or None where it does not."""
    coursedir = CourseDirectory(config=config)
    folder = Path(coursedir.format_path(coursedir.autograded_directory, student, assignment))
    submitted = Path(coursedir.format_path(coursedir.submitted_directory, student, assignment))
    keys = release_keys(release)
    changes = []
    for notebook, now in release.items():
        path = folder / f"{notebook}.ipynb"
        if not path.exists() and folder.is_dir() and not (submitted / f"{notebook}.ipynb").exists():
            continue  # a notebook missing from the hand-in: nbgrader scored it 0, against no release
        if not path.exists():
            return f"{MISSING} ({path}) to tell what it was graded against"
        then = _cells(nbformat.read(path, as_version=4))
        for name in sorted(set(now) | set(then)):
            cell = keys.get((notebook, name), name)
            now_cell, then_cell = now.get(name), then.get(name)
            if then_cell is None:
                changes.append(f"{cell} added")
            elif now_cell is None:
                changes.append(f"{cell} removed")
            elif now_cell.points != then_cell.points:
                changes.append(f"{cell} worth {now_cell.points:g} points now, {then_cell.points:g} when graded")
            elif now_cell.checksum != then_cell.checksum:
                changes.append(f"{cell} changed")
    return "; ".join(changes) or None


@dataclass
class Column:
    assignment: str
    header: str
    points_possible: float
    written_included: bool
    scores: dict[str, float | None]  # student -> score (None: left blank, Canvas keeps its grade)
    notes: list[str] = field(default_factory=list)


def assignment_column(config, gradebook, assignment: str, header: str) -> tuple[Column, list[str]]:
    """The column of one assignment and what keeps it from being complete (written answers without a
    grade, submissions graded against another release): each problem names student and cell."""
    release = current_release(config, gradebook, assignment)
    # By notebook and cell: two notebooks of an assignment may share a cell's name.
    cells = {(nb, name): cell for nb, notebook in release.items() for name, cell in notebook.items()}
    written_points = sum(c.points for c in cells.values() if c.written)
    keys = release_keys(release)
    ungraded, stale, scores = [], {}, {}
    for submission in gradebook.find_assignment(assignment).submissions:
        student = submission.student.id
        change = _release_change(config, assignment, student, release)
        if change:
            stale[student] = change
        for notebook in submission.notebooks:
            for grade in notebook.grades:
                if course.waits_for_hand(grade):
                    kind = (
                        "written answer" if cells.get((notebook.name, grade.name), NO_CELL).written else "graded cell"
                    )
                    where = keys.get((notebook.name, grade.name), grade.name)
                    ungraded.append(f"{assignment}: {student}: {kind} '{where}' has no grade")
        # Full column: every point; without a grade for some written answer, the autograded ones only.
        scores[student] = [
            ((nb.name, grade.name), float(grade.score)) for nb in submission.notebooks for grade in nb.grades
        ]
    include_written = not ungraded
    column = Column(
        assignment,
        header,
        sum(c.points for c in cells.values() if include_written or not c.written),
        include_written,
        {
            student: None
            if student in stale
            else sum(score for name, score in graded if include_written or not cells.get(name, NO_CELL).written)
            for student, graded in scores.items()
        },
    )
    problems = ungraded + [
        f"{assignment}: {student}: "
        + (change if change.startswith(MISSING) else f"graded against an earlier release ({change})")
        + "; grade it again"
        for student, change in sorted(stale.items())
    ]
    if not include_written:
        column.notes.append(
            f"column '{header}' ({assignment}) holds the AUTOGRADED points only, out of {column.points_possible:g}: "
            f"its written answers ({written_points:g} points) are left out for every student until all are graded"
        )
    if stale:
        column.notes.append(
            f"column '{header}' ({assignment}) is left blank (Canvas keeps its grade) for {', '.join(sorted(stale))}: "
            "graded against an earlier release, or no autograded notebook"
        )
    return column, problems


def graded_assignments(gradebook) -> list[str]:
    """The gradebook's assignments that have at least one submission, in the gradebook's order."""
    return [a.name for a in gradebook.assignments if a.num_submissions]


def _identities(student_id: str, lms_user_id: str, roster: list[dict[str, str]]) -> dict[str, str] | None:
    for entry in roster:
        if entry.get("student_id") == student_id:
            return entry
    for entry in roster:
        if (lms_user_id and entry.get("canvas_id") == lms_user_id) or (
            not entry.get("student_id") and student_id in (entry.get("sis_login_id"), entry.get("canvas_id"))
        ):
            return entry
    return None


@dataclass
class CanvasExport:
    rows: list[list[str]]
    notes: list[str]  # what a partial export means, and columns Canvas would not match
    partial: list[str]  # the problems an --allow-partial export went past
    warnings: list[str] = field(default_factory=list)  # Points Possible unlike Canvas's (lms/canvas.py)


def canvas_export(
    config,
    db_url: str,
    assignments: list[str] | None = None,
    roster: list[dict[str, str]] | None = None,
    columns: dict[str, str] | None = None,
    allow_partial: bool = False,
) -> CanvasExport:
    """The rows of a Canvas gradebook import: header, Points Possible, one row per student. Raises
    ExportRefused, naming every problem, where a column would be incomplete and not allow_partial."""
    roster, columns = roster or [], columns or {}
    with Gradebook(db_url) as gradebook:
        names = list(assignments or graded_assignments(gradebook))
        if not names:
            raise ExportRefused("no assignment has a graded submission yet: nothing to export")
        for name in names:
            gradebook.find_assignment(name)  # MissingEntry names an unknown one
        unknown = [name for name in columns if name not in {a.name for a in gradebook.assignments}]
        if unknown:
            raise ValueError(f"a Canvas column is given for {', '.join(unknown)}, not an assignment of the gradebook")
        headers = [columns.get(name, name) for name in names]
        if len(set(headers)) < len(headers):
            raise ValueError(f"two assignments map to the same Canvas column: {headers}")
        built, problems, notes = [], [], []
        for name, header in zip(names, headers):
            column, found = assignment_column(config, gradebook, name, header)
            built.append(column)
            problems += found
            if not re.search(r"\(\d+\)\s*$", header):
                notes.append(
                    f"column '{header}' has no Canvas assignment id: Canvas matches it by name or creates a new "
                    f"assignment; name the instructor's column with --column {name}='<name as in Canvas's export> (<id>)'"
                )
        if problems and not allow_partial:
            raise ExportRefused(
                f"not exported: {len(problems)} grade(s) would be wrong or incomplete in Canvas:\n  "
                + "\n  ".join(problems)
                + "\nGrade them (Formgrader for written answers), or export what is complete with --allow-partial."
            )
        notes = [note for column in built for note in column.notes] + notes
        rows = [
            CANVAS_COLUMNS + headers,
            ["    Points Possible", "", "", "", ""] + [_number(c.points_possible) for c in built],
        ]
        matched: set[int] = set()
        for student in sorted(gradebook.students, key=lambda s: s.id):
            entry = _identities(student.id, student.lms_user_id or "", roster)
            if entry is not None:
                matched.add(id(entry))
            full_name = ", ".join(n for n in (student.last_name, student.first_name) if n)
            lms = entry or {}
            rows.append(
                [
                    lms.get("name") or full_name or student.id,
                    lms.get("canvas_id") or student.lms_user_id or "",
                    lms.get("sis_user_id", ""),
                    # Without a roster entry the nbgrader id is the login (as on a hub with LMS accounts).
                    lms.get("sis_login_id") or ("" if entry is not None or student.lms_user_id else student.id),
                    lms.get("section", ""),
                ]
                + [_number(c.scores.get(student.id)) for c in built]
            )
        for entry in roster:
            if id(entry) not in matched:  # on the roster, never graded: blank, Canvas keeps what it has
                rows.append(
                    [entry.get("name") or entry.get("student_id", "")]
                    + [entry.get(k, "") for k in ("canvas_id", "sis_user_id", "sis_login_id", "section")]
                    + [""] * len(built)
                )
        return CanvasExport(rows, notes, problems)


def write_canvas_csv(
    config,
    path: Path,
    assignments: list[str] | None = None,
    roster_path: Path | None = None,
    *,
    db_url: str | None = None,
    columns: dict[str, str] | None = None,
    allow_partial: bool = False,
) -> CanvasExport:
    result = canvas_export(
        config, db_url or course.db_url(config), assignments, read_roster(roster_path), columns, allow_partial
    )
    if roster_path is not None:
        result.warnings += canvas.points_differences(result.rows, canvas.points_possible(roster_path))
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as handle:
        csv.writer(handle).writerows(result.rows)
    return result
