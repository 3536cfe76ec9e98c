"""The code's shape, read from its imports with the standard ast module: no import circle
anywhere, arrows only downward through the grader's layers, internal imports at the top of
a module, no module over 500 lines, and the course build (tools/) never imported by the grader."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from conftest import ROOT

pytestmark = pytest.mark.unit

# The grader's layers, lowest first. A module may import its own layer or a lower one.
LAYERS = {
    "kernel": {"sandbox", "template", "template_server", "runner", "trusted"},  # fork server, sandbox, launch
    "engine": {"collect", "restore", "execute", "course", "settings", "parallel"},  # run these notebooks
    "adapters": {"pipeline", "feedback", "grade", "cluster", "export", "report", "lms"},  # nbgrader and the LMS
    "cli": {"__main__"},
}
RANK = {module: rank for rank, names in enumerate(LAYERS.values()) for module in names}
MAX_LINES = 500


def modules() -> dict[str, Path]:
    found = {}
    for package in ("grader", "tools"):
        for path in sorted((ROOT / package).glob("*.py")):
            found[package if path.stem == "__init__" else f"{package}.{path.stem}"] = path
    return found


def imports(name: str, path: Path, known) -> list[tuple[str, bool]]:
    """(internal module imported, whether at the module's top level) for each import."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name.split(".")[0]
    top = {id(node) for node in tree.body}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = f"{package}.{node.module}" if node.level and node.module else package if node.level else node.module
            targets = [base] + [f"{base}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        else:
            continue
        found += [(t, id(node) in top) for t in targets if t in known and t != name and t != package]
    return found


def graph() -> dict[str, set[str]]:
    known = modules()
    return {name: {t for t, _ in imports(name, path, known)} for name, path in known.items()}


def test_no_import_circle():
    edges = graph()
    state: dict[str, str] = {}

    def visit(node, trail):
        state[node] = "open"
        for nxt in sorted(edges[node]):
            if state.get(nxt) == "open":
                pytest.fail("import circle: " + " -> ".join(trail[trail.index(nxt) :] + [nxt]))
            if nxt not in state:
                visit(nxt, trail + [nxt])
        state[node] = "done"

    for node in sorted(edges):
        if node not in state:
            visit(node, [node])


def test_arrows_point_down_through_the_layers():
    edges = graph()
    grader = {n.split(".", 1)[1] for n in edges if n.startswith("grader.")}
    assert grader == set(RANK), f"put every grader module in a layer: {sorted(grader ^ set(RANK))}"
    upward = [
        f"{a} -> {b}"
        for a, targets in edges.items()
        if a.startswith("grader.")
        for b in targets
        if b.startswith("grader.") and RANK[b.split(".", 1)[1]] > RANK[a.split(".", 1)[1]]
    ]
    assert not upward, upward


def test_the_kernel_layer_imports_neither_nbgrader_nor_the_engine():
    for name in LAYERS["kernel"]:
        tree = ast.parse((ROOT / "grader" / f"{name}.py").read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom | ast.Import):
                names = [node.module or ""] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
                assert not any(n.split(".")[0] == "nbgrader" for n in names), f"grader/{name}.py imports nbgrader"


def test_the_grader_never_imports_the_course_build():
    assert not [
        f"{a} -> {b}"
        for a, targets in graph().items()
        if a.startswith("grader")
        for b in targets
        if b.startswith("tools")
    ]


def test_internal_imports_are_at_the_top_of_the_module():
    known = modules()
    lazy = [
        f"{name} imports {target} inside a function"
        for name, path in known.items()
        for target, at_top in imports(name, path, known)
        if not at_top and name != "tools.notebooks"
    ]
    assert not lazy, lazy


def test_no_module_of_the_grader_or_the_build_is_over_500_lines():
    long = {
        str(p.relative_to(ROOT)): n
        for p in modules().values()
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert not long, long
