"""Write the grades of a class as CSV: one row per student of the submissions folder."""
from __future__ import annotations

import csv
from pathlib import Path

from .grade import Row

COLUMNS = ["student_id", "score", "max_score", "status", "detail", "needs_manual", "grader_id"]


def write_csv(rows: list[Row], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    items = sorted({name for row in rows for name in row.items})
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(COLUMNS + items)
        for row in rows:
            writer.writerow([row.student_id, _number(row.score), _number(row.max_score), row.status,
                             row.detail, _number(row.needs_manual), row.grader_id]
                            + [_number(row.items.get(name, 0.0)) for name in items])


def read_csv(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def _number(value: float) -> str:
    return f"{value:g}"
