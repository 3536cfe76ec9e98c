"""The instructor's grading tool: nbgrader as the engine, made fast, isolated and robust.

The public surface is the three modules at this level: `python -m grader` (__main__.py, the
command line), `grader.pipeline` (what a course's nbgrader_config.py names: the one grading
engine nbgrader's own autograde runs) and `grader.judges` (what lesson notebooks import). The
rest is in packages by concern, lowest first; a package imports only its own or lower ones
(tests/test_architecture.py):

- isolation: the sandbox, the uids and processes of a student's kernel;
- kernels: kernels forked from a warm template;
- runner: the trusted test path, the kernel's side and the grader's;
- judges (public): items judged in the grader's process from data the kernel hands back;
- execute: GuardedExecute and its parts (limits, notes, deaths, the test path);
- course: the course folder, its submissions collected and restored, its history, the
  feedback pages written into it;
- pipeline (public): the steps nbgrader runs for this course;
- grading: a class's run, its settings, its workers and Dask;
- lms, records: the LTI tool, the LMS push and Canvas; CSV, report and backups.
"""
