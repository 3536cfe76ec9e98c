"""nbgrader's exchange with hand-ins that only their student and the grader can read.

nbgrader 0.9.6's `submit` leaves every hand-in readable by all (files 0644, the
hand-in's folder 0777). Other students are kept out only because the inbound
folder cannot be listed and each hand-in's name ends with a random string.
`PrivateSubmit` (the students' exchange, hub/config/users/nbgrader_config.py)
closes the hand-in right after nbgrader wrote it: folders 0750, files 0640.
The inbound folder is set-group-id and belongs to the grader's group
(`layout`, which hub/serve.py runs), so the hand-in's group is the grader's: the grader reads it,
another student can neither read nor change it even knowing its name; the
inbound folder's sticky bit keeps others from renaming or deleting it.
"""

from __future__ import annotations

import os
import pwd
import stat
from pathlib import Path

from nbgrader.exchange.default.submit import ExchangeSubmit

FOLDER_MODE = 0o750
FILE_MODE = 0o640


def owned(path: Path, user: pwd.struct_passwd, mode: int) -> None:
    path.mkdir(exist_ok=True)
    os.chown(path, user.pw_uid, user.pw_gid)
    os.chmod(path, mode)


def layout(state: Path, grader: pwd.struct_passwd, course_id: str) -> Path:
    """The shared exchange, laid out the way nbgrader's own release would, but safer:

    root        1777 root   anyone may create a course in it, nobody may rename another's
    <course>    0755 grader
    outbound    0755 grader released assignments, readable by all
    inbound     3733 grader students may create hand-ins, not list them; set-group-id
                            gives each hand-in the grader's group, sticky keeps others'
                            hand-ins from being renamed or deleted
    feedback    0711 grader enterable, not listable: each file is named by a hash only its
                            student can compute
    """
    root = state / "exchange"
    root.mkdir(exist_ok=True)
    os.chown(root, 0, 0)
    os.chmod(root, 0o1777)
    course = root / course_id
    owned(course, grader, 0o755)
    owned(course / "outbound", grader, 0o755)
    owned(course / "inbound", grader, stat.S_ISVTX | stat.S_ISGID | 0o733)
    owned(course / "feedback", grader, 0o711)
    return root


def close(path: str) -> None:
    """Make a hand-in readable by its owner and its group (the grader) only."""
    for folder, _, files in os.walk(path):
        os.chmod(folder, FOLDER_MODE)
        for name in files:
            os.chmod(os.path.join(folder, name), FILE_MODE)


class PrivateSubmit(ExchangeSubmit):
    def do_copy(self, src, dest, log=None):
        super().do_copy(src, dest, log)
        # copytree ends by copying the source folder's mode, which clears the
        # set-group-id bit the hand-in's folder got from inbound; the files
        # nbgrader writes next (timestamp, secret) would then get the student's
        # group and be unreadable to the grader. Re-make the folder in inbound
        # (where it inherits the bit again) and move the copied entries in.
        copied = dest + ".copied"
        os.rename(dest, copied)
        os.mkdir(dest, 0o700)
        for name in os.listdir(copied):
            os.rename(os.path.join(copied, name), os.path.join(dest, name))
        os.rmdir(copied)

    def copy_files(self):
        super().copy_files()
        close(os.path.join(self.inbound_path, self.assignment_filename))
