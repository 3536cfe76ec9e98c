"""`lms push` from the Formgrader service, for instructors and TAs alike, without root.

The course's Formgrader service is a Jupyter server running as the grader account (it owns the
course, its gradebook and the hub's LTI folder, HUB_STATE/lti). This server extension adds one
endpoint to it:

    POST /services/<course>/lms/push   {"assignment": "01_blocks[=LINE_ITEM]", "dry_run": bool, "force": bool}

which runs `python -m grader lms push` as that account in the course folder and answers
{"status": its exit status, "output": what it printed}. Who may call it is who may open
Formgrader (the hub's `access:services!service=<course>` scope: instructors and TAs); sending
grades to the LMS is a TA's task as much as releasing feedback. A browser session needs the
service's `_xsrf` cookie in an X-XSRFToken header, a hub API token does not
(docs/lti.md). Loaded by hub/config/grader/jupyter_server_config.py.
"""

from __future__ import annotations

import asyncio
import json
import sys

from jupyter_server.base.handlers import APIHandler
from jupyter_server.utils import url_path_join
from tornado import web

# An assignment as nbgrader names it, with an optional "=line item" (a label may hold spaces).
MAX_ARGUMENT = 300


class PushHandler(APIHandler):
    @web.authenticated
    async def post(self):
        body = self.get_json_body() or {}
        assignment = body.get("assignment")
        if not isinstance(assignment, str) or not assignment.strip() or assignment.startswith("-"):
            raise web.HTTPError(400, reason='give {"assignment": "ASSIGNMENT[=LINE_ITEM]"}')
        if len(assignment) > MAX_ARGUMENT or "\n" in assignment or "\0" in assignment:
            raise web.HTTPError(400, reason="the assignment's name is too long or holds a line break")
        root = self.contents_manager.root_dir
        argv = [sys.executable, "-m", "grader", "lms", "push", assignment, "--root", root]
        argv += ["--dry-run"] * bool(body.get("dry_run")) + ["--force"] * bool(body.get("force"))
        process = await asyncio.create_subprocess_exec(
            *argv, cwd=root, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
        )
        output, _ = await process.communicate()
        who = getattr(self.current_user, "username", "?")
        self.log.info("lms push %s by %s: exit status %s", assignment, who, process.returncode)
        self.finish(json.dumps({"status": process.returncode, "output": output.decode(errors="replace")}))


def _load_jupyter_server_extension(server_app) -> None:
    base = server_app.web_app.settings["base_url"]
    server_app.web_app.add_handlers(".*$", [(url_path_join(base, "lms", "push"), PushHandler)])
