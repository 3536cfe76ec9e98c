"""The sandbox of a kernel forked from the warm template, built by the fork itself: the other
translation of sandbox_spec's one spec (the normal start's is bwrap's command line,
`sandbox.bwrap_args`). Bubblewrap cannot wrap a process that exists already, so the template's
fork does what bwrap does, from the same spec: `plan` translates the spec into calls (pure, so a
test compares it with the spec field by field), `run` makes them.

Who makes which calls (kernels/template_server.py): the keeper enters the pid namespace before it forks
the sandbox's init (`Plan.keeper`); the init, pid 1 and still root, makes the other namespaces and
the filesystem (`Plan.init`); the kernel, forked by the init, takes its limits, drops every
capability and privilege, becomes the student and enters its folder (`Plan.kernel`), and starts
with the spec's environment (`Plan.env`).
"""

from __future__ import annotations

import dataclasses
import fcntl
import os
import platform
import resource
import socket
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

from grader.isolation import linux
from grader.isolation.spec import DEV_NODES, SandboxSpec

# The spec's namespaces as clone flags; the cgroup one where the system has it (--unshare-cgroup-try).
CLONE = {
    "net": linux.CLONE_NEWNET,
    "pid": linux.CLONE_NEWPID,
    "ipc": linux.CLONE_NEWIPC,
    "uts": linux.CLONE_NEWUTS,
    "cgroup": linux.CLONE_NEWCGROUP,
}
OPTIONAL_NAMESPACES = ("cgroup",)
RLIMITS = {"data": resource.RLIMIT_DATA, "nproc": resource.RLIMIT_NPROC, "fsize": resource.RLIMIT_FSIZE}
RLIMITS.update(nofile=resource.RLIMIT_NOFILE, core=resource.RLIMIT_CORE)
# What bwrap's --dev puts in /dev besides its device nodes (sandbox_spec.DEV_NODES).
DEVICE_LINKS = {"fd": "/proc/self/fd", "stdin": "/proc/self/fd/0", "stdout": "/proc/self/fd/1"}
DEVICE_LINKS.update(stderr="/proc/self/fd/2", ptmx="pts/ptmx", core="/proc/kcore")
# Parts of /proc a kernel may read but never change (what bwrap makes read-only there).
PROC_READ_ONLY = ("irq", "bus")


@dataclasses.dataclass(frozen=True)
class Plan:
    keeper: int  # namespaces the keeper enters before forking the init (pid: the init is pid 1)
    init: tuple[tuple, ...]  # the init's calls, as root: namespaces, filesystem, host name, network
    kernel: tuple[tuple, ...]  # the kernel's calls before it runs: limits, privileges, user, folder
    env: dict[str, str]  # the kernel's whole environment


def plan(spec: SandboxSpec, base: str) -> Plan:
    """What a fork does to put its kernel in `spec`'s sandbox (`base`: an empty folder of the
    template's, where the new root is put together)."""
    if spec.uid is None:
        raise ValueError("a forked kernel's sandbox needs a uid to switch to (the template runs as root)")
    shared = [name for name in spec.namespaces if name != "pid" and name not in OPTIONAL_NAMESPACES]
    init: list[tuple] = [("unshare", linux.CLONE_NEWNS | sum(CLONE[name] for name in shared))]
    init += [("unshare-try", CLONE[name]) for name in spec.namespaces if name in OPTIONAL_NAMESPACES]
    init += [("root", base, spec.mounts), ("hostname", spec.hostname)]
    if "net" in spec.namespaces:
        init.append(("loopback",))  # bwrap brings a new network namespace's loopback up
    kernel: list[tuple] = [("rlimit", RLIMITS[name], value) for name, value in spec.limits.items()]
    kernel += [("no-privileges",), ("user", spec.uid), ("chdir", spec.chdir)]
    keeper = CLONE["pid"] if "pid" in spec.namespaces else 0
    return Plan(keeper=keeper, init=tuple(init), kernel=tuple(kernel), env=dict(spec.env))


def run(calls: tuple[tuple, ...]) -> None:
    """Make `calls` (a Plan's init or kernel), in order."""
    for name, *args in calls:
        CALLS[name](*args)


# -- the calls --------------------------------------------------------------------------------------
def _unshare_try(flags: int) -> None:
    try:
        linux.unshare(flags)
    except OSError:
        pass


def _mount_flags(target: str) -> dict[str, int]:
    """Every mount at or below `target` with the flags it has now (bind remounts must keep them)."""
    found = {}
    # Read between the two pivots: the host's /proc is under /oldroot, paths relative to the new root.
    with open("/oldroot/proc/self/mountinfo", encoding="utf-8") as handle:
        for line in handle:
            fields = line.split()
            point = fields[4].replace("\\040", " ")
            if point == target or point.startswith(target.rstrip("/") + "/"):
                found[point] = sum(linux.MOUNT_FLAGS.get(option, 0) for option in fields[5].split(","))
    return found


def _bind(source: str, target: str, read_only: bool, devices: bool = False) -> None:
    if os.path.isdir(source):
        os.makedirs(target, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        open(target, "a").close()
    linux.mount(source, target, None, linux.MS_BIND | linux.MS_REC)
    extra = linux.MS_NOSUID | (0 if devices else linux.MS_NODEV) | (linux.MS_RDONLY if read_only else 0)
    for point, flags in _mount_flags(target).items():
        linux.mount(None, point, None, linux.MS_BIND | linux.MS_REMOUNT | flags | extra)


def _make_dev(target: str) -> None:
    os.makedirs(target, exist_ok=True)
    linux.mount("tmpfs", target, "tmpfs", linux.MS_NOSUID | linux.MS_NODEV, "mode=0755")
    for name in DEV_NODES:
        if os.path.exists(f"/oldroot/dev/{name}"):
            open(f"{target}/{name}", "a").close()
            linux.mount(f"/oldroot/dev/{name}", f"{target}/{name}", None, linux.MS_BIND | linux.MS_NOSUID)
    for name, points_to in DEVICE_LINKS.items():
        os.symlink(points_to, f"{target}/{name}")
    for name in ("shm", "pts"):
        os.mkdir(f"{target}/{name}", 0o755)
    try:
        linux.mount(
            "devpts", f"{target}/pts", "devpts", linux.MS_NOSUID | linux.MS_NOEXEC, "newinstance,ptmxmode=0666,mode=620"
        )
    except OSError:
        pass  # no pseudo-terminals: nothing a notebook needs


def _make_proc(target: str) -> None:
    os.makedirs(target, exist_ok=True)
    linux.mount("proc", target, "proc", linux.MS_NOSUID | linux.MS_NODEV | linux.MS_NOEXEC)
    for name in PROC_READ_ONLY:
        path = f"{target}/{name}"
        if os.path.exists(path):
            try:
                _bind(path, path, read_only=True)
            except OSError:
                pass


def _tmpfs(target: str, mode: int) -> None:
    os.makedirs(target, exist_ok=True)
    linux.mount("tmpfs", target, "tmpfs", linux.MS_NOSUID | linux.MS_NODEV, f"mode={mode:04o}")


def _folder(target: str, mode: int) -> None:
    os.makedirs(target, exist_ok=True)
    os.chmod(target, mode)


# Each filesystem step of the spec (sandbox_spec.MOUNT_KINDS), made under /newroot with the
# host's root at /oldroot: (the step's operands) -> what to do.
MOUNTERS: dict[str, Callable[..., Any]] = {
    "dev": lambda path: _make_dev("/newroot" + path),
    "proc": lambda path: _make_proc("/newroot" + path),
    "tmpfs": lambda path, mode: _tmpfs("/newroot" + path, mode),
    "dir": lambda path, mode: _folder("/newroot" + path, mode),
    "symlink": lambda target, path: os.symlink(target, "/newroot" + path),
    "ro-bind": lambda source, target: _bind("/oldroot" + source, "/newroot" + target, read_only=True),
    "bind": lambda source, target: _bind("/oldroot" + source, "/newroot" + target, read_only=False),
    "dev-bind": lambda source, target: _bind("/oldroot" + source, "/newroot" + target, False, devices=True),
}


def _build_root(base: str, mounts: tuple[tuple, ...]) -> None:
    """In a fresh mount namespace, make `mounts` the whole filesystem (as pid 1, root)."""
    linux.mount(None, "/", None, linux.MS_REC | linux.MS_PRIVATE)
    linux.mount("tmpfs", base, "tmpfs", linux.MS_NOSUID | linux.MS_NODEV, "mode=0755")
    os.mkdir(f"{base}/newroot", 0o755)
    linux.mount(f"{base}/newroot", f"{base}/newroot", None, linux.MS_BIND | linux.MS_REC)
    os.mkdir(f"{base}/oldroot", 0o755)
    if linux.SYS_PIVOT_ROOT is None:
        raise OSError(f"no pivot_root number known for {platform.machine()}")
    linux.check(linux.libc.syscall(linux.SYS_PIVOT_ROOT, base.encode(), f"{base}/oldroot".encode()), "pivot_root")
    os.chdir("/")
    for kind, *operands in mounts:
        if kind not in MOUNTERS:
            raise ValueError(f"unknown sandbox step {(kind, *operands)!r}")
        MOUNTERS[kind](*operands)
    linux.check(linux.libc.umount2(b"/oldroot", linux.MNT_DETACH), "umount oldroot")
    os.chdir("/newroot")
    linux.check(linux.libc.syscall(linux.SYS_PIVOT_ROOT, b".", b"."), "pivot_root")
    linux.check(linux.libc.umount2(b".", linux.MNT_DETACH), "umount old root")
    os.chdir("/")


def _loopback_up() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        flags = struct.unpack("16sH", fcntl.ioctl(sock, linux.SIOCGIFFLAGS, struct.pack("16sH", b"lo", 0)))[1]
        fcntl.ioctl(sock, linux.SIOCSIFFLAGS, struct.pack("16sH", b"lo", flags | linux.IFF_UP))


def _no_privileges() -> None:
    """No capabilities and no way back (what bwrap's --cap-drop and setpriv's --bounding-set do)."""
    linux.prctl(linux.PR_SET_NO_NEW_PRIVS, 1)
    last = int(Path("/proc/sys/kernel/cap_last_cap").read_text())
    for cap in range(last + 1):
        linux.prctl(linux.PR_CAPBSET_DROP, cap)


def _become(uid: int) -> None:
    """The user and group `uid`, no other groups (setpriv --reuid --regid --clear-groups)."""
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)
    # A fresh process started as this user is dumpable (its /proc/self is its own);
    # changing uid without exec clears the flag: set it as exec would.
    linux.prctl(linux.PR_SET_DUMPABLE, 1)


def _rlimit(resource_id: int, value: int) -> None:
    resource.setrlimit(resource_id, (value, value))


CALLS: dict[str, Callable[..., Any]] = {
    "unshare": linux.unshare,
    "unshare-try": _unshare_try,
    "root": _build_root,
    "hostname": socket.sethostname,
    "loopback": _loopback_up,
    "rlimit": _rlimit,
    "no-privileges": _no_privileges,
    "user": _become,
    "chdir": os.chdir,
}
