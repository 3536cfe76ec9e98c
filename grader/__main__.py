"""Command line: python -m grader {grade,feedback,report,export} ..."""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

from grader.course import nbgrader_course as course
from grader.course.feedback import NoGrades, generate
from grader.grading import grade
from grader.grading.cluster import ClusterUnusable, parse_resources
from grader.grading.settings import COURSE_LIMIT, BadSetting
from grader.isolation import sandbox
from grader.lms import canvas
from grader.lms.push import main as lms_main
from grader.records import export
from grader.records.report import report as make_report

ROOT_HELP = "the course folder, with its own nbgrader_config.py (default: the current folder)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m grader", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    _grade_parser(sub)
    _feedback_and_report_parsers(sub)
    _export_parser(sub)
    _lms_parser(sub)
    args = parser.parse_args(argv)

    if args.command == "grade":
        return _grade(args)
    if args.command == "export":
        return _export(args)
    if args.command == "lms":
        return lms_main(args)
    if args.command == "feedback":
        try:
            pages = generate(args.assignment, db_url=args.db_url, root=args.root)
        except NoGrades as error:
            print(error, file=sys.stderr)
            return 1
        for path in pages:
            print(path)
        return 0
    print(make_report(args.assignment, db_url=args.db_url, out=args.out, root=args.root))
    return 0


def _grade_parser(sub) -> None:
    grade = sub.add_parser("grade", help="grade a folder of submissions")
    grade.add_argument("assignment")
    grade.add_argument(
        "--submissions",
        required=True,
        type=Path,
        help="folder with <student>.ipynb files or <student>/ folders, or Canvas's bulk download "
        "(submissions.zip or its extracted folder)",
    )
    grade.add_argument(
        "--canvas-roster",
        type=Path,
        default=None,
        help="with a Canvas download: Canvas's gradebook export CSV, which names each Canvas user",
    )
    grade.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="submissions graded at once")
    grade.add_argument(
        "--scheduler",
        default=None,
        metavar="ADDRESS|local",
        help="grade on the workers of a Dask scheduler (tcp://HOST:PORT), or on a new "
        "local Dask cluster of --jobs workers ('local')",
    )
    grade.add_argument(
        "--resources",
        default=None,
        metavar="NAME=N[,NAME=N]",
        help="with --scheduler: what each task needs of a worker, e.g. GPU=1 runs each "
        "notebook on a worker started with `--resources GPU=1`, one per GPU",
    )
    grade.add_argument(
        "--timeout",
        type=int,
        default=None,
        help="seconds one cell may run, 0 for no limit but the notebook's (default: the course's Execute.timeout)",
    )
    grade.add_argument("--notebook-timeout", type=int, default=600, help="seconds a whole notebook may run")
    grade.add_argument("--memory", type=int, default=2048, help="memory limit per process, MiB")
    grade.add_argument("--out", type=Path, default=None, help="CSV file (default grades/ASSIGNMENT.csv)")
    grade.add_argument("--db-url", default=None, help="gradebook URL (default: the course's SQLite file)")
    grade.add_argument("--no-sandbox", action="store_true", help="run student code without isolation")
    grade.add_argument("--root", type=Path, default=None, help=ROOT_HELP)


def _feedback_and_report_parsers(sub) -> None:
    feedback = sub.add_parser("feedback", help="HTML feedback per student, hidden tests removed")
    feedback.add_argument("assignment")
    feedback.add_argument("--db-url", default=None)
    feedback.add_argument("--root", type=Path, default=None, help=ROOT_HELP)
    report = sub.add_parser("report", help="score distribution and per-item pass rates")
    report.add_argument("assignment")
    report.add_argument("--db-url", default=None)
    report.add_argument("--root", type=Path, default=None, help=ROOT_HELP)
    report.add_argument("--out", type=Path, default=None, help="PNG file (default grades/ASSIGNMENT.png)")


def _export_parser(sub) -> None:
    export = sub.add_parser("export", help="grades for an LMS (Canvas' gradebook import CSV)")
    export.add_argument("assignments", nargs="*", help="assignments to export (default: those with graded submissions)")
    export.add_argument(
        "--assignment",
        action="append",
        default=[],
        dest="named",
        metavar="ASSIGNMENT",
        help="an assignment to export (repeatable)",
    )
    export.add_argument(
        "--column",
        action="append",
        default=[],
        metavar="ASSIGNMENT=COLUMN",
        help="the Canvas column an assignment fills, headed as Canvas's export heads it, e.g. "
        "'hw1=Homework 1 (12345)' (repeatable)",
    )
    export.add_argument(
        "--columns",
        type=Path,
        default=None,
        metavar="FILE",
        help="a JSON object or CSV file: assignment -> Canvas column header",
    )
    export.add_argument(
        "--allow-partial",
        action="store_true",
        help="export although written answers lack a grade (the column then holds autograded points "
        "only) or submissions were graded against an earlier release (left blank)",
    )
    export.add_argument("--format", choices=["canvas"], required=True)
    export.add_argument("--out", type=Path, default=None, help="CSV file (default grades/canvas.csv)")
    export.add_argument(
        "--roster",
        type=Path,
        default=None,
        help="CSV mapping student_id to name, canvas_id, sis_user_id, sis_login_id, section; "
        "or Canvas's gradebook export",
    )
    export.add_argument("--db-url", default=None, help="gradebook URL (default: the course's)")
    export.add_argument("--root", type=Path, default=None, help=ROOT_HELP)


def _lms_parser(sub) -> None:
    lms = sub.add_parser("lms", help="grades into the LMS through LTI 1.3 (Assignment and Grade Services)")
    lms_sub = lms.add_subparsers(dest="lms_command", required=True)
    push = lms_sub.add_parser("push", help="each student's total for ASSIGNMENT into the LMS's line item")
    push.add_argument(
        "assignment",
        metavar="ASSIGNMENT[=LINE_ITEM]",
        help="the nbgrader assignment; =LINE_ITEM sends into a line item (a gradebook column) the "
        "instructor made in the LMS, named by its label, URL or resourceId (never created), "
        'e.g. "ps1=Homework 1"; without it, the line item whose resourceId is ASSIGNMENT '
        "(created when missing)",
    )
    push.add_argument("--dry-run", action="store_true", help="list what would be sent; contact nobody")
    push.add_argument("--force", action="store_true", help="send again what the LMS already has")
    push.add_argument(
        "--lti",
        type=Path,
        default=None,
        help="the hub's LTI folder, HUB_STATE/lti (default: found next to --root or in .hub)",
    )
    push.add_argument("--db-url", default=None, help="gradebook URL (default: the course's)")
    push.add_argument("--root", type=Path, default=None, help=ROOT_HELP)


def _grade(args) -> int:
    staged = getattr(args, "canvas_notes", None) is not None
    if not staged and (args.canvas_roster is not None or canvas.is_download(args.submissions)):
        return _grade_canvas(args)
    if not args.submissions.is_dir():
        print(f"error: {args.submissions} is not a folder of submissions", file=sys.stderr)
        return 2
    if args.no_sandbox:
        print(
            "WARNING: --no-sandbox: student code runs with YOUR rights, can read the solutions and "
            "gradebook, and has network access. Use only for code you trust.",
            file=sys.stderr,
        )
    elif not sandbox.available():
        print(f"error: {sandbox.INSTALL_HINT}", file=sys.stderr)
        return 2
    resources = None
    if args.resources:
        if not args.scheduler:
            print("error: --resources needs --scheduler (it names what a Dask worker offers)", file=sys.stderr)
            return 2
        try:
            resources = parse_resources(args.resources)
        except ValueError as error:
            print(f"error: {error}", file=sys.stderr)
            return 2
    # --timeout, else the course's limit as nbgrader reads it; 0, a negative value or a course's
    # None: no limit per cell (the notebook's limit, --notebook-timeout, still stops it).
    options = grade.Options(
        args.assignment,
        args.submissions,
        jobs=args.jobs,
        cell_timeout=COURSE_LIMIT if args.timeout is None else (args.timeout if args.timeout > 0 else None),
        notebook_timeout=args.notebook_timeout,
        sandbox=not args.no_sandbox,
        memory_mb=args.memory,
        db_url=args.db_url,
        root=args.root,
        scheduler=args.scheduler,
        resources=resources,
    )
    try:
        run = grade.resolve(options)  # the one value the run reads from here on
    except BadSetting as error:
        print(f"error: {error}; nothing was graded", file=sys.stderr)
        return 2
    try:
        rows = grade.run(run)
    except (ClusterUnusable, course.NoSuchAssignment) as error:
        print(f"error: {error}; nothing was graded", file=sys.stderr)
        return 2
    config = run.config
    out = args.out or course.course_root(config) / "grades" / f"{args.assignment}.csv"
    for row in rows:
        if row.student_id in getattr(args, "canvas_notes", {}):
            row.detail = "; ".join(filter(None, [args.canvas_notes[row.student_id], row.detail]))
    export.write_csv(rows, out)
    print(f"{len(rows)} students: {grade.describe(rows)}; grades in {out}")
    summary = grade.not_graded_summary(rows)
    if summary:
        print(f"error: {summary}. Their old scores, if any, stay; fix the cause and grade again.", file=sys.stderr)
        return 1
    return 0


def _grade_canvas(args) -> int:
    """Grade Canvas's bulk download: one student per Canvas user, their latest upload graded."""
    try:
        roster = canvas.read_roster(args.canvas_roster) if args.canvas_roster else {}
        uploads, skipped = canvas.read_download(args.submissions)
    except (ValueError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    students = canvas.students(uploads, roster, args.assignment)
    for name in skipped:
        print(f"warning: {args.submissions}: skipped {name}", file=sys.stderr)
    unknown = [s.user_id for s in students if roster and not s.roster]
    if unknown:
        print(f"warning: Canvas users not on the roster (graded by user id): {', '.join(unknown)}", file=sys.stderr)
    print(f"Canvas download: {len(uploads)} files from {len(students)} students")
    with tempfile.TemporaryDirectory(prefix="canvas-") as staged:
        canvas.stage(students, Path(staged))
        args.submissions, args.canvas_notes = Path(staged), {s.student_id: s.note() for s in students}
        status = _grade(args)
    if status != 2:  # graded (status 1: some not graded): name them in the gradebook
        config = course.load_config(args.root)
        canvas.record(args.db_url or course.db_url(config), students)
    return status


def _export(args) -> int:
    config = course.load_config(args.root)
    out = args.out or course.course_root(config) / "grades" / "canvas.csv"
    try:
        columns = export.read_columns(args.columns, args.column)
        result = export.write_canvas_csv(
            config,
            out,
            (args.assignments + args.named) or None,
            args.roster,
            db_url=args.db_url,
            columns=columns,
            allow_partial=args.allow_partial,
        )
    except export.ExportRefused as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    except (ValueError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except Exception as error:  # nbgrader's MissingEntry for an unknown assignment
        print(f"error: {type(error).__name__}: {error}", file=sys.stderr)
        return 2
    for problem in result.partial:
        print(f"partial: {problem}", file=sys.stderr)
    for note in result.notes:
        print(f"note: {note}", file=sys.stderr)
    for warning in result.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    print(f"{len(result.rows) - 2} students in {out} (Canvas: Grades -> Import)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
