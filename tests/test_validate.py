"""nbgrader validate, as a student's Validate button runs it: each solution
passes every graded test. (That every graded test fails on the untouched
exercise is checked in-process in test_exercises.py, and through the Validate
button itself in test_browser.py.)"""
import pytest

from conftest import ASSIGNMENTS, ROOT
from tools import course


def _validator(invert: bool):
    from nbgrader.validator import Validator

    config = course.load_config()
    config.Validator.invert = invert
    return Validator(config=config)


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_nbgrader_validate_passes_the_solution(assignment):
    result = _validator(invert=False).validate(str(ROOT / "solutions" / assignment / f"{assignment}.ipynb"))
    assert result == {}, result
