"""nbgrader validate, as a student's Validate button runs it: the solution passes
every graded test and the untouched exercise fails every one."""
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


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_every_graded_test_fails_on_the_untouched_exercise(assignment):
    result = _validator(invert=True).validate(str(ROOT / "exercises" / assignment / f"{assignment}.ipynb"))
    assert result == {}, f"tests that pass on the blank exercise: {result}"
