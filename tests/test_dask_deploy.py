"""`--scheduler local`: a Dask cluster the grader starts for itself (kept apart from
test_dask.py so that pytest-xdist runs it beside that module's shared cluster). TLS between
every node, with a worker offering `--resources GPU=1`, as docs/cluster.md deploys it: in
test_gpu_sandbox.py, which `make test` runs again on a GPU where there is one."""

import grader_cases
import nbformat
import pytest
import submissions
from dask_processes import grade_rows

pytestmark = [pytest.mark.integration, pytest.mark.sandbox]

A = grader_cases.A


def test_local_scheduler_starts_its_own_cluster(tmp_path):
    folder = tmp_path / "pair"
    folder.mkdir()
    nbformat.write(submissions.answered(A), folder / "ana.ipynb")
    (folder / "dee.ipynb").write_text("{")
    rows = grade_rows(tmp_path, folder, scheduler="local", jobs=2)
    assert (rows["ana"].status, rows["ana"].score) == ("graded", grader_cases.FULL)
    assert rows["dee"].status == "invalid" and "not valid JSON" in rows["dee"].detail
