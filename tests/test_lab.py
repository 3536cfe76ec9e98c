"""`make lab` serves JupyterLab on the repo with nbgrader's extensions working:
the server is started exactly as README says and asked over HTTP."""
import json
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request

import pytest

from conftest import ASSIGNMENTS, ROOT

TOKEN = "course-test-token"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def get(port: int, path: str):
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}",
                                     headers={"Authorization": f"token {TOKEN}"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.status, response.read().decode()


@pytest.fixture(scope="module")
def lab():
    port = free_port()
    args = f"--no-browser --ServerApp.ip=127.0.0.1 --IdentityProvider.token={TOKEN}"
    server = subprocess.Popen(["make", "--no-print-directory", "lab", f"PORT={port}", f"LAB_ARGS={args}"],
                              cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              start_new_session=True, text=True)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                get(port, "/api/status")
                break
            except (urllib.error.URLError, ConnectionError):
                if server.poll() is not None or time.monotonic() > deadline:
                    pytest.fail("JupyterLab did not start:\n" + server.stdout.read())
                time.sleep(0.3)
        yield port
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)


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
