"""The processes of one grading kernel, found without reading every process of the machine.

After every code cell the grader finds the kernel's process and what the cell left running
below it. psutil's `children()` builds a map of the whole machine for that (it reads the stat
file of every process), so its cost grows with everything else the machine runs: on a class
hub, every student's server and kernel. These helpers read only the kernel's own subtree from
Linux's /proc/PID/task/TID/children files, and fall back to psutil where those are missing.
"""

from __future__ import annotations

import os

import psutil


def running(process: psutil.Process) -> bool:
    """Whether a process still runs: neither gone nor a zombie."""
    try:
        return process.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _children_files(pid: int) -> bool:
    return os.path.exists(f"/proc/{pid}/task/{pid}/children")


def _child_pids(pid: int) -> list[int]:
    """The pids of a process's children (of all its threads), read from /proc."""
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []  # gone meanwhile
    found = []
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/children") as handle:
                found += [int(child) for child in handle.read().split()]
        except OSError:
            continue
    return found


def descendants(process: psutil.Process) -> list[psutil.Process]:
    """Every process below `process`, parents before their children."""
    if not _children_files(process.pid):
        return process.children(recursive=True)
    found, todo = [], [process.pid]
    while todo:
        pid = todo.pop(0)
        for child in _child_pids(pid):
            todo.append(child)
            try:
                found.append(psutil.Process(child))
            except psutil.Error:
                pass
    return found


def first_python(pid: int) -> psutil.Process | None:
    """The process `pid` or the first one below it whose program is a Python interpreter
    (parents first), or None; the subtree is read only where `pid` is not one."""
    try:
        top = psutil.Process(pid)
    except psutil.Error:
        return None
    if _is_python(top):
        return top
    return next((process for process in descendants(top) if _is_python(process)), None)


def _is_python(process: psutil.Process) -> bool:
    try:
        command = process.cmdline()
    except psutil.Error:
        return False
    return bool(command) and os.path.basename(command[0]).startswith("python")
