"""A picture and a few lines about how a class did on an assignment."""

from __future__ import annotations

import statistics
from pathlib import Path

from nbgrader.api import Gradebook

from grader.course import nbgrader_course as course
from grader.grading.grade import graded_metadata, keyed_cells


def collect_scores(assignment: str, db_url: str | None = None, root: Path | None = None):

    config = course.load_config(root, db_url)
    with Gradebook(course.db_url(config)) as gradebook:
        found = gradebook.find_assignment(assignment)
        cells = keyed_cells(found)  # the CSV's keys: <notebook>:<cell> where notebooks share a name
        items = [(key, points) for key, _, _, points in cells]
        scores, passed, flagged, by_hand = [], {key: 0 for key, _ in items}, {}, {}
        for submission in found.submissions:
            scores.append(submission.code_score)
            by_hand[submission.student_id] = course.points_to_grade_by_hand(submission)
            flags = (graded_metadata(config, assignment, submission.student_id) or {}).get("flags", [])
            if flags:
                flagged[submission.student_id] = flags
            for key, notebook, name, points in cells:
                grade = gradebook.find_grade(name, notebook, assignment, submission.student_id)
                passed[key] += grade.score >= points
        return scores, items, passed, found.max_code_score, flagged, by_hand


def report(assignment: str, db_url: str | None = None, out: Path | None = None, root: Path | None = None) -> str:
    scores, items, passed, max_score, flagged, by_hand = collect_scores(assignment, db_url, root)
    if out is None:
        out = course.course_root(course.load_config(root)) / "grades" / f"{assignment}.png"
    out.parent.mkdir(parents=True, exist_ok=True)
    n = len(scores)
    lines = [f"{assignment}: {n} graded submissions, autograded points out of {max_score:g}"]
    if n:
        lines.append(
            f"score mean {statistics.mean(scores):.1f}, median {statistics.median(scores):g}, "
            f"min {min(scores):g}, max {max(scores):g}; full marks: "
            f"{sum(s >= max_score for s in scores)}"
        )
    for name, points in items:
        rate = passed[name] / n if n else 0.0
        lines.append(f"  {name:<28} {points:g} pts  passed by {passed[name]}/{n} ({rate:.0%})")
    waiting = {student: points for student, points in by_hand.items() if points}
    lines.append(f"still to grade by hand (Formgrader): {sum(waiting.values()):g} points in {len(waiting)} submissions")
    lines.append(
        f"flagged (tried to change how they are graded; read docs/grade-integrity.md, 'Reading a flag'): {len(flagged)}"
    )
    lines += [f"  {student}: {'; '.join(flags)}" for student, flags in sorted(flagged.items())]

    # matplotlib here, not at the top: its import (0.4 s) would otherwise slow every command.
    from matplotlib.figure import Figure

    # A Figure of its own (no pyplot): no global backend or open-figure state to set or clean.
    fig = Figure(figsize=(11, 4))
    left, right = fig.subplots(1, 2)
    bins = [x - 0.5 for x in range(int(max_score) + 2)]
    left.hist(scores, bins=bins, color="tab:blue", edgecolor="white")
    left.set_title(f"Score distribution ({n} students)")
    left.set_xlabel(f"autograded score (points, out of {max_score:g})")
    left.set_ylabel("students")
    names = [name for name, _ in items]
    right.barh(names, [100 * passed[name] / n if n else 0 for name in names], color="tab:green")
    right.set_xlim(0, 100)
    right.invert_yaxis()
    right.set_title("Pass rate per graded item")
    right.set_xlabel("students passing all of the item's tests (%)")
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    text = "\n".join(lines)
    out.with_suffix(".txt").write_text(text + "\n", encoding="utf-8")
    return text + f"\nplot: {out}"
