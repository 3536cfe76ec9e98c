"""tests/mutants/report.txt for a run over some lessons: the lessons run now, the others' lines kept.

    python -m tools.mutant_report LESSON [LESSON ...]     (make fix runs it)

A fix mid-term changes one lesson's cells; the mutants of every other lesson would only come out
as they did (their fingerprints say their cells and the tools are as they were). This writes the
report with the named lessons' lines from this run and every other lesson's lines from the report
already there, each lesson's fingerprint as it is now. It refuses (ReportError, naming the
lessons) when another lesson or the tools changed since the report: those need a run too (`make
mutants`, or name them). Whole lessons only: a changed test cell can kill another item's mutants.
"""

from __future__ import annotations

import re
import sys
import time
from pathlib import Path

import matplotlib
import torch

from tools import mutants

ITEM_LINE = re.compile(r"^(\S+) (\S+): killed (\d+) of (\d+), (\d+) equivalent$")


class ReportError(Exception):
    """The report cannot be updated for these lessons alone."""


def recorded(path: Path) -> tuple[dict[str, str], dict[str, list[str]]]:
    """The report's fingerprints, and each lesson's item and survivor lines."""
    fingerprints: dict[str, str] = {}
    lines: dict[str, list[str]] = {}
    for line in path.read_text(encoding="utf-8").splitlines() if path.exists() else []:
        words = line.split()
        if words[:1] == ["fingerprint"] and len(words) == 3:
            fingerprints[words[1]] = words[2]
        elif ITEM_LINE.match(line):
            lines.setdefault(words[0], []).append(line)
        elif words[:1] == ["survivor"] and len(words) == 4:
            lines.setdefault(words[1], []).append(line)
    return fingerprints, lines


def merged(path: Path, current: dict[str, str], rerun: dict[str, list[str]], seconds: float, header: str) -> str:
    """The report's text: `rerun` ({lesson: its item lines, then its survivor lines}) from this run,
    every other lesson of `current` (the fingerprints now: 'tools' and each lesson) from `path`."""
    old_prints, old_lines = recorded(path)
    stale = sorted(
        name for name in current if name not in rerun and (old_prints.get(name) != current[name] or not path.exists())
    )
    if stale:
        which = "the tools or tests/mutants/equivalent.txt" if "tools" in stale else ", ".join(stale)
        raise ReportError(
            f"{which} changed since {path.name} too (or it has no lines for them): "
            f"run make mutants, or name {'every lesson' if 'tools' in stale else ' '.join(stale)} as well"
        )
    lessons = [name for name in current if name != "tools"]
    items = [
        line for lesson in lessons for line in (rerun.get(lesson) or old_lines.get(lesson, [])) if " killed " in line
    ]
    survivors = [
        line
        for lesson in lessons
        for line in (rerun.get(lesson) or old_lines.get(lesson, []))
        if line.startswith("survivor ")
    ]
    counts = [tuple(map(int, m.groups()[2:])) for m in map(ITEM_LINE.match, items) if m]
    killed, total, equivalent = (sum(c[k] for c in counts) for k in range(3))
    text = [
        header,
        f"# Lessons run last: {' '.join(rerun)} ({seconds:.0f} s); every other lesson's lines are from an earlier run "
        "of cells and tools that its fingerprint says are unchanged.",
    ]
    text += [f"fingerprint {name} {sha}" for name, sha in current.items()]
    text += items + survivors
    text.append(f"mutants: killed {killed} of {total}, {equivalent} equivalent, {total - killed - equivalent} survived")
    return "\n".join(text) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Run every mutant of the named lessons (tools.mutants) and write the report with them."""
    chosen = list(sys.argv[1:] if argv is None else argv)
    unknown = sorted(set(chosen) - set(mutants.lessons()))
    if not chosen or unknown:
        print(
            f"usage: python -m tools.mutant_report LESSON [LESSON ...] ({'no such lesson: ' + ', '.join(unknown) if unknown else 'name one'})",
            file=sys.stderr,
        )
        return 2
    matplotlib.use("Agg")
    torch.set_num_threads(1)  # as tools.mutants: no OpenMP pool when the children are forked
    started = time.monotonic()
    results, errors = mutants.mutate(
        {lesson: mutants.cells_module.solution_cells(lesson) for lesson in chosen}, None, mutants.read_equivalents()
    )
    seconds = time.monotonic() - started
    rerun: dict[str, list[str]] = {lesson: [] for lesson in chosen}
    for item in results:
        print(item.line())
        rerun[item.lesson].append(item.line())
    for item in results:
        rerun[item.lesson] += [f"survivor {item.lesson} {item.item} {m.id}" for m in item.survivors]
    for error in errors:
        print(error, file=sys.stderr)
    print(mutants.summary(results))
    header = "# Written by `make mutants` (python -m tools.mutants --write-report) or make fix (python -m tools.mutant_report)."
    try:
        text = merged(mutants.REPORT, mutants.fingerprints(), rerun, seconds, header)
    except ReportError as error:
        print(f"{mutants.REPORT.relative_to(mutants.ROOT)} not written: {error}", file=sys.stderr)
        return 1
    mutants.REPORT.write_text(text, encoding="utf-8")
    if any(item.survivors for item in results):
        print(f"survivors: python -m tools.mutants {' '.join(chosen)} --survivors shows them", file=sys.stderr)
    return 1 if errors or any(item.survivors for item in results) else 0


if __name__ == "__main__":
    sys.exit(main())
