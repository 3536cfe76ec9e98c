"""`make hub` in the tests that start one (test_hub.py, test_lti.py): the
processes below it, the Linux accounts it makes, and a class on a hub with its LTI
configuration and the project's own platform (lti_platform.py), stopped and removed afterwards.
"""

from __future__ import annotations

import hashlib
import json
import os
import pwd
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
import requests
from labserver import free_port

from conftest import ROOT

PY = sys.executable
CLIENT_ID, DEPLOYMENT = "hub-tool-7", "deployment-42"
START_TIMEOUT = 180


def started_by(server: subprocess.Popen) -> list[psutil.Process]:
    """`make hub` and everything below it (servers start new sessions, but stay its descendants)."""
    try:
        top = psutil.Process(server.pid)
        return [top, *top.children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


def alive(processes: list[psutil.Process]) -> list[str]:
    left = []
    for process in processes:
        try:
            if process.is_running() and process.status() != psutil.STATUS_ZOMBIE:
                left.append(f"{process.pid} {process.username()} {' '.join(process.cmdline())[:120]}")
        except psutil.NoSuchProcess:
            pass
    return left


def remove_accounts(names) -> None:
    for name in names:
        try:
            pwd.getpwnam(name)
        except KeyError:
            continue
        subprocess.run(["userdel", "--remove", name], capture_output=True)


def make_hub(port: int, env: dict, log) -> subprocess.Popen:
    """`make hub` on `port` with `env`, its output to the file `log`, in a session of its own."""
    return subprocess.Popen(
        ["make", "--no-print-directory", "hub", f"HUB_PORT={port}"],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def stop_hub(server: subprocess.Popen, processes: list[psutil.Process]) -> list[str]:
    """Stop `make hub` and everything below it (added to `processes`): what was still alive after
    three minutes' grace, killed then. JupyterHub stops its managed services one after another, each
    with its interrupt, terminate and kill waits; with the whole suite beside it on two cores, the
    Formgrader service's stop has taken over a minute (two CI runs), a minute alone on a quiet one."""
    processes += started_by(server)
    try:
        os.killpg(server.pid, signal.SIGTERM)
    except ProcessLookupError:
        pass  # `make hub` failed and its group is gone: the test's own error says why
    deadline = time.monotonic() + 180
    while alive(processes) and time.monotonic() < deadline:
        time.sleep(0.5)
    left = alive(processes)
    for process in processes:  # whatever is left must not outlive the test
        try:
            process.kill()
        except psutil.Error:
            pass
    server.wait(timeout=30)
    return left


def expected_name(sub: str) -> str:
    """The documented mapping (docs/lti.md): lti-<sub> for a numeric id, else lti-x + 16 hex of its SHA-256."""
    return f"lti-{sub}" if sub.isdigit() else "lti-x" + hashlib.sha256(sub.encode()).hexdigest()[:16]


def name_of(user: dict) -> str:
    """The hub name of one of the platform's users: the login id, when the launch carries one the
    hub can use as it is (docs/lti.md), else the name from the LMS user id."""
    login = (user.get("custom") or {}).get("login_id", "")
    usable = re.match(r"^[a-z][a-z0-9-]{0,31}$", login) and not login.startswith("lti-")
    return login if usable and login not in TAKEN else expected_name(user["sub"])


TAKEN = {"root", "daemon", "nobody"}  # accounts no login id may take (the tests' roster's are added)


def lti_class(folder: Path, users: list[dict], grader: str, assignments: str = "01_blocks"):
    """The platform and `make hub` with its LTI configuration; yields their addresses. A generator
    for a fixture: everything it started is stopped and every account it made removed afterwards."""
    TAKEN.add(grader)
    names = [grader] + [name_of(u) for u in users]
    remove_accounts(names)
    hub_port = free_port()
    tool = f"http://localhost:{hub_port}/hub"
    config = {
        "client_id": CLIENT_ID,
        "deployment_id": DEPLOYMENT,
        "tool": {
            "login_url": f"{tool}/lti13/oauth_login",
            "redirect_uris": [f"{tool}/lti13/oauth_callback"],
            "jwks_url": f"{tool}/lti13/jwks",
            "target_link_uri": tool,
        },
        "context": {"id": "course-101", "label": "PTB", "title": "PyTorch building blocks"},
        "users": users,
    }
    (folder / "platform.json").write_text(json.dumps(config))
    platform_log = open(folder / "platform.log", "w+")
    platform = subprocess.Popen(
        [PY, str(ROOT / "tests" / "lti_platform.py"), str(folder / "platform.json")],
        stdout=subprocess.PIPE,
        stderr=platform_log,
        text=True,
    )
    lms = json.loads(platform.stdout.readline() or "{}")
    assert lms, "the LTI platform did not start: " + (folder / "platform.log").read_text()
    roster = folder / "roster.csv"
    roster.write_text(f"username,role,password\n{grader},grader,\n")
    state = Path("/tmp") / f"lti-hub-{os.getpid()}-{hub_port}"  # students reach its exchange
    env = dict(
        os.environ,
        HUB_ROSTER=str(roster),
        HUB_STATE=str(state),
        HUB_ASSIGNMENTS=assignments,
        HUB_LTI_ISSUER=lms["issuer"],
        HUB_LTI_CLIENT_ID=CLIENT_ID,
        HUB_LTI_DEPLOYMENT_ID=DEPLOYMENT,
        HUB_LTI_LOGIN_URL=lms["login_url"],
        HUB_LTI_JWKS_URL=lms["jwks_url"],
        HUB_LTI_TOKEN_URL=lms["token_url"],
        HUB_SUBDOMAINS="1",  # the option, kept tested here: one origin per user (test_hub.py runs the default)
    )
    log = open(folder / "hub.log", "w+")
    server = make_hub(hub_port, env, log)
    processes = []
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            try:
                if requests.get(f"http://127.0.0.1:{hub_port}/hub/api/", timeout=5).status_code == 200:
                    break
            except requests.ConnectionError:
                pass
            if server.poll() is not None or time.monotonic() > deadline:
                log.seek(0)
                pytest.fail(f"make hub did not start:\n{log.read()[-5000:]}")
            time.sleep(0.5)
        yield {
            "hub": f"http://localhost:{hub_port}",
            "port": hub_port,
            "lms": lms,
            "state": state,
            "log": log,
            "users": {u["sub"]: u for u in users},
            "platform_url": lms["url"],
        }
    finally:
        left = stop_hub(server, processes)
        platform.terminate()
        platform.wait(timeout=10)
        remove_accounts(names)
        subprocess.run(["rm", "-rf", str(state)])
        assert not left, "processes the hub started outlived it:\n" + "\n".join(left)
