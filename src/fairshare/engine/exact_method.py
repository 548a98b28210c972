"""The ``exact`` registry entry's names, importable from here as older code imports them; they live in
:mod:`fairshare.engine.exact`, the one place for exact values."""

from .exact import SPECS, exact_interactions, run_exact

__all__ = ["SPECS", "exact_interactions", "run_exact"]
