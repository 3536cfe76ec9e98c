"""Notebooks are generated from text sources; these tests keep the two in step
and keep stored notebooks clean."""

import json
import os
import re

import nbformat
import pytest

from conftest import ROOT
from tools import notebooks

pytestmark = pytest.mark.unit

STORED = sorted(
    str(p.relative_to(ROOT))
    for p in [*ROOT.glob("course/*.ipynb"), *ROOT.glob("solutions/*/*.ipynb"), *ROOT.glob("exercises/*/*.ipynb")]
)


def test_every_notebook_matches_its_text_source():
    assert notebooks.drift() == []


def test_every_lesson_has_a_lecture_and_an_exercise_and_nothing_else_is_stored():
    expected = set()
    for lesson in notebooks.lesson_ids():
        expected |= {
            f"course/{lesson}.ipynb",
            f"solutions/{lesson}/{lesson}.ipynb",
            f"exercises/{lesson}/{lesson}.ipynb",
        }
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
    assert nb.cells[0].source == notebooks.colab_badge(
        path if not path.startswith("solutions/") else path.replace("solutions/", "exercises/", 1)
    )


def test_jupytext_reads_every_source_without_guessing():
    """Standard tools (jupytext, percent-cell editors) read the sources as we do."""
    import jupytext

    for target in notebooks.targets():
        nb = jupytext.read(target.source, fmt="py:percent")
        for cell in nb.cells:
            assert "incorrectly_encoded_metadata" not in cell.metadata, f"{target.source}: {cell.metadata}"
        assert notebooks.canonical(target.source) == target.source.read_text(encoding="utf-8"), (
            f"{target.source} is not in jupytext's canonical form: run python -m tools.notebooks format"
        )


def test_an_include_cell_holds_the_shared_cell_and_a_missing_one_is_named():
    """`# include: NAME.py` (tools/notebooks.py): the cell's source is lessons/shared/NAME.py,
    word for word; a name with no shared cell stops the build at its line."""
    from tools import source

    text = '# %%\nimport torch\n\n# %% jupyter={"source_hidden": true}\n# include: simulated_gpu.py\n'
    cells = source.parse_source(text, "demo.py").cells
    shared = (ROOT / "lessons" / "shared" / "simulated_gpu.py").read_text(encoding="utf-8")
    assert cells[1].source + "\n" == shared and cells[0].source == "import torch"
    with pytest.raises(source.SourceError, match=r"^demo.py:4: no shared cell lessons/shared/nothing.py"):
        source.parse_source(text.replace("simulated_gpu", "nothing"), "demo.py")


def test_builder_turns_roles_into_nbgrader_metadata(demo_lesson):
    source = notebooks.read_source(demo_lesson / "exercise.py")
    nb = notebooks.build_notebook(source, "exercises/x/x.ipynb", graded=True)
    meta = {c.id: c.metadata["nbgrader"] for c in nb.cells}
    assert meta["double"]["solution"] and not meta["double"]["grade"] and not meta["double"]["locked"]
    assert meta["test_double"]["grade"] and meta["test_double"]["locked"] and meta["test_double"]["points"] == 2
    assert meta["why"]["solution"] and meta["why"]["grade"] and meta["why"]["points"] == 1
    assert meta["exercise-99-demo-code"]["locked"] and not meta["exercise-99-demo-code"]["solution"]
    assert nb.cells[1].source == "# Exercise 99: Demo"
    assert [c.metadata for c in nb.cells if c.id == "double"][0].keys() == {"nbgrader"}, (
        "jupytext's own keys and the source keys do not reach the notebook"
    )


def test_cell_ids_are_names_so_an_inserted_cell_renames_only_its_section(demo_lesson):
    lecture = demo_lesson / "lecture.py"
    before = notebooks.cell_ids(notebooks.read_source(lecture).cells)
    lecture.write_text(lecture.read_text().replace("# %%\nx = 1", "# %%\ny = 0\n\n# %%\nx = 1"))
    after = notebooks.cell_ids(notebooks.read_source(lecture).cells)
    assert before == ["lesson-99-demo", "lesson-99-demo-code", "summary"]
    assert after == ["lesson-99-demo", "lesson-99-demo-code", "lesson-99-demo-code-2", "summary"]


def test_drift_is_detected(demo_lesson):
    assert notebooks.drift()[0] == "course/99_demo.ipynb is missing; run make notebooks"
    notebooks.build(None, run=False)
    assert notebooks.drift() == []
    lecture = demo_lesson / "lecture.py"
    lecture.write_text(lecture.read_text().replace("x = 1", "x = 2"))
    assert notebooks.drift() == ["course/99_demo.ipynb differs from lessons/99_demo/lecture.py; run make notebooks"]


def test_readme_lesson_table_comes_from_the_headers(demo_lesson):
    notebooks.build(None, run=False)
    readme = demo_lesson.parent.parent / "README.md"
    assert (
        "| 99 | Demo | [course/99_demo.ipynb](course/99_demo.ipynb) | [exercises/99_demo](exercises/99_demo/99_demo.ipynb) | CPU |"
        in readme.read_text()
    )
    lecture = demo_lesson / "lecture.py"
    lecture.write_text(
        lecture.read_text().replace("title: Demo", "title: Demo v2").replace("Lesson 99: Demo", "Lesson 99: Demo v2")
    )
    exercise = demo_lesson / "exercise.py"
    exercise.write_text(exercise.read_text().replace("Exercise 99: Demo", "Exercise 99: Demo v2"))
    notebooks.build(["99_demo"], run=False)
    assert "README.md's lesson table differs from the lessons; run make notebooks" in notebooks.drift()


def test_readme_opens_with_set_up_and_open_then_set_up_and_test():
    """README's promise to a newcomer: its first two commands are `make lab` and `make test`."""
    commands = re.findall(r"^(?:sudo )?make \S+", (ROOT / "README.md").read_text(encoding="utf-8"), re.MULTILINE)
    assert commands[:2] == ["make lab", "make test"], f"README's first commands are {commands[:2]}"
