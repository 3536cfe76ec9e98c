"""Mutation operators made from the loopholes readers found (issue 46): wrong answers that break a
clause the instructions state, or fail only in a context practitioners use (hooks, a second call,
a GPU), and that the generic operators of tools/mutant_operators.py do not make.

- `unwith`: a `with` block's context dropped, its body kept (`with torch.no_grad():` ...), and
  a `@torch.no_grad()`-like decorator dropped (detail: `decorator`).
- `forward`: a module called through its forward, `child(x)` into `child.forward(x)`, which
  skips the module's hooks and a lazy module's initialization; a call counts as a module's when
  its callee is an attribute of `self`, an item of a container, or a name the cell does not
  define as a function and Python does not provide.
- `seed`: `torch.manual_seed(0)` put first in a function body (every call restarts the global
  generator: the same values each call, and the caller's random numbers reset).
- `toggle`: a flag set to a constant turned into a flip of its current value
  (`p.requires_grad_(False)` into `p.requires_grad_(not p.requires_grad)`, `x.attr = True` into
  `x.attr = not x.attr`), so a second call undoes the first.
- `memo`: a module-level function's result kept in a module-level dict, keyed by its arguments'
  repr, and given back on a later call with equal-looking arguments (state that outlives a call).
- `cpu_constant`: a value made beside a tensor made on the CPU instead (`torch.rand_like(t)` into
  `torch.rand(t.shape)`, `t.new_zeros(s)` into `torch.zeros(s)`), which a GPU tensor refuses.
- `zeros`: an initializer replaced by zeros (`torch.randn(...)`/`torch.rand(...)` into
  `torch.zeros(...)`, `nn.init.<x>_(t, ...)` into `nn.init.zeros_(t)`, `t.normal_(...)` and the
  other in-place draws into `t.zero_()`).
"""

from __future__ import annotations

import ast
import builtins
from collections.abc import Callable, Iterator

from tools.mutant_ast import Cell, Change, Site, _call, _docstring, _method, _name, _set_item, _where

GRAD_CONTEXTS = {"no_grad", "enable_grad", "inference_mode", "set_grad_enabled"}
RANDOM_FACTORIES = {"randn": "zeros", "rand": "zeros"}
IN_PLACE_DRAWS = {"normal_", "uniform_", "bernoulli_", "exponential_", "random_"}
KEEP_INITS = {"zeros_", "ones_", "constant_", "eye_", "dirac_"}
FLAG_METHODS = {"requires_grad_", "train", "eval"}


def _attr(value: ast.expr, name: str) -> ast.Attribute:
    return ast.Attribute(value=value, attr=name, ctx=ast.Load())


def _torch(name: str) -> ast.Attribute:
    return _attr(ast.Name(id="torch", ctx=ast.Load()), name)


def _unwrap(k: int):
    def make(body: list[ast.stmt]) -> None:
        body[k : k + 1] = body[k].body  # type: ignore[attr-defined]

    return make


def op_unwith(cell: Cell) -> Iterator[Site]:
    for owner, field, k, stmt in cell.statements():
        if isinstance(stmt, ast.With):
            yield f"unwith@{_where(stmt)}", cell.index[id(owner)], _set_item(field, _unwrap(k))
    for node in cell.nodes:
        if not isinstance(node, ast.FunctionDef) or not cell.inside(node.body[0]):
            continue
        for j, decorator in enumerate(node.decorator_list):
            target = decorator.func if isinstance(decorator, ast.Call) else decorator
            if _name(target) in GRAD_CONTEXTS:

                def drop(function: ast.AST, j: int = j) -> None:
                    del function.decorator_list[j]  # type: ignore[attr-defined]

                yield f"unwith@{_where(decorator)}:decorator", cell.index[id(node)], drop


def _module_call(call: ast.Call, functions: set[str]) -> bool:
    func = call.func
    if isinstance(func, ast.Subscript):
        return True
    if isinstance(func, ast.Attribute):
        return isinstance(func.value, ast.Name) and func.value.id == "self" and func.attr != "forward"
    return isinstance(func, ast.Name) and func.id not in functions and not hasattr(builtins, func.id)


def op_forward(cell: Cell) -> Iterator[Site]:
    functions = {n.name for n in cell.nodes if isinstance(n, ast.FunctionDef | ast.ClassDef)}
    functions |= {
        t.id
        for n in cell.nodes
        if isinstance(n, ast.Assign)
        for t in n.targets
        if isinstance(t, ast.Name) and isinstance(n.value, ast.Lambda)
    }

    def change(call: ast.AST) -> None:
        call.func = _attr(call.func, "forward")  # type: ignore[attr-defined]

    for call in cell.expressions(ast.Call):
        if _module_call(call, functions):  # type: ignore[arg-type]
            yield f"forward@{_where(call)}", cell.index[id(call)], change


def _first_inside(cell: Cell, function: ast.FunctionDef) -> int | None:
    """The index of the body's first statement between the solution markers (the student's first line)."""
    return next((k for k, stmt in enumerate(function.body) if cell.inside(stmt) and not _docstring(stmt)), None)


def _insert(k: int, make: Callable[[], list[ast.stmt]]) -> Change:
    def change(function: ast.AST) -> None:
        function.body[k:k] = make()  # type: ignore[attr-defined]

    return change


def _seed() -> list[ast.stmt]:
    return [ast.Expr(_call(_torch("manual_seed"), ast.Constant(0)))]


def _draws(function: ast.AST) -> bool:
    """Whether a function draws random numbers: a draw, an initializer or a layer built (its weights)."""
    for call in ast.walk(function):
        if isinstance(call, ast.Call):
            name, func = _name(call.func), call.func
            owner = _name(func.value) if isinstance(func, ast.Attribute) else ""
            if name in RANDOM_FACTORIES or name in IN_PLACE_DRAWS or name.startswith("rand") or owner in {"init", "nn"}:
                return True
    return False


def op_seed(cell: Cell) -> Iterator[Site]:
    for node in cell.nodes:
        if isinstance(node, ast.FunctionDef) and _draws(node) and (k := _first_inside(cell, node)) is not None:
            yield f"seed@{_where(node.body[k])}", cell.index[id(node)], _insert(k, _seed)


def _flip(of: ast.expr) -> ast.UnaryOp:
    return ast.UnaryOp(op=ast.Not(), operand=of)


def op_toggle(cell: Cell) -> Iterator[Site]:
    for call in cell.expressions(ast.Call):
        func, args = call.func, call.args  # type: ignore[attr-defined]
        if isinstance(func, ast.Attribute) and func.attr == "requires_grad_" and len(args) == 1:
            current = _attr(func.value, "requires_grad")

            def change(node: ast.AST, current: ast.expr = current) -> None:
                node.args = [_flip(current)]  # type: ignore[attr-defined]

            yield f"toggle@{_where(call)}", cell.index[id(call)], change
    for node in cell.expressions(ast.Assign):
        target, value = node.targets[0], node.value  # type: ignore[attr-defined]
        if isinstance(target, ast.Attribute) and isinstance(value, ast.Constant) and isinstance(value.value, bool):
            read = _attr(target.value, target.attr)

            def set_flip(assign: ast.AST, read: ast.expr = read) -> None:
                assign.value = _flip(read)  # type: ignore[attr-defined]

            yield f"toggle@{_where(node)}", cell.index[id(node)], set_flip


MEMO = "_mutant_memo"


def _memo_lookup(names: list[str]) -> Callable[[], list[ast.stmt]]:
    def make() -> list[ast.stmt]:
        return ast.parse(
            f"{MEMO} = globals().setdefault({MEMO!r}, {{}})\n{MEMO}_key = repr(({''.join(n + ', ' for n in names)}))\n"
            f"if {MEMO}_key in {MEMO}:\n    return {MEMO}[{MEMO}_key]"
        ).body

    return make


def _memoize(k: int) -> Change:
    """Key the arguments' repr as the call begins, give back what that key stored, store every value returned."""

    def change(function: ast.AST) -> None:
        key = ast.Name(id=f"{MEMO}_key", ctx=ast.Load())
        for node in ast.walk(function):
            if isinstance(node, ast.Return) and node.value is not None:
                store = _method(ast.Name(id=MEMO, ctx=ast.Load()), "setdefault")
                store.args = [key, node.value]
                node.value = store
        _insert(k, _memo_lookup([a.arg for a in function.args.args]))(function)  # type: ignore[attr-defined]

    return change


def op_memo(cell: Cell) -> Iterator[Site]:
    for node in cell.tree.body:  # functions of the module (a method's state is its object's business)
        if not isinstance(node, ast.FunctionDef) or (k := _first_inside(cell, node)) is None:
            continue
        if any(isinstance(n, ast.Return) and n.value is not None for n in ast.walk(node)):
            yield f"memo@{_where(node.body[k])}", cell.index[id(node)], _memoize(k)


def _shape_of(value: ast.expr) -> ast.Attribute:
    return _attr(value, "shape")


def op_cpu_constant(cell: Cell) -> Iterator[Site]:
    for call in cell.expressions(ast.Call):
        func, args = call.func, call.args  # type: ignore[attr-defined]
        name = _name(func)
        if name.endswith("_like") and args and isinstance(func, ast.Attribute):
            made = name.removesuffix("_like")

            def on_cpu(node: ast.AST, made: str = made) -> ast.AST:
                keywords = [k for k in node.keywords if k.arg != "device"]  # type: ignore[attr-defined]
                return ast.Call(func=_torch(made), args=[_shape_of(node.args[0])], keywords=keywords)  # type: ignore[attr-defined]

            yield f"cpu_constant@{_where(call)}", cell.index[id(call)], on_cpu
        elif name.startswith("new_") and isinstance(func, ast.Attribute):

            def plain(node: ast.AST, made: str = name.removeprefix("new_")) -> None:
                node.func = _torch(made)  # type: ignore[attr-defined]

            yield f"cpu_constant@{_where(call)}", cell.index[id(call)], plain


def _renamed(new: str) -> Change:
    def change(call: ast.AST) -> None:
        call.func = _torch(new)  # type: ignore[attr-defined]
        call.keywords = [k for k in call.keywords if k.arg != "generator"]  # type: ignore[attr-defined]

    return change


def op_zeros(cell: Cell) -> Iterator[Site]:
    for call in cell.expressions(ast.Call):
        func, args = call.func, call.args  # type: ignore[attr-defined]
        name = _name(func)
        owner = _name(func.value) if isinstance(func, ast.Attribute) else ""
        if owner == "torch" and name in RANDOM_FACTORIES:
            yield f"zeros@{_where(call)}", cell.index[id(call)], _renamed(RANDOM_FACTORIES[name])
        elif owner == "init" and name.endswith("_") and name not in KEEP_INITS and args:

            def zero_init(node: ast.AST) -> None:
                node.func = _attr(node.func.value, "zeros_")  # type: ignore[attr-defined]
                node.args, node.keywords = node.args[:1], []  # type: ignore[attr-defined]

            yield f"zeros@{_where(call)}", cell.index[id(call)], zero_init
        elif name in IN_PLACE_DRAWS and isinstance(func, ast.Attribute) and owner not in {"init", "torch"}:

            def zero_(node: ast.AST) -> ast.AST:
                return _method(node.func.value, "zero_")  # type: ignore[attr-defined]

            yield f"zeros@{_where(call)}", cell.index[id(call)], zero_


CONTEXT_OPERATORS = [op_unwith, op_forward, op_seed, op_toggle, op_memo, op_cpu_constant, op_zeros]
