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
