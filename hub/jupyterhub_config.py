"""JupyterHub for this course (started by `make hub`, see hub/serve.py, which
creates the accounts and folders named in the class file read here).

- Authenticator: PAMAuthenticator (JupyterHub's default, named here). Everyone
  in the roster has a real Linux account with a password; PAM checks it, so the
  hub keeps no password store of its own and `passwd` in a Jupyter terminal
  changes it. Only roster members may log in (allowed_users).
- Spawner: LocalProcessSpawner (JupyterHub's default, named here). Each user's
  server runs as that user's Linux account, so the operating system keeps
  students apart: homes are 0700, hand-ins are readable by their student and the
  grader only (hub/exchange.py). It runs the course's venv (jupyterhub-singleuser
  from .venv), opening JupyterLab with nbgrader's Assignments tab.
- Formgrader: a JupyterHub-managed service named after the course (nbgrader's
  layout for a hub), running as the roster's grader account, in the grader's
  course folder. Instructors (group formgrade-<course>) may use it; students
  may not. Its nbgrader config is the course's, so Autograde runs the course's
  sandboxed engine; as that account is not root, the sandbox is bubblewrap in
  an unprivileged user namespace, still without network, other users' files or
  the grader's environment.
- LTI 1.3 (when `make hub` got an LTI configuration, docs/lti.md): people sign in
  from the LMS through jupyterhub-ltiauthenticator (hub/lti.py) instead of PAM.
  The login id (else the LMS user id) gives the hub user name and its Linux account
  (made at the first launch); the LMS role gives the group (instructors and TAs:
  Formgrader's, learners: the students') and the hub's admin flag (instructors only),
  set at every launch. The hub's own login stays as it was without one.
- One origin (the default): the hub at /hub/, each user's server at /user/<name>/ and
  Formgrader at /services/<course>/, all on one host name, so one certificate serves the
  class. Each server's cookie is scoped to its own path and each server's token to its own
  server; what that keeps apart, and what it does not: docs/security.md. HUB_SUBDOMAINS=1
  gives every user's server and the service their own origin (<name>.localhost) instead,
  with a wildcard DNS name and certificate.
- Formgrader in a frame: JupyterHub forbids framing every server's pages; the Formgrader
  service alone allows framing by its own origin (hub/config/grader), which JupyterLab needs
  to show Formgrader.
"""

import json
import os
import sys

c = get_config()  # noqa: F821 (provided by traitlets when it loads this file)
with open(os.environ["HUB_CLASS_FILE"], encoding="utf-8") as file:
    course = json.load(file)
port, state, course_id = course["port"], course["state"], course["course_id"]
venv_bin, hub = course["venv_bin"], course["hub"]

lti = course.get("lti")
# The proxy serves everything on 127.0.0.1:port; browsers use http://localhost:port, or the
# hub's public address behind a TLS proxy (hub/nginx.conf.template; with LTI, tool_url).
c.JupyterHub.bind_url = f"http://{course['bind']}:{port}"
public_url = lti["tool_url"].rstrip("/") if lti else course["public_url"]
if course["subdomains"]:  # HUB_SUBDOMAINS=1: <name>.hub.example.org, a wildcard name and certificate
    c.JupyterHub.subdomain_host = public_url  # the public URL too
else:
    # Behind nginx and JupyterHub's own proxy the hub cannot see that browsers use https (the
    # proxy's X-Forwarded-Proto comes last): the public URL says so, and makes its cookies Secure.
    c.JupyterHub.public_url = public_url + "/"
c.JupyterHub.hub_bind_url = f"http://127.0.0.1:{course['hub_api_port']}"
c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{course['proxy_api_port']}"
c.ConfigurableHTTPProxy.command = [course["proxy"]]
c.ConfigurableHTTPProxy.pid_file = os.path.join(state, "proxy.pid")
c.JupyterHub.db_url = "sqlite:///" + os.path.join(state, "jupyterhub.sqlite")
c.JupyterHub.cookie_secret_file = os.path.join(state, "jupyterhub_cookie_secret")
# Stopping the hub stops every server and service it started.
c.JupyterHub.cleanup_servers = True
c.JupyterHub.cleanup_proxy = True

if lti:
    sys.path.insert(0, hub)  # hub/lti.py
    c.JupyterHub.authenticator_class = "lti.CourseLTIAuthenticator"
    c.LTI13Authenticator.issuer = lti["issuer"]
    c.LTI13Authenticator.client_id = {lti["client_id"]}
    c.LTI13Authenticator.authorize_url = lti["login_url"]
    c.LTI13Authenticator.jwks_endpoint = lti["jwks_url"]
    c.CourseLTIAuthenticator.deployment_ids = set(lti["deployment_ids"])
    c.CourseLTIAuthenticator.store_path = lti["store"]
    c.CourseLTIAuthenticator.key_path = lti["key"]
    c.CourseLTIAuthenticator.username_claim = lti.get("username_claim", "login_id")
    c.CourseLTIAuthenticator.gradebook_url = course["gradebook"]
    c.CourseLTIAuthenticator.known_names = [
        course["grader"],
        *course["students"],
        *course["instructors"],
        *course["tas"],
    ]
    c.CourseLTIAuthenticator.groups = {
        "instructor": [f"formgrade-{course_id}", f"instructors-{course_id}"],
        "ta": [f"formgrade-{course_id}"],
        "student": [f"nbgrader-{course_id}"],
    }
    # Who may sign in is the LMS's decision: only its signed launches get here.
    c.Authenticator.allow_all = True
    c.Authenticator.manage_groups = True
else:
    c.JupyterHub.authenticator_class = "pam"
    c.Authenticator.allowed_users = set(course["students"] + course["instructors"] + course["tas"])
    # Members added later (python hub/members.py add) are users in the hub's database: let them in.
    c.Authenticator.allow_existing_users = True
# Instructors run the hub (its admin page: servers, users); TAs only grade in Formgrader.
c.Authenticator.admin_users = set(course["instructors"])

# JupyterHub's local spawner, with its own mem_limit and cpu_limit enforced per user (hub/limits.py).
sys.path.insert(0, hub)
c.JupyterHub.spawner_class = "limits.LimitedSpawner"
c.Spawner.mem_limit = course["mem_limit"] or None
c.Spawner.cpu_limit = course["cpu_limit"] or None
c.Spawner.cmd = [os.path.join(venv_bin, "jupyterhub-singleuser")]
c.Spawner.default_url = "/lab"
# A kernel and torch take a while on a busy machine.
c.Spawner.start_timeout = 120
c.Spawner.http_timeout = 120
c.Spawner.environment = {
    "PATH": f"{venv_bin}:/usr/local/bin:/usr/bin:/bin",
    "JUPYTER_CONFIG_PATH": os.path.join(hub, "config", "users"),
    "PYTHONPATH": hub,  # hub/exchange.py, the students' private hand-ins
    "COURSE_ID": course_id,
    "COURSE_EXCHANGE": course["exchange"],
}

instructors_group = f"formgrade-{course_id}"  # instructors and TAs: Formgrader
managers_group = f"instructors-{course_id}"  # instructors only: Formgrader's release, collect, autograde
if not lti:  # with LTI the authenticator sets each user's group at every launch
    c.JupyterHub.load_groups = {
        instructors_group: {"users": course["instructors"] + course["tas"]},
        managers_group: {"users": course["instructors"]},
        f"nbgrader-{course_id}": {"users": course["students"]},
    }
# Formgrader is one service, as the grader account, for instructors and TAs alike; what only an
# instructor may do there (create, release, collect, autograde) asks for this scope, which the
# service's OAuth tokens carry for instructors only (hub/config/grader/jupyter_server_config.py).
MANAGE = "custom:formgrader:manage"
c.JupyterHub.custom_scopes = {MANAGE: {"description": f"create, release, collect and autograde {course_id}"}}
c.JupyterHub.load_roles = [
    {
        "name": "course-instructor",
        "description": f"grade {course_id} in its Formgrader service",
        "groups": [instructors_group],
        "scopes": [f"access:services!service={course_id}"],
    },
    {
        "name": "course-manager",
        "description": f"release, collect and autograde {course_id} in Formgrader",
        "groups": [managers_group],
        "scopes": [MANAGE],
    },
]
c.JupyterHub.load_roles += [
    # JupyterHub's idle culler stops a server nobody used for HUB_IDLE_TIMEOUT seconds.
    {
        "name": "idle-culler",
        "services": ["idle-culler"],
        "scopes": ["list:users", "read:users:activity", "read:servers", "delete:servers"],
    },
    # `python hub/members.py add` adds a member to the running hub with this service's token.
    {"name": "course-members", "services": ["course-members"], "scopes": ["admin:users", "admin:groups"]},
]
c.JupyterHub.services = [
    {
        "name": "idle-culler",
        "command": [sys.executable, "-m", "jupyterhub_idle_culler", f"--timeout={course['idle_timeout']}"],
    },
    {"name": "course-members", "api_token": course["members_token"]},
    {
        "name": course_id,
        "url": f"http://127.0.0.1:{course['service_port']}",
        "user": course["grader"],
        "cwd": course["course"],
        "command": [os.path.join(venv_bin, "jupyterhub-singleuser"), f"--ServerApp.root_dir={course['course']}"],
        "environment": {
            "PATH": f"{venv_bin}:/usr/local/bin:/usr/bin:/bin",
            "JUPYTER_CONFIG_PATH": os.path.join(hub, "config", "grader"),
        },
        "oauth_no_confirm": True,
        "oauth_client_allowed_scopes": [MANAGE],  # in an instructor's token, not in a TA's
    },
]
