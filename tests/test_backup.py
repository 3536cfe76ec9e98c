"""`make backup OUT=file` and `make restore FROM=file` (grader/records/backup.py): a graded class, with a
hub's state and a PostgreSQL gradebook, survives a round trip: the same scores, files, modes and
owners; a restore never overwrites a gradebook unless told."""

from __future__ import annotations

import os
import pwd
import shutil
import stat
import subprocess

import grader_cases
import nbformat
import pytest
from nbgrader.api import Gradebook
from submissions import full_score

from conftest import ROOT
from grader.grading import grade
from grader.records import backup
from tools import cells, course

pytestmark = [pytest.mark.integration, pytest.mark.sandbox]

A = "02_parameters"


def tree(folder) -> dict[str, tuple]:
    """Every file and folder under `folder`: mode, owner and (for files) contents."""
    found = {}
    for path in sorted(folder.rglob("*")):
        info = path.lstat()
        found[str(path.relative_to(folder))] = (
            stat.S_IMODE(info.st_mode),
            info.st_uid,
            path.read_bytes() if path.is_file() else None,
        )
    return found


def scores(db_url: str) -> dict[str, float]:
    with Gradebook(db_url) as gradebook:
        return {s.student.id: s.score for s in gradebook.find_assignment(A).submissions}


@pytest.fixture(scope="module")
def graded_class(tmp_path_factory):
    """A course folder after a real grading run (two students), and a hub's state beside it."""
    top = tmp_path_factory.mktemp("class")
    root = top / "course"
    course.temporary_course(root, [A])
    downloads = top / "downloads"
    downloads.mkdir()
    wrong = cells.read_wrong_answers(A)[0]
    nbformat.write(cells.answered(A), downloads / "ada.ipynb")
    nbformat.write(cells.answered(A, {wrong.answer_id: wrong.code}), downloads / "bob.ipynb")
    rows = grade.run(grade.Options(A, downloads, jobs=2, root=root, cell_timeout=30, notebook_timeout=120))
    assert {r.student_id: r.status for r in rows} == {"ada": "graded", "bob": "graded"}
    hub = top / "hub-state"
    (hub / "hub").mkdir(parents=True)
    (hub / "hub" / "passwords.csv").write_text("ada,secret\n")
    (hub / "lti").mkdir()
    (hub / "lti" / "tool-key.pem").write_text("-----BEGIN PRIVATE KEY-----\n")
    os.chmod(hub / "lti" / "tool-key.pem", 0o600)
    os.chmod(hub / "lti", 0o700)
    os.chmod(hub / "hub", 0o700)
    inbound = hub / "exchange" / "pytorch-building-blocks" / "inbound"
    inbound.mkdir(parents=True)
    os.chmod(inbound, stat.S_ISVTX | stat.S_ISGID | 0o733)
    (inbound / "ada+01_blocks+2026").mkdir()
    nobody = pwd.getpwnam("nobody")
    os.chown(inbound / "ada+01_blocks+2026", nobody.pw_uid, nobody.pw_gid)
    return root, hub


def test_a_graded_class_and_its_hub_survive_a_backup_and_a_restore(graded_class, tmp_path):
    root, hub = graded_class
    before_scores = scores(f"sqlite:///{root / 'gradebook.db'}")
    assert before_scores["ada"] == full_score(A) > before_scores["bob"]
    before = {
        "course": {k: v for k, v in tree(root).items() if k.split("/")[0] in backup.COURSE_PARTS},
        "hub": tree(hub),
    }
    archive = tmp_path / "class.tar.gz"
    done = subprocess.run(
        [str(ROOT / ".venv" / "bin" / "python"), "-m", "grader.records.backup", "create", str(archive)]
        + ["--root", str(root), "--hub-state", str(hub)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert "gradebook.db" in done.stdout and "hub-state/hub" in done.stdout

    refused = backup.main(["restore", str(archive), "--root", str(root), "--hub-state", str(hub)])
    assert refused == 1, "a restore over a live gradebook needs --force"

    moved = tmp_path / "new-machine"
    new_root, new_hub = moved / "course", moved / "hub-state"
    assert backup.main(["restore", str(archive), "--root", str(new_root), "--hub-state", str(new_hub)]) == 0
    after = {"course": tree(new_root), "hub": tree(new_hub)}
    assert after == before
    assert scores(f"sqlite:///{new_root / 'gradebook.db'}") == before_scores

    # The same machine after a disaster: the gradebook and hand-ins gone, then put back.
    for name in ("gradebook.db", "submitted", "autograded"):
        path = root / name
        shutil.rmtree(path) if path.is_dir() else path.unlink()
    assert backup.main(["restore", str(archive), "--root", str(root), "--hub-state", str(hub), "--force"]) == 0
    assert scores(f"sqlite:///{root / 'gradebook.db'}") == before_scores


@pytest.fixture
def own_database(postgres_url):
    """A database of its own on the tests' PostgreSQL server (the hub's tests count rows in theirs)."""
    import psycopg

    server, _, _ = postgres_url.rpartition("/")
    with psycopg.connect(postgres_url, autocommit=True) as connection:
        connection.execute("DROP DATABASE IF EXISTS backup_round_trip")
        connection.execute("CREATE DATABASE backup_round_trip")
    return f"{server}/backup_round_trip"


def test_a_postgresql_gradebook_is_dumped_and_restored(own_database, tmp_path):
    postgres_url = own_database
    with Gradebook(postgres_url) as gradebook:
        gradebook.update_or_create_assignment(A)
        gradebook.update_or_create_student("carol")
        gradebook.add_submission(A, "carol")
    root = tmp_path / "course"
    root.mkdir()
    archive = tmp_path / "pg.tar.gz"
    assert backup.main(["create", str(archive), "--root", str(root), "--db-url", postgres_url]) == 0
    with Gradebook(postgres_url) as gradebook:
        gradebook.remove_submission(A, "carol")
        assert gradebook.find_assignment(A).submissions == []
    assert backup.main(["restore", str(archive), "--root", str(root), "--db-url", postgres_url]) == 0
    with Gradebook(postgres_url) as gradebook:
        assert [s.student.id for s in gradebook.find_assignment(A).submissions] == ["carol"]


def test_a_refused_restore_names_the_flag_as_the_user_types_it(tmp_path, capsys):
    """`make restore FROM=...` is told FORCE=1 (make passes --via-make), `python -m grader.records.backup
    restore` is told --force; with FORCE=1 make restores."""
    kept, live = tmp_path / "kept", tmp_path / "live"
    for root in (kept, live):
        root.mkdir()
        (root / "gradebook.db").write_text(root.name)
    archive = tmp_path / "class.tar.gz"
    backup.create(archive, kept, None)
    command = grader_cases.make_command("restore", f"FROM={archive}", f"CURDIR={live}")
    done = subprocess.run(command, shell=True, cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 1 and "restore with FORCE=1 to replace it" in done.stderr, done.stderr
    assert "--force" not in done.stderr and (live / "gradebook.db").read_text() == "live"
    assert backup.main(["restore", str(archive), "--root", str(live)]) == 1
    assert "restore with --force to replace it" in capsys.readouterr().err
    forced = grader_cases.make_command("restore", f"FROM={archive}", f"CURDIR={live}", "FORCE=1")
    done = subprocess.run(forced, shell=True, cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0 and (live / "gradebook.db").read_text() == "kept", done.stderr


def test_a_restore_refuses_by_name_the_sources_the_class_was_not_graded_against(tmp_path, capsys):
    """The archive records the release graded against (commit, dirty tree, each assignment's source
    hash); a course whose source notebooks of that assignment changed since is refused unless forced."""
    kept = tmp_path / "kept"
    (kept / "solutions" / A).mkdir(parents=True)
    (kept / "solutions" / "other").mkdir()
    (kept / "nbgrader_config.py").write_text('c.CourseDirectory.source_directory = "solutions"\n')
    (kept / "solutions" / A / f"{A}.ipynb").write_text("the test as graded")
    (kept / "solutions" / "other" / "other.ipynb").write_text("unchanged")
    (kept / "gradebook.db").write_text("kept")
    archive = tmp_path / "class.tar.gz"
    manifest = backup.create(archive, kept, None)
    recorded = manifest["graded_against"]
    assert recorded["commit"] == "unknown" and recorded["dirty"] is None and set(recorded["sources"]) == {A, "other"}

    (kept / "gradebook.db").unlink()
    (kept / "solutions" / A / f"{A}.ipynb").write_text("the test fixed since")
    assert backup.main(["restore", str(archive), "--root", str(kept)]) == 1
    err = capsys.readouterr().err
    assert f"source notebooks of {A} differ" in err and "other" not in err.split("differ")[0], err
    assert "restore with --force to pair them anyway" in err and not (kept / "gradebook.db").exists()
    command = grader_cases.make_command("restore", f"FROM={archive}", f"CURDIR={kept}")
    done = subprocess.run(command, shell=True, cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 1 and "restore with FORCE=1 to pair them anyway" in done.stderr, done.stderr
    assert backup.main(["restore", str(archive), "--root", str(kept), "--force"]) == 0
    assert (kept / "gradebook.db").read_text() == "kept"

    (kept / "gradebook.db").unlink()
    (kept / "solutions" / A / f"{A}.ipynb").write_text("the test as graded")
    assert backup.main(["restore", str(archive), "--root", str(kept)]) == 0, "the same sources: restored"
