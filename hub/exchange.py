"""nbgrader's exchange with hand-ins that only their student and the grader can read.

nbgrader 0.9.6's `submit` leaves every hand-in readable by all (files 0644, the
hand-in's folder 0777). Other students are kept out only because the inbound
folder cannot be listed and each hand-in's name ends with a random string.
`PrivateSubmit` (the students' exchange, hub/config/users/nbgrader_config.py)
closes the hand-in right after nbgrader wrote it: folders 0750, files 0640.
The inbound folder is set-group-id and belongs to the grader's group
(hub/serve.py), so the hand-in's group is the grader's: the grader reads it,
another student can neither read nor change it even knowing its name; the
inbound folder's sticky bit keeps others from renaming or deleting it.
"""

from __future__ import annotations

import os

from nbgrader.exchange.default.submit import ExchangeSubmit

FOLDER_MODE = 0o750
FILE_MODE = 0o640


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
