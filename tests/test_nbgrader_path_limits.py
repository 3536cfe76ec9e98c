"""The nbgrader path (see test_nbgrader_path.py; the run and its checks: nbgrader_path_cases.py)
on the cases that wait on a limit: loops stopped at a time limit, an ignored interrupt, memory,
process and output limits, kernels that die. One `nbgrader autograde` run of its own, so that
pytest-xdist grades it beside the other half."""

import pytest
from nbgrader_path_cases import LIMIT_KINDS, autograde_cases, check_nothing_dropped, check_rows

pytestmark = [pytest.mark.integration, pytest.mark.sandbox]


@pytest.fixture(scope="module")
def limits_graded(tmp_path_factory):
    return autograde_cases(tmp_path_factory, LIMIT_KINDS)


@pytest.mark.parametrize("kind", LIMIT_KINDS)
def test_nbgrader_autograde_gives_the_graders_rows_at_the_limits(limits_graded, kind):
    check_rows(limits_graded, kind)


def test_no_dead_or_killed_kernel_drops_a_submission(limits_graded):
    check_nothing_dropped(limits_graded)
