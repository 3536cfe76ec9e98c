"""End to end through nbgrader's own autograder: the standard submissions of
each exercise (correct, blank, one item wrong) get exactly their scores."""

import nbformat
import pytest
import submissions

from conftest import ASSIGNMENTS
from tools import course

pytestmark = [pytest.mark.integration, pytest.mark.sandbox]


def check_autograde(tmp_path, assignment):
    from nbgrader.api import Gradebook

    course_api = course.temporary_course(tmp_path, [assignment])
    course.generate(course_api, assignment)
    kit = submissions.standard(assignment)
    for handed_in in kit:
        folder = tmp_path / "submitted" / handed_in.student / assignment
        folder.mkdir(parents=True)
        nbformat.write(handed_in.notebook, folder / f"{assignment}.ipynb")
        result = course_api.autograde(assignment, handed_in.student)
        assert result["success"], result.get("log", "") + result.get("error", "")

    with Gradebook(course.load_config(tmp_path).CourseDirectory.db_url) as gradebook:
        assert gradebook.find_submission(assignment, "correct").max_code_score == submissions.full_score(assignment)
        for handed_in in kit:
            assert gradebook.find_submission(assignment, handed_in.student).code_score == handed_in.score, (
                handed_in.student
            )
            for test_id in submissions.points(assignment):
                grade = gradebook.find_grade(test_id, assignment, assignment, handed_in.student)
                assert (grade.score == 0) == (test_id in handed_in.failed), (handed_in.student, test_id)


# One test class per lesson: pytest-xdist (--dist loadscope) hands classes to
# different workers, so the lessons are graded side by side.
for _assignment in ASSIGNMENTS:

    def _test(self, tmp_path, assignment=_assignment):
        check_autograde(tmp_path, assignment)

    _name = f"TestAutograde_{_assignment}"
    globals()[_name] = type(_name, (), {"test_standard_submissions_get_their_scores": _test})
