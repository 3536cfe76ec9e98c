"""The mutation report updated for the lessons a fix changed (tools/mutant_report.py, issue 47):
the named lessons' lines come from the new run, every other lesson's are kept while its
fingerprint is unchanged, and a change elsewhere (another lesson, the tools) refuses by name."""

from __future__ import annotations

import pytest

from tools import mutant_report

pytestmark = pytest.mark.unit

OLD = """# Written by `make mutants`.
# The whole run took 70 s.
fingerprint tools T
fingerprint 01_a A
fingerprint 02_b B
01_a f: killed 5 of 6, 1 equivalent
01_a g: killed 3 of 3, 0 equivalent
02_b h: killed 4 of 7, 3 equivalent
mutants: killed 12 of 16, 4 equivalent, 0 survived
"""


def test_a_lessons_lines_are_replaced_and_the_others_kept_with_the_totals_added_up(tmp_path):
    path = tmp_path / "report.txt"
    path.write_text(OLD)
    rerun = {
        "01_a": [
            "01_a f: killed 6 of 6, 0 equivalent",
            "01_a g: killed 2 of 3, 0 equivalent",
            "survivor 01_a g constant@1:2:0",
        ]
    }
    text = mutant_report.merged(path, {"tools": "T", "01_a": "A2", "02_b": "B"}, rerun, 4.2, "# header")
    lines = text.splitlines()
    assert lines[0] == "# header" and "01_a (4 s)" in lines[1]
    assert "fingerprint 01_a A2" in lines and "fingerprint 02_b B" in lines
    assert "02_b h: killed 4 of 7, 3 equivalent" in lines and "01_a f: killed 6 of 6, 0 equivalent" in lines
    assert "01_a f: killed 5 of 6, 1 equivalent" not in lines
    assert lines[-2] == "survivor 01_a g constant@1:2:0"
    assert lines[-1] == "mutants: killed 12 of 16, 3 equivalent, 1 survived"


@pytest.mark.parametrize(
    ("current", "named"),
    [({"tools": "T", "01_a": "A2", "02_b": "B2"}, "02_b"), ({"tools": "T2", "01_a": "A2", "02_b": "B"}, "the tools")],
)
def test_another_changed_lesson_or_changed_tools_refuse_by_name(tmp_path, current, named):
    path = tmp_path / "report.txt"
    path.write_text(OLD)
    with pytest.raises(mutant_report.ReportError, match=named):
        mutant_report.merged(path, current, {"01_a": ["01_a f: killed 6 of 6, 0 equivalent"]}, 1.0, "# header")
