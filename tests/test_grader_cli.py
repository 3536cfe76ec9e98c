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
