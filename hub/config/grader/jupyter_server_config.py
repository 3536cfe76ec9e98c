"""Jupyter settings of the course's Formgrader service (the grader account's server).

JupyterHub (>= 4.1) tells every server it starts to forbid framing of its pages
(Content-Security-Policy: frame-ancestors 'none'), because on one shared origin
a page of one user could otherwise frame and drive another user's server.
JupyterLab shows Formgrader in a frame, so that header leaves it blank
(nbgrader #1870).
This service alone allows frames from its own origin ('self'), so its own
JupyterLab can show Formgrader. With subdomains (HUB_SUBDOMAINS=1) that origin
is the service's alone; on one origin (the default) it is the hub's, whose own
pages and every user's server still forbid framing. What one origin shares
and what it keeps apart: docs/security.md.
"""

c = get_config()  # noqa: F821 (provided by traitlets when it loads this file)
c.ServerApp.tornado_settings = {"headers": {"Content-Security-Policy": "frame-ancestors 'self'"}}
# Formgrader's grading views render students' notebooks with nbconvert, which keeps their markdown's
# raw HTML and their outputs' scripts (<script>, onerror=, application/javascript): on one origin
# those would run as the instructor, on the hub too. nbconvert's SanitizeHTML escapes them (and the
# feedback Formgrader generates); the price: a '<' in a written answer's math shows as '&lt;'.
c.HTMLExporter.preprocessors = ["nbconvert.preprocessors.sanitize.SanitizeHTML"]

# Formgrader serves instructors and TAs alike, as the grader account; it tells them apart by the
# scope the hub puts in an instructor's token only (custom:formgrader:manage, hub/jupyterhub_config.py).
# A TA grades by hand, comments and generates and releases feedback; creating an assignment,
# releasing, collecting and autograding answer 403 with the reason (Formgrader shows its error dialog).
# The service is a whole Jupyter server running as the grader account: a kernel or a terminal there
# runs anything the grader account may (nbgrader autograde, an edit of the course's config), and so
# does a file written through the contents API. Those are an instructor's too; a TA gets 403.
import functools  # noqa: E402

from jupyter_server.services.contents.handlers import ContentsHandler, ModifyCheckpointsHandler  # noqa: E402
from jupyter_server.services.kernels.handlers import KernelActionHandler, KernelHandler, MainKernelHandler  # noqa: E402
from jupyter_server.services.kernels.websocket import KernelWebsocketHandler  # noqa: E402
from jupyter_server.services.sessions.handlers import SessionHandler, SessionRootHandler  # noqa: E402
from jupyter_server_terminals.api_handlers import TerminalHandler, TerminalRootHandler  # noqa: E402
from jupyter_server_terminals.handlers import TermSocket  # noqa: E402
from nbgrader.server_extensions.formgrader import apihandlers  # noqa: E402
from tornado import web  # noqa: E402

MANAGE = "custom:formgrader:manage"
COURSE_STEPS = "Only an instructor may create, release, collect or autograde; a TA grades by hand"
GRADER_ACCOUNT = "Only an instructor may run code or change files as the grader account; a TA grades by hand"
INSTRUCTORS_ONLY = {
    apihandlers.AssignmentHandler: ("put", COURSE_STEPS),  # create or change an assignment
    apihandlers.AssignHandler: ("post", COURSE_STEPS),  # generate the student version
    apihandlers.ReleaseHandler: ("post", COURSE_STEPS),
    apihandlers.UnReleaseHandler: ("post", COURSE_STEPS),
    apihandlers.CollectHandler: ("post", COURSE_STEPS),
    apihandlers.AutogradeHandler: ("post", COURSE_STEPS),
    MainKernelHandler: ("post", GRADER_ACCOUNT),  # start a kernel
    KernelHandler: ("delete", GRADER_ACCOUNT),
    KernelActionHandler: ("post", GRADER_ACCOUNT),  # interrupt, restart
    KernelWebsocketHandler: ("get", GRADER_ACCOUNT),  # run code in a kernel an instructor started
    SessionRootHandler: ("post", GRADER_ACCOUNT),  # a notebook's kernel
    SessionHandler: ("patch", GRADER_ACCOUNT),
    TerminalRootHandler: ("post", GRADER_ACCOUNT),
    TerminalHandler: ("delete", GRADER_ACCOUNT),
    TermSocket: ("get", GRADER_ACCOUNT),
    ContentsHandler: ("put", GRADER_ACCOUNT),  # save, upload
    ModifyCheckpointsHandler: ("post", GRADER_ACCOUNT),  # restore a checkpoint
}
# Writes of the contents API besides PUT: new files and folders, renames, deletes.
EXTRA = [(ContentsHandler, "post"), (ContentsHandler, "patch"), (ContentsHandler, "delete")]


def instructors_only(method, reason):
    @functools.wraps(method)
    def guarded(self, *args, **kwargs):
        hub_user = getattr(self.current_user, "hub_user", None) or {}
        if MANAGE not in (hub_user.get("scopes") or []):
            raise web.HTTPError(403, reason=reason)
        return method(self, *args, **kwargs)

    # Signed in first (tornado's mark, which jupyter_server looks for on every endpoint), then an instructor.
    checked = web.authenticated(guarded)
    checked.instructors_only = True  # type: ignore[attr-defined]
    return checked


for handler, name, reason in [(h, n, r) for h, (n, r) in INSTRUCTORS_ONLY.items()] + [
    (h, n, GRADER_ACCOUNT) for h, n in EXTRA
]:
    if not getattr(getattr(handler, name), "instructors_only", False):  # the file may be loaded twice
        setattr(handler, name, instructors_only(getattr(handler, name), reason))

# `lms push` for instructors and TAs, as the grader account (hub/lms_service.py, docs/lti.md).
import os  # noqa: E402
import sys  # noqa: E402

# Appended, not first: hub/'s modules (serve, lti, limits, ...) never shadow an installed one.
sys.path.append(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
c.ServerApp.jpserver_extensions.update({"lms_service": True})
