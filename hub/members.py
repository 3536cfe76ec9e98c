"""Add someone to a running `make hub`, without a restart (no one's kernel stops); under LTI,
the class from the LMS.

    sudo make hub-member NAME=alice [ROLE=student|ta|instructor] [PASSWORD=...]
    (python hub/members.py add NAME [--role ROLE] [--password PASSWORD], with the same HUB_STATE
    and HUB_ROSTER as the running hub)
    sudo .venv/bin/python hub/members.py roster [--dry-run]   (a hub with LTI: see roster() below)

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

sys.path.insert(0, str(serve.ROOT))  # the grader package, as the hub's own processes have it

import lti  # noqa: E402 (hub/lti.py imports the grader package)
from nbgrader.api import Gradebook  # noqa: E402

from grader.lms import lti_tool  # noqa: E402

NRPS_SCOPE = "https://purl.imsglobal.org/spec/lti-nrps/scope/contextmembership.readonly"
MEMBERS_TYPE = "application/vnd.ims.lti-nrps.v2.membershipcontainer+json"


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
        serve.fail(
            "this hub signs people in from the LMS: add them to the course there "
            "(python hub/members.py roster gives the LMS's learners their rows before they launch)"
        )
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
    if role == "instructor" and api(settings, "POST", f"/groups/instructors-{course}/users", {"users": [name]}) != 200:
        serve.fail(f"the hub did not put {name} in the group instructors-{course}")
    if role == "instructor" and api(settings, "PATCH", f"/users/{name}", {"admin": True}) != 200:
        serve.fail(f"the hub did not make {name} an admin")
    print(f"{name} ({role}) can log in now; nobody's server was restarted")


def service(launches: dict) -> dict:
    """The latest instructor's or TA's launch that brought the NRPS claim."""
    staff = [launch for launch in launches.values() if launch["role"] != "student" and launch.get("nrps")]
    if not staff:
        serve.fail(
            "no instructor or TA launch with the LMS's Names and Role Provisioning claim yet: launch the "
            "hub once from the course as an instructor (and allow the tool that service in the LMS)"
        )
    return max(staff, key=lambda launch: launch["launched"])


def members(platform: lti_tool.Platform, url: str) -> list[dict]:
    """Every member on every page (Link: rel="next")."""
    found = []
    while url:
        headers, page = platform.call("GET", url, MEMBERS_TYPE)
        found += (page or {}).get("members") or []
        url = next(
            (
                part[part.index("<") + 1 : part.index(">")]
                for part in (headers.get("Link") or "").split(",")
                if 'rel="next"' in part and "<" in part
            ),
            "",
        )
    return found


def as_claims(member: dict) -> dict:
    """The member in a launch's shape, for hub/lti.py's naming rule."""
    message = next(iter(member.get("message") or []), {})
    return {
        "sub": member["user_id"],
        lti.CLAIM + "custom": message.get(lti.CLAIM + "custom") or {},
        lti.CLAIM + "lis": {"person_sourcedid": member.get("lis_person_sourcedid")},
    }


def roster(state: Path, dry_run: bool, out=sys.stdout) -> int:
    """The class from the LMS before anyone launches: LTI Names and Role Provisioning Services 2.0.

    The course's member list, at the address an instructor's or TA's launch brought (so one of them
    must have launched the hub once), read with the tool's own key (a client-credentials token, as
    `python -m grader lms push` gets); every active learner gets the name their first launch will
    give them (hub/lti.py's choose_name: their login id when it is a free account name, else
    lti-<sub>): a row in the grader's gradebook (name, email) and a record in the launch store, so
    Formgrader lists them and `lms push` can send their grades before they ever launch. No Linux
    account or hub user yet: those wait for the first launch. Run it again at any time: people it
    knows keep their names, new ones are added."""
    settings = serve.running_class(state)
    tool = settings.get("lti")
    if not tool:
        serve.fail("this hub has no LTI configuration: its roster is hub/roster.csv")
    store = lti_tool.Store(tool["store"])
    launches = store.launches()
    staff = service(launches)
    url = lti_tool.with_path(staff["nrps"]["context_memberships_url"], "")
    if staff.get("resource_link", {}).get("id"):  # each member's custom claims (the login id) come with it
        url = lti_tool.with_path(url, "", rlid=staff["resource_link"]["id"])
    platform = lti_tool.Platform(tool, lti_tool.load_key(tool["key"]), {lti_tool.SCOPE_SCORE, NRPS_SCOPE}, 1.0)
    try:
        everyone = members(platform, url)
    except lti_tool.LMSError as error:
        serve.fail(f"the LMS's member list: {error}")
    known_names = [settings["grader"], *settings["students"], *settings["instructors"], *settings["tas"]]
    source = tool.get("username_claim", "login_id")
    added = kept = 0
    with Gradebook(settings["gradebook"]) as gradebook:
        lms_ids = {student.id: student.lms_user_id for student in gradebook.students}
        for member in everyone:
            if member.get("status", "Active") != "Active" or lti.course_role(member.get("roles") or []) != "student":
                continue
            claims = as_claims(member)
            name, problem = lti.choose_name(claims, source, launches, known_names)
            if name in launches:
                kept += 1
                continue
            record = {
                "ags": staff.get("ags") or {},
                "context": staff.get("context") or {},
                "name": member.get("name", ""),
                "given_name": member.get("given_name", ""),
                "family_name": member.get("family_name", ""),
                "email": member.get("email", ""),
                "roster": True,  # from the member list: no launch yet
            }
            added += 1
            print(
                f"{'would add' if dry_run else 'added'} {name} (LMS user {claims['sub']}, {record['name']})"
                + (f": {problem}" if problem else ""),
                file=out,
            )
            launches[name] = {"sub": claims["sub"], "launched": 0}
            if dry_run:
                continue
            store.record_launch(name, claims["sub"], "student", record)
            gradebook.update_or_create_student(
                name,
                first_name=record["given_name"] or None,
                last_name=record["family_name"] or None,
                email=record["email"] or None,
                # A Canvas import's user id (its CSV export's ID column) stays the row's.
                **({} if lms_ids.get(name) else {"lms_user_id": claims["sub"]}),
            )
    print(
        f"{len(everyone)} members in the LMS: {added} learners {'to add' if dry_run else 'added'}, "
        f"{kept} known already",
        file=out,
    )
    return 0


def main(argv: list[str] | None = None) -> None:
    if os.geteuid() != 0:
        serve.fail("adding a member creates a Linux account: run it as root (sudo make hub-member NAME=...)")
    parser = argparse.ArgumentParser(prog="python hub/members.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("action", choices=("add", "roster"))
    parser.add_argument("name", nargs="?", help="add: the new member's account name")
    parser.add_argument("--role", default="student")
    parser.add_argument("--password", default="")
    parser.add_argument("--dry-run", action="store_true", help="roster: say who would be added; change nothing")
    args = parser.parse_args(argv)
    state = Path(os.environ.get("HUB_STATE") or serve.ROOT / ".hub").resolve()
    if args.action == "roster":
        sys.exit(roster(state, args.dry_run))
    if not args.name:
        parser.error("add needs the member's NAME")
    add(
        args.name,
        args.role,
        args.password,
        state,
        Path(os.environ.get("HUB_ROSTER") or serve.HUB / "roster.csv").resolve(),
    )


if __name__ == "__main__":
    main(sys.argv[1:])
