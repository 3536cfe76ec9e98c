"""Grading a class: the run's settings resolved once (settings.py), the class graded in parallel
workers (grade.py, parallel.py) or on a Dask cluster (cluster.py)."""
