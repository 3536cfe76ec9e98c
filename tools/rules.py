"""The course's rules, checked on the text sources before anything is built.

`make notebooks` (tools/notebooks.py build) calls `check()` first and stops at
the first violation with `file:line: rule`, in well under a second, so a broken
rule shows up in the edit loop instead of minutes later in a slow test. The
slow tests then check behaviour (notebooks run, tests fail on wrong answers).

    python -m tools.rules [ID ...]       # just the check

The rules, one function each (see RULES at the bottom):
- a lesson folder is `NN_name` and holds lecture.py and exercise.py;
- the lecture's header sets `lesson: {title: str, gpu: bool}`; the lecture's
  first heading is `Lesson N: <title>`, the exercise's `Exercise N: <title>`;
  the lecture ends by pointing at its exercise;
- a lecture has no graded cells; an exercise has at least one answer, each
  answer `X` is followed by a tests cell `test_X` worth >= 1 point with a
  visible assert before its hidden tests, and optionally more tests cells
  `test_X_<clause>`, one per clause, so that points follow clauses (partial
  credit); answers hold a solution block;
  at least one manually graded question (a markdown cell with points >= 1);
- grade ids are unique; tags are nbval's or nbgrader's;
- an exercise imports only torch, numpy, matplotlib and the standard library
  (it must run on Colab as downloaded); a judge block (below) imports grader.judges;
- a tests cell judged outside the kernel has both the line `# judged outside
  the kernel: NAME` and, inside its hidden tests, a `### BEGIN JUDGE` block
  whose `judge()` returns a grader.judges.Judge; names are unique in a lesson;
- every answer has at least two wrong-answer fixtures in
  tests/wrong_answers/<id>.py, every fixture names an existing answer and
  existing tests cells, and every tests cell is failed by some fixture;
- every clause an item's instructions tag (`[clause NAME]`) has a wrong-answer fixture
  naming it (`clause=NAME`) that fails the cell checking it, and every `test_X_<clause>`
  cell's clause is tagged (tools/clauses.py);
- every judged tests cell is failed by a fixture not marked `seen_on=device` (a
  judge computes on the CPU and must reject one of its item's wrong answers);
- every answer has at least three right answers in tests/right_answers/<id>.py;
- a lesson's sources are in jupytext's canonical form (as `format` writes them).
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

from grader import judges
from tools import cells
from tools import clauses as clause_table
from tools import source as notebooks
from tools.source import Source, SourceError

ALLOWED_IMPORTS = {"torch", "numpy", "matplotlib"}
ALLOWED_TAG = re.compile(r"(nbval-[a-z-]+|raises-exception)$")
LESSON_ID = re.compile(r"(?P<number>\d{2})_[a-z0-9_]+$")


class RuleError(SourceError):
    """`file:line: rule` for the first broken rule."""


def fail(where: str, line: int, rule: str) -> None:
    raise RuleError(f"{where}:{line}: {rule}")


def heading(source: Source) -> tuple[str, int]:
    first = source.cells[0] if source.cells else None
    if first is None or first.cell_type != "markdown" or not first.source.startswith("# "):
        fail(source.path, first.line if first else 1, "the first cell is a markdown cell with a '# ' title")
    return first.source.splitlines()[0][2:].strip(), first.line


def check_layout(lesson: str, folder: Path) -> None:
    if not LESSON_ID.match(lesson):
        fail(notebooks.display(folder), 1, "a lesson folder is named NN_name (two digits, lowercase)")
    for name in ("lecture.py", "exercise.py"):
        if not (folder / name).exists():
            fail(notebooks.display(folder / name), 1, "every lesson has a lecture.py and an exercise.py")


def check_header(lesson: str, lecture: Source, exercise: Source) -> None:
    settings = lecture.lesson
    if not isinstance(settings.get("title"), str) or not isinstance(settings.get("gpu"), bool):
        fail(lecture.path, 1, "the lecture's header sets `lesson:` with `title:` (text) and `gpu:` (true/false)")
    if exercise.lesson and exercise.lesson != settings:
        fail(exercise.path, 1, "lesson settings live in the lecture's header only (the exercise follows them)")
    number = int(LESSON_ID.match(lesson).group("number"))
    for source, word in ((lecture, "Lesson"), (exercise, "Exercise")):
        title, line = heading(source)
        expected = f"{word} {number}: {settings['title']}"
        if not title.startswith(expected):
            fail(source.path, line, f"the first heading starts with {expected!r} (from the lecture's header)")


def check_lecture(lesson: str, lecture: Source) -> None:
    for cell in lecture.cells:
        if cell.role or cell.grade_id or cell.points is not None:
            fail(lecture.path, cell.line, "graded cells (answer/tests/manual, grade_id, points) belong in exercise.py")
    pointer = f"exercises/{lesson}/{lesson}.ipynb"
    last = [c for c in lecture.cells if c.cell_type == "markdown"][-1:]
    if not last or pointer not in last[0].source:
        fail(
            lecture.path,
            last[0].line if last else 1,
            f"the lecture ends with a summary that points at the exercise ({pointer})",
        )


def check_graded_cells(exercise: Source) -> None:
    answers: dict[str, int] = {}
    tested: set[str] = set()
    last_answer: str | None = None
    manual = 0
    for cell in exercise.cells:
        where = (exercise.path, cell.line)
        if cell.role and not cell.grade_id:
            fail(*where, f'a {cell.role} cell needs grade_id="NAME"')
        if cell.role in ("tests", "manual") and (not isinstance(cell.points, int) or cell.points < 1):
            fail(*where, f"a {cell.role} cell is worth a whole number of points, at least 1 (points=N)")
        if cell.role != "tests" and cell.role != "manual" and cell.points is not None:
            fail(*where, "only tests and manual cells carry points")
        if cell.role in ("answer", "tests") and cell.cell_type != "code":
            fail(*where, f"a {cell.role} cell is a code cell")
        if cell.role == "manual" and cell.cell_type != "markdown":
            fail(*where, "a manual cell is a [markdown] cell")
        if cell.role is None and cell.grade_id:
            fail(*where, "grade_id belongs to answer, tests and manual cells")
        if cell.role == "answer":
            if "### BEGIN SOLUTION" not in cell.source or "### END SOLUTION" not in cell.source:
                fail(*where, "an answer cell holds its model answer between ### BEGIN SOLUTION and ### END SOLUTION")
            answers[cell.grade_id] = cell.line
            last_answer = cell.grade_id
        elif cell.role == "tests":
            answer = last_answer
            first = cell.grade_id == f"test_{answer}"
            if answer is None or not (first or cell.grade_id.startswith(f"test_{answer}_")):
                fail(
                    *where,
                    "a tests cell is named test_<answer> after its answer cell (test_<answer>_<clause> for "
                    f"each further clause; the answer above: {answer or 'none'})",
                )
            if first == (answer in tested):
                fail(*where, f"{answer}'s first tests cell is test_{answer}, and it has only one")
            tested.add(answer)
            visible, hidden_start, hidden = cell.source.partition("### BEGIN HIDDEN TESTS")
            if not hidden_start or "### END HIDDEN TESTS" not in hidden:
                fail(*where, "a tests cell has hidden tests between ### BEGIN HIDDEN TESTS and ### END HIDDEN TESTS")
            if not re.search(r"^\s*assert\b", visible, re.M):
                fail(
                    *where,
                    "a tests cell has a visible assert before its hidden tests, so students can check their work",
                )
        elif cell.role == "manual":
            manual += 1
    if not answers:
        fail(exercise.path, 1, "an exercise has at least one autograded answer cell")
    untested = [name for name in answers if name not in tested]
    if untested:
        fail(exercise.path, answers[untested[0]], f"answer {untested[0]} needs a tests cell test_{untested[0]}")
    if not manual:
        fail(exercise.path, 1, "an exercise has at least one manually graded question (manual [markdown] cell)")


def check_ids_and_tags(source: Source) -> None:
    seen: dict[str, int] = {}
    for cell, cell_id in zip(source.cells, notebooks.cell_ids(source.cells)):
        if cell_id in seen or cell_id == "colab-badge":
            fail(
                source.path,
                cell.line,
                f"cell id {cell_id!r} is used twice (first at line {seen.get(cell_id)}); "
                "rename the grade_id or the section heading",
            )
        seen[cell_id] = cell.line
        if not re.fullmatch(r"[A-Za-z0-9_-]{1,64}", cell_id):
            fail(source.path, cell.line, f"cell id {cell_id!r}: letters, digits, '-' and '_' only (nbformat)")
        for tag in cell.tags:
            if not ALLOWED_TAG.match(str(tag)):
                fail(source.path, cell.line, f"unknown tag {tag!r} (nbval-* or raises-exception)")


def check_imports(exercise: Source) -> None:
    allowed = ALLOWED_IMPORTS | set(sys.stdlib_module_names)
    for cell in exercise.cells:
        if cell.cell_type != "code":
            continue
        try:
            tree = ast.parse(judges.without_judge(cell.source))
        except SyntaxError as error:
            fail(exercise.path, cell.line + (error.lineno or 0), f"code does not parse: {error.msg}")
        except judges.JudgeError:
            continue  # check_judges names it
        for node in ast.walk(tree):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom) and not node.level
                else []
            )
            for name in names:
                if name.split(".")[0] not in allowed:
                    fail(
                        exercise.path,
                        cell.line + getattr(node, "lineno", 1),
                        f"an exercise imports only torch, numpy, matplotlib and the standard library, not {name}",
                    )


JUDGE_RECIPE = (
    "write `# judged outside the kernel: NAME` as the tests cell's first line and, before ### END HIDDEN TESTS, "
    "a block ### BEGIN JUDGE / def judge(): ... return Judge(answer, collect_code, check) / ### END JUDGE "
    "(README, Adding a lesson)"
)


def check_judges(exercise: Source) -> None:
    names: dict[str, int] = {}
    for cell in exercise.cells:
        if cell.role != "tests":
            if cell.cell_type == "code" and (judges.MARKER.search(cell.source) or judges.JUDGE_BEGIN in cell.source):
                fail(exercise.path, cell.line, "only a tests cell is judged outside the kernel")
            continue
        try:
            judge = judges.in_cell(cell.source)
        except judges.JudgeError as error:
            fail(exercise.path, cell.line, f"{error}: {JUDGE_RECIPE}")
        if judge is None:
            continue
        _, _, hidden = cell.source.partition("### BEGIN HIDDEN TESTS")
        if judges.JUDGE_BEGIN not in hidden.partition("### END HIDDEN TESTS")[0]:
            fail(exercise.path, cell.line, "a judge block goes inside the hidden tests (students never see it)")
        if judge.name in names:
            fail(exercise.path, cell.line, f"judge {judge.name!r} is named twice (first at line {names[judge.name]})")
        names[judge.name] = cell.line


def check_fixtures_name_answers(lesson: str, answers: list[str], fixtures: list, kind: str, least: int, need: str):
    """Every fixture of `kind` (wrong, right) names an answer of the lesson, and every answer has
    `least` of them (`need` says what to write). Returns where the fixtures live, for messages."""
    folder = cells.WRONG_ANSWERS if kind == "wrong" else cells.RIGHT_ANSWERS
    where = notebooks.display(folder / f"{lesson}.py")
    for fixture in fixtures:
        if fixture.answer_id not in answers:
            fail(where, fixture.line, f"{kind} answer for {fixture.answer_id!r}, which is not an answer of {lesson}")
    for answer in answers:
        if sum(f.answer_id == answer for f in fixtures) < least:
            fail(where, 1, f"{answer} {need}")
    return where


def check_wrong_answers(lesson: str, exercise: Source) -> None:
    answers = [c.grade_id for c in exercise.cells if c.role == "answer"]
    fixtures = cells.read_wrong_answers(lesson)
    need = "needs at least two realistic wrong answers (students' real mistakes)"
    where = check_fixtures_name_answers(lesson, answers, fixtures, "wrong", 2, need)
    tests = [c.grade_id for c in exercise.cells if c.role == "tests"]
    for wrong in fixtures:
        for test_id in wrong.fails:
            if test_id not in tests:
                fail(where, wrong.line, f"fails={test_id}: {lesson} has no tests cell of that name")
    caught = {test_id for wrong in fixtures for test_id in wrong.fails}
    for test_id in tests:
        if test_id not in caught:
            fail(where, 1, f"no wrong answer fails {test_id}: add one with fails={test_id} (points follow clauses)")
    judged = {c.grade_id for c in exercise.cells if c.role == "tests" and judges.MARKER.search(c.source)}
    on_the_cpu = {test_id for wrong in fixtures if wrong.seen_on != "device" for test_id in wrong.fails}
    for test_id in sorted(judged - on_the_cpu):
        fail(
            where,
            1,
            f"{test_id} is judged outside the kernel: add a wrong answer with fails={test_id} whose "
            "mistake shows on the CPU (not seen_on=device), for its judge to reject",
        )


def check_clauses(lesson: str, exercise: Source) -> None:
    for where, line, rule in clause_table.problems(lesson, exercise)[:1]:
        fail(where, line, rule)


def check_canonical(source: Source) -> None:
    path = notebooks.ROOT / source.path
    if notebooks.canonical(path) != path.read_text(encoding="utf-8"):
        fail(source.path, 1, "not in jupytext's canonical form: run python -m tools.notebooks format")


def check_right_answers(lesson: str, exercise: Source) -> None:
    answers = [c.grade_id for c in exercise.cells if c.role == "answer"]
    need = (
        "needs at least three right answers written another way "
        "(# %% right id=... -- how it differs): another API, a numpy scalar, a dict subclass, ..."
    )
    check_fixtures_name_answers(lesson, answers, cells.read_right_answers(lesson), "right", 3, need)


def check_lesson(lesson: str) -> None:
    folder = notebooks.lessons_dir() / lesson
    check_layout(lesson, folder)
    lecture = notebooks.read_source(folder / "lecture.py")
    exercise = notebooks.read_source(folder / "exercise.py")
    check_header(lesson, lecture, exercise)
    check_lecture(lesson, lecture)
    check_graded_cells(exercise)
    for source in (lecture, exercise):
        check_ids_and_tags(source)
    check_imports(exercise)
    check_judges(exercise)
    check_wrong_answers(lesson, exercise)
    check_clauses(lesson, exercise)
    check_right_answers(lesson, exercise)
    for source in (lecture, exercise):  # last: the rules above name a broken line more exactly
        check_canonical(source)


def check(ids: list[str] | None = None) -> None:
    """Raise RuleError on the first broken rule of the given (default: all) lessons."""
    for lesson in ids or notebooks.lesson_ids():
        check_lesson(lesson)


def main(argv: list[str]) -> int:
    try:
        check(argv or None)
    except SourceError as error:
        print(error, file=sys.stderr)
        return 1
    print("every course rule holds")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
