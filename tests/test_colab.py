"""Colab, the students' second front door: every notebook opens itself there,
lesson 7 asks for a GPU, exercises run with nothing but Colab's own packages,
and a notebook as Colab saves it still grades correctly through nbgrader."""

from __future__ import annotations

import copy
import fcntl
import json
import os
import random
import re
import shutil
import string
import subprocess
import sys
import urllib.parse
import uuid

import nbformat
import pytest
import submissions

from conftest import ASSIGNMENTS, ROOT
from tools import course, notebooks

pytestmark = pytest.mark.integration

FRONT_DOORS = sorted(
    str(p.relative_to(ROOT)) for p in [*ROOT.glob("course/*.ipynb"), *ROOT.glob("exercises/*/*.ipynb")]
)
SOLUTIONS = sorted(str(p.relative_to(ROOT)) for p in ROOT.glob("solutions/*/*.ipynb"))
BADGE_URL = re.compile(r"\]\((https://colab\.research\.google\.com/github/[^)\s]+)\)")
COLAB_HOST_PATH = "colab.research.google.com/github/"


def _read(path: str):
    return nbformat.read(ROOT / path, as_version=4)


# --- Open in Colab badges ----------------------------------------------------


@pytest.mark.unit
@pytest.mark.parametrize("path", FRONT_DOORS + SOLUTIONS)
def test_badge_opens_the_notebooks_own_file_on_colab(path):
    nb = _read(path)
    first = nb.cells[0]
    assert first.cell_type == "markdown" and "Open In Colab" in first.source, "cell 0 is not the badge"
    urls = BADGE_URL.findall(first.source)
    assert len(urls) == 1, f"expected one Colab link in the badge, found {urls}"
    url = urllib.parse.urlparse(urls[0])
    # A solution is the nbgrader source: its badge is the one students get, the exercise's.
    own = path.replace("solutions/", "exercises/", 1) if path.startswith("solutions/") else path
    assert url.path == f"/github/{notebooks.REPOSITORY}/blob/{notebooks.BRANCH}/{own}"
    assert not url.query and not url.fragment
    assert (ROOT / own).exists()


def _project_files():
    """Files of the working tree that git would see (tracked or not ignored)."""
    listed = (
        subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=ROOT,
            capture_output=True,
            check=True,
        )
        .stdout.decode()
        .split("\0")
    )
    return [ROOT / name for name in listed if name and (ROOT / name).is_file()]


@pytest.mark.unit
def test_the_repository_location_is_set_in_one_place():
    assert re.fullmatch(r"[\w.-]+/[\w.-]+", notebooks.REPOSITORY)
    builder = (ROOT / "tools" / "source.py").read_text(encoding="utf-8")
    assert builder.count(f'"{notebooks.REPOSITORY}"') == 1
    elsewhere = []
    for path in _project_files():
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        if notebooks.REPOSITORY not in text and COLAB_HOST_PATH not in text:
            continue
        name = str(path.relative_to(ROOT))
        # the setting, this check, the release's badges (their location is the instructor's, release.toml),
        # and the grader's comparison of locked cells, which ignores whichever repository a Colab link names
        if name in {
            "tools/source.py",
            "tests/test_colab.py",
            "tools/release.py",
            "tests/test_release.py",
            "grader/course/restore.py",
        }:
            continue
        if path.suffix == ".ipynb":
            cells = nbformat.reads(text, as_version=4).cells
            later = "\n".join(c.source for c in cells[1:])
            if notebooks.REPOSITORY not in later and COLAB_HOST_PATH not in later:
                continue  # only the generated badge names it
        elsewhere.append(name)
    assert not elsewhere, f"the repository location is written outside tools/notebooks.py: {elsewhere}"


COLAB_ONLY_CODE = re.compile(r"google\.colab|^\s*[!%]\s*pip\b|\bpip install\b", re.M)


@pytest.mark.unit
@pytest.mark.parametrize("path", FRONT_DOORS + SOLUTIONS)
def test_colab_specific_code_only_in_the_first_code_cell(path):
    """Colab already has torch, numpy and matplotlib: any Colab-only set-up
    belongs in the first code cell, guarded so it does nothing elsewhere."""
    code = [c for c in _read(path).cells if c.cell_type == "code"]
    for cell in code[1:]:
        assert not COLAB_ONLY_CODE.search(cell.source), f"Colab-only code outside the first code cell:\n{cell.source}"
    if code and COLAB_ONLY_CODE.search(code[0].source):
        assert "google.colab" in code[0].source and "sys.modules" in code[0].source, (
            "Colab-only set-up must run only on Colab (check 'google.colab' in sys.modules)"
        )


# --- GPU runtime for lesson 7 --------------------------------------------------


@pytest.mark.unit
def test_a_gpu_lesson_asks_colab_for_the_runtime_colab_writes():
    """The lessons whose header says `gpu: true`; Colab's own metadata for a T4 runtime."""
    assert notebooks.gpu_lessons(), "no lesson asks for a GPU, yet lesson 7 is about GPUs"
    assert notebooks.COLAB_GPU == {"accelerator": "GPU", "colab": {"gpuType": "T4", "provenance": []}}


@pytest.mark.unit
@pytest.mark.parametrize("path", FRONT_DOORS + SOLUTIONS)
def test_gpu_runtime_metadata(path):
    meta = _read(path).metadata
    lesson = path.split("/")[1].removesuffix(".ipynb")
    if lesson in notebooks.gpu_lessons():
        assert meta.get("accelerator") == "GPU", "Colab offers a GPU only with accelerator: GPU"
        assert meta.get("colab") == {"gpuType": "T4", "provenance": []}
    else:
        assert "accelerator" not in meta and "colab" not in meta, (
            "only lessons whose header says gpu: true ask for a GPU"
        )


@pytest.mark.unit
def test_metadata_only_change_keeps_stored_outputs(tmp_path, demo_lesson):
    notebooks.build(None, run=False)
    stored = tmp_path / "course" / "99_demo.ipynb"
    nb = nbformat.read(stored, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"][0]
    code.outputs = [nbformat.v4.new_output("execute_result", {"text/plain": "1"}, execution_count=1)]
    code.execution_count = 1
    notebooks.write(nb, stored)
    lecture = demo_lesson / "lecture.py"
    lecture.write_text(lecture.read_text().replace("gpu: false", "gpu: true"))
    assert notebooks.drift() != []
    notebooks.build(None, run=False)
    rebuilt = nbformat.read(stored, as_version=4)
    assert notebooks.drift() == []
    assert rebuilt.metadata["accelerator"] == "GPU"
    assert [c for c in rebuilt.cells if c.cell_type == "code"][0].outputs == code.outputs


# --- Self-contained exercises ------------------------------------------------------

FRESH = ROOT / ".venv" / "colab-like"
# Colab's own versions (its backend-info list, August 2026) of the packages an
# exercise may import. Python and torch stay this machine's (3.11 and the pinned
# torch from requirements.txt): Colab runs Python 3.13 with torch 2.11, and the
# only torch wheel this machine may install is the pinned CPU build. The course
# uses no torch API newer than 2.11 (README states that floor). All three pins
# install on Python 3.11 from PyPI as wheels: numpy 2.1.3 and matplotlib 3.10.0
# have cp311 builds, ipykernel 6.17.1 is pure Python.
COLAB_PINS = {"numpy": "numpy==2.1.3", "matplotlib": "matplotlib==3.10.0", "ipykernel": "ipykernel==6.17.1"}


def _pins() -> list[str]:
    torch_pin = [
        line.strip()
        for line in (ROOT / "requirements.txt").read_text().splitlines()
        if re.match(r"torch\s*==", line.strip())
    ]
    assert len(torch_pin) == 1, "requirements.txt must pin torch exactly once"
    return torch_pin + list(COLAB_PINS.values())


@pytest.fixture(scope="module")
def fresh_python():
    """A virtual environment with only torch, numpy, matplotlib and ipykernel at
    Colab's versions, cached under .venv/ and remade when the pins change."""
    pins = _pins()
    stamp = FRESH / ".pins"
    FRESH.parent.mkdir(exist_ok=True)
    with open(FRESH.parent / "colab-like.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # concurrent test runs share one build
        if not stamp.exists() or stamp.read_text() != "\n".join(pins):
            shutil.rmtree(FRESH, ignore_errors=True)
            base = getattr(sys, "_base_executable", sys.executable)
            subprocess.run([base, "-m", "venv", str(FRESH)], check=True)
            subprocess.run(
                [
                    str(FRESH / "bin" / "python"),
                    "-m",
                    "pip",
                    "install",
                    "--quiet",
                    "--disable-pip-version-check",
                    *pins,
                ],
                check=True,
            )
            kernel = FRESH / "share" / "jupyter" / "kernels" / "colab-like"
            kernel.mkdir(parents=True)
            (kernel / "kernel.json").write_text(
                json.dumps(
                    {
                        "argv": [str(FRESH / "bin" / "python"), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                        "display_name": "Colab-like (torch, numpy, matplotlib)",
                        "language": "python",
                    }
                )
            )
            stamp.write_text("\n".join(pins))
    return FRESH


ISOLATION_CHECK = """\
import importlib.util, os, sys
assert sys.prefix == {prefix!r}, sys.prefix
assert os.listdir(".") == [{name!r}], os.listdir(".")
for module in ("nbgrader", "nbval", "jupyterlab", "tools", "conftest", "submissions"):
    assert importlib.util.find_spec(module) is None, module + " is importable"
import importlib.metadata
for package, version in {versions!r}.items():
    assert importlib.metadata.version(package) == version, (package, importlib.metadata.version(package), version)
assert not any(os.path.exists(os.path.join(p or ".", "nbgrader_config.py")) for p in sys.path)
"""


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_solution_runs_alone_with_only_colabs_packages(fresh_python, tmp_path, assignment):
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import KernelManager
    from nbclient import NotebookClient

    folder = tmp_path / "student"
    folder.mkdir()
    name = f"{assignment}.ipynb"
    shutil.copy(ROOT / "solutions" / assignment / name, folder / name)
    nb = nbformat.read(folder / name, as_version=4)
    assert any("### BEGIN HIDDEN TESTS" in c.source for c in nb.cells), "no hidden tests to run"
    nb.cells.insert(
        0,
        nbformat.v4.new_code_cell(
            ISOLATION_CHECK.format(
                prefix=str(fresh_python),
                name=name,
                versions={pin.split("==")[0]: pin.split("==")[1] for pin in COLAB_PINS.values()},
            ),
            id="isolation-check",
        ),
    )

    # The kernel sees nothing of this repository or of the test run's environment.
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in {"PYTHONPATH", "VIRTUAL_ENV", "MPLBACKEND", "JUPYTER_PATH", "JUPYTER_CONFIG_DIR"}
        and not k.startswith(("PYTEST", "COV_"))
    }
    path = [p for p in env.get("PATH", "").split(os.pathsep) if not p.startswith(str(ROOT))]
    env["PATH"] = os.pathsep.join([str(fresh_python / "bin"), *path])
    specs = KernelSpecManager(
        kernel_dirs=[str(fresh_python / "share" / "jupyter" / "kernels")], ensure_native_kernel=False
    )
    for attempt in (1, 2):  # a kernel that dies before it answers is started once more, as the grader does:
        # with the suite's workers starting kernels side by side, one fresh start in a run has died so
        manager = KernelManager(kernel_spec_manager=specs, kernel_name="colab-like")
        client = NotebookClient(
            nb, km=manager, timeout=120, allow_errors=True, resources={"metadata": {"path": str(folder)}}
        )
        try:
            client.execute(env=env)
            break
        except RuntimeError as error:
            if attempt == 2 or "before replying to kernel_info" not in str(error):
                raise

    failures = []
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            if output.output_type == "error":
                grade_id = cell.metadata.get("nbgrader", {}).get("grade_id", cell.get("id"))
                failures.append(f"{grade_id}: {output.ename}: {output.evalue}")
    assert not failures, "cells fail outside the repository:\n" + "\n".join(failures)


# --- A notebook as Colab saves it still grades ----------------------------------------


def _colab_id(rng: random.Random) -> str:
    return "".join(rng.choice(string.ascii_letters + string.digits + "-_") for _ in range(12))


def as_colab_saves(nb, name: str, gpu: bool, seed: int = 0) -> str:
    """The file a student gets from Colab's File > Download > .ipynb after working
    in the notebook: Colab's notebook metadata and kernelspec, nbformat 4.0 with a
    `metadata.id` per cell instead of cell ids, outputs with `outputId`s, and no
    `deletable`/`editable` flags (Colab drops them). Other cell metadata (nbgrader's)
    is kept."""
    rng = random.Random(seed)
    colab = {"provenance": [], "name": name, "toc_visible": True}
    if gpu:
        colab["gpuType"] = "T4"
    saved = {
        "nbformat": 4,
        "nbformat_minor": 0,
        "metadata": {
            "colab": colab,
            "kernelspec": {"name": "python3", "display_name": "Python 3"},
            "language_info": {"name": "python"},
        },
        "cells": [],
    }
    if gpu:
        saved["metadata"]["accelerator"] = "GPU"
    count = 0
    for cell in nb.cells:
        meta = {k: copy.deepcopy(v) for k, v in cell.metadata.items() if k not in {"deletable", "editable"}}
        meta["id"] = _colab_id(rng)
        saved_cell = {"cell_type": cell.cell_type, "source": cell.source, "metadata": meta}
        if cell.cell_type == "code":
            count += 1
            meta["colab"] = {"base_uri": "https://localhost:8080/"}
            meta["outputId"] = str(uuid.UUID(int=rng.getrandbits(128)))
            saved_cell["execution_count"] = count
            saved_cell["outputs"] = [{"output_type": "stream", "name": "stdout", "text": "ran on Colab\n"}]
        saved["cells"].append(saved_cell)
    text = json.dumps(saved, indent=2)
    # What was written is a valid notebook of its own version, as Colab's files are.
    nbformat.validate(nbformat.reads(text, as_version=nbformat.NO_CONVERT))
    assert '"id": "' in text and "deletable" not in text and "editable" not in text
    return text


# Grading three copies costs three kernels (about 5 s each), so one lesson proves
# Colab's changes harmless: the GPU lesson, whose download has the most of them.
COLAB_GRADED = sorted(notebooks.gpu_lessons() & set(ASSIGNMENTS))[:1] or ASSIGNMENTS[:1]


@pytest.mark.parametrize("assignment", COLAB_GRADED)
def test_a_colab_download_grades_like_the_original(tmp_path, assignment):
    """Downloads go through the instructor's grader, as `make grade` runs it."""
    from grader.grading import grade
    from grader.isolation import sandbox

    course.temporary_course(tmp_path, [assignment])
    wrong = submissions.first_wrong(assignment)
    handed_in = {
        "correct": submissions.answered(assignment),
        "blank": submissions.exercise(assignment),
        "one_wrong": submissions.answered(assignment, {wrong.answer_id: wrong.code}),
    }
    gpu = assignment in notebooks.gpu_lessons()
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    for seed, (student, nb) in enumerate(handed_in.items()):
        (downloads / f"{student}.ipynb").write_text(
            as_colab_saves(nb, f"{assignment}.ipynb", gpu, seed), encoding="utf-8"
        )
    rows = grade.run(
        grade.Options(assignment, downloads, jobs=2, cell_timeout=60, root=tmp_path, sandbox=sandbox.available())
    )
    points = submissions.points(assignment)
    total = sum(points.values())
    by_student = {row.student_id: row for row in rows}
    assert {row.status for row in rows} == {"graded"}
    assert by_student["correct"].max_score == total
    assert by_student["correct"].score == total
    assert by_student["blank"].score == 0
    assert by_student["one_wrong"].score == total - sum(points[t] for t in wrong.fails)
    assert all(by_student["one_wrong"].items[t] == 0 for t in wrong.fails)
    # Colab's own metadata is no tampering: nothing to report on a clean download.
    assert by_student["correct"].detail == ""
    # nbgrader ran the graded copy on the course's kernelspec, not Colab's.
    autograded = nbformat.read(tmp_path / "autograded" / "correct" / assignment / f"{assignment}.ipynb", as_version=4)
    assert autograded.metadata["kernelspec"]["name"] == "python3"
