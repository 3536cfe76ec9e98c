"""nbgrader configuration for this course.

Found by the nbgrader CLI and by JupyterLab's formgrader because both start in
the repository root (`make lab`, `make exercises`, the tests); everything is
anchored to this file's folder so a different working directory cannot move it.
"""

import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
c = get_config()  # noqa: F821 (provided by traitlets when it loads this file)
# The grader package lives next to this file (and is also installed in .venv).
sys.path.insert(0, here)

c.CourseDirectory.course_id = "pytorch-building-blocks"
c.CourseDirectory.root = here
c.CourseDirectory.source_directory = "solutions"
c.CourseDirectory.release_directory = "exercises"
c.CourseDirectory.db_url = "sqlite:///" + os.path.join(here, "gradebook.db")

# A student cell that runs longer than this is stopped and graded as an error.
c.Execute.timeout = 60
c.ExecutePreprocessor.timeout = 60

# A student who deletes a graded cell gets it back (and its tests run) instead
# of a silent zero.
c.OverwriteCells.add_missing_cells = True

# Release/submit/fetch go through a folder inside the repository (git-ignored),
# so the assignment list works on a laptop without a system-wide exchange.
c.Exchange.root = os.path.join(here, ".exchange")
c.Exchange.path_includes_course = True

# Generated notebooks carry no stored outputs.
c.ClearOutput.enabled = True

# A student's `nbgrader validate` shows each test's hint whole (nbgrader cuts lines at 90
# characters) and none of the kernel's start-up warnings (grader/pipeline.py).
from grader.pipeline import student_validate  # noqa: E402

student_validate(c)

# Every autograde (the nbgrader CLI, Formgrader's Autograde button, `python -m
# grader grade`) runs the course's safe engine (grader/pipeline.py): unreadable
# or mangled submissions repaired or graded 0 with a reason instead of dropped,
# student code in a bubblewrap sandbox with a clean environment and time
# limits, kernel deaths graded. Without bubblewrap installed, autograde refuses
# to run student code. Only if you trust every submission, call
# use_safe_autograde(c, trusted=True) instead: then code runs UNSANDBOXED where
# bubblewrap is missing, with a warning for every notebook.
from grader.pipeline import use_safe_autograde  # noqa: E402

use_safe_autograde(c)
