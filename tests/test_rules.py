"""The course rules (tools/rules.py): each one holds for the real lessons and
each one stops the build, with file:line, when a lesson breaks it."""

import pytest

from tools import clauses as clause_table
from tools import notebooks, rules, source

pytestmark = pytest.mark.unit


def test_every_rule_holds_for_the_course():
    rules.check()


def test_the_demo_lesson_is_valid(demo_lesson):
    rules.check()


def _break(path, old, new):
    text = path.read_text()
    assert old in text, f"the demo no longer contains {old!r}"
    path.write_text(text.replace(old, new, 1))


# (file, text to replace, replacement, expected line, words of the rule)
BROKEN = {
    "missing hidden tests": (
        "exercise.py",
        '### BEGIN HIDDEN TESTS\nassert double(-3) == -6, "double(-3) should be -6."\n### END HIDDEN TESTS\n',
        "",
        13,
        "hidden tests",
    ),
    "no visible assert": (
        "exercise.py",
        'assert double(2) == 4, "double(2) should be 4."\n',
        "double(2)\n",
        13,
        "visible assert",
    ),
    "tests not named test_<answer>": (
        "exercise.py",
        'grade_id="test_double"',
        'grade_id="check_double"',
        13,
        "test_<answer>",
    ),
    "a clause's tests cell before the answer's first": (
        "exercise.py",
        'grade_id="test_double"',
        'grade_id="test_double_sign"',
        13,
        "first tests cell is test_double",
    ),
    "zero points": ("exercise.py", "points=2", "points=0", 13, "at least 1"),
    "no manual question": (
        "exercise.py",
        'manual [markdown] grade_id="why" points=1',
        "[markdown]",
        1,
        "manually graded question",
    ),
    "answer without solution block": ("exercise.py", "    ### BEGIN SOLUTION\n", "", 7, "BEGIN SOLUTION"),
    "foreign import": ("exercise.py", "import math", "import pandas", 5, "not pandas"),
    "graded cell in a lecture": (
        "lecture.py",
        "# %%\nx = 1",
        '# %% tests grade_id="t" points=1\nx = 1',
        24,
        "belong in exercise.py",
    ),
    "title not from the header": ("lecture.py", "# # Lesson 99: Demo", "# # Demo lesson", 19, "Lesson 99: Demo"),
    "gpu setting missing": ("lecture.py", "#     gpu: false\n", "", 1, "gpu:"),
    "no pointer to the exercise": (
        "lecture.py",
        "`exercises/99_demo/99_demo.ipynb`",
        "the exercise",
        28,
        "points at the exercise",
    ),
    "unknown tag": ("lecture.py", "# %%\nx = 1", '# %% tags=["slow"]\nx = 1', 24, "unknown tag"),
    "metadata jupytext cannot read": ("exercise.py", 'grade_id="double"', "grade_id=double", 7, "key=JSON"),
    "unknown role": ("exercise.py", "# %% answer", "# %% solution", 7, "unknown cell role"),
    "a judge without its marker line": (
        "exercise.py",
        "### END HIDDEN TESTS\n",
        "### BEGIN JUDGE\ndef judge():\n    pass\n### END JUDGE\n### END HIDDEN TESTS\n",
        13,
        "# judged outside the kernel: NAME",
    ),
    "a marker line without its judge": (
        "exercise.py",
        'assert double(2) == 4, "double(2) should be 4."\n',
        '# judged outside the kernel: double\nassert double(2) == 4, "double(2) should be 4."\n',
        13,
        "### BEGIN JUDGE",
    ),
    "a source not in jupytext's canonical form": (
        "lecture.py",
        "#     gpu: false\n#     title: Demo\n",
        "#     title: Demo\n#     gpu: false\n",
        1,
        "canonical form",
    ),
    "a judge that returns no Judge": (
        "exercise.py",
        'assert double(2) == 4, "double(2) should be 4."\n',
        '# judged outside the kernel: double\nassert double(2) == 4, "double(2) should be 4."\n'
        "### BEGIN JUDGE\ndef judge():\n    return None\n### END JUDGE\n",
        13,
        "should return a grader.judges.Judge",
    ),
}


@pytest.mark.parametrize("case", BROKEN, ids=str)
def test_a_broken_rule_stops_the_build_with_file_line_and_rule(demo_lesson, case):
    name, old, new, line, words = BROKEN[case]
    _break(demo_lesson / name, old, new)
    with pytest.raises(notebooks.SourceError) as error:
        notebooks.build(None, run=False)
    message = str(error.value)
    assert message.startswith(f"lessons/99_demo/{name}:{line}: "), message
    assert words in message
    assert not (demo_lesson.parent.parent / "course").exists(), "nothing is built when a rule is broken"


JUDGED_DOUBLE = (
    '# judged outside the kernel: double\nassert double(2) == 4, "double(2) should be 4."\n',
    "### BEGIN JUDGE\n"
    "def judge():\n"
    "    from grader.judges import Judge, Rejected, exact_int\n\n"
    "    def check(data):\n"
    "        if exact_int(data['six'], 'double(3)') != 6:\n"
    "            raise Rejected('double(3) should be 6')\n\n"
    "    return Judge('double', \"judged = {'six': double(3)}\", check)\n"
    "### END JUDGE\n### END HIDDEN TESTS\n",
)


def test_a_judge_lives_with_its_item_and_the_rules_accept_it(demo_lesson):
    """The recipe's judged item: a marker line and a judge block in the hidden tests; no grader edit."""
    exercise = demo_lesson / "exercise.py"
    _break(exercise, 'assert double(2) == 4, "double(2) should be 4."\n', JUDGED_DOUBLE[0])
    _break(exercise, "### END HIDDEN TESTS\n", JUDGED_DOUBLE[1])
    rules.check()
    # Its judge computes on the CPU: a wrong answer seen only off the CPU gives it nothing to reject.
    wrong = demo_lesson.parent.parent / "tests" / "wrong_answers" / "99_demo.py"
    wrong.write_text(wrong.read_text().replace("# %% wrong id=double", "# %% wrong id=double seen_on=device"))
    with pytest.raises(notebooks.SourceError, match="not seen_on=device"):
        rules.check()
    wrong.write_text(wrong.read_text().replace(" seen_on=device", ""))
    outside = JUDGED_DOUBLE[1].replace("### END HIDDEN TESTS\n", "")
    _break(exercise, outside + "### END HIDDEN TESTS\n", "### END HIDDEN TESTS\n" + outside)
    with pytest.raises(notebooks.SourceError, match="inside the hidden tests"):
        rules.check()


CLAUSE_CELL = (
    '# %% tests grade_id="test_double_sign" points=1\n'
    'assert double(-1) == -2, "double(-1) should be -2."\n'
    "### BEGIN HIDDEN TESTS\n"
    'assert double(-5) == -10, "double(-5) should be -10."\n'
    "### END HIDDEN TESTS\n"
)


def test_a_further_clause_gets_its_own_tests_cell_and_points(demo_lesson):
    """Partial credit: test_double_sign after test_double is valid, once a wrong answer fails it;
    a second test_double is not."""
    _break(demo_lesson / "exercise.py", "### END HIDDEN TESTS\n", "### END HIDDEN TESTS\n\n" + CLAUSE_CELL)
    with pytest.raises(rules.RuleError, match="no wrong answer fails test_double_sign"):
        rules.check()
    fixtures = demo_lesson.parent.parent / "tests" / "wrong_answers" / "99_demo.py"
    fixtures.write_text(
        fixtures.read_text() + "\n# %% wrong id=double fails=test_double_sign -- drops the sign\n"
        "def double(x):\n    return 2 * abs(x)\n"
    )
    with pytest.raises(rules.RuleError, match=r"test_double_sign checks a clause its instructions do not name"):
        rules.check()
    _break(demo_lesson / "exercise.py", "# # Exercise 99: Demo\n", SIGN_CLAUSE)
    fixtures.write_text(
        fixtures.read_text().replace("id=double fails=test_double_sign", "id=double clause=sign fails=test_double_sign")
    )
    rules.check()
    _break(demo_lesson / "exercise.py", 'grade_id="test_double_sign"', 'grade_id="test_double"')
    with pytest.raises(rules.RuleError, match="only one"):
        rules.check()


SIGN_CLAUSE = "# # Exercise 99: Demo\n#\n# Write `double(x)`: twice `x`, its sign kept. [clause sign]\n"


def test_every_clause_has_a_wrong_answer_that_breaks_it_and_the_table_shows_it(demo_lesson):
    """A requirement tagged [clause NAME] needs a fixture clause=NAME failing the cell that checks it;
    a fixture cannot name a clause its item lacks; docs/clauses.md lists each with its wrong answers."""
    _break(demo_lesson / "exercise.py", "# # Exercise 99: Demo\n", SIGN_CLAUSE)
    with pytest.raises(
        rules.RuleError, match=r"exercise.py:4: clause sign of double has no wrong answer that breaks it"
    ):
        rules.check()
    fixtures = demo_lesson.parent.parent / "tests" / "wrong_answers" / "99_demo.py"
    fixtures.write_text(fixtures.read_text().replace("id=double -- squares", "id=double clause=sign -- squares"))
    rules.check()
    (demo_lesson.parent.parent / "docs").mkdir()
    (found,) = clause_table.clauses(source.read_source(demo_lesson / "exercise.py"))
    assert (found.item, found.name, found.text, found.cell) == (
        "double",
        "sign",
        "Write `double(x)`: twice `x`, its sign kept.",
        "test_double",
    )
    assert (
        "| `double` | `sign` | Write `double(x)`: twice `x`, its sign kept. | `test_double` | squares |"
        in clause_table.table()
    )
    fixtures.write_text(
        fixtures.read_text() + "\n# %% wrong id=double clause=sing -- halves\ndef double(x):\n    return x / 2\n"
    )
    with pytest.raises(rules.RuleError, match=r"99_demo.py:\d+: clause=sing: double has no clause of that name"):
        rules.check()


def test_the_clause_table_in_the_docs_is_current():
    assert clause_table.main(["--check"]) == 0, (
        "docs/clauses.md is not what the sources give: run python -m tools.clauses"
    )


def test_every_answer_needs_two_wrong_answers(demo_lesson):
    fixtures = demo_lesson.parent.parent / "tests" / "wrong_answers" / "99_demo.py"
    fixtures.write_text(fixtures.read_text().split("# %% wrong id=double -- squares")[0])
    with pytest.raises(rules.RuleError, match="double needs at least two realistic wrong answers"):
        rules.check()
    fixtures.write_text("# %% wrong id=triple -- no such answer\nx = 1\n")
    with pytest.raises(rules.RuleError, match=r"99_demo.py:1: wrong answer for 'triple'"):
        rules.check()


def test_a_fixture_names_only_tests_cells_that_exist(demo_lesson):
    fixtures = demo_lesson.parent.parent / "tests" / "wrong_answers" / "99_demo.py"
    fixtures.write_text(fixtures.read_text().replace("-- squares", "fails=test_square -- squares"))
    with pytest.raises(rules.RuleError, match="fails=test_square: 99_demo has no tests cell of that name"):
        rules.check()


def test_every_answer_needs_three_right_answers(demo_lesson):
    fixtures = demo_lesson.parent.parent / "tests" / "right_answers" / "99_demo.py"
    fixtures.write_text(fixtures.read_text().split("# %% right id=double -- sums")[0])
    with pytest.raises(rules.RuleError, match="double needs at least three right answers"):
        rules.check()
    fixtures.write_text("# %% right id=triple -- no such answer\nx = 1\n")
    with pytest.raises(rules.RuleError, match=r"99_demo.py:1: right answer for 'triple'"):
        rules.check()
