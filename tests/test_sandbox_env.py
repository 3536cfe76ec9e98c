"""The grader's environment as the sandbox gives it to a kernel (issue 47, item 3).

Every folder the grader's interpreter imports from is bound read-only, wherever it lies (a .pth
file's folder outside sys.prefix, the user's site-packages of `pip install --user`), never one
that holds the course, the home folder or the grader's working folder; and a kernel that dies
before it answers is *not graded* with its own last lines of stderr, on every launch path."""

from __future__ import annotations

import json
import os
import site
import subprocess
import sys
import sysconfig
from pathlib import Path

import grader_cases
import nbformat
import pytest
from not_graded_cases import crash, grade_cli
from submissions import answered

from grader.grading import grade
from grader.isolation import sandbox
from grader.isolation import spec as sandbox_spec
from grader.kernels import template
from grader.kernels.template import GRADER_KERNEL, PROVISIONER_NAME
from grader.records import export
from tools import course

pytestmark = [pytest.mark.integration, pytest.mark.sandbox]

A = grader_cases.A
FULL = grader_cases.FULL


@pytest.fixture
def probe(monkeypatch):
    """The kernel's interpreter's sys.path, as the test says it is (its probe's cache emptied)."""
    sandbox_spec._sys_path.cache_clear()
    monkeypatch.setattr(sandbox_spec, "_told", set())
    entries: list[str] = []
    monkeypatch.setattr(sandbox_spec, "_sys_path", lambda python, env: tuple(entries))
    return entries


def bound(steps) -> dict[str, str]:
    return {step[2]: step[0] for step in steps if step[0] in ("ro-bind", "bind")}


@pytest.mark.unit
def test_a_folder_a_pth_file_adds_is_bound_read_only(tmp_path, probe):
    extra = tmp_path / "elsewhere" / "site-packages"
    extra.mkdir(parents=True)
    probe += [str(extra), sys.prefix, "", "relative", str(tmp_path / "gone")]
    steps = sandbox_spec.layout("/tmp/scratch-1", "/tmp/sockets-1")
    assert bound(steps)[str(extra)] == "ro-bind"
    assert sandbox_spec.visible(str(extra / "module.py"), steps)
    assert not sandbox_spec.visible(str(tmp_path / "elsewhere" / "other"), steps), "only the folder itself"
    others = set(bound(steps)) - {"/tmp/scratch-1", "/tmp/sockets-1", *sandbox_spec.SYSTEM_FOLDERS}
    assert others == {os.path.realpath(sys.prefix), os.path.realpath(sys.base_prefix), str(extra)}


@pytest.mark.unit
def test_a_folder_reached_through_a_symlink_is_bound_and_linked(tmp_path, probe):
    real = tmp_path / "real-packages"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    probe.append(str(tmp_path / "link"))
    steps = sandbox_spec.layout("/tmp/scratch-1", "/tmp/sockets-1")
    assert bound(steps)[str(real)] == "ro-bind"
    assert ("symlink", str(real), str(tmp_path / "link")) in steps


@pytest.mark.unit
def test_no_folder_that_holds_the_course_home_or_workdir_is_bound(tmp_path, probe, monkeypatch, caplog):
    course_root = tmp_path / "courses" / "dl"
    (course_root / "solutions").mkdir(parents=True)
    (course_root / "lib").mkdir()
    work = tmp_path / "work"
    (work / "inner").mkdir(parents=True)
    monkeypatch.chdir(work)
    probe += [
        str(tmp_path / "courses"),
        str(course_root),
        str(course_root / "lib"),
        str(work),
        "/",
        os.path.expanduser("~"),
    ]
    with caplog.at_level("WARNING", logger="grader.isolation.sandbox"):
        steps = sandbox_spec.layout("/tmp/scratch-1", "/tmp/sockets-1", private=[str(course_root)])
    binds = bound(steps)
    for refused in (tmp_path / "courses", course_root, course_root / "lib", work):
        assert str(refused) not in binds, refused
        assert str(refused) in caplog.text
    assert "/" not in binds and os.path.expanduser("~") not in binds
    assert "which students never see" in caplog.text
    assert not sandbox_spec.visible(str(course_root / "solutions"), steps)


@pytest.mark.unit
def test_the_user_site_is_bound_and_named_only_where_the_grader_imports_from_it(tmp_path, probe, monkeypatch):
    base = tmp_path / "home" / ".local"
    user = base / "lib" / "python" / "site-packages"
    user.mkdir(parents=True)
    monkeypatch.setattr(site, "ENABLE_USER_SITE", False)
    env = sandbox_spec.clean_environment("/tmp/scratch-1")
    assert env["PYTHONNOUSERSITE"] == "1" and "PYTHONUSERBASE" not in env
    monkeypatch.setattr(site, "ENABLE_USER_SITE", True)
    monkeypatch.setattr(site, "getusersitepackages", lambda: str(user))
    monkeypatch.setattr(site, "getuserbase", lambda: str(base))
    env = sandbox_spec.clean_environment("/tmp/scratch-1")
    assert env["PYTHONNOUSERSITE"] == "1", "not on this process's sys.path: the grader does not use it"
    monkeypatch.setattr(sys, "path", [*sys.path, str(user)])
    env = sandbox_spec.clean_environment("/tmp/scratch-1")
    assert env["PYTHONUSERBASE"] == str(base) and "PYTHONNOUSERSITE" not in env
    probe.append(str(user))  # what the kernel's interpreter, with that environment, imports from
    steps = sandbox_spec.layout("/tmp/scratch-1", "/tmp/sockets-1")
    assert bound(steps)[str(user)] == "ro-bind"
    assert not sandbox_spec.visible(str(tmp_path / "home" / ".bash_history"), steps)


@pytest.mark.unit
def test_the_probe_asks_the_interpreter_with_the_kernels_environment():
    sandbox_spec._sys_path.cache_clear()
    env = dict(sandbox_spec.clean_environment("/nonexistent"), HOME=os.environ.get("HOME", "/nonexistent"))
    entries = sandbox_spec._sys_path(sys.executable, tuple(sorted(env.items())))
    assert sysconfig.get_paths()["purelib"] in entries
    assert os.getcwd() not in entries and "" in entries  # -c's first entry: not a folder, never bound


@pytest.mark.unit
def test_a_kernels_stderr_is_kept_bounded_and_its_tail_read_in_one_line():
    fd = sandbox.stderr_file()
    assert fd is not None
    try:
        os.write(fd, b"".join(b"line %d at 0x7f12345678ab\n    ^^^^~~~~\n\n" % i for i in range(30)))
        assert sandbox.stderr_tail(fd) == " | ".join(f"line {i} at 0x..." for i in range(20, 30))
        os.lseek(fd, 0, os.SEEK_SET)
        written = 0
        with pytest.raises(OSError):
            while True:  # a kernel cannot write past the file's size
                written += os.write(fd, b"x" * 4096)
        assert written == sandbox.STDERR_BYTES
        assert len(sandbox.stderr_tail(fd)) <= sandbox.STDERR_WIDTH
    finally:
        os.close(fd)
    assert sandbox.stderr_tail(None) == ""


# -- through the grader, in the sandbox --------------------------------------------------------------
def purelib(python: str, env: dict | None = None, user: bool = False) -> str:
    """Where `python` installs packages (its user site-packages where `user`)."""
    code = "import site, sysconfig; print(site.getusersitepackages() if USER else sysconfig.get_paths()['purelib'])"
    command = [python, "-c", code.replace("USER", str(user))]
    return subprocess.run(command, check=True, capture_output=True, text=True, env=env).stdout.strip()


def outside_environment(tmp_path, kind: str) -> tuple[str, dict]:
    """An interpreter whose packages (torch, ipykernel, nbgrader, the grader) all sit outside its
    sys.prefix, and the environment to run it with. "pth": a venv whose site-packages holds
    nothing but a .pth file naming this environment's site-packages; "user-site": the base
    interpreter with that .pth file in its user site-packages (`pip install --user`). Either .pth
    also names a folder elsewhere with a module the notebook imports."""
    extra = tmp_path / "shared-modules"
    extra.mkdir()
    (extra / "extra_helpers.py").write_text("ANSWER = 42\n")
    env = grader_cases.cli_env(JUPYTER_PATH=os.path.join(sys.prefix, "share", "jupyter"))
    env.pop(template.SHARED, None)  # the run's shared template runs another interpreter
    if kind == "pth":
        venv = tmp_path / "pth-venv"
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
        python, env["PYTHONNOUSERSITE"] = str(venv / "bin" / "python"), "1"
        site_packages = purelib(python)
    else:
        python = os.path.join(sys.base_prefix, "bin", "python3")
        env["PYTHONUSERBASE"] = str(tmp_path / "user-base")
        site_packages = purelib(python, env, user=True)
        os.makedirs(site_packages)
    pth = f"import site; site.addsitedir({sysconfig.get_paths()['purelib']!r})\n{extra}\n"
    (Path(site_packages) / "elsewhere.pth").write_text(pth)
    return python, env


@pytest.mark.parametrize("kind,start", [("pth", "forked"), ("pth", "normal"), ("user-site", "normal")])
def test_an_environment_whose_packages_sit_outside_its_prefix_grades(tmp_path, kind, start):
    assert sandbox.available(), "bubblewrap is missing: make test installs it (tools/system_packages.sh)"
    python, env = outside_environment(tmp_path, kind)
    root = tmp_path / "course"
    course.temporary_course(root, [A])
    folder = tmp_path / "class"
    folder.mkdir()
    nbformat.write(crash("    import extra_helpers\n    assert extra_helpers.ANSWER == 42\n"), folder / "ana.ipynb")
    env[template.SWITCH] = "on" if start == "forked" else "off"
    done = grade_cli(root, folder, env, python=python, jobs=1, timeout=None)
    assert done.returncode == 0, done.stdout + done.stderr
    row = export.read_csv(root / "grades" / f"{A}.csv")[0]
    assert (row["status"], row["score"]) == ("graded", f"{FULL:g}"), row


# What makes a kernel die as it starts: a bad kernel class (traitlets logs why, and the kernel
# exits) or a bad output stream class (ipykernel raises: a forked kernel's traceback reaches its
# stderr too), with a line of the kernel's own that names it.
DEATHS = {
    "kernel_class": ("missing_kernel_module.Kernel", "'missing_kernel_module.Kernel' could not be imported"),
    "outstream_class": (
        "missing_stream_module.OutStream",
        "ModuleNotFoundError: No module named 'missing_stream_module'",
    ),
}


def dying_kernel_spec(tmp_path, trait: str) -> str:
    """A Jupyter data folder whose grader kernel dies as it starts (DEATHS), the template's
    provisioner named as in the grader's own spec."""
    data = tmp_path / "jupyter-data"
    spec = data / "kernels" / GRADER_KERNEL
    spec.mkdir(parents=True)
    argv = ["python", "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    kernel = {
        "argv": [*argv, f"--IPKernelApp.{trait}={DEATHS[trait][0]}"],
        "display_name": "Python 3 (course grader)",
        "language": "python",
        "metadata": {"kernel_provisioner": {"provisioner_name": PROVISIONER_NAME}},
    }
    spec.joinpath("kernel.json").write_text(json.dumps(kernel))
    return str(data)


@pytest.mark.parametrize(
    "trait,start,sandboxed",
    [
        ("kernel_class", "forked", True),
        ("kernel_class", "normal", True),
        ("kernel_class", "normal", False),
        ("outstream_class", "forked", True),
    ],
)
def test_a_kernel_that_dies_at_start_is_not_graded_with_its_own_error(tmp_path, monkeypatch, trait, start, sandboxed):
    monkeypatch.setenv("JUPYTER_PATH", dying_kernel_spec(tmp_path, trait))
    monkeypatch.setenv(template.SWITCH, "on" if start == "forked" else "off")
    root = tmp_path / "course"
    course.temporary_course(root, [A])
    folder = tmp_path / "class"
    folder.mkdir()
    nbformat.write(answered(A), folder / "ana.ipynb")
    (row,) = grade.run(grade.Options(A, folder, jobs=1, root=root, cell_timeout=20, sandbox=sandboxed))
    assert row.status == "not graded", row
    assert row.detail.startswith("kernel did not start (RuntimeError: Kernel died before replying to kernel_info: ")
    assert DEATHS[trait][1] in row.detail, row.detail
    assert "0x" not in row.detail.replace("0x...", ""), "an address would set each student's cause apart"
    assert "^^^" not in row.detail and "\n" not in row.detail
