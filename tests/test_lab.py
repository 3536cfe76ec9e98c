"""`make lab` serves JupyterLab on the repo with nbgrader's extensions working:
the server is started exactly as README says and asked over HTTP."""

import json

import pytest
from labserver import get

from conftest import ASSIGNMENTS

pytestmark = pytest.mark.integration


def test_lab_serves_the_repository(lab):
    status, page = get(lab, "/lab")
    assert status == 200 and "JupyterLab" in page
    _, listing = get(lab, "/api/contents/course")
    names = {item["name"] for item in json.loads(listing)["content"]}
    assert "01_blocks.ipynb" in names


def test_formgrader_lists_every_assignment(lab):
    _, body = get(lab, "/formgrader/api/assignments")
    listed = {a["name"] for a in json.loads(body)}
    assert set(ASSIGNMENTS) <= listed, f"formgrader lists {sorted(listed)}"


def test_nbgrader_server_extensions_answer(lab):
    for path in ("/formgrader", "/assignments?course_id=pytorch-building-blocks"):
        status, _ = get(lab, path)
        assert status == 200, path
