"""The student release (`make release OUT=...`, tools/release.py): every lecture and exercise a
student needs, no line of a solution, hidden test or model written answer, and Colab badges that
open the release's own copies where the instructor publishes it."""

import json
import re
import subprocess
import zipfile
from pathlib import Path

import nbformat
import pytest

from conftest import ASSIGNMENTS, ROOT
from grader.course.history import course_sources
from tools import release

pytestmark = pytest.mark.unit

LOCATION = release.Location("a-teacher/fall-course", "students/2026")
BLOCKS = re.compile(r"### BEGIN (SOLUTION|HIDDEN TESTS)\n(.*?)### END (SOLUTION|HIDDEN TESTS)", re.S)


@pytest.fixture(scope="module")
def released(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("published") / "release"
    assert release.main([str(out), "--colab", f"{LOCATION.repository}@{LOCATION.branch}"]) == 0
    return out


def hidden_text_of_the_solutions() -> list[str]:
    """Read from the nbgrader sources (solutions/), not the lesson sources the tool reads: each
    line of a model answer or hidden test, and each model written answer, long enough not to be
    an ordinary line that the instructions also use."""
    found, public = [], []
    for assignment in ASSIGNMENTS:
        nb = nbformat.read(ROOT / "solutions" / assignment / f"{assignment}.ipynb", as_version=4)
        public += [BLOCKS.sub("", c.source) for c in nb.cells if not is_manual(c)]
        lecture = ROOT / "lessons" / assignment / "lecture.py"
        public += [lecture.read_text(encoding="utf-8")] if lecture.exists() else []
        for cell in nb.cells:
            hidden = cell.source if is_manual(cell) else "\n".join(b for _, b, _ in BLOCKS.findall(cell.source))
            found += [line.strip() for line in hidden.splitlines() if len(line.strip()) >= 20]
    # A line one lesson hides and another shows (a common setup line) gives nothing away.
    everything_public = "\n".join(public)
    return [line for line in found if line not in everything_public]


def is_manual(cell) -> bool:
    meta = cell.metadata.get("nbgrader", {})
    return bool(meta.get("solution") and meta.get("grade") and cell.cell_type == "markdown")


def every_text(folder: Path) -> dict[str, str]:
    texts = {}
    for path in folder.rglob("*"):
        if path.is_file():
            text = path.read_text(encoding="utf-8", errors="replace")
            if path.suffix == ".ipynb":  # what a notebook shows, unescaped
                text += "\n".join(c.source for c in nbformat.reads(text, as_version=4).cells)
            texts[str(path.relative_to(folder))] = text
    return texts


def test_the_release_holds_every_lecture_and_exercise_and_nothing_of_the_instructors(released):
    names = {str(p.relative_to(released)) for p in released.rglob("*") if p.is_file()}
    for assignment in ASSIGNMENTS:
        assert f"course/{assignment}.ipynb" in names
        shipped = {str(p.relative_to(ROOT)) for p in (ROOT / "exercises" / assignment).rglob("*") if p.is_file()}
        assert shipped <= names, f"{assignment}: files of the exercise folder missing from the release"
    top = {name.split("/")[0] for name in names}
    assert top == {"course", "exercises", "README.md", "requirements.txt", release.MARKER}
    requirements = (released / "requirements.txt").read_text(encoding="utf-8")
    assert "torch==" in requirements and "nbgrader" not in requirements


def test_no_line_of_a_solution_or_hidden_test_is_in_the_release(released):
    secrets = hidden_text_of_the_solutions()
    assert len(secrets) > 200, "the check found too few solution lines to mean anything"
    texts = every_text(released)
    leaked = [(name, line) for name, text in texts.items() for line in secrets if line in text]
    assert leaked == []
    for name, text in texts.items():
        assert "BEGIN HIDDEN TESTS" not in text and "BEGIN SOLUTION" not in text, name


def test_badges_open_the_releases_own_copy_where_the_instructor_publishes_it(released):
    prefix = f"https://colab.research.google.com/github/{LOCATION.repository}/blob/{LOCATION.branch}/"
    notebooks = sorted(released.rglob("*.ipynb"))
    assert len(notebooks) == 2 * len(ASSIGNMENTS)
    for path in notebooks:
        own = str(path.relative_to(released))
        links = re.findall(r"https://colab\.research\.google\.com/github/[^)\s]+", every_text(released)[own])
        assert links and set(links) == {prefix + own}, own
    readme = (released / "README.md").read_text(encoding="utf-8")
    for link in re.findall(r"\]\((https://colab[^)]+)\)", readme):
        assert link.startswith(prefix) and (released / link[len(prefix) :]).exists()


def test_the_check_catches_a_leak_and_then_nothing_is_written(tmp_path, monkeypatch):
    secrets = release.secret_lines()
    line, where = next(iter(secrets.items()))
    real_build = release.build

    def leaky_build(folder, location):
        real_build(folder, location)
        nb = nbformat.read(folder / "course" / f"{ASSIGNMENTS[0]}.ipynb", as_version=4)
        nb.cells.append(nbformat.v4.new_markdown_cell(f"A hint: {line}"))
        nbformat.write(nb, folder / "course" / f"{ASSIGNMENTS[0]}.ipynb")

    monkeypatch.setattr(release, "build", leaky_build)
    out = tmp_path / "release"
    assert release.main([str(out)]) == 1
    assert not out.exists()
    assert release.leaks(tmp_path, {line: where}) == []  # nothing there to find


def test_an_earlier_release_is_replaced_but_never_a_folder_of_other_files(tmp_path):
    out = tmp_path / "clone"
    (out / ".git").mkdir(parents=True)
    (out / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    assert release.main([str(out)]) == 0
    (out / "course" / "stale.ipynb").write_text("{}")
    assert release.main([str(out)]) == 0
    assert not (out / "course" / "stale.ipynb").exists() and (out / ".git" / "HEAD").exists()
    marker = json.loads((out / release.MARKER).read_text())
    assert marker["colab"] == f"{release.Location.configured().repository}@{release.Location.configured().branch}"
    now = course_sources(ROOT)  # a dirty tree is marked: the commit alone does not give this release back
    assert marker["commit"] == now["commit"] and isinstance(marker["dirty"], bool)
    assert set(marker["sources"]) == set(now["sources"]) and ASSIGNMENTS[0] in marker["sources"]

    other = tmp_path / "notes"
    other.mkdir()
    (other / "grades.csv").write_text("student,score\n")
    assert release.main([str(other)]) == 2
    assert (other / "grades.csv").exists() and len(list(other.iterdir())) == 1
    assert release.main([str(ROOT / "build")]) == 2


def test_a_zip_release_holds_the_same_files(released, tmp_path):
    archive = tmp_path / "course.zip"
    assert release.main([str(archive), "--colab", f"{LOCATION.repository}@{LOCATION.branch}"]) == 0
    with zipfile.ZipFile(archive) as opened:
        zipped = set(opened.namelist())
    assert zipped == {str(p.relative_to(released)) for p in released.rglob("*") if p.is_file()}


def test_the_location_is_read_from_release_toml_and_checked(tmp_path):
    settings = tmp_path / "release.toml"
    settings.write_text('colab_repository = "me/my-fork"\ncolab_branch = "release"\n')
    assert release.Location.configured(settings) == release.Location("me/my-fork", "release")
    settings.write_text('colab_repository = "not a repository"\n')
    with pytest.raises(ValueError, match="OWNER/REPO@BRANCH"):
        release.Location.configured(settings)
    assert release.main([str(tmp_path / "out"), "--colab", "no-branch"]) == 2


def test_a_cell_whose_badge_the_release_rewrites_keeps_a_checksum_of_its_new_text(released):
    """nbgrader's own compute_checksum of every locked cell matches the checksum it carries: a
    student's `nbgrader validate` finds no read-only cell changed (it named the badge before)."""
    from nbgrader.utils import compute_checksum

    rewritten = 0
    for assignment in ASSIGNMENTS:
        ours = nbformat.read(ROOT / "exercises" / assignment / f"{assignment}.ipynb", as_version=4)
        theirs = nbformat.read(released / "exercises" / assignment / f"{assignment}.ipynb", as_version=4)
        for mine, shipped in zip(ours.cells, theirs.cells, strict=True):
            meta = shipped.metadata.get("nbgrader", {})
            if "checksum" in meta:
                assert compute_checksum(shipped) == meta["checksum"], (assignment, meta["grade_id"])
                rewritten += mine.source != shipped.source
    assert rewritten >= len(ASSIGNMENTS), "each exercise's locked badge cell is rewritten"


@pytest.mark.parametrize(
    ("origin", "chosen", "settings", "warned"),
    [
        (None, None, "", "release.toml sets no colab_repository, so the Colab badges open the upstream"),
        (None, None, 'colab_repository = "me/fork"\n', None),
        (None, "someone/else@main", "", None),
        ("me/fork", None, "", "release.toml sets no colab_repository, so the Colab badges open the upstream"),
        ("me/fork", None, 'colab_repository = "me/fork"\n', None),
        ("me/fork", "me/fork@release", "", None),
        ("Me/Fork", "me/fork@release", "", None),
        ("me/fork", "someone/else@main", "", "as COLAB= (--colab) sets: another project's repository"),
        ("me/fork", None, 'colab_repository = "someone/else"\n', "as release.toml sets: another project's"),
        (release.REPOSITORY, None, "", None),
    ],
)
def test_the_release_warns_loudly_when_the_badges_open_another_projects_copy(
    tmp_path, monkeypatch, capsys, origin, chosen, settings, warned
):
    """Compared with this checkout's `git remote get-url origin`; without release.toml's setting
    (file absent, or the key left commented as shipped) the badges open the upstream copy."""
    toml = tmp_path / "release.toml"
    if settings:
        toml.write_text(settings)
    monkeypatch.setattr(release, "SETTINGS", toml)
    monkeypatch.setattr(release, "origin_repository", lambda: origin)
    monkeypatch.setattr(release, "release", lambda out, location: [])  # the build is tested above
    assert release.main([str(tmp_path / "out.zip")] + (["--colab", chosen] if chosen else [])) == 0
    err = capsys.readouterr().err
    lines = err.splitlines()
    if warned is None:
        assert "WARNING" not in err
        return
    assert warned in err
    warning = next(i for i, line in enumerate(lines) if line.startswith("release: WARNING: "))
    assert (
        set(lines[warning - 1].removeprefix("release: ")) == {"!"} == set(lines[warning + 1].removeprefix("release: "))
    )
    if origin:
        assert f"github.com/{origin} (git remote origin)" in err


def test_the_origin_is_read_from_git_and_only_a_github_remote_names_a_repository(tmp_path):
    for url in ("https://github.com/me/fork.git", "git@github.com:me/fork.git", "ssh://git@github.com/me/fork"):
        assert release.github_repository(url + "\n") == "me/fork", url
    assert release.github_repository("https://gitlab.com/me/fork.git") is None
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    assert release.origin_repository(tmp_path) is None
    subprocess.run(["git", "-C", str(tmp_path), "remote", "add", "origin", "git@github.com:me/my.fork.git"], check=True)
    assert release.origin_repository(tmp_path) == "me/my.fork"
