# Set-up and entry points. `make demo` and `make test` work on a fresh machine:
# each creates .venv when it is missing and installs what it needs from pyproject.toml.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip

.PHONY: demo test clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip

# A stamp per extra set, rebuilt whenever pyproject.toml changes.
$(VENV)/.installed-demo: pyproject.toml | $(PY)
	$(PIP) install --quiet -e ".[ml,plot]"
	touch $@

$(VENV)/.installed-all: pyproject.toml | $(PY)
	$(PIP) install --quiet -e ".[all]"
	touch $@ $(VENV)/.installed-demo

demo: $(VENV)/.installed-demo
	$(VENV)/bin/fairshare demo

test: $(VENV)/.installed-all
	$(PY) -m pytest -q

clean:
	rm -rf $(VENV) build dist src/*.egg-info .pytest_cache
