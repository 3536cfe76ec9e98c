"""End to end through nbgrader's own autograder: a correct, a blank and a
partly wrong submission of each exercise get exactly the expected scores."""
import nbformat
import pytest

import submissions
from conftest import ASSIGNMENTS
from tools import course


@pytest.fixture(scope="module")
def scratch_course(tmp_path_factory):
    """One scratch course for every lesson: the gradebook is created once."""
    root = tmp_path_factory.mktemp("course")
    course_api = course.temporary_course(root)
    for assignment in ASSIGNMENTS:
        course.generate(course_api, assignment)
    return root, course_api


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_autograde_correct_blank_and_one_item_wrong(scratch_course, assignment):
    from nbgrader.api import Gradebook

    tmp_path, course_api = scratch_course
    wrong = submissions.first_wrong(assignment)
    handed_in = {
        "correct": submissions.answered(assignment),
        "blank": submissions.exercise(assignment),
        "one_wrong": submissions.answered(assignment, {wrong.answer_id: wrong.code}),
    }
    for student, nb in handed_in.items():
        folder = tmp_path / "submitted" / student / assignment
        folder.mkdir(parents=True)
        nbformat.write(nb, folder / f"{assignment}.ipynb")
        result = course_api.autograde(assignment, student)
        assert result["success"], result.get("log", "") + result.get("error", "")

    points = submissions.points(assignment)
    total = sum(points.values())
    with Gradebook(course.load_config(tmp_path).CourseDirectory.db_url) as gradebook:
        def score(student, grade_id=None):
            if grade_id is None:
                return gradebook.find_submission(assignment, student).code_score
            return gradebook.find_grade(grade_id, assignment, assignment, student).score

        assert gradebook.find_submission(assignment, "correct").max_code_score == total
        assert score("correct") == total
        assert score("blank") == 0
        assert score("one_wrong") == total - points[wrong.fails]
        assert score("one_wrong", wrong.fails) == 0
