"""Learning management systems: the LTI 1.3 tool's parts shared with the hub (lti_tool.py), the
gradebook push (push.py; `python -m grader lms push`) and Canvas's own files (canvas.py)."""
