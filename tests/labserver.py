"""JupyterLab started for tests exactly the way README says: `make lab`.

`serve(extra_args, env)` runs one on 127.0.0.1 with a known token and yields its port;
`extra_args` adds to `LAB_ARGS`, e.g. `browser_args(folder)` for a real browser session.
test_lab.py's `lab` fixture is one with `browser_args`, shared by its HTTP and browser checks.
"""

from __future__ import annotations

import json
import os
import random
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from contextlib import contextmanager
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TOKEN = "course-test-token"


def _ephemeral_start() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768  # Linux's default


_given: set[int] = set()  # ports this process has handed out: a server may not have bound yet


def free_port() -> int:
    """A port nothing listens on now, for a server a test starts next, picked below the
    system's ephemeral range. "Any free port" (bind to port 0: every kernel's ZeroMQ sockets,
    say) draws from that range, so a port taken from it could be taken again by someone else
    between this pick and the server's own bind (a test once polled a kernel's socket). Each
    pytest-xdist worker picks from a slice of its own, and never the same port twice: a hub's
    proxy binds seconds after its pick, and another worker once took the port meanwhile."""
    top = _ephemeral_start()
    low = max(1024, top - 12000)
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT") or 1)
    worker = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw") or 0) % workers
    size = (top - low) // workers
    for _ in range(200):
        port = random.randrange(low + worker * size, low + (worker + 1) * size)
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
        if port not in _given:
            _given.add(port)
            return port
    raise RuntimeError(f"no free port below {top}")


def get(port: int, path: str):
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", headers={"Authorization": f"token {TOKEN}"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.status, response.read().decode()


@contextmanager
def serve(extra_args: str = "", env: dict | None = None):
    """Run `make lab` on a free port until the block ends; yields the port."""
    port = free_port()
    args = f"--no-browser --ServerApp.ip=127.0.0.1 --IdentityProvider.token={TOKEN} {extra_args}".strip()
    with running(["make", "--no-print-directory", "lab", f"PORT={port}", f"LAB_ARGS={args}"], ROOT, env, port):
        yield port


@contextmanager
def running(command: list[str], cwd, env: dict | None, port: int):
    """Run a Jupyter server `command` in `cwd` until the block ends, once it answers on `port`.
    Its output goes to a file (a pipe nobody reads would stall a chatty server)."""
    with tempfile.TemporaryFile("w+") as log:
        server = subprocess.Popen(
            command, cwd=cwd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, text=True, env=env
        )
        try:
            deadline = time.monotonic() + 60
            while True:
                try:
                    get(port, "/api/status")
                    break
                except (urllib.error.URLError, ConnectionError):
                    if server.poll() is not None or time.monotonic() > deadline:
                        log.seek(0)
                        pytest.fail(f"JupyterLab did not start in {cwd}:\n" + log.read()[-5000:])
                    time.sleep(0.3)
            yield server
        finally:
            os.killpg(server.pid, signal.SIGTERM)
            try:
                server.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(server.pid, signal.SIGKILL)
                server.wait()


def keep_stored_notebook(model, path, contents_manager, **kwargs):
    """Server pre-save hook: a save of an existing notebook writes back what is
    stored, byte for byte, so a browser test never changes the repository (the
    Validate button saves before it validates)."""
    if model.get("type") != "notebook":
        return
    stored = Path(contents_manager.root_dir) / path
    if stored.exists():
        model["content"] = json.loads(stored.read_text(encoding="utf-8"))


def browser_args(folder: Path) -> tuple[str, dict]:
    """LAB_ARGS and environment for a server a browser test drives: saves keep the
    stored notebooks, and checkpoints, workspaces and settings (autosave off, no
    news) live in `folder`, outside the repository."""
    settings = folder / "settings"
    for plugin, values in {
        "@jupyterlab/docmanager-extension/plugin": {"autosave": False},
        # Render every cell, not just those in view, so a test sees all outputs.
        "@jupyterlab/notebook-extension/tracker": {"windowingMode": "none"},
        "@jupyterlab/apputils-extension/notification": {"fetchNews": "false", "checkForUpdates": False},
    }.items():
        target = settings / f"{plugin}.jupyterlab-settings"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(values), encoding="utf-8")
    args = " ".join(
        [
            "--FileContentsManager.pre_save_hook=labserver.keep_stored_notebook",
            f"--FileCheckpoints.checkpoint_dir={folder / 'checkpoints'}",
            f"--LabApp.workspaces_dir={folder / 'workspaces'}",
            f"--LabApp.user_settings_dir={settings}",
        ]
    )
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in [str(Path(__file__).parent), env.get("PYTHONPATH")] if p)
    return args, env
