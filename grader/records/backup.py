"""Back up and restore what a class cannot lose: `make backup OUT=file`, `make restore FROM=file`.

    python -m grader.records.backup create OUT.tar.gz [--root COURSE] [--hub-state STATE] [--db-url URL]
    python -m grader.records.backup restore FROM.tar.gz [--root COURSE] [--hub-state STATE] [--db-url URL] [--force]

What a class cannot lose, and where it lives:

    the course folder (--root, default: here)    gradebook.db (nbgrader's SQLite gradebook), submitted/,
                                                 autograded/, feedback/ (nbgrader's folders), grades/
                                                 (the CSV files), .exchange/ (release and hand-ins),
                                                 .grader-state/ (releases graded against: course/history.py)
    the hub's state (--hub-state, default .hub   hub/ (JupyterHub's database and cookie secret,
    when it exists)                              passwords.csv), lti/ (the tool's key, tool.json and the
                                                 LTI launch store), course/ (the grader's course: its
                                                 gradebook and every hand-in), exchange/
    a PostgreSQL gradebook (--db-url, or the     dumped with pg_dump into the archive, restored with psql
    hub's HUB_DB_URL)

Students' home folders are theirs: the machine's own backups keep them. The archive keeps each
file's owner by name and its mode, so a restore as root on a machine whose accounts `make hub`
re-created from the roster gives every file back to the same account. A restore refuses to
overwrite a course or hub state that already holds a gradebook unless --force.

The archive also records the release the class was graded against (history.course_sources: the
commit, whether the tree was dirty, a hash of each assignment's source notebooks). A restore into
a course whose source notebooks differ for one of those assignments refuses, naming them, unless
--force: grading again there would grade against other tests than the class was graded with.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path

from grader.course.history import course_sources

COURSE_PARTS = ("gradebook.db", "submitted", "autograded", "feedback", "grades", ".exchange", ".grader-state")
HUB_PARTS = ("hub", "lti", "course", "exchange")
MANIFEST = "backup.json"
# Each option as the user types it: on python -m grader.records.backup's command line, or to make restore
# (the Makefile passes --via-make), so that a refusal names what to type.
SPELLED = {
    "cli": {"force": "--force", "hub_state": "--hub-state", "db_url": "--db-url"},
    "make": {"force": "FORCE=1", "hub_state": "HUB_STATE=DIR", "db_url": "HUB_DB_URL=URL"},
}


def parts(root: Path, hub_state: Path | None) -> list[tuple[str, Path]]:
    """(name in the archive, path here) for everything there is to keep."""
    found = [(f"course/{name}", root / name) for name in COURSE_PARTS if (root / name).exists()]
    if hub_state is not None and hub_state.exists():
        found += [(f"hub-state/{name}", hub_state / name) for name in HUB_PARTS if (hub_state / name).exists()]
    return found


def postgres(db_url: str) -> bool:
    return db_url.startswith(("postgresql://", "postgresql+psycopg://", "postgres://"))


def libpq_url(db_url: str) -> str:
    """What pg_dump and psql accept: SQLAlchemy's driver suffix removed."""
    return "postgresql://" + db_url.split("://", 1)[1]


def create(out: Path, root: Path, hub_state: Path | None, db_url: str = "") -> dict:
    """Write the archive; returns its manifest (what it holds)."""
    kept = parts(root, hub_state)
    manifest: dict = {"made": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "parts": [name for name, _ in kept]}
    manifest["graded_against"] = course_sources(root, source_directory(root))
    out.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(out, "w:gz") as archive:
        for name, path in kept:
            archive.add(path, arcname=name)
        if postgres(db_url):
            dump = subprocess.run(
                ["pg_dump", "--clean", "--if-exists", "--no-owner", libpq_url(db_url)],
                capture_output=True,
                check=False,
            )
            if dump.returncode != 0:
                raise RuntimeError(f"pg_dump failed: {dump.stderr.decode(errors='replace').strip()}")
            add_bytes(archive, "postgres.sql", dump.stdout)
            manifest["postgres"] = True
        add_bytes(archive, MANIFEST, json.dumps(manifest, indent=1).encode())
    return manifest


def add_bytes(archive: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size, info.mtime, info.mode = len(data), int(time.time()), 0o600
    archive.addfile(info, io.BytesIO(data))


def source_directory(root: Path) -> str:
    """The course's nbgrader source folder: its config's CourseDirectory.source_directory (this
    course: solutions), else nbgrader's default, source."""
    config = root / "nbgrader_config.py"
    text = config.read_text(encoding="utf-8", errors="replace") if config.exists() else ""
    found = re.search(r"source_directory\s*=\s*[\"']([^\"']+)[\"']", text)
    return found.group(1) if found else "source"


def other_sources(manifest: dict, root: Path) -> str | None:
    """Why the archive's grades do not belong with the course at `root`, or None."""
    recorded = manifest.get("graded_against")
    if not recorded:
        return None  # an archive from before the record: nothing to compare
    here = course_sources(root, source_directory(root))
    differ = sorted(
        a for a in recorded["sources"] if a in here["sources"] and here["sources"][a] != recorded["sources"][a]
    )
    if not differ:
        return None
    state = " with uncommitted changes" if recorded.get("dirty") else ""
    now = " with uncommitted changes" if here.get("dirty") else ""
    return (
        f"the backup was graded against the sources of commit {recorded['commit']}{state}; this course's source "
        f"notebooks of {', '.join(differ)} differ (commit {here['commit']}{now}), so grading again here would use "
        f"other tests than the class was graded with: check out {recorded['commit']} first"
    )


def has_gradebook(root: Path, hub_state: Path | None) -> bool:
    places = [root / "gradebook.db"] + ([hub_state / "course" / "gradebook.db"] if hub_state else [])
    return any(p.exists() for p in places)


def restore(
    source: Path, root: Path, hub_state: Path | None, db_url: str = "", force: bool = False, via: str = "cli"
) -> dict:
    """Put an archive's parts back; returns its manifest. `via`: how the user runs it ("cli" or
    "make"), which names the options in a refusal."""
    spelled = SPELLED[via]
    with tarfile.open(source, "r:gz") as archive:
        manifest = json.loads(archive.extractfile(MANIFEST).read())  # type: ignore[union-attr]
        mismatch = None if force else other_sources(manifest, root)
        if mismatch:
            raise ValueError(f"{mismatch}, or restore with {spelled['force']} to pair them anyway")
        if not force and has_gradebook(root, hub_state):
            raise FileExistsError(f"a gradebook is already there; restore with {spelled['force']} to replace it")
        targets = {"course": root, "hub-state": hub_state}
        for member in archive.getmembers():
            top, _, rest = member.name.partition("/")
            if top not in targets or not rest:
                continue
            if targets[top] is None:
                raise ValueError(f"the archive holds a hub's state ({member.name}): name {spelled['hub_state']}")
        for name in manifest["parts"]:
            top, _, rest = name.partition("/")
            target = targets[top] / rest  # type: ignore[operator]
            if target.is_dir():
                shutil.rmtree(target)
            elif target.exists():
                target.unlink()
        for top, folder in targets.items():
            if folder is None:
                continue
            members = [m for m in archive.getmembers() if m.name.startswith(top + "/")]
            for member in members:
                member.name = member.name.split("/", 1)[1]
            folder.mkdir(parents=True, exist_ok=True)
            # Owners by name and modes as they were (fully_trusted: this is the instructor's own archive).
            archive.extractall(folder, members=members, filter="fully_trusted")
        if manifest.get("postgres"):
            if not postgres(db_url):
                raise ValueError(f"the archive holds a PostgreSQL gradebook: name it with {spelled['db_url']}")
            sql = archive.extractfile("postgres.sql").read()  # type: ignore[union-attr]
            done = subprocess.run(
                ["psql", "--quiet", "--set", "ON_ERROR_STOP=1", libpq_url(db_url)], input=sql, capture_output=True
            )
            if done.returncode != 0:
                raise RuntimeError(f"psql failed: {done.stderr.decode(errors='replace').strip()}")
    return manifest


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m grader.records.backup", description=__doc__.split("\n\n")[0])
    parser.add_argument("action", choices=("create", "restore"))
    parser.add_argument("archive", type=Path)
    parser.add_argument("--root", type=Path, default=Path.cwd(), help="the course folder (default: here)")
    parser.add_argument("--hub-state", type=Path, help="make hub's state folder (default: ROOT/.hub if it exists)")
    parser.add_argument("--db-url", default=os.environ.get("HUB_DB_URL", ""), help="a PostgreSQL gradebook's URL")
    parser.add_argument("--force", action="store_true", help="restore over an existing gradebook")
    parser.add_argument("--via-make", action="store_true", help=argparse.SUPPRESS)  # messages name make's FORCE=1
    args = parser.parse_args(argv)
    hub_state = args.hub_state or (args.root / ".hub" if (args.root / ".hub").exists() else None)
    try:
        if args.action == "create":
            manifest = create(args.archive, args.root, hub_state, args.db_url)
            print(f"backup: {args.archive} holds {', '.join(manifest['parts']) or 'nothing yet'}")
        else:
            if args.archive.suffix != ".gz" or not args.archive.exists():
                raise FileNotFoundError(f"{args.archive}: not a backup made by make backup")
            via = "make" if args.via_make else "cli"
            manifest = restore(args.archive, args.root, hub_state or args.root / ".hub", args.db_url, args.force, via)
            print(f"restore: put back {', '.join(manifest['parts'])} from the backup of {manifest['made']}")
    except (OSError, ValueError, RuntimeError, tarfile.TarError) as error:
        print(f"{args.action}: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
