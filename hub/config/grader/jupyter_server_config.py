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
from nbgrader.server_extensions.formgrader import apihandlers  # noqa: E402
from tornado import web  # noqa: E402

MANAGE = "custom:formgrader:manage"
INSTRUCTORS_ONLY = {
    apihandlers.AssignmentHandler: "put",  # create or change an assignment
    apihandlers.AssignHandler: "post",  # generate the student version
    apihandlers.ReleaseHandler: "post",
    apihandlers.UnReleaseHandler: "post",
    apihandlers.CollectHandler: "post",
    apihandlers.AutogradeHandler: "post",
}


def instructors_only(method):
    def guarded(self, *args, **kwargs):
        hub_user = getattr(self.current_user, "hub_user", None) or {}
        if MANAGE not in (hub_user.get("scopes") or []):
            raise web.HTTPError(
                403, reason="Only an instructor may create, release, collect or autograde; a TA grades by hand"
            )
        return method(self, *args, **kwargs)

    guarded.instructors_only = True  # type: ignore[attr-defined]
    return guarded


for handler, name in INSTRUCTORS_ONLY.items():
    if not getattr(getattr(handler, name), "instructors_only", False):  # the file may be loaded twice
        setattr(handler, name, instructors_only(getattr(handler, name)))
