"""Write the grades of a class as CSV: one row per student of the submissions folder."""

from __future__ import annotations

import csv
from pathlib import Path

from nbgrader.api import Gradebook, MissingEntry

from .grade import Row

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
# Canvas' gradebook import reads a CSV whose first columns identify the student
# and whose other columns are assignments; the second row, "Points Possible",
# gives each assignment's maximum. Canvas matches students by ID, SIS User ID or
# SIS Login ID; a blank score leaves the Canvas grade as it is.
CANVAS_COLUMNS = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
ROSTER_COLUMNS = ["student_id", "name", "canvas_id", "sis_user_id", "sis_login_id", "section"]


def read_roster(path: Path | None) -> dict[str, dict[str, str]]:
    """nbgrader student id -> LMS identities, from a CSV with ROSTER_COLUMNS (only student_id is required)."""
    if path is None:
        return {}
    with open(path, newline="", encoding="utf-8-sig") as handle:
        reader = csv.DictReader(handle)
        if "student_id" not in (reader.fieldnames or []):
            raise ValueError(f"{path}: a roster needs a student_id column (columns: {', '.join(ROSTER_COLUMNS)})")
        return {row["student_id"].strip(): {k: (v or "").strip() for k, v in row.items() if k} for row in reader}


def canvas_rows(
    db_url: str, assignments: list[str] | None = None, roster: dict[str, dict[str, str]] | None = None
) -> list[list[str]]:
    """The rows of a Canvas gradebook import: header, Points Possible, one row per student."""

    roster = roster or {}
    with Gradebook(db_url) as gradebook:
        names = assignments or [a.name for a in gradebook.assignments]
        found = [gradebook.find_assignment(name) for name in names]
        header = CANVAS_COLUMNS + names
        rows = [header, ["    Points Possible", "", "", "", ""] + [_number(a.max_score) for a in found]]
        students = sorted({s.id for s in gradebook.students} | set(roster))
        for student_id in students:
            lms = roster.get(student_id, {})
            try:
                student = gradebook.find_student(student_id)
                full_name = ", ".join(n for n in (student.last_name, student.first_name) if n)
            except MissingEntry:
                full_name = ""
            scores = []
            for name in names:
                try:
                    scores.append(_number(gradebook.find_submission(name, student_id).score))
                except MissingEntry:
                    scores.append("")  # not handed in: Canvas keeps what it has
            # Without a roster entry the nbgrader id is the login (as on a hub with LMS accounts).
            rows.append(
                [
                    lms.get("name") or full_name or student_id,
                    lms.get("canvas_id", ""),
                    lms.get("sis_user_id", ""),
                    lms.get("sis_login_id") or (student_id if not lms else ""),
                    lms.get("section", ""),
                ]
                + scores
            )
        return rows


def write_canvas_csv(
    db_url: str, path: Path, assignments: list[str] | None = None, roster_path: Path | None = None
) -> int:
    rows = canvas_rows(db_url, assignments, read_roster(roster_path))
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as handle:
        csv.writer(handle).writerows(rows)
    return len(rows) - 2
