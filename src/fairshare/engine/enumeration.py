"""The names of exact enumeration, importable from here as the doors and older code import them; they live in
:mod:`fairshare.engine.exact`, the one place for exact values."""

from .exact import (DEFAULT_CHUNK, MAX_ENUMERATION_PLAYERS, all_coalitions, all_values, enumeration_values,
                    exact_estimate)

__all__ = ["all_coalitions", "all_values", "enumeration_values", "exact_estimate", "MAX_ENUMERATION_PLAYERS",
           "DEFAULT_CHUNK"]
