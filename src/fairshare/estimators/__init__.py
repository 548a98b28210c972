"""Estimators: samplers (``samplers/``), solvers (``regression.py``, ``montecarlo.py``, ``sgd.py``), the
regression formulations, the one driver; ``catalog.py`` registers every declared method."""
