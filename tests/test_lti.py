"""LTI 1.3: the real `make hub` with an LTI configuration and the project's own platform
(tests/lti_platform.py, its own process and key, on 127.0.0.1 and another site than the
hub's, as an LMS and a hub are), driven over HTTP and, last, in a browser. One hub serves
the module: each test has people of its own.

- a good launch signs a student in under a stable name (`lti-<sub>`) with an account and
  the students' group; instructors get Formgrader and the admin page, TAs Formgrader only,
  students neither; the AGS claim is kept;
- one name per student: the login id (a custom claim, as Canvas sends it) when it is a free
  account name, the name Canvas's bulk download grades under too; the roster from the LMS
  (Names and Role Provisioning, `hub/members.py roster`) names learners before their first launch;
- bad launches (wrong signature, expired token, replayed nonce, unknown issuer or
  deployment, missing or unknown roles) get an error page, never a session or an account;
- `python -m grader lms push` sends each graded total once (re-runs send nothing,
  --force sends again, a lost record is rebuilt from the platform), retries LMS errors,
  and a run that cannot finish lists who was and was not sent;
- in Debian's chromium (Playwright, never a downloaded browser): the instructor, launched
  from the platform, releases 01_blocks in Formgrader; a student launches from the
  platform's course page, lands in JupyterLab, fetches the exercise and submits it,
  and is refused Formgrader; the instructor collects, autogrades and grades the written
  answer in Formgrader; `python -m grader lms push` sends the total, and the test reads it
  on the platform's gradebook page. Screenshots go to screenshots/lti/ (git-ignored).
  (Typing answers and validating in the browser is test_hub.py's; here the student's
  answers are written to the fetched notebook, and the browser hands it in.)
"""

from __future__ import annotations

import io
import json
import os
import pwd
import re
import sqlite3
import subprocess
import time
from contextlib import redirect_stderr, redirect_stdout
from html.parser import HTMLParser
from unittest import mock

import browser_steps
import nbformat
import pytest
import requests
import submissions
from browser_steps import assignments_panel, formgrader_action, lab_ready
from hub_processes import CLIENT_ID, PY, START_TIMEOUT, expected_name, lti_class
from lti_platform import INSTRUCTOR, LEARNER, TEACHING_ASSISTANT, person
from nbgrader.api import Gradebook

from conftest import ROOT
from grader.__main__ import main as grader_command

pytestmark = pytest.mark.integration

A = "01_blocks"
COURSE = "pytorch-building-blocks"

if os.geteuid() != 0:
    pytest.fail(
        "the LTI tests start `make hub`, which creates Linux accounts: run them as root (CI does)", pytrace=False
    )


# -- the launch over HTTP ----------------------------------------------------------------------


class _Form(HTMLParser):
    def __init__(self):
        super().__init__()
        self.action, self.fields = "", {}

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "form":
            self.action = attrs["action"]
        elif tag == "input":
            self.fields[attrs["name"]] = attrs.get("value", "")


def form_of(page: str) -> tuple[str, dict]:
    parser = _Form()
    parser.feed(page)
    assert parser.action, page[:2000]
    return parser.action, parser.fields


class Launch:
    """One launch as a browser makes it: the platform's launch page, the tool's login initiation,
    the platform's authorization endpoint, the form post of the id_token to the tool."""

    def __init__(self, cls: dict, sub: str, tamper: str = "", session: requests.Session | None = None):
        self.session = session or requests.Session()
        page = self.session.get(f"{cls['platform_url']}/launch", params={"user": sub, "tamper": tamper}, timeout=30)
        action, fields = form_of(page.text)
        self.response = self.session.post(action, data=fields, allow_redirects=False, timeout=30)
        self.callback = None
        if self.response.status_code != 302:  # refused at the login initiation
            return
        auth = self.session.get(self.response.headers["Location"], allow_redirects=False, timeout=30)
        assert auth.status_code == 200, auth.text
        self.callback = form_of(auth.text)
        self.cookies_before = self.session.cookies.copy()  # what a replay would carry
        self.response = self.session.post(self.callback[0], data=self.callback[1], allow_redirects=False, timeout=30)

    @property
    def signed_in(self) -> bool:
        return "jupyterhub-hub-login" in self.session.cookies.keys()

    def page_text(self) -> str:
        match = re.search(r"<h1>(.*?)</h1>\s*(?:<p>(.*?)</p>)?", self.response.text, re.S)
        return " ".join(part for part in match.groups() if part).replace("&#39;", "'") if match else ""


def hub_db(cls: dict, query: str, *args):
    with sqlite3.connect(cls["state"] / "hub" / "jupyterhub.sqlite") as db:
        return db.execute(query, args).fetchall()


def groups_of(cls: dict, name: str) -> set[str]:
    return {
        g
        for (g,) in hub_db(
            cls,
            "select g.name from users u join user_group_map m on m.user_id = u.id "
            "join groups g on g.id = m.group_id where u.name = ?",
            name,
        )
    }


def may_open_formgrader(cls: dict, launch: Launch) -> bool:
    """The hub's OAuth step for the Formgrader service, with this person's hub session."""
    (redirect,) = hub_db(cls, "select redirect_uri from oauth_clients where identifier = ?", f"service-{COURSE}")[0]
    answer = launch.session.get(
        f"{cls['hub']}/hub/api/oauth2/authorize",
        allow_redirects=False,
        timeout=30,
        params={"client_id": f"service-{COURSE}", "response_type": "code", "redirect_uri": redirect, "state": "x"},
    )
    assert answer.status_code in (302, 403), (answer.status_code, answer.text[:1000])
    return answer.status_code == 302 and answer.headers["Location"].startswith(redirect)


# -- the class of this module ------------------------------------------------------------------

ANA, BEN, CLEO, DAN, EVA = "1001", "b6f3a2c4-5d1e-4f7a-9b8c-0d2e4f6a8b1c", "1003", "1004", "1005"
INES, TARA, MIA = "a1f0c9e8-instructor", "1007", "1008"
LEA, OMAR = "5001", "9c2d7e10-teacher"  # the browser test's student and instructor
# Canvas-like launches with a login id (custom field login_id=$Canvas.user.loginId): one the hub
# takes as the name, and two it must not (a system account, the roster's grader).
ALIMA, ROOTY, POSER = "7d1e5c3a-alima", "7d1e5c3a-rooty", "7d1e5c3a-poser"
NINA = "7d1e5c3a-nina"  # enrolled, launches only after the roster from the LMS named her
USERS = [
    person(ANA, "Ana Lima", [LEARNER]),
    person(BEN, "Ben Costa", [LEARNER]),
    person(CLEO, "Cleo Diaz", [LEARNER]),
    person(DAN, "Dan Evans", [LEARNER]),
    person(EVA, "Eva Fox", [LEARNER]),
    person(INES, "Ines Prof", [INSTRUCTOR]),
    person(TARA, "Tara Assistant", [TEACHING_ASSISTANT]),
    person(MIA, "Mia Never", [LEARNER]),
    person(LEA, "Lea Moreau", [LEARNER]),
    person(OMAR, "Omar Haddad", [INSTRUCTOR]),
    {**person(ALIMA, "Ana Lima", [LEARNER]), "custom": {"login_id": "alima"}},
    {**person(ROOTY, "Rob Oot", [LEARNER]), "custom": {"login_id": "root"}},
    {**person(POSER, "Pat Oser", [LEARNER]), "custom": {"login_id": "ltit-grader"}},
    {**person(NINA, "Nina Novak", [LEARNER]), "custom": {"login_id": "nnovak"}},
]


@pytest.fixture(scope="module")
def cls(tmp_path_factory):
    yield from lti_class(tmp_path_factory.mktemp("lti"), USERS, grader="ltit-grader")


def test_a_student_launch_signs_in_under_a_stable_name(cls):
    first = Launch(cls, ANA)
    assert first.response.status_code == 302 and first.signed_in, first.page_text()
    home = first.session.get(f"{cls['hub']}/hub/home", allow_redirects=False, timeout=30)
    assert home.status_code == 200 and "lti-1001" in home.text
    again = Launch(cls, ANA)  # a second launch (another browser) is the same person
    assert again.signed_in
    assert hub_db(cls, "select name from users where name like 'lti-%'") == [("lti-1001",)]
    account = pwd.getpwnam("lti-1001")
    assert os.stat(account.pw_dir).st_mode & 0o777 == 0o700
    assert groups_of(cls, "lti-1001") == {f"nbgrader-{COURSE}"}
    # A non-numeric LMS id (Canvas gives UUIDs) gets a hashed, still stable name.
    ben = Launch(cls, BEN)
    assert ben.signed_in and expected_name(BEN) in ben.session.get(f"{cls['hub']}/hub/home", timeout=30).text
    # The launch's AGS endpoint claim is kept where `lms push` reads it.
    with sqlite3.connect(cls["state"] / "lti" / "lti.sqlite") as db:
        sub, role, claims = db.execute("select sub, role, claims from launches where name = 'lti-1001'").fetchone()
    assert (sub, role) == (ANA, "student")
    assert json.loads(claims)["ags"]["lineitems"] == cls["lms"]["lineitems"]


def hub_api(cls: dict, path: str) -> dict:
    """The running hub's REST API, with the course-members service's token (admin:users)."""
    token = json.loads((cls["state"] / "hub" / "class.json").read_text())["members_token"]
    answer = requests.get(f"{cls['hub']}/hub/api{path}", headers={"Authorization": f"token {token}"}, timeout=30)
    assert answer.status_code == 200, answer.text
    return answer.json()


def test_instructors_get_formgrader_and_the_admin_page_tas_formgrader_only_students_neither(cls):
    teacher, assistant, student = Launch(cls, INES), Launch(cls, TARA), Launch(cls, ANA)
    assert teacher.signed_in and assistant.signed_in and student.signed_in
    assert groups_of(cls, expected_name(INES)) == {f"formgrade-{COURSE}", f"instructors-{COURSE}"}
    assert groups_of(cls, expected_name(TARA)) == {f"formgrade-{COURSE}"}  # no release, collect, autograde
    assert may_open_formgrader(cls, teacher) and may_open_formgrader(cls, assistant)
    assert not may_open_formgrader(cls, student)
    # The LMS's instructor is a hub admin, as a roster instructor is; its TA and learner are not.
    admins = {name: hub_api(cls, f"/users/{name}")["admin"] for name in map(expected_name, (INES, TARA, ANA))}
    assert admins == {expected_name(INES): True, expected_name(TARA): False, expected_name(ANA): False}, admins
    pages = {
        who: launch.session.get(f"{cls['hub']}/hub/admin", allow_redirects=False, timeout=30).status_code
        for who, launch in (("teacher", teacher), ("assistant", assistant), ("student", student))
    }
    assert pages == {"teacher": 200, "assistant": 403, "student": 403}, pages
    with sqlite3.connect(cls["state"] / "lti" / "lti.sqlite") as db:
        roles = dict(db.execute("select sub, role from launches where sub in (?, ?)", (INES, TARA)).fetchall())
    assert roles == {INES: "instructor", TARA: "ta"}


def test_a_student_is_named_by_their_login_id_as_in_a_canvas_bulk_download(cls):
    """One name per student: the LTI launch's login id is the hub name, the Linux account and the
    gradebook row, and Canvas's bulk download (SIS Login ID) grades into that same row."""
    from grader.lms import canvas

    first = Launch(cls, ALIMA)
    assert first.signed_in, first.page_text()
    assert Launch(cls, ALIMA).signed_in  # again: the same person, the same name
    assert hub_db(cls, "select name from users where name = 'alima'") == [("alima",)]
    assert pwd.getpwnam("alima").pw_dir.endswith("/alima") and groups_of(cls, "alima") == {f"nbgrader-{COURSE}"}
    # A login id that is a system account or the roster's grader never takes it over: the opaque name.
    for sub, taken in ((ROOTY, "root"), (POSER, "ltit-grader")):
        launch = Launch(cls, sub)
        assert launch.signed_in, launch.page_text()
        assert not hub_db(cls, "select name from users where name = ?", taken)
        assert hub_db(cls, "select name from users where name = ?", expected_name(sub)), sub
    # The gradebook row the launch made is the one a Canvas bulk download grades into.
    db_url = f"sqlite:///{cls['state'] / 'course' / 'gradebook.db'}"
    deadline = time.monotonic() + 30
    while "alima" not in {s.id for s in Gradebook(db_url).students}:
        assert time.monotonic() < deadline, "the launch put no row alima in the gradebook"
        time.sleep(0.2)
    upload = canvas.Upload(f"limaana_4242_777_{A}.ipynb", "limaana", "4242", 777, f"{A}.ipynb", False, b"{}")
    (student,) = canvas.students([upload], {"4242": {"Student": "Lima, Ana", "SIS Login ID": "alima"}}, A)
    assert student.student_id == "alima"
    canvas.record(db_url, [student])
    with Gradebook(db_url) as gradebook:
        rows = [s for s in gradebook.students if s.id == "alima" or s.lms_user_id in ("4242", ALIMA)]
        assert [(s.id, s.lms_user_id) for s in rows] == [("alima", "4242")]
    assert Launch(cls, ALIMA).signed_in  # a later launch keeps the Canvas id the export writes
    with Gradebook(db_url) as gradebook:
        assert gradebook.find_student("alima").lms_user_id == "4242"


BAD = {  # tamper mode of the platform -> (status, what the page must say)
    "wrong_key": (401, "signature does not match the platform's public keys"),
    "expired": (400, "The launch has expired"),
    "issuer": (400, "unknown platform (issuer 'https://elsewhere.example.org')"),
    "login_issuer": (400, "unknown platform (issuer 'https://elsewhere.example.org')"),
    "deployment": (400, "unknown deployment ('elsewhere-9')"),
    "login_deployment": (400, "unknown deployment ('elsewhere-9')"),
    "no_roles": (400, "no roles claim"),
    "unknown_roles": (403, "no course role this hub knows"),
}


@pytest.mark.parametrize("tamper", sorted(BAD))
def test_a_bad_launch_gets_a_clear_page_and_no_session(cls, tamper):
    status, says = BAD[tamper]
    launch = Launch(cls, MIA, tamper)
    assert launch.response.status_code == status, launch.response.text[:2000]
    assert "LTI launch refused" in launch.page_text() and says in launch.page_text(), launch.page_text()
    assert not launch.signed_in
    assert launch.session.get(f"{cls['hub']}/hub/home", allow_redirects=False, timeout=30).status_code == 302
    assert not hub_db(cls, "select name from users where name = ?", expected_name(MIA))
    with pytest.raises(KeyError):
        pwd.getpwnam(expected_name(MIA))


def test_a_replayed_launch_is_refused_even_with_the_browsers_cookies(cls):
    first = Launch(cls, DAN)
    assert first.signed_in
    replay = requests.Session()
    replay.cookies.update(first.cookies_before)  # the state and nonce cookies the first post carried
    answer = replay.post(first.callback[0], data=first.callback[1], allow_redirects=False, timeout=30)
    assert answer.status_code == 400 and "already used once" in answer.text, answer.text[:2000]
    assert "jupyterhub-hub-login" not in replay.cookies.keys()


def test_the_token_endpoint_checks_the_client_assertion(cls):
    """The platform really verifies what the tool signs: a JWT signed by another key is refused."""
    import jwt
    from cryptography.hazmat.primitives.asymmetric import rsa

    other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    jwks = requests.get(f"{cls['hub']}/hub/lti13/jwks", timeout=30).json()
    (key,) = jwks["keys"]
    assert key["kty"] == "RSA" and key["alg"] == "RS256" and key["use"] == "sig" and "d" not in key
    now = int(time.time())
    claims = {
        "iss": CLIENT_ID,
        "sub": CLIENT_ID,
        "aud": cls["lms"]["token_url"],
        "iat": now,
        "exp": now + 60,
        "jti": "forged",
    }
    forged = jwt.encode(claims, other, algorithm="RS256", headers={"kid": key["kid"]})
    answer = requests.post(
        cls["lms"]["token_url"],
        timeout=30,
        data={
            "grant_type": "client_credentials",
            "scope": "https://purl.imsglobal.org/spec/lti-ags/scope/score",
            "client_assertion_type": "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
            "client_assertion": forged,
        },
    )
    assert answer.status_code == 401 and answer.json()["error"] == "invalid_client"


# -- grades back -------------------------------------------------------------------------------


def push(cls, *flags: str, target: str = A) -> tuple[int, str]:
    """`python -m grader lms push`'s exit status and output, run in this process (a Python start
    saved per push; the browser test runs the command itself), with short retry waits."""
    out = io.StringIO()
    argv = ["lms", "push", target, "--root", str(cls["state"] / "course"), *flags]
    with mock.patch.dict(os.environ, GRADER_LMS_BACKOFF="0.02"), redirect_stdout(out), redirect_stderr(out):
        status = grader_command(argv)
    return status, out.getvalue()


def platform_state(cls) -> dict:
    return requests.get(f"{cls['platform_url']}/test/state", timeout=30).json()


def fail_next(cls, match: str = "", status: int = 503, count: int = 0) -> None:
    requests.post(
        f"{cls['platform_url']}/test/fail",
        timeout=30,
        data=json.dumps({"match": match, "status": status, "count": count}) if count else b"",
    )


def grade(cls, student: str, code_fraction: float, written: float | None, invalid: str = "") -> None:
    """Put a graded submission into the hub's gradebook, as nbgrader's autograde and Formgrader would."""
    with Gradebook(f"sqlite:///{cls['state'] / 'course' / 'gradebook.db'}") as gradebook:
        gradebook.update_or_create_student(student)
        try:
            submission = gradebook.find_submission(A, student)
        except Exception:
            submission = gradebook.add_submission(A, student)
        for notebook in submission.notebooks:
            for cell in notebook.grades:
                if cell.cell.cell_type == "code":
                    cell.auto_score, cell.needs_manual_grade = cell.max_score * code_fraction, False
                else:
                    cell.auto_score, cell.manual_score, cell.needs_manual_grade = None, written, written is None
        gradebook.db.commit()
    folder = cls["state"] / "course" / "autograded" / student / A
    folder.mkdir(parents=True, exist_ok=True)
    notebook = nbformat.v4.new_notebook(metadata={"grader": {"invalid": invalid or None, "flags": []}})
    nbformat.write(notebook, folder / f"{A}.ipynb")
    # The grader's account owns what its Formgrader writes into (the browser test autogrades there).
    grader = os.stat(cls["state"] / "course")
    for path in (folder.parent.parent, folder.parent, folder, folder / f"{A}.ipynb"):
        os.chown(path, grader.st_uid, grader.st_gid)


def totals(cls) -> dict[str, float]:
    with Gradebook(f"sqlite:///{cls['state'] / 'course' / 'gradebook.db'}") as gradebook:
        return {s.student.id: (s.score, s.max_score) for s in gradebook.assignment_submissions(A)}


def log_of(cls, sub: str) -> list[dict]:
    return [s for s in platform_state(cls)["score_log"] if s["userId"] == sub]


def test_lms_push_sends_each_graded_total_once(cls):
    for sub in (ANA, BEN, CLEO, DAN, EVA):
        assert Launch(cls, sub).signed_in
    ana, ben, cleo, eva = (expected_name(s) for s in (ANA, BEN, CLEO, EVA))
    grade(cls, ana, 1.0, 2.0)
    grade(cls, ben, 0.5, 1.0)
    grade(cls, cleo, 1.0, None)  # a written answer still to grade
    grade(cls, eva, 0.0, 0.0, invalid="the file is not a notebook")
    grade(cls, "ltit-rosa", 1.0, 2.0)  # in the gradebook, never launched from the LMS
    total = totals(cls)

    rc, out = push(cls, "--dry-run")
    assert rc == 0, out
    assert re.search(rf"would send +{ana} \(LMS user {ANA}\): {total[ana][0]:g}/{total[ana][1]:g}", out), out
    assert platform_state(cls)["lineitems"] == [] and platform_state(cls)["score_log"] == []

    rc, out = push(cls)
    assert rc == 0, out
    assert re.search(rf"sent +{ana} \(LMS user {ANA}\)", out) and re.search(rf"sent +{expected_name(BEN)}", out), out
    assert re.search(rf"skipped +{cleo}: written answers not graded yet", out), out
    assert re.search(rf"skipped +{expected_name(DAN)}: no submission in the gradebook", out), out
    assert re.search(rf"skipped +{eva}: not graded: the submission is invalid", out), out
    assert re.search(r"skipped +ltit-rosa: no LMS launch recorded", out), out
    state = platform_state(cls)
    (item,) = state["lineitems"]
    assert (item["resourceId"], item["label"], item["scoreMaximum"]) == (A, A, total[ana][1])
    assert item["id"].endswith("/lineitem?type_id=1")  # the platform's URL carries a query string
    sent = {s["userId"]: s for s in state["score_log"]}
    assert set(sent) == {ANA, BEN}
    assert (sent[BEN]["scoreGiven"], sent[BEN]["scoreMaximum"]) == total[expected_name(BEN)]
    assert sent[ANA]["gradingProgress"] == "FullyGraded" and sent[ANA]["activityProgress"] == "Completed"
    assert f"{cls['hub']}/hub/user-redirect/lab/tree/{COURSE}/{A}/feedback" in sent[ANA]["comment"]

    rc, out = push(cls)  # nothing new: nothing sent
    assert rc == 0 and "0 sent, 2 already in the LMS" in out, out
    assert len(platform_state(cls)["score_log"]) == 2

    grade(cls, cleo, 1.0, 1.0)  # the written answer is graded now: only Cleo goes
    rc, out = push(cls)
    assert rc == 0 and "1 sent, 2 already in the LMS" in out and re.search(rf"sent +{cleo}", out), out
    assert len(platform_state(cls)["score_log"]) == 3

    rc, out = push(cls, "--force")
    assert rc == 0 and "3 sent" in out, out
    assert len(platform_state(cls)["score_log"]) == 6

    # The local record lost: the platform's results say what it has, so nothing is sent again.
    with sqlite3.connect(cls["state"] / "lti" / "lti.sqlite") as db:
        db.execute("delete from sent")
    rc, out = push(cls)
    assert rc == 0 and "0 sent, 3 already in the LMS" in out, out
    assert len(platform_state(cls)["score_log"]) == 6


def test_lms_push_retries_and_stops_with_who_was_and_was_not_sent(cls):
    ana, ben, cleo = (expected_name(s) for s in (ANA, BEN, CLEO))
    for sub in (ANA, BEN, CLEO):
        assert Launch(cls, sub).signed_in
    grade(cls, ana, 1.0, 2.0)
    grade(cls, ben, 1.0, 2.0)
    grade(cls, cleo, 1.0, 2.0)
    assert push(cls)[0] == 0
    before = {sub: len(log_of(cls, sub)) for sub in (ANA, BEN, CLEO)}

    grade(cls, ben, 0.25, 0.0)  # a regrade; the LMS fails twice, then takes it
    fail_next(cls, "/scores", 503, 2)
    rc, out = push(cls)
    assert rc == 0 and re.search(rf"sent +{ben}", out), out
    assert len(log_of(cls, BEN)) == before[BEN] + 1

    grade(cls, ana, 0.5, 1.0)  # two regrades; the LMS is down
    grade(cls, cleo, 0.5, 1.0)
    fail_next(cls, "/scores", 503, 1000)
    rc, out = push(cls)
    assert rc == 1, out
    assert "Stopped: the LMS kept failing" in out and "503" in out, out
    assert re.search(rf"In the LMS: .*{ben}", out) and re.search(rf"Not sent: +{ana} .*{cleo}", out), out
    fail_next(cls)  # back up: the rest goes, once each
    rc, out = push(cls)
    assert rc == 0 and "2 sent, 1 already in the LMS" in out, out
    total = totals(cls)
    for sub, name in ((ANA, ana), (CLEO, cleo)):
        new = [s for s in log_of(cls, sub) if (s["scoreGiven"], s["scoreMaximum"]) == total[name]]
        assert len(new) == 1, log_of(cls, sub)


def test_lms_push_sends_to_the_line_item_the_instructor_made(cls):
    """ASSIGNMENT=LINE_ITEM: the scores go to a column the instructor made in the LMS (by its label
    or URL), none is created; a name the LMS does not list stops the run and names those it does."""
    ana, ben = expected_name(ANA), expected_name(BEN)
    for sub in (ANA, BEN):
        assert Launch(cls, sub).signed_in
    grade(cls, ana, 1.0, 2.0)
    grade(cls, ben, 0.5, 1.0)
    made = requests.post(
        f"{cls['platform_url']}/test/lineitem", data=json.dumps({"label": "Homework 1", "scoreMaximum": 10}), timeout=30
    ).json()
    before = len(platform_state(cls)["lineitems"])
    rc, out = push(cls, target=f"{A}=Homework 1")  # everyone graded so far, Ana and Ben among them
    assert rc == 0 and re.search(rf"sent +{ana} ", out) and re.search(rf"sent +{ben} ", out), out
    state = platform_state(cls)
    assert len(state["lineitems"]) == before, "no line item created"
    sent = [s for s in state["score_log"] if s["lineitem"] == made["id"]]
    assert {ANA, BEN} <= {s["userId"] for s in sent} and all(s["scoreMaximum"] == totals(cls)[ana][1] for s in sent)
    rc, out = push(cls, target=f"{A}={made['id']}")  # by its URL: the same column, nothing new to send
    assert rc == 0 and f"0 sent, {len(sent)} already in the LMS" in out, out
    rc, out = push(cls, target=f"{A}=Homework 9")
    assert rc == 1 and "no line item 'Homework 9'" in out and "'Homework 1'" in out and "Not sent:" in out, out


def test_lms_push_reports_a_refused_token_clearly(cls, tmp_path):
    """A tool key the platform does not know: the token is refused, nobody is sent, the run says why."""
    assert Launch(cls, ANA).signed_in  # her launch record, whichever test of the module ran first
    folder = tmp_path / "lti"
    folder.mkdir()
    real = cls["state"] / "lti"
    tool = json.loads((real / "tool.json").read_text())
    tool["key"] = str(folder / "other-key.pem")
    (folder / "tool.json").write_text(json.dumps(tool))
    subprocess.run(["cp", str(real / "lti.sqlite"), str(folder / "lti.sqlite")], check=True)
    subprocess.run(
        [
            PY,
            "-c",
            "import sys; from grader.lms import lti_tool; lti_tool.load_key(sys.argv[1], create=True)",
            tool["key"],
        ],
        check=True,
        cwd=ROOT,
    )
    grade(cls, expected_name(ANA), 0.75, 2.0)
    rc, out = push(cls, "--lti", str(folder))
    assert rc == 1 and "the LMS refused an access token (401)" in out and "Not sent:" in out, out


def test_the_roster_from_the_lms_names_every_learner_before_their_first_launch(cls):
    """`python hub/members.py roster`: LTI Names and Role Provisioning's member list (paged, with each member's
    custom claims through rlid) gives every learner their gradebook row and launch record under the
    name their launch will have; `lms push` can then send their grade; no account is made early."""
    assert Launch(cls, INES).signed_in  # an instructor's launch brings the member list's address
    command = [PY, str(ROOT / "hub" / "members.py"), "roster"]
    env = dict(os.environ, HUB_STATE=str(cls["state"]))
    dry = subprocess.run([*command, "--dry-run"], env=env, capture_output=True, text=True, timeout=120)
    assert dry.returncode == 0 and f"would add nnovak (LMS user {NINA}, Nina Novak)" in dry.stdout, (
        dry.stdout + dry.stderr
    )
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"added nnovak (LMS user {NINA}, Nina Novak)" in done.stdout, done.stdout
    assert f"added {expected_name(MIA)} (LMS user {MIA}, Mia Never)" in done.stdout, done.stdout
    assert f"{len(USERS)} members in the LMS" in done.stdout and expected_name(INES) not in done.stdout
    with Gradebook(f"sqlite:///{cls['state'] / 'course' / 'gradebook.db'}") as gradebook:
        nina = gradebook.find_student("nnovak")
        assert (nina.first_name, nina.last_name, nina.email, nina.lms_user_id) == (
            "Nina",
            "Novak",
            "nina@example.org",
            NINA,
        )
    with pytest.raises(KeyError):
        pwd.getpwnam("nnovak")
    again = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    assert again.returncode == 0 and "added" not in again.stdout.replace("learners added", ""), again.stdout
    grade(cls, "nnovak", 1.0, 2.0)  # graded before she ever launched (a hand-in by other means)
    rc, out = push(cls, "--dry-run")
    assert rc == 0 and re.search(rf"would send +nnovak \(LMS user {NINA}\)", out), out
    launch = Launch(cls, NINA)  # her first launch: the same name, now with an account
    assert launch.signed_in and hub_db(cls, "select name from users where name = 'nnovak'") == [("nnovak",)]
    assert pwd.getpwnam("nnovak")


def test_lms_urls_keep_their_query_strings():
    from grader.lms.lti_tool import with_path

    assert (
        with_path("https://lms.example.org/api/lti/courses/3/line_items/7", "scores")
        == "https://lms.example.org/api/lti/courses/3/line_items/7/scores"
    )
    assert (
        with_path("https://m.example.org/mod/lti/services.php/2/lineitems/5/lineitem?type_id=1", "scores")
        == "https://m.example.org/mod/lti/services.php/2/lineitems/5/lineitem/scores?type_id=1"
    )
    assert (
        with_path("https://m.example.org/x/lineitems?type_id=1", "", resource_id="01_blocks")
        == "https://m.example.org/x/lineitems?type_id=1&resource_id=01_blocks"
    )


# A POST from a page of the service, as Formgrader's own scripts make theirs (the service's _xsrf cookie).
PUSH_FROM_THE_PAGE = """async (body) => {
  const xsrf = document.cookie.split('; ').find((c) => c.startsWith('_xsrf='));
  const answer = await fetch(location.pathname.split('/formgrader')[0] + '/lms/push', {
    method: 'POST', body: JSON.stringify(body),
    headers: {'Content-Type': 'application/json', 'X-XSRFToken': xsrf ? decodeURIComponent(xsrf.slice(6)) : ''},
  });
  return {status: answer.status, text: await answer.text()};
}"""


@pytest.mark.skipif(
    not os.access(browser_steps.CHROMIUM, os.X_OK),
    reason=f"{browser_steps.CHROMIUM} is absent: install Debian's chromium (apt-get install chromium; .ci/run does)",
)
def test_a_ta_pushes_from_the_formgrader_service_as_the_grader_account_without_root(cls):
    """`lms push` through the course's Formgrader service (hub/lms_service.py), from a TA's browser:
    a regrade goes to the LMS, the command ran as the grader account (which owns the LTI folder);
    a student never reaches the endpoint."""
    from playwright.sync_api import sync_playwright

    ana = expected_name(ANA)
    assert Launch(cls, ANA).signed_in  # the LMS user id a score goes to
    grade(cls, ana, 0.6, 2.0)  # a regrade the LMS has not got yet
    before = len(log_of(cls, ANA))
    service = f"http://{COURSE}--service.localhost:{cls['port']}/services/{COURSE}"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=browser_steps.CHROMIUM, args=browser_steps.CHROMIUM_ARGS)
        try:
            student = launched_in_a_browser(browser, cls, BEN)
            student.goto(f"{service}/formgrader")
            student.locator("text=403").first.wait_for()
            assert student.evaluate(PUSH_FROM_THE_PAGE, {"assignment": A})["status"] != 200
            assistant = launched_in_a_browser(browser, cls, TARA)
            assistant.goto(f"{service}/formgrader")
            assistant.locator("td", has_text=A).first.wait_for()
            answer = assistant.evaluate(PUSH_FROM_THE_PAGE, {"assignment": A, "dry_run": True})
            assert answer["status"] == 200, answer
            result = json.loads(answer["text"])
            assert result["status"] == 0 and re.search(rf"would send +{ana}", result["output"]), result
            assert len(log_of(cls, ANA)) == before, "a dry run sends nothing"
            result = json.loads(assistant.evaluate(PUSH_FROM_THE_PAGE, {"assignment": A})["text"])
            assert result["status"] == 0 and re.search(rf"sent +{ana} \(LMS user {ANA}\)", result["output"]), result
            assert assistant.evaluate(PUSH_FROM_THE_PAGE, {"assignment": "--force"})["status"] == 400
        finally:
            browser.close()
    total = totals(cls)[ana]
    assert [(s["scoreGiven"], s["scoreMaximum"]) for s in log_of(cls, ANA)[before:]] == [total]
    folder = cls["state"] / "lti"
    owners = {pwd.getpwuid(p.stat().st_uid).pw_name for p in [folder, *folder.iterdir()]}
    assert owners == {"ltit-grader"} and oct(folder.stat().st_mode & 0o777) == "0o700", owners


def test_a_score_the_lms_refuses_for_one_user_is_reported_and_the_rest_are_sent(cls):
    """AGS: the platform refuses a score for a user who is no learner of the course (422; here a
    student the LMS dropped after their launch); push names that student with the LMS's answer,
    sends everyone else, and exits 1."""
    dan, ana = expected_name(DAN), expected_name(ANA)
    for sub in (DAN, ANA):
        assert Launch(cls, sub).signed_in
    store = cls["state"] / "lti" / "lti.sqlite"
    with sqlite3.connect(store) as db:
        db.execute("update launches set sub = 'dropped-1004' where name = ?", (dan,))
    grade(cls, dan, 1.0, 2.0)
    grade(cls, ana, 0.4, 1.0)
    try:
        rc, out = push(cls)
    finally:  # later pushes of this class are not to meet him
        with Gradebook(f"sqlite:///{cls['state'] / 'course' / 'gradebook.db'}") as gradebook:
            gradebook.remove_submission(A, dan)
        with sqlite3.connect(store) as db:
            db.execute("update launches set sub = ? where name = ?", (DAN, dan))
    assert rc == 1, out
    assert re.search(rf"not sent +{dan} \(LMS user dropped-1004\): .*422.*not a learner", out), out
    assert re.search(rf"sent +{ana} \(LMS user {ANA}\)", out) and "Not sent:" in out, out


@pytest.mark.unit
def test_lms_push_help_names_the_line_item_form(capsys):
    """`ASSIGNMENT=LINE_ITEM` (docs/lti.md) is in `lms push --help`, with what it names."""
    from grader.__main__ import main

    with pytest.raises(SystemExit) as done:
        main(["lms", "push", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert done.value.code == 0 and "ASSIGNMENT[=LINE_ITEM]" in out
    assert "label, URL or resourceId" in out and "never created" in out


def test_without_an_lti_configuration_the_hub_keeps_its_own_login(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "hub"))
    import lti_setup

    for var in lti_setup.LTI_SETTINGS.values():
        monkeypatch.delenv(var, raising=False)
    monkeypatch.delenv("HUB_LTI_CONFIG", raising=False)
    assert lti_setup.lti_settings(8000) is None
    monkeypatch.setenv("HUB_LTI_ISSUER", "https://canvas.instructure.com")
    with pytest.raises(ValueError, match="lacks"):
        lti_setup.lti_settings(8000)
    config = (ROOT / "hub" / "jupyterhub_config.py").read_text()
    assert 'c.JupyterHub.authenticator_class = "pam"' in config


def test_the_hub_has_no_password_login_with_lti(cls):
    answer = requests.get(f"{cls['hub']}/hub/lti13/oauth_login", timeout=30)
    assert answer.status_code == 400 and "only through their LMS" in answer.text


# -- the class in a browser (last: its push would otherwise be in the counts above) ----------------

SHOTS = ROOT / "screenshots" / "lti"


def shot(page, name: str) -> None:
    page.screenshot(path=SHOTS / f"{name}.png")


def launch_from_the_lms(browser, cls: dict, sub: str):
    """A person of the course opens the hub from the platform's course page, in their own context."""
    page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
    page.set_default_timeout(90_000)
    page.goto(cls["platform_url"] + "/")
    page.locator(f'a.launch[data-user="{sub}"]').click()
    page.locator("#launch").click()  # the launch page's form: the third-party initiated login
    page.wait_for_url(f"**/user/{expected_name(sub)}/lab**", timeout=START_TIMEOUT * 1000)
    lab_ready(page)
    return page


def launched_in_a_browser(browser, cls: dict, sub: str):
    """A person's launch made over HTTP (Launch, the same steps as a browser's), continued in a
    browser context of their own with that hub session: no server of their own is started."""
    launch = Launch(cls, sub)
    assert launch.signed_in, launch.page_text()
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    hub_cookies = [c for c in launch.session.cookies if c.domain.split(".")[0] == "localhost"]
    assert hub_cookies, list(launch.session.cookies)
    context.add_cookies(
        [{"name": c.name, "value": c.value, "domain": "localhost", "path": c.path} for c in hub_cookies]
    )
    page = context.new_page()
    page.set_default_timeout(90_000)
    return page


def answer_the_fetched_notebook(student: str) -> None:
    """The model answers (code and written) in the student's fetched copy, owned by the student."""
    account = pwd.getpwnam(student)
    fetched = os.path.join(account.pw_dir, COURSE, A, f"{A}.ipynb")
    nbformat.write(submissions.answered(A), fetched)
    os.chown(fetched, account.pw_uid, account.pw_gid)


def grade_written_answer(cls: dict, teacher, service: str, student: str) -> None:
    """Full credit for the written answer, in Formgrader's grading view of the student's notebook."""
    with Gradebook(f"sqlite:///{cls['state'] / 'course' / 'gradebook.db'}") as gradebook:
        notebook_id = gradebook.find_submission_notebook(A, A, student).id
    teacher.goto(f"{service}/formgrader/submissions/{notebook_id}/")
    written = teacher.locator(".panel-heading", has=teacher.locator("input.score.needs_manual_grade")).first
    written.locator(".full-credit").click()
    teacher.locator("input.score.needs_manual_grade").first.wait_for(state="detached")


@pytest.mark.browser
@pytest.mark.sandbox
@pytest.mark.skipif(
    not os.access(browser_steps.CHROMIUM, os.X_OK),
    reason=f"{browser_steps.CHROMIUM} is absent: install Debian's chromium (apt-get install chromium; .ci/run does)",
)
def test_a_class_launched_from_the_lms_in_a_browser_gets_its_grades_back(cls):
    from playwright.sync_api import sync_playwright

    SHOTS.mkdir(parents=True, exist_ok=True)
    student = expected_name(LEA)
    service = f"http://{COURSE}--service.localhost:{cls['port']}/services/{COURSE}"
    service_lab = f"{service}/lab"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=browser_steps.CHROMIUM, args=browser_steps.CHROMIUM_ARGS)
        pages = []
        try:
            # The instructor: launched from the LMS (over HTTP: the student's launch below is the
            # browser's), then Formgrader releases the exercise. (Formgrader at its own address:
            # framed in the service's JupyterLab, as the Nbgrader menu opens it, is test_hub's.)
            teacher = launched_in_a_browser(browser, cls, OMAR)
            pages.append(teacher)
            teacher.goto(f"{service}/formgrader")
            formgrader = teacher
            formgrader.locator("td", has_text=A).first.wait_for()
            shot(teacher, "01_instructor_in_formgrader")
            formgrader_action(formgrader, A, "release")
            shot(teacher, "02_instructor_released")

            # The student: from the LMS into JupyterLab; fetch, answer, submit.
            page = launch_from_the_lms(browser, cls, LEA)
            pages.append(page)
            shot(page, "03_student_launched")
            panel = assignments_panel(page)
            panel.locator("#released_assignments_list button", has_text="Fetch").first.click()
            panel.locator("#fetched_assignments_list", has_text=A).first.wait_for()
            answer_the_fetched_notebook(student)
            panel.locator("#fetched_assignments_list button", has_text="Submit").first.click()
            panel.locator("#submitted_assignments_list, .nbgrader-submitted", has_text=A).first.wait_for()
            shot(page, "04_student_submitted")
            page.goto(service_lab)  # a learner has no Formgrader
            page.locator("text=403").first.wait_for()
            shot(page, "05_student_refused_formgrader")

            # The instructor: collect, autograde, grade the written answer.
            formgrader_action(formgrader, A, "collect")
            formgrader.locator("td.num-submissions a").first.click()
            formgrader.locator("td", has_text=student).first.wait_for()
            formgrader_action(formgrader, student, "autograde")
            shot(teacher, "06_instructor_autograded")
            grade_written_answer(cls, teacher, service, student)
            shot(teacher, "07_instructor_graded_the_written_answer")

            # Grades back to the LMS from the instructor's Formgrader page (no root: the service runs
            # lms push as the grader account), read on the LMS's gradebook page.
            teacher.goto(f"{service}/formgrader")
            answer = teacher.evaluate(PUSH_FROM_THE_PAGE, {"assignment": A})
            assert answer["status"] == 200, answer
            done = json.loads(answer["text"])
            assert done["status"] == 0 and re.search(rf"sent +{student} \(LMS user {LEA}\)", done["output"]), done
            maximum = submissions.max_score(A)
            gradebook = browser.new_context().new_page()
            pages.append(gradebook)
            gradebook.goto(cls["platform_url"] + "/gradebook")
            row = gradebook.locator(f'tr[data-user="{LEA}"][data-item="{A}"]')
            shot(gradebook, "08_lms_gradebook")
            assert row.locator(".score").inner_text() == f"{maximum:g} / {maximum:g}", row.inner_text()
            assert "Lea Moreau" in row.inner_text() and "/feedback" in row.inner_text()
        except BaseException:
            for number, open_page in enumerate(pages):
                try:
                    shot(open_page, f"zz_failure_{number}")
                except Exception:  # a page that is gone has nothing to show
                    pass
            raise
        finally:
            browser.close()
