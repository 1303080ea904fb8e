# multipath-cc-lab — the README's two commands are `make reproduce` and `make test`.
PYTHON ?= python3
DATA ?= data/sample
OUT ?= reports

.PHONY: install reproduce notebooks-refresh test test-fast test-vagrant lab bench lint

install:
	$(PYTHON) -m pip install -q -e '.[test,fast]'

reproduce: install
	$(PYTHON) -m mpcc.cli reproduce --data $(DATA) --out $(OUT)

# re-execute the committed notebooks in place on data/sample (their stored outputs are what nbval checks)
notebooks-refresh: install
	$(PYTHON) -m mpcc.cli reproduce --inplace

test: install
	$(PYTHON) -m pytest -q tests

test-fast: install
	$(PYTHON) -m pytest -q -m "not netns and not slow" tests

test-vagrant: install
	bash testbed/vagrant/test-vagrant.sh

lab: install
	$(PYTHON) -m pip install -q -e '.[lab]'
	$(PYTHON) -m jupyter lab --notebook-dir=notebooks $(if $(filter 0,$(shell id -u)),--allow-root,)

bench: install
	$(PYTHON) bench/run_all.py

lint:
	shellcheck -x testbed/*.sh testbed/nodes/*.sh testbed/vagrant/*.sh capture_tools/*.sh
