"""`python -m grader lms push ASSIGNMENT`: every student's total into the LMS gradebook
through LTI 1.3 Assignment and Grade Services (AGS 2.0).

What it reads:

- nbgrader's gradebook of the course at --root (the source of truth). A student is sent
  only when the submission is graded: autograded, not marked invalid or flagged by the
  grader, and with every written answer graded in Formgrader. Everyone else is listed
  with the reason.
- the hub's LTI folder (--lti; `make hub` writes it as HUB_STATE/hub/lti): `tool.json`
  (the platform's issuer, client id and token URL, the hub's public URL), `tool-key.pem`
  (the tool's private key, whose public half the hub serves at /hub/lti13/jwks) and
  `lti.sqlite`, where the hub records each accepted launch: hub user name (the nbgrader
  student id) -> LMS user id (`sub`) and the launch's AGS endpoint claim.

What it does: a client-credentials token (a JWT signed with the tool's key, Security
Framework 1.0 section 4), the line item whose resourceId is the assignment in each
course's line item container (created when missing), then one score per student. Every
score the LMS accepted is recorded in `lti.sqlite` at once, so a run that stops halfway
resumes where it stopped; a score already sent (or already in the LMS's results) is not
sent again unless --force. Failed requests are retried with exponential backoff; when the
LMS keeps failing, the run stops and lists who was and was not sent.

This module also holds what the hub shares with it (hub/lti.py imports it): the store's
schema and the tool's key and JWKS, so both sides agree on one definition.
"""
from __future__ import annotations

import base64
import hashlib
import json
import os
import sqlite3
import sys
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from urllib.error import HTTPError, URLError
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit
from urllib.request import Request, urlopen

from nbgrader.api import Gradebook, MissingEntry

from . import course
from .grade import graded_metadata

AGS = "https://purl.imsglobal.org/spec/lti-ags/scope/"
SCOPE_LINEITEM, SCOPE_LINEITEM_READ = AGS + "lineitem", AGS + "lineitem.readonly"
SCOPE_RESULT_READ, SCOPE_SCORE = AGS + "result.readonly", AGS + "score"
AGS_CLAIM = "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"
LINEITEM_TYPE = "application/vnd.ims.lis.v2.lineitem+json"
CONTAINER_TYPE = "application/vnd.ims.lis.v2.lineitemcontainer+json"
SCORE_TYPE = "application/vnd.ims.lis.v1.score+json"
RESULTS_TYPE = "application/vnd.ims.lis.v2.resultcontainer+json"
ATTEMPTS = 5            # one try and four retries: waits of 1, 2, 4 and 8 x BACKOFF seconds
TIMEOUT = 30            # seconds per HTTP request

SCHEMA = """
create table if not exists launches (
    name text primary key,      -- hub user name = nbgrader student id
    sub text not null,          -- the LMS user id (LTI `sub`): AGS scores name the user by it
    role text not null,         -- student | instructor
    launched real not null,     -- unix time of the latest launch
    claims text not null        -- JSON: the AGS endpoint claim, context, resource link, name, email
);
create table if not exists nonces (nonce text primary key, expires real not null);
create table if not exists sent (
    lineitem text not null, sub text not null, student text not null, assignment text not null,
    score real not null, maximum real not null, sent_at text not null,
    primary key (lineitem, sub)
);
"""


class Store:
    """lti.sqlite: launches and used nonces (written by the hub), scores sent (by lms push)."""

    def __init__(self, path: Path | str):
        path = Path(path)
        fresh = not path.exists()
        self.db = sqlite3.connect(path, timeout=30, isolation_level=None)
        if fresh:
            os.chmod(path, 0o600)
        self.db.executescript(SCHEMA)

    def use_nonce(self, nonce: str, expires: float) -> bool:
        """True the first time a launch's nonce is seen; False for a replay."""
        self.db.execute("delete from nonces where expires < ?", (time.time(),))
        done = self.db.execute("insert or ignore into nonces values (?, ?)", (nonce, expires))
        return done.rowcount == 1

    def record_launch(self, name: str, sub: str, role: str, claims: dict) -> None:
        self.db.execute("insert or replace into launches values (?, ?, ?, ?, ?)",
                        (name, sub, role, time.time(), json.dumps(claims)))

    def launches(self) -> dict[str, dict]:
        rows = self.db.execute("select name, sub, role, launched, claims from launches")
        return {name: {"sub": sub, "role": role, "launched": launched, **json.loads(claims)}
                for name, sub, role, launched, claims in rows}

    def sent(self, lineitem: str, sub: str) -> tuple[float, float] | None:
        row = self.db.execute("select score, maximum from sent where lineitem = ? and sub = ?",
                              (lineitem, sub)).fetchone()
        return tuple(row) if row else None

    def mark_sent(self, lineitem: str, sub: str, student: str, assignment: str, score: float,
                  maximum: float) -> None:
        self.db.execute("insert or replace into sent values (?, ?, ?, ?, ?, ?, ?)",
                        (lineitem, sub, student, assignment, score, maximum, _now()))


# -- the tool's key ---------------------------------------------------------------------

def load_key(path: Path | str, create: bool = False):
    """The tool's RSA private key; with `create`, a new 2048-bit one when the file is missing."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    path = Path(path)
    if not path.exists() and create:
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
        with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "wb") as out:
            out.write(pem)
    return serialization.load_pem_private_key(path.read_bytes(), password=None)


def public_jwk(key) -> dict:
    """The public half as a JWK with alg, use and a kid (its RFC 7638 thumbprint)."""
    from jwt.algorithms import RSAAlgorithm

    jwk = RSAAlgorithm.to_jwk(key.public_key(), as_dict=True)
    canonical = json.dumps({k: jwk[k] for k in ("e", "kty", "n")}, separators=(",", ":"), sort_keys=True)
    kid = base64.urlsafe_b64encode(hashlib.sha256(canonical.encode()).digest()).rstrip(b"=").decode()
    return {**jwk, "alg": "RS256", "use": "sig", "kid": kid}


# -- HTTP and AGS -------------------------------------------------------------------------

class LMSError(Exception):
    def __init__(self, message: str, retryable: bool):
        super().__init__(message)
        self.retryable = retryable


def with_path(url: str, suffix: str, **query: str) -> str:
    """`url` with `/suffix` appended to its path and `query` merged into its query string:
    Moodle's line item URLs end in `?type_id=N`, which must stay after the new segment."""
    parts = urlsplit(url)
    path = parts.path.rstrip("/") + "/" + suffix if suffix else parts.path
    params = parse_qsl(parts.query, keep_blank_values=True) + list(query.items())
    return urlunsplit(parts._replace(path=path, query=urlencode(params)))


def _http(method: str, url: str, headers: dict, body: bytes | None = None):
    """(status, headers, body) of one request; raises LMSError for what no retry can fix."""
    try:
        with urlopen(Request(url, data=body, method=method, headers=headers), timeout=TIMEOUT) as response:
            return response.status, response.headers, response.read()
    except HTTPError as error:
        return error.code, error.headers, error.read()
    except (URLError, OSError) as error:  # refused, reset, timed out: worth another try
        raise LMSError(f"{method} {url}: {getattr(error, 'reason', error)}", retryable=True) from error


def _next_link(headers) -> str | None:
    for part in (headers.get("Link") or "").split(","):
        if 'rel="next"' in part and "<" in part:
            return part[part.index("<") + 1:part.index(">")]
    return None


class Platform:
    """The LMS's token endpoint and AGS services, with one access token per run."""

    def __init__(self, tool: dict, key, scopes: set[str], backoff: float):
        self.tool, self.key, self.scopes, self.backoff = tool, key, scopes, backoff
        self.token, self.expires = "", 0.0

    def assertion(self) -> str:
        import jwt

        now = int(time.time())
        claims = {"iss": self.tool["client_id"], "sub": self.tool["client_id"],
                  "aud": self.tool["token_url"],
                  "iat": now, "exp": now + 300, "jti": uuid.uuid4().hex}
        return jwt.encode(claims, self.key, algorithm="RS256", headers={"kid": public_jwk(self.key)["kid"]})

    def access_token(self) -> str:
        if self.token and time.time() < self.expires:
            return self.token
        form = urlencode({"grant_type": "client_credentials",
                          "client_assertion_type": "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
                          "client_assertion": self.assertion(), "scope": " ".join(sorted(self.scopes))})
        status, _, body = self._retrying("POST", self.tool["token_url"], {
            "Content-Type": "application/x-www-form-urlencoded", "Accept": "application/json"}, form.encode())
        if status != 200:
            raise LMSError(f"the LMS refused an access token ({status}): {body[:300].decode(errors='replace')}",
                           retryable=False)
        answer = json.loads(body)
        granted = set((answer.get("scope") or " ".join(self.scopes)).split())
        if SCOPE_SCORE not in granted:
            raise LMSError(f"the LMS granted no score scope (granted: {' '.join(sorted(granted))})", False)
        self.scopes = granted
        self.token = answer["access_token"]
        self.expires = time.time() + int(answer.get("expires_in", 3600)) - 60
        return self.token

    def call(self, method: str, url: str, accept: str, payload: dict | None = None, content_type: str = ""):
        """An AGS request with the bearer token; a 401 fetches a new token once."""
        for renewed in (False, True):
            headers = {"Authorization": f"Bearer {self.access_token()}", "Accept": accept}
            body = None
            if payload is not None:
                headers["Content-Type"], body = content_type, json.dumps(payload).encode()
            status, answer_headers, answer = self._retrying(method, url, headers, body)
            if status == 401 and not renewed:
                self.token = ""
                continue
            if not 200 <= status < 300:
                raise LMSError(f"{method} {url}: the LMS answered {status}: "
                               f"{answer[:300].decode(errors='replace')}", retryable=False)
            return answer_headers, (json.loads(answer) if answer.strip() else None)

    def _retrying(self, method: str, url: str, headers: dict, body: bytes | None):
        """One request, tried again after 1, 2, 4, 8 x backoff seconds on connection errors,
        429 and 5xx (or after the LMS's Retry-After, up to a minute)."""
        problem, wait = "", self.backoff
        for attempt in range(ATTEMPTS):
            if attempt:
                time.sleep(wait)
            wait = self.backoff * 2 ** attempt
            try:
                status, answer_headers, answer = _http(method, url, headers, body)
            except LMSError as error:
                problem = str(error)
                continue
            if status == 429 or status >= 500:
                problem = f"{method} {url}: the LMS answered {status}"
                retry_after = (answer_headers or {}).get("Retry-After", "")
                wait = min(float(retry_after), 60.0) if retry_after.isdigit() else wait
                continue
            return status, answer_headers, answer
        raise LMSError(f"{problem} ({ATTEMPTS} tries)", retryable=True)

    def line_item(self, container: str, assignment: str, maximum: float, create: bool) -> str:
        """The URL of the container's line item for `assignment` (resourceId), created when missing."""
        url = with_path(container, "", resource_id=assignment)
        while url:
            headers, items = self.call("GET", url, CONTAINER_TYPE)
            for item in items or []:
                if item.get("resourceId") == assignment:
                    return item["id"]
            url = _next_link(headers)
        if not create:
            raise LMSError(f"no line item for {assignment} in {container}, and the LMS allows the tool "
                           "no lineitem scope to create one", retryable=False)
        _, item = self.call("POST", container, LINEITEM_TYPE, {
            "scoreMaximum": maximum, "label": assignment, "resourceId": assignment, "tag": "grade"},
            LINEITEM_TYPE)
        return item["id"]

    def results(self, lineitem: str) -> dict[str, tuple[float, float]]:
        """What the LMS holds for the line item: LMS user id -> (score, maximum)."""
        found, url = {}, with_path(lineitem, "results")
        while url:
            headers, items = self.call("GET", url, RESULTS_TYPE)
            for item in items or []:
                if item.get("resultScore") is not None:
                    found[item["userId"]] = (float(item["resultScore"]), float(item.get("resultMaximum") or 1))
            url = _next_link(headers)
        return found


# -- the class ----------------------------------------------------------------------------

@dataclass
class Entry:
    student: str
    sub: str = ""
    container: str = ""
    score: float = 0.0
    maximum: float = 0.0
    reason: str = ""          # why it is not sent; empty: to send
    outcome: str = ""         # sent | unchanged | failed | stopped


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
    candidates = [given] if given else [course_root.parent / "hub" / "lti",
                                        Path(os.environ.get("HUB_STATE") or ".hub") / "hub" / "lti"]
    for folder in candidates:
        if (folder / "tool.json").exists():
            return folder
    raise FileNotFoundError("no LTI configuration (tool.json) in " + " or ".join(str(c) for c in candidates)
                            + ": start `make hub` with an LTI configuration first (docs/lti.md), "
                              "or name the folder with --lti HUB_STATE/hub/lti")


def comment(tool: dict, course_id: str, assignment: str, entry: Entry) -> str:
    feedback = f"{tool.get('tool_url', '').rstrip('/')}/hub/user-redirect/lab/tree/{course_id}/{assignment}/feedback"
    return (f"{assignment}: {entry.score:g} of {entry.maximum:g} points. Feedback: {feedback} "
            "(fetch it first in JupyterLab: Nbgrader > Assignment List > Fetch Feedback).")


def push(assignment: str, root: Path | None = None, lti_dir: Path | None = None, db_url: str | None = None,
         dry_run: bool = False, force: bool = False, out=print) -> int:

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
            known = store.db.execute("select score, maximum from sent where assignment = ? and sub = ?",
                                     (assignment, entry.sub)).fetchall()
            same = not force and any(_same(k, (entry.score, entry.maximum)) for k in known)
            out(f"{'unchanged' if same else 'would send':<10} {entry.student} (LMS user {entry.sub}): "
                f"{entry.score:g}/{entry.maximum:g}")
        out(f"{assignment}: dry run, nothing sent; {len(todo)} graded students, "
            f"{len(entries) - len(todo)} skipped")
        return 0
    granted: set[str] = set()
    for name in {e.student for e in todo}:
        granted |= set(launches[name]["ags"].get("scope") or [])
    wanted = {SCOPE_LINEITEM, SCOPE_LINEITEM_READ, SCOPE_RESULT_READ, SCOPE_SCORE}
    platform = Platform(tool, load_key(tool["key"]), (granted & wanted) or wanted,
                        float(os.environ.get("GRADER_LMS_BACKOFF", "1")))
    stopped = ""
    for container in sorted({e.container for e in todo}):
        group = [e for e in todo if e.container == container]
        try:
            stopped = stopped or send(platform, store, tool, course_id, assignment, container, group, force, out)
        except LMSError as error:  # the line item or the token: nobody of this course can be sent
            stopped = stopped or (str(error) if error.retryable else "")
            for entry in group:
                if not entry.outcome:
                    entry.outcome, entry.reason = "failed", str(error)
        if stopped:
            for entry in todo:
                entry.outcome = entry.outcome or "stopped"
    return report(assignment, entries, todo, stopped, out)


def send(platform: Platform, store: Store, tool: dict, course_id: str, assignment: str, container: str,
         group: list[Entry], force: bool, out) -> str:
    """The scores of one course's students; returns why it stopped ('' when it did not)."""
    maximum = max(e.maximum for e in group)
    lineitem = platform.line_item(container, assignment, maximum, create=SCOPE_LINEITEM in platform.scopes)
    in_lms: dict[str, tuple[float, float]] = {}
    if not force and SCOPE_RESULT_READ in platform.scopes and any(store.sent(lineitem, e.sub) is None
                                                                    for e in group):
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
            out(f"unchanged  {entry.student} (LMS user {entry.sub}): {entry.score:g}/{entry.maximum:g} "
                "already in the LMS")
    for entry in group:
        if entry.outcome:
            continue
        score = {"userId": entry.sub, "scoreGiven": entry.score, "scoreMaximum": entry.maximum,
                 "comment": comment(tool, course_id, assignment, entry), "timestamp": _now(),
                 "activityProgress": "Completed", "gradingProgress": "FullyGraded"}
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
    out(f"{assignment}: {len(count['sent'])} sent, {len(count['unchanged'])} already in the LMS, "
        f"{len(entries) - len(todo)} skipped, {len(count['failed']) + len(count['stopped'])} not sent")
    if not (count["failed"] or count["stopped"]):
        return 0
    if stopped:
        out(f"Stopped: the LMS kept failing ({stopped}).")
    done = count["sent"] + count["unchanged"]
    out("In the LMS: " + (", ".join(e.student for e in done) or "nobody"))
    out("Not sent:   " + ", ".join(f"{e.student} ({e.reason or 'not tried: stopped before it'})"
                                   for e in count["failed"] + count["stopped"]))
    out("Run the same command again to send the rest; what the LMS already has is not sent twice.")
    return 1


def _same(a: tuple[float, float], b: tuple[float, float]) -> bool:
    return abs(a[0] - b[0]) < 1e-6 and abs(a[1] - b[1]) < 1e-6


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def main(args) -> int:
    """`python -m grader lms push`: the parsed arguments of grader/__main__.py."""

    try:
        return push(args.assignment, root=args.root, lti_dir=args.lti, db_url=args.db_url,
                    dry_run=args.dry_run, force=args.force)
    except (FileNotFoundError, LMSError, KeyError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except MissingEntry as error:
        print(f"error: {args.assignment} is not an assignment of the gradebook ({error})", file=sys.stderr)
        return 2
