"""Stray processes, one part of GuardedExecute (execute/guarded.py).

Every process a cell started is stopped when the cell ends (the kernel itself lives on): a fork
bomb's copies of the kernel would otherwise hold the process quota and break later cells at
random, so a regrade could give another score. A plain os.fork() in a cell copies the whole
kernel, sockets included, and the copies would answer the grader's requests too: `FORK_GUARD`,
one of the lines every grading kernel runs at start (execute/kernel_start.py), makes any copy that
finishes a cell exit before it can reply (multiprocessing children never get back to the kernel
loop, so they are unaffected). It is one line with default arguments, so that nothing is left in
the student's namespace. The kernel's processes are read from its own /proc subtree (isolation/processes.py).
"""

from __future__ import annotations

import time

import psutil

from grader.isolation import processes

FORK_GUARD = (
    "get_ipython().events.register('post_run_cell', "
    "lambda *_, _os=__import__('os'), _pid=__import__('os').getpid(): "
    "_os.getpid() == _pid or _os._exit(0))"
)


def stop_strays(kernel: psutil.Process) -> None:
    """Kill everything below the kernel process (the kernel itself lives on)."""
    try:
        strays = [p for p in processes.descendants(kernel) if processes.running(p)]
    except psutil.Error:
        return
    for stray in strays:
        try:
            stray.kill()
        except psutil.Error:
            pass
    # Killed is dead enough: a zombie waits for the kernel to reap it, which it may
    # never do (waiting for zombies to vanish cost 2 s in every later cell).
    deadline = time.monotonic() + 2
    while any(processes.running(p) for p in strays) and time.monotonic() < deadline:
        time.sleep(0.01)


def stop_strays_of(km) -> None:
    """stop_strays below the kernel of the kernel manager `km` (GuardedExecute, as each cell ends)."""
    kernel = km.kernel_process() if hasattr(km, "kernel_process") else None
    if kernel is not None:
        stop_strays(kernel)
