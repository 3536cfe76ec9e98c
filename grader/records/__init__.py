"""What leaves the grader: grades as CSV (export.py; Canvas's gradebook through lms/), a class
report (report.py), and backups of what a class cannot lose (backup.py; `make backup`)."""
