"""What fairshare warns about: :class:`FairshareWarning` (a fact about a result the user should know)."""

from __future__ import annotations

__all__ = ["FairshareWarning"]


class FairshareWarning(UserWarning):
    """Something about a result the user should know (e.g. standard errors a budget could not estimate, a
    background too small to fit a distribution without shrinkage).

    Examples
    --------
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     warnings.warn("note", FairshareWarning)
    >>> caught[0].category.__name__
    'FairshareWarning'
    """
