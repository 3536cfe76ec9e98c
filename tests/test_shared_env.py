"""Environments shared by checkouts (issue 47 part 3): `make` from a second checkout with
VENV=<the first's environment> leaves that environment, and the first checkout's grader in it,
where they were; `make clean` removes only what this checkout made. Real make, a real (pip-less)
environment whose grader is "installed" from the first checkout by a .pth, as pip -e does."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parent.parent
FILES = ("Makefile", "requirements.txt", "pyproject.toml", "tools/lab_page_config.json", "tools/shared_env.py")


def checkout(folder: Path) -> Path:
    for name in FILES:
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / name, folder / name)
    (folder / "grader").mkdir()
    (folder / "grader" / "__init__.py").write_text("")
    return folder


def environment(folder: Path, grader_from: Path) -> Path:
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True)
    site = next(folder.glob("lib/python3*/site-packages"))
    (site / "__editable__.course_grader.pth").write_text(f"{grader_from}\n")
    return site


def make(where: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["make", "-C", str(where), *args], capture_output=True, text=True, timeout=60)


def test_a_second_checkout_leaves_a_shared_environment_and_the_first_grader_where_they_were(tmp_path):
    first, second = checkout(tmp_path / "first"), checkout(tmp_path / "second")
    env = tmp_path / "env"
    site = environment(env, first)
    pth = (site / "__editable__.course_grader.pth").read_text()

    done = make(second, "setup", f"VENV={env}")
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"{env} is {first}'s environment, left as it is" in done.stdout, done.stdout
    assert (site / "__editable__.course_grader.pth").read_text() == pth
    assert not (env / ".installed-requirements").exists(), "make wrote into the other checkout's environment"

    # Another checkout's requirements would change what the first runs: make stops and says so.
    with open(second / "requirements.txt", "a") as handle:
        handle.write("example-package==1.0\n")
    refused = make(second, "setup", f"VENV={env}")
    assert refused.returncode != 0
    assert f"refusing to change the environment {env}: it is {first}'s" in refused.stderr, refused.stderr
    assert "requirements.txt" in refused.stderr
    assert (site / "__editable__.course_grader.pth").read_text() == pth

    # make here runs this checkout's grader, whatever the environment's points at.
    run = make(
        second, "-s", f"VENV={env}", "--eval", "where:\n\t@$(PY) -c 'import grader; print(grader.__file__)'", "where"
    )
    assert run.stdout.strip() == str(second / "grader" / "__init__.py"), run.stdout + run.stderr

    cleaned = make(second, "clean", f"VENV={env}")
    assert cleaned.returncode == 0 and env.is_dir(), cleaned.stdout + cleaned.stderr
    assert "left" in cleaned.stdout and "outside this checkout" in cleaned.stdout


def test_make_clean_removes_this_checkouts_own_environment(tmp_path):
    first = checkout(tmp_path / "first")
    environment(first / ".venv", first)
    done = make(first, "clean")
    assert done.returncode == 0, done.stdout + done.stderr
    assert not (first / ".venv").exists()
