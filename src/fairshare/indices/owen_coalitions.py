"""The coalitions exact Owen values read (whole sibling blocks along each player's path) and their weights, and
the refusal of hierarchies too deep for them."""

from __future__ import annotations

import numpy as np
from scipy.special import gammaln

from .hierarchy import MAX_OWEN_BITS, Hierarchy

__all__ = ["owen_coalitions", "check_owen_exact"]


def check_owen_exact(hierarchy: Hierarchy, player: int | None = None) -> None:
    """Refuse exact Owen values of ``player`` (None: of every player) with more than ``MAX_OWEN_BITS`` sibling
    blocks along its path, before any coalition is built or evaluated.

    Examples
    --------
    >>> check_owen_exact(Hierarchy([[0, 1], [2]], 3))
    >>> check_owen_exact(Hierarchy(list(range(30)), 30))
    Traceback (most recent call last):
    ValueError: exact Owen values: player 0 has 29 sibling blocks along its path (2^29 coalitions); at most 20: \
estimate them with a budget instead
    """
    counts = hierarchy.sibling_counts()
    player = int(np.argmax(counts)) if player is None else player
    b = int(counts[player])
    if b > MAX_OWEN_BITS:
        raise ValueError(f"exact Owen values: player {player} has {b} sibling blocks along its path (2^{b} "
                         f"coalitions); at most {MAX_OWEN_BITS}: estimate them with a budget instead")


def owen_coalitions(hierarchy: Hierarchy, player: int) -> tuple[np.ndarray, np.ndarray]:
    """The coalitions ``S`` (without ``player``) whose marginal ``v(S + i) - v(S)`` enters ``player``'s Owen
    value, and their weights (which sum to 1): whole sibling blocks along the player's path, weighted by
    ``prod_levels r!(m-r-1)!/m!`` (``r`` of the level's ``m`` blocks chosen).

    Examples
    --------
    >>> S, w = owen_coalitions(Hierarchy([[0, 1], [2]], 3), 0)
    >>> S.astype(int).tolist()
    [[0, 0, 0], [0, 0, 1], [0, 1, 0], [0, 1, 1]]
    >>> w.tolist()
    [0.25, 0.25, 0.25, 0.25]
    """
    check_owen_exact(hierarchy, player)
    masks, level, size = hierarchy.sibling_blocks(player)
    b = masks.shape[0]
    codes = np.arange(1 << b, dtype=np.int64)
    chosen = ((codes[:, None] >> np.arange(b)[None, :]) & 1).astype(bool)          # (2^b, b)
    S = (chosen.astype(np.int64) @ masks.astype(np.int64)) > 0
    r = np.zeros((codes.size, size.size), dtype=np.int64)
    np.add.at(r.T, level, chosen.T.astype(np.int64))
    m = size[None, :]
    log_w = gammaln(r + 1) + gammaln(m - r) - gammaln(m + 1)
    return S, np.exp(log_w.sum(axis=1))
