"""The hand-in flow the way people do it, in Debian's chromium (Playwright):

the student's JupyterLab (**Nbgrader → Assignment List**) fetches 01_blocks,
the student types the answers into the notebook, validates and submits; the
instructor's Formgrader (in their own JupyterLab, on a scratch copy of the
course with the course's nbgrader_config.py) releases, collects, autogrades
(the course's sandboxed engine, run inside the Jupyter server), generates and
releases feedback; the student fetches the feedback. A second student's file
is empty: Formgrader grades it 0 and shows why. A third student's blank notebook
carries a line that forges every test's pass on plain nbgrader: Formgrader scores
its answers (0) and shows the flag. (Formgrader's Autograde when the grading
kernel cannot start is test_hub's: the same button, the same dialog.)

Two servers, as on two machines, share one exchange folder. Screenshots of
each step go to `screenshots/handin_*.png` (git-ignored).
"""

import os
import time
from pathlib import Path

import browser_steps
import cheats
import grader_cases
import labserver
import nbformat
import pytest
import submissions

from conftest import ROOT
from grader import sandbox
from tools import course

pytestmark = [pytest.mark.browser, pytest.mark.integration, pytest.mark.sandbox]

A = grader_cases.A
COURSE = "pytorch-building-blocks"
BIN = grader_cases.BIN
SHOTS = ROOT / "screenshots"


def jupyter_lab(folder: Path, settings: Path, env: dict):
    """JupyterLab serving `folder`, started there (nbgrader reads the nbgrader_config.py of the
    folder a server starts in), with the browser-test settings of labserver.browser_args."""
    port = labserver.free_port()
    args, _ = labserver.browser_args(settings)
    # Saves must reach the disk here: the student's answers are what gets handed in.
    args = [a for a in args.split() if "pre_save_hook" not in a]
    command = [
        str(BIN / "jupyter"),
        "lab",
        f"--ServerApp.root_dir={folder}",
        f"--port={port}",
        "--no-browser",
        "--ServerApp.ip=127.0.0.1",
        f"--IdentityProvider.token={labserver.TOKEN}",
        *args,
    ]
    if os.geteuid() == 0:
        command.append("--allow-root")
    return port, labserver.running(command, folder, env, port)


def shot(page, name: str) -> None:
    page.screenshot(path=SHOTS / f"handin_{name}.png")


@pytest.fixture(scope="module")
def people(tmp_path_factory):
    """The instructor's and the student's browser pages, each on their own server."""
    from playwright.sync_api import sync_playwright

    assert sandbox.available(), "bubblewrap is missing: make test installs it (tools/system_packages.sh)"
    assert os.access(browser_steps.CHROMIUM, os.X_OK), (
        f"{browser_steps.CHROMIUM} is missing: make test installs Debian's chromium"
    )
    SHOTS.mkdir(exist_ok=True)
    for old in SHOTS.glob("handin_*.png"):
        old.unlink()
    tmp = tmp_path_factory.mktemp("browser-handin")
    root, home = tmp / "course", tmp / "ana"
    course.temporary_course(root, [A])
    exchange = root / ".exchange"
    exchange.mkdir(exist_ok=True)  # course.api makes it
    home.mkdir()
    # The student's own configuration: which course, and where its exchange is.
    (home / "nbgrader_config.py").write_text(
        "c = get_config()  # noqa: F821\n"
        f"c.CourseDirectory.course_id = {COURSE!r}\n"
        # nbgrader would name the student after the login (one machine, one login here).
        "c.CourseDirectory.student_id = 'ana'\n"
        f"c.Exchange.root = {str(exchange)!r}\n"
        "c.Exchange.path_includes_course = True\n",
        encoding="utf-8",
    )
    base = grader_cases.cli_env()
    base.pop("JUPYTER_CONFIG_DIR", None)
    # The instructor's server holds secrets student code must never see.
    teacher_env = dict(base, **grader_cases.PLANTED)
    student_env = dict(base, HOME=str(home))
    grader_cases.nbgrader(root, "generate_assignment", A, "--force", env=teacher_env)
    (tmp / "teacher-settings").mkdir()
    (tmp / "student-settings").mkdir()
    teacher_port, teacher = jupyter_lab(root, tmp / "teacher-settings", teacher_env)
    student_port, student = jupyter_lab(home, tmp / "student-settings", student_env)
    with teacher, student, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=browser_steps.CHROMIUM, args=browser_steps.CHROMIUM_ARGS)
        try:
            pages = {}
            for who, port in (("teacher", teacher_port), ("student", student_port)):
                page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
                page.set_default_timeout(60_000)
                page.server = f"http://127.0.0.1:{port}"
                page.goto(f"{page.server}/lab?reset&token={labserver.TOKEN}")
                page.locator(".lm-MenuBar-item", has_text="Nbgrader").wait_for()
                pages[who] = page
            yield {
                "root": root,
                "home": home,
                "exchange": exchange,
                "tmp": tmp,
                **pages,
            }
        finally:
            browser.close()


def formgrader(page, path: str = "manage_assignments"):
    page.goto(f"{page.server}/formgrader/{path}")
    page.locator("table").first.wait_for()
    return page


def confirm(page, expected: str) -> None:
    """Wait for Formgrader's result dialog, check it says `expected`, close it."""
    dialog = page.locator(".modal-dialog:visible")
    dialog.wait_for(timeout=240_000)
    text = dialog.inner_text()
    assert expected in text, text[-3000:]
    dialog.locator(".modal-footer button").first.click()
    page.locator(".modal").wait_for(state="detached")


def assignment_row(page):
    row = page.locator("tr", has_text=A).first
    row.wait_for()
    return row


def assignment_list(page):
    browser_steps.menu(page, "Nbgrader", "nbgrader:open-assignment-list")
    panel = page.locator("#nbgrader-assignment-list")
    panel.wait_for()
    return panel


def test_1_instructor_releases_from_formgrader(people):
    page = formgrader(people["teacher"])
    assignment_row(page).locator(".release a").click()
    confirm(page, "Successfully released")
    shot(page, "01_instructor_released")
    assert (people["exchange"] / COURSE / "outbound" / A / f"{A}.ipynb").exists()


def test_2_student_fetches_writes_validates_and_submits(people):
    page = people["student"]
    panel = assignment_list(page)
    released = panel.locator("#released_assignments_list .list_item:not(.nested_list_item)", has_text=A)
    released.locator("button", has_text="Fetch").click()
    fetched = panel.locator("#fetched_assignments_list .list_item:not(.nested_list_item)", has_text=A)
    fetched.wait_for()
    shot(page, "02_student_fetched")
    path = f"{COURSE}/{A}/{A}.ipynb"
    assert (people["home"] / path).exists(), "Fetch put the notebook in the student's folder"

    # The student opens the notebook from the list (the exercise's name lists it) and writes the
    # model answers into the answer cells, as typed text.
    answers = submissions.answered(A)
    notebook = browser_steps.open_notebook(page)
    for index, cell in enumerate(answers.cells):
        meta = cell.metadata.get("nbgrader", {})
        if not meta.get("solution"):
            continue
        target = notebook.locator(".jp-Cell").nth(index)
        if cell.cell_type == "markdown":
            target.dblclick()
        editor = target.locator(".cm-content")
        editor.click()
        page.keyboard.press("Control+a")
        page.keyboard.insert_text(cell.source)
        if cell.cell_type == "markdown":
            page.keyboard.press("Shift+Enter")
    browser_steps.menu(page, "File", "docmanager:save")
    try:
        page.wait_for_function(
            "() => !document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-mod-dirty')"
            " && !document.querySelector('.lm-TabBar-tab.jp-mod-dirty')"
        )
    except Exception as error:  # say what JupyterLab showed instead (a dialog, say)
        shot(page, "zz_failure_save")
        dialogs = page.locator(".jp-Dialog").all_inner_texts()
        raise AssertionError(f"the notebook was not saved; dialogs open: {dialogs}") from error
    shot(page, "03_student_answered")
    saved = nbformat.read(people["home"] / path, as_version=4)
    for mine, model in zip(saved.cells, answers.cells):
        if model.metadata.get("nbgrader", {}).get("solution"):
            assert mine.source.strip() == model.source.strip(), "the typed answer was saved"

    panel = assignment_list(page)
    fetched = panel.locator("#fetched_assignments_list .list_item:not(.nested_list_item)", has_text=A)
    validate = fetched.locator("button", has_text="Validate")
    if not validate.is_visible():  # the list of its notebooks was closed meanwhile
        fetched.locator("a.assignment-notebooks-link").click()
    validate.click()
    result = page.locator(".jp-Dialog", has_text="Validation Results")
    result.wait_for(timeout=180_000)
    shot(page, "04_student_validated")
    assert "Success! Your notebook passes all the tests." in result.inner_text(), result.inner_text()[:2000]
    result.locator(".jp-mod-accept").click()

    fetched.locator("button", has_text="Submit").click()
    submitted = panel.locator("#submitted_assignments_list .list_item:not(.nested_list_item)", has_text=A)
    submitted.wait_for()
    shot(page, "05_student_submitted")
    inbound = list((people["exchange"] / COURSE / "inbound").glob(f"ana+{A}+*/{A}.ipynb"))
    assert len(inbound) == 1, inbound


def test_3_instructor_collects_and_autogrades_in_formgrader(people):
    # Another student handed in an empty file (a failed upload, say); a third, a blank notebook
    # with one line that would make every test pass on plain nbgrader (tests/cheats.py).
    forger = next(c for c in cheats.CHEATS if c.name == "input_transformers_cleanup")
    for student, content in (("zoe", b""), ("eve", nbformat.writes(cheats.notebook(forger)).encode())):
        home = people["tmp"] / student
        (home / COURSE / A).mkdir(parents=True)
        (home / COURSE / A / f"{A}.ipynb").write_bytes(content)
        grader_cases.nbgrader(
            home,
            "submit",
            A,
            f"--course={COURSE}",
            f"--student={student}",
            f"--Exchange.root={people['exchange']}",
            "--Exchange.path_includes_course=True",
            f"--Exchange.cache={home / '.cache'}",
        )

    page = formgrader(people["teacher"])
    assignment_row(page).locator(".collect a").click()
    confirm(page, "Successfully collected")
    shot(page, "06_instructor_collected")
    page = formgrader(page, f"manage_submissions/{A}")
    for student in ("ana", "zoe", "eve"):
        row = page.locator("tr", has_text=student).first
        row.locator(".autograde a").click()
        confirm(page, f"Successfully autograded '{A}' for student '{student}'")
    page = formgrader(page, f"manage_submissions/{A}")
    rows = {s: page.locator("tr", has_text=s).first for s in ("ana", "zoe", "eve")}
    rows["ana"].locator(".score", has_text=f"{grader_cases.FULL}").wait_for()
    shot(page, "07_instructor_autograded")
    assert rows["ana"].locator(".score").inner_text().strip().startswith(f"{grader_cases.FULL} /")
    assert rows["zoe"].locator(".score").inner_text().strip().startswith("0 /")
    # The forged notebook is scored by its (blank) answers, on the grader's own path.
    assert rows["eve"].locator(".score").inner_text().strip().startswith("0 /")

    # Formgrader's view of eve's submission names the attempt.
    rows["eve"].locator(".student-name a").click()
    page.locator("td a", has_text=A).first.click()
    page.locator("text=Notes from the grader").first.wait_for()
    shot(page, "08_instructor_sees_the_flag")
    body = page.locator("body").inner_text()
    assert "Flagged for the instructor" in body and "input_transformers_cleanup" in body, body[:3000]
    page = formgrader(page, f"manage_submissions/{A}")
    rows = {s: page.locator("tr", has_text=s).first for s in ("ana", "zoe")}

    # Formgrader's view of zoe's submission says why it scored nothing.
    rows["zoe"].locator(".student-name a").click()
    page.locator("td a", has_text=A).first.click()
    page.locator("text=Notes from the grader").first.wait_for()
    shot(page, "08_instructor_sees_the_reason")
    assert "could not be read (empty file)" in page.locator("body").inner_text()


def test_4_instructor_releases_feedback_and_the_student_fetches_it(people):
    page = formgrader(people["teacher"])
    assignment_row(page).locator(".generate-feedback a").click()
    confirm(page, "Successfully generated feedback")
    assignment_row(page).locator(".release-feedback a").click()
    confirm(page, "Successfully released feedback")
    shot(page, "09_instructor_released_feedback")

    page = people["student"]
    panel = assignment_list(page)
    submitted = panel.locator("#submitted_assignments_list .list_item:not(.nested_list_item)", has_text=A)
    submitted.locator("button", has_text="Fetch Feedback").click()
    pages = []
    deadline = time.monotonic() + 60
    while not pages and time.monotonic() < deadline:
        pages = list((people["home"] / COURSE / A / "feedback").rglob("*.html"))
        time.sleep(0.5)
    shot(page, "10_student_fetched_feedback")
    assert len(pages) == 1, pages
    html = pages[0].read_text(encoding="utf-8")
    assert "BEGIN HIDDEN TESTS" not in html and grader_cases.HIDDEN_MESSAGE not in html
    assert f"{A} (Score: {float(grader_cases.FULL)} / " in html, "the autograded score heads the page"
    for value in grader_cases.PLANTED.values():
        assert value not in html
    text = browser_steps.read_feedback(page, submitted, pages[0].name)
    shot(page, "11_student_reads_feedback")
    assert f"{A} (Score: {float(grader_cases.FULL)} / {float(grader_cases.FULL)})" in text, text[:2000]
    assert "written answers not graded yet" in text, "the written answer waits for the instructor, not a 0"
    for test_id, points in grader_cases.POINTS.items():
        # Each autograded test cell, by its id, with the points it earned (all: a correct hand-in).
        assert test_id in text, f"{test_id} missing from the page the student reads"
        assert f"Score: {float(points)} / {float(points)}" in text
    assert "BEGIN HIDDEN TESTS" not in text and grader_cases.HIDDEN_MESSAGE not in text
