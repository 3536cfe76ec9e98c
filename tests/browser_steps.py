"""Steps a person takes in JupyterLab that more than one browser test repeats, and the
browser they take them in: Debian's chromium, driven by Playwright (never a downloaded browser)."""

import os

import pytest
import submissions
from hub_processes import START_TIMEOUT

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
# The exercise the hub tests hand in, and the course folder it is fetched into.
A = "01_blocks"
COURSE = "pytorch-building-blocks"


def skip_without_chromium() -> None:
    """Skip the calling test module (call it at module level) where chromium is absent."""
    if not os.access(CHROMIUM, os.X_OK):
        pytest.skip(
            f"{CHROMIUM} is absent: install Debian's chromium (apt-get install chromium; "
            ".ci/run does) to run the browser test",
            allow_module_level=True,
        )


def read_feedback(page, panel, filename: str) -> str:
    """The feedback page's text as a student reaches it: "(view feedback)" in the Assignments
    panel opens the feedback folder in the file browser; the page opens in JupyterLab's HTML viewer."""
    panel.locator("a", has_text="(view feedback)").first.click()
    page.locator(".jp-DirListing-item", has_text=filename).first.dblclick()
    body = page.frame_locator(".jp-HTMLViewer:not(.lm-mod-hidden) iframe").locator("body")
    body.locator("text=Score").first.wait_for()
    return body.inner_text()


def menu(page, top: str, command: str) -> None:
    page.locator(".lm-MenuBar-item", has_text=top).first.click()
    page.locator(f'.lm-Menu-item[data-command="{command}"]').first.click()


def lab_ready(page) -> None:
    page.locator(".lm-MenuBar-item", has_text="Nbgrader").first.wait_for(timeout=START_TIMEOUT * 1000)


def open_formgrader(page, service_lab: str):
    """Formgrader as an instructor opens it on the hub: the course service's JupyterLab, then
    Nbgrader -> Formgrader; returns its frame once it lists the assignment."""
    page.goto(service_lab)
    lab_ready(page)
    menu(page, "Nbgrader", "nbgrader:open-formgrader")
    frame = page.frame_locator("iframe[src*='formgrader']")
    frame.locator("td", has_text=A).first.wait_for()
    return frame


def formgrader_action(frame, row_name: str, column: str) -> None:
    """Click a Formgrader action in the row of `row_name` and wait for its outcome dialog."""
    frame.locator("tr", has=frame.locator("td", has_text=row_name)).locator(f"td.{column} a").first.click()
    dialog = frame.locator("#success-modal, #error-modal")
    dialog.wait_for(timeout=240_000)
    text = dialog.inner_text()
    assert dialog.get_attribute("id") == "success-modal", f"Formgrader {column} of {row_name} failed:\n{text[-3000:]}"
    dialog.locator(".modal-footer button").click()
    dialog.wait_for(state="detached")


def assignments_panel(page):
    menu(page, "Nbgrader", "nbgrader:open-assignment-list")
    return page.locator("#nbgrader-assignment-list, .nbgrader-AssignmentList").first


def type_answers(page, notebook, replace: dict[str, str]) -> None:
    """Write the model answers (code and written) into the answer cells, with `replace` swapping some."""
    answered = submissions.answered(A, replace)
    for index, cell in enumerate(answered.cells):
        if not cell.metadata.get("nbgrader", {}).get("solution"):
            continue
        if cell.cell_type == "markdown":  # a written answer: open its editor first
            notebook.locator(".jp-Cell").nth(index).locator(".jp-MarkdownOutput").dblclick()
        editor = notebook.locator(".jp-Cell").nth(index).locator(".cm-content")
        editor.click()
        page.keyboard.press("Control+a")
        page.keyboard.insert_text(cell.source)
    # No save here: Validate saves the notebook first (a second save racing it
    # would make JupyterLab ask whether the file changed on disk).


def open_notebook(page):
    """The fetched exercise, opened the way README tells students (in the Assignments panel, the
    exercise's name lists its notebook, whose name opens it), with its kernel ready. (Not a new
    page load at the notebook's URL: loading JupyterLab costs Chromium about 3 s of CPU.)"""
    panel = assignments_panel(page)
    listed = panel.locator("#fetched_assignments_list .nested_list_item a", has_text=A).first
    if not listed.is_visible():  # the list shows the notebooks once the exercise's name is clicked
        fetched = panel.locator("#fetched_assignments_list .list_item:not(.nested_list_item)", has_text=A).first
        fetched.locator("a.assignment-notebooks-link").click()
    listed.click()
    notebook = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden)")
    notebook.locator(".jp-Cell", has_text="YOUR CODE HERE").first.wait_for()
    notebook.locator('.jp-Notebook-ExecutionIndicator[data-status="idle"]').first.wait_for()
    return notebook
