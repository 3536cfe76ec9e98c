"""The student's isolation, declared once: what a grading kernel sees, may write, may use and is.

`build` makes the one `SandboxSpec` of a kernel. Two launchers only translate it: the kernel
manager's normal start into bubblewrap's command line (`sandbox.bwrap_args`), and a kernel forked
from the warm template into the system calls its fork makes itself (`sandbox_fork.plan`, run by
kernels/template_server.py). Neither adds a mount, namespace, limit, user or variable of its own, on the
CPU or with a GPU: tests/test_sandbox_paths.py starts a kernel both ways and checks that each
sees exactly this spec, and that a field of the spec that either translation ignores fails.

What `build` declares: the kernel sees only the system's read-only program folders, the Python
it runs on with every folder its interpreter imports from (`import_folders`: a `.pth` file's
folder elsewhere, the user's site-packages of `pip install --user`; read-only), and its scratch
and socket folders (writable); the course (solutions, gradebook),
home folders and other students' files are simply not there. It has a private network namespace
(no network at all), a private PID namespace (killing the sandbox kills every process the
student started), its own unprivileged uid where the grader runs as root, resource limits on
memory, processes, file size and open files, and an allowlisted environment. What every kernel
gets whatever the spec says: a new mount namespace, no capabilities (none to regain either: an
empty bounding set, no new privileges) and no supplementary groups.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import logging
import os
import site
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

SYSTEM_FOLDERS = ("/usr", "/etc", "/opt/conda")
HOSTNAME = "grader"
# Unshared besides the mount namespace: no network (only a loopback), its own processes (killing
# the sandbox's first process kills every process the student started), IPC and host name; the
# cgroup namespace where the system has them (bwrap's --unshare-cgroup-try).
NAMESPACES = ("net", "pid", "ipc", "uts", "cgroup")
# The steps a filesystem is built from: ("dev", path): a minimal /dev of DEV_NODES; ("proc",
# path); ("tmpfs", path, mode); ("dir", path, mode); ("symlink", target, path); ("ro-bind",
# "bind" or "dev-bind", source, target): read-only, writable, a device node (a GPU's).
MOUNT_KINDS = ("dev", "proc", "tmpfs", "dir", "symlink", "ro-bind", "bind", "dev-bind")
DEV_NODES = ("null", "zero", "full", "random", "urandom", "tty")  # bwrap's --dev makes these
# The only variables a student's kernel gets from the grader's environment
# (everything else, tokens and database passwords included, stays out).
# CUDA_VISIBLE_DEVICES: a GPU worker's kernel sees exactly the GPUs given to its worker.
# OMP_NUM_THREADS: the instructor's choice of CPU threads per kernel (KERNEL_THREADS if unset).
# NBGRADER_EXECUTION ("autograde" while nbgrader autogrades, "validate" while it validates) and
# NBGRADER_VALIDATING: what nbgrader itself sets for the kernels it runs, which a notebook may ask.
PASSED_THROUGH = (
    "PATH",
    "LANG",
    "LANGUAGE",
    "TZ",
    "CUDA_VISIBLE_DEVICES",
    "OMP_NUM_THREADS",
    "NBGRADER_EXECUTION",
    "NBGRADER_VALIDATING",
)
# torch runs a CPU thread per core in every process unless told otherwise, but the grader runs
# submissions side by side (--jobs, Dask workers), one per core, and a lesson's tensors are small:
# extra threads would only compete for the same cores (OpenMP threads spin while they wait).
KERNEL_THREADS = "1"
PASSED_THROUGH_PREFIXES = ("LC_",)
# Where the NVIDIA driver's device nodes live (a test points this at fake ones).
DEVICE_FOLDER = "/dev"
NVIDIA_CONTROL = ("nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "nvidia-modeset")
# What a fresh run of the kernel's interpreter prints: its sys.path (the last line: a .pth may print).
SYS_PATH_PROBE = "import json, sys; print(json.dumps(sys.path))"
log = logging.getLogger("grader.isolation.sandbox")
_told: set[str] = set()  # the folders a warning has named already (once per process)


@dataclasses.dataclass(frozen=True)
class SandboxSpec:
    """One kernel's sandbox, all of it: each field is translated by both launchers."""

    mounts: tuple[tuple, ...]  # the whole filesystem, in the order it is built (MOUNT_KINDS)
    namespaces: tuple[str, ...]  # unshared besides the mount namespace (NAMESPACES)
    hostname: str
    chdir: str  # the kernel's working folder
    uid: int | None  # the kernel's user and group (None: the grader's own, in a user namespace; bwrap only)
    limits: dict[str, int]  # each process's resource limits, soft and hard, by prlimit's names
    env: dict[str, str]  # the kernel's whole environment

    @property
    def devices(self) -> list[str]:
        """The host's device nodes bound in (a GPU's; /dev's own DEV_NODES aside)."""
        return [step[2] for step in self.mounts if step[0] == "dev-bind"]

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SandboxSpec:
        fields = dict(data, mounts=tuple(tuple(step) for step in data["mounts"]))
        return cls(**dict(fields, namespaces=tuple(data["namespaces"])))


def build(
    scratch: str,
    sockets: str,
    *,
    uid: int | None,
    memory_mb: int,
    max_processes: int,
    file_mb: int,
    private: Iterable[str] = (),
) -> SandboxSpec:
    """The sandbox of a kernel that works in `scratch` and talks over sockets in `sockets`;
    `private`: the course's folders, which no folder bound for the interpreter may hold."""
    return SandboxSpec(
        mounts=tuple(layout(scratch, sockets, private)),
        namespaces=NAMESPACES,
        hostname=HOSTNAME,
        chdir=scratch,
        uid=uid,
        limits=limits(memory_mb=memory_mb, max_processes=max_processes, file_mb=file_mb),
        env=dict(clean_environment(scratch), PWD=scratch),  # PWD: as a shell (and bwrap's --chdir) sets it
    )


def clean_environment(scratch: str) -> dict[str, str]:
    """The whole environment of a student's kernel: an allowlist, never the instructor's variables."""
    env = {k: v for k, v in os.environ.items() if k in PASSED_THROUGH or k.startswith(PASSED_THROUGH_PREFIXES)}
    env.setdefault("PATH", os.defpath)
    env.setdefault("OMP_NUM_THREADS", KERNEL_THREADS)
    bin_dir = os.path.dirname(sys.executable)  # the kernel's interpreter and its tools
    if bin_dir not in env["PATH"].split(os.pathsep):
        env["PATH"] = bin_dir + os.pathsep + env["PATH"]
    # getpass.getuser() falls back to the password file, which has no entry for a sandbox uid: name
    # the user (torch 2.11's optimizers ask, for their compile cache, and raised KeyError).
    env.update(HOME=scratch, USER="student", LOGNAME="student", TMPDIR="/tmp")
    # The user's site-packages only where the grader's own interpreter imports from it: named by
    # its base (HOME is the scratch folder here), bound read-only by layout(); else none at all.
    if user_site():
        env["PYTHONUSERBASE"] = site.getuserbase()
    else:
        env["PYTHONNOUSERSITE"] = "1"
    env["MPLCONFIGDIR"] = os.path.join(scratch, ".matplotlib")
    return env


def user_site() -> str | None:
    """The user's site-packages folder (`pip install --user`, ~/.local/lib/pythonX.Y/site-packages)
    where this process's interpreter imports from it, else None."""
    folder = site.getusersitepackages() if site.ENABLE_USER_SITE else None
    return folder if folder and folder in sys.path and os.path.isdir(folder) else None


@functools.lru_cache(maxsize=8)
def _sys_path(python: str, env: tuple[tuple[str, str], ...]) -> tuple[str, ...]:
    try:
        done = subprocess.run(
            [python, "-c", SYS_PATH_PROBE], env=dict(env), cwd="/", capture_output=True, text=True, timeout=120
        )
        return tuple(json.loads(done.stdout.strip().splitlines()[-1]))
    except (OSError, subprocess.SubprocessError, ValueError, IndexError):
        log.warning("sandbox: %s could not tell its sys.path: only its own environment is bound", python)
        return ()


def _holds(folder: str, path: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _tell(folder: str, why: str) -> None:
    if folder not in _told:
        _told.add(folder)
        log.warning("sandbox: %s is on the kernel's sys.path but not bound (%s): nothing there imports", folder, why)


def import_folders(bound: Iterable[str], private: Iterable[str] = ()) -> list[str]:
    """The folders (as sys.path writes them) that the kernel's interpreter imports from outside
    the folders already `bound`: its sys.path as a fresh run of it with the kernel's environment
    has it (a .pth file's folders, the user's site-packages where user_site() has one). Never one
    that holds a `private` folder (the course's), the home folder or the grader's working folder,
    nor one inside the course: those are left out, and a warning says why."""
    env = dict(clean_environment("/nonexistent"), HOME=os.environ.get("HOME", "/nonexistent"))
    entries = _sys_path(sys.executable, tuple(sorted(env.items())))
    inside = [os.path.realpath(p) for p in private if p]
    holds = [*inside, os.path.realpath(os.path.expanduser("~")), os.path.realpath(os.getcwd())]
    found: list[str] = []
    for entry in entries:
        real = os.path.realpath(entry) if entry and os.path.isabs(entry) and os.path.exists(entry) else ""
        if not real or any(_holds(b, real) for b in bound) or entry in found:
            continue
        held = [p for p in holds if _holds(real, p)]
        if held:
            _tell(entry, f"it holds {held[0]}, which students never see")
        elif any(_holds(p, real) for p in inside):
            _tell(entry, "it is part of the course folder, which students never see")
        else:
            found.append(entry)
    return found


def limits(*, memory_mb: int, max_processes: int, file_mb: int) -> dict[str, int]:
    """Each process's resource limits (soft and hard), by resource name as prlimit and setrlimit know them.

    Memory: the data limit, on private writable memory (heap, writable private maps, counted when
    mapped, written or not), not on address space: read-only maps and reservations don't count.
    The CUDA build of torch maps ~3 GiB on import (CUDA reserves more): under a 2 GiB address-space
    limit no kernel holding that torch could run. What it does not count: docs/security.md."""
    return {
        "data": memory_mb * 1024 * 1024,
        "nproc": max_processes,
        "fsize": file_mb * 1024 * 1024,
        "nofile": 256,
        "core": 0,
    }


def gpu_devices(visible: str | None = None) -> list[str]:
    """The NVIDIA device nodes a kernel needs for the GPUs this process may use: the control
    nodes and /dev/nvidiaN for each index in CUDA_VISIBLE_DEVICES (all of them when it is unset
    or names GPUs by UUID, which only the driver can map). Empty without an NVIDIA driver."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES") if visible is None else visible
    folder = Path(DEVICE_FOLDER)
    if not (folder / "nvidiactl").exists() or visible == "":
        return []
    gpus = sorted(p.name for p in folder.glob("nvidia[0-9]*") if p.name[6:].isdigit())
    if visible and all(part.strip().isdigit() for part in visible.split(",")):
        gpus = [f"nvidia{int(part)}" for part in visible.split(",") if (folder / f"nvidia{int(part)}").exists()]
    return [str(folder / name) for name in (*NVIDIA_CONTROL, *gpus) if (folder / name).exists()]


def _ancestors(path: str) -> list[str]:
    parts = Path(path).parts[1:-1]
    return ["/" + "/".join(parts[: i + 1]) for i in range(len(parts))]


def _symlinks(path: str) -> list[str]:
    """The folders on the way to `path` (itself included) that are symlinks, outermost first."""
    found, current = [], "/"
    for part in Path(path).parts[1:]:
        current = os.path.join(current, part)
        if os.path.islink(current):
            found.append(current)
            current = os.path.realpath(current)
    return found


def visible(path: str, steps: list[tuple] | tuple[tuple, ...] | None = None) -> bool:
    """Whether `path`, as written, exists inside a sandbox built from `steps` (default: a new layout)."""
    steps = steps if steps is not None else layout("/nonexistent-scratch", "/nonexistent-sockets")
    path = os.path.normpath(path)
    made = {step[1] for step in steps if step[0] in ("dev", "proc", "tmpfs", "dir")}
    made |= {f"{step[1]}/{node}" for step in steps if step[0] == "dev" for node in DEV_NODES}
    proc = [step[1] for step in steps if step[0] == "proc"]  # the kernel's own processes
    targets = [step[2] for step in steps if step[0] in ("bind", "ro-bind", "dev-bind", "symlink")] + proc
    current = "/"
    for part in Path(path).parts[1:]:
        current = os.path.join(current, part)
        if any(current == t or current.startswith(t + "/") for t in targets):
            return True
    return path in made


def _folders_on_the_way(mounts: list[tuple], made: set[str]) -> list[tuple]:
    """A ("dir", folder, 0o755) step for each folder on the way to `mounts`' targets that no
    earlier step makes: bwrap would make them private (0700) to root. Not /tmp (a 1777 tmpfs),
    /dev, nor folders inside the read-only system binds, which exist already."""
    bound = ["/dev", *(f for f in SYSTEM_FOLDERS if os.path.isdir(f))]
    steps = []
    for kind, source, target in mounts:
        for parent in _ancestors(target + "/x" if kind in ("ro-bind", "bind") and os.path.isdir(source) else target):
            inside_bind = any(parent == f or parent.startswith(f + "/") for f in bound)
            if parent not in made and parent != "/tmp" and not inside_bind:
                made.add(parent)
                steps.append(("dir", parent, 0o755))
    return steps


def layout(scratch: str, sockets: str, private: Iterable[str] = ()) -> list[tuple]:
    """The sandbox's whole filesystem (SandboxSpec.mounts), in the order it is built; `private`:
    the course's folders (see import_folders)."""
    steps: list[tuple] = [("dev", "/dev"), ("proc", "/proc"), ("tmpfs", "/tmp", 0o1777)]
    made: set[str] = set()
    # A GPU's device nodes (a minimal /dev has none), and /sys, where CUDA reads its topology.
    devices = [("dev-bind", node, node) for node in gpu_devices()]
    steps += _folders_on_the_way(devices, made) + devices
    if devices:
        steps.append(("ro-bind", "/sys", "/sys"))
    for folder in SYSTEM_FOLDERS:
        if os.path.isdir(folder):
            steps.append(("ro-bind", folder, folder))
    for name in ("lib", "lib64", "lib32", "bin", "sbin"):
        target = os.path.join("/", name)
        if os.path.islink(target):
            steps.append(("symlink", os.readlink(target), target))
        elif os.path.isdir(target):
            steps.append(("ro-bind", target, target))
    # The interpreter and its environment, wherever they live (a venv inside the
    # course folder, a pyenv build under /root), and every other folder it imports from:
    # read-only, and reachable by the sandbox user, whatever the permissions of the folders above them.
    prefixes = {os.path.realpath(sys.prefix), os.path.realpath(sys.base_prefix)}
    system = [os.path.realpath(step[2]) for step in steps if step[0] == "ro-bind"]
    imported = import_folders([*prefixes, *system], private)
    found = sorted(prefixes | {os.path.realpath(p) for p in imported})
    environments = [p for p in found if not any(_holds(q, p) for q in found if q != p)]
    mounts = [("ro-bind", p, p) for p in environments] + [("bind", scratch, scratch), ("bind", sockets, sockets)]
    # An environment reached through a symlink (course/.venv -> elsewhere) is started by
    # that path: the same symlink, inside the sandbox, leads to the bound real folder.
    links = sorted({link for p in (sys.prefix, sys.base_prefix, sys.executable, *imported) for link in _symlinks(p)})
    mounts += [
        ("symlink", os.path.realpath(link), link)
        for link in links
        if not any(link == e or link.startswith(e + "/") for e in environments)
    ]
    return steps + _folders_on_the_way(mounts, made) + mounts
