"""`make lab`, as README says and a student runs it: one JupyterLab on the repository, asked over
HTTP (nbgrader's extensions answer, the kernel a student starts is plain ipykernel), then driven
by Debian's chromium (Playwright, never a downloaded browser), which runs a lecture, validates an
exercise with nbgrader's button and opens Formgrader. One server for the whole module.

Screenshots of the browser's steps go to `screenshots/` (git-ignored). Saves from the browser
write back the stored notebooks unchanged (see labserver.browser_args), so the module leaves the
repository as it found it.
"""

import json
import os
import re
import time
import urllib.request

import browser_steps
import labserver
import psutil
import pytest
from labserver import get

from conftest import ASSIGNMENTS, ROOT

pytestmark = pytest.mark.integration

SHOTS = ROOT / "screenshots"


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """`make lab` with the settings a browser session needs: the port of a JupyterLab on 127.0.0.1
    (labserver.TOKEN). (This module's own: the HTTP checks hold for it as for a plain one.)"""
    args, env = labserver.browser_args(tmp_path_factory.mktemp("lab"))
    with labserver.serve(args, env) as port:
        yield port


@pytest.fixture(scope="module")
def page(lab):
    if not os.access(browser_steps.CHROMIUM, os.X_OK):
        pytest.skip(
            f"{browser_steps.CHROMIUM} is absent: install Debian's chromium (apt-get install chromium; .ci/run does)"
        )
    from playwright.sync_api import sync_playwright

    # Only this module's own screenshots (the hub's and LTI's are in folders of their own).
    SHOTS.mkdir(exist_ok=True)
    for old in SHOTS.glob("0*.png"):
        old.unlink()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=browser_steps.CHROMIUM, args=browser_steps.CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.set_default_timeout(60_000)
            page.lab_url = f"http://127.0.0.1:{lab}/lab"
            # The token logs the browser in (a cookie) for the whole session.
            page.goto(f"{page.lab_url}?reset&token={labserver.TOKEN}")
            page.locator(".lm-MenuBar-item", has_text="Nbgrader").wait_for()
            yield page
        finally:
            browser.close()


def test_lab_serves_the_repository(lab):
    status, page = get(lab, "/lab")
    assert status == 200 and "JupyterLab" in page
    _, listing = get(lab, "/api/contents/course")
    names = {item["name"] for item in json.loads(listing)["content"]}
    assert "01_blocks.ipynb" in names


def test_lab_pages_skip_the_build_check(lab):
    """make setup's labconfig/page_config.json (tools/lab_page_config.json) reaches the page:
    no build check on each load, and no build button, for extensions that come prebuilt."""
    _, page = get(lab, "/lab")
    data = re.search(r'<script id="jupyter-config-data" type="application/json">(.*?)</script>', page, re.S)
    config = json.loads(data[1])
    wanted = json.loads((ROOT / "tools" / "lab_page_config.json").read_text())
    assert {key: config.get(key) for key in wanted} == wanted == {"buildAvailable": False, "buildCheck": False}


def test_formgrader_lists_every_assignment(lab):
    _, body = get(lab, "/formgrader/api/assignments")
    listed = {a["name"] for a in json.loads(body)}
    assert set(ASSIGNMENTS) <= listed, f"formgrader lists {sorted(listed)}"


def test_nbgrader_server_extensions_answer(lab):
    for path in ("/formgrader", "/assignments?course_id=pytorch-building-blocks"):
        status, _ = get(lab, path)
        assert status == 200, path


def test_a_students_jupyterlab_kernel_is_plain_ipykernel_not_a_template_fork(lab):
    """`make lab` as a student runs it: the kernel JupyterLab's launcher starts (the default one)
    is ipykernel started by the server itself, and no template runs below the server."""
    request = urllib.request.Request(
        f"http://127.0.0.1:{lab}/api/kernels",
        data=b"{}",
        method="POST",
        headers={"Authorization": f"token {labserver.TOKEN}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        kernel = json.loads(response.read())
    assert kernel["name"] == "python3"
    connection = f"kernel-{kernel['id']}.json"
    found = []
    for _ in range(100):
        found = [p for p in psutil.process_iter(["cmdline"]) if any(connection in a for a in p.info["cmdline"] or [])]
        if found:
            break
        time.sleep(0.1)
    assert len(found) == 1, f"no process runs {connection}"
    process = found[0]
    # A fork of the template would show the template's command line, under a keeper process.
    assert "ipykernel_launcher" in " ".join(process.cmdline()), process.cmdline()
    server = process.parent()
    assert "jupyter-lab" in " ".join(server.cmdline()) or "lab" in server.cmdline(), server.cmdline()
    below = []
    for child in server.children(recursive=True):
        try:
            below.append(" ".join(child.cmdline()))
        except psutil.Error:  # ended meanwhile, or a zombie (the server's short helpers: npm, yarn)
            continue
    assert not any("grader.kernels.template" in line for line in below), below
    stop = urllib.request.Request(
        f"http://127.0.0.1:{lab}/api/kernels/{kernel['id']}",
        method="DELETE",
        headers={"Authorization": f"token {labserver.TOKEN}"},
    )
    urllib.request.urlopen(stop, timeout=60).close()  # the browser checks start their own


# The prompts of every code cell in the open notebook show an execution count.
ALL_RAN = """() => {
    const prompts = [...document.querySelectorAll(
        '.jp-NotebookPanel:not(.lm-mod-hidden) .jp-CodeCell .jp-InputPrompt')].map(e => e.textContent.trim());
    return prompts.length > 0 && prompts.every(t => /^\\[\\d+\\]:$/.test(t));
}"""


def shot(page, name: str) -> None:
    page.screenshot(path=SHOTS / f"{name}.png")


def open_notebook(page, path: str, showing: str):
    """Open a notebook with File -> Open from Path... and wait until it is the one in view (a cell
    `showing` that text) with its kernel idle. (Not a new page load at the notebook's URL: loading
    JupyterLab costs Chromium about 3 s of CPU.)"""
    browser_steps.menu(page, "File", "filebrowser:open-path")
    dialog = page.locator(".jp-Dialog")
    dialog.locator("input").fill(path)
    dialog.locator(".jp-mod-accept").click()
    dialog.wait_for(state="detached")
    notebook = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden)")
    notebook.locator(".jp-Cell", has_text=showing).first.wait_for()
    # Its own toolbar's indicator: notebooks opened earlier keep theirs, hidden.
    notebook.locator('.jp-Notebook-ExecutionIndicator[data-status="idle"]').first.wait_for()
    return notebook


# Some code cell's prompt shows it queued or ran ("[*]:" or "[1]:").
ANY_STARTED = """() => [...document.querySelectorAll(
    '.jp-NotebookPanel:not(.lm-mod-hidden) .jp-CodeCell .jp-InputPrompt')].some(e => /^\\[[*\\d]+\\]:$/.test(e.textContent.trim()))"""


def run_all(page, attempts: int = 3) -> None:
    """Run every cell. JupyterLab drops a Run All that comes while the freshly opened
    notebook's session is still connecting (its kernel shows idle already), so ask
    again until some cell has started."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    for attempt in range(attempts):
        browser_steps.menu(page, "Run", "runmenu:run-all")
        try:
            page.wait_for_function(ANY_STARTED, timeout=10_000)
            return
        except PlaywrightTimeout:
            if attempt == attempts - 1:
                raise


@pytest.mark.browser
def test_a_lecture_runs_in_jupyterlab(page):
    # Markdown renders after the cells appear: wait for the title rather than count at once.
    notebook = open_notebook(page, "course/01_blocks.ipynb", showing="Layers and blocks")
    browser_steps.menu(page, "Edit", "editmenu:clear-all")
    outputs = notebook.locator(".jp-OutputArea-output")
    page.wait_for_function(
        "n => document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-OutputArea-output').length === n",
        arg=0,
    )
    shot(page, "01_lecture_cleared")
    run_all(page)
    page.wait_for_function(ALL_RAN, timeout=120_000)
    shot(page, "02_lecture_ran")
    assert outputs.count() > 0, "running every cell showed no output"
    errors = notebook.locator('.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.error"]')
    assert errors.count() == 0, "a cell failed in JupyterLab:\n" + "\n".join(errors.all_inner_texts())[:2000]
    notebook.locator(".jp-OutputArea-output", has_text="torch.Size").first.wait_for()


@pytest.mark.browser
def test_validate_button_shows_the_blank_exercise_failing(page):
    notebook = open_notebook(page, "exercises/01_blocks/01_blocks.ipynb", showing="YOUR CODE HERE")
    notebook.locator(".validate-button").click()
    message = page.locator("#validation-message")
    message.wait_for(timeout=120_000)
    shot(page, "03_exercise_validated")
    assert "validation-failed" in message.get_attribute("class"), message.inner_text()[:1000]
    assert "The following cell failed" in message.inner_text()
    assert "NotImplementedError" in message.inner_text()
    page.locator(".jp-Dialog .jp-mod-accept").click()


@pytest.mark.browser
def test_formgrader_lists_lesson_1(page):
    browser_steps.menu(page, "Nbgrader", "nbgrader:open-formgrader")
    formgrader = page.frame_locator("iframe[src*='formgrader']")
    formgrader.locator("text=Manage Assignments").first.wait_for()
    link = formgrader.locator("td a", has_text="01_blocks")
    link.first.wait_for()
    shot(page, "04_formgrader")
    assert link.count() >= 1
