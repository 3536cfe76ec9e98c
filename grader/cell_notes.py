"""What a graded notebook is told about its cells, one part of GuardedExecute (execute.py).

- A cell is named as the student knows it: a graded cell by its nbgrader id, any other by its
  position ("cell 4"). Every note and error output the grader writes names cells this way.
- The notes of one run collect here: `problems` (why a cell scored as it did: a time-out, a crash,
  a truncated output, an error of the student's own) and `flags` (a hook point the notebook
  changed, see test_path.py). They are written into the notebook's metadata
  (`metadata.grader`, see pipeline.py) for the rows, the report and the notes cell.
- `error_output` is the output a cell gets when the grader stopped it or did not run it: a graded
  cell without outputs would otherwise count as passed.
"""

from __future__ import annotations

from nbformat import NotebookNode
from nbgrader.preprocessors import Execute


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


class CellNotes(Execute):
    """The cell running now, its name, and the notes of one notebook's run (see the module doc)."""

    _current: int | None = None  # the code cell running now (None: none yet on this kernel)
    _problems: list
    _flags: list

    def _start_notes(self) -> None:
        self._problems, self._flags = [], []

    def _name(self, index) -> str:
        return cell_name(self.nb, index)

    def _save_notes(self, nb) -> None:
        """Add this run's problems and flags to the notebook's metadata, each once."""
        meta = nb.metadata.setdefault("grader", {})
        known = meta.setdefault("problems", [])
        known.extend(p for p in self._problems if p not in known)
        flags = meta.setdefault("flags", [])
        flags.extend(f for f in self._flags if f not in flags)
