"""One loop for "grade each of these": a `concurrent.futures` executor runs a function on each
submission, and every submission comes back once, with its value or the reason it has none.

The executor is what differs between paths, never the loop: a pool of local worker processes
(`local_executor`: `ProcessPoolExecutor` from a fork server that imported the grader once), the
Dask client's executor (grading/cluster.py), or `InlineExecutor` for a single job (no worker to start).
No pool initializer: a worker builds what it needs on its first task (grading/grade.py), so a failure
there is that task's, reported like any other, instead of a pool that restarts workers forever.

A worker process that dies (killed by the machine's out-of-memory killer, say) breaks a local
pool and every task in it with `BrokenProcessPool`. Those tasks run again, each alone in a fresh
worker, so a second death belongs to the task that caused it: that submission gets `WORKER_DIED`
and the rest are graded. (Dask retries a task whose worker died by itself, on another worker.)
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.forkserver
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import BrokenExecutor, Executor, Future, ProcessPoolExecutor, as_completed
from typing import Any, TypeVar

Item = TypeVar("Item")
WORKER_DIED = "the grading worker process died while grading it (twice, the second time alone)"


class InlineExecutor(Executor):
    """Runs each task at once, in this process: one job needs no worker process."""

    def submit(self, fn, /, *args, **kwargs) -> Future:
        future: Future = Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except Exception as error:  # the task's failure, as a worker's would come back
            future.set_exception(error)
        return future


def worker_context(preload: list[str]):
    """Workers come from a fork server that imported `preload` once (a spawned worker imports
    it again; a fork of this process could inherit its threads and event loops half-way)."""
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(preload)
    return context


def start_fork_server(context) -> None:
    """Begin starting the fork server now, so it imports while the caller does other work."""
    if context.get_start_method() == "forkserver":
        multiprocessing.forkserver.ensure_running()


def local_executor(jobs: int, context) -> Executor:
    return InlineExecutor() if jobs == 1 else ProcessPoolExecutor(jobs, mp_context=context)


def one_worker(context) -> Callable[[], Executor]:
    """A maker of executors that each start one fresh worker process."""
    return lambda: ProcessPoolExecutor(1, mp_context=context)


def _shutdown(executor: Executor, finished: bool) -> None:
    if finished:
        executor.shutdown(wait=True)
        return
    try:  # stopped early: what has not started never will
        executor.shutdown(wait=True, cancel_futures=True)
    except TypeError:  # Dask's executor: not waiting cancels what still runs
        executor.shutdown(wait=False)


def _round(executor: Executor, call: Callable[[Item], Any], items: list[Item], broken: list[Item] | None):
    finished = False
    try:
        futures = {executor.submit(call, item): item for item in items}
        for future in as_completed(futures):
            item = futures[future]
            try:
                value = future.result()
            except BrokenExecutor:
                if broken is not None:
                    broken.append(item)
                else:
                    yield item, None, WORKER_DIED
                continue
            except Exception as error:  # the task raised: this submission's reason, not the run's end
                yield item, None, f"{type(error).__name__}: {error}"
                continue
            yield item, value, ""
        finished = True
    finally:
        _shutdown(executor, finished)


def run_each(
    executor: Executor,
    call: Callable[[Item], Any],
    items: Iterable[Item],
    fresh_worker: Callable[[], Executor] | None = None,
) -> Iterator[tuple[Item, Any, str]]:
    """(item, call(item), "") for each item, or (item, None, reason) where it raised or its worker
    died, in the order they finish. Closing the iterator early cancels what has not started.
    Tasks of a pool that broke run again, each alone in `fresh_worker()` (None: they fail)."""
    broken: list[Item] = []
    yield from _round(executor, call, list(items), broken if fresh_worker else None)
    for item in broken:
        yield from _round(fresh_worker(), call, [item], None)
