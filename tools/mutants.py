"""Mutation testing of every reference answer: do a lesson's tests notice a wrong answer?

    python -m tools.mutants [LESSON ...] [--item ANSWER_ID] [--survivors] [--write-report]

For every answer cell of a lesson's reference solution (solutions/<id>/<id>.ipynb), the
operators of tools/mutant_operators.py make mutants of the code between the solution
markers; each mutant replaces its answer cell and the lesson's code cells run in-process
(tools.cells.run, a fresh namespace each time). A mutant is killed when any graded test
cell fails: an exception, a time-out (10 s by default: a changed constant can make a
while-loop spin forever), or the process dying. One line per item and a total:

    <lesson> <item>: killed K of N, E equivalent
    mutants: killed K of N, E equivalent, S survived

N counts the mutants that compiled and ran, E the survivors listed in
tests/mutants/equivalent.txt, and S = N - K - E; the exit status is 1 when S > 0 or an
entry of that file is stale (it names no mutant, or a killed one). `--survivors` prints
each surviving mutant, its id and a diff of its cell against the reference (both
unparsed), so that a test can be written to kill it.

tests/mutants/equivalent.txt holds one line per mutant that no test can tell apart from
the reference, sorted: `<lesson> <item> <mutant-id> -- <one-line reason>` (`#` comments
and blank lines are allowed).

How it runs: every mutant in its own process, forked from this one (torch, numpy and
matplotlib already imported), at most `--jobs` (2) at a time; each child works in a
scratch folder of its own (its cwd and tempfile's folder, removed at the end), its output
thrown away, with one torch thread, and a CPU-time timer (SIGPROF, so a busy machine does not
cut a slow run short) raises a BaseException in its main thread at the time limit, past the
cells' own `except Exception`; a child that does not answer within 60 s of wall-clock time
(or six times the limit) is killed. The reference (every answer cell unparsed) first runs once in
this process, in a scratch folder, so that the children inherit what a first run loads
(about 1.5 s of torch's lazy imports per lesson 4 run otherwise), and once more as the first
child; both must pass every graded test.

Sleeps are simulated in the children and in the parent's reference run (only there, and
undone after it): `time.sleep` adds its seconds to an
offset instead of waiting, and `time.perf_counter`, `monotonic`, `time` (and their `_ns`
forms) and `timeit.default_timer` read the real clock plus that offset, so a timing test
(lesson 7's `timed` sleeps 50 ms per call) sees the seconds it slept, at once, and real
work is still timed for real.

`--write-report` (a run over every lesson and item) writes tests/mutants/report.txt: the
lines above, each survivor's id, and sha256 fingerprints of each lesson's code cells (as
the solutions notebook holds them: the answer and test cells and the cells they rely on)
and of the tools (tools/mutants*.py and the equivalents file). tests/test_mutants.py
fails when they no longer match: a test or reference cell changed since the report.

Why not cosmic-ray (8.7.0): its operators can mutate a string in memory
(`cosmic_ray.mutating.mutate_code(code, operator, occurrence)`), but they work on parso's
tree, not `ast`, so the PyTorch operators (written on `ast`) would need a second tree
model, and ids by position could not be shared; its constants change by +-1 only (not 0,
2x or ""), its operators come as stevedore plug-ins of the installed distribution, and it
pulls aiohttp, gitpython, sqlalchemy, rich and nine more packages into a course
environment whose every version is pinned. The generic operators here are a few dozen
lines of `ast` each.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import difflib
import hashlib
import io
import multiprocessing
import multiprocessing.connection
import os
import shutil
import signal
import sys
import tempfile
import time
import timeit
from dataclasses import dataclass, field
from pathlib import Path

import matplotlib
import torch

from tools import cells as cells_module
from tools.mutant_operators import Mutant, mutants

ROOT = cells_module.ROOT
FOLDER = ROOT / "tests" / "mutants"
EQUIVALENTS = FOLDER / "equivalent.txt"
REPORT = FOLDER / "report.txt"
TOOLS = tuple(
    ROOT / "tools" / name for name in ("mutants.py", "mutant_ast.py", "mutant_operators.py", "mutant_contexts.py")
)
LIMIT = 10.0  # CPU seconds per mutant
WALL = 60.0  # wall-clock seconds (or six times the limit, if more) before a child that does not answer is killed
JOBS = 2


class MutantTimeout(BaseException):
    """Raised in a child's main thread at the time limit (a BaseException: cells catch Exception)."""


@dataclass
class ItemResult:
    lesson: str
    item: str
    reference: str  # the answer cell, unparsed
    mutants: list[Mutant]
    killed: dict[str, str] = field(default_factory=dict)  # mutant id -> the first failure
    equivalent: dict[str, str] = field(default_factory=dict)  # surviving mutant id -> reason

    @property
    def survivors(self) -> list[Mutant]:
        return [m for m in self.mutants if m.id not in self.killed and m.id not in self.equivalent]

    def line(self) -> str:
        return f"{self.lesson} {self.item}: killed {len(self.killed)} of {len(self.mutants)}, {len(self.equivalent)} equivalent"


def lessons() -> list[str]:
    return sorted(p.name for p in (ROOT / "lessons").iterdir() if (p / "exercise.py").exists())


# -- the equivalents file


def read_equivalents(path: Path = EQUIVALENTS) -> dict[tuple[str, str, str], tuple[str, int]]:
    """(lesson, item, mutant id) -> (reason, line number)."""
    found: dict[tuple[str, str, str], tuple[str, int]] = {}
    if not path.exists():
        return found
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip() or line.startswith("#"):
            continue
        head, sep, reason = line.partition(" -- ")
        words = head.split()
        if not sep or len(words) != 3 or not reason.strip():
            raise ValueError(f"{path}:{number}: expected '<lesson> <item> <mutant-id> -- <one-line reason>'")
        found[(words[0], words[1], words[2])] = (reason.strip(), number)
    return found


# -- the children


@contextlib.contextmanager
def simulated_sleep():
    """time.sleep advances a clock offset instead of waiting; every clock reads real time plus it."""
    offset = [0.0]
    names = ("perf_counter", "monotonic", "time")
    saved = {name: getattr(time, name) for name in (*names, *(f"{n}_ns" for n in names), "sleep")}
    saved_timer = timeit.default_timer

    def sleep(seconds: float) -> None:
        if seconds < 0:
            raise ValueError("sleep length must be non-negative")
        offset[0] += seconds

    def clock(read):
        return lambda: read() + offset[0]

    def clock_ns(read):
        return lambda: int((read() + offset[0]) * 1e9)

    time.sleep = sleep
    for name in names:
        setattr(time, name, clock(saved[name]))
        setattr(time, f"{name}_ns", clock_ns(saved[name]))
    timeit.default_timer = time.perf_counter
    try:
        yield
    finally:
        for name, value in saved.items():
            setattr(time, name, value)
        timeit.default_timer = saved_timer


def _alarm(signum, frame) -> None:
    raise MutantTimeout()


def _child(conn, cells: list[dict], replace: dict[str, str], limit: float, scratch: str) -> None:
    """Run the cells with `replace` in place; send None (every graded test passed) or the first failure."""
    os.chdir(scratch)
    tempfile.tempdir = scratch
    quiet = os.open(os.devnull, os.O_WRONLY)
    os.dup2(quiet, 1)  # the cells' prints and warnings
    os.dup2(quiet, 2)
    torch.set_num_threads(1)
    signal.signal(signal.SIGPROF, _alarm)
    with simulated_sleep():
        signal.setitimer(signal.ITIMER_PROF, limit)
        try:
            outcome = cells_module.run(cells, replace)
            failed = [f"{test} failed: {error!r}" for test, error in outcome.items() if error is not None]
            result = failed[0] if failed else None
        except MutantTimeout:
            result = f"time-out after {limit:g} CPU-s"
        except BaseException as error:  # noqa: B036 -- SystemExit from a mutant is a failure like any other
            result = f"the run stopped: {error!r}"
        finally:
            signal.setitimer(signal.ITIMER_PROF, 0)
    conn.send(None if result is None else result[:300])
    conn.close()


def run_all(jobs: list[tuple[object, list[dict], dict[str, str]]], workers: int = JOBS, limit: float = LIMIT):
    """Run each (key, cells, replace) in a forked child, `workers` at a time; {key: None or the failure}."""
    context = multiprocessing.get_context("fork")
    results: dict = {}
    pending = list(reversed(jobs))
    running: dict = {}  # sentinel -> (key, process, connection, started)
    scratch_root = tempfile.mkdtemp(prefix="mutants-")
    wall = max(WALL, 6 * limit)
    try:
        while pending or running:
            while pending and len(running) < max(workers, 1):
                key, cells, replace = pending.pop()
                scratch = tempfile.mkdtemp(dir=scratch_root)
                reader, writer = context.Pipe(duplex=False)
                process = context.Process(target=_child, args=(writer, cells, replace, limit, scratch), daemon=True)
                process.start()
                writer.close()
                running[process.sentinel] = (key, process, reader, time.monotonic())
            ready = multiprocessing.connection.wait(list(running), timeout=1.0)
            for sentinel in list(running):
                key, process, reader, started = running[sentinel]
                if sentinel not in ready and time.monotonic() - started < wall:
                    continue
                if sentinel not in ready:
                    process.kill()
                    results[key] = f"time-out: killed after {wall:g} s of wall-clock time"
                elif reader.poll():
                    results[key] = reader.recv()
                else:
                    results[key] = f"the process died (exit code {process.exitcode})"
                process.join()
                reader.close()
                del running[sentinel]
    finally:
        for _key, process, _reader, _started in running.values():
            process.kill()
        shutil.rmtree(scratch_root, ignore_errors=True)
    return results


def warm_up(cells: list[dict], replace: dict[str, str]) -> str | None:
    """Run the reference here once, in a scratch folder, so that every child inherits what a first
    run loads (torch's lazy modules, the compiled cells); None, or the first graded test that fails."""
    cwd = os.getcwd()
    with tempfile.TemporaryDirectory(prefix="mutants-") as scratch:
        os.chdir(scratch)
        try:
            with (
                simulated_sleep(),
                contextlib.redirect_stdout(io.StringIO()),
                contextlib.redirect_stderr(io.StringIO()),
            ):
                outcome = cells_module.run(cells, replace)
        finally:
            os.chdir(cwd)
    return next((f"{test} failed: {error!r}" for test, error in outcome.items() if error is not None), None)


# -- one run over lessons


def mutate(
    lesson_cells: dict[str, list[dict]],
    items: set[str] | None = None,
    equivalents: dict[tuple[str, str, str], tuple[str, int]] | None = None,
    workers: int = JOBS,
    limit: float = LIMIT,
) -> tuple[list[ItemResult], list[str]]:
    """Mutate every answer cell of each lesson ({lesson: its cells}); return the items and the errors."""
    equivalents = equivalents or {}
    results: list[ItemResult] = []
    jobs: list = []
    warm: dict[str, str | None] = {}
    for lesson, cells in lesson_cells.items():
        references = {}
        for cell in cells:
            if cell["answer"] and (items is None or cell["id"] in items):
                item = ItemResult(lesson, cell["id"], "", mutants(cell["source"]))
                item.reference = unparse(cell["source"])
                references[cell["id"]] = item.reference
                results.append(item)
                jobs += [((lesson, cell["id"], m.id), cells, {cell["id"]: m.source}) for m in item.mutants]
        every = {c["id"]: unparse(c["source"]) for c in cells if c["answer"]}
        jobs.insert(0, ((lesson, None, "reference"), cells, every))
        warm[lesson] = warm_up(cells, every)
    outcome = run_all(jobs, workers, limit)
    errors = [
        f"{lesson}: the reference solution (unparsed) fails in-process: {warm[lesson]}"
        for lesson in warm
        if warm[lesson]
    ]
    errors += [
        f"{lesson}: the reference solution (unparsed) fails under the mutation run: {outcome[(lesson, None, 'reference')]}"
        for lesson in lesson_cells
        if outcome[(lesson, None, "reference")] is not None
    ]
    known = {(r.lesson, r.item) for r in results}
    matched = set()
    for item in results:
        for mutant in item.mutants:
            key = (item.lesson, item.item, mutant.id)
            if outcome[key] is not None:
                item.killed[mutant.id] = outcome[key]
            if key in equivalents:
                matched.add(key)
                reason, number = equivalents[key]
                if mutant.id in item.killed:
                    errors.append(
                        f"{EQUIVALENTS.name}:{number}: stale entry: {' '.join(key)} is killed "
                        f"({item.killed[mutant.id]}): remove the line"
                    )
                else:
                    item.equivalent[mutant.id] = reason
    for key, (_reason, number) in sorted(equivalents.items(), key=lambda kv: kv[1][1]):
        if (key[0], key[1]) in known and key not in matched:
            errors.append(f"{EQUIVALENTS.name}:{number}: stale entry: {' '.join(key)} names no mutant: remove the line")
    return results, errors


def unparse(source: str) -> str:
    return ast.unparse(ast.parse(source))


def summary(results: list[ItemResult]) -> str:
    total = sum(len(r.mutants) for r in results)
    killed = sum(len(r.killed) for r in results)
    equivalent = sum(len(r.equivalent) for r in results)
    return f"mutants: killed {killed} of {total}, {equivalent} equivalent, {total - killed - equivalent} survived"


def survivor_diffs(item: ItemResult) -> list[str]:
    lines = []
    for mutant in item.survivors:
        lines.append(f"{item.lesson} {item.item} {mutant.id}")
        diff = difflib.unified_diff(
            item.reference.splitlines(), mutant.source.splitlines(), "reference", mutant.id, n=1, lineterm=""
        )
        lines += ["    " + line for line in list(diff)[2:]]
    return lines


# -- the report


def digest(*texts: str) -> str:
    sha = hashlib.sha256()
    for text in texts:
        sha.update(text.encode("utf-8"))
        sha.update(b"\0")
    return sha.hexdigest()


def fingerprints() -> dict[str, str]:
    """'tools' and each lesson -> sha256 of what a mutation run's outcome depends on."""
    tools = [path.read_text(encoding="utf-8") for path in TOOLS]
    tools.append(EQUIVALENTS.read_text(encoding="utf-8") if EQUIVALENTS.exists() else "")
    found = {"tools": digest(*tools)}
    for lesson in lessons():
        found[lesson] = digest(*(f"{c['id']}\n{c['source']}" for c in cells_module.solution_cells(lesson)))
    return found


def report(results: list[ItemResult], seconds: float) -> str:
    lines = [
        "# Written by `make mutants` (python -m tools.mutants --write-report); read by tests/test_mutants.py.",
        f"# The whole run took {seconds:.0f} s.",
    ]
    lines += [f"fingerprint {name} {sha}" for name, sha in fingerprints().items()]
    lines += [r.line() for r in results]
    lines += [f"survivor {r.lesson} {r.item} {m.id}" for r in results for m in r.survivors]
    lines.append(summary(results))
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.mutants", description=__doc__.split("\n")[0])
    parser.add_argument("lessons", nargs="*", help="lesson ids (default: every lesson)")
    parser.add_argument("--item", action="append", help="only this answer cell (repeatable)")
    parser.add_argument("--survivors", action="store_true", help="print each surviving mutant as a diff")
    parser.add_argument("--write-report", action="store_true", help=f"write {REPORT.relative_to(ROOT)}")
    parser.add_argument("--jobs", type=int, default=JOBS, help=f"processes at a time (default {JOBS})")
    parser.add_argument("--timeout", type=float, default=LIMIT, help=f"seconds per mutant (default {LIMIT:g})")
    args = parser.parse_args(argv)
    chosen = args.lessons or lessons()
    unknown = sorted(set(chosen) - set(lessons()))
    if unknown:
        parser.error(f"no such lesson: {', '.join(unknown)}")
    if args.write_report and (args.lessons or args.item):
        parser.error("--write-report needs a run over every lesson and item (no LESSON, no --item)")
    matplotlib.use("Agg")
    # One thread here, so no OpenMP pool exists when the children are forked (each sets its own).
    torch.set_num_threads(1)
    started = time.monotonic()
    lesson_cells = {lesson: cells_module.solution_cells(lesson) for lesson in chosen}
    results, errors = mutate(
        lesson_cells, set(args.item) if args.item else None, read_equivalents(), args.jobs, args.timeout
    )
    seconds = time.monotonic() - started
    if args.item and not results:
        parser.error(f"no answer cell {', '.join(args.item)} in {', '.join(chosen)}")
    for item in results:
        print(item.line())
    if args.survivors:
        for item in results:
            for line in survivor_diffs(item):
                print(line)
    for error in errors:
        print(error, file=sys.stderr)
    print(summary(results))
    print(f"({seconds:.0f} s)", file=sys.stderr)
    if any(r.survivors for r in results) and not args.survivors:
        where = " ".join(sorted({r.lesson for r in results if r.survivors}))
        print(
            f"see each survivor as a diff: python -m tools.mutants {where} --survivors; kill it with a test, or "
            f"list it in {EQUIVALENTS.relative_to(ROOT)} as `LESSON ITEM MUTANT -- why it changes nothing`",
            file=sys.stderr,
        )
    if args.write_report:
        REPORT.parent.mkdir(parents=True, exist_ok=True)
        REPORT.write_text(report(results, seconds), encoding="utf-8")
    return 1 if errors or any(r.survivors for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
