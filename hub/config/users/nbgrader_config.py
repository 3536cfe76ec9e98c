"""nbgrader settings of every hub user's own server (students and instructors):
the course and its shared exchange, with private hand-ins (hub/exchange.py).

hub/jupyterhub_config.py puts this folder on JUPYTER_CONFIG_PATH and hub/ on
PYTHONPATH, and names the exchange folder in COURSE_EXCHANGE.
"""

import os

c = get_config()  # noqa: F821 (provided by traitlets when it loads this file)
c.CourseDirectory.course_id = os.environ["COURSE_ID"]
c.Exchange.root = os.environ["COURSE_EXCHANGE"]
c.Exchange.path_includes_course = True
c.ExchangeFactory.submit = "exchange.PrivateSubmit"
# A student's `nbgrader validate` shows each test's hint whole (nbgrader cuts lines at 90
# characters) and none of the kernel's start-up warnings (grader/pipeline.py).
from grader.pipeline import student_validate  # noqa: E402

student_validate(c)
