"""Canvas's own files: the bulk download of an assignment's submissions, and the gradebook
export CSV that names the class.

*Download Submissions* on a Canvas assignment gives a zip (`submissions.zip`) of flat files named

    <name>[_late]_<user id>_<attachment id>_<file name as uploaded>

where <name> is the student's sortable name run together in lower case (`limaana`), `_late`
marks a hand-in after the due date, <user id> is the student's Canvas id (the gradebook
export's `ID` column) and <attachment id> numbers the uploaded file (a later upload has a
larger one; the files of one hand-in may share it). A student who uploads a file of the same name again gets `-1`, `-2`, ... before
its extension. nbgrader's `zip_collect` reads the same names with a regular expression of the
instructor's; here the pattern is fixed, and every file of one Canvas user is one student:
their latest upload is graded, the others are named in the row's detail.
"""

from __future__ import annotations

import csv
import re
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from nbgrader.api import Gradebook

from grader.course import collect

FILE_NAME = re.compile(
    r"^(?P<name>[^_]+?)(?P<late>_late)?_(?P<user_id>\d+)_(?P<attachment_id>\d+)_(?P<original>.+)$", re.IGNORECASE
)
# "hw1-2.ipynb": the second re-upload of hw1.ipynb.
RESUBMISSION = re.compile(r"^(?P<base>.+?)-(?P<n>\d+)(?P<ext>\.[^.]*)?$")
ROSTER_COLUMNS = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
# A member of a zip larger than this is not read (no notebook of this course comes near it).
MAX_FILE_BYTES = 64 * 1024 * 1024


class CanvasInputError(ValueError):
    """A Canvas download or roster that cannot be used, with what is wrong."""


@dataclass
class Upload:
    file_name: str  # as in the download
    name: str  # Canvas's run-together name
    user_id: str
    attachment_id: int
    original: str  # the file name the student uploaded, Canvas's -N suffix included
    late: bool
    data: bytes

    @property
    def resubmission(self) -> int:
        match = RESUBMISSION.match(self.original)
        return int(match["n"]) if match else 0

    @property
    def base(self) -> str:
        """The uploaded name without Canvas's -N and the extension: "hw1" for hw1-2.ipynb."""
        match = RESUBMISSION.match(self.original)
        return match["base"] if match else Path(self.original).stem


@dataclass
class Student:
    student_id: str  # the id in nbgrader's folders and gradebook
    user_id: str  # Canvas's
    name: str  # "Lima, Ana" from the roster, else Canvas's run-together name
    graded: Upload
    ignored: list[Upload] = field(default_factory=list)
    roster: dict[str, str] = field(default_factory=dict)

    def note(self) -> str:
        parts = [f"Canvas user {self.user_id}: graded {self.graded.original}" + (" (late)" if self.graded.late else "")]
        if self.ignored:
            parts.append("not graded: " + ", ".join(u.original for u in self.ignored))
        return "; ".join(parts)


def is_download(path: Path) -> bool:
    """A Canvas bulk download: a zip, or a folder whose every file is named as Canvas names them."""
    if path.is_file():
        return zipfile.is_zipfile(path)
    if not path.is_dir():
        return False
    files = [p for p in path.iterdir() if p.is_file() and not p.name.startswith(".")]
    return (
        bool(files)
        and not any(p.is_dir() and not p.name.startswith(".") for p in path.iterdir())
        and all(FILE_NAME.match(p.name) for p in files)
    )


def read_download(path: Path) -> tuple[list[Upload], list[str]]:
    """Every upload in the zip or folder, and the names that are not Canvas submission files."""
    entries: list[tuple[str, bytes | None]] = []
    if path.is_file():
        try:
            with zipfile.ZipFile(path) as archive:
                for info in archive.infolist():
                    if info.is_dir():
                        continue
                    name = info.filename.replace("\\", "/").rsplit("/", 1)[-1]
                    data = archive.read(info) if info.file_size <= MAX_FILE_BYTES else None
                    entries.append((name, data))
        except (zipfile.BadZipFile, OSError) as error:
            raise CanvasInputError(f"{path}: not a readable zip ({error})") from error
    else:
        for item in sorted(path.iterdir()):
            if item.is_file():
                size = item.stat().st_size
                entries.append((item.name, item.read_bytes() if size <= MAX_FILE_BYTES else None))
    uploads, skipped = [], []
    for name, data in entries:
        match = FILE_NAME.match(name)
        if name.startswith(".") or name.startswith("__MACOSX"):
            continue
        if match is None:
            skipped.append(f"{name} (not named as Canvas names a submission file)")
        elif data is None:
            skipped.append(f"{name} (over {MAX_FILE_BYTES // 2**20} MiB)")
        else:
            uploads.append(
                Upload(
                    name,
                    match["name"],
                    match["user_id"],
                    int(match["attachment_id"]),
                    match["original"],
                    bool(match["late"]),
                    data,
                )
            )
    return uploads, skipped


def read_roster(path: Path) -> dict[str, dict[str, str]]:
    """Canvas user id -> that row of Canvas's gradebook export (Student, ID, SIS User ID, SIS Login ID,
    Section); the "Points Possible" row and rows without an id are left out."""
    with open(path, newline="", encoding="utf-8-sig") as handle:
        reader = csv.DictReader(handle)
        fields = [f.strip() for f in reader.fieldnames or []]
        missing = [c for c in ("Student", "ID") if c not in fields]
        if missing:
            raise CanvasInputError(
                f"{path}: not Canvas's gradebook export (no {', '.join(missing)} column; Canvas: Grades -> Export)"
            )
        roster = {}
        for row in reader:
            entry = {(k or "").strip(): (v or "").strip() for k, v in row.items() if k}
            if entry.get("ID", "").isdigit():
                roster[entry["ID"]] = entry
        return roster


def points_possible(path: Path) -> dict[str, float]:
    """Column header -> the points Canvas's gradebook export gives that column in its "Points
    Possible" row; {} for a file without that row (a roster of our own)."""
    with open(path, newline="", encoding="utf-8-sig") as handle:
        rows = list(csv.reader(handle))
    if not rows:
        return {}
    header = [cell.strip() for cell in rows[0]]
    for row in rows[1:]:
        if row and row[0].strip() == "Points Possible":
            found = {}
            for name, value in zip(header, row):
                try:
                    found[name] = float(value)
                except ValueError:  # the identity columns are blank there
                    continue
            return found
    return {}


def points_differences(rows: list[list[str]], canvas_points: dict[str, float]) -> list[str]:
    """Each column of an import (`rows`: header, Points Possible, students) whose Points Possible
    is not what Canvas's own export says the column is worth."""
    differences = []
    for header, value in zip(rows[0], rows[1]):
        if header in canvas_points and value and float(value) != canvas_points[header]:
            differences.append(
                f"column '{header}': this export's Points Possible is {float(value):g}, Canvas's gradebook export "
                f"(the roster) says the column is worth {canvas_points[header]:g}. Canvas keeps its own points: "
                f"a student with all {float(value):g} points here shows {float(value):g}/{canvas_points[header]:g} "
                "there. Set the column's points in Canvas, or (with --allow-partial) grade the written answers "
                "and export again."
            )
    return differences


def students(uploads: list[Upload], roster: dict[str, dict[str, str]], assignment: str = "") -> list[Student]:
    """One Student per Canvas user: the latest upload graded (a notebook before any other file; in one
    hand-in of several files, the one named after the assignment, its latest -N re-upload)."""
    by_user: dict[str, list[Upload]] = {}
    for upload in uploads:
        by_user.setdefault(upload.user_id, []).append(upload)
    taken: set[str] = set()
    result = []
    for user_id, mine in sorted(by_user.items()):
        # Latest first: Canvas numbers each upload after the last, and a re-upload of the same name gets -N.
        mine.sort(
            key=lambda u: (
                u.original.lower().endswith(".ipynb"),
                u.attachment_id,
                u.base == assignment,
                u.resubmission,
            ),
            reverse=True,
        )
        entry = roster.get(user_id, {})
        login = entry.get("SIS Login ID", "")
        student_id = collect.safe_id(login or user_id, taken)
        result.append(Student(student_id, user_id, entry.get("Student") or mine[0].name, mine[0], mine[1:], entry))
    return result


def stage(students_: list[Student], folder: Path) -> None:
    """Write each student's graded upload as <student id><suffix>: a folder course/collect.py reads."""
    folder.mkdir(parents=True, exist_ok=True)
    for student in students_:
        suffix = Path(student.graded.original).suffix or ".ipynb"
        (folder / f"{student.student_id}{suffix}").write_bytes(student.graded.data)


def record(db_url: str, students_: list[Student]) -> None:
    """Give each graded student their name and Canvas user id in the gradebook (Formgrader shows the
    name; the Canvas export writes the id into its ID column)."""
    with Gradebook(db_url) as gradebook:
        for student in students_:
            last, _, first = student.name.partition(", ") if ", " in student.name else (student.name, "", "")
            gradebook.update_or_create_student(
                student.student_id, first_name=first, last_name=last, lms_user_id=student.user_id
            )
