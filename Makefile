# Set-up and entry points. `make demo` and `make test` work on a fresh machine:
# each creates .venv when it is missing and installs what it needs from pyproject.toml.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip

.PHONY: demo test clean pydvl browser

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

# Headless Chromium from Debian's packages, for the HTML report's browser tests (tests/test_report.py): installed
# only when no `chromium` is on the PATH (with sudo when not root); the package lists are refreshed only if the
# install fails.
browser:
	@command -v chromium >/dev/null 2>&1 || { \
		SUDO=$$([ "$$(id -u)" -eq 0 ] || echo sudo); \
		$$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium || { $$SUDO apt-get update && \
		$$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium; }; }

# Two workers (pytest-xdist), work stolen from the busier one: the suite is CPU-bound and CI has 2 cores.
test: browser $(VENV)/.installed-all
	$(PY) -m pytest -q -n 2 --dist worksteal

# pyDVL, the data-valuation peer of `fairshare bench datavalue` (optional): its 0.10 release pins numpy < 2,
# which it does not need, so it goes in without its pins and with the libraries it imports.
pydvl: $(VENV)/.installed-all
	$(PIP) install --quiet --no-deps "pyDVL==0.10.0"
	$(PIP) install --quiet pyDeprecate more-itertools cvxpy

clean:
	rm -rf $(VENV) build dist src/*.egg-info .pytest_cache
