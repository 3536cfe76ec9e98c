"""The grader's command line: arguments, refusals and warnings. (A module of its
own so that it runs beside the long class-grading tests of test_grader.py.)"""
import csv
import subprocess
import sys

from conftest import ROOT
from grader import sandbox
from tools import course

A = "01_blocks"


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
    missing = subprocess.run(command + ["--submissions", str(tmp_path / "nope")], cwd=ROOT,
                             capture_output=True, text=True)
    assert missing.returncode == 2 and "not a folder" in missing.stderr
    # The same command in this process: a second interpreter start-up buys nothing here.
    assert main(command[3:] + ["--submissions", str(folder), "--no-sandbox"]) == 0
    assert capsys.readouterr().err.count("WARNING: --no-sandbox") == 1
    rows = list(csv.DictReader(open(out, encoding="utf-8")))
    assert [(r["student_id"], r["score"], r["status"], r["detail"]) for r in rows] == \
        [("lost", "0", "invalid", "empty file")]


def test_sandbox_makes_every_folder_on_the_way_to_the_environment_reachable(monkeypatch):
    # A clone under /tmp (as CI makes) puts the venv below the sandbox's private
    # /tmp; folders bwrap made on its own would be 0700 and hide Python.
    monkeypatch.setattr(sandbox.sys, "prefix", "/tmp/clone/.venv")
    args = sandbox.command(["python"], "/tmp/scratch-1", "/tmp/sockets-1", memory_mb=100,
                           max_processes=10, file_mb=1, uid=64000)
    made = [args[i + 1] for i, arg in enumerate(args) if arg == "--dir"]
    assert "/tmp/clone" in made and "/tmp" not in made
    for folder in made:
        assert args[args.index(folder) - 3:args.index(folder)] == ["--perms", "0755", "--dir"]
    assert not any(f.startswith("/usr/") for f in made), "folders inside read-only binds exist already"
    tmpfs = args.index("--tmpfs")
    assert args[tmpfs + 1] == "/tmp" and tmpfs < args.index("/tmp/clone"), "/tmp is mounted before folders in it"
    binds = [args[i:i + 3] for i in range(len(args) - 2) if args[i] == "--ro-bind"]
    assert ["--ro-bind", "/tmp/clone/.venv", "/tmp/clone/.venv"] in binds, "the venv is bound read-only"


def test_sandbox_command_line_clears_the_environment_and_sets_only_the_allowlist(monkeypatch):
    monkeypatch.setenv("GRADER_TEST_TOKEN", "planted")
    monkeypatch.setenv("LC_ALL", "C.UTF-8")
    args = sandbox.command(["python"], "/tmp/scratch-2", "/tmp/sockets-2", memory_mb=100,
                           max_processes=10, file_mb=1, uid=64000)
    assert "--clearenv" in args and args.index("--clearenv") < args.index("--setenv")
    given = {args[i + 1]: args[i + 2] for i, arg in enumerate(args) if arg == "--setenv"}
    assert given["HOME"] == "/tmp/scratch-2" and given["LC_ALL"] == "C.UTF-8"
    assert "GRADER_TEST_TOKEN" not in given and "planted" not in args
    assert set(given) <= set(sandbox.PASSED_THROUGH) | {"LC_ALL", "HOME", "TMPDIR", "MPLCONFIGDIR", "PYTHONNOUSERSITE"}


def test_root_grades_the_course_there_with_its_own_config_and_leaves_tracked_files_alone(tmp_path):
    from grader.__main__ import main

    root = tmp_path / "other-course"
    course.temporary_course(root, [A])
    config_file = root / "nbgrader_config.py"
    config_file.write_text(config_file.read_text() + '\nc.CourseDirectory.course_id = "another-course"\n'
                           "c.Execute.timeout = 17\n")
    config = course.load_config(root)
    assert config.CourseDirectory.course_id == "another-course" and config.Execute.timeout == 17
    assert config.CourseDirectory.root == str(root)
    before = subprocess.run(["git", "status", "--porcelain", "exercises", "solutions"], cwd=ROOT,
                            capture_output=True, text=True).stdout
    folder = tmp_path / "s"
    folder.mkdir()
    (folder / "lost.ipynb").write_text("")
    assert main(["grade", A, "--submissions", str(folder), "--root", str(root), "--no-sandbox"]) == 0
    assert (root / "grades" / f"{A}.csv").exists() and (root / "gradebook.db").exists()
    after = subprocess.run(["git", "status", "--porcelain", "exercises", "solutions"], cwd=ROOT,
                           capture_output=True, text=True).stdout
    assert after == before, "grading rewrote tracked files"
    released = (ROOT / "exercises" / A / f"{A}.ipynb").read_bytes()
    assert (root / "exercises" / A / f"{A}.ipynb").read_bytes() == released, "the committed release is read, not rewritten"


def test_the_grader_imports_nothing_from_the_maintainers_tools():
    import ast

    for path in (ROOT / "grader").glob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            assert not any(n == "tools" or n.startswith("tools.") for n in names), f"{path.name} imports tools"
