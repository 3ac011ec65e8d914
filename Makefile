# The two commands of the course (see README.md):
#   make course      set everything up and open JupyterLab at lesson 0
#   make test        set everything up and run the whole test suite (what CI runs), one worker per usable CPU
# For contributors:
#   make test-fast   library, grader and builder tests only: no kernels, browser or fresh environments,
#                    one pytest worker per usable CPU (~1.5 min on 2 cores)
#   make lint        ruff check (code and notebooks) and ruff format --check (code) (pyproject.toml's [tool.ruff]);
#                    and mypy on the solver and DEQ core ([tool.mypy]); CI runs it before make test
#   make notebooks   re-execute every lesson in quick mode and strip volatile output, before committing
#   make lock        write constraints.txt (the lock) from .venv, after the notebooks and tests passed there
#   make site        the course as a static website in site/, from the committed notebooks (offline)
VENV ?= .venv
PYTEST_ARGS ?=
FAST = not slow and not browser and not binder

.PHONY: course test test-fast calibrate lint notebooks setup lock site
# The course installs what the lessons need; the test targets add the test extra.
EXTRAS ?=
test test-fast calibrate lint: EXTRAS = test
setup:
	bash scripts/setup_env.sh $(EXTRAS)

lock:
	$(VENV)/bin/python scripts/write_lock.py

course: setup
	$(VENV)/bin/nodecourse lab

# One worker per usable CPU (affinity and cgroup quota, tests/conftest.py), each on one torch thread so
# the workers do not oversubscribe the cores; TEST_WORKERS=0 runs in this process (e.g. for pdb).
# --durations lists the 30 slowest tests at the end, so CI's log says where its time goes.
# --dist loadgroup keeps tests marked with one xdist_group in one worker (a calibrated check and its
# wrong answers share their references there); every other test is balanced as with --dist load.
TEST_WORKERS ?= auto
test: setup
	NODECOURSE_QUICK=1 OMP_NUM_THREADS=1 $(VENV)/bin/python -m pytest -n $(TEST_WORKERS) --dist loadgroup --durations=30 $(PYTEST_ARGS)

test-fast: setup
	NODECOURSE_QUICK=1 OMP_NUM_THREADS=1 $(VENV)/bin/python -m pytest -n $(TEST_WORKERS) --dist loadgroup -m "$(FAST)" $(PYTEST_ARGS)

# Every check on its spec's full count of seeds (2,000; 200 where a seed trains a model): the CI tier
# runs the first 500 (tests/test_grading_calibration.py). Hours of CPU: run it before a change to a
# spec, a judge or a solution lands.
calibrate: setup
	NODECOURSE_CALIBRATION=full NODECOURSE_QUICK=1 OMP_NUM_THREADS=1 $(VENV)/bin/python -m pytest -n $(TEST_WORKERS) --dist loadgroup tests/test_grading_calibration.py

lint: setup
	$(VENV)/bin/ruff check nodecourse tests scripts benchmarks notebooks solutions exercises
	$(VENV)/bin/ruff format --check nodecourse tests scripts benchmarks
	$(VENV)/bin/mypy

notebooks: setup
	$(VENV)/bin/python scripts/execute_notebooks.py

site: setup
	$(VENV)/bin/nodecourse site
