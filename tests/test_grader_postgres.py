"""The gradebook can live in PostgreSQL (nbgrader's db_url), for courses that
grade on several machines or share the gradebook with other tools.

The test starts a real, throwaway PostgreSQL server (Debian package
`postgresql`, installed by .ci/run) as the `postgres` system user, on a private
port, and grades through it.
"""

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

import nbformat
import pytest
import submissions

from grader import grade, sandbox
from tools import course

A = "01_blocks"


def server_binaries() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
    return Path(found[-1]).parent if found else None


@pytest.fixture(scope="module")
def postgres_url():
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
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
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


def test_grading_with_a_postgresql_gradebook(tmp_path, postgres_url):
    import psycopg

    folder = tmp_path / "submissions"
    folder.mkdir()
    wrong = submissions.first_wrong(A)
    nbformat.write(submissions.answered(A), folder / "correct.ipynb")
    nbformat.write(submissions.exercise(A), folder / "blank.ipynb")
    nbformat.write(submissions.answered(A, {wrong.answer_id: wrong.code}), folder / "one_wrong.ipynb")
    root = tmp_path / "course"
    course.temporary_course(root, [A])
    rows = grade.run(grade.Options(A, folder, jobs=2, cell_timeout=30, root=root, db_url=postgres_url))
    assert {r.student_id: (r.status, r.score) for r in rows} == {
        "correct": ("graded", 10),
        "blank": ("graded", 0),
        "one_wrong": ("graded", 7),
    }
    assert not (root / "gradebook.db").exists(), "the SQLite gradebook must not be used"
    with psycopg.connect(postgres_url) as connection, connection.cursor() as cursor:
        cursor.execute("select count(*) from submitted_assignment")
        assert cursor.fetchone()[0] == 3
