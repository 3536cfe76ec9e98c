"""The code's shape, read from its imports with the standard ast module: no import circle
anywhere, arrows only one way between the grader's packages, internal imports at the top of
a module, no module over 500 lines, and the course build (tools/) never imported by the grader."""

from __future__ import annotations

import ast
import configparser
import importlib
import re
import sys
from pathlib import Path

import pytest

from conftest import ROOT

pytestmark = pytest.mark.unit

# The grader's packages by concern, lowest first: a module may import its own package, a package
# of its own layer listed before it, or a lower layer (arrows run one way, so packages form no
# circle). The three modules at the top are the public surface: what nbgrader configs name
# (pipeline), what lesson notebooks import (judges), and the command line (__main__).
LAYERS = {
    "kernel": ["isolation", "kernels", "runner"],  # who a kernel is, how it starts, the test path inside it
    "engine": ["judges", "execute", "course"],  # run the notebooks of a course
    "adapters": ["pipeline", "grading", "lms", "records"],  # nbgrader's steps, a class's run, LMSs, what leaves
    "cli": ["__main__"],
}
PUBLIC = {"judges", "pipeline", "__main__"}
ORDER = {part: i for i, part in enumerate(part for parts in LAYERS.values() for part in parts)}
LAYER_OF = {part: rank for rank, parts in enumerate(LAYERS.values()) for part in parts}
MAX_LINES = 500


def grader_files() -> list[Path]:
    return sorted((ROOT / "grader").rglob("*.py"))


def part(module: str) -> str:
    """A grader module's package (grader.isolation.uids -> isolation), or its own name at the top."""
    return module.split(".")[1]


def modules() -> dict[str, Path]:
    found = {}
    for path in grader_files() + sorted((ROOT / "tools").glob("*.py")):
        dotted = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        found[dotted.removesuffix(".__init__")] = path
    return found


def imports(name: str, path: Path, known) -> list[tuple[str, bool]]:
    """(internal module imported, whether at the module's top level) for each import."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
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


def test_arrows_point_down_through_the_packages():
    edges = graph()
    parts = {part(n) for n in edges if n.startswith("grader.")}
    assert parts == set(ORDER), f"put every grader package in a layer: {sorted(parts ^ set(ORDER))}"
    packages = {p.parent.name for p in grader_files() if p.parent.name != "grader"}
    assert not packages & PUBLIC and packages == set(ORDER) - PUBLIC, "the public surface is modules at the top"
    backward = [
        f"{a} -> {b}"
        for a, targets in edges.items()
        if a.startswith("grader.")
        for b in targets
        if b.startswith("grader.") and part(a) != part(b) and ORDER[part(b)] > ORDER[part(a)]
    ]
    assert not backward, backward


def test_each_package_of_the_grader_says_what_it_holds_and_holds_no_code_at_its_top():
    """A maintainer finds the owner of a limit, a message or a setting by its package: each
    __init__.py is an overview that names its modules, and defines nothing to look for."""
    for init in sorted((ROOT / "grader").glob("*/__init__.py")):
        tree = ast.parse(init.read_text(encoding="utf-8"))
        overview = ast.get_docstring(tree) or ""
        assert len(tree.body) == 1 and overview, f"{init.relative_to(ROOT)}: a docstring and nothing else"
        unnamed = [p.name for p in init.parent.glob("*.py") if p.name != "__init__.py" and p.stem not in overview]
        assert not unnamed, f"{init.relative_to(ROOT)} does not name {unnamed}"


def test_the_kernel_layer_imports_neither_nbgrader_nor_the_engine():
    kernel = [p for p in grader_files() if p.parent.name in LAYERS["kernel"]]
    assert len(kernel) > 10
    for path in kernel:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom | ast.Import):
                names = [node.module or ""] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
                assert not any(n.split(".")[0] == "nbgrader" for n in names), f"{path} imports nbgrader"
                assert not any(n.startswith("grader.") and LAYER_OF.get(n.split(".")[1], 0) > 0 for n in names), (
                    f"{path} imports above the kernel layer"
                )


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


# Imports of packages that a function may defer: extras a course need not install, and the
# places where deferring is the design, each with its reason.
OPTIONAL_PACKAGES = {"distributed", "jwt", "cryptography", "psycopg"}
DEFERRED_BY_DESIGN = {
    "grader/kernels/template_server.py": "the template process imports ipykernel and matplotlib once, for every fork",
    "tools/check_env.py": "reports each missing package instead of failing on the first",
    "tools/cells.py": "sets matplotlib's backend in this process only, when answers are run",
    "grader/records/report.py": "imports matplotlib (0.4 s) for the report command only, not for every command",
    "hub/lti_setup.py": "imports the grader after putting the repository on the path of the hub's process",
}


def test_imports_sit_at_the_top_of_their_module_unless_optional_or_deferred_by_design():
    found = []
    for package in ("grader", "tools", "hub"):
        for path in sorted((ROOT / package).glob("**/*.py" if package == "grader" else "*.py")):
            relative = path.relative_to(ROOT).as_posix()
            if relative in DEFERRED_BY_DESIGN:
                continue
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    continue
                for inner in ast.walk(node):
                    if isinstance(inner, ast.Import):
                        names = [alias.name for alias in inner.names]
                    elif isinstance(inner, ast.ImportFrom) and not inner.level:
                        names = [inner.module or ""]
                    else:
                        continue
                    found += [
                        f"{relative}:{inner.lineno} {name}"
                        for name in names
                        if name.split(".")[0] not in OPTIONAL_PACKAGES
                    ]
    assert not found, "imports inside functions (move them to the module's top):\n" + "\n".join(found)
    for relative in DEFERRED_BY_DESIGN:
        assert (ROOT / relative).exists(), f"{relative} is gone: drop it from DEFERRED_BY_DESIGN"


# -- the tests' own shape: test modules share through helpers and conftest.py, and each says what it needs.
TESTS = ROOT / "tests"
# Markers pytest itself defines: any test may use them without pytest.ini registering them.
BUILTIN_MARKS = {"parametrize", "skip", "skipif", "xfail", "usefixtures", "filterwarnings"}


def imported_names(tree: ast.Module) -> list[str]:
    """Every module an import statement names, and every `import x` / `from x import` written
    in a string (code a test hands to a child Python)."""
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level:
            names.append(node.module or "")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            names += re.findall(r"^\s*(?:from|import)\s+([\w.]+)", node.value, re.MULTILINE)
    return names


def test_no_test_module_is_imported_by_another_module_of_the_tests():
    """What several test modules share lives in a helper module (no test_ prefix) or, for a
    fixture, in conftest.py: importing a test module runs its module-level checks and hands
    its fixtures to pytest a second time."""
    test_modules = {path.stem for path in TESTS.glob("test_*.py")}
    assert len(test_modules) > 10, "no test modules found"
    found = [
        f"tests/{path.name} imports {name}"
        for path in sorted(TESTS.glob("*.py"))
        for name in imported_names(ast.parse(path.read_text(encoding="utf-8")))
        if name.split(".")[0] in test_modules - {path.stem}
    ]
    assert not found, found


def registered_markers() -> set[str]:
    config = configparser.ConfigParser(interpolation=None)
    config.read(ROOT / "pytest.ini", encoding="utf-8")
    return {line.split(":")[0].strip() for line in config["pytest"]["markers"].splitlines() if line.strip()}


def mark_name(node: ast.expr) -> str | None:
    """X of `pytest.mark.X` or `pytest.mark.X(...)`; None for anything else."""
    if isinstance(node, ast.Call):
        node = node.func
    if (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Attribute)
        and node.value.attr == "mark"
        and isinstance(node.value.value, ast.Name)
        and node.value.value.id == "pytest"
    ):
        return node.attr
    return None


def test_the_markers_are_registered():
    assert registered_markers() >= {"unit", "integration", "browser", "sandbox", "gpu"}


def test_every_test_module_sets_pytestmark_with_registered_markers_only():
    """`pytest -m unit` (or integration, browser, sandbox, gpu) picks by these marks: each module
    says at module level which of the registered markers fit it (a single test may add one)."""
    registered = registered_markers()
    problems = []
    for path in sorted(TESTS.glob("test_*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        values = [
            node.value
            for node in tree.body
            if isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets)
        ]
        # Marks on single tests (a module's fast tests marked unit) are registered ones too.
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                for name in filter(None, map(mark_name, node.decorator_list)):
                    if name not in registered | BUILTIN_MARKS:
                        problems.append(f"tests/{path.name}::{node.name}: unregistered marker {name}")
        if len(values) != 1:
            problems.append(f"tests/{path.name}: {len(values)} module-level pytestmark assignments, not 1")
            continue
        marks = values[0].elts if isinstance(values[0], ast.List | ast.Tuple) else [values[0]]
        names = [mark_name(mark) for mark in marks]
        if not names or None in names or not set(names) <= registered:
            problems.append(f"tests/{path.name}: pytestmark = {ast.unparse(values[0])}")
    assert not problems, "\n".join(problems) + f"\nregistered in pytest.ini: {sorted(registered)}"


def lesson_names() -> set[str]:
    """Every lesson id, graded item and name an exercise defines (a judge's answer included)."""
    from tools import cells, course

    names = set()
    for lesson in course.assignment_ids():
        names.add(lesson)
        for cell in cells.solution_cells(lesson):
            names |= {cell["id"], cell["id"].removeprefix("test_")}
            names |= set(re.findall(r"^(?:def|class) (\w+)", cell["source"], re.MULTILINE))
    # English words that are also names here ("timed out"); a judge's helper `judge`.
    return {name for name in names if len(name) > 3 and name not in {"timed", "judge"}}


def test_the_grader_names_no_lesson():
    """Course content lives with its lesson (a judge in its item's tests cell): grader/ works for any
    nbgrader course, and a new lesson needs no edit there."""
    names = lesson_names()
    assert {"01_blocks", "ParallelBlock", "count_parameters"} <= names
    # One pass a file: every name at once (longest first), with the object it is read from, if any.
    uses = re.compile(rf"(?:\b(\w+)\.)?\b({'|'.join(map(re.escape, sorted(names, key=len, reverse=True)))})\b")
    found = {
        f"{path.relative_to(ROOT)}: {use.group(2)}"
        for path in grader_files()
        for use in uses.finditer(path.read_text(encoding="utf-8"))
        if not standard_attribute(use.group(1), use.group(2))
    }
    assert not found, sorted(found)


def standard_attribute(module: str | None, name: str) -> bool:
    """Whether `module.name` is Python's own (`gc.freeze`): a lesson may define a name the
    standard library has too, and the grader may call the library's."""
    if module not in sys.stdlib_module_names:
        return False
    return hasattr(importlib.import_module(module), name)


def test_a_standard_librarys_name_is_no_lesson_name():
    """The exception above is the standard library's attribute only, never a bare name or another object's."""
    assert standard_attribute("gc", "freeze")
    assert not standard_attribute(None, "freeze")
    assert not standard_attribute("blocks", "freeze")
    assert not standard_attribute("gc", "ParallelBlock")


def test_no_function_is_over_80_lines():
    """A function a maintainer can read at once (def line to last line), in the grader and the tools."""
    long = [
        f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({node.end_lineno - node.lineno + 1} lines)"
        for package in ("grader", "tools", "hub")
        for path in sorted((ROOT / package).glob("**/*.py" if package == "grader" else "*.py"))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.end_lineno - node.lineno + 1 > 80
    ]
    assert not long, long
