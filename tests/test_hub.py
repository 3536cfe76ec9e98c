"""A class on `make hub`, in a real browser: Debian's chromium (Playwright, never a
downloaded browser) against the real JupyterHub and proxy, real Linux accounts,
and a real PostgreSQL gradebook, all of it through HTTPS: Debian's nginx runs the
server block docs/hub.md gives (hub/nginx.conf.template) with a certificate the test
makes, in front of the hub on one origin (/hub/, /user/NAME/, /services/COURSE/, the
default); kernels talk to the browser over websockets through it.

The instructor releases 01_blocks in Formgrader (framed in the course service's
JupyterLab, as nbgrader shows it); two students log in, fetch it, one answers
correctly and one not, both validate and submit; the second student's own
kernel tries to read, list, change and remove the first one's hand-in and is
refused by the operating system; the instructor collects, autogrades (the
course's sandboxed engine) and releases feedback; both students fetch it and
see their scores, computed from the exercise's own points, and the first each test
cell's; Formgrader's view of the forger's notebook names the attempt. Then the grading
kernel's interpreter goes missing: Autograde says why and keeps the score the
student has; and the first student hands in code that ends its own kernel,
which is graded with the cell and the cause in the feedback. On that one origin,
each person's cookies are scoped to their own path and Secure, and neither a
student's cookies nor the token their server holds act on another student's server,
Formgrader or the hub's API. The hub and every process it started must be gone afterwards.

Screenshots of each step go to screenshots/hub/ (git-ignored). The accounts the
test creates are removed at the end.
"""

from __future__ import annotations

import csv
import json
import os
import pwd
import re
import shutil
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import browser_steps
import cheats
import grader_cases
import grading_checks
import hub_processes
import nbformat
import psutil
import pytest
import submissions
import tls_proxy
from browser_steps import assignments_panel, formgrader_action, lab_ready, open_notebook, type_answers
from hub_processes import START_TIMEOUT
from labserver import free_port
from nbgrader.api import Gradebook

from conftest import ROOT
from grader.kernels.template import GRADER_KERNEL

pytestmark = [pytest.mark.browser, pytest.mark.integration, pytest.mark.sandbox]

A = "01_blocks"
COURSE = "pytorch-building-blocks"
SHOTS = ROOT / "screenshots" / "hub"
GRADER, INSTRUCTOR, GOOD, BAD = "hubt-grader", "hubt-ines", "hubt-ana", "hubt-ben"
LATE = "hubt-cleo"  # joins while the hub runs
TA = "hubt-tom"  # grades by hand; may not release, collect or autograde
PASSWORDS = {INSTRUCTOR: "ines-pw-4k2", GOOD: "ana-pw-9x1", BAD: "ben-pw-7q3", LATE: "cleo-pw-3m8", TA: "tom-pw-5v8"}
ACCOUNTS = (GRADER, INSTRUCTOR, GOOD, BAD, LATE, TA)
MEM_LIMIT = 1536 * 1024**2  # HUB_MEM_LIMIT=1536M

browser_steps.skip_without_chromium()
if os.geteuid() != 0:
    pytest.fail("the hub test creates Linux accounts: run make test as root (CI does)", pytrace=False)


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, ""
    except (urllib.error.URLError, ConnectionError):
        return 0, ""


@pytest.fixture(scope="module")
def hub(tmp_path_factory, postgres_url):
    """`make hub` on a free port, with this test's roster, state folder and gradebook."""
    hub_processes.remove_accounts(ACCOUNTS)
    folder = tmp_path_factory.mktemp("hub")
    roster = folder / "roster.csv"
    with open(roster, "w", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(["username", "role", "password"])
        writer.writerow([GRADER, "grader", ""])
        writer.writerow([INSTRUCTOR, "instructor", PASSWORDS[INSTRUCTOR]])
        writer.writerow([GOOD, "student", PASSWORDS[GOOD]])
        writer.writerow([BAD, "student", PASSWORDS[BAD]])
        writer.writerow([TA, "ta", PASSWORDS[TA]])
        writer.writerow(["Not A Name", "student", ""])  # row 7
    state = (
        Path("/tmp") / f"hub-test-{os.getpid()}"
    )  # students must reach its exchange: not under pytest's 0700 folders
    port, https_port = free_port(), free_port()
    env = dict(
        os.environ,
        HUB_PUBLIC_URL=f"https://localhost:{https_port}",  # nginx's, as browsers reach the hub
        HUB_ROSTER=str(roster),
        HUB_STATE=str(state),
        HUB_DB_URL=postgres_url,
        HUB_ASSIGNMENTS=A,
        HUB_MEM_LIMIT="1536M",
    )
    log = open(folder / "hub.log", "w+")
    server = hub_processes.make_hub(port, env, log)
    processes: list[psutil.Process] = []
    proxy = tls_proxy.start(folder / "nginx", port, https_port)
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while get(f"http://127.0.0.1:{port}/hub/api/")[0] != 200:
            if server.poll() is not None or time.monotonic() > deadline:
                log.seek(0)
                pytest.fail(f"make hub did not start:\n{log.read()[-5000:]}")
            time.sleep(0.5)
        yield {
            "port": port,
            "url": proxy["url"],  # https://localhost:PORT, nginx in front of the hub
            "proxy": proxy,
            "state": state,
            "log": log,
            "db_url": postgres_url,
            "processes": processes,
            "env": env,
            "roster": roster,
            "server": server,
        }
    finally:
        tls_proxy.stop(proxy)
        left = hub_processes.stop_hub(server, processes)
        hub_processes.remove_accounts(ACCOUNTS)
        subprocess.run(["rm", "-rf", str(state)])
        log.seek(0)
        assert not left, "processes the hub started outlived it:\n" + "\n".join(left) + "\n" + log.read()[-3000:]


def shot(page, name: str) -> None:
    page.screenshot(path=SHOTS / f"{name}.png")


class Browser:
    """One browser; each person gets a context of their own (their own cookies)."""

    def __init__(self, playwright, hub: dict):
        # Chromium trusts the test's certificate (its key's hash), not every certificate.
        self.browser = playwright.chromium.launch(
            executable_path=browser_steps.CHROMIUM, args=browser_steps.CHROMIUM_ARGS + hub["proxy"]["chromium_args"]
        )
        self.base = hub["url"]
        self.pages = []

    def shoot_all(self, prefix: str) -> None:
        for number, page in enumerate(self.pages):
            try:
                shot(page, f"{prefix}_{number}")
            except Exception:  # a page that is gone has nothing to show
                pass

    def login(self, user: str, next_url: str = ""):
        page = self.browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
        page.set_default_timeout(90_000)
        self.pages.append(page)
        page.goto(f"{self.base}/hub/login" + (f"?next={next_url}" if next_url else ""))
        page.fill("#username_input", user)
        page.fill("#password_input", PASSWORDS[user])
        page.click("#login_submit")
        return page


PROBE = """import os
def attempt(what, action):
    try:
        action()
        print(what, "ALLOWED")
    except PermissionError:
        print(what, "DENIED")
    except FileNotFoundError:
        print(what, "DENIED (not there)")
attempt("list inbound", lambda: os.listdir({inbound!r}))
attempt("read hand-in", lambda: open({notebook!r}).read())
attempt("overwrite hand-in", lambda: open({notebook!r}, "w").write("{{}}"))
attempt("add to hand-in", lambda: open(os.path.join({handin!r}, "extra.ipynb"), "w").write("{{}}"))
attempt("rename hand-in", lambda: os.rename({handin!r}, {handin!r} + "x"))
attempt("read home copy", lambda: open({home_copy!r}).read())
attempt("read feedback folder", lambda: os.listdir({feedback!r}))
attempt("read the solutions", lambda: open({solution!r}).read())
attempt("read the lesson sources", lambda: open({lesson!r}).read())
attempt("read the answer fixtures", lambda: open({fixtures!r}).read())
attempt("read git's history", lambda: os.listdir({git!r}))
attempt("list the grader's course", lambda: os.listdir({graders_course!r}))
attempt("read the staged sources", lambda: os.listdir({staged!r}))
attempt("read own hand-in", lambda: open({own!r}).read())"""


MARKUP = '<img src="x" onerror="document.body.dataset.pwned = 1"> <script>document.body.dataset.pwned = 2</script>'


def is_written(cell) -> bool:
    return cell.cell_type == "markdown" and cell.metadata.get("nbgrader", {}).get("solution", False)


def notebook_id(db_url: str, student: str) -> str:
    """The id of `student`'s 01_blocks notebook in the gradebook (Formgrader's URL for it)."""
    with Gradebook(db_url) as gradebook:
        return gradebook.find_submission_notebook(A, A, student).id


def the_class(browser, state: Path, db_url: str, expected: dict[str, int], max_score: int):
    """Every step of the class, each person in their own browser context; returns the
    instructor's Formgrader frame and page, and the first student's page."""
    wrong = submissions.first_wrong(A)
    service = f"{browser.base}/services/{COURSE}"  # the same origin as the hub's
    service_lab = f"{service}/lab"
    # Instructor: to Formgrader, framed in the course service's JupyterLab, and release 01_blocks.
    teacher = browser.login(INSTRUCTOR, next_url="/hub/home")
    teacher.wait_for_url("**/hub/home")
    formgrader = browser_steps.open_formgrader(teacher, service_lab)
    shot(teacher, "01_instructor_formgrader")
    formgrader_action(formgrader, A, "release")
    shot(teacher, "02_instructor_released")

    # Students: log in (their servers start side by side), fetch, answer, validate, submit.
    students = {name: browser.login(name) for name in (GOOD, BAD)}
    # The second student also forges: one line that makes every later cell, tests included, run
    # empty. It fools nbgrader's own validator; the grader runs tests on its own path and flags it.
    forger = next(c for c in cheats.CHEATS if c.name == "input_transformers_cleanup")
    first = cheats.FIRST_ANSWER
    first_code = wrong.code if wrong.answer_id == first else submissions.answer_source(A, first)
    answers = {GOOD: {}, BAD: {wrong.answer_id: wrong.code, first: first_code + "\n" + forger.code}}
    # ... and writes markup into the written answer that would run as whoever views it in Formgrader.
    written = next(c.metadata["nbgrader"]["grade_id"] for c in submissions.exercise(A).cells if is_written(c))
    answers[BAD][written] = submissions.answer_source(A, written) + "\n\n" + MARKUP
    for name, page in students.items():
        page.wait_for_url(f"**/user/{name}/lab**", timeout=START_TIMEOUT * 1000)
        lab_ready(page)
        panel = assignments_panel(page)
        panel.locator("#released_assignments_list button", has_text="Fetch").first.click()
        panel.locator("#fetched_assignments_list", has_text=A).first.wait_for()
        shot(page, f"03_{name}_fetched")
        notebook = open_notebook(page)
        type_answers(page, notebook, answers[name])
        # Both students' validations run side by side; the results are read below.
        notebook.locator(".validate-button").click()
    for name, page in students.items():
        message = page.locator("#validation-message")
        message.wait_for(timeout=120_000)
        shot(page, f"04_{name}_validated")
        passed = "validation-failed" not in (message.get_attribute("class") or "")
        assert passed, message.inner_text()[:2000]  # the forger's too: validation runs no trusted tests
        page.locator(".jp-Dialog .jp-mod-accept").click()
        panel = assignments_panel(page)
        panel.locator("#fetched_assignments_list button", has_text="Submit").first.click()
        panel.locator("#submitted_assignments_list, .nbgrader-submitted", has_text=A).first.wait_for()
        shot(page, f"05_{name}_submitted")

    # The second student's own kernel goes after the first one's hand-in.
    inbound = state / "exchange" / COURSE / "inbound"
    handin = next(p for p in inbound.iterdir() if p.name.startswith(GOOD + "+"))
    own = next(p for p in inbound.iterdir() if p.name.startswith(BAD + "+")) / f"{A}.ipynb"
    probe = PROBE.format(
        inbound=str(inbound),
        handin=str(handin),
        notebook=str(handin / f"{A}.ipynb"),
        home_copy=f"{pwd.getpwnam(GOOD).pw_dir}/{COURSE}/{A}/{A}.ipynb",
        feedback=str(state / "exchange" / COURSE / "feedback"),
        solution=str(ROOT / "solutions" / A / f"{A}.ipynb"),
        lesson=str(ROOT / "lessons" / A / "exercise.py"),
        fixtures=str(ROOT / "tests" / "wrong_answers" / f"{A}.py"),
        git=str(ROOT / ".git"),
        graders_course=str(state / "course"),  # the gradebook, the sources, every hand-in
        staged=str(state / "hub" / "sources"),
        own=str(own),
    )
    hidden = [ROOT / "solutions" / A, ROOT / "lessons" / A, ROOT / "tests" / "wrong_answers", ROOT / ".git"]
    assert all(path.exists() for path in hidden), "the probe would prove nothing: these exist outside the hub"
    page = students[BAD]
    notebook = open_notebook(page)
    notebook.locator(".jp-Cell").last.click()
    page.keyboard.press("Escape")
    page.keyboard.press("b")
    page.keyboard.press("Enter")
    page.keyboard.insert_text(probe)
    page.keyboard.press("Shift+Enter")
    output = notebook.locator(".jp-OutputArea-output", has_text="read own hand-in")
    output.wait_for(timeout=120_000)
    shot(page, "06_second_student_refused")
    lines = output.inner_text().strip().splitlines()
    # All of the first student's work is refused; the student's own hand-in is not (the probe works).
    # So is every file of the instructor's: the checkout's solutions, sources, tests and history
    # (not even there for the student), the grader's course with its gradebook, the staged sources.
    assert len(lines) == 14 and all("DENIED" in line for line in lines[:-1]), "\n".join(lines)
    assert lines[-1] == "read own hand-in ALLOWED", "\n".join(lines)

    # Instructor: collect, autograde each hand-in, generate and release feedback.
    teacher.bring_to_front()
    formgrader_action(formgrader, A, "collect")
    formgrader.locator("td.num-submissions a").first.click()
    for name in (GOOD, BAD):
        formgrader.locator("td", has_text=name).first.wait_for()
        formgrader_action(formgrader, name, "autograde")
    shot(teacher, "07_instructor_autograded")
    for name, score in expected.items():
        row = formgrader.locator("tr", has=formgrader.locator("td", has_text=name))
        assert (
            f"{float(score)} / {float(max_score)}" in row.inner_text() or f"{score} / {max_score}" in row.inner_text()
        ), row.inner_text()
    # Formgrader's view of the forger's notebook names the attempt, for whoever grades it.
    view = teacher.context.new_page()
    browser.pages.append(view)
    view.goto(f"{service}/formgrader/submissions/{notebook_id(db_url, BAD)}/")
    view.locator("text=Notes from the grader").first.wait_for()
    shot(view, "07_instructor_sees_the_flag")
    body = view.locator("body").inner_text()
    assert "Flagged for the instructor" in body and forger.name in body, body[:3000]
    # The written answer's markup shows as text: nothing of it runs on the hub's origin.
    assert view.locator("img[onerror], script:has-text('pwned')").count() == 0
    assert view.evaluate("document.body.dataset.pwned") is None and "onerror=" in body
    view.close()
    browser.pages.remove(view)
    formgrader.locator("a", has_text="Manage Assignments").first.click()
    formgrader.locator("td", has_text=A).first.wait_for()
    formgrader_action(formgrader, A, "generate-feedback")
    formgrader_action(formgrader, A, "release-feedback")
    shot(teacher, "08_instructor_released_feedback")

    # Students: fetch feedback and read their score.
    for name, page in students.items():
        panel = assignments_panel(page)
        panel.locator("button", has_text="Fetch Feedback").first.click()
        feedback_dir = Path(pwd.getpwnam(name).pw_dir) / COURSE / A / "feedback"
        deadline = time.monotonic() + 60
        while not list(feedback_dir.rglob(f"{A}.html")) and time.monotonic() < deadline:
            time.sleep(0.5)
        pages = list(feedback_dir.rglob(f"{A}.html"))
        assert len(pages) == 1, f"{name} fetched no feedback: {pages}"
        text = browser_steps.read_feedback(page, panel, pages[0].name)
        shot(page, f"09_{name}_feedback")
        # Each student reads their own page: their own score, no hidden-test line.
        score = re.search(rf"{A} \(Score: ([\d.]+) / ([\d.]+)\)", text)
        # Points so far out of all the notebook's points; the written answer waits for the instructor.
        assert score and (float(score[1]), float(score[2])) == (expected[name], max_score), text[:2000]
        assert f"not graded yet ({float(max_score - submissions.full_score(A))} points)" in text, text[:2000]
        assert grader_cases.HIDDEN_MESSAGE not in text and "BEGIN HIDDEN TESTS" not in text
        assert ("Flagged for the instructor" in text) == (name == BAD), text[:2000]
        if name == GOOD:  # each autograded test cell, by its id, with the points it earned (all)
            for test_id, points in submissions.points(A).items():
                assert test_id in text and f"Score: {float(points)} / {float(points)}" in text, (test_id, text[:3000])
    return formgrader, teacher, students[GOOD]


def autograde_outcome(formgrader, name: str) -> str:
    """Click Autograde in the row of `name` on Manage Submissions; the dialog's id and text."""
    formgrader.locator("tr", has=formgrader.locator("td", has_text=name)).locator("td.autograde a").first.click()
    dialog = formgrader.locator("#success-modal, #error-modal")
    dialog.wait_for(timeout=240_000)
    outcome = f"{dialog.get_attribute('id')}: {dialog.inner_text()}"
    dialog.locator(".modal-footer button").click()
    dialog.wait_for(state="detached")
    return outcome


def the_graders_failure_and_the_students_crash(teacher, formgrader, student, state: Path, db_url: str) -> None:
    """On the hub too, a failure of the grader is never a student's zero, and a crash of the
    student's own code is the student's: graded, with the cell and the cause in the feedback."""
    # The grading kernel's interpreter is gone (the grader account's own kernel spec, which
    # Jupyter prefers to the venv's, names a missing one): not graded, the cause said, the
    # score the student already has kept.
    spec = Path(pwd.getpwnam(GRADER).pw_dir) / ".local" / "share" / "jupyter" / "kernels" / GRADER_KERNEL
    interpreter = state / "gone-venv" / "bin" / "python"
    spec.mkdir(parents=True)
    argv = [str(interpreter), "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    (spec / "kernel.json").write_text(json.dumps({"argv": argv, "display_name": "Python 3", "language": "python"}))
    kept = grading_checks.auto_scores(db_url, A, GOOD)
    teacher.bring_to_front()
    formgrader.locator("a", has_text="Manage Assignments").first.click()
    formgrader.locator("td.num-submissions a").first.click()
    try:
        outcome = autograde_outcome(formgrader, GOOD)
    finally:
        shutil.rmtree(spec)
    shot(teacher, "10_instructor_autograde_not_graded")
    assert (
        outcome.startswith("error-modal") and f"kernel did not start (interpreter {interpreter} is missing)" in outcome
    )
    assert grading_checks.auto_scores(db_url, A, GOOD) == kept and sum(kept) == submissions.full_score(A)

    # The student hands in a notebook whose make_stack ends its own kernel (os._exit).
    crashing = submissions.answer_source(A, "make_stack").replace(
        "def make_stack(factory, n):\n", "def make_stack(factory, n):\n    import os\n    os._exit(1)\n", 1
    )
    account = pwd.getpwnam(GOOD)
    home_copy = Path(account.pw_dir) / COURSE / A / f"{A}.ipynb"
    nbformat.write(submissions.answered(A, {"make_stack": crashing}), home_copy)
    os.chown(home_copy, account.pw_uid, account.pw_gid)
    inbound = state / "exchange" / COURSE / "inbound"
    handed_in = len([p for p in inbound.iterdir() if p.name.startswith(GOOD + "+")])
    student.bring_to_front()
    panel = assignments_panel(student)
    panel.locator("#fetched_assignments_list button", has_text="Submit").first.click()
    deadline = time.monotonic() + 60
    while len([p for p in inbound.iterdir() if p.name.startswith(GOOD + "+")]) == handed_in:
        assert time.monotonic() < deadline, "the second hand-in never reached the exchange"
        time.sleep(0.5)
    teacher.bring_to_front()
    formgrader.locator("a", has_text="Manage Assignments").first.click()
    formgrader_action(formgrader, A, "collect")
    formgrader.locator("td.num-submissions a").first.click()
    outcome = autograde_outcome(formgrader, GOOD)
    assert outcome.startswith("success-modal"), outcome[-3000:]
    lost = submissions.points(A)["test_make_stack"]  # a crash costs only the cell it broke
    assert sum(grading_checks.auto_scores(db_url, A, GOOD)) == submissions.full_score(A) - lost
    formgrader.locator("a", has_text="Manage Assignments").first.click()
    formgrader_action(formgrader, A, "generate-feedback")
    shot(teacher, "11_instructor_graded_a_crash")
    page = (state / "course" / "feedback" / GOOD / A / f"{A}.html").read_text()
    assert "test_make_stack: the kernel exited with status 1" in page


def a_ta_in_formgrader(browser) -> None:
    """A TA's Formgrader in the browser: Collect (an instructor's action) says why it is refused."""
    page = browser.login(TA, next_url="/hub/home")
    page.wait_for_url("**/hub/home")
    page.goto(f"{browser.base}/services/{COURSE}/formgrader")
    row = page.locator("tr", has=page.locator("td", has_text=A))
    row.locator("td.collect a").first.click()
    dialog = page.locator("#success-modal, #error-modal")
    dialog.wait_for()
    shot(page, "12_ta_refused_collect")
    assert dialog.get_attribute("id") == "error-modal", dialog.inner_text()


def test_a_class_on_the_hub(hub):
    from playwright.sync_api import sync_playwright

    started = time.monotonic()
    SHOTS.mkdir(parents=True, exist_ok=True)
    port, state = hub["port"], hub["state"]
    assert get(f"http://127.0.0.1:{port}/hub/login")[0] == 200
    assert '"version"' in get(f"http://127.0.0.1:{port}/hub/api/")[1]
    hub["log"].seek(0)
    assert "row 7 (Not A Name): not a valid account name" in hub["log"].read(), "a bad roster row is named"
    wrong = submissions.first_wrong(A)
    points = submissions.points(A)
    max_score = submissions.max_score(A)
    expected = {GOOD: submissions.full_score(A), BAD: submissions.full_score(A) - sum(points[t] for t in wrong.fails)}
    with sync_playwright() as playwright:
        browser = Browser(playwright, hub)
        try:
            formgrader, teacher, good = the_class(browser, state, hub["db_url"], expected, max_score)
            the_graders_failure_and_the_students_crash(teacher, formgrader, good, state, hub["db_url"])
            a_ta_in_formgrader(browser)
        except BaseException:
            browser.shoot_all("zz_failure")
            raise
        finally:
            browser.browser.close()

    import psycopg

    with psycopg.connect(hub["db_url"]) as connection, connection.cursor() as cursor:
        cursor.execute("select count(*) from submitted_assignment")
        assert cursor.fetchone()[0] == 2, "the gradebook is the PostgreSQL one"
    print(f"class on the hub: {time.monotonic() - started:.0f} s after the hub was up")


def test_a_student_joins_the_running_hub_and_every_server_is_held_to_its_limits(hub):
    """`make hub-member` adds a student while the class works: no restart (the hub's processes
    are the same ones), the student logs in and gets a server, and that server sits in a control
    group with the class's memory limit; JupyterHub's idle culler runs beside the hub; and
    `make hub-rerelease` puts a fixed exercise in the exchange without a restart."""

    port = hub["port"]
    hub_process = psutil.Process(hub["server"].pid)  # make hub, with everything it started below it
    culler = [p for p in hub_process.children(recursive=True) if "jupyterhub_idle_culler" in " ".join(p.cmdline())]
    assert culler, "JupyterHub's idle culler is not running"
    before = {p.pid for p in hub_process.children(recursive=True) if p.username() == "root"}
    done = subprocess.run(
        ["make", "--no-print-directory", "hub-member", f"NAME={LATE}", f"PASSWORD={PASSWORDS[LATE]}"],
        cwd=ROOT,
        env=hub["env"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert hub_process.is_running() and before <= {p.pid for p in hub_process.children(recursive=True)}
    assert LATE in hub["roster"].read_text(), "the roster keeps the new student for the next start"
    with Gradebook(hub["db_url"]) as gradebook:
        assert LATE in {student.id for student in gradebook.students}

    session = tls_proxy.session(hub["proxy"])
    base = hub["url"]
    login = session.get(f"{base}/hub/login", timeout=30)
    xsrf = re.search(r'name="_xsrf" value="([^"]+)"', login.text)
    form = {"username": LATE, "password": PASSWORDS[LATE], **({"_xsrf": xsrf.group(1)} if xsrf else {})}
    landed = session.post(f"{base}/hub/login?next=/hub/spawn", data=form, timeout=START_TIMEOUT)
    assert "Invalid username or password" not in landed.text and landed.ok, landed.text[-2000:]
    deadline = time.monotonic() + START_TIMEOUT
    server = None
    while server is None:
        assert time.monotonic() < deadline, "the new student's server never started"
        server = next(
            (
                p
                for p in psutil.process_iter(["username", "cmdline"])
                if p.info["username"] == LATE and "jupyterhub-singleuser" in " ".join(p.info["cmdline"] or [])
            ),
            None,
        )
        time.sleep(0.5)
    lines = [line.strip().split(":", 2) for line in open(f"/proc/{server.pid}/cgroup")]
    v1 = [path for _, controllers, path in lines if "memory" in controllers.split(",")]
    if v1:  # cgroup v1 (this machine), else the unified v2 tree
        group, limit = v1[0], "memory/{}/memory.limit_in_bytes"
    else:
        group, limit = next(path for number, _, path in lines if number == "0"), "{}/memory.max"
    assert group.endswith(f"/course-hub-{port}/{LATE}"), group
    assert int((Path("/sys/fs/cgroup") / limit.format(group.lstrip("/"))).read_text()) == MEM_LIMIT

    # A fix mid-term reaches the running hub: released again from this checkout, as the grader.
    outbound = hub["state"] / "exchange" / COURSE / "outbound" / A / f"{A}.ipynb"
    done = subprocess.run(
        ["make", "--no-print-directory", "hub-rerelease", f"A={A}"],
        cwd=ROOT,
        env=hub["env"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert outbound.exists() and outbound.stat().st_uid == pwd.getpwnam(GRADER).pw_uid
    assert list((hub["state"] / "course" / ".grader-state" / "releases" / A).glob(f"{A}-*.ipynb")), "release remembered"
    assert hub_process.is_running()


def signed_in(hub: dict, name: str):
    """A requests session of `name`, logged in through the TLS proxy, with their server running."""

    session = tls_proxy.session(hub["proxy"])
    login = session.get(f"{hub['url']}/hub/login", timeout=30)
    xsrf = re.search(r'name="_xsrf" value="([^"]+)"', login.text)
    form = {"username": name, "password": PASSWORDS[name], **({"_xsrf": xsrf.group(1)} if xsrf else {})}
    landed = session.post(f"{hub['url']}/hub/login?next=/hub/spawn", data=form, timeout=START_TIMEOUT)
    assert landed.ok and "Invalid username or password" not in landed.text, landed.text[-2000:]
    deadline = time.monotonic() + START_TIMEOUT
    # A page of the server, as a browser opens it: the hub's OAuth step gives the server's cookie.
    lab = f"{hub['url']}/user/{name}/lab"
    while (opened := session.get(lab, timeout=30)).url != lab or opened.status_code != 200:  # not spawn-pending
        assert time.monotonic() < deadline, f"{name}'s server never answered"
        time.sleep(1)
    return session


def server_token(name: str) -> str:
    """The API token the hub gave `name`'s server (its JUPYTERHUB_API_TOKEN): what the student's
    own kernels and terminals can read, so all a student's code can use against others."""
    for process in psutil.process_iter(["username", "cmdline"]):
        if process.info["username"] == name and "jupyterhub-singleuser" in " ".join(process.info["cmdline"] or []):
            return process.environ()["JUPYTERHUB_API_TOKEN"]
    raise AssertionError(f"no server of {name} is running")


def test_on_one_origin_each_persons_cookies_and_token_reach_only_their_own(hub):
    """What HUB_SUBDOMAINS=1 gave by origins, one origin gives by paths and scopes (docs/security.md)."""

    url = hub["url"]
    ana, ben = signed_in(hub, GOOD), signed_in(hub, BAD)
    cookies = {c.name: c for c in ana.cookies}
    # The hub's login cookie is the hub's path's; each server's is its own path's; all Secure, HttpOnly.
    assert cookies["jupyterhub-hub-login"].path == "/hub/", cookies
    assert cookies[f"jupyterhub-user-{GOOD}"].path == f"/user/{GOOD}/", cookies
    logins = {name for name in cookies if "-oauth-state" not in name}  # OAuth's own state aside
    assert not [name for name in logins if name.startswith("jupyterhub-user-") and name != f"jupyterhub-user-{GOOD}"]
    for cookie in cookies.values():
        if cookie.name.startswith("jupyterhub-"):
            assert cookie.secure and cookie.has_nonstandard_attr("HttpOnly"), cookie
    # Ana's cookies open her server's files, not Ben's, and not Formgrader: the hub's OAuth step
    # refuses her a cookie for either (as a browser goes: a page first, then its API).
    assert ana.get(f"{url}/user/{GOOD}/api/contents", timeout=30).status_code == 200
    for page, api in (
        (f"/user/{BAD}/lab", f"/user/{BAD}/api/contents"),
        (f"/services/{COURSE}/formgrader", f"/services/{COURSE}/formgrader/api/assignments"),
    ):
        opened = ana.get(url + page, timeout=30)
        assert opened.status_code == 403 and "/hub/" in opened.url, (page, opened.status_code, opened.url)
        answer = ana.get(url + api, timeout=30)
        assert answer.status_code in (403, 302) and '"content"' not in answer.text, (api, answer.status_code)
    assert {c.name for c in ana.cookies if "-oauth-state" not in c.name} == logins, "no cookie for another's"
    assert ben.get(f"{url}/user/{BAD}/api/contents", timeout=30).status_code == 200
    # The token Ana's own code can read reaches her server and her identity, nothing else.
    token = {"Authorization": f"token {server_token(GOOD)}"}
    with_token = tls_proxy.session(hub["proxy"])
    with_token.headers.update(token)
    me = with_token.get(f"{url}/hub/api/user", timeout=30)
    assert me.status_code == 200 and me.json()["name"] == GOOD and not me.json().get("admin"), me.text
    assert with_token.get(f"{url}/user/{GOOD}/api/contents", timeout=30).status_code == 200
    refused = {
        ("GET", f"/user/{BAD}/api/contents"): (403,),  # another student's files
        ("POST", f"/user/{BAD}/api/kernels"): (403,),  # and kernels
        ("GET", f"/services/{COURSE}/formgrader/api/assignments"): (403,),
        ("GET", "/hub/api/users"): (403,),  # the class list
        ("GET", f"/hub/api/users/{BAD}"): (403, 404),
        ("DELETE", f"/hub/api/users/{BAD}/server"): (403, 404),  # stopping another's server
        ("POST", f"/hub/api/users/{BAD}/tokens"): (403, 404),  # a token in another's name
        ("POST", f"/hub/api/users/{GOOD}/tokens"): (403,),  # or a new one of its own
        ("PATCH", f"/hub/api/users/{GOOD}"): (403,),  # making itself an admin
        ("POST", f"/hub/api/groups/formgrade-{COURSE}/users"): (403, 404),  # joining the graders
    }
    for (method, path), statuses in refused.items():
        answer = with_token.request(method, url + path, json={"admin": True, "users": [GOOD]}, timeout=30)
        assert answer.status_code in statuses, (method, path, answer.status_code, answer.text[:300])
    assert ben.get(f"{url}/user/{BAD}/api/status", timeout=30).status_code == 200, "Ben's server still runs"


def test_a_ta_grades_in_formgrader_but_may_not_release_collect_or_autograde(hub):
    """Formgrader is one service for instructors and TAs; only an instructor's token carries the
    scope its release, collect and autograde ask for (the class test's instructor used them all)."""
    ta = tls_proxy.session(hub["proxy"])
    login = ta.get(f"{hub['url']}/hub/login", timeout=30)
    xsrf = re.search(r'name="_xsrf" value="([^"]+)"', login.text)
    form = {"username": TA, "password": PASSWORDS[TA], **({"_xsrf": xsrf.group(1)} if xsrf else {})}
    assert ta.post(f"{hub['url']}/hub/login?next=/hub/home", data=form, timeout=60).ok
    formgrader = f"{hub['url']}/services/{COURSE}/formgrader"
    assert ta.get(formgrader, timeout=60).status_code == 200  # the hub's OAuth step lets a TA in
    headers = {"X-XSRFToken": next(c.value for c in ta.cookies if c.name == "_xsrf" and "services" in c.path)}
    assert ta.get(f"{formgrader}/api/assignments", timeout=30).status_code == 200
    refused = [f"/api/assignment/{A}/{action}" for action in ("assign", "release", "unrelease", "collect")]
    for path in [*refused, f"/api/submission/{A}/{GOOD}/autograde"]:
        answer = ta.post(formgrader + path, headers=headers, timeout=60)
        assert answer.status_code == 403 and "Only an instructor" in answer.reason, (path, answer.status_code)
    answer = ta.put(f"{formgrader}/api/assignment/{A}", headers=headers, json={"duedate": None}, timeout=30)
    assert answer.status_code == 403, answer.status_code
    # The service is a Jupyter server running as the grader account: a kernel, a terminal or a file
    # written there would run or change anything (nbgrader autograde, the course's config). Not a TA's.
    service = f"{hub['url']}/services/{COURSE}"
    as_grader = [
        ("POST", "/api/kernels", {"name": "python3"}),
        ("POST", "/api/sessions", {"path": "x.ipynb", "type": "notebook", "kernel": {"name": "python3"}}),
        ("POST", "/api/terminals", None),
        ("PUT", "/api/contents/nbgrader_config.py", {"type": "file", "format": "text", "content": "c = 1\n"}),
        ("POST", "/api/contents/", {"type": "notebook"}),
        ("PATCH", "/api/contents/nbgrader_config.py", {"path": "moved.py"}),
        ("DELETE", "/api/contents/nbgrader_config.py", None),
    ]
    for method, path, body in as_grader:
        answer = ta.request(method, service + path, headers=headers, json=body, timeout=30)
        assert answer.status_code == 403 and "grader account" in answer.reason, (method, path, answer.status_code)
    assert ta.get(f"{service}/api/contents/nbgrader_config.py", timeout=30).status_code == 200, "reading stays"
    assert ta.get(f"{service}/api/kernels", timeout=30).json() == [], "no kernel was started"
    # Feedback is the TA's to give.
    answer = ta.post(f"{formgrader}/api/assignment/{A}/generate_feedback", headers=headers, timeout=240)
    assert answer.status_code == 200, (answer.status_code, answer.text[:500])
