"""The loop every grading path runs (grader/grading/parallel.py), with the executors it really gets:
the fork server's worker processes, one worker alone, and the inline one for a single job."""

import functools
import os

import parallel_tasks
import pytest

from grader.grading import grade, parallel

pytestmark = pytest.mark.integration

ITEMS = list(range(8))


@pytest.fixture(scope="module")
def context():
    return parallel.worker_context(grade.WORKER_PRELOAD)


def outcomes(executor, call, fresh=None):
    return {item: (value, reason) for item, value, reason in parallel.run_each(executor, call, ITEMS, fresh)}


@pytest.mark.parametrize("jobs", [1, 2])
def test_every_item_comes_back_once_with_its_value(context, jobs):
    got = outcomes(parallel.local_executor(jobs, context), parallel_tasks.square)
    assert got == {item: (item * item, "") for item in ITEMS}


def test_a_raising_task_and_a_dying_worker_cost_only_their_own_items(context):
    got = outcomes(parallel.local_executor(2, context), parallel_tasks.square_or_fail, parallel.one_worker(context))
    assert got.pop(3) == (None, "ValueError: three is not welcome")
    assert got.pop(5) == (None, parallel.WORKER_DIED)
    # Every other item, those in the pool when its worker died included, has its value.
    assert got == {item: (item * item, "") for item in ITEMS if item not in (3, 5)}


def test_without_a_fresh_worker_the_items_of_a_broken_pool_fail_with_the_reason(context):
    got = outcomes(parallel.local_executor(2, context), parallel_tasks.square_or_fail)
    assert got[5] == (None, parallel.WORKER_DIED)
    assert all(value == item * item for item, (value, _) in got.items() if item not in (3, 5) and value is not None)


def test_closing_early_cancels_what_has_not_started(context, tmp_path):
    call = functools.partial(parallel_tasks.touch_then_square, str(tmp_path))
    each = parallel.run_each(parallel.local_executor(2, context), call, ITEMS)
    first = next(each)
    each.close()
    assert first[1] == first[0] ** 2
    ran = len(os.listdir(tmp_path))
    # The two running and the pool's few queued ones finish; the rest never start.
    assert ran < len(ITEMS), ran
