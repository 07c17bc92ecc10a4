# The two commands of this repository (see README.md):
#   make book   set up .venv, build the HTML book into _build/html from the stored outputs
#   make test   set up .venv, run the unit tests and nbval over every notebook
# Helpers for authors:
#   make execute NB=book/01_dataloader_seeding.ipynb   re-execute notebooks in place (all if NB is empty)

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
NB     ?=

PYTEST_NBVAL := --nbval --nbval-current-env --nbval-sanitize-with nbval_sanitize.cfg --nbval-cell-timeout=600

.PHONY: venv book test unit nbval execute audit clean

$(STAMP): requirements.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements.txt
	$(BIN)/python -m pip install --quiet --no-deps --no-build-isolation -e . || \
		$(BIN)/python -m pip install --quiet --no-deps -e .
	touch $@

venv: $(STAMP)

book: venv
	$(BIN)/jupyter-book build . --warningiserror --keep-going
	@echo "book: open _build/html/index.html"

test: venv
	$(BIN)/python -m pytest $(PYTEST_NBVAL) -v

unit: venv
	$(BIN)/python -m pytest tests

nbval: venv
	$(BIN)/python -m pytest $(PYTEST_NBVAL) book

execute: venv
	$(BIN)/python scripts/run_notebooks.py $(NB)

audit:
	$(PYTHON) ../shared/tools/nbaudit.py book

clean:
	rm -rf _build
