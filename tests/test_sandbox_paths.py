"""One sandbox, two launch paths. The kernel manager builds one spec per kernel
(grader/isolation/spec.py); a normal start translates it into bwrap's command line, a kernel
forked from the warm template into the calls its fork makes (grader/isolation/fork.py). Here a
kernel starts both ways, on the CPU and with a GPU (fake device nodes: the spec binds them as it
would /dev/nvidia*), and each must see exactly its spec: mounts and which are read-only, what is
hidden, no network, its user without groups or capabilities, its limits, its device nodes, its
environment; and the two must see the same. The unit tests below make sure that every field of
the spec reaches both translations: a field that one of them ignores fails here."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import subprocess
import tempfile

import pytest
import sandboxed_kernels

from conftest import ROOT
from grader.isolation import fork as sandbox_fork
from grader.isolation import sandbox
from grader.isolation import spec as sandbox_spec
from grader.isolation.spec import SandboxSpec
from grader.kernels import template

pytestmark = [pytest.mark.integration, pytest.mark.sandbox]

PATHS = ("forked", "normal")
MACHINES = ("cpu", "gpu")
# The course's and the grader's own files, and the instructor's home: never in a sandbox.
HIDDEN = [ROOT / "solutions", ROOT / "grader", ROOT / "tests", ROOT / "nbgrader_config.py", ROOT / "gradebook.db"]
HIDDEN += [ROOT / "course", "/root/.bash_history", "/home", "/var/lib", "/run"]
ELSEWHERE = ["/sys/class", "/dev/nvidiactl", "/dev/null", "/proc/self", "/tmp/nothing"]  # there or not as the spec says
# What ipykernel (its shell's terminal and pager, matplotlib's backend) and debugpy set as they start.
KERNEL_SETS = {"TERM", "CLICOLOR", "FORCE_COLOR", "CLICOLOR_FORCE", "PAGER", "GIT_PAGER", "MPLBACKEND"}
KERNEL_SETS.add("PYDEVD_USE_FRAME_EVAL")
LIMITS = ("data", "as", "nproc", "fsize", "nofile", "core")

PROBE = """import json, os, resource, socket
def writable(folder):
    try:
        open(os.path.join(folder, '.probe'), 'w').close()
        os.remove(os.path.join(folder, '.probe'))
        return True
    except OSError:
        return False
def reaches(address):
    try:
        socket.create_connection(address, timeout=2).close()
        return True
    except OSError:
        return False
status = dict(line.split(':', 1) for line in open('/proc/self/status').read().splitlines())
print(json.dumps({
    'user': [os.getresuid(), os.getresgid(), os.getgroups()],
    'privileges': {k: status[k].strip() for k in ('CapInh', 'CapPrm', 'CapEff', 'CapBnd', 'CapAmb', 'NoNewPrivs')},
    'limits': {n: resource.getrlimit(getattr(resource, 'RLIMIT_' + n.upper())) for n in NAMES},
    'mounts': sorted((l.split()[4], l.split()[5].split(',')[0]) for l in open('/proc/self/mountinfo')),
    'dev': sorted(os.listdir('/dev')),
    'present': {p: os.path.lexists(p) for p in PRESENT},
    'writable': {p: writable(p) for p in FOLDERS},
    'host': [socket.gethostname(), sorted(name for _, name in socket.if_nameindex())],
    'network': reaches(('1.1.1.1', 53)),
    'pids': sorted(int(p) for p in os.listdir('/proc') if p.isdigit()),
    'env': dict(os.environ),
    'cwd': os.getcwd(),
}))
"""


def target(step: tuple) -> str:
    """Where a step of the spec's filesystem puts what it makes."""
    return step[1] if step[0] in ("dev", "proc", "tmpfs", "dir") else step[2]


def probe_code(spec: SandboxSpec) -> str:
    """PROBE, told which paths to look for: every target of the spec, and what must be hidden."""
    targets = [target(step) for step in spec.mounts]
    folders = [target(step) for step in spec.mounts if step[0] in ("bind", "ro-bind", "tmpfs")]
    present = sorted({*targets, *map(str, HIDDEN), *ELSEWHERE})
    return f"NAMES, PRESENT, FOLDERS = {LIMITS!r}, {present!r}, {folders!r}\n" + PROBE


def fake_gpus(folder) -> str:
    """Two GPUs' device nodes, as the NVIDIA driver makes them (plain files: what the sandbox
    does with them is the same)."""
    for name in ("nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "nvidia0", "nvidia1"):
        (folder / name).touch()
    return str(folder)


async def observe(scratch: str) -> tuple[str, SandboxSpec, dict]:
    """What a kernel started the way the grader starts one (the template switched on or off by
    the caller) sees of its sandbox: its launch path, its spec, the probe's findings, with the
    kernel's own folders named /<scratch> and /<sockets>."""
    km, kc = await sandboxed_kernels.start(scratch)
    try:
        process = km.provisioner.process
        path = "forked" if isinstance(process, template.ForkedKernel) else "normal"
        assert path == "forked" or isinstance(process, subprocess.Popen)
        spec = km.sandbox_spec
        printed = await sandboxed_kernels.run(kc, probe_code(spec))
    finally:
        await sandboxed_kernels.stop(km, kc)
    named = lambda text: text.replace(km._sockets, "/<sockets>").replace(scratch, "/<scratch>")  # noqa: E731
    return path, SandboxSpec.from_json(json.loads(named(json.dumps(spec.to_json())))), json.loads(named(printed))


@pytest.fixture(scope="module")
def seen(tmp_path_factory) -> dict:
    """(machine, path) -> (spec, findings) for a kernel of each launch path, without and with a GPU."""
    assert sandbox.available(), "bubblewrap is missing: make test installs it (tools/system_packages.sh)"
    assert os.geteuid() == 0, "a forked kernel's sandbox needs root, as make test runs"
    found = {}
    for machine in MACHINES:
        # No GPU, or two fake ones, whatever this machine has.
        devices = tmp_path_factory.mktemp("dev")
        folder = fake_gpus(devices) if machine == "gpu" else str(devices)
        for path in PATHS:
            with pytest.MonkeyPatch.context() as patch, tempfile.TemporaryDirectory() as scratch:
                patch.setenv(template.SWITCH, "on" if path == "forked" else "off")
                patch.setattr(sandbox_spec, "DEVICE_FOLDER", folder)
                if machine == "gpu":
                    patch.setenv("CUDA_VISIBLE_DEVICES", "1")
                    patch.setattr(template, "FORK_GPU_KERNELS", True)  # a real GPU starts normally: a test spec
                launched, spec, findings = asyncio.run(observe(scratch))
            assert launched == path, f"asked for a {path} start, got a {launched} one"
            found[machine, path] = spec, findings
    return found


CASES = [(machine, path) for machine in MACHINES for path in PATHS]


@pytest.mark.parametrize("machine,path", CASES)
def test_the_kernel_is_the_specs_user_with_no_groups_and_no_privileges(seen, machine, path):
    spec, findings = seen[machine, path]
    assert spec.uid not in (None, 0)
    assert findings["user"] == [[spec.uid] * 3, [spec.uid] * 3, []]
    assert findings["privileges"] == {
        **{cap: "0000000000000000" for cap in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")},
        "NoNewPrivs": "1",
    }


@pytest.mark.parametrize("machine,path", CASES)
def test_the_kernel_has_the_specs_limits_and_no_others(seen, machine, path):
    spec, findings = seen[machine, path]
    for name in LIMITS:
        value = spec.limits.get(name, -1)  # -1: resource.RLIM_INFINITY
        assert findings["limits"][name] == [value, value], name


@pytest.mark.parametrize("machine,path", CASES)
def test_the_kernel_sees_the_specs_files_and_nothing_else(seen, machine, path):
    spec, findings = seen[machine, path]
    for where, present in findings["present"].items():
        assert present == sandbox_spec.visible(where, spec.mounts), where
    hidden = {str(p) for p in HIDDEN if os.path.lexists(p)}
    assert {str(ROOT / "solutions"), str(ROOT / "grader")} <= hidden
    assert not any(findings["present"][p] for p in hidden), "the course's and the grader's files stay out"


@pytest.mark.parametrize("machine,path", CASES)
def test_the_kernel_writes_only_where_the_spec_binds_writable_folders(seen, machine, path):
    spec, findings = seen[machine, path]
    kinds = {target(step): step[0] for step in spec.mounts}
    assert findings["writable"] == {folder: kinds[folder] in ("bind", "tmpfs") for folder in findings["writable"]}
    assert findings["writable"]["/<scratch>"] and not findings["writable"]["/usr"]
    mounted = dict(findings["mounts"])
    for step in spec.mounts:
        if step[0] in ("ro-bind", "bind", "dev-bind"):
            assert mounted[step[2]] == ("ro" if step[0] == "ro-bind" else "rw"), step


@pytest.mark.parametrize("machine,path", CASES)
def test_the_kernel_has_no_network_and_its_own_processes(seen, machine, path):
    spec, findings = seen[machine, path]
    assert findings["host"] == [spec.hostname, ["lo"]]
    assert findings["network"] is False
    assert findings["pids"] == [1, 2], "only its sandbox's first process and itself"


@pytest.mark.parametrize("machine,path", CASES)
def test_the_kernel_has_the_specs_device_nodes(seen, machine, path):
    spec, findings = seen[machine, path]
    assert set(sandbox_spec.DEV_NODES) <= set(findings["dev"]) and not any("nvidia" in n for n in findings["dev"])
    if machine == "gpu":
        assert [os.path.basename(n) for n in spec.devices] == ["nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "nvidia1"]
        assert all(findings["present"][node] for node in spec.devices)
        assert dict(findings["mounts"])["/sys"] == "ro"
    else:
        assert spec.devices == [] and "/sys" not in dict(findings["mounts"])


@pytest.mark.parametrize("machine,path", CASES)
def test_the_kernel_has_the_specs_environment(seen, machine, path):
    spec, findings = seen[machine, path]
    assert findings["cwd"] == spec.chdir == "/<scratch>"
    env = findings["env"]
    assert {k: env.get(k) for k in spec.env} == spec.env
    assert set(env) - set(spec.env) <= KERNEL_SETS, env
    if machine == "gpu":
        assert env["CUDA_VISIBLE_DEVICES"] == "1"


@pytest.mark.parametrize("machine", MACHINES)
def test_both_launch_paths_build_the_same_sandbox(seen, machine):
    forked_spec, forked = seen[machine, "forked"]
    normal_spec, normal = seen[machine, "normal"]
    assert forked_spec == normal_spec
    for fact in normal:
        assert forked[fact] == normal[fact], fact


# -- both translations take every field of the spec ------------------------------------------------
def a_spec(**changes) -> SandboxSpec:
    spec = sandbox_spec.build("/tmp/scratch-9", "/tmp/sockets-9", uid=64000, memory_mb=100, max_processes=10, file_mb=1)
    return dataclasses.replace(spec, **changes)


# Another value for each field: a field without one here fails, until both launchers are taught it.
VARIANTS = {
    "mounts": lambda spec: (*spec.mounts, ("ro-bind", "/srv/data", "/srv/data")),
    "namespaces": lambda spec: tuple(name for name in spec.namespaces if name != "ipc"),
    "hostname": lambda spec: "elsewhere",
    "chdir": lambda spec: "/tmp/sockets-9",
    "uid": lambda spec: 64001,
    "limits": lambda spec: dict(spec.limits, nofile=128),
    "env": lambda spec: dict(spec.env, LANG="de_CH.UTF-8"),
}


def translations(spec: SandboxSpec) -> dict:
    return {"normal": sandbox.bwrap_args(spec, ["python"]), "forked": sandbox_fork.plan(spec, "/base")}


@pytest.mark.unit
@pytest.mark.parametrize("field", [field.name for field in dataclasses.fields(SandboxSpec)])
def test_every_field_of_the_spec_reaches_both_launch_paths(field):
    assert field in VARIANTS, f"a new field of the spec, {field}: give it a variant here and teach both launchers"
    spec = a_spec()
    changed = a_spec(**{field: VARIANTS[field](spec)})
    assert changed != spec, "a variant that changes nothing"
    before, after = translations(spec), translations(changed)
    for path in PATHS:
        assert before[path] != after[path], f"the {path} start ignores the spec's {field}"


@pytest.mark.unit
def test_every_kind_of_mount_namespace_and_limit_has_both_translations():
    assert set(sandbox.BWRAP_MOUNTS) == set(sandbox_fork.MOUNTERS) == set(sandbox_spec.MOUNT_KINDS)
    assert set(sandbox.BWRAP_NAMESPACES) == set(sandbox_fork.CLONE) == set(sandbox_spec.NAMESPACES)
    assert set(sandbox_fork.RLIMITS) == set(a_spec().limits)  # prlimit takes the same names
    assert {step[0] for step in a_spec().mounts} <= set(sandbox_spec.MOUNT_KINDS)


@pytest.mark.unit
def test_the_spec_travels_to_the_template_whole():
    spec = a_spec()
    assert SandboxSpec.from_json(json.loads(json.dumps(spec.to_json()))) == spec


@pytest.mark.unit
def test_a_forked_kernel_is_never_left_root():
    with pytest.raises(ValueError, match="needs a uid"):
        sandbox_fork.plan(a_spec(uid=None), "/base")
