# The two commands of the course (see README.md):
#   make course   set everything up and open JupyterLab at lesson 0
#   make test     set everything up and run the whole test suite
VENV ?= .venv
PYTEST_ARGS ?=

.PHONY: course test setup
setup:
	bash scripts/setup_env.sh

course: setup
	$(VENV)/bin/nodecourse lab

test: setup
	NODECOURSE_QUICK=1 $(VENV)/bin/python -m pytest $(PYTEST_ARGS)
