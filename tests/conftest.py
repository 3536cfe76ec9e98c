"""Fixtures that more than one test module uses (pytest finds them here; no test module
imports another). The repository-wide setup, which the notebooks nbval collects share too,
is the root conftest.py.

Test modules import ROOT and ASSIGNMENTS with `from conftest import ...`: with a conftest.py
in tests/ that name is this module (pytest imports it after the root one), so it holds them
as well.
"""

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path

import labserver
import pytest

from grader.isolation import sandbox
from tools import course

ROOT = Path(__file__).resolve().parent.parent
ASSIGNMENTS = course.assignment_ids()


def selected(request, param: str) -> set:
    """The values of `param` among the tests of the requesting module that this run selected: a
    module-scoped fixture that grades per lesson grades only the lessons of the tests that will use
    it (`make lesson`'s -k picks one lesson's)."""
    mine = [item for item in request.session.items if getattr(item, "module", None) is request.module]
    return {item.callspec.params[param] for item in mine if hasattr(item, "callspec") and param in item.callspec.params}


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """A test of one liar (tests/cheats.py LIARS) is a test of its lesson: -k <lesson> selects it
    (before -k is applied), as it selects the tests whose ids name the lesson."""
    for item in items:
        liar = getattr(item, "callspec", None) and item.callspec.params.get("liar")
        if liar is not None and hasattr(liar, "assignment"):
            item.extra_keyword_matches.add(liar.assignment)


def server_binaries() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
    return Path(found[-1]).parent if found else None


@pytest.fixture(scope="module")
def postgres_url():
    """A throwaway PostgreSQL server (Debian's `postgresql`) run as the `postgres` user on a
    private port: the URL of an empty `gradebook` database on it."""
    bin_dir = server_binaries()
    if bin_dir is None:
        pytest.skip("PostgreSQL server not installed: `apt-get install postgresql` (.ci/run does)")
    try:
        user = pwd.getpwnam("postgres")
    except KeyError:
        pytest.skip("no 'postgres' system user to run the server as")
    if not sandbox.available():
        pytest.skip("bubblewrap is not installed here: `apt-get install bubblewrap` (.ci/run does)")
    # pytest's own temporary folders are private to root; the server needs its own.
    base = Path(tempfile.mkdtemp(prefix="grader-pg-"))
    os.chmod(base, 0o755)
    data = base / "data"
    shutil.chown(base, user.pw_uid, user.pw_gid)
    port = labserver.free_port()
    as_postgres = (
        ["setpriv", f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}", "--init-groups"] if os.geteuid() == 0 else []
    )
    run = lambda *cmd: subprocess.run(as_postgres + list(cmd), check=True, capture_output=True, text=True)  # noqa: E731
    run(str(bin_dir / "initdb"), "-D", str(data), "--auth=trust", "-U", "postgres")
    run(
        str(bin_dir / "pg_ctl"),
        "-D",
        str(data),
        "-w",
        "-l",
        str(base / "log"),
        "-o",
        f"-p {port} -k {base} -c listen_addresses=127.0.0.1",
        "start",
    )
    try:
        run(str(bin_dir / "createdb"), "-h", "127.0.0.1", "-p", str(port), "-U", "postgres", "gradebook")
        yield f"postgresql://postgres@127.0.0.1:{port}/gradebook"
    finally:
        subprocess.run(
            as_postgres + [str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"], capture_output=True
        )
        shutil.rmtree(base, ignore_errors=True)
