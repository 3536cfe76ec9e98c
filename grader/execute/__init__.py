"""Running one notebook: GuardedExecute (guarded.py), nbgrader's Execute step composed of parts
that each own their state: kernel_start.py (Scratch), cell_limits.py (Limits), cell_notes.py
(Notes), kernel_deaths.py (Deaths), test_path.py (TestPath), with stray_processes.py and
not_graded.py. Every limit, note and not-graded reason of a cell is written in one of them."""
