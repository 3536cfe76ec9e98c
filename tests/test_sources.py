"""Notebooks are generated from text sources; these tests keep the two in step
and keep stored notebooks clean."""
import json
import os

import nbformat
import pytest

from conftest import ROOT
from tools import notebooks

STORED = sorted(str(p.relative_to(ROOT)) for p in
                [*ROOT.glob("course/*.ipynb"), *ROOT.glob("solutions/*/*.ipynb"), *ROOT.glob("exercises/*/*.ipynb")])


def test_every_notebook_matches_its_text_source():
    assert notebooks.drift() == []


def test_every_lesson_has_a_lecture_and_an_exercise_and_nothing_else_is_stored():
    expected = set()
    for lesson in notebooks.lesson_ids():
        expected |= {f"course/{lesson}.ipynb", f"solutions/{lesson}/{lesson}.ipynb",
                     f"exercises/{lesson}/{lesson}.ipynb"}
    assert set(STORED) == expected


@pytest.mark.parametrize("path", STORED)
def test_notebook_hygiene(path):
    raw = (ROOT / path).read_text(encoding="utf-8")
    nb = nbformat.reads(raw, as_version=4)
    nbformat.validate(nb)
    assert nb.metadata["kernelspec"]["name"] == "python3"
    assert "widgets" not in nb.metadata, "widget state is stored"
    counts = [c.execution_count for c in nb.cells if c.cell_type == "code"]
    if path.startswith("exercises/"):
        assert set(counts) == {None}
        assert all(not c.outputs for c in nb.cells if c.cell_type == "code"), "exercises carry no outputs"
    else:
        assert counts == list(range(1, len(counts) + 1)), f"execution counts out of order: {counts}"
    # Stored outputs must not reveal the machine they were made on.
    outputs = json.dumps([c.get("outputs", []) for c in nb.cells])
    for machine_path in {str(ROOT), os.path.expanduser("~"), "/tmp/", "/home/", "/root/"}:
        assert machine_path not in outputs, f"{path} output shows the path {machine_path}"
    assert " at 0x" not in outputs, f"{path} stores an object's memory address (a bare repr)"
    assert nb.cells[0].source == notebooks.colab_badge(path if not path.startswith("solutions/")
                                                       else path.replace("solutions/", "exercises/", 1))


def test_builder_rejects_unknown_markers_and_missing_ids():
    with pytest.raises(ValueError, match="unknown cell marker"):
        notebooks.parse_source("# %% bogus\nx = 1\n")
    with pytest.raises(ValueError, match="needs id"):
        notebooks.parse_source("# %% answer\nx = 1\n")
    with pytest.raises(ValueError, match="needs points"):
        notebooks.parse_source("# %% tests id=t\nassert True\n")
    with pytest.raises(ValueError, match="must start with"):
        notebooks.parse_source("# %% [markdown]\nnot a comment\n")[0].source


def test_builder_turns_markers_into_nbgrader_metadata(tmp_path):
    source = tmp_path / "exercise.py"
    source.write_text("# %% [markdown]\n# Intro\n# %% answer id=f\ndef f():\n    pass\n"
                      "# %% tests id=test_f points=2\nassert f() is None\n"
                      "# %% [markdown] manual id=why points=1\n# Because.\n")
    nb = notebooks.build_notebook(source, "exercises/x/x.ipynb", graded=True)
    meta = {c.id: c.metadata["nbgrader"] for c in nb.cells}
    assert meta["f"]["solution"] and not meta["f"]["grade"] and not meta["f"]["locked"]
    assert meta["test_f"]["grade"] and meta["test_f"]["locked"] and meta["test_f"]["points"] == 2
    assert meta["why"]["solution"] and meta["why"]["grade"] and meta["why"]["points"] == 1
    assert meta["cell-01"]["locked"] and not meta["cell-01"]["solution"]
    assert nb.cells[1].source == "Intro"


def test_drift_is_detected(demo_lesson):
    lesson = demo_lesson
    (lesson / "lecture.py").write_text("# %%\nx = 1\n")
    assert notebooks.drift() == ["course/99_demo.ipynb is missing; run make notebooks"]
    notebooks.build(None, run=False)
    assert notebooks.drift() == []
    (lesson / "lecture.py").write_text("# %%\nx = 2\n")
    assert notebooks.drift() == [
        "course/99_demo.ipynb differs from lessons/99_demo/lecture.py; run make notebooks"]
