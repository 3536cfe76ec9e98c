"""The clause table: every requirement an item's instructions state, named, with its wrong answer.

In an exercise source each requirement of an item ends with a tag in its instructions (the
markdown cells between the previous answer cell and the item's own), which the student reads
as it is:

    # - A parameter used at several places (tied) is counted **once**. [clause tied_once]

A clause is checked by the tests cell `test_<item>_<clause>` when the item has one (points
follow clauses; a clause named `<clause>_<more>` belongs to that cell too), else by `test_<item>`. Every clause has at least one wrong-answer fixture that
breaks it and names it, `# %% wrong id=<item> clause=<clause>[,<clause>] ...`, whose failed
cells include the clause's; tools/rules.py refuses a clause without one, a fixture naming a
clause the item does not have, and a `test_<item>_<suffix>` cell without the clause `<suffix>`.

    python -m tools.clauses            # docs/clauses.md, the table of every lesson's clauses
    python -m tools.clauses --check    # exit 1 when docs/clauses.md is not what the sources give
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass

from tools import cells
from tools import source as notebooks
from tools.source import Source

TAG = re.compile(r"(?<!`)\[clause ([a-z0-9_]+)\](?!`)")  # an example in backticks is no tag
TABLE = notebooks.ROOT / "docs" / "clauses.md"


@dataclass(frozen=True)
class Clause:
    item: str  # the answer cell's grade id
    name: str
    text: str  # the requirement as the student reads it, without its tag
    line: int  # where its tag stands in the source
    cell: str  # the tests cell that checks it


def clauses(exercise: Source) -> list[Clause]:
    """Every clause of every item, in the order of the instructions."""
    found: list[Clause] = []
    pending: list[tuple[str, str, int]] = []
    tests = {c.grade_id for c in exercise.cells if c.role == "tests"}
    for cell in exercise.cells:
        if cell.cell_type == "markdown" and cell.role is None:
            pending += _tagged(cell.source, cell.line)
        elif cell.role == "answer":
            item = str(cell.grade_id)
            for name, text, line in pending:
                found.append(Clause(item, name, text, line, _cell_of(item, name, tests)))
            pending = []
    return found


def _cell_of(item: str, name: str, tests: set[str]) -> str:
    """`test_<item>_<s>` for the longest clause cell suffix s that is the name or begins it (`buffer_rand`
    is checked by `test_FixedHiddenMLP_buffer`), else `test_<item>`."""
    suffixes = [t[len(f"test_{item}_") :] for t in tests if t.startswith(f"test_{item}_")]
    fitting = [s for s in suffixes if name == s or name.startswith(s + "_")]
    return f"test_{item}_{max(fitting, key=len)}" if fitting else f"test_{item}"


def _tagged(markdown: str, first_line: int) -> list[tuple[str, str, int]]:
    """(name, requirement, source line) of each tag in a markdown cell: the requirement is the text of
    its bullet or paragraph from the previous tag (or the block's start) up to the tag, on one line."""
    found = []
    block: list[str] = []

    lines = markdown.splitlines() + [""]
    for number, line in enumerate(lines):
        if not line.strip() or line.lstrip().startswith("- "):  # a blank line or a bullet starts a block
            block = []
        block.append(line.strip())
        for match in TAG.finditer(line):
            text = " ".join(block)
            before = text.split(match.group(0))[0]
            requirement = TAG.split(before)[-1] if TAG.search(before) else before
            found.append((match.group(1), requirement.strip(" -"), first_line + 1 + number))
            block = [line[match.end() :].strip()]
    return found


def fixtures_by_clause(lesson: str) -> dict[tuple[str, str], list[cells.WrongAnswer]]:
    table: dict[tuple[str, str], list[cells.WrongAnswer]] = {}
    for wrong in cells.read_wrong_answers(lesson):
        for name in wrong.clauses:
            table.setdefault((wrong.answer_id, name), []).append(wrong)
    return table


def problems(lesson: str, exercise: Source) -> list[tuple[str, int, str]]:
    """(file, line, rule) for each clause without its wrong answer, each fixture naming no clause of its
    item, and each clause cell `test_<item>_<suffix>` whose suffix is not a clause of the item."""
    found = clauses(exercise)
    names = {(c.item, c.name) for c in found}
    by_clause = fixtures_by_clause(lesson)
    wrong_file = notebooks.display(cells.WRONG_ANSWERS / f"{lesson}.py")
    out = []
    for clause in found:
        breaking = [w for w in by_clause.get((clause.item, clause.name), []) if clause.cell in w.fails]
        if not breaking:
            out.append(
                (
                    exercise.path,
                    clause.line,
                    f"clause {clause.name} of {clause.item} has no wrong answer that breaks it: add "
                    f"'# %% wrong id={clause.item} clause={clause.name} fails={clause.cell} -- ...' to {wrong_file}",
                )
            )
    for (item, name), wrongs in by_clause.items():
        if (item, name) not in names:
            out.append(
                (wrong_file, wrongs[0].line, f"clause={name}: {item} has no clause of that name in {exercise.path}")
            )
    checked = {c.cell for c in found}
    answers = [str(c.grade_id) for c in exercise.cells if c.role == "answer"]
    for cell in exercise.cells:
        grade_id = str(cell.grade_id)
        owner = next((a for a in answers if grade_id.startswith(f"test_{a}_")), None)
        if cell.role == "tests" and owner and grade_id not in checked:
            suffix = grade_id[len(f"test_{owner}_") :]
            out.append(
                (
                    exercise.path,
                    cell.line,
                    f"{grade_id} checks a clause its instructions do not name: "
                    f"end the requirement with [clause {suffix}]",
                )
            )
    return out


def table() -> str:
    """docs/clauses.md: per lesson, per item, each clause, the cell that checks it and its wrong answers."""
    lines = [
        "# The clause table",
        "",
        "Generated by `python -m tools.clauses` from the exercises' instructions (`[clause NAME]` tags) and",
        "the wrong answers in `tests/wrong_answers/` (`clause=NAME`); `make test` checks it is current, and",
        "`make notebooks` refuses a clause that no wrong answer breaks (tools/clauses.py).",
        "",
        "## The contexts every item is graded in",
        "",
        "Beyond its examples, each kind of item is put where practitioners put it, by its hidden tests:",
        "",
        "- a module or a block: its children called with forward hooks that count the calls, and a lazy",
        "  child (`nn.LazyLinear`), so that `child.forward(x)` shows; built under a default device;",
        "- a function over a model's parameters: frozen parameters, buffers and `trainable_only=False`",
        "  together, tied parameters, a module whose repr says nothing of its sizes;",
        "- anything with state: called twice (the same arguments, or arguments that print alike), on an",
        "  already-frozen parameter, after the model changed between the calls;",
        "- anything that draws random numbers: torch's global generator left running (no seed inside),",
        "  two layers of one shape that differ;",
        "- hooks and activations: an in-place activation (`nn.ReLU(inplace=True)`) after a hooked layer;",
        "- a layer: as constructed, with no weight overwritten (finite values, non-zero gradients, an",
        "  output scale near 1);",
        "- saving and loading: the file read back by the test itself, loaded twice into fresh models, and",
        "  with a `map_location` that really moves tensors;",
        "- devices: a GPU the CPU plays with CUDA's rules (`_simulated_gpu` in the exercises' set-up",
        "  cells; see docs/grade-integrity.md), with the CPU's values compared.",
    ]
    for lesson in notebooks.lesson_ids():
        exercise = notebooks.read_source(notebooks.lessons_dir() / lesson / "exercise.py")
        by_clause = fixtures_by_clause(lesson)
        lines += [
            "",
            f"## {lesson}",
            "",
            "| item | clause | requirement | checked by | wrong answers |",
            "|---|---|---|---|---|",
        ]
        for clause in clauses(exercise):
            wrongs = "; ".join(w.why for w in by_clause.get((clause.item, clause.name), []))
            text = clause.text.replace("|", "\\|")
            lines.append(
                f"| `{clause.item}` | `{clause.name}` | {text} | `{clause.cell}` | {wrongs.replace('|', '/')} |"
            )
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    text = table()
    if "--check" in argv:
        if not TABLE.exists() or TABLE.read_text(encoding="utf-8") != text:
            print(f"{notebooks.display(TABLE)} is not what the sources give: run python -m tools.clauses")
            return 1
        return 0
    TABLE.write_text(text, encoding="utf-8")
    print(f"wrote {notebooks.display(TABLE)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
