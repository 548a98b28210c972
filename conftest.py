"""Shared by the tests and the doctests of src/: figures a test opened are closed after it (a user keeps theirs;
a suite of plot examples must not pile up pyplot's open figures)."""

import sys

import pytest


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    if "matplotlib.pyplot" in sys.modules:
        sys.modules["matplotlib.pyplot"].close("all")
