"""Estimator modules; importing one registers its methods in :mod:`fairshare.registry`."""

# registration order is the order of `fairshare methods`
from . import exact_method, montecarlo, unified, banzhaf, sgd  # noqa: F401, I001
