"""The mutation operators of tools/mutants.py, on Python's own `ast`.

`mutants(source)` takes an answer cell of a reference solution and returns every mutant of
the code between its `### BEGIN SOLUTION` and `### END SOLUTION` markers (the student's
part: the def line and signature above the markers come from the release and are never
mutated). Each mutant is the whole cell unparsed with one change, under a stable id
`<operator>@<line>:<col>[:detail]`, the line and column (ast's, 1-based line, 0-based
column) of the changed node in the answer cell:

- `delete`: a statement replaced by `pass`.
- `swap`: a statement swapped with the next one in the same block.
- `no_grad`: a statement wrapped in `with torch.no_grad():` (one that computes something: a
  call, an operator or an index; moving names and literals records nothing).
- `return`: `return None`, and `return <first argument>` (after self/cls), put first in a
  function body (detail `None` or the argument's name).
- `kwarg`: one keyword argument of a call dropped, whichever it is (detail: its name).
- `detach`, `cpu`: `.detach()` or `.cpu()` added to a value that is returned or assigned.
- `parameter`: `nn.Parameter(x)` turned into `x`; `buffer`: `obj.register_buffer(name, t)`
  turned into a plain attribute, `setattr(obj, name, t)`.
- `constant`: an int n into n+1, n-1 and 0, a float x into 2x, True and False swapped, a
  string into "" (detail: the new value's repr); docstrings are left alone.
- `index`: a slice bound dropped (`drop-lower`, `drop-upper`, `drop-step`), a bound or an
  index that is not a constant moved by one (`lower+1`, `upper-1`, `index+1`, ...).
- `compare`: a comparison operator replaced by its boundary neighbour and its negation
  (< by <= and >=, == by !=, is by is not, in by not in, ...; detail: `<old>to<new>`, such
  as `<to<=` or `is_nottois`, prefixed by its position in a chain like `a < b < c`).
- `boolop`: `and` and `or` swapped; `not`: `not x` turned into `x`.
- `part`: a layer's `.weight` read or written as `.bias` and back; `module_type`:
  `isinstance(m, nn.Linear)` widened to `nn.Module`.
- `binop`: + - * / // @ ** % replaced (+ by - and *, * by / and +, / by * and //, @ by *,
  ...), in expressions and augmented assignments (detail: `<old>to<new>`, such as `+to-`).

Mutants that unparse to the reference's own text, that repeat an earlier mutant's text or
that do not compile are left out. Why not cosmic-ray's operators: tools/mutants.py.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator

from tools.mutant_ast import (
    Cell,
    Change,
    Mutant,
    Site,
    _call,
    _docstring,
    _method,
    _name,
    _set_item,
    _where,
)
from tools.mutant_contexts import CONTEXT_OPERATORS

# -- statements


def op_delete(cell: Cell) -> Iterator[Site]:
    for owner, field, k, stmt in cell.statements():
        if not isinstance(stmt, ast.Pass):
            yield f"delete@{_where(stmt)}", cell.index[id(owner)], _set_item(field, _put(k, ast.Pass()))


def _put(k: int, new: ast.stmt) -> Callable[[list[ast.stmt]], None]:
    def make(body: list[ast.stmt]) -> None:
        body[k] = new

    return make


def op_swap(cell: Cell) -> Iterator[Site]:
    for owner, field, k, stmt in cell.statements():
        body = getattr(owner, field)
        if k + 1 < len(body) and cell.inside(body[k + 1]):

            def make(body: list[ast.stmt], k: int = k) -> None:
                body[k], body[k + 1] = body[k + 1], body[k]

            yield f"swap@{_where(stmt)}", cell.index[id(owner)], _set_item(field, make)


PLAIN = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Pass, ast.Import, ast.ImportFrom, ast.Global)


def _wrap(k: int) -> Callable[[list[ast.stmt]], None]:
    def make(body: list[ast.stmt]) -> None:
        guard = _method(ast.Name(id="torch", ctx=ast.Load()), "no_grad")
        body[k] = ast.With(items=[ast.withitem(context_expr=guard)], body=[body[k]], type_comment=None)

    return make


COMPUTES = (ast.Call, ast.BinOp, ast.UnaryOp, ast.Subscript, ast.AugAssign)


def op_no_grad(cell: Cell) -> Iterator[Site]:
    for owner, field, k, stmt in cell.statements():
        if isinstance(stmt, PLAIN + (ast.Nonlocal,)) or not any(isinstance(n, COMPUTES) for n in ast.walk(stmt)):
            continue  # autograd records operations only: moving names and literals records nothing
        yield f"no_grad@{_where(stmt)}", cell.index[id(owner)], _set_item(field, _wrap(k))


def op_return(cell: Cell) -> Iterator[Site]:
    for node in cell.nodes:
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) or not cell.inside(node.body[0]):
            continue
        args = [a.arg for a in node.args.posonlyargs + node.args.args if a.arg not in ("self", "cls")]
        values: list[tuple[str, ast.expr]] = [("None", ast.Constant(value=None))]
        values += [(name, ast.Name(id=name, ctx=ast.Load())) for name in args[:1]]
        for detail, value in values:

            def make(body: list[ast.stmt], value: ast.expr = value) -> None:
                body.insert(0, ast.Return(value=value))

            yield f"return@{_where(node.body[0])}:{detail}", cell.index[id(node)], _set_item("body", make)


# -- calls (the PyTorch operators among them)


def op_kwarg(cell: Cell) -> Iterator[Site]:
    for call in cell.expressions(ast.Call):
        for k, keyword in enumerate(call.keywords):  # type: ignore[attr-defined]

            def drop(node: ast.AST, k: int = k) -> None:
                del node.keywords[k]  # type: ignore[attr-defined]

            yield f"kwarg@{_where(keyword)}:{keyword.arg or '**'}", cell.index[id(call)], drop


def _assigned(cell: Cell) -> Iterator[ast.expr]:
    for node in cell.expressions((ast.Return, ast.Assign, ast.AnnAssign)):
        value = node.value  # type: ignore[attr-defined]
        if value is not None and not (isinstance(value, ast.Constant) and value.value is None):
            yield value


def _add_call(method: str) -> Change:
    def change(node: ast.AST) -> ast.AST:
        return _method(node, method)  # type: ignore[arg-type]

    return change


def op_detach(cell: Cell) -> Iterator[Site]:
    for value in _assigned(cell):
        for method in ("detach", "cpu"):
            yield f"{method}@{_where(value)}", cell.index[id(value)], _add_call(method)


def _first_argument(node: ast.AST) -> ast.AST:
    return node.args[0]  # type: ignore[attr-defined]


def op_parameter(cell: Cell) -> Iterator[Site]:
    for call in cell.expressions(ast.Call):
        if _name(call.func) == "Parameter" and call.args:  # type: ignore[attr-defined]
            yield f"parameter@{_where(call)}", cell.index[id(call)], _first_argument


def op_buffer(cell: Cell) -> Iterator[Site]:
    for call in cell.expressions(ast.Call):
        func = call.func  # type: ignore[attr-defined]
        named = {k.arg: k.value for k in call.keywords}  # type: ignore[attr-defined]
        given = list(call.args)[:2] + [named[k] for k in ("name", "tensor") if k in named]  # type: ignore[attr-defined]
        if isinstance(func, ast.Attribute) and func.attr == "register_buffer" and len(given) == 2:

            def plain(node: ast.AST, owner: ast.expr = func.value, given: list = given) -> ast.AST:
                return _call(ast.Name(id="setattr", ctx=ast.Load()), owner, *given)

            yield f"buffer@{_where(call)}", cell.index[id(call)], plain


# -- values and operators


def _values(value: object) -> list[object]:
    if isinstance(value, bool):
        return [not value]
    if isinstance(value, int):
        return list(dict.fromkeys(v for v in (value + 1, value - 1, 0) if v != value))
    if isinstance(value, float):
        return [value * 2] if value else [1.0]
    if isinstance(value, str):
        return [""] if value else []
    return []


def op_constant(cell: Cell) -> Iterator[Site]:
    docstrings = {id(s.value) for s in cell.nodes if _docstring(s)}  # type: ignore[attr-defined]
    for node in cell.expressions(ast.Constant):
        if id(node) in docstrings:
            continue
        for new in _values(node.value):  # type: ignore[attr-defined]

            def change(node: ast.AST, new: object = new) -> None:
                node.value = new  # type: ignore[attr-defined]

            yield f"constant@{_where(node)}:{new!r}", cell.index[id(node)], change


def _shift(node: ast.expr, op: ast.operator) -> ast.expr:
    return ast.BinOp(left=node, op=op, right=ast.Constant(value=1))


def _literal(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) or (isinstance(node, ast.UnaryOp) and isinstance(node.operand, ast.Constant))


def _drop_bound(part: str) -> Change:
    def change(node: ast.AST) -> None:
        setattr(node.slice, part, None)  # type: ignore[attr-defined]

    return change


def op_index(cell: Cell) -> Iterator[Site]:
    for sub in cell.expressions(ast.Subscript):
        where, index = _where(sub), cell.index[id(sub)]
        bounds = sub.slice  # type: ignore[attr-defined]
        if isinstance(bounds, ast.Slice):
            for part in ("lower", "upper", "step"):
                if getattr(bounds, part) is None:
                    continue
                yield f"index@{where}:drop-{part}", index, _drop_bound(part)
                if part != "step" and not _literal(getattr(bounds, part)):
                    for sign, op in (("+", ast.Add()), ("-", ast.Sub())):

                        def move(node: ast.AST, p: str = part, op: ast.operator = op) -> None:
                            setattr(node.slice, p, _shift(getattr(node.slice, p), op))  # type: ignore[attr-defined]

                        yield f"index@{where}:{part}{sign}1", index, move
        elif not _literal(bounds) and not isinstance(bounds, ast.Tuple | ast.JoinedStr):
            for sign, op in (("+", ast.Add()), ("-", ast.Sub())):

                def shift(node: ast.AST, op: ast.operator = op) -> None:
                    node.slice = _shift(node.slice, op)  # type: ignore[attr-defined]

                yield f"index@{where}:index{sign}1", index, shift


COMPARE = {
    ast.Lt: (ast.LtE, ast.GtE),
    ast.LtE: (ast.Lt, ast.Gt),
    ast.Gt: (ast.GtE, ast.LtE),
    ast.GtE: (ast.Gt, ast.Lt),
    ast.Eq: (ast.NotEq,),
    ast.NotEq: (ast.Eq,),
    ast.Is: (ast.IsNot,),
    ast.IsNot: (ast.Is,),
    ast.In: (ast.NotIn,),
    ast.NotIn: (ast.In,),
}
SYMBOL = {
    ast.Lt: "<",
    ast.LtE: "<=",
    ast.Gt: ">",
    ast.GtE: ">=",
    ast.Eq: "==",
    ast.NotEq: "!=",
    ast.Is: "is",
    ast.IsNot: "is_not",
    ast.In: "in",
    ast.NotIn: "not_in",
    ast.Add: "+",
    ast.Sub: "-",
    ast.Mult: "*",
    ast.Div: "/",
    ast.FloorDiv: "//",
    ast.MatMult: "@",
    ast.Pow: "**",
    ast.Mod: "%",
}


def op_compare(cell: Cell) -> Iterator[Site]:
    for node in cell.expressions(ast.Compare):
        ops = node.ops  # type: ignore[attr-defined]
        for k, op in enumerate(ops):
            for new in COMPARE[type(op)]:

                def change(node: ast.AST, k: int = k, new: type = new) -> None:
                    node.ops[k] = new()  # type: ignore[attr-defined]

                prefix = f"{k}:" if len(ops) > 1 else ""
                yield f"compare@{_where(node)}:{prefix}{SYMBOL[type(op)]}to{SYMBOL[new]}", cell.index[id(node)], change


def _operand(node: ast.AST) -> ast.AST:
    return node.operand  # type: ignore[attr-defined]


def op_boolop(cell: Cell) -> Iterator[Site]:
    for node in cell.expressions(ast.BoolOp):
        new = ast.Or if isinstance(node.op, ast.And) else ast.And  # type: ignore[attr-defined]

        def change(node: ast.AST, new: type = new) -> None:
            node.op = new()  # type: ignore[attr-defined]

        yield f"boolop@{_where(node)}:{'or' if new is ast.Or else 'and'}", cell.index[id(node)], change
    for node in cell.expressions(ast.UnaryOp):
        if isinstance(node.op, ast.Not):  # type: ignore[attr-defined]
            yield f"not@{_where(node)}", cell.index[id(node)], _operand


BINOP = {
    ast.Add: (ast.Sub, ast.Mult),
    ast.Sub: (ast.Add,),
    ast.Mult: (ast.Div, ast.Add),
    ast.Div: (ast.Mult, ast.FloorDiv),
    ast.FloorDiv: (ast.Div, ast.Mult),
    ast.MatMult: (ast.Mult,),
    ast.Pow: (ast.Mult,),
    ast.Mod: (ast.FloorDiv,),
}


def op_binop(cell: Cell) -> Iterator[Site]:
    for node in cell.expressions((ast.BinOp, ast.AugAssign)):
        old = type(node.op)  # type: ignore[attr-defined]
        for new in BINOP.get(old, ()):

            def change(node: ast.AST, new: type = new) -> None:
                node.op = new()  # type: ignore[attr-defined]

            yield f"binop@{_where(node)}:{SYMBOL[old]}to{SYMBOL[new]}", cell.index[id(node)], change


LAYER_PARTS = {"weight": "bias", "bias": "weight"}  # the wrong part of a layer


def _setter(field: str, value: object) -> Change:
    def change(node: ast.AST) -> None:
        setattr(node, field, value)

    return change


def op_layer_part(cell: Cell) -> Iterator[Site]:
    """`m.weight` read or written as `m.bias` and back; `isinstance(m, nn.Linear)` widened to
    `isinstance(m, nn.Module)` (every module selected)."""
    for node in cell.expressions(ast.Attribute):
        if node.attr in LAYER_PARTS:  # type: ignore[attr-defined]
            other = LAYER_PARTS[node.attr]  # type: ignore[attr-defined]
            yield f"part@{_where(node)}:{other}", cell.index[id(node)], _setter("attr", other)
    module = ast.Attribute(value=ast.Name(id="nn", ctx=ast.Load()), attr="Module", ctx=ast.Load())
    for call in cell.expressions(ast.Call):
        args = call.args  # type: ignore[attr-defined]
        if _name(call.func) == "isinstance" and len(args) == 2 and _name(args[1]) != "Module":  # type: ignore[attr-defined]
            yield f"module_type@{_where(call)}", cell.index[id(call)], _setter("args", [args[0], module])


OPERATORS = [
    op_delete,
    op_swap,
    op_no_grad,
    op_return,
    op_kwarg,
    op_detach,
    op_parameter,
    op_buffer,
    op_constant,
    op_index,
    op_compare,
    op_boolop,
    op_binop,
    op_layer_part,
    *CONTEXT_OPERATORS,
]


def mutants(source: str) -> list[Mutant]:
    """Every mutant of the code between the cell's solution markers, in operator order."""
    cell = Cell(source)
    seen = {ast.unparse(cell.tree)}
    found: list[Mutant] = []
    ids: set[str] = set()
    for operator in OPERATORS:
        for mutant_id, index, change in operator(cell):
            text = cell.apply(index, change)
            if text in seen:
                continue
            try:
                compile(text, "<mutant>", "exec")
            except (SyntaxError, ValueError):
                continue
            seen.add(text)
            unique, n = mutant_id, 1
            while unique in ids:
                n += 1
                unique = f"{mutant_id}#{n}"
            ids.add(unique)
            found.append(Mutant(unique, text))
    return found
