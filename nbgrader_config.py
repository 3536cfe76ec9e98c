"""nbgrader configuration for this course.

Found by the nbgrader CLI and by JupyterLab's formgrader because both start in
the repository root (`make lab`, `make exercises`, the tests); everything is
anchored to this file's folder so a different working directory cannot move it.
"""
import os

here = os.path.dirname(os.path.abspath(__file__))
c = get_config()  # noqa: F821 (provided by traitlets when it loads this file)

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
