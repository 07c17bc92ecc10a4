# The two commands of this repository (see README.md):
#   make book   set up .venv, regenerate the results page, build the HTML book into _build/html
#   make test   set up .venv, lint (ruff, actionlint), audit the stored notebooks, build the book
#               and its PDF, then run the unit tests, nbval over every notebook and the browser
#               test of the built book and PDF
# For authors:
#   make execute NB=book/01_dataloader_seeding.ipynb   re-execute notebooks in place (all if NB is empty)
#   make pdf       the whole book as one PDF, _build/html/pytorch-tricks-executed.pdf (the site
#                  links to it): single-page HTML build printed by Chromium (make browser-deps)
#   make shapes    nbval over every notebook on one core, then with more torch threads than cores:
#                  the stored outputs must not depend on the machine's shape (slow: 2x nbval)
#   make actionlint   check .github/workflows/*.yml (also in make test and make lint)
#   make survey    run every chapter on this machine (book/ untouched), record each comparison
#                  in results/<machine-id>-survey.json (a failed chapter is recorded as failed)
#   make survey-compare   this machine's verdicts against the book's reference run, line by line
#   make results   regenerate book/results.md and its chart from the stored outputs
#   make colab     re-stamp the Colab set-up cell and GPU-runtime metadata (no re-execution needed)
#   make markers   turn '# NBVAL_*' comment markers into nbval cell tags (no re-execution needed)
#   make audit     audit the stored notebooks (order, errors, share compared, figures, verdict lines)
#   make lint      ruff check + ruff format --check (make format applies both fixes)
#   make canary    run the notebooks with DeprecationWarning/FutureWarning as errors
#   make compat TORCH=2.10.0   execute every chapter (or NB) under that torch release and its
#                  torchao row (scripts/release/colab_cell.py TORCHAO_FOR_TORCH), outputs compared
#                  with the stored ones as nbval compares them (lines naming the torch release
#                  masked): one line per chapter (ran / sections skipped, why / failed at code
#                  cell N; cells compared / differing); writes results/compat/torch-<TORCH>.json
#                  (NB: only those chapters' entries; PYTHON=python3.12: torch-<TORCH>-py3.12.json;
#                  COMPAT_FLAGS=--strict: exit 1 when outputs differ). Its own venv
#                  .venv-compat-<TORCH> (CPU build from TORCH_INDEX ~2 GB, PyPI's CUDA build ~7.5
#                  GB; the pinned torch of requirements.txt uses .venv); the pip cap is lifted for it only
#   make newest    make compat TORCH=$(NEWEST_TORCH), the newest torch the registry serves
#   make wheelhouse   (where the package index is reachable) the wheels a GPU host with its own
#                  CUDA torch lacks, for WHEEL_PYTHON (3.12) on WHEEL_PLATFORM (manylinux x86_64),
#                  torchao for HOST_TORCH (2.11.0), into WHEELHOUSE (.wheelhouse, ignored by git;
#                  about 20 MB, refused over 30 MB): scripts/compat/wheelhouse.py
#   make gpu-run WHEELHOUSE=.wheelhouse   (on the GPU host, no network) stops unless torch sees
#                  CUDA; installs the wheelhouse offline beside the host's torch (GPU_PYTHON, never
#                  reinstalled), then in parallel: nbval over every chapter (lines naming the torch
#                  release masked), the CUDA unit tests, the survey record into results/; logs,
#                  record and a one-screen summary in GPU_OUT (_build/gpu-run): scripts/compat/gpu_run.py
#   make lock      regenerate constraints.txt (every package of .venv, pinned, with the hashes of
#                  every file of each release, torch's CPU index and local torch wheels) from .venv
#   make bump PKG=name==version   change one pin: resolve, re-lock with hashes
#   make release-check   the release ref, package version and stamped Colab cells agree
#                  (RELEASE_FLAGS=--publishing also requires the tag to exist)

PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
NB     ?=

# The newest torch release the registry serves (`make newest`; the compat venv lifts this
# machine's pip cap, so it is the registry's, not the cap's).
NEWEST_TORCH ?= 2.15.0
# `make compat TORCH=...`: the torch release to run the chapters under. The release pinned in
# requirements.txt runs in .venv itself; any other in .venv-compat-<TORCH>.
TORCH        ?= $(NEWEST_TORCH)
PINNED_TORCH := $(shell sed -n 's/^torch==//p' requirements.txt)
COMPAT_VENV  := $(if $(filter $(PINNED_TORCH),$(TORCH)),$(VENV),.venv-compat-$(TORCH))
COMPAT_DEP   := $(if $(filter $(PINNED_TORCH),$(TORCH)),$(STAMP),$(COMPAT_VENV)/.compat-stamp)
# /etc/pip.conf caps torch (global.constraint = a file with torch<=2.14.1). An environment
# variable beats a config file, so PIP_CONSTRAINT=/dev/null lifts the cap for these pip calls
# only (PIP_CONSTRAINT= does not: pip ignores an empty variable). `pip config debug` shows it.
COMPAT_PIP    = PIP_CONSTRAINT=/dev/null .venv-compat-$*/bin/python -m pip

# Where pip finds torch. By default scripts/release/torch_index.py decides, only when the venv is
# built: on Linux without an NVIDIA GPU, PyTorch's CPU wheel index (a 192 MB wheel: a 1.9 GB
# environment, against 5.7 GB with PyPI's CUDA build) as an extra index, if it answers within
# 5 s; otherwise nothing, and pip's configured index alone. `make venv TORCH_INDEX=<url>` (as the
# workflows set it) or `TORCH_INDEX=` (the registry's build) skips the probe. Recursive (=), so
# the probe runs only in the recipe that uses it, not on every make call.
TORCH_INDEX ?= $(shell $(PYTHON) scripts/release/torch_index.py)
PIP_INDEX    = $(if $(TORCH_INDEX),--extra-index-url $(TORCH_INDEX))
# Every package of the environment, pinned (make lock regenerates it from .venv).
CONSTRAINTS := constraints.txt

# Matplotlib's font cache lives in the venv: the one in ~/.cache lists font files by path, and
# one written by another venv since deleted makes every plot print "findfont" lines on stderr,
# which nbval compares. `make venv` builds it before any notebook runs.
export MPLCONFIGDIR := $(abspath $(VENV))/mplconfig

PYTEST_NBVAL := --nbval --nbval-current-env --nbval-sanitize-with nbval_sanitize.cfg --nbval-cell-timeout=600

.PHONY: venv book test lint format audit unit nbval execute results colab markers canary newest compat \
	wheelhouse gpu-run \
	browser-deps clean lock bump release-check survey survey-compare pdf shapes actionlint

# torch first, chosen by its pin alone ($(VENV)/pins.txt: the lock without its hashes): pip ranks
# a candidate whose link carries an allowed hash above any other, so in hash-checking mode a CPU
# wheel served without one (a local copy, the CPU index) loses to PyPI's CUDA build. So the
# wheel pip chooses is downloaded first, then installed from that folder alone, hash-checked
# against the lock (a wheel whose SHA-256 the lock lacks stops the install), and removed. Then
# everything else, hash-checked against the lock (torch is already there).
$(STAMP): requirements.txt $(CONSTRAINTS) pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	sed -e '/--hash=/d' -e 's/ \\$$//' $(CONSTRAINTS) > $(VENV)/pins.txt
	rm -rf $(VENV)/torch-wheel
	$(BIN)/python -m pip download --quiet --no-deps $(PIP_INDEX) -d $(VENV)/torch-wheel \
		"torch==$(PINNED_TORCH)" -c $(VENV)/pins.txt
	$(BIN)/python -m pip install --quiet --no-deps --no-index --find-links $(VENV)/torch-wheel \
		"torch==$(PINNED_TORCH)" -c $(CONSTRAINTS)
	rm -rf $(VENV)/torch-wheel
	$(BIN)/python -m pip install --quiet $(PIP_INDEX) -r requirements.txt -c $(CONSTRAINTS)
	$(BIN)/python -m pip install --quiet --no-deps -e .
	touch $@

venv: $(STAMP)
	@$(BIN)/python -c "import matplotlib.font_manager"

results: venv
	$(BIN)/python -m scripts.results.page

book: results
	$(BIN)/jupyter-book build . --warningiserror --keep-going
	@echo "book: open _build/html/index.html"

# Debian's Chromium for the browser test; installed where this user may (root), else the
# browser test skips and says why.
browser-deps:
	@bash scripts/release/install_chromium.sh

# actionlint over .github/workflows (its config: .github/actionlint.yaml). shellcheck and pyflakes
# are switched off: where they are installed they would check the run: scripts, elsewhere not,
# and the result must not depend on the machine.
ACTIONLINT := $(BIN)/actionlint -shellcheck= -pyflakes=

# The whole book as one PDF: Jupyter Book's single-page HTML, printed by Chromium.
SINGLEHTML := $(BIN)/jupyter-book build . --builder singlehtml --warningiserror --keep-going

# The fast checks run first, so a style slip or an untrustworthy stored notebook fails in
# seconds, before the book build and the notebook re-execution (minutes). The PDF is printed
# before the HTML build, so the intro links it (about 45 s; skipped, as the browser test is,
# without Chromium).
test: venv browser-deps
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(ACTIONLINT)
	$(BIN)/python -m scripts.audits.notebooks
	$(SINGLEHTML)
	$(BIN)/python -m scripts.release.pdf --skip-without-chromium
	$(BIN)/jupyter-book build . --warningiserror --keep-going
	$(BIN)/python -m pytest $(PYTEST_NBVAL) -v

pdf: venv
	$(SINGLEHTML)
	$(BIN)/python -m scripts.release.pdf

actionlint: venv
	$(ACTIONLINT)

lint: venv
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(ACTIONLINT)

format: venv
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

audit: venv
	$(BIN)/python -m scripts.audits.notebooks

unit: venv
	$(BIN)/python -m pytest tests

nbval: venv
	$(BIN)/python -m pytest $(PYTEST_NBVAL) book

# The stored outputs must not depend on the machine's shape: nbval over the book (or NB) once
# pinned to one core (torch then takes 1 thread), once with more torch threads than cores: each
# kernel starts with torch.set_num_threads(SHAPES_THREADS) (scripts/book/shapes_threads.py as an
# IPython start-up file; OMP_NUM_THREADS alone is capped at the core count by torch). Twice the
# time of nbval.
SHAPES_THREADS ?= $(shell echo $$((2 * $$(nproc) + 1)))
SHAPES_IPYTHON := $(abspath _build/shapes-ipython)
shapes: venv
	taskset -c 0 $(BIN)/python -m pytest $(PYTEST_NBVAL) $(or $(NB),book)
	mkdir -p $(SHAPES_IPYTHON)/profile_default/startup
	cp scripts/book/shapes_threads.py $(SHAPES_IPYTHON)/profile_default/startup/00-shapes-threads.py
	IPYTHONDIR=$(SHAPES_IPYTHON) TRICKS_SHAPES_THREADS=$(SHAPES_THREADS) \
		OMP_NUM_THREADS=$(SHAPES_THREADS) $(BIN)/python -m pytest $(PYTEST_NBVAL) $(or $(NB),book)

execute: venv
	$(BIN)/python -m scripts.book.run_notebooks $(NB)

survey: venv
	$(BIN)/python -m scripts.book.run_notebooks --survey $(NB)

survey-compare: venv
	$(BIN)/python -m scripts.book.run_notebooks --compare

colab: venv
	$(BIN)/python -m scripts.release.colab_cell
	$(BIN)/python -m scripts.release.colab_runtime

# The torch wheels of pip's local folders (PIP_FIND_LINKS: a machine's offline wheels) are
# hashed into the lock too, so that make venv can install them hash-checked.
LOCK_WHEELS = $(foreach d,$(PIP_FIND_LINKS),$(wildcard $(d)/torch-$(PINNED_TORCH)*.whl))
lock: venv
	$(BIN)/python -m scripts.release.lock $(foreach w,$(LOCK_WHEELS),--hash-file $(w))

# One pin changed: `make bump PKG=sphinx-sitemap==2.9.1` sets it in requirements.txt (where it
# is listed), resolves with every other package at its locked version, re-locks with hashes;
# the next make target reinstalls .venv from the new lock.
PKG ?=
bump: venv
	@test -n "$(PKG)" || { echo "make bump PKG=name==version"; exit 2; }
	$(BIN)/python -m scripts.release.lock --bump "$(PKG)"

RELEASE_FLAGS ?=
release-check: venv
	$(BIN)/python -m scripts.release.release_check $(RELEASE_FLAGS)

markers: venv
	$(BIN)/python -m scripts.release.convert_markers

canary: venv
	$(BIN)/python -m scripts.release.deprecation_canary $(NB)

# A compat venv: torch==TORCH (from TORCH_INDEX as .venv: the CPU build where no NVIDIA GPU is
# seen), torchao from that release's row of TORCHAO_FOR_TORCH (the one
# source, read by scripts/compat/env.py; no row: unbounded, as the Colab cell installs), every
# other requirement of requirements.txt (not constraints.txt: another torch may need other
# dependencies), the package --no-deps, then its own matplotlib font cache (a first import
# inside a chapter would print "building the font cache" on a compared stderr). The stamp is
# written last: a venv with it is complete and reused (delete the folder to rebuild). Another
# Python: PYTHON=python3.12 (the record is then results/compat/torch-TORCH-py3.12.json).
.venv-compat-%/.compat-stamp: requirements.txt
	$(PYTHON) -m venv .venv-compat-$*
	$(COMPAT_PIP) install --quiet --upgrade pip
	grep -v -E '^(torch|torchao)==' requirements.txt > .venv-compat-$*/requirements-compat.txt
	AO="$$($(PYTHON) -m scripts.compat.env $*)" && $(COMPAT_PIP) install --quiet $(PIP_INDEX) \
		"torch==$*" "$$AO" -r .venv-compat-$*/requirements-compat.txt
	$(COMPAT_PIP) install --quiet --no-deps -e .
	MPLCONFIGDIR=$(abspath .venv-compat-$*)/mplconfig .venv-compat-$*/bin/python -c "import matplotlib.pyplot"
	touch $@

# COMPAT_FLAGS=--strict (CI's Python 3.12 job): exit 1 also when a compared cell differs.
COMPAT_FLAGS ?=
compat: $(COMPAT_DEP)
	MPLCONFIGDIR=$(abspath $(COMPAT_VENV))/mplconfig $(COMPAT_VENV)/bin/python \
		-m scripts.book.run_notebooks --compat $(TORCH) $(COMPAT_FLAGS) $(NB)

newest:
	$(MAKE) compat TORCH=$(NEWEST_TORCH) NB="$(NB)"

# The GPU host's run (scripts/compat/gpu_run.py says what each step does). Neither target needs
# .venv: the wheelhouse is fetched by pip for another Python and platform, and the GPU run uses
# the host's own Python and torch.
WHEELHOUSE     ?= .wheelhouse
WHEEL_PYTHON   ?= 3.12
WHEEL_PLATFORM ?= manylinux_2_28_x86_64
HOST_TORCH     ?= 2.11.0
GPU_PYTHON     ?= python3
GPU_OUT        ?= _build/gpu-run
wheelhouse:
	PIP_CONSTRAINT=/dev/null $(PYTHON) -m scripts.compat.wheelhouse --dest $(WHEELHOUSE) \
		--python $(WHEEL_PYTHON) --platform $(WHEEL_PLATFORM) --host-torch $(HOST_TORCH)

gpu-run:
	$(GPU_PYTHON) -m scripts.compat.gpu_run --wheelhouse $(WHEELHOUSE) --out $(GPU_OUT) $(NB)

clean:
	rm -rf _build
