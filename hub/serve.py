"""`make hub`: this course on a real JupyterHub for a class, on this machine.

    make hub [HUB_PORT=8000] [HUB_ROSTER=hub/roster.csv] [HUB_STATE=.hub] [HUB_DB_URL=...]
             [HUB_LTI_CONFIG=lti.json] [HUB_LTI_ISSUER=... HUB_LTI_CLIENT_ID=... ...]

Run as root: it creates a Linux account for everyone in the roster. Then:

1. It stages copies of the assignments' sources for the grader in a root-only
   folder, then starts itself again inside bubblewrap, in a private PID namespace, so
   that every process the hub starts (proxy, servers, kernels, Formgrader) ends
   when the hub ends. Inside, the checkout shows only what the class runs and
   reads (CHECKOUT_SEEN_BY_THE_CLASS): no solutions, lesson sources, tests or git
   history, for students' servers or anyone else. In that namespace's view of the file system, a private
   folder on the way to what the class must run (the venv's Python may live
   under /root, which is 0700) is replaced by an empty, traversable folder
   holding only what is needed: root's own files stay out of sight.
2. Inside: the accounts (homes 0700), the grader's course folder (a copy of
   solutions/ and exercises/ with a config that loads the repository's
   nbgrader_config.py, so grading runs the course's sandboxed engine), the
   gradebook (SQLite in the state folder, or HUB_DB_URL, e.g. PostgreSQL), the
   shared exchange with its permissions, then `jupyterhub -f
   hub/jupyterhub_config.py` on 127.0.0.1:HUB_PORT.

With an LTI 1.3 configuration (HUB_LTI_* variables or the JSON file HUB_LTI_CONFIG,
see hub/lti_setup.py and docs/lti.md) people sign in from the LMS instead
(hub/lti.py), and each first launch creates that person's account; the roster
then needs only the grader.

The state lives in HUB_STATE (git-ignored; running `make hub` again keeps it):
hub/ (root only: JupyterHub's database and secrets, generated passwords in
passwords.csv; with LTI, lti/: the tool's key, tool.json and the launch store that
`python -m grader lms push` reads), course/ (the grader's only), exchange/.
"""

from __future__ import annotations

import csv
import json
import os
import pwd
import re
import secrets
import shutil
import socket
import stat
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from exchange import layout as exchange
from exchange import owned
from lti_setup import LTI_SETTINGS, lti_settings, lti_tool  # noqa: F401 (LTI_SETTINGS: make hub's names)

HUB = Path(__file__).resolve().parent
ROOT = HUB.parent
VENV_BIN = Path(sys.executable).parent
COURSE_ID = "pytorch-building-blocks"
ROLES = ("student", "instructor", "ta", "grader")
# What Linux (useradd) accepts without complaint, and a domain name label allows.
NAME = re.compile(r"^[a-z][a-z0-9-]{0,31}$")
ADMIN_ONLY = "make hub creates Linux accounts for the class: run it as root (sudo make hub)."


def fail(message: str) -> None:
    print(f"make hub: {message}", file=sys.stderr)
    sys.exit(1)


@dataclass
class Member:
    name: str
    role: str
    password: str = ""


def read_roster(path: Path) -> tuple[list[Member], list[str]]:
    """The roster's valid rows, and a reason for every row left out."""
    members: list[Member] = []
    problems: list[str] = []
    seen: set[str] = set()
    lines = [line for line in path.read_text(encoding="utf-8").splitlines() if not line.lstrip().startswith("#")]
    for number, row in enumerate(csv.DictReader(lines), start=2):
        name = (row.get("username") or "").strip()
        role = (row.get("role") or "").strip().lower()
        if not name and not role:
            continue
        reason = (
            "not a valid account name (lowercase letters, digits and '-', starting with a letter, at most 32)"
            if not NAME.match(name)
            else f"role {role!r} is none of {', '.join(ROLES)}"
            if role not in ROLES
            else "listed twice"
            if name in seen
            else ""
        )
        if reason:
            problems.append(f"{path.name} row {number} ({name or '?'}): {reason}; left out")
            continue
        seen.add(name)
        members.append(Member(name, role, (row.get("password") or "").strip()))
    graders = [m for m in members if m.role == "grader"]
    if len(graders) != 1:
        fail(f"{path}: the roster needs exactly one account with role 'grader' (found {len(graders)})")
    return members, problems


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# -- outside: the namespace ---------------------------------------------------------------


def hidden_by(path: Path) -> Path | None:
    """The first folder above `path` that other users cannot enter, if any."""
    for parent in reversed(path.parents):
        if parent != Path("/") and not os.stat(parent).st_mode & stat.S_IXOTH:
            return parent
    return None


# What of this checkout the class's processes see: the environment, the grader and the hub's own
# files, the released exercises and the lectures. The rest (solutions/, lessons/, tests/ with their
# right answers, .git's history, the instructor's own gradebook and hand-ins) is an empty folder to
# everyone inside the hub, root included; the grader's copies of the sources are staged before.
CHECKOUT_SEEN_BY_THE_CLASS = (".venv", "grader", "hub", "exercises", "course", "nbgrader_config.py", "pyproject.toml")


def namespace_command(state: Path) -> list[str]:
    """bubblewrap around the hub: own PID namespace, private folders opened up to what the class needs,
    and of the checkout only CHECKOUT_SEEN_BY_THE_CLASS."""
    if shutil.which("bwrap") is None:
        fail("bubblewrap is missing: `sudo apt-get install bubblewrap` (make test installs it).")
    needed = sorted({Path(os.path.realpath(p)) for p in (sys.base_prefix, sys.prefix, ROOT, state)})
    # No --proc here: bwrap would cover parts of its /proc read-only, and the
    # kernel then refuses the grading sandbox (bwrap in an unprivileged user
    # namespace, as the grader account) a /proc of its own. inside() mounts a
    # plain one for this PID namespace.
    args = ["bwrap", "--dev-bind", "/", "/", "--unshare-pid"]
    covered: set[Path] = set()
    for path in needed:
        top = hidden_by(path)
        if top is None:
            continue
        if top not in covered:
            covered.add(top)
            args += ["--perms", "0755", "--tmpfs", str(top)]
        for folder in reversed(path.parents):
            if folder.is_relative_to(top) and folder != top:
                args += ["--perms", "0755", "--dir", str(folder)]
        args += ["--bind", str(path), str(path)]
    # The checkout, cut down to what the class needs; then what lives inside it (state, venv) again.
    args += ["--perms", "0755", "--tmpfs", str(ROOT)]
    for name in CHECKOUT_SEEN_BY_THE_CLASS:
        if (ROOT / name).exists():
            args += ["--bind", str(ROOT / name), str(ROOT / name)]
    for path in needed:
        if path != ROOT and path.is_relative_to(ROOT):
            for folder in reversed(path.parents):  # its way down, unless a folder shown above holds it
                if folder.is_relative_to(ROOT) and folder != ROOT:
                    if folder.relative_to(ROOT).parts[0] not in CHECKOUT_SEEN_BY_THE_CLASS:
                        args += ["--perms", "0755", "--dir", str(folder)]
            args += ["--bind", str(path), str(path)]
    return args


def stage_sources(state: Path, assignments: list[str]) -> Path:
    """Copies of the sources and releases the grader's course starts from, made before the hub's
    namespace hides solutions/, in a folder only root can enter."""
    private = state / "hub"
    private.mkdir(mode=0o700, exist_ok=True)
    os.chmod(private, 0o700)
    staged = private / "sources"
    for assignment in assignments:
        for kind in ("solutions", "exercises"):
            target = staged / kind / assignment
            if target.exists():
                shutil.rmtree(target)
            shutil.copytree(ROOT / kind / assignment, target)
    return staged


# -- inside: accounts, course, exchange --------------------------------------------------


def run(*command: str, input: str | None = None) -> None:
    done = subprocess.run(list(command), input=input, capture_output=True, text=True)
    if done.returncode != 0:
        fail(f"{' '.join(command)} failed: {done.stderr.strip() or done.stdout.strip()}")


def account(member: Member, state: Path) -> pwd.struct_passwd:
    """The member's Linux account, created when missing; home readable by its owner only."""
    try:
        user = pwd.getpwnam(member.name)
        created = False
    except KeyError:
        run("useradd", "--create-home", "--user-group", "--shell", "/bin/bash", member.name)
        user = pwd.getpwnam(member.name)
        created = True
    os.chmod(user.pw_dir, 0o700)
    password = member.password
    if not password and created and member.role != "grader":
        password = secrets.token_urlsafe(9)
        passwords = state / "hub" / "passwords.csv"
        with open(os.open(passwords, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600), "a") as out:
            out.write(f"{member.name},{password}\n")
        print(f"new account {member.name}: password in {passwords}")
    if password:
        run("chpasswd", input=f"{member.name}:{password}\n")
    if member.role == "grader":
        run("usermod", "--lock", member.name)  # it never logs in; the hub starts its server
    return user


COURSE_CONFIG = '''"""Written by hub/serve.py: the course's own nbgrader configuration (sandboxed
autograde included), with the folders of this hub."""
c = get_config()  # noqa: F821
load_subconfig({config!r})  # noqa: F821
assert c.CourseDirectory.course_id == {course!r}, "the course's nbgrader_config.py did not load"
c.CourseDirectory.root = {root!r}
c.CourseDirectory.db_url = {db_url!r}
c.Exchange.root = {exchange!r}
'''

REGISTER = """
import sys
from nbgrader.api import Gradebook
from grader.course import nbgrader_course as course
config = course.load_config(sys.argv[1])
api = course.api(config)
with Gradebook(config.CourseDirectory.db_url) as gradebook:
    known = {a.name for a in gradebook.assignments}
    for student in sys.argv[3].split(","):
        if student:
            gradebook.update_or_create_student(student)
for assignment in sys.argv[2].split(","):
    if assignment not in known:
        course.register(api, assignment)
        print("gradebook: added", assignment)
"""


def course_folder(
    state: Path,
    grader: pwd.struct_passwd,
    db_url: str,
    exchange_root: Path,
    assignments: list[str],
    students: list[str],
) -> Path:
    """The grader's course: copies of the sources and releases, the config, the gradebook."""
    folder = state / "course"
    owned(folder, grader, 0o700)
    for assignment in assignments:
        for kind in ("solutions", "exercises"):
            target = folder / kind / assignment
            if not target.exists():
                shutil.copytree(state / "hub" / "sources" / kind / assignment, target)
    (folder / "nbgrader_config.py").write_text(
        COURSE_CONFIG.format(
            config=str(ROOT / "nbgrader_config.py"),
            course=COURSE_ID,
            root=str(folder),
            db_url=db_url or f"sqlite:///{folder / 'gradebook.db'}",
            exchange=str(exchange_root),
        )
    )
    for path in [folder, *folder.rglob("*")]:
        os.chown(path, grader.pw_uid, grader.pw_gid, follow_symlinks=False)
    register(folder, grader, assignments, students)
    return folder


def as_grader(grader: pwd.struct_passwd, command: list[str], folder: Path) -> subprocess.CompletedProcess:
    """`command` run in `folder` as the grader account, with the course's environment and package."""
    env = dict(
        os.environ,
        HOME=grader.pw_dir,
        USER=grader.pw_name,
        PYTHONPATH=str(ROOT),
        PATH=f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', os.defpath)}",
    )
    switch = ["setpriv", f"--reuid={grader.pw_uid}", f"--regid={grader.pw_gid}", "--init-groups"]
    return subprocess.run(switch + command, cwd=folder, env=env, capture_output=True, text=True)


def register(folder: Path, grader: pwd.struct_passwd, assignments: list[str], students: list[str]) -> None:
    """Put the assignments and students in the grader's gradebook (as the grader account)."""
    # nbgrader records each assignment in the gradebook when it generates it.
    command = [sys.executable, "-c", REGISTER, str(folder), ",".join(assignments), ",".join(students)]
    done = as_grader(grader, command, folder)
    if done.returncode != 0:
        fail(f"could not prepare the gradebook:\n{done.stdout}{done.stderr}")
    print(done.stdout, end="")


def running_class(state: Path) -> dict:
    """The settings of the class `make hub` serves from `state` (what it wrote at start)."""
    class_file = state / "hub" / "class.json"
    if not class_file.exists():
        fail(f"no running class in {state} (no {class_file}): start it with make hub first")
    return json.loads(class_file.read_text(encoding="utf-8"))


def class_settings(port: int, private: Path) -> dict:
    """How the hub serves a class: its address, limits per user, the idle culler, the token
    that `python hub/members.py add` uses (HUB_* variables; docs/hub.md)."""
    token_file = private / "members-token"
    if not token_file.exists():
        with open(os.open(token_file, os.O_WRONLY | os.O_CREAT, 0o600), "w") as out:
            out.write(secrets.token_hex(32))
    try:
        cpu_limit = float(os.environ.get("HUB_CPU_LIMIT") or 1.0)
        idle_timeout = int(os.environ.get("HUB_IDLE_TIMEOUT") or 3600)
    except ValueError:
        fail("HUB_CPU_LIMIT is a number of cores (1, 0.5) and HUB_IDLE_TIMEOUT a number of seconds")
    subdomains = os.environ.get("HUB_SUBDOMAINS") or "0"
    if subdomains not in ("0", "1"):
        fail("HUB_SUBDOMAINS is 1 (every user's server on its own subdomain) or 0 (one origin, the default)")
    return {
        "bind": os.environ.get("HUB_BIND") or "127.0.0.1",
        "subdomains": subdomains == "1",
        "public_url": (os.environ.get("HUB_PUBLIC_URL") or f"http://localhost:{port}").rstrip("/"),
        "mem_limit": os.environ.get("HUB_MEM_LIMIT") or "2G",
        "cpu_limit": cpu_limit,
        "idle_timeout": idle_timeout,
        "members_token": token_file.read_text().strip(),
    }


def inside(state: Path, port: int, roster: Path, db_url: str, assignments: list[str], lti: dict | None) -> None:
    run("mount", "-t", "proc", "proc", "/proc")  # this PID namespace's processes, for ps and psutil
    private = state / "hub"  # JupyterHub's database and secrets, generated passwords: root only
    private.mkdir(mode=0o700, exist_ok=True)
    os.chmod(private, 0o700)
    members, problems = read_roster(roster)
    for problem in problems:
        print(f"make hub: {problem}", file=sys.stderr)
    users = {m.name: account(m, state) for m in members}
    grader = users[next(m.name for m in members if m.role == "grader")]
    exchange_root = exchange(state, grader, COURSE_ID)
    students = [m.name for m in members if m.role == "student"]
    course = course_folder(state, grader, db_url, exchange_root, assignments, students)
    settings = {
        "course_id": COURSE_ID,
        "port": port,
        "state": str(private),
        "course": str(course),
        "exchange": str(exchange_root),
        "venv_bin": str(VENV_BIN),
        "hub": str(HUB),
        "proxy": str(HUB / "node_modules" / ".bin" / "configurable-http-proxy"),
        "hub_api_port": free_port(),
        "proxy_api_port": free_port(),
        "service_port": free_port(),
        "grader": grader.pw_name,
        "students": students,
        "instructors": [m.name for m in members if m.role == "instructor"],
        "tas": [m.name for m in members if m.role == "ta"],
        **class_settings(port, private),
        "gradebook": db_url or f"sqlite:///{course / 'gradebook.db'}",
        "lti": lti_tool(state, lti, grader, COURSE_ID) if lti else None,
    }
    (private / "class.json").write_text(json.dumps(settings, indent=1))
    os.chdir(private)
    os.environ["HUB_CLASS_FILE"] = str(private / "class.json")
    hub = str(VENV_BIN / "jupyterhub")
    os.execv(hub, [hub, "-f", str(HUB / "jupyterhub_config.py")])


def main() -> None:
    if os.geteuid() != 0:
        fail(ADMIN_ONLY)
    port = int(os.environ.get("HUB_PORT") or 8000)
    state = Path(os.environ.get("HUB_STATE") or ROOT / ".hub").resolve()
    roster = Path(os.environ.get("HUB_ROSTER") or HUB / "roster.csv").resolve()
    db_url = os.environ.get("HUB_DB_URL", "")
    # The released exercises name the assignments (inside the hub's namespace solutions/ is hidden).
    all_ids = sorted(p.name for p in (ROOT / "exercises").iterdir() if (p / f"{p.name}.ipynb").exists())
    assignments = (os.environ.get("HUB_ASSIGNMENTS") or "").split() or all_ids
    unknown = sorted(set(assignments) - set(all_ids))
    if unknown:
        fail(f"HUB_ASSIGNMENTS names no lesson of this course: {' '.join(unknown)}")
    if not roster.exists():
        fail(f"no roster at {roster}")
    proxy = HUB / "node_modules" / ".bin" / "configurable-http-proxy"
    if not os.access(proxy, os.X_OK):
        fail(f"JupyterHub's proxy is missing ({proxy}): `make hub` installs it with npm ci in hub/")
    try:
        lti = lti_settings(port)
    except ValueError as error:
        fail(str(error))
    if len(sys.argv) > 1 and sys.argv[1] == "--inside":
        inside(state, port, roster, db_url, assignments, lti)
        return
    state.mkdir(parents=True, exist_ok=True)
    os.chmod(state, 0o755)  # students reach the exchange inside it
    stage_sources(state, assignments)
    command = namespace_command(state) + ["--", sys.executable, __file__, "--inside"]
    os.execvp(command[0], command)


if __name__ == "__main__":
    main()
