"""`make bench`: plain nbgrader against the grader, kernels started normally and
forked from the warm template (grader/kernels/template.py), side by side in one run.

Every row grades the same generated submissions of one assignment (a mix of
correct, blank and partly wrong notebooks) in a scratch course of its own, so
the repository's gradebook is untouched:

- plain `nbgrader autograde`, serially, with nbgrader's own autograde and
  normally started kernels (no sandbox, no grader code);
- `python -m grader grade --jobs 1` and `--jobs 2`, kernels started normally
  (GRADER_KERNEL_TEMPLATE=off) and forked from the template.

It prints one table: submissions per minute, the ratio to plain nbgrader, and
the cost of one submission (worker-seconds: elapsed x jobs / submissions)
split into kernel start (a kernel ready with torch imported, timed separately
for each way of starting), cells (the correct notebook's cells run in a warm
kernel, timed separately) and the rest, nbgrader's own work. It checks that
every row gave every student the same score. Timings are measured, never asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat
from jupyter_client.manager import AsyncKernelManager
from nbgrader.api import Gradebook
from traitlets.config import Config

from grader.isolation.sandbox import SandboxedKernelManager
from grader.isolation.uids import FIRST_UID
from grader.kernels.template import GRADER_KERNEL
from tools import cells, course

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
SWITCH = "GRADER_KERNEL_TEMPLATE"
# nbgrader as a course would configure it without this repository's grader.
PLAIN_CONFIG = """c = get_config()
c.CourseDirectory.course_id = "pytorch-building-blocks"
c.CourseDirectory.source_directory = "solutions"
c.CourseDirectory.release_directory = "exercises"
c.Execute.timeout = 60
c.OverwriteCells.add_missing_cells = True
"""


def make_submissions(assignment: str, count: int) -> dict[str, nbformat.NotebookNode]:
    wrong = cells.read_wrong_answers(assignment)
    kinds = [
        ("correct", lambda i: cells.answered(assignment)),
        ("blank", lambda i: cells.exercise(assignment)),
        ("wrong", lambda i: cells.answered(assignment, {wrong[i % len(wrong)].answer_id: wrong[i % len(wrong)].code})),
    ]
    return {f"student{i:03d}_{kinds[i % 3][0]}": kinds[i % 3][1](i) for i in range(count)}


def environment(template: bool) -> dict[str, str]:
    return dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}", **{SWITCH: "on" if template else "off"})


def plain_nbgrader(assignment: str, subs: dict, work: Path) -> tuple[float, dict[str, float]]:
    root = work / "plain"
    course_api = course.temporary_course(root, [assignment])
    course.generate(course_api, assignment)
    (root / "nbgrader_config.py").write_text(PLAIN_CONFIG)
    for student, nb in subs.items():
        folder = root / "submitted" / student / assignment
        folder.mkdir(parents=True)
        nbformat.write(nb, folder / f"{assignment}.ipynb")
    db_url = f"sqlite:///{root / 'gradebook.db'}"
    start = time.perf_counter()
    subprocess.run(
        [
            str(BIN / "nbgrader"),
            "autograde",
            assignment,
            f"--CourseDirectory.root={root}",
            f"--CourseDirectory.db_url={db_url}",
            f"--Exchange.root={root / 'exchange'}",
            "--log-level=ERROR",
        ],
        cwd=root,
        env=environment(template=False),
        check=True,
        capture_output=True,
    )
    elapsed = time.perf_counter() - start
    with Gradebook(db_url) as gradebook:
        scores = {s: gradebook.find_submission(assignment, s).code_score for s in subs}
    return elapsed, scores


def our_grader(assignment: str, downloads: Path, work: Path, jobs: int, template: bool):
    root = work / f"ours-{jobs}-{'template' if template else 'normal'}"
    # As for plain nbgrader above: the course's gradebook exists before the clock starts
    # (a once-per-course cost, not a per-class one).
    course.register(course.temporary_course(root, [assignment]), assignment)
    out = root / "grades.csv"
    start = time.perf_counter()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "grader",
            "grade",
            assignment,
            "--submissions",
            str(downloads),
            "--jobs",
            str(jobs),
            "--root",
            str(root),
            "--out",
            str(out),
        ],
        cwd=ROOT,
        env=environment(template),
        capture_output=True,
        text=True,
    )
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"grader failed:\n{done.stdout[-2000:]}{done.stderr[-3000:]}")
    with open(out, newline="", encoding="utf-8") as handle:
        scores = {row["student_id"]: float(row["score"]) for row in csv.DictReader(handle)}
    return elapsed, scores


# -- the parts of one submission's cost ----------------------------------------------------------------
async def _start_once(sandboxed: bool, code: str | None) -> tuple[float, float | None]:
    """Seconds until a kernel is ready with torch imported; then seconds to run `code` in it."""
    with tempfile.TemporaryDirectory() as scratch:
        config = Config()
        if sandboxed:
            config.SandboxedKernelManager.scratch = scratch
            config.SandboxedKernelManager.uid = FIRST_UID
            os.chmod(scratch, 0o700)
        # The grader's own kernel spec: forked from the template unless the switch is off.
        kind = SandboxedKernelManager if sandboxed else AsyncKernelManager
        manager = kind(kernel_name=GRADER_KERNEL, config=config)
        began = time.perf_counter()
        await manager.start_kernel(cwd=scratch, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        client = manager.client()
        client.start_channels()
        try:
            await client.wait_for_ready(timeout=120)
            await client.execute_interactive("import torch", timeout=120)
            started = time.perf_counter() - began
            ran = None
            if code is not None:
                began = time.perf_counter()
                await client.execute_interactive(code, timeout=120, output_hook=lambda msg: None)
                ran = time.perf_counter() - began
        finally:
            client.stop_channels()
            await manager.shutdown_kernel(now=True)
    return started, ran


def kernel_start(sandboxed: bool, template: bool, repeat: int = 3) -> float:
    os.environ[SWITCH] = "on" if template else "off"
    times = [asyncio.run(_start_once(sandboxed, None))[0] for _ in range(repeat + 1)]
    return statistics.median(times[1:])  # the first may include starting the template


def cells_time(assignment: str, repeat: int = 3) -> float:
    os.environ[SWITCH] = "on"
    code = "\n".join(c.source for c in cells.answered(assignment).cells if c.cell_type == "code")
    return statistics.median(asyncio.run(_start_once(True, code))[1] for _ in range(repeat))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--assignment", default="01_blocks")
    parser.add_argument("--count", type=int, default=30)
    args = parser.parse_args()
    n = args.count
    subs = make_submissions(args.assignment, n)
    runs = []  # (label, jobs, elapsed, scores, start)
    with tempfile.TemporaryDirectory(prefix="grader-bench-") as tmp:
        work = Path(tmp)
        downloads = work / "downloads"
        downloads.mkdir()
        for student, nb in subs.items():
            nbformat.write(nb, downloads / f"{student}.ipynb")
        print(f"grading {n} submissions of {args.assignment} five ways ...", file=sys.stderr)
        elapsed, scores = plain_nbgrader(args.assignment, subs, work)
        runs.append(("plain nbgrader autograde (serial)", 1, elapsed, scores, kernel_start(False, False)))
        for template in (False, True):
            start = kernel_start(True, template)
            for jobs in (1, 2):
                elapsed, scores = our_grader(args.assignment, downloads, work, jobs, template)
                label = f"grader, {'template' if template else 'normal start'}, --jobs {jobs}"
                runs.append((label, jobs, elapsed, scores, start))
        run_cells = cells_time(args.assignment)
    base_rate = n / runs[0][2] * 60
    print(
        f"\n{n} submissions of {args.assignment} on {os.cpu_count()} cores; cost = worker-seconds per "
        "submission (kernel start and cells timed separately, nbgrader = the rest)"
    )
    header = f"{'':40} {'subs/min':>9} {'ratio':>6} {'s/sub':>6} {'start':>6} {'cells':>6} {'nbgrader':>8}"
    print(header)
    print("-" * len(header))
    for label, jobs, elapsed, _, start in runs:
        rate = n / elapsed * 60
        cost = elapsed * jobs / n
        print(
            f"{label:40} {rate:9.1f} {rate / base_rate:5.2f}x {cost:6.2f} {start:6.2f} {run_cells:6.2f} "
            f"{cost - start - run_cells:8.2f}"
        )
    same = all(scores == runs[0][3] for _, _, _, scores, _ in runs)
    print(f"same scores in every row: {'yes' if same else 'NO'}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
