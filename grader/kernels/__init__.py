"""Kernels forked from a warm template: the jupyter_client provisioner and installer
(template.py, the `course-kernel-template` entry point; `python -m grader.kernels.template`)
and the template process it talks to (template_server.py). Above isolation: a fork enters the
same sandbox."""
