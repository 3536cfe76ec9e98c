"""Steps a person takes in JupyterLab that more than one browser test repeats."""


def read_feedback(page, panel, filename: str) -> str:
    """The feedback page's text as a student reaches it: "(view feedback)" in the Assignments
    panel opens the feedback folder in the file browser; the page opens in JupyterLab's HTML viewer."""
    panel.locator("a", has_text="(view feedback)").first.click()
    page.locator(".jp-DirListing-item", has_text=filename).first.dblclick()
    body = page.frame_locator(".jp-HTMLViewer:not(.lm-mod-hidden) iframe").locator("body")
    body.locator("text=Score").first.wait_for()
    return body.inner_text()
