"""The trees the mutation operators work on (tools/mutant_operators.py, tools/mutant_contexts.py).

An answer cell is parsed once (`Cell`); an operator names sites in it, each an id, the index of
a node in `ast.walk` order and a change, and `Cell.apply` makes the mutant from a fresh copy of
the tree, so that no operator sees another's change. Only the code between the cell's solution
markers is the student's, and only it is mutated.
"""

from __future__ import annotations

import ast
import copy
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

MARKER = re.compile(r"^\s*### (BEGIN|END) SOLUTION\s*$")


@dataclass(frozen=True)
class Mutant:
    id: str  # <operator>@<line>:<col>[:detail], relative to the answer cell
    source: str  # the answer cell with the mutation, unparsed


# A site: (id, index of the node in ast.walk order, change). The change gets the node's copy
# in a deep copy of the tree and either edits it in place (returns None) or returns what
# replaces it in its parent.
Change = Callable[[ast.AST], ast.AST | None]
Site = tuple[str, int, Change]


def regions(source: str) -> list[tuple[int, int]]:
    """(begin, end) line numbers of each pair of solution markers (the lines between are the student's)."""
    found, begin = [], None
    for number, line in enumerate(source.splitlines(), start=1):
        match = MARKER.match(line)
        if match and match.group(1) == "BEGIN":
            begin = number
        elif match and begin is not None:
            found.append((begin, number))
            begin = None
    return found


def _where(node: ast.AST) -> str:
    return f"{node.lineno}:{node.col_offset}"  # type: ignore[attr-defined]


def _call(func: ast.expr, *args: ast.expr) -> ast.Call:
    return ast.Call(func=func, args=list(args), keywords=[])


def _method(value: ast.expr, name: str) -> ast.Call:
    return _call(ast.Attribute(value=value, attr=name, ctx=ast.Load()))


def _name(node: ast.expr) -> str:
    """The last name of a callee (`Parameter` for `nn.Parameter`, `torch.nn.Parameter`)."""
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ""


class Cell:
    """An answer cell's tree, with what lies between its markers."""

    def __init__(self, source: str):
        self.source = source
        self.tree = ast.parse(source)
        self.regions = regions(source)
        self.nodes = list(ast.walk(self.tree))
        self.index = {id(node): k for k, node in enumerate(self.nodes)}

    def inside(self, node: ast.AST) -> bool:
        line, end = getattr(node, "lineno", None), getattr(node, "end_lineno", None)
        return line is not None and any(b < line and end < e for b, e in self.regions)

    def blocks(self) -> Iterator[tuple[ast.AST, str, list[ast.stmt]]]:
        """Every statement list: (owner, field, statements)."""
        for node in self.nodes:
            for field in ("body", "orelse", "finalbody"):
                body = getattr(node, field, None)
                if isinstance(body, list) and body and isinstance(body[0], ast.stmt):
                    yield node, field, body

    def statements(self) -> Iterator[tuple[ast.AST, str, int, ast.stmt]]:
        for owner, field, body in self.blocks():
            for k, stmt in enumerate(body):
                if self.inside(stmt):
                    yield owner, field, k, stmt

    def expressions(self, kind: type | tuple[type, ...]) -> Iterator[ast.AST]:
        for node in self.nodes:
            if isinstance(node, kind) and self.inside(node):
                yield node

    def apply(self, index: int, change: Change) -> str:
        tree = copy.deepcopy(self.tree)
        nodes = list(ast.walk(tree))
        target = nodes[index]
        new = change(target)
        if new is not None:
            _replace(nodes, target, new)
        return ast.unparse(ast.fix_missing_locations(tree))


def _replace(nodes: list[ast.AST], old: ast.AST, new: ast.AST) -> None:
    for parent in nodes:
        for field, value in ast.iter_fields(parent):
            if value is old:
                setattr(parent, field, new)
                return
            if isinstance(value, list) and any(item is old for item in value):
                value[[item is old for item in value].index(True)] = new
                return
    raise ValueError("node not found in its tree")


def _set_item(field: str, make: Callable[[list[ast.stmt]], None]) -> Change:
    def change(owner: ast.AST) -> None:
        make(getattr(owner, field))

    return change


def _docstring(stmt: ast.AST) -> bool:
    """Whether a statement is a string on its own (a docstring): no operator mutates it."""
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str)
