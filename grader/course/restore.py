"""Put a submission back into the shape of the released exercise.

nbgrader identifies cells by their metadata. Editors and LMS round trips strip
it, students reorder, retype or delete cells, and Colab rewrites kernelspecs.
Before nbgrader sees a submission, each released cell is found again:

1. by its nbgrader grade id, when the metadata survived;
2. by identical source, for cells the student did not change;
3. for answer cells, as the changed cell between the released neighbours that
   were found (the student's answer).

The notebook is then rebuilt in the released order with the released metadata:
read-only and test cells come back as released (nbgrader restores their hidden
tests from the gradebook), answers keep the student's source, cells the student
added stay after the cell they followed, and a deleted answer comes back blank.
Every change is reported, compared with the released exercise (not with the
instructor's source, so untouched test cells with hidden tests are not flagged). A Colab
badge's link is compared without the place it opens the notebook from (GitHub owner,
repository and branch): the course publishes its release elsewhere than its own copy
(tools/release.py points every badge there), and a student working from that copy has edited
nothing.
"""

from __future__ import annotations

import copy
import re

import nbformat

# A Colab link up to the notebook's file name: https://colab.research.google.com/github/OWNER/
# REPO/blob/BRANCH/PATH/ (a branch may hold slashes, so the whole stretch is one).
COLAB_LOCATION = re.compile(r"https://colab\.research\.google\.com/github/[^\s()\[\]<>\"']*/(?=[^\s()\[\]<>\"'/])")


def _meta(cell) -> dict:
    return cell.get("metadata", {}).get("nbgrader", {}) or {}


def same_source(mine: str, released: str) -> bool:
    """The released text, as far as the student can tell: outer whitespace and where a Colab
    badge opens the notebook from do not count."""

    def seen(text: str) -> str:
        return COLAB_LOCATION.sub("https://colab.research.google.com/github/", text.strip())

    return seen(mine) == seen(released)


def restore(
    submitted: nbformat.NotebookNode, released: nbformat.NotebookNode, earlier: list | tuple = ()
) -> tuple[nbformat.NotebookNode, list[str]]:
    """`earlier`: releases of the same notebook before this one (course/history.py). A read-only cell
    as one of them released it is the release the student worked on, not an edit."""
    notes: list[str] = []
    match = _match(released.cells, submitted.cells, notes)
    out, corrected = _rebuild(released.cells, submitted.cells, match, _earlier_cells(earlier), notes)
    if corrected:
        notes.append(
            "graded against the corrected release: your copy came from an earlier release, and "
            f"these cells were fixed since ({', '.join(corrected)}); your answers were kept"
        )
    nb = copy.deepcopy(submitted)
    nb.cells = out
    nb.nbformat, nb.nbformat_minor = released.nbformat, released.nbformat_minor
    # A release without a kernelspec (nbgrader's own empty notebook) keeps the student's, as
    # nbgrader's OverwriteKernelspec does; the grader's kernel runs it either way.
    kernelspec = released.metadata.get("kernelspec")
    if kernelspec:
        if submitted.metadata.get("kernelspec", {}).get("name") != kernelspec.get("name"):
            name = submitted.metadata.get("kernelspec", {}).get("name")
            notes.append(f"kernel changed to {name!r}, set back to {kernelspec.get('name')}")
        nb.metadata["kernelspec"] = copy.deepcopy(kernelspec)
    for cell in nb.cells:
        cell.pop("id", None)
    _fresh_ids(nb)
    return nb, notes


def _earlier_cells(earlier) -> dict[str, list]:
    """Each grade id's cells as the earlier releases had them."""
    found: dict[str, list] = {}
    for old_release in earlier:
        for old in old_release.cells:
            if _meta(old).get("grade_id"):
                found.setdefault(_meta(old)["grade_id"], []).append(old)
    return found


def _match(rel: list, cells: list, notes: list[str]) -> dict[int, int]:
    """Released index -> submitted index, by the three steps of the module's doc."""
    index_of = {_meta(c).get("grade_id"): i for i, c in enumerate(rel)}
    match: dict[int, int] = {}
    used: set[int] = set()
    # 1. surviving metadata
    for j, cell in enumerate(cells):
        gid = _meta(cell).get("grade_id")
        if gid in index_of and index_of[gid] not in match:
            match[index_of[gid]] = j
            used.add(j)
    # 2. unchanged source
    for i, cell in enumerate(rel):
        if i in match:
            continue
        for j, candidate in enumerate(cells):
            if j not in used and candidate.source.strip() and same_source(candidate.source, cell.source):
                match[i] = j
                used.add(j)
                break
    # 3. changed answers between found neighbours
    for i, cell in enumerate(rel):
        if i in match or not _meta(cell).get("solution"):
            continue
        before = max((match[k] for k in range(i) if k in match), default=-1)
        after = min((match[k] for k in range(i + 1, len(rel)) if k in match), default=len(cells))
        gap = [j for j in range(before + 1, after) if j not in used and not _meta(cells[j])]
        same_type = [j for j in gap if cells[j].cell_type == cell.cell_type] or gap
        if same_type:
            match[i] = same_type[0]
            used.add(same_type[0])
    stripped = sum(1 for j in match.values() if not _meta(cells[j]))
    if stripped:
        notes.append(f"nbgrader metadata missing on {stripped} cell(s): matched to the released cells by content")
    return match


def _extra(cell):
    """A cell the student added (or copied from a graded one): ungraded."""
    cell = copy.deepcopy(cell)
    cell.get("metadata", {}).pop("nbgrader", None)
    return cell


def _rebuild(rel: list, cells: list, match: dict[int, int], earlier_cells: dict, notes: list[str]):
    """The cells in the released order, extra student cells after the cell they followed; and the
    read-only cells the student holds as an earlier release had them."""
    followers: dict[int, list[int]] = {}
    leading = []
    order_of = {j: i for i, j in match.items()}
    last = None
    for j in range(len(cells)):
        if j in order_of:
            last = order_of[j]
        elif last is None:
            leading.append(j)
        else:
            followers.setdefault(last, []).append(j)
    matched_positions = [match[i] for i in sorted(match)]
    if matched_positions != sorted(matched_positions):
        notes.append("cells were out of the released order: put back in order")
    out = [_extra(cells[j]) for j in leading]
    corrected: list[str] = []
    for i, released_cell in enumerate(rel):
        name = _meta(released_cell).get("grade_id", f"cell {i}")
        if i not in match:
            if _meta(released_cell).get("grade") or _meta(released_cell).get("solution"):
                notes.append(f"{name}: deleted, restored as released")
            out.append(copy.deepcopy(released_cell))
        else:
            out.append(_restored(released_cell, cells[match[i]], name, earlier_cells, notes, corrected))
        out.extend(_extra(cells[j]) for j in followers.get(i, []))
    return out, corrected


def _restored(released_cell, mine, name: str, earlier_cells: dict, notes: list[str], corrected: list[str]):
    """One released cell the student's notebook has: an answer keeps the student's source, any
    other cell comes back as released (an edit named, an earlier release's text not)."""
    meta = _meta(released_cell)
    if meta.get("solution"):
        restored = copy.deepcopy(released_cell)
        restored.source = mine.source
        if mine.cell_type != released_cell.cell_type:
            notes.append(f"{name}: cell type changed to {mine.cell_type}, changed back")
        if restored.cell_type == "code":
            restored.outputs, restored.execution_count = [], None
        return restored
    changed = not same_source(mine.source, released_cell.source) or (
        "points" in _meta(mine) and _meta(mine).get("points") != meta.get("points")
    )
    as_released_before = any(
        same_source(mine.source, old.source) and _meta(mine).get("points") == _meta(old).get("points")
        for old in earlier_cells.get(name, [])
    )
    if (meta.get("locked") or meta.get("grade")) and changed and as_released_before:
        corrected.append(name)
    elif meta.get("locked") or meta.get("grade"):
        if not same_source(mine.source, released_cell.source):
            notes.append(f"{name}: read-only cell was edited, restored")
        elif mine.cell_type != released_cell.cell_type:
            notes.append(f"{name}: cell type changed to {mine.cell_type}, restored")
        if "points" in meta and "points" in _meta(mine) and _meta(mine)["points"] != meta["points"]:
            notes.append(f"{name}: points changed to {_meta(mine)['points']}, restored")
    return copy.deepcopy(released_cell)


def _fresh_ids(nb) -> None:
    seen = set()
    for n, cell in enumerate(nb.cells):
        cell["id"] = cell.get("id") or f"cell-{n}"
        while cell["id"] in seen:
            cell["id"] += "-x"
        seen.add(cell["id"])
