"""Where grading processes claim their sandbox uids: a folder only the grading user can write,
never predictable names in the shared /tmp (another user could make them first)."""

import os
import stat
import subprocess
import sys

import pytest

from grader import sandbox

pytestmark = pytest.mark.unit


@pytest.fixture
def locks(tmp_path, monkeypatch):
    folder = tmp_path / "locks"
    monkeypatch.setattr(sandbox, "ROOT_LOCKS", str(folder))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "runtime"))
    monkeypatch.setattr(sandbox, "_claimed", {})
    return folder if os.geteuid() == 0 else tmp_path / "runtime" / "course-grader"


def test_the_lock_folder_is_made_private(locks):
    assert sandbox.lock_folder() == str(locks)
    info = os.lstat(locks)
    assert stat.S_ISDIR(info.st_mode) and info.st_uid == os.geteuid() and stat.S_IMODE(info.st_mode) == 0o700


@pytest.mark.parametrize("kind", ["writable by others", "a symlink"])
def test_a_lock_folder_others_could_write_is_refused_with_the_fix(locks, tmp_path, kind):
    if kind == "a symlink":
        (tmp_path / "elsewhere").mkdir(mode=0o700)
        locks.parent.mkdir(exist_ok=True)
        locks.symlink_to(tmp_path / "elsewhere")
    else:
        locks.mkdir(parents=True)
        locks.chmod(0o777)
    with pytest.raises(RuntimeError, match="mode 0700, not a symlink"):
        sandbox.hold_slot("probe", 2)


def test_two_live_processes_hold_different_slots_and_a_slot_frees_when_its_holder_ends(locks):
    assert sandbox.hold_slot("probe", 3) == 0
    probe = (
        "import sys; from grader import sandbox; sandbox.ROOT_LOCKS = sys.argv[1]; print(sandbox.hold_slot('probe', 3))"
    )
    env = dict(os.environ)
    other = subprocess.run([sys.executable, "-c", probe, str(locks)], env=env, capture_output=True, text=True)
    assert other.stdout.strip() == "1", other.stderr
    # Its holder gone, slot 1 is free again; 0 is still held here.
    again = subprocess.run([sys.executable, "-c", probe, str(locks)], env=env, capture_output=True, text=True)
    assert again.stdout.strip() == "1", again.stderr
    assert not any(name.startswith("course-grader-probe") for name in os.listdir("/tmp"))
