"""Which unprivileged uid a grading process runs its students' kernels as, and what an earlier
holder of that uid left behind.

Each grading process (a grader or Dask worker, nbgrader autograde, Formgrader's server) holds a
uid of its own from CLAIMED_UIDS while it lives: process limits count every process of a uid,
so two sandboxes sharing one would share one quota (a fork bomb in one would stop kernels from
starting in the other). A slot is a lock file held with flock in a folder only the grading user
can write; the operating system frees it when its holder ends, however it ends.

A holder that is killed (out of memory, a Dask worker restarted, a client stopped with SIGKILL)
never runs its clean-up: its kernels' socket and scratch folders stay in the temporary folder,
owned by the uid it held. The next process to hold that uid removes them (claim_uid).
"""

from __future__ import annotations

import fcntl
import os
import shutil
import stat
import tempfile
from pathlib import Path

FIRST_UID = 64000  # one outside the claimed ones, for a sandbox that a test or make bench starts by hand
CLAIMED_UIDS = range(FIRST_UID + 1000, FIRST_UID + 2000)
ROOT_LOCKS = "/run/course-grader"  # root's lock folder (lock_folder)
# The folders a grading process makes for each kernel, in the temporary folder: the kernel's
# sockets and connection file (isolation/sandbox.py), and the folder the student's code runs in (execute/kernel_start.py).
SOCKETS_PREFIX = "grader-kernel-"
SCRATCH_PREFIX = "grader-scratch-"
_claimed: dict = {}


def lock_folder() -> str:
    """The folder where this machine's grading processes hold their slots: one only the grading
    user can write (root: /run/course-grader; others: their runtime or cache folder). Never the
    shared /tmp, where another user could make the lock files first (grading would wait forever)
    or make them symlinks (a write redirected)."""
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    candidates = [ROOT_LOCKS] if os.geteuid() == 0 else []
    candidates.append(os.path.join(runtime, "course-grader") if runtime else "")
    candidates.append(os.path.join(Path.home(), ".cache", "course-grader"))
    for folder in filter(None, candidates):
        try:
            os.makedirs(folder, mode=0o700, exist_ok=True)
        except OSError:
            continue
        if not is_private_folder(folder):
            raise RuntimeError(
                f"{folder} holds the grader's locks and must be a folder of this user's that no one else "
                "can write (mode 0700, not a symlink): remove it, or fix its owner and mode"
            )
        return folder
    raise RuntimeError(f"none of {', '.join(filter(None, candidates))} can be made: the grader needs one for its locks")


def is_private_folder(path: str) -> bool:
    """A folder (not a symlink) of this user's that no one else can enter or write (mode 0700)."""
    try:
        info = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.geteuid() and not info.st_mode & 0o077


def hold_slot(kind: str, count: int) -> int:
    """The first of `count` numbered slots of `kind` that no other live process on this machine
    holds; this process holds it until it ends (a lock file per slot, in lock_folder())."""
    if kind not in _claimed:
        folder = lock_folder()
        for slot in range(count):
            descriptor = os.open(
                os.path.join(folder, f"{kind}-{slot}.lock"), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600
            )
            try:
                fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(descriptor)
                continue
            os.set_inheritable(descriptor, False)
            _claimed[kind] = (slot, descriptor)
            break
        else:
            raise RuntimeError(f"more than {count} grading processes on this machine hold a {kind}")
    return _claimed[kind][0]


def claim_uid() -> int:
    """A sandbox uid that no other live grading process on this machine uses, held until this
    process ends. The first claim also removes what earlier holders of the uid left behind
    (only root switches to these uids: another user's kernels run as that user, and another
    user's slots are held in that user's own lock folder)."""
    first = "uid" not in _claimed
    uid = CLAIMED_UIDS[hold_slot("uid", len(CLAIMED_UIDS))]
    if first and os.geteuid() == 0:
        remove_leftovers(uid)
    return uid


def remove_leftovers(uid: int, folder: str | None = None) -> list[str]:
    """Remove the kernels' folders owned by `uid` from the temporary folder (or `folder`); the
    paths removed. Only for a uid this process holds: no live process can be using them then.
    Kernels make files of their own in these folders: rmtree removes links, never follows them."""
    folder = folder or tempfile.gettempdir()
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    removed = []
    for name in names:
        if not name.startswith((SOCKETS_PREFIX, SCRATCH_PREFIX)):
            continue
        path = os.path.join(folder, name)
        try:
            info = os.lstat(path)
        except OSError:
            continue
        if stat.S_ISDIR(info.st_mode) and info.st_uid == uid:
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed
