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
