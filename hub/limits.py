"""Per-user memory and CPU limits on `make hub`: JupyterHub's own `Spawner.mem_limit` and
`Spawner.cpu_limit`, which its local spawner only records, enforced through a control group per
user. Everything a user's server starts (kernels, terminals, their children) stays in that
group, so one student's runaway cell can use at most HUB_MEM_LIMIT of memory and HUB_CPU_LIMIT
cores, and the kernel's OOM killer ends the process that went over, not a neighbour's.

Both cgroup layouts are handled: v2 (one unified tree, `memory.max` and `cpu.max`; on systemd
machines the hub's service needs `Delegate=yes`, see hub/course-hub.service) and v1 (separate
`memory` and `cpu` hierarchies). Where neither can be written, the hub says so once at start
and runs without limits rather than refusing the class.
"""

from __future__ import annotations

import os
from pathlib import Path

from jupyterhub.spawner import LocalProcessSpawner

CGROUPS = Path("/sys/fs/cgroup")
CPU_PERIOD_US = 100_000


def layout(cgroups: Path = CGROUPS) -> str | None:
    """'v2', 'v1' or None (no control groups this process may write)."""
    if (cgroups / "cgroup.controllers").exists():
        return "v2" if os.access(cgroups, os.W_OK) else None
    if (cgroups / "memory").is_dir() and (cgroups / "cpu").is_dir():
        return "v1" if os.access(cgroups / "memory", os.W_OK) and os.access(cgroups / "cpu", os.W_OK) else None
    return None


def groups(name: str, user: str, cgroups: Path = CGROUPS) -> dict[str, Path]:
    """The user's group folder for each controller ('v2': one for both)."""
    kind = layout(cgroups)
    if kind == "v2":
        return {"both": cgroups / name / user}
    if kind == "v1":
        return {"memory": cgroups / "memory" / name / user, "cpu": cgroups / "cpu" / name / user}
    return {}


def place(
    name: str, user: str, pid: int, mem_limit: int | None, cpu_limit: float | None, cgroups: Path = CGROUPS
) -> list[str]:
    """Put process `pid` (and so everything it will start) into the user's group under the
    group `name`, with the limits; returns what was set, as 'file=value'."""
    found = groups(name, user, cgroups)
    if not found:
        raise OSError("no writable control groups on this machine")
    done = []
    for controller, folder in found.items():
        folder.mkdir(parents=True, exist_ok=True)
        if controller == "both":  # a v2 group gets a controller only when every parent hands it down
            for level in (cgroups, folder.parent):
                try:
                    (level / "cgroup.subtree_control").write_text("+memory +cpu")
                except OSError:  # already on, or delegated by systemd: the writes below will tell
                    pass
        settings = []
        if mem_limit and controller in ("both", "memory"):
            settings.append(("memory.max" if controller == "both" else "memory.limit_in_bytes", str(int(mem_limit))))
        if cpu_limit and controller in ("both", "cpu"):
            quota = int(cpu_limit * CPU_PERIOD_US)
            if controller == "both":
                settings.append(("cpu.max", f"{quota} {CPU_PERIOD_US}"))
            else:
                settings += [("cpu.cfs_period_us", str(CPU_PERIOD_US)), ("cpu.cfs_quota_us", str(quota))]
        for file, value in settings:
            (folder / file).write_text(value)
            done.append(f"{folder / file}={value}")
        (folder / "cgroup.procs").write_text(str(pid))
    return done


class LimitedSpawner(LocalProcessSpawner):
    """JupyterHub's local-process spawner, with mem_limit and cpu_limit enforced per user."""

    warned = False

    @property
    def group_name(self) -> str:
        return f"course-hub-{os.environ.get('HUB_PORT') or 8000}"  # hubs side by side keep apart

    async def start(self):
        started = await super().start()
        if self.mem_limit or self.cpu_limit:
            try:
                done = place(self.group_name, self.user.name, self.pid, self.mem_limit, self.cpu_limit)
                self.log.info("limits for %s: %s", self.user.name, ", ".join(done))
            except OSError as error:
                if not LimitedSpawner.warned:
                    LimitedSpawner.warned = True
                    self.log.warning("per-user memory and CPU limits NOT enforced: %s", error)
        return started

    async def stop(self, now=False):
        await super().stop(now=now)
        for folder in groups(self.group_name, self.user.name).values():
            try:
                folder.rmdir()  # empty once the server and its kernels are gone
                folder.parent.rmdir()  # the hub's own group, once no user has one
            except OSError:
                pass
