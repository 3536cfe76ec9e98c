"""The grader's command line: arguments, refusals and warnings. (A module of its
own so that it runs beside the long class-grading tests of test_grader.py.)"""

import csv
import subprocess
import sys

import pytest

from conftest import ROOT
from grader.isolation import sandbox
from grader.isolation import spec as sandbox_spec
from tools import course

pytestmark = pytest.mark.integration

A = "01_blocks"


@pytest.mark.unit
def test_grading_stops_with_install_advice_when_the_sandbox_is_missing(tmp_path, monkeypatch):
    from grader.__main__ import main

    monkeypatch.setattr(sandbox, "available", lambda: False)
    (tmp_path / "s").mkdir()
    assert main(["grade", A, "--submissions", str(tmp_path / "s")]) == 2


def test_command_line_grades_a_folder_and_warns_once_without_sandbox(tmp_path, capsys):
    from grader.__main__ import main

    folder = tmp_path / "s"
    folder.mkdir()
    (folder / "lost.ipynb").write_text("")  # nothing to run: this checks the command, not grading
    root = tmp_path / "course"
    course.temporary_course(root, [A])
    out = tmp_path / "grades.csv"
    command = [sys.executable, "-m", "grader", "grade", A, "--root", str(root), "--out", str(out)]
    missing = subprocess.run(
        command + ["--submissions", str(tmp_path / "nope")], cwd=ROOT, capture_output=True, text=True
    )
    assert missing.returncode == 2 and "not a folder" in missing.stderr
    # The same command in this process: a second interpreter start-up buys nothing here.
    assert main(command[3:] + ["--submissions", str(folder), "--no-sandbox"]) == 0
    assert capsys.readouterr().err.count("WARNING: --no-sandbox") == 1
    rows = list(csv.DictReader(open(out, encoding="utf-8")))
    assert [(r["student_id"], r["score"], r["status"], r["detail"]) for r in rows] == [
        ("lost", "0", "invalid", "empty file")
    ]


@pytest.mark.unit
def test_sandbox_makes_every_folder_on_the_way_to_the_environment_reachable(monkeypatch):
    # A clone under /tmp (as CI makes) puts the venv below the sandbox's private
    # /tmp; folders bwrap made on its own would be 0700 and hide Python.
    monkeypatch.setattr(sandbox_spec.sys, "prefix", "/tmp/clone/.venv")
    spec = sandbox_spec.build("/tmp/scratch-1", "/tmp/sockets-1", uid=64000, memory_mb=100, max_processes=10, file_mb=1)
    args = sandbox.bwrap_args(spec, ["python"])
    made = [args[i + 1] for i, arg in enumerate(args) if arg == "--dir"]
    assert "/tmp/clone" in made and "/tmp" not in made
    for folder in made:
        assert args[args.index(folder) - 3 : args.index(folder)] == ["--perms", "0755", "--dir"]
    assert not any(f.startswith("/usr/") for f in made), "folders inside read-only binds exist already"
    tmpfs = args.index("--tmpfs")
    assert args[tmpfs + 1] == "/tmp" and tmpfs < args.index("/tmp/clone"), "/tmp is mounted before folders in it"
    binds = [args[i : i + 3] for i in range(len(args) - 2) if args[i] == "--ro-bind"]
    assert ["--ro-bind", "/tmp/clone/.venv", "/tmp/clone/.venv"] in binds, "the venv is bound read-only"


@pytest.mark.unit
def test_sandbox_command_line_clears_the_environment_and_sets_only_the_allowlist(monkeypatch):
    monkeypatch.setenv("GRADER_TEST_TOKEN", "planted")
    monkeypatch.setenv("LC_ALL", "C.UTF-8")
    spec = sandbox_spec.build("/tmp/scratch-2", "/tmp/sockets-2", uid=64000, memory_mb=100, max_processes=10, file_mb=1)
    args = sandbox.bwrap_args(spec, ["python"])
    assert "--clearenv" in args and args.index("--clearenv") < args.index("--setenv")
    given = {args[i + 1]: args[i + 2] for i, arg in enumerate(args) if arg == "--setenv"}
    assert given["HOME"] == "/tmp/scratch-2" and given["LC_ALL"] == "C.UTF-8"
    assert "GRADER_TEST_TOKEN" not in given and "planted" not in args
    set_here = {
        "LC_ALL",
        "HOME",
        "USER",
        "LOGNAME",
        "TMPDIR",
        "MPLCONFIGDIR",
        "PYTHONNOUSERSITE",
        "PYTHONUSERBASE",
        "PWD",
    }
    assert set(given) <= set(sandbox_spec.PASSED_THROUGH) | set_here
    assert given["USER"] == given["LOGNAME"] == "student", "no real user's name, and never the instructor's"


@pytest.mark.unit
def test_grading_kernels_run_torch_on_one_thread_unless_the_instructor_sets_omp_num_threads(monkeypatch):
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    assert sandbox_spec.clean_environment("/tmp/scratch")["OMP_NUM_THREADS"] == sandbox_spec.KERNEL_THREADS == "1"
    monkeypatch.setenv("OMP_NUM_THREADS", "4")
    assert sandbox_spec.clean_environment("/tmp/scratch")["OMP_NUM_THREADS"] == "4"


def test_root_grades_the_course_there_with_its_own_config_and_leaves_tracked_files_alone(tmp_path, monkeypatch):
    from grader.__main__ import main
    from grader.grading import grade

    root = tmp_path / "other-course"
    course.temporary_course(root, [A])
    config_file = root / "nbgrader_config.py"
    config_file.write_text(
        config_file.read_text() + '\nc.CourseDirectory.course_id = "another-course"\nc.Execute.timeout = 17\n'
    )
    config = course.load_config(root)
    assert config.CourseDirectory.course_id == "another-course" and config.Execute.timeout == 17
    assert config.CourseDirectory.root == str(root)
    # The other course is a git repository of its own: after grading, its tracked files
    # (config, source, committed release) must be exactly as committed. Its release carries a
    # mark that generating the release again from the source would drop.
    import nbformat

    release = root / "exercises" / A / f"{A}.ipynb"
    marked = nbformat.read(release, as_version=4)
    marked.metadata["released_by"] = "this course's instructor"
    nbformat.write(marked, release)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.org", "-C", str(root)]
    for command in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "course"]):
        subprocess.run(git + command, check=True, capture_output=True)
    folder = tmp_path / "s"
    folder.mkdir()
    (folder / "lost.ipynb").write_text("")
    used = []
    run = grade.run
    monkeypatch.setattr(grade, "run", lambda options: used.append(options) or run(options))
    assert main(["grade", A, "--submissions", str(folder), "--root", str(root), "--no-sandbox"]) == 0
    assert used[0].options.cell_timeout == 17, "the other course's per-cell limit is the default"
    assert used[0].config.GuardedExecute.timeout == 17, "the run's config carries the limit it resolved"
    assert (root / "grades" / f"{A}.csv").exists() and (root / "gradebook.db").exists()
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gradebook:
        assert gradebook.find_assignment(A).course_id == "another-course"
    status = subprocess.run(
        git + ["status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True, check=True
    ).stdout
    assert status == "", f"grading rewrote tracked files:\n{status}"


@pytest.mark.unit
def test_the_grader_imports_nothing_from_the_maintainers_tools():
    import ast

    for path in (ROOT / "grader").rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            assert not any(n == "tools" or n.startswith("tools.") for n in names), f"{path.name} imports tools"


def _third_party_imports(paths, local_names) -> dict[str, str]:
    """Top-level module -> a file importing it, for every import that is neither the standard
    library nor one of the repository's own modules."""
    import ast

    found = {}
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top not in sys.stdlib_module_names and top not in local_names:
                    found.setdefault(top, str(path.relative_to(ROOT)))
    return found


def _pins(requirements: list[str]) -> dict[str, str]:
    """Distribution name (normalized) -> its pinned version ('' when not pinned exactly)."""
    import re

    pins = {}
    for line in requirements:
        line = line.split("#")[0].strip()
        if line:
            name, _, version = re.sub(r"\[[^]]*\]", "", line).partition("==")
            pins[name.strip().lower().replace("_", "-")] = version.split(";")[0].strip()
    return pins


def _distributions(requirements: list[str]) -> set[str]:
    return set(_pins(requirements))


def _undeclared(imports: dict[str, str], declared: set[str]) -> list[str]:
    from importlib.metadata import packages_distributions

    providers = packages_distributions()
    missing = []
    for module, where in sorted(imports.items()):
        dists = {d.lower().replace("_", "-") for d in providers.get(module, [])}
        if not dists & declared:
            missing.append(f"{module} (imported in {where}; installed from {sorted(dists) or 'nothing'})")
    return missing


@pytest.mark.unit
def test_every_package_the_grader_imports_is_a_dependency_of_its_package():
    """Names only: that each of pyproject.toml's version ranges starts at requirements.txt's
    pin is tests/test_docs.py's check."""
    import tomllib

    from packaging.requirements import Requirement

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    requirements = project["dependencies"] + [r for extra in project["optional-dependencies"].values() for r in extra]
    ours = {Requirement(r).name.lower().replace("_", "-") for r in requirements}
    imports = _third_party_imports(sorted((ROOT / "grader").rglob("*.py")), {"grader"})
    assert _undeclared(imports, ours) == []


@pytest.mark.unit
def test_every_package_the_repository_imports_is_pinned_in_requirements():
    sources = [
        *ROOT.glob("*.py"),
        *(ROOT / "tools").rglob("*.py"),
        *(ROOT / "tests").rglob("*.py"),
        *(ROOT / "lessons").rglob("*.py"),
        *(ROOT / "hub").glob("*.py"),
    ]
    local = {p.stem for p in sources} | {"grader", "tools", "tests", "hub"}
    imports = _third_party_imports(sources, local)
    declared = _distributions((ROOT / "requirements.txt").read_text(encoding="utf-8").splitlines())
    assert _undeclared(imports, declared) == []


def test_the_installed_package_grades_a_course_outside_the_repository(tmp_path):
    """`pip install .` of the grader alone (a copy of what pyproject.toml packages, so the
    repository gets no build folders; --no-deps: the environment already has the pins) gives a
    `course-grader` command that grades another course from any folder."""
    import os
    import shutil

    source = tmp_path / "src"
    shutil.copytree(ROOT / "grader", source / "grader", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source)
    site = tmp_path / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--no-index",
            "--no-build-isolation",
            "--target",
            str(site),
            str(source),
        ],
        check=True,
    )
    assert (site / "bin" / "course-grader").exists() and not (site / "tools").exists()
    env = dict(os.environ, PYTHONPATH=str(site))
    where = subprocess.run(
        [sys.executable, "-c", "import grader; print(grader.__file__)"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert where.startswith(str(site)), "the installed copy is the one that runs"
    root = tmp_path / "course"
    course.temporary_course(root, [A])
    folder = tmp_path / "s"
    folder.mkdir()
    (folder / "lost.ipynb").write_text("")
    done = subprocess.run(
        [site / "bin" / "course-grader", "grade", A, "--submissions", str(folder), "--root", str(root), "--no-sandbox"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    rows = list(csv.DictReader(open(root / "grades" / f"{A}.csv", encoding="utf-8")))
    assert [(r["student_id"], r["status"]) for r in rows] == [("lost", "invalid")]


@pytest.mark.unit
def test_worker_resources_are_checked_before_anything_is_graded(tmp_path, capsys):
    from grader.__main__ import main

    (tmp_path / "s").mkdir()
    base = ["grade", A, "--submissions", str(tmp_path / "s"), "--no-sandbox"]
    assert main(base + ["--resources", "GPU=1"]) == 2
    assert "--resources needs --scheduler" in capsys.readouterr().err
    assert main(base + ["--scheduler", "local", "--resources", "GPU"]) == 2
    assert "write NAME=N" in capsys.readouterr().err
