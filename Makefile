# The two commands of this repository (see README.md):
#   make book   set up .venv, build the HTML book into _build/html from the stored outputs
#   make test   set up .venv, build the book, run the unit tests, nbval over every notebook
#               and the browser test of the built book
# For authors:
#   make execute NB=book/01_dataloader_seeding.ipynb   re-execute notebooks in place (all if NB is empty)
#   make results   regenerate book/results.md from the stored outputs
#   make colab     re-stamp the Colab set-up cell (then re-execute the notebooks)
#   make canary    run the notebooks with DeprecationWarning/FutureWarning as errors
#   make audit     audit the stored notebooks (order, errors, share of outputs checked)

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
NB     ?=

PYTEST_NBVAL := --nbval --nbval-current-env --nbval-sanitize-with nbval_sanitize.cfg --nbval-cell-timeout=600

.PHONY: venv book test unit nbval execute results colab canary audit browser-deps clean

$(STAMP): requirements.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements.txt
	$(BIN)/python -m pip install --quiet --no-deps -e .
	touch $@

venv: $(STAMP)

results: venv
	$(BIN)/python scripts/results_page.py

book: results
	$(BIN)/jupyter-book build . --warningiserror --keep-going
	@echo "book: open _build/html/index.html"

# Debian's Chromium for the browser test; installed where this user may (root), else the
# browser test skips and says why.
browser-deps:
	@bash scripts/install_chromium.sh

test: venv browser-deps
	$(BIN)/jupyter-book build . --warningiserror --keep-going
	$(BIN)/python -m pytest $(PYTEST_NBVAL) -v

unit: venv
	$(BIN)/python -m pytest tests

nbval: venv
	$(BIN)/python -m pytest $(PYTEST_NBVAL) book

execute: venv
	$(BIN)/python scripts/run_notebooks.py $(NB)

colab: venv
	$(BIN)/python scripts/colab_cell.py

canary: venv
	$(BIN)/python scripts/deprecation_canary.py $(NB)

audit:
	$(PYTHON) ../shared/tools/nbaudit.py book

clean:
	rm -rf _build
