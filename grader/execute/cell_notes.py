"""What a graded notebook is told about its cells, one part of GuardedExecute (execute/guarded.py).

- A cell is named as the student knows it: a graded cell by its nbgrader id, any other by its
  position ("cell 4"). Every note and error output the grader writes names cells this way.
- The notes of one run collect here: `problems` (why a cell scored as it did: a time-out, a crash,
  a truncated output, an error of the student's own) and `flags` (a hook point the notebook
  changed, see execute/test_path.py). They are written into the notebook's metadata
  (`metadata.grader`, see pipeline.py) for the rows, the report and the notes cell.
- `error_output` is the output a cell gets when the grader stopped it or did not run it: a graded
  cell without outputs would otherwise count as passed.
"""

from __future__ import annotations

from nbformat import NotebookNode


def error_output(ename: str, evalue: str) -> NotebookNode:
    return NotebookNode(output_type="error", ename=ename, evalue=evalue, traceback=[f"{ename}: {evalue}"])


def cell_name(nb, index) -> str:
    """A cell as the student knows it: the name of a graded cell, else its position."""
    try:
        meta = nb.cells[index].metadata.get("nbgrader", {})
    except (AttributeError, IndexError, TypeError):
        meta = {}
    graded = meta.get("grade") or meta.get("solution")
    return meta["grade_id"] if graded and meta.get("grade_id") else f"cell {index + 1}"


class Notes:
    """One notebook's notes (see the module doc): the cell running now, the problems and flags,
    each note naming its cell as the student knows it. GuardedExecute makes one a notebook and
    hands it to the parts that write notes."""

    def __init__(self, nb=None) -> None:
        self.nb = nb
        self.current: int | None = None  # the code cell running now (None: none yet on this kernel)
        self.problems: list[str] = []
        self.flags: list[str] = []

    def name(self, index) -> str:
        return cell_name(self.nb, index)

    def problem(self, index, text: str) -> None:
        """A note on the cell `index`, once."""
        note = f"{self.name(index)}: {text}"
        if note not in self.problems:
            self.problems.append(note)

    def flag(self, index, flags) -> None:
        """Tampering the runner saw, on the cell `index`, each once."""
        for flag in flags:
            note = f"{self.name(index)}: {flag}"
            if note not in self.flags:
                self.flags.append(note)

    def save(self, nb) -> None:
        """Add this run's problems and flags to the notebook's metadata, each once."""
        meta = nb.metadata.setdefault("grader", {})
        known = meta.setdefault("problems", [])
        known.extend(p for p in self.problems if p not in known)
        flags = meta.setdefault("flags", [])
        flags.extend(f for f in self.flags if f not in flags)
