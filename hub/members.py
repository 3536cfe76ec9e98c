"""Add someone to a running `make hub`, without a restart (no one's kernel stops).

    sudo make hub-member NAME=alice [ROLE=student|ta|instructor] [PASSWORD=...]
    (python hub/members.py add NAME [--role ROLE] [--password PASSWORD], with the same HUB_STATE
    and HUB_ROSTER as the running hub)

As root, on the hub's machine: it creates the Linux account (a random password, when none is
given, goes to the hub's passwords.csv like the roster's), adds the line to the roster so the
next start keeps it, puts a student in the grader's gradebook, and tells the running hub through
its REST API (the `course-members` service's token, in the hub's root-only state): the user, and
the group that gives a student the Assignment List and an instructor or TA the Formgrader. An
instructor also becomes a hub admin.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import pwd
import sys
import urllib.error
import urllib.request
from pathlib import Path

import serve


def api(settings: dict, method: str, path: str, body: dict | None = None) -> int:
    """One call to the running hub's REST API; its HTTP status."""
    request = urllib.request.Request(
        f"http://127.0.0.1:{settings['port']}/hub/api{path}",
        data=json.dumps(body or {}).encode(),
        method=method,
        headers={"Authorization": f"token {settings['members_token']}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code
    except urllib.error.URLError as error:
        serve.fail(f"the hub does not answer on port {settings['port']} ({error.reason}): is make hub running?")
        return 0


def add(name: str, role: str, password: str, state: Path, roster: Path) -> None:
    if not serve.NAME.match(name):
        serve.fail(f"{name!r} is not a valid account name (lowercase letters, digits and '-', starting with a letter)")
    if role not in ("student", "ta", "instructor"):
        serve.fail(f"role {role!r}: a member added later is a student, ta or instructor")
    settings = serve.running_class(state)
    if settings.get("lti"):
        serve.fail("this hub signs people in from the LMS: add them to the course there")
    serve.account(serve.Member(name, role, password), state)
    members, _ = serve.read_roster(roster)
    if name not in {m.name for m in members}:
        with open(roster, "a", newline="", encoding="utf-8") as out:
            csv.writer(out).writerow([name, role, ""])  # the password is the account's, not the roster's
    course = settings["course_id"]
    if role == "student":
        grader = pwd.getpwnam(settings["grader"])
        assignments = sorted(p.name for p in (Path(settings["course"]) / "solutions").iterdir())
        serve.register(Path(settings["course"]), grader, assignments, [name])
    status = api(settings, "POST", f"/users/{name}")
    if status not in (201, 409):  # 409: the hub knew the name already
        serve.fail(f"the hub refused to add {name} (HTTP {status})")
    group = f"nbgrader-{course}" if role == "student" else f"formgrade-{course}"
    if api(settings, "POST", f"/groups/{group}/users", {"users": [name]}) != 200:
        serve.fail(f"the hub did not put {name} in the group {group}")
    if role == "instructor" and api(settings, "PATCH", f"/users/{name}", {"admin": True}) != 200:
        serve.fail(f"the hub did not make {name} an admin")
    print(f"{name} ({role}) can log in now; nobody's server was restarted")


def main(argv: list[str] | None = None) -> None:
    if os.geteuid() != 0:
        serve.fail("adding a member creates a Linux account: run it as root (sudo make hub-member NAME=...)")
    parser = argparse.ArgumentParser(prog="python hub/members.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("action", choices=("add",))
    parser.add_argument("name")
    parser.add_argument("--role", default="student")
    parser.add_argument("--password", default="")
    args = parser.parse_args(argv)
    state = Path(os.environ.get("HUB_STATE") or serve.ROOT / ".hub").resolve()
    roster = Path(os.environ.get("HUB_ROSTER") or serve.HUB / "roster.csv").resolve()
    add(args.name, args.role, args.password, state, roster)


if __name__ == "__main__":
    main(sys.argv[1:])
