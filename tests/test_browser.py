"""JupyterLab in a real browser: `make lab` serves the course, and Debian's
chromium (driven by Playwright, never a downloaded browser) runs a lecture,
validates an exercise with nbgrader's button and opens Formgrader.

Screenshots of each step go to `screenshots/` (git-ignored). Saves from the
browser write back the stored notebooks unchanged (see labserver.browser_args),
so the test leaves the repository as it found it.
"""

import browser_steps
import labserver
import pytest

from conftest import ROOT

pytestmark = [pytest.mark.browser, pytest.mark.integration]

SHOTS = ROOT / "screenshots"
# The prompts of every code cell in the open notebook show an execution count.
ALL_RAN = """() => {
    const prompts = [...document.querySelectorAll(
        '.jp-NotebookPanel:not(.lm-mod-hidden) .jp-CodeCell .jp-InputPrompt')].map(e => e.textContent.trim());
    return prompts.length > 0 && prompts.every(t => /^\\[\\d+\\]:$/.test(t));
}"""

browser_steps.skip_without_chromium()


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    from playwright.sync_api import sync_playwright

    # Only this module's own screenshots (test_browser_handin.py writes handin_*.png).
    SHOTS.mkdir(exist_ok=True)
    for old in SHOTS.glob("0*.png"):
        old.unlink()
    args, env = labserver.browser_args(tmp_path_factory.mktemp("lab"))
    with labserver.serve(args, env) as port, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=browser_steps.CHROMIUM, args=browser_steps.CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.set_default_timeout(60_000)
            page.lab_url = f"http://127.0.0.1:{port}/lab"
            # The token logs the browser in (a cookie) for the whole session.
            page.goto(f"{page.lab_url}?reset&token={labserver.TOKEN}")
            page.locator(".lm-MenuBar-item", has_text="Nbgrader").wait_for()
            yield page
        finally:
            browser.close()


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


def test_formgrader_lists_lesson_1(page):
    browser_steps.menu(page, "Nbgrader", "nbgrader:open-formgrader")
    formgrader = page.frame_locator("iframe[src*='formgrader']")
    formgrader.locator("text=Manage Assignments").first.wait_for()
    link = formgrader.locator("td a", has_text="01_blocks")
    link.first.wait_for()
    shot(page, "04_formgrader")
    assert link.count() >= 1
