"""Tasks for tests/test_parallel.py, in a module of their own: a worker process of the fork
server imports them by name."""

import os
import time
from pathlib import Path


def square(item: int) -> int:
    time.sleep(0.05)  # long enough that tasks overlap in the pool
    return item * item


def square_or_fail(item: int) -> int:
    """Raises for 3, kills its own worker process for 5 (as the out-of-memory killer would)."""
    if item == 3:
        raise ValueError("three is not welcome")
    if item == 5:
        os._exit(9)
    return square(item)


def touch_then_square(folder: str, item: int) -> int:
    """Leaves a file per task that ran, so a test can count them."""
    Path(folder, str(item)).touch()
    time.sleep(0.2)
    return item * item
