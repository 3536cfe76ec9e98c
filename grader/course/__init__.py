"""The course folder and its submissions: the nbgrader course driven in-process
(nbgrader_course.py), a folder of hand-ins found per student (collect.py), each put back into the
released shape (restore.py), what the folder remembers between runs (history.py), and
each student's feedback page, without hidden tests (feedback.py; nbgrader's GenerateFeedback steps)."""
