# One entry point for students, instructors and maintainers. See README.md.
PYTHON ?= python3
# VENV=/path/to/an/existing/venv reuses one (a fresh clone need not build its own). An environment
# another checkout uses (its editable grader is installed from there: tools/shared_env.py) is never
# changed: make runs this checkout's grader through PYTHONPATH, and stops if this checkout needs
# other requirements than that checkout installed.
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-requirements
SHARED_OWNER := $(shell test -x $(PY) && $(PY) -I tools/shared_env.py owner "$(CURDIR)" 2>/dev/null)
# Jupyter refuses to run as root unless told; pass the flag only then.
ROOT_FLAG := $(if $(filter 0,$(shell id -u)),--allow-root,)
PORT ?= 8888
HUB_PORT ?= 8000
export PATH := $(abspath $(VENV))/bin:$(PATH)
# Every Python that make starts imports this checkout's grader and tools, whichever checkout the
# environment's editable install points at.
export PYTHONPATH := $(CURDIR)$(if $(PYTHONPATH),:$(PYTHONPATH),)

.PHONY: setup system-packages lab hub hub-member hub-rerelease lesson fix readme-table test test-fast lint exercises notebooks check-env grade feedback report bench mutants release backup restore clean clean-grading

ifneq ($(SHARED_OWNER),)
# Another checkout's environment: left as it is (its grader stays pointed at that checkout).
setup: $(STAMP)
	@echo "make: $(VENV) is $(SHARED_OWNER)'s environment, left as it is; make here runs this checkout's grader (PYTHONPATH)"

$(STAMP): requirements.txt pyproject.toml tools/lab_page_config.json
	@$(PY) -I tools/shared_env.py requirements "$(CURDIR)"
else
setup: $(STAMP)
	@# The environment's editable grader, where it has none (or its checkout is gone).
	@$(PY) -I -c "import importlib.util as u, os, sys; s = u.find_spec('grader'); \
		sys.exit(s is None or os.path.dirname(os.path.dirname(s.origin)) != os.path.realpath('.'))" || \
		{ echo "make: installing $(VENV)'s grader from $(CURDIR)"; \
		$(PY) -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .; }

# Re-installs only when one of its inputs changes (the stamp is older than it).
$(STAMP): requirements.txt pyproject.toml tools/lab_page_config.json
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.txt
	# The grader (pyproject.toml), editable; its dependencies are the pins above.
	$(PY) -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .
	# The grader's own kernel spec, course-grader: kernels forked from a warm template (grader/kernels/template.py).
	$(PY) -m grader.kernels.template install
	# Every JupyterLab of this environment (make lab, the hub's servers) skips the build check:
	# its extensions come prebuilt from pip, and each page load's check cost 0.4 s of the server's
	# CPU (a yarn process included) to find nothing to build.
	install -D -m 644 tools/lab_page_config.json $(VENV)/etc/jupyter/labconfig/page_config.json
	# nbgrader reads <env>/etc/jupyter from any folder: a student's `nbgrader validate` anywhere
	# follows the course's rules (whole hints, a warning is no failure, the course's cell limit).
	printf '%s\n' '# Written by make setup (Makefile): validate follows the course everywhere.' \
		'from grader.pipeline import student_validate' 'student_validate(get_config())' \
		> $(VENV)/etc/jupyter/nbgrader_config.py
	touch $(STAMP)
endif

lab: setup
	mkdir -p .exchange
	$(VENV)/bin/jupyter lab --ServerApp.root_dir="$(CURDIR)" --port=$(PORT) $(ROOT_FLAG) $(LAB_ARGS)

# The course for a class on JupyterHub (as root: it creates the roster's accounts).
# HUB_ROSTER, HUB_STATE, HUB_DB_URL, HUB_ASSIGNMENTS: see hub/serve.py.
hub: setup hub/node_modules/.package-lock.json
	HUB_PORT=$(HUB_PORT) $(PY) hub/serve.py

# Someone joins the running hub, no restart: sudo make hub-member NAME=alice [ROLE=student|ta|instructor] [PASSWORD=...]
hub-member: setup
	@test -n "$(NAME)" || { echo "usage: make hub-member NAME=NAME [ROLE=student|ta|instructor] [PASSWORD=...]"; exit 2; }
	$(PY) hub/members.py add "$(NAME)" --role "$(or $(ROLE),student)" $(if $(PASSWORD),--password "$(PASSWORD)",)

# A fix mid-term reaches the running hub: sudo make hub-rerelease A=01_blocks (docs/instructors.md)
hub-rerelease: setup
	@test -n "$(A)" || { echo "usage: make hub-rerelease A=ASSIGNMENT"; exit 2; }
	$(PY) hub/rerelease.py "$(A)"

# JupyterHub's proxy, exactly as pinned in hub/package-lock.json. Under a lock, and only if no
# other `make hub` installed it meanwhile: the tests start hubs side by side, and two `npm ci`
# in one folder break each other (and a second would remove the first hub's proxy under it).
hub/node_modules/.package-lock.json: hub/package.json hub/package-lock.json
	cd hub && flock .npm-install.lock sh -c '[ node_modules/.package-lock.json -nt package-lock.json ] && \
		[ node_modules/.package-lock.json -nt package.json ] || npm ci --no-audit --no-fund --loglevel=error'

# The system packages the tests need (browser, sandbox, PostgreSQL, Node.js):
# installed when root or passwordless sudo allows, else a stop with the command.
system-packages:
	@bash tools/system_packages.sh

# The whole check, exactly what CI runs (.ci/run calls this and nothing else).
# The first pass hides any CUDA device so stored outputs are checked on the CPU;
# where CUDA exists, nbval then checks the same stored outputs on the GPU and lesson 7
# is graded on it in the sandbox (tests/test_gpu_sandbox.py); torch is asked only where the
# NVIDIA driver's device files are (WSL's /dev/dxg included). Compiled bytecode is kept even
# where PYTHONDONTWRITEBYTECODE is set: each of pytest's workers otherwise rewrites every test
# module again (about 1 s of CPU) and each process compiles the grader again.
test: setup system-packages lint hub/node_modules/.package-lock.json
	PYTHONDONTWRITEBYTECODE= CUDA_VISIBLE_DEVICES= $(PY) -m pytest
	@if { [ -e /dev/nvidiactl ] || [ -e /dev/dxg ]; } && $(PY) -c "import sys, torch; sys.exit(not torch.cuda.is_available())"; then \
		echo "nbval and GPU grading again, on CUDA"; $(PY) -m pytest -o testpaths="course solutions" && \
		$(PY) -m pytest -o addopts="-p no:cacheprovider -ra" tests/test_gpu_sandbox.py tests/test_simulated_gpu.py; \
	else echo "nbval on CUDA: not run, no CUDA device on this machine"; fi

# Lint and types (settings in pyproject.toml): ruff's checks and format, then mypy.
lint: setup
	$(PY) -m ruff check
	$(PY) -m ruff format --check
	$(PY) -m mypy

# The edit loop's tier (under a minute): rules, sources, wrong answers, units;
# no kernels, browsers or servers. `make test` stays the whole check.
FAST_TESTS := tests/test_rules.py tests/test_sources.py tests/test_sanitizer.py tests/test_exercises.py tests/test_units.py tests/test_runner_parts.py tests/test_execute_parts.py tests/test_release.py tests/test_mutants.py
test-fast: setup
	$(PY) -m pytest -p no:nbval -o addopts="-n 2 --dist loadscope -p no:cacheprovider" $(FAST_TESTS)

exercises: setup
	$(PY) -m tools.course exercises

# Rebuild notebooks from lessons/*/ text sources and store fresh outputs.
notebooks: setup
	$(PY) -m tools.notebooks build --execute $(LESSON)
	$(PY) -m tools.clauses

# What students get, and nothing else (no solutions, hidden tests or lesson sources):
# make release OUT=folder-or-file.zip [COLAB=owner/repo@branch]; badges: release.toml.
release: setup
	@test -n "$(OUT)" || { echo "usage: make release OUT=FOLDER (or FILE.zip) [COLAB=OWNER/REPO@BRANCH]"; exit 2; }
	$(PY) -m tools.release "$(OUT)" $(if $(COLAB),--colab "$(COLAB)",)

# One lesson's checks, for the edit loop and the "Adding a lesson" recipe (under a minute): its
# rules; then, in one pytest run, nbval of its two notebooks and every test of LESSON_TESTS that
# names the lesson (-k): its tests against its wrong and right answers in process, its judges and
# liars (tests/conftest.py gives a liar's test its lesson's name), its right answers through the
# grader's command line and nbgrader's autograde, its standard submissions, the builtins its
# notebook may bind (the per-lesson fixtures grade only the selected lesson: conftest.selected);
# beside that run, its mutants (their report printed after the tests'; either failing fails).
LESSON_TESTS := tests/test_exercises.py tests/test_judges.py tests/test_right_answers.py tests/test_autograde.py tests/test_cheats.py
lesson: setup
	@test -n "$(LESSON)" || { echo "usage: make lesson LESSON=<id>"; exit 2; }
	$(PY) -m tools.rules $(LESSON)
	@mutants=$$(mktemp); $(PY) -m tools.mutants $(LESSON) > $$mutants 2>&1 & pid=$$!; \
	echo "$(PY) -m tools.mutants $(LESSON) (beside the tests)"; \
	PYTHONDONTWRITEBYTECODE= $(PY) -m pytest -o addopts="-p no:cacheprovider -n 2 --dist loadscope --nbval --nbval-kernel-name course-grader --nbval-sanitize-with tests/sanitize.cfg" \
		-q course/$(LESSON).ipynb solutions/$(LESSON) $(LESSON_TESTS) -k $(LESSON); tests=$$?; \
	wait $$pid; status=$$?; cat $$mutants; rm -f $$mutants; [ $$tests -eq 0 ] && [ $$status -eq 0 ]

# A fix mid-term of one lesson's exercise, all of it (docs/instructors.md section 7; under 2 minutes):
# make fix LESSON=<id> [SUBMISSIONS=DIR-OR-ZIP [ROSTER=CSV] [JOBS=N]] [OUT=RELEASE-FOLDER-OR-ZIP [COLAB=...]]
# Rebuilds only its nbgrader source (not the lecture) and student version, reruns its mutants into
# the report (the other lessons' lines kept), checks its tests, nbval of its source; then grades
# SUBMISSIONS again and writes (and, with a local exchange, releases) the feedback; then OUT's release.
fix: setup
	@test -n "$(LESSON)" || { echo "usage: make fix LESSON=<id> [SUBMISSIONS=DIR-OR-ZIP [ROSTER=CSV] [JOBS=N]] [OUT=RELEASE]"; exit 2; }
	$(PY) -m tools.notebooks build --execute --only exercise --changed $(LESSON)
	$(PY) -m tools.course exercises $(LESSON)
	$(PY) -m tools.mutant_report $(LESSON)
	$(PY) -m pytest -p no:nbval -o addopts="-p no:cacheprovider -n 2" -q tests/test_mutants.py tests/test_exercises.py tests/test_judges.py \
		-k "$(LESSON) or the_report or every_item_has"
	$(PY) -m pytest -o addopts="-p no:cacheprovider --nbval --nbval-kernel-name course-grader --nbval-sanitize-with tests/sanitize.cfg" -q solutions/$(LESSON)
	$(if $(SUBMISSIONS),$(PY) -m grader grade $(LESSON) --submissions "$(SUBMISSIONS)" $(if $(JOBS),--jobs $(JOBS),) $(if $(ROSTER),--canvas-roster "$(ROSTER)",),)
	$(if $(SUBMISSIONS),$(PY) -m grader feedback $(LESSON),)
	@# Hand-ins collected through nbgrader's exchange (they have timestamps) get their feedback back there.
	$(if $(SUBMISSIONS),@if ls feedback/*/$(LESSON)/timestamp.txt >/dev/null 2>&1; then $(VENV)/bin/nbgrader release_feedback $(LESSON); fi,)
	$(if $(OUT),$(PY) -m tools.release "$(OUT)" $(if $(COLAB),--colab "$(COLAB)",),)

# README's lesson table only (a new lesson's row), without building or running any notebook.
readme-table: setup
	$(PY) -m tools.notebooks table

check-env: setup
	@$(PY) -m tools.check_env

# Grade a folder of downloads: make grade A=01_blocks SUBMISSIONS=path/to/folder [JOBS=4]
# [ROSTER=gradebook.csv: Canvas's gradebook export, naming each student of a Canvas download]
grade: setup
	@test -n "$(A)" -a -n "$(SUBMISSIONS)" || { echo "usage: make grade A=ASSIGNMENT SUBMISSIONS=DIR-OR-ZIP [JOBS=N] [ROSTER=CANVAS-GRADEBOOK.csv]"; exit 2; }
	$(PY) -m grader grade $(A) --submissions "$(SUBMISSIONS)" $(if $(JOBS),--jobs $(JOBS),) $(if $(ROSTER),--canvas-roster "$(ROSTER)",)

feedback: setup
	$(PY) -m grader feedback $(A)

report: setup
	$(PY) -m grader report $(A)

# Mutation testing of every reference answer (tools/mutants.py): one line per item, and
# tests/mutants/report.txt, which tests/test_mutants.py checks is current and shows no survivor.
mutants: setup
	$(PY) -m tools.mutants --write-report

# Speed of plain nbgrader against our grader, side by side (not a test).
bench: setup
	$(PY) -m tools.bench

# What a class cannot lose (gradebook, hand-ins, the hub's state and LTI keys) in one archive:
# make backup OUT=class.tar.gz [HUB_STATE=.hub] [HUB_DB_URL=postgresql://...]; see grader/records/backup.py.
backup: setup
	@test -n "$(OUT)" || { echo "usage: make backup OUT=FILE.tar.gz [HUB_STATE=DIR] [HUB_DB_URL=URL]"; exit 2; }
	$(PY) -m grader.records.backup create "$(OUT)" --root "$(CURDIR)" $(if $(HUB_STATE),--hub-state "$(HUB_STATE)",)

# make restore FROM=class.tar.gz [FORCE=1]: refuses to replace a gradebook unless FORCE=1.
restore: setup
	@test -n "$(FROM)" || { echo "usage: make restore FROM=FILE.tar.gz [HUB_STATE=DIR] [FORCE=1]"; exit 2; }
	$(PY) -m grader.records.backup restore "$(FROM)" --root "$(CURDIR)" $(if $(HUB_STATE),--hub-state "$(HUB_STATE)",) $(if $(FORCE),--force,) --via-make

# The environment and caches only: the gradebook, hand-ins, feedback and grades stay. Only what this
# checkout made: a VENV outside it (another checkout's, or one it shares) is left alone.
clean:
	@case "$(abspath $(VENV))/" in "$(CURDIR)"/*) rm -rf "$(VENV)";; \
		*) echo "make clean: left $(VENV) alone: it lies outside this checkout";; esac
	rm -rf .bench .grader screenshots .pytest_cache

# Deletes every grade and hand-in of this course folder: only with CONFIRM=yes (make backup first).
clean-grading:
	@test "$(CONFIRM)" = yes || { echo "make clean-grading deletes gradebook.db, submitted/, autograded/, feedback/, grades/ and .exchange/: run make backup OUT=... first, then make clean-grading CONFIRM=yes"; exit 2; }
	rm -rf .exchange gradebook.db submitted autograded feedback grades
