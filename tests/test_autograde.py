"""End to end through nbgrader's own autograder: a correct, a blank and a
partly wrong submission of each exercise get exactly the expected scores."""
import nbformat

import submissions
from conftest import ASSIGNMENTS
from tools import course


def check_autograde(tmp_path, assignment):
    from nbgrader.api import Gradebook

    course_api = course.temporary_course(tmp_path, [assignment])
    course.generate(course_api, assignment)
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


# One test class per lesson: pytest-xdist (--dist loadscope) hands classes to
# different workers, so the lessons are graded side by side.
for _assignment in ASSIGNMENTS:
    def _test(self, tmp_path, assignment=_assignment):
        check_autograde(tmp_path, assignment)

    _name = f"TestAutograde_{_assignment}"
    globals()[_name] = type(_name, (), {"test_correct_blank_and_one_item_wrong": _test})
