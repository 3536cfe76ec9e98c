"""Jupyter settings of the course's Formgrader service (the grader account's server).

JupyterHub (>= 4.1) tells every server it starts to forbid framing of its pages
(Content-Security-Policy: frame-ancestors 'none'), because on one shared origin
a page of one user could otherwise frame and drive another user's server.
JupyterLab shows Formgrader in a frame, so that header leaves it blank
(nbgrader #1870). Here every user and service has its own origin
(JupyterHub.subdomain_host in hub/jupyterhub_config.py), so allowing frames
from the same origin ('self') lets only this service's own JupyterLab frame it.
"""

c = get_config()  # noqa: F821 (provided by traitlets when it loads this file)
c.ServerApp.tornado_settings = {"headers": {"Content-Security-Policy": "frame-ancestors 'self'"}}
