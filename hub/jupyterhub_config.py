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
- Subdomains: every user's server and the service get their own origin
  (<name>.localhost); the hub is at localhost. Only then may the Formgrader
  service allow framing by its own pages (hub/config/grader), which JupyterLab
  needs to show Formgrader, without letting one user's pages frame another's.
"""
import json
import os

c = get_config()  # noqa: F821 (provided by traitlets when it loads this file)
with open(os.environ["HUB_CLASS_FILE"], encoding="utf-8") as file:
    course = json.load(file)
port, state, course_id = course["port"], course["state"], course["course_id"]
venv_bin, hub = course["venv_bin"], course["hub"]

# The proxy serves everything on 127.0.0.1:port; browsers use http://localhost:port.
c.JupyterHub.bind_url = f"http://127.0.0.1:{port}"
c.JupyterHub.subdomain_host = f"http://localhost:{port}"
c.JupyterHub.hub_bind_url = f"http://127.0.0.1:{course['hub_api_port']}"
c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{course['proxy_api_port']}"
c.ConfigurableHTTPProxy.command = [course["proxy"]]
c.ConfigurableHTTPProxy.pid_file = os.path.join(state, "proxy.pid")
c.JupyterHub.db_url = "sqlite:///" + os.path.join(state, "jupyterhub.sqlite")
c.JupyterHub.cookie_secret_file = os.path.join(state, "jupyterhub_cookie_secret")
# Stopping the hub stops every server and service it started.
c.JupyterHub.cleanup_servers = True
c.JupyterHub.cleanup_proxy = True

c.JupyterHub.authenticator_class = "pam"
c.Authenticator.allowed_users = set(course["students"] + course["instructors"])

c.JupyterHub.spawner_class = "localprocess"
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

instructors_group = f"formgrade-{course_id}"
c.JupyterHub.load_groups = {
    instructors_group: {"users": course["instructors"]},
    f"nbgrader-{course_id}": {"users": course["students"]},
}
c.JupyterHub.load_roles = [{
    "name": "course-instructor",
    "description": f"grade {course_id} in its Formgrader service",
    "groups": [instructors_group],
    "scopes": [f"access:services!service={course_id}"],
}]
c.JupyterHub.services = [{
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
}]
