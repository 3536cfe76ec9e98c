"""The student release: what students get, and nothing else.

    python -m tools.release OUT [--colab OWNER/REPO@BRANCH]      (make release OUT=...)

This repository is the instructor's: `solutions/` and `lessons/*/exercise.py` hold every model
answer and every hidden test. Students get a copy built from it that holds only

    README.md                       how to open, work, check and hand in; the lesson table
    requirements.txt                the packages the notebooks import, pinned as in ours
    course/<id>.ipynb               the lectures, with their stored outputs
    exercises/<id>/...              each exercise folder as nbgrader released it

Every Colab badge in it opens the notebook from the location the instructor publishes the
release to (their fork, or a branch of it), set once in `release.toml` (or, for one build,
with --colab). OUT is a folder (created, or replaced when it holds an earlier release or only
a git checkout's `.git`, so a clone of the release repository can be refreshed in place), or
a file ending in `.zip`.

Before anything is written, the release is checked against the lessons' sources: no line of a
solution, a hidden test or a written answer's model text may appear in any of its files
(`leaks`); a build that would leak writes nothing and exits 1.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
import zipfile
from dataclasses import dataclass
from pathlib import Path

import nbformat
from nbgrader.utils import compute_checksum

from grader.course.history import course_sources
from tools.source import BRANCH, REPOSITORY, lesson_ids, lesson_settings, read_source

ROOT = Path(__file__).resolve().parent.parent
SETTINGS = ROOT / "release.toml"
MARKER = ".course-release.json"  # written into every release; a folder without it is never replaced
BADGE = re.compile(
    r"https://colab\.research\.google\.com/github/[\w.-]+/[\w.-]+/blob/[\w./-]+?/(?=(course|exercises)/)"
)
BLOCK = re.compile(r"### BEGIN (SOLUTION|HIDDEN TESTS)\n(.*?)### END \1", re.S)
# Packages the notebooks import (and JupyterLab to open them), pinned as requirements.txt pins them.
STUDENT_PACKAGES = ("torch", "numpy", "matplotlib", "jupyterlab")
# A secret line shorter than this ("return X", "pass") is ordinary code that instructions and
# lectures use too; a longer one found in the release is a leak.
SHORTEST_SECRET = 20


@dataclass(frozen=True)
class Location:
    """Where students open the notebooks on Colab: a GitHub repository and branch."""

    repository: str
    branch: str

    @classmethod
    def parse(cls, text: str) -> Location:
        match = re.fullmatch(r"([\w.-]+/[\w.-]+)@([\w./-]+)", text)
        if not match:
            raise ValueError(f"expected OWNER/REPO@BRANCH, got {text!r}")
        return cls(match.group(1), match.group(2))

    @classmethod
    def configured(cls, settings: Path | None = None) -> Location:
        """release.toml's setting; without one, a `student-release` branch of the course's home."""
        values = settings_values(settings)
        location = cls(values.get("colab_repository", REPOSITORY), values.get("colab_branch", "student-release"))
        cls.parse(f"{location.repository}@{location.branch}")  # the same rules as --colab
        return location

    def badge_prefix(self) -> str:
        return f"https://colab.research.google.com/github/{self.repository}/blob/{self.branch}/"


def settings_values(settings: Path | None = None) -> dict:
    """release.toml's keys (none when it is absent)."""
    settings = settings or SETTINGS
    return tomllib.loads(settings.read_text(encoding="utf-8")) if settings.exists() else {}


# -- whose repository the badges open --------------------------------------------------------
GITHUB_URL = re.compile(
    r"(?:https?://(?:[^@/]+@)?github\.com/|(?:ssh://)?git@github\.com[:/])([\w.-]+/[\w.-]+?)(?:\.git)?/?"
)


def github_repository(url: str) -> str | None:
    """OWNER/REPO of a GitHub remote URL (https or ssh); None for any other host."""
    match = GITHUB_URL.fullmatch(url.strip())
    return match.group(1) if match else None


def origin_repository(root: Path = ROOT) -> str | None:
    """OWNER/REPO of this checkout's `origin` remote on GitHub; None without one."""
    run = subprocess.run(["git", "remote", "get-url", "origin"], cwd=root, capture_output=True, text=True)
    return github_repository(run.stdout) if run.returncode == 0 else None


def badge_warning(location: Location, chosen_by: str | None, origin: str | None) -> str | None:
    """Why the badges would open another project's notebooks than this checkout's, or None.
    `chosen_by`: where the location was set (COLAB=, release.toml; None: set nowhere, the default);
    `origin`: this checkout's GitHub repository (None: no origin on GitHub to compare with)."""
    where = f"github.com/{location.repository} (branch {location.branch})"
    if chosen_by is None:
        opens = f"release.toml sets no colab_repository, so the Colab badges open the upstream project's copy, {where}"
    else:
        opens = f"the Colab badges open {where}, as {chosen_by} sets"
    fix = (
        "Students who click them work in that copy, not yours. Set colab_repository and colab_branch in "
        "release.toml (or pass COLAB=OWNER/REPO@BRANCH) to where you publish this release."
    )
    if origin is not None and origin.lower() != location.repository.lower():
        return f"{opens}: another project's repository than this checkout's, github.com/{origin} (git remote origin). {fix}"
    if origin is None and chosen_by is None:
        return f"{opens}. {fix}"
    return None


def banner(message: str) -> str:
    """A warning no one scrolls past: a ruled block on its own lines."""
    rule = "release: " + "!" * 78
    return f"{rule}\nrelease: WARNING: {message}\n{rule}"


# -- what must never ship -------------------------------------------------------------------
def secret_lines() -> dict[str, str]:
    """Every line of a model answer, a hidden test or a written answer's model text, mapped to
    where it comes from; text that also appears in public text (an exercise's instructions and
    visible code, a lecture) is not a secret."""
    secret: dict[str, str] = {}
    public: list[str] = []
    for lesson in lesson_ids():
        folder = ROOT / "lessons" / lesson
        if (folder / "lecture.py").exists():
            public.append((folder / "lecture.py").read_text(encoding="utf-8"))
        if not (folder / "exercise.py").exists():
            continue
        for cell in read_source(folder / "exercise.py").cells:
            where = f"lessons/{lesson}/exercise.py:{cell.line}"
            if cell.role == "manual":
                hidden = cell.source
                open_text = ""
            else:
                hidden = "\n".join(block for _, block in BLOCK.findall(cell.source))
                open_text = BLOCK.sub("", cell.source)
            public.append(open_text)
            for line in hidden.splitlines():
                secret.setdefault(line.strip(), where)
    public_text = "\n".join(public)
    return {line: where for line, where in secret.items() if len(line) >= SHORTEST_SECRET and line not in public_text}


def readable_text(path: Path) -> str:
    """What a reader of the file sees: a notebook's cell sources and outputs, any other file's text."""
    data = path.read_bytes()
    text = data.decode("utf-8", errors="replace")
    if path.suffix == ".ipynb":
        try:
            nb = nbformat.reads(text, as_version=4)
        except Exception:  # not a notebook after all: scan it as text
            return text
        parts = []
        for cell in nb.cells:
            parts.append(cell.source)
            for output in cell.get("outputs", []):
                parts.append(json.dumps(output, ensure_ascii=False))
                parts.extend(str(v) for v in output.get("data", {}).values())
                parts.append(str(output.get("text", "")))
        return text + "\n" + "\n".join(parts)
    return text


def leaks(folder: Path, secrets: dict[str, str] | None = None) -> list[str]:
    """Each file of `folder` that holds a secret line or an nbgrader marker, with the line."""
    secrets = secret_lines() if secrets is None else secrets
    found = []
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and ".git" not in p.relative_to(folder).parts):
        text = readable_text(path)
        name = path.relative_to(folder)
        for marker in ("BEGIN SOLUTION", "BEGIN HIDDEN TESTS", "END HIDDEN TESTS"):
            if marker in text:
                found.append(f"{name}: holds the marker {marker!r}")
        for line, where in secrets.items():
            if line in text:
                found.append(f"{name}: holds {where}'s line {line!r}")
    return found


# -- building -------------------------------------------------------------------------------
def with_badges(path: Path, location: Location) -> None:
    """Point every Colab badge of a copied notebook at the release's own copy of it. A cell that
    changes keeps an nbgrader checksum of its new text (nbgrader's own compute_checksum): a
    student's `nbgrader validate` then finds no read-only cell changed. The grader compares a
    badge without its location (grader/course/restore.py), so either release grades without a note."""
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            rewritten = BADGE.sub(location.badge_prefix(), cell.source)
            if rewritten != cell.source:
                cell.source = rewritten
                if "checksum" in cell.metadata.get("nbgrader", {}):
                    cell.metadata["nbgrader"]["checksum"] = compute_checksum(cell)
    nbformat.write(nb, path)


def pinned(names: tuple[str, ...]) -> list[str]:
    pins = {}
    for line in (ROOT / "requirements.txt").read_text(encoding="utf-8").splitlines():
        match = re.match(r"([A-Za-z0-9_.-]+)==", line)
        if match:
            pins[match.group(1).lower()] = line.strip()
    return [pins[name] for name in names]


NUMBER_WORDS = "zero one two three four five six seven eight nine ten eleven twelve".split()


def in_words(n: int) -> str:
    """A count as the READMEs write it: a word up to twelve, digits beyond."""
    return NUMBER_WORDS[n] if n < len(NUMBER_WORDS) else str(n)


def lesson_count(lessons: list[str]) -> str:
    """The opening words of both READMEs (the repository's and the release's): how many lessons
    there are, from lessons/ (tests/test_docs.py checks README.md's)."""
    return f"{in_words(len(lessons)).capitalize()} short lessons"


def gpu_runtime(lessons: list[str]) -> str:
    """Which lessons ask Colab for a GPU runtime, from their headers (`lesson: {gpu: true}`)."""
    numbers = [str(int(lesson.split("_", 1)[0])) for lesson in lessons if lesson_settings(lesson).get("gpu")]
    if not numbers:
        return "Every lesson runs on Colab's default CPU runtime."
    named = numbers[0] if len(numbers) == 1 else ", ".join(numbers[:-1]) + " and " + numbers[-1]
    asks = "asks" if len(numbers) == 1 else "ask"
    return f"Lesson{'s' * (len(numbers) > 1)} {named} {asks} for a GPU runtime (*Runtime -> Change runtime type*)."


def readme(location: Location) -> str:
    home = f"https://github.com/{location.repository}/blob/{location.branch}/"
    rows = ["| # | Lesson | Lecture | Exercise | Colab runtime |", "|---|---|---|---|---|"]
    for lesson in lesson_ids():
        settings = lesson_settings(lesson)
        runtime = "GPU" if settings.get("gpu") else "CPU"
        lecture, exercise = f"course/{lesson}.ipynb", f"exercises/{lesson}/{lesson}.ipynb"
        rows.append(
            f"| {int(lesson.split('_', 1)[0])} | {settings.get('title', lesson)} | [lecture]({lecture}) "
            f"([Colab]({location.badge_prefix()}{lecture})) | [exercise]({exercise}) "
            f"([Colab]({location.badge_prefix()}{exercise})) | {runtime} |"
        )
    table = "\n".join(rows)
    return f"""# Building blocks of PyTorch

{lesson_count(lesson_ids())} on how deep models are built in PyTorch. Each lesson is a lecture
notebook (`course/`) and an exercise (`exercises/`) that your instructor grades.

{table}

## Working on Colab

Open a notebook from its Colab link above (or the badge at its top). {gpu_runtime(lesson_ids())} Write your code where it says `YOUR CODE HERE`,
run the test cell under each answer (no output means its visible checks pass), then
*Runtime -> Restart session and run all* and download the `.ipynb` (*File -> Download*) to
hand it in where your instructor says.

## Working on your own machine

With Python 3.11 or newer:

```bash
python3 -m venv .venv && .venv/bin/pip install -r requirements.txt
.venv/bin/jupyter lab
```

More tests of the same behaviour run when your exercise is graded, so make the code right
rather than fit to the examples. Copies of this course live at {home}.
"""


def build(folder: Path, location: Location) -> None:
    """Write the release into the empty folder `folder`."""
    (folder / "course").mkdir(parents=True)
    for lesson in lesson_ids():
        lecture = ROOT / "course" / f"{lesson}.ipynb"
        if lecture.exists():
            shutil.copy2(lecture, folder / "course" / lecture.name)
            with_badges(folder / "course" / lecture.name, location)
        exercise = ROOT / "exercises" / lesson
        if exercise.is_dir():
            shutil.copytree(exercise, folder / "exercises" / lesson, ignore=shutil.ignore_patterns("__pycache__"))
            for notebook in (folder / "exercises" / lesson).rglob("*.ipynb"):
                with_badges(notebook, location)
    (folder / "README.md").write_text(readme(location), encoding="utf-8")
    (folder / "requirements.txt").write_text("\n".join(pinned(STUDENT_PACKAGES)) + "\n", encoding="utf-8")
    # The release's origin: the commit, whether the tree had uncommitted changes ("dirty": the
    # commit alone does not give this release back) and each exercise's source hash.
    sources = course_sources(ROOT)
    marker = {
        "commit": sources["commit"],
        "dirty": sources["dirty"],
        "colab": f"{location.repository}@{location.branch}",
    }
    (folder / MARKER).write_text(
        json.dumps({**marker, "sources": sources["sources"]}, indent=1) + "\n", encoding="utf-8"
    )


def replaceable(out: Path) -> str | None:
    """Why `out` must not be overwritten, or None."""
    resolved = out.resolve()
    if resolved == ROOT or ROOT in resolved.parents or resolved in ROOT.parents:
        return f"{out} is, holds or lies inside this repository; pick a folder outside it"
    if not out.exists():
        return None
    if not out.is_dir():
        return f"{out} exists and is not a folder"
    contents = {p.name for p in out.iterdir()} - {".git"}
    if contents and MARKER not in contents:
        return f"{out} holds files that are not an earlier release ({', '.join(sorted(contents)[:3])}...)"
    return None


def release(out: Path, location: Location) -> list[str]:
    """Build and check the release, then put it at `out`; returns the leaks (nothing written if any)."""
    with tempfile.TemporaryDirectory() as scratch:
        built = Path(scratch) / "release"
        build(built, location)
        found = leaks(built)
        if found:
            return found
        if out.suffix == ".zip":
            with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
                for path in sorted(built.rglob("*")):
                    if path.is_file():
                        archive.write(path, path.relative_to(built).as_posix())
            return []
        out.mkdir(parents=True, exist_ok=True)
        for old in out.iterdir():
            if old.name != ".git":
                shutil.rmtree(old) if old.is_dir() else old.unlink()
        for new in built.iterdir():
            shutil.move(str(new), out / new.name)
    return []


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.release", description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="a folder, or a file ending in .zip")
    parser.add_argument("--colab", help="OWNER/REPO@BRANCH where students open the notebooks (default: release.toml)")
    args = parser.parse_args(argv)
    try:
        location = Location.parse(args.colab) if args.colab else Location.configured()
    except (ValueError, tomllib.TOMLDecodeError) as error:
        print(f"release: {error}", file=sys.stderr)
        return 2
    problem = None if args.out.suffix == ".zip" else replaceable(args.out)
    if problem:
        print(f"release: refusing to write: {problem}", file=sys.stderr)
        return 2
    found = release(args.out, location)
    if found:
        print("release: NOT written; these files would give away solutions or hidden tests:", file=sys.stderr)
        print("\n".join(f"  {line}" for line in found), file=sys.stderr)
        return 1
    print(f"release written to {args.out}; its Colab badges open github.com/{location.repository} ({location.branch})")
    chosen_by = (
        "COLAB= (--colab)" if args.colab else "release.toml" if "colab_repository" in settings_values() else None
    )
    warning = badge_warning(location, chosen_by, origin_repository())
    if warning:
        print(banner(warning), file=sys.stderr)
    if (location.repository, location.branch) == (REPOSITORY, BRANCH):
        print("release: note: that is this repository's own branch, which also holds the solutions", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
