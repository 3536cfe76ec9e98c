"""The gradebook can live in PostgreSQL (nbgrader's db_url), for courses that
grade on several machines or share the gradebook with other tools.

The test starts a real, throwaway PostgreSQL server (Debian package
`postgresql`, installed by .ci/run) as the `postgres` system user, on a private
port (conftest.py's `postgres_url`, which test_hub.py uses too), and grades through it.
"""

import nbformat
import pytest
import submissions

from grader.grading import grade
from tools import course

pytestmark = [pytest.mark.integration, pytest.mark.sandbox]

A = "01_blocks"


def test_grading_with_a_postgresql_gradebook(tmp_path, postgres_url):
    import psycopg

    folder = tmp_path / "submissions"
    folder.mkdir()
    wrong = submissions.first_wrong(A)
    nbformat.write(submissions.answered(A), folder / "correct.ipynb")
    nbformat.write(submissions.exercise(A), folder / "blank.ipynb")
    nbformat.write(submissions.answered(A, {wrong.answer_id: wrong.code}), folder / "one_wrong.ipynb")
    root = tmp_path / "course"
    course.temporary_course(root, [A])
    rows = grade.run(grade.Options(A, folder, jobs=2, cell_timeout=30, root=root, db_url=postgres_url))
    full, points = submissions.full_score(A), submissions.points(A)
    assert {r.student_id: (r.status, r.score) for r in rows} == {
        "correct": ("graded", full),
        "blank": ("graded", 0),
        "one_wrong": ("graded", full - sum(points[t] for t in wrong.fails)),
    }
    assert not (root / "gradebook.db").exists(), "the SQLite gradebook must not be used"
    with psycopg.connect(postgres_url) as connection, connection.cursor() as cursor:
        cursor.execute("select count(*) from submitted_assignment")
        assert cursor.fetchone()[0] == 3
