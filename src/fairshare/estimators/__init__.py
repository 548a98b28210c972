"""Estimator modules; importing one registers its methods in :mod:`fairshare.registry`."""

from . import exact_method, montecarlo, unified  # noqa: F401
