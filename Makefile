# multipath-cc-lab — the README's two commands are `make reproduce` and `make test`.
# Every target runs in the project's virtual environment .venv, which this Makefile makes from $(PYTHON) on first
# use (Debian's own python3 refuses `pip install` outside a venv: PEP 668); a different PYTHON makes it anew.
PYTHON ?= python3
VENV := .venv
VPY := $(VENV)/bin/python
DATA ?=
OUT ?= reports

.PHONY: install venv reproduce notebooks-refresh test test-fast test-vagrant lab bench lint FORCE

# the venv itself: tools/venv.sh leaves a working one made from $(PYTHON) untouched
$(VENV)/pyvenv.cfg: FORCE
	@sh tools/venv.sh '$(PYTHON)' '$(VENV)'

# the pinned analysis environment (requirements.lock: one version per package, hash-checked; tools/lock.sh writes
# it) and the project itself (editable): again only when the lock or pyproject.toml changed or the venv is new
LOCK := requirements.lock
$(VENV)/.installed: $(LOCK) pyproject.toml $(VENV)/pyvenv.cfg
	@bash tools/install.sh $(VENV) $(LOCK)
	@touch $@

venv install: $(VENV)/.installed

reproduce: install
	$(VPY) -m mpcc.cli reproduce $(if $(DATA),--data $(DATA),) --out $(OUT)

# re-execute the committed notebooks in place on data/sample (their stored outputs are what nbval checks)
notebooks-refresh: install
	$(VPY) -m mpcc.cli reproduce --inplace

test: install
	$(VPY) -m pytest -q tests

test-fast: install
	$(VPY) -m pytest -q -m "not netns and not slow" tests

# the script runs `python3` and `mpcc`: put the venv's bin/ first on PATH
test-vagrant: install
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" bash testbed/vagrant/test-vagrant.sh

# JupyterLab from requirements-lab.lock (the same pins plus JupyterLab); its start-up log kept to warnings, the
# address to open is printed
lab: install
	@bash tools/install.sh $(VENV) requirements-lab.lock
	$(VPY) -m jupyter lab --notebook-dir=notebooks --ServerApp.log_level=WARN --LabApp.log_level=WARN $(if $(filter 0,$(shell id -u)),--allow-root,)

bench: install
	$(VPY) bench/run_all.py

lint:
	shellcheck -x testbed/*.sh testbed/lib/*.sh testbed/nodes/*.sh testbed/vagrant/*.sh testbed/cc/*.sh testbed/cc/pcc-kernel/*.sh testbed/cc/bic415-kernel/*.sh testbed/delayshim/*.sh testbed/qdisc003/*.sh testbed/mininet003/*.sh testbed/kernel415/*.sh testbed/ns2_004/*.sh testbed/vlc002/*.sh capture_tools/*.sh tools/*.sh
	python3 tools/check_pipelines.py
