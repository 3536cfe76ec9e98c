"""`make lab` serves JupyterLab on the repo with nbgrader's extensions working:
the server is started exactly as README says and asked over HTTP."""

import json
import re

import pytest
from labserver import get

from conftest import ASSIGNMENTS, ROOT

pytestmark = pytest.mark.integration


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
