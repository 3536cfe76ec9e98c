"""`make bench`: plain `nbgrader autograde` against `grader grade --jobs 2`, side by side.

Both grade the same generated submissions of one assignment (a mix of correct,
blank and partly wrong notebooks) in scratch courses, so the repository's
gradebook is untouched. Prints submissions per minute for each and their ratio,
and checks that both give the same scores.
"""
from __future__ import annotations

import argparse
import csv
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat

from tools import cells, course

ROOT = Path(__file__).resolve().parent.parent


def make_submissions(assignment: str, count: int) -> dict[str, nbformat.NotebookNode]:
    wrong = cells.read_wrong_answers(assignment)
    kinds = [("correct", lambda i: cells.answered(assignment)),
             ("blank", lambda i: cells.exercise(assignment)),
             ("wrong", lambda i: cells.answered(assignment, {wrong[i % len(wrong)].answer_id:
                                                              wrong[i % len(wrong)].code}))]
    return {f"student{i:03d}_{kinds[i % 3][0]}": kinds[i % 3][1](i) for i in range(count)}


def plain_nbgrader(assignment: str, subs: dict, work: Path) -> tuple[float, dict[str, float]]:
    root = work / "plain"
    course_api = course.temporary_course(root, [assignment])
    course.generate(course_api, assignment)
    for student, nb in subs.items():
        folder = root / "submitted" / student / assignment
        folder.mkdir(parents=True)
        nbformat.write(nb, folder / f"{assignment}.ipynb")
    db_url = f"sqlite:///{root / 'gradebook.db'}"
    start = time.perf_counter()
    subprocess.run([str(Path(sys.executable).parent / "nbgrader"), "autograde", assignment,
                    f"--CourseDirectory.root={root}", f"--CourseDirectory.db_url={db_url}",
                    f"--Exchange.root={root / 'exchange'}", "--log-level=ERROR"],
                   cwd=ROOT, check=True, capture_output=True)
    elapsed = time.perf_counter() - start
    from nbgrader.api import Gradebook

    with Gradebook(db_url) as gradebook:
        scores = {s: gradebook.find_submission(assignment, s).code_score for s in subs}
    return elapsed, scores


def our_grader(assignment: str, subs: dict, work: Path, jobs: int) -> tuple[float, dict[str, float]]:
    root = work / "ours"
    course.temporary_course(root, [assignment])
    folder = work / "downloads"
    folder.mkdir()
    for student, nb in subs.items():
        nbformat.write(nb, folder / f"{student}.ipynb")
    out = work / "grades.csv"
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "grader", "grade", assignment, "--submissions", str(folder),
                    "--jobs", str(jobs), "--root", str(root), "--out", str(out)],
                   cwd=ROOT, check=True, capture_output=True)
    elapsed = time.perf_counter() - start
    with open(out, newline="", encoding="utf-8") as handle:
        scores = {row["student_id"]: float(row["score"]) for row in csv.DictReader(handle)}
    return elapsed, scores


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--assignment", default="01_blocks")
    parser.add_argument("--count", type=int, default=40)
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    subs = make_submissions(args.assignment, args.count)
    with tempfile.TemporaryDirectory(prefix="grader-bench-") as tmp:
        work = Path(tmp)
        plain_time, plain_scores = plain_nbgrader(args.assignment, subs, work)
        ours_time, our_scores = our_grader(args.assignment, subs, work, args.jobs)
    plain_rate, our_rate = args.count / plain_time * 60, args.count / ours_time * 60
    print(f"{args.count} submissions of {args.assignment}")
    print(f"  nbgrader autograde (serial):      {plain_time:6.1f} s  {plain_rate:6.1f} submissions/min")
    print(f"  grader grade --jobs {args.jobs} (sandboxed): {ours_time:6.1f} s  {our_rate:6.1f} submissions/min")
    print(f"  ratio: {our_rate / plain_rate:.2f}x")
    same = plain_scores == our_scores
    print(f"  same scores from both: {'yes' if same else 'NO'}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
