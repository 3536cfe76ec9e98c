"""The instructor's grading tool: nbgrader as the engine, made fast, isolated and robust.

Modules follow the data: collect (find each student's notebook), restore (put it
back into the released shape), grade (run nbgrader's autograde in sandboxed,
parallel workers), export (CSV), feedback (HTML per student), report (plots and
summary). `python -m grader --help` lists the commands.
"""
