"""Isolation: what a grading kernel is and sees. The bubblewrap sandbox (sandbox.py) built from
one declaration (spec.py), the same sandbox entered by a forked kernel (fork.py), the uids that
run students' kernels (uids.py), a kernel's processes (processes.py) and the Linux calls that the
standard library does not wrap (linux.py). The lowest package: it imports no other."""
