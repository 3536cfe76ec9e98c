"""Where grading processes claim their sandbox uids: a folder only the grading user can write,
never predictable names in the shared /tmp (another user could make them first); and what a
killed holder of a uid left in the temporary folder is removed by the next one."""

import os
import shutil
import stat
import subprocess
import sys

import pytest

from grader.isolation import uids

pytestmark = pytest.mark.unit


@pytest.fixture
def locks(tmp_path, monkeypatch):
    folder = tmp_path / "locks"
    monkeypatch.setattr(uids, "ROOT_LOCKS", str(folder))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "runtime"))
    monkeypatch.setattr(uids, "_claimed", {})
    return folder if os.geteuid() == 0 else tmp_path / "runtime" / "course-grader"


def test_the_lock_folder_is_made_private(locks):
    assert uids.lock_folder() == str(locks)
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
        uids.hold_slot("probe", 2)


def test_two_live_processes_hold_different_slots_and_a_slot_frees_when_its_holder_ends(locks):
    assert uids.hold_slot("probe", 3) == 0
    probe = "import sys; from grader.isolation import uids; uids.ROOT_LOCKS = sys.argv[1]; print(uids.hold_slot('probe', 3))"
    env = dict(os.environ)
    other = subprocess.run([sys.executable, "-c", probe, str(locks)], env=env, capture_output=True, text=True)
    assert other.stdout.strip() == "1", other.stderr
    # Its holder gone, slot 1 is free again; 0 is still held here.
    again = subprocess.run([sys.executable, "-c", probe, str(locks)], env=env, capture_output=True, text=True)
    assert again.stdout.strip() == "1", again.stderr
    assert not any(name.startswith("course-grader-probe") for name in os.listdir("/tmp"))


def leftover(folder, name: str, uid: int):
    """A kernel's folder as a killed grading process leaves it: owned by its sandbox uid, with a
    file inside."""
    path = folder / name
    path.mkdir()
    (path / "kernel.json").write_text("{}")
    shutil.chown(path / "kernel.json", uid, uid)
    shutil.chown(path, uid, uid)
    return path


def test_only_the_kernel_folders_of_the_held_uid_are_removed(tmp_path):
    # Without root the folders are the user's own (kernels run as the grader), and no other uid can own one.
    root = os.geteuid() == 0
    mine = uids.CLAIMED_UIDS[0] if root else os.geteuid()
    sockets = leftover(tmp_path, uids.SOCKETS_PREFIX + "a1", mine)
    scratch = leftover(tmp_path, uids.SCRATCH_PREFIX + "b2", mine)
    # A live process of another uid, a folder of another name, a link to a folder of the uid: kept.
    kept = [leftover(tmp_path, "notebooks", mine), leftover(tmp_path, "elsewhere", mine)]
    if root:
        kept.append(leftover(tmp_path, uids.SOCKETS_PREFIX + "c3", uids.CLAIMED_UIDS[1]))
    link = tmp_path / (uids.SCRATCH_PREFIX + "d4")
    link.symlink_to(tmp_path / "elsewhere")
    assert sorted(uids.remove_leftovers(mine, str(tmp_path))) == sorted([str(sockets), str(scratch)])
    assert not sockets.exists() and not scratch.exists()
    assert all(path.is_dir() for path in kept) and link.is_symlink()
    assert (tmp_path / "elsewhere" / "kernel.json").exists(), "a link is removed, never followed"


@pytest.mark.skipif(os.geteuid() != 0, reason="folders owned by a sandbox uid: make test runs as root")
def test_a_killed_holders_folders_go_when_its_uid_is_claimed_again(locks, tmp_path):
    """A grading process killed outside its clean-up leaves its kernels' folders; the next
    process to claim that uid removes them, and those of a live holder of another uid stay.
    (Each process here has a temporary folder of its own: the real one holds the folders of
    graders that other tests run at the same time.)"""
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    claim = (
        "import os, sys; from grader.isolation import uids; uids.ROOT_LOCKS = sys.argv[1]; print(uids.claim_uid(), flush=True); "
        "sys.argv[2:] == ['kill'] and os._exit(0); sys.stdin.read()"
    )
    command = [sys.executable, "-c", claim, str(locks)]
    env = dict(os.environ, TMPDIR=str(temporary))
    live = subprocess.Popen(command + ["wait"], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        live_uid = int(live.stdout.readline())
        killed = subprocess.run(command + ["kill"], env=env, capture_output=True, text=True)
        killed_uid = int(killed.stdout)
        assert killed_uid != live_uid
        left = leftover(temporary, uids.SOCKETS_PREFIX + "x9", killed_uid)
        kept = leftover(temporary, uids.SCRATCH_PREFIX + "y8", live_uid)
        again = subprocess.run(command + ["kill"], env=env, capture_output=True, text=True)
        assert int(again.stdout) == killed_uid, again.stderr
        assert not left.exists(), "the killed holder's folder was removed by the next holder of its uid"
        assert kept.exists(), "a live holder's folder stays"
    finally:
        live.communicate("")
