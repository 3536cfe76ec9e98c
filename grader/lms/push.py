"""`python -m grader lms push ASSIGNMENT`: every student's total into the LMS gradebook
through LTI 1.3 Assignment and Grade Services (AGS 2.0).

What it reads:

- nbgrader's gradebook of the course at --root (the source of truth). A student is sent
  only when the submission is graded: autograded, not marked invalid or flagged by the
  grader, and with every written answer graded in Formgrader. Everyone else is listed
  with the reason.
- the hub's LTI folder (--lti; `make hub` writes it as HUB_STATE/lti, the grader account's, so
  that push runs as that account: from the Formgrader service, hub/lms_service.py): `tool.json`
  (the platform's issuer, client id and token URL, the hub's public URL), `tool-key.pem`
  (the tool's private key, whose public half the hub serves at /hub/lti13/jwks) and
  `lti.sqlite`, where the hub records each accepted launch: hub user name (the nbgrader
  student id) -> LMS user id (`sub`) and the launch's AGS endpoint claim.

What it does: a client-credentials token (a JWT signed with the tool's key, Security
Framework 1.0 section 4), the line item whose resourceId is the assignment in each
course's line item container (created when missing), then one score per student.
`ASSIGNMENT=LINE_ITEM` sends to a line item the instructor made in the LMS instead (named
by its label, URL or resourceId, as `export --column` names a Canvas column); it is
never created, and a name the LMS does not list stops the run with the ones it does. Every
score the LMS accepted is recorded in `lti.sqlite` at once, so a run that stops halfway
resumes where it stopped; a score already sent (or already in the LMS's results) is not
sent again unless --force. Failed requests are retried with exponential backoff; when the
LMS keeps failing, the run stops and lists who was and was not sent.

What the hub shares with it (the store, the tool's key, the AGS client) is lms/lti_tool.py.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from nbgrader.api import Gradebook, MissingEntry

from grader.course import nbgrader_course as course
from grader.grading.grade import graded_metadata
from grader.lms.lti_tool import (
    SCOPE_LINEITEM,
    SCOPE_LINEITEM_READ,
    SCOPE_RESULT_READ,
    SCOPE_SCORE,
    SCORE_TYPE,
    LMSError,
    Platform,
    Store,
    load_key,
    now,
    with_path,
)

# -- the class ----------------------------------------------------------------------------


@dataclass
class Entry:
    student: str
    sub: str = ""
    container: str = ""
    score: float = 0.0
    maximum: float = 0.0
    reason: str = ""  # why it is not sent; empty: to send
    outcome: str = ""  # sent | unchanged | failed | stopped


def graded(gradebook, config, assignment: str, student: str) -> tuple[float, float, str]:
    """(score, maximum, reason not to send); the reason is empty for a graded submission."""

    try:
        submission = gradebook.find_submission(assignment, student)
    except MissingEntry:
        return 0.0, 0.0, "no submission in the gradebook"
    grades = [g for nb in submission.notebooks for g in nb.grades]
    if any(g.cell.cell_type == "code" and g.auto_score is None and g.manual_score is None for g in grades):
        return 0.0, 0.0, "not autograded yet"
    engine = graded_metadata(config, assignment, student) or {}
    if engine.get("invalid"):
        return 0.0, 0.0, f"not graded: the submission is invalid ({engine['invalid']})"
    if engine.get("flags"):
        return 0.0, 0.0, "not graded: flagged by the grader (" + "; ".join(engine["flags"]) + ")"
    if submission.needs_manual_grade:
        return 0.0, 0.0, "written answers not graded yet (Formgrader: Manual Grading)"
    return float(submission.score), float(submission.max_score), ""


def plan(gradebook, config, assignment: str, launches: dict[str, dict]) -> list[Entry]:
    """One entry per gradebook student and per student who launched the hub."""
    names = {s.id for s in gradebook.students} | {n for n, launch in launches.items() if launch["role"] == "student"}
    entries = []
    for name in sorted(names):
        entry = Entry(name)
        launch = launches.get(name)
        score, maximum, reason = graded(gradebook, config, assignment, name)
        ags = (launch or {}).get("ags") or {}
        if launch is None:
            reason = "no LMS launch recorded: the student never opened the hub from the LMS"
        elif launch["role"] != "student":
            reason = f"launched the hub as {launch['role']}, not as a student"
        elif not ags.get("lineitems"):
            reason = reason or "the LMS sent no grade service (AGS line items URL) with this student's launch"
        elif not reason and maximum <= 0:
            reason = "the assignment has no points"
        if launch:
            entry.sub, entry.container = launch["sub"], ags.get("lineitems", "")
        entry.score, entry.maximum, entry.reason = score, maximum, reason
        entries.append(entry)
    return entries


def find_lti_dir(given: Path | None, course_root: Path) -> Path:
    candidates = [given] if given else [course_root.parent / "lti", Path(os.environ.get("HUB_STATE") or ".hub") / "lti"]
    for folder in candidates:
        if (folder / "tool.json").exists():
            return folder
    raise FileNotFoundError(
        "no LTI configuration (tool.json) in "
        + " or ".join(str(c) for c in candidates)
        + ": start `make hub` with an LTI configuration first (docs/lti.md), "
        "or name the folder with --lti HUB_STATE/lti"
    )


def comment(tool: dict, course_id: str, assignment: str, entry: Entry) -> str:
    feedback = f"{tool.get('tool_url', '').rstrip('/')}/hub/user-redirect/lab/tree/{course_id}/{assignment}/feedback"
    return (
        f"{assignment}: {entry.score:g} of {entry.maximum:g} points. Feedback: {feedback} "
        "(fetch it first in JupyterLab: Nbgrader > Assignment List > Fetch Feedback)."
    )


def push(
    assignment: str,
    root: Path | None = None,
    lti_dir: Path | None = None,
    db_url: str | None = None,
    dry_run: bool = False,
    force: bool = False,
    out=print,
    lineitem: str = "",
) -> int:

    config = course.load_config(root)
    folder = find_lti_dir(lti_dir, course.course_root(config))
    tool = json.loads((folder / "tool.json").read_text(encoding="utf-8"))
    store = Store(folder / "lti.sqlite")
    launches = store.launches()
    with Gradebook(db_url or course.db_url(config)) as gradebook:
        gradebook.find_assignment(assignment)  # MissingEntry: not an assignment of this gradebook
        entries = plan(gradebook, config, assignment, launches)
    course_id = course.directory(config).course_id
    todo = [e for e in entries if not e.reason]
    for entry in entries:
        if entry.reason:
            out(f"skipped    {entry.student}: {entry.reason}")
    if dry_run:
        for entry in todo:
            known = store.db.execute(
                "select score, maximum from sent where assignment = ? and sub = ?", (assignment, entry.sub)
            ).fetchall()
            same = not force and any(_same(k, (entry.score, entry.maximum)) for k in known)
            out(
                f"{'unchanged' if same else 'would send':<10} {entry.student} (LMS user {entry.sub}): "
                f"{entry.score:g}/{entry.maximum:g}"
            )
        out(f"{assignment}: dry run, nothing sent; {len(todo)} graded students, {len(entries) - len(todo)} skipped")
        return 0
    granted: set[str] = set()
    for name in {e.student for e in todo}:
        granted |= set(launches[name]["ags"].get("scope") or [])
    wanted = {SCOPE_LINEITEM, SCOPE_LINEITEM_READ, SCOPE_RESULT_READ, SCOPE_SCORE}
    platform = Platform(
        tool, load_key(tool["key"]), (granted & wanted) or wanted, float(os.environ.get("GRADER_LMS_BACKOFF", "1"))
    )
    stopped = ""
    for container in sorted({e.container for e in todo}):
        group = [e for e in todo if e.container == container]
        try:
            stopped = stopped or send(
                platform, store, tool, course_id, assignment, container, group, force, out, lineitem
            )
        except LMSError as error:  # the line item or the token: nobody of this course can be sent
            stopped = stopped or (str(error) if error.retryable else "")
            for entry in group:
                if not entry.outcome:
                    entry.outcome, entry.reason = "failed", str(error)
        if stopped:
            for entry in todo:
                entry.outcome = entry.outcome or "stopped"
    return report(assignment, entries, todo, stopped, out)


def send(
    platform: Platform,
    store: Store,
    tool: dict,
    course_id: str,
    assignment: str,
    container: str,
    group: list[Entry],
    force: bool,
    out,
    target: str = "",
) -> str:
    """The scores of one course's students (into `target`, the instructor's line item, if named);
    returns why it stopped ('' when it did not)."""
    maximum = max(e.maximum for e in group)
    if target:
        lineitem = platform.existing_line_item(container, target)
    else:
        lineitem = platform.line_item(container, assignment, maximum, create=SCOPE_LINEITEM in platform.scopes)
    in_lms: dict[str, tuple[float, float]] = {}
    if not force and SCOPE_RESULT_READ in platform.scopes and any(store.sent(lineitem, e.sub) is None for e in group):
        try:
            in_lms = platform.results(lineitem)
        except LMSError as error:  # reading is a convenience: the local record still holds
            out(f"note: could not read the LMS's results ({error})")
    for entry in group:  # first what the LMS already has, so that a stop cannot hide it
        held = [store.sent(lineitem, entry.sub), in_lms.get(entry.sub)]
        if not force and any(h and _same(h, (entry.score, entry.maximum)) for h in held):
            if not held[0] or not _same(held[0], (entry.score, entry.maximum)):
                store.mark_sent(lineitem, entry.sub, entry.student, assignment, entry.score, entry.maximum)
            entry.outcome = "unchanged"
            out(
                f"unchanged  {entry.student} (LMS user {entry.sub}): {entry.score:g}/{entry.maximum:g} "
                "already in the LMS"
            )
    for entry in group:
        if entry.outcome:
            continue
        score = {
            "userId": entry.sub,
            "scoreGiven": entry.score,
            "scoreMaximum": entry.maximum,
            "comment": comment(tool, course_id, assignment, entry),
            "timestamp": now(),
            "activityProgress": "Completed",
            "gradingProgress": "FullyGraded",
        }
        try:
            platform.call("POST", with_path(lineitem, "scores"), "application/json", score, SCORE_TYPE)
        except LMSError as error:
            entry.outcome, entry.reason = "failed", str(error)
            out(f"not sent   {entry.student} (LMS user {entry.sub}): {error}")
            if error.retryable:
                return str(error)
            continue
        store.mark_sent(lineitem, entry.sub, entry.student, assignment, entry.score, entry.maximum)
        entry.outcome = "sent"
        out(f"sent       {entry.student} (LMS user {entry.sub}): {entry.score:g}/{entry.maximum:g}")
    return ""


def report(assignment: str, entries: list[Entry], todo: list[Entry], stopped: str, out) -> int:
    count = {kind: [e for e in todo if e.outcome == kind] for kind in ("sent", "unchanged", "failed", "stopped")}
    out(
        f"{assignment}: {len(count['sent'])} sent, {len(count['unchanged'])} already in the LMS, "
        f"{len(entries) - len(todo)} skipped, {len(count['failed']) + len(count['stopped'])} not sent"
    )
    if not (count["failed"] or count["stopped"]):
        return 0
    if stopped:
        out(f"Stopped: the LMS kept failing ({stopped}).")
    done = count["sent"] + count["unchanged"]
    out("In the LMS: " + (", ".join(e.student for e in done) or "nobody"))
    out(
        "Not sent:   "
        + ", ".join(
            f"{e.student} ({e.reason or 'not tried: stopped before it'})" for e in count["failed"] + count["stopped"]
        )
    )
    out("Run the same command again to send the rest; what the LMS already has is not sent twice.")
    return 1


def _same(a: tuple[float, float], b: tuple[float, float]) -> bool:
    return abs(a[0] - b[0]) < 1e-6 and abs(a[1] - b[1]) < 1e-6


def main(args) -> int:
    """`python -m grader lms push`: the parsed arguments of grader/__main__.py."""

    assignment, _, lineitem = args.assignment.partition("=")  # ASSIGNMENT[=the instructor's line item]
    try:
        return push(
            assignment,
            lineitem=lineitem.strip(),
            root=args.root,
            lti_dir=args.lti,
            db_url=args.db_url,
            dry_run=args.dry_run,
            force=args.force,
        )
    except (FileNotFoundError, LMSError, KeyError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except MissingEntry as error:
        print(f"error: {assignment} is not an assignment of the gradebook ({error})", file=sys.stderr)
        return 2
