"""The documents a newcomer reads stay true: README is short and links every
guide in docs/, no relative link is broken, the code map names every module that
exists and nothing that does not, the grading guide's command-line options are
the grader's own, and pyproject.toml's version ranges hold the pins that
requirements.txt installs and `make test` runs."""

from __future__ import annotations

import itertools
import re
import tomllib

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from conftest import ROOT
from tools import notebooks, release

pytestmark = pytest.mark.unit

README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))
MAX_README_LINES = 250
# The packages whose modules the code map must name, one line per module.
MAPPED = ("grader", "tools", "hub")


def _prose(text: str) -> str:
    """Markdown without fenced code blocks and inline code, where links are not links."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.MULTILINE | re.DOTALL)
    return re.sub(r"`[^`\n]*`", "", text)


def _links(text: str) -> list[str]:
    return re.findall(r"\[[^\]]*\]\(([^)\s]+)\)", _prose(text))


def _slug(heading: str) -> str:
    """The anchor GitHub gives a heading."""
    heading = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return heading.replace(" ", "-")


def _anchors(path) -> set[str]:
    text = re.sub(r"^```.*?^```", "", path.read_text(encoding="utf-8"), flags=re.MULTILINE | re.DOTALL)
    return {_slug(h) for h in re.findall(r"^#+\s+(.*)$", text, re.MULTILINE)}


def _broken_links(page) -> list[str]:
    broken = []
    for target in _links(page.read_text(encoding="utf-8")):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto: ...
            continue
        path, _, anchor = target.partition("#")
        where = (page.parent / path).resolve() if path else page
        if not where.exists():
            broken.append(f"{target} (no file {where.relative_to(ROOT) if where.is_relative_to(ROOT) else where})")
        elif anchor and where.suffix == ".md" and anchor not in _anchors(where):
            broken.append(f"{target} (no heading #{anchor} in {where.name})")
    return broken


@pytest.mark.parametrize("page", [README, *DOCS], ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_points_to_a_file_that_exists(page):
    assert _broken_links(page) == []


def test_readme_links_every_guide():
    linked = {(ROOT / target.partition("#")[0]).resolve() for target in _links(README.read_text(encoding="utf-8"))}
    missing = [str(doc.relative_to(ROOT)) for doc in DOCS if doc.resolve() not in linked]
    assert DOCS, "docs/ holds no guide"
    assert missing == [], f"README does not link {missing}"


def test_readme_is_short():
    """Its own text, that is: the lesson table is generated (a new lesson adds a row, not prose)."""
    text = README.read_text(encoding="utf-8")
    table = text[text.index(notebooks.TABLE_START) : text.index(notebooks.TABLE_END)]
    lines = len(text.splitlines()) - len(table.splitlines())
    assert lines <= MAX_README_LINES, (
        f"README has {lines} lines besides its lesson table, over {MAX_README_LINES}: "
        "say it shorter or move a long section to a guide in docs/"
    )


def test_readme_says_how_many_lessons_there_are():
    """The first section's count follows the lessons (a new lesson would leave it stale): the words
    the release's README is generated with (tools/release.py, lesson_count)."""
    count = release.lesson_count(notebooks.lesson_ids())
    assert f"{count} on how deep models" in README.read_text(encoding="utf-8"), f"README should say {count!r}"


def test_the_release_readme_counts_the_lessons_and_names_the_gpu_ones(monkeypatch):
    """`make release` writes the count and the lessons that ask for a GPU from lessons/: the
    release's README follows a lesson added or made a GPU one, with nothing written by hand."""
    location = release.Location("someone/course", "main")
    text = release.readme(location)
    gpu = sorted(notebooks.gpu_lessons())
    assert f"{release.lesson_count(notebooks.lesson_ids())} on how deep models" in text
    assert release.gpu_runtime(notebooks.lesson_ids()) in text and all(str(int(g[:2])) in text for g in gpu)
    settings = release.lesson_settings
    monkeypatch.setattr(release, "lesson_ids", lambda: [*notebooks.lesson_ids(), "08_more"])
    monkeypatch.setattr(
        release, "lesson_settings", lambda lesson: {"gpu": True} if lesson == "08_more" else settings(lesson)
    )
    more = release.readme(location)
    assert f"{release.in_words(len(notebooks.lesson_ids()) + 1).capitalize()} short lessons on" in more
    numbers = [str(int(g[:2])) for g in gpu] + ["8"]
    assert f"Lessons {', '.join(numbers[:-1])} and 8 ask for a GPU runtime" in more, more


def test_counts_in_words():
    assert [release.in_words(n) for n in (0, 1, 7, 12, 13)] == ["zero", "one", "seven", "twelve", "13"]
    assert release.lesson_count(["01_a"] * 8) == "Eight short lessons"
    assert release.gpu_runtime([]).startswith("Every lesson runs on Colab's default CPU runtime")


def _code_map() -> str:
    """The bulleted map under README's "Maintainers: how the pieces fit"."""
    text = README.read_text(encoding="utf-8")
    section = text.split("## Maintainers: how the pieces fit", 1)[1]
    after_intro = section.split("A map of the code", 1)[1].split("\n\n", 1)[1]
    return after_intro.split("\n\n", 1)[0]


def _named() -> set[str]:
    """Every module the code map names: a path, or a file name under its package's entry
    (`- `grader/runner/`: `who.py` ...` names grader/runner/who.py)."""
    text = _code_map()
    named = set(re.findall(r"`(\w+/[\w/]+\.py)`", text))
    for package, entry in re.findall(r"^\s*- `(grader/\w+/)`:(.*?)(?=^\s*- |\Z)", text, re.MULTILINE | re.DOTALL):
        named |= {package + name for name in re.findall(r"`(\w+\.py)`", entry)}
    return named


def test_code_map_names_only_modules_that_exist():
    named = _named()
    assert named, "README's code map names no module"
    assert sorted(name for name in named if not (ROOT / name).is_file()) == []


def test_code_map_names_every_module():
    named = _named()
    modules = {str(p.relative_to(ROOT)) for package in MAPPED for p in (ROOT / package).glob("*.py")}
    # The grader's packages, each module under its package's entry (an __init__.py is its overview).
    modules |= {str(p.relative_to(ROOT)) for p in (ROOT / "grader").glob("*/*.py") if p.name != "__init__.py"}
    assert any(m.startswith("grader/runner/") for m in modules)
    assert sorted(modules - named) == [], "add these modules to README's code map"


# --- The grading guide's command-line options ---------------------------------------


def _options_table() -> list[tuple[list[str], set[str]]]:
    """(command words, options) for each row of docs/grading.md's options table."""
    text = (ROOT / "docs" / "grading.md").read_text(encoding="utf-8")
    section = text.split("## Command-line options", 1)[1].split("\n## ", 1)[0]
    common = set(re.findall(r"--[a-z][a-z-]*", section.split("\n|", 1)[0]))
    rows = []
    for row in re.findall(r"^\| `([^`]+)` \|(.*)\|$", section, re.MULTILINE):
        words = list(itertools.takewhile(lambda w: re.fullmatch(r"[a-z]+", w), row[0].split()))
        rows.append((words, common | set(re.findall(r"(?<![\w-])--[a-z][a-z-]*", " ".join(row)))))
    return rows


def test_grading_guide_documents_options_the_grader_has(capsys):
    from grader.__main__ import main

    rows = _options_table()
    assert {" ".join(words) for words, _ in rows} == {"grade", "feedback", "report", "export", "lms push"}
    unknown = []
    for words, options in rows:
        with pytest.raises(SystemExit):
            main([*words, "--help"])
        usage = capsys.readouterr().out
        unknown += [f"{' '.join(words)} {option}" for option in sorted(options) if option not in usage]
    assert unknown == [], "docs/grading.md names options the grader does not have"


# --- Version ranges ----------------------------------------------------------------


def _pins() -> dict[str, str]:
    """requirements.txt: normalized name -> the exact version it pins."""
    pins = {}
    for line in (ROOT / "requirements.txt").read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            requirement = Requirement(line)
            (spec,) = requirement.specifier
            assert spec.operator == "==", f"requirements.txt must pin exactly: {line}"
            pins[canonicalize_name(requirement.name)] = spec.version
    return pins


def _ranges() -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras = [line for group in project["optional-dependencies"].values() for line in group]
    return [Requirement(line) for line in [*project["dependencies"], *extras]]


def test_every_dependency_is_a_range_from_the_tested_pin():
    pins = _pins()
    problems = []
    for requirement in _ranges():
        name = canonicalize_name(requirement.name)
        lower = [s for s in requirement.specifier if s.operator in (">=", ">")]
        upper = [s for s in requirement.specifier if s.operator in ("<", "<=")]
        if not lower or not upper:
            problems.append(f"{requirement}: needs a lower and an upper bound")
        elif name not in pins:
            problems.append(f"{requirement}: requirements.txt does not pin it, so nothing tests the range")
        elif not requirement.specifier.contains(pins[name], prereleases=True):
            problems.append(f"{requirement}: requirements.txt pins {pins[name]}, outside the range")
        elif [s.version for s in lower] != [pins[name]]:
            problems.append(f"{requirement}: the lower bound must be the tested pin, {pins[name]}")
    assert problems == []
