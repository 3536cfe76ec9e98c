"""A class signed in from an LMS, in Debian's chromium (Playwright, never a downloaded
browser): the project's own LTI 1.3 platform (tests/lti_platform.py) and `make hub` with
its LTI configuration, on 127.0.0.1, on different sites (127.0.0.1 and localhost), as an
LMS and a hub are.

The instructor launches the hub from the platform's course page and releases 01_blocks
in Formgrader; a student launches from the same page, lands in their JupyterLab, fetches
the exercise, answers, validates and submits, and is refused Formgrader; the instructor
collects, autogrades and grades the written answer in Formgrader; `python -m grader lms
push` sends the total to the platform, and the test reads it on the platform's gradebook
page. Screenshots of each step go to screenshots/lti/ (git-ignored).
"""

from __future__ import annotations

import os
import re
import subprocess

import browser_steps
import pytest
import submissions
from browser_steps import assignments_panel, formgrader_action, lab_ready, open_notebook, type_answers
from hub_processes import PY, START_TIMEOUT, expected_name, lti_class
from lti_platform import INSTRUCTOR, LEARNER, person

from conftest import ROOT

pytestmark = [pytest.mark.browser, pytest.mark.integration, pytest.mark.sandbox]

A = "01_blocks"
COURSE = "pytorch-building-blocks"
SHOTS = ROOT / "screenshots" / "lti"
STUDENT, TEACHER = "5001", "9c2d7e10-teacher"

# Skipped where chromium is absent; root only, as the hub it starts makes Linux accounts.
browser_steps.skip_without_chromium()
if os.geteuid() != 0:
    pytest.fail(
        "the LTI browser test starts `make hub`, which creates Linux accounts: run it as root (CI does)", pytrace=False
    )


@pytest.fixture(scope="module")
def cls(tmp_path_factory):
    users = [person(STUDENT, "Lea Moreau", [LEARNER]), person(TEACHER, "Omar Haddad", [INSTRUCTOR])]
    yield from lti_class(tmp_path_factory.mktemp("lti-browser"), users, grader="ltib-grader")


def shot(page, name: str) -> None:
    page.screenshot(path=SHOTS / f"{name}.png")


def launch_from_the_lms(browser, cls: dict, sub: str, name: str):
    """A person of the course opens the hub from the platform's course page, in their own context."""
    page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
    page.set_default_timeout(90_000)
    page.goto(cls["platform_url"] + "/")
    page.locator(f'a.launch[data-user="{sub}"]').click()
    page.locator("#launch").click()  # the launch page's form: the third-party initiated login
    page.wait_for_url(f"**/user/{name}/lab**", timeout=START_TIMEOUT * 1000)
    lab_ready(page)
    return page


def grade_written_answer(cls: dict, teacher, student: str) -> None:
    """Full credit for the written answer, in Formgrader's grading view of the student's notebook."""
    from nbgrader.api import Gradebook

    gradebook_url = f"sqlite:///{cls['state'] / 'course' / 'gradebook.db'}"
    with Gradebook(gradebook_url) as gradebook:
        notebook_id = gradebook.find_submission_notebook(A, A, student).id
    teacher.goto(
        f"http://{COURSE}--service.localhost:{cls['port']}/services/{COURSE}/formgrader/submissions/{notebook_id}/"
    )
    written = teacher.locator(".panel-heading", has=teacher.locator("input.score.needs_manual_grade")).first
    written.locator(".full-credit").click()
    teacher.locator("input.score.needs_manual_grade").first.wait_for(state="detached")


def test_a_class_launched_from_the_lms_gets_its_grades_back(cls):
    from playwright.sync_api import sync_playwright

    SHOTS.mkdir(parents=True, exist_ok=True)
    port, student = cls["port"], expected_name(STUDENT)
    service_lab = f"http://{COURSE}--service.localhost:{port}/services/{COURSE}/lab"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=browser_steps.CHROMIUM, args=browser_steps.CHROMIUM_ARGS)
        pages = []
        try:
            # The instructor: from the LMS into the hub, then Formgrader releases the exercise.
            teacher = launch_from_the_lms(browser, cls, TEACHER, expected_name(TEACHER))
            pages.append(teacher)
            shot(teacher, "01_instructor_launched")
            formgrader = browser_steps.open_formgrader(teacher, service_lab)
            formgrader_action(formgrader, A, "release")
            shot(teacher, "02_instructor_released")

            # The student: from the LMS into JupyterLab; fetch, answer, validate, submit.
            page = launch_from_the_lms(browser, cls, STUDENT, student)
            pages.append(page)
            shot(page, "03_student_launched")
            panel = assignments_panel(page)
            panel.locator("#released_assignments_list button", has_text="Fetch").first.click()
            panel.locator("#fetched_assignments_list", has_text=A).first.wait_for()
            notebook = open_notebook(page)
            type_answers(page, notebook, {})
            notebook.locator(".validate-button").click()
            message = page.locator("#validation-message")
            message.wait_for(timeout=120_000)
            assert "validation-failed" not in (message.get_attribute("class") or ""), message.inner_text()[:2000]
            page.locator(".jp-Dialog .jp-mod-accept").click()
            panel = assignments_panel(page)
            panel.locator("#fetched_assignments_list button", has_text="Submit").first.click()
            panel.locator("#submitted_assignments_list, .nbgrader-submitted", has_text=A).first.wait_for()
            shot(page, "04_student_submitted")
            page.goto(service_lab)  # a learner has no Formgrader
            page.locator("text=403").first.wait_for()
            shot(page, "05_student_refused_formgrader")

            # The instructor: collect, autograde, grade the written answer.
            formgrader = browser_steps.open_formgrader(teacher, service_lab)
            formgrader_action(formgrader, A, "collect")
            formgrader.locator("td.num-submissions a").first.click()
            formgrader.locator("td", has_text=student).first.wait_for()
            formgrader_action(formgrader, student, "autograde")
            shot(teacher, "06_instructor_autograded")
            grade_written_answer(cls, teacher, student)
            shot(teacher, "07_instructor_graded_the_written_answer")

            # Grades back to the LMS, read on its gradebook page.
            done = subprocess.run(
                [PY, "-m", "grader", "lms", "push", A, "--root", str(cls["state"] / "course")],
                cwd=ROOT,
                capture_output=True,
                text=True,
                timeout=300,
            )
            assert done.returncode == 0, done.stdout + done.stderr
            assert re.search(rf"sent +{student} \(LMS user {STUDENT}\)", done.stdout), done.stdout
            exercise = submissions.exercise(A)
            maximum = sum(
                c.metadata["nbgrader"].get("points", 0)
                for c in exercise.cells
                if c.metadata.get("nbgrader", {}).get("grade")
            )
            gradebook = browser.new_context().new_page()
            pages.append(gradebook)
            gradebook.goto(cls["platform_url"] + "/gradebook")
            row = gradebook.locator(f'tr[data-user="{STUDENT}"][data-item="{A}"]')
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
