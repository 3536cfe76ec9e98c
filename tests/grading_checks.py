"""What the grading tests check around a graded class: a local listener that records whether
student code reached the network, the processes a hostile submission leaves behind, and the
kernels a grader failed to stop, and a course whose interpreter is gone, and what a graded
notebook printed. Shared by test_grader.py, test_handin.py, the nbgrader path
(nbgrader_path_cases.py) and the other modules that read graded notebooks."""

import json
import socket
import subprocess
import threading
from pathlib import Path

import nbformat
from nbgrader.api import Gradebook, MissingEntry

from grader.kernels.template import GRADER_KERNEL

# Ample for the lesson's cells (imports, the slowest, take ~1.5 s) and for a fork
# bomb to fail on the process limit on a loaded machine; short for loops.
CELL_TIMEOUT = 6


def autograded(root: Path, student: str, assignment: str) -> nbformat.NotebookNode:
    """The notebook nbgrader's layout keeps for `student`'s graded `assignment` in course `root`."""
    return nbformat.read(root / "autograded" / student / assignment / f"{assignment}.ipynb", as_version=4)


def printed(root: Path, student: str, assignment: str) -> str:
    """Everything the code cells of that graded notebook printed (stdout and stderr)."""
    notebook = autograded(root, student, assignment)
    return "".join(o.get("text", "") for c in notebook.cells if c.cell_type == "code" for o in c.get("outputs", []))


class Listener:
    """A local TCP server that records whether anything reached it."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen()
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.received = []
        self.stop = False
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while not self.stop:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.received.append(conn.recv(100))
            conn.close()

    def close(self):
        self.stop = True
        self.thread.join()
        self.sock.close()


def lingering(marker="4242"):
    out = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if line.strip() == f"sleep {marker}"]


def stray_kernels() -> list[int]:
    """Sandboxed kernels left behind: orphans, or still below this process once its grading is
    over. (Kernels of other tests grading at the same time run below their own grader.)"""
    import psutil

    me = psutil.Process()
    found = []
    for process in psutil.process_iter(["cmdline", "ppid"]):
        try:
            if any("grader-kernel-" in part for part in process.info["cmdline"] or []) and (
                process.info["ppid"] == 1 or me in process.parents()
            ):
                found.append(process.pid)
        except psutil.Error:
            continue
    return found


def broken_kernel_spec(tmp_path):
    """A Jupyter data folder whose python3 kernel runs an interpreter behind a broken symlink
    (a course copy whose .venv points nowhere)."""
    data = tmp_path / "jupyter-data"
    (tmp_path / "venv").symlink_to(tmp_path / "gone")
    interpreter = tmp_path / "venv" / "bin" / "python"
    for name in ("python3", GRADER_KERNEL):
        spec = data / "kernels" / name
        spec.mkdir(parents=True)
        spec.joinpath("kernel.json").write_text(
            json.dumps(
                {
                    "argv": [str(interpreter), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                    "display_name": "Python 3",
                    "language": "python",
                }
            )
        )
    return data, interpreter


def auto_scores(db_url: str, assignment: str, student: str) -> list[float]:
    """The autograded points the gradebook holds for a student's submission (none: [])."""
    with Gradebook(db_url) as gradebook:
        try:
            submission = gradebook.find_submission(assignment, student)
        except MissingEntry:
            return []
        return [g.auto_score for nb in submission.notebooks for g in nb.grades if g.auto_score]
