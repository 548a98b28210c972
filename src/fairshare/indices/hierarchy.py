"""Owen values: a hierarchy of players (a partition into unions, or nested partitions) and its coalition weights.

The Owen value (Owen 1977) of player ``i`` is the mean marginal contribution ``v(S + i) - v(S)`` over the
orders of the players that keep every block of the hierarchy together: at every node of the tree the
children come in a uniformly random order, and a block's players follow one another. For a flat partition
into unions ``U_1 .. U_m`` with ``i`` in ``U_k`` this is the two-level formula

    phi_i = sum_{R subset of M - k} sum_{T subset of U_k - i} r!(m-r-1)!/m! t!(u-t-1)!/u! (v(Q_R + T + i) - v(Q_R + T)),

with ``Q_R`` the union of the unions in ``R``; nested partitions multiply one such factor per level. The
values add up to ``v(N) - v(empty)``; a block's players together get the block's Shapley value in the game
between the blocks of its level (the quotient game). Only the coalitions made of whole sibling blocks
along ``i``'s path enter, so exact values need far fewer than ``2^n`` evaluations.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property
from typing import Any

import numpy as np

from .semivalues import resolve_index

__all__ = ["Hierarchy", "OwenIndex", "resolve_value_index", "check_value_index", "check_partition",
           "balanced", "MAX_OWEN_BITS"]

#: the most sibling blocks along one player's path for exact Owen values (2^20 coalitions for that player)
MAX_OWEN_BITS = 20


def _is_player(x: Any) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


class Hierarchy:
    """A tree over the players ``0 .. n-1``: a partition into blocks, whose blocks may be partitioned again.

    Parameters
    ----------
    partition : nested sequences of player indices
        ``[[0, 1, 2], [3, 4]]`` is a partition into two unions; ``[[[0, 1], [2]], [[3, 4]]]`` nests one more
        level. A bare player next to blocks is a block of its own. Every player appears exactly once.
    n_players : int
        The number of players of the game.

    Examples
    --------
    >>> h = Hierarchy([[0, 1, 2], [3, 4]], 5)
    >>> h.depth, h.blocks(1)
    (2, [[0, 1, 2], [3, 4]])
    """

    def __init__(self, partition: Any, n_players: int) -> None:
        n = int(n_players)
        if isinstance(partition, Hierarchy):
            partition = partition.nested()
        if isinstance(partition, np.ndarray):
            partition = partition.tolist()
        if not isinstance(partition, Sequence) or isinstance(partition, str) or len(partition) == 0:
            raise ValueError("partition must be a non-empty list of blocks (lists of player indices), got "
                             f"{partition!r}")
        parent: list[int] = [-1]
        children: list[list[int]] = [[]]
        leaf_of = np.full(n, -1, dtype=np.int64)
        stack = [(partition, 0, "partition")]
        while stack:
            block, node, where = stack.pop()
            for pos, item in enumerate(block):
                here = f"{where}[{pos}]"
                if isinstance(item, np.ndarray):
                    item = item.tolist()
                child = len(parent)
                parent.append(node)
                children.append([])
                children[node].append(child)
                if _is_player(item):
                    p = int(item)
                    if not 0 <= p < n:
                        raise ValueError(f"partition: player {p} at {here} is not one of the game's {n} players "
                                         f"(0..{n - 1})")
                    if leaf_of[p] >= 0:
                        raise ValueError(f"partition: player {p} appears twice (blocks overlap); every player "
                                         f"must be in exactly one block")
                    leaf_of[p] = child
                elif isinstance(item, Sequence) and not isinstance(item, str):
                    if len(item) == 0:
                        raise ValueError(f"partition: the block at {here} is empty")
                    stack.append((item, child, here))
                else:
                    raise ValueError(f"partition: {item!r} at {here} is neither a player index nor a block")
        missing = np.flatnonzero(leaf_of < 0)
        if missing.size:
            raise ValueError(f"partition: players {missing.tolist()[:10]}{' ...' if missing.size > 10 else ''} "
                             f"are in no block; every one of the {n} players must be in exactly one")
        self.n_players = n
        self.parent = np.asarray(parent, dtype=np.int64)
        self.children = children
        self.leaf_of = leaf_of
        self.player_of = np.full(len(parent), -1, dtype=np.int64)
        self.player_of[leaf_of] = np.arange(n)
        paths = [self._path(p) for p in range(n)]
        self.depth = max(len(p) for p in paths) - 1
        # ancestors level by level (level 0 below the root), padded with the leaf itself
        self.levels = np.array([p[1:] + [p[-1]] * (self.depth + 1 - len(p)) for p in paths], dtype=np.int64)

    @cached_property
    def members(self) -> np.ndarray:
        """Members of every node, a boolean matrix ``(nodes, n)``: built on first use only (exact values, blocks),
        since a long text's hierarchy would hold nodes x tokens of them."""
        members = np.zeros((self.parent.size, self.n_players), dtype=bool)
        members[self.leaf_of, np.arange(self.n_players)] = True
        for node in range(self.parent.size - 1, 0, -1):     # children are numbered after their parents
            members[self.parent[node]] |= members[node]
        return members

    @classmethod
    def from_correlation(cls, data: Any, names: Sequence[str] | None = None) -> Hierarchy:
        """A binary hierarchy of the columns of ``data`` (rows, n): average-linkage clustering on the distance
        ``1 - |correlation|``, so strongly correlated features share the deepest blocks (as shap's Partition
        masker clusters its background). Constant columns count as uncorrelated with every other; a missing value
        (NaN) leaves out its row from the correlations of its column only (pairwise complete, as pandas' ``corr``).

        Examples
        --------
        >>> rng = np.random.default_rng(0)
        >>> a, b = rng.normal(size=(2, 200))
        >>> X = np.column_stack([a, b, a + 0.1 * rng.normal(size=200), b + 0.1 * rng.normal(size=200)])
        >>> Hierarchy.from_correlation(X).blocks(1)
        [[0, 2], [1, 3]]
        """
        from scipy.cluster.hierarchy import linkage
        from scipy.spatial.distance import squareform

        X = np.asarray(data, dtype=float)
        if X.ndim != 2 or X.shape[0] < 2:
            raise ValueError("partition='correlation' needs a background of at least 2 rows to correlate features, "
                             f"got shape {X.shape}")
        n = X.shape[1]
        if n == 1:
            return cls([0], 1)
        C = _correlation(X)
        D = np.clip(1.0 - np.abs(C), 0.0, 1.0)
        np.fill_diagonal(D, 0.0)
        link = linkage(squareform(D, checks=False), method="average")
        nodes: list[Any] = list(range(n))
        for a, b, *_ in link:
            nodes.append([nodes[int(a)], nodes[int(b)]])
        return cls(nodes[-1], n)

    def _path(self, player: int) -> list[int]:
        node, path = int(self.leaf_of[player]), []
        while node >= 0:
            path.append(node)
            node = int(self.parent[node])
        return path[::-1]

    def nested(self, node: int = 0) -> list:
        """The hierarchy as nested lists of player indices (what :class:`Hierarchy` takes).

        Examples
        --------
        >>> Hierarchy([[2, 0], 1], 3).nested()
        [[2, 0], 1]
        """
        return [int(self.player_of[c]) if self.player_of[c] >= 0 else self.nested(c) for c in self.children[node]]

    def blocks(self, level: int) -> list[list[int]]:
        """The partition at ``level`` (1: the top blocks); players in shallower leaves are blocks of their own.

        Examples
        --------
        >>> Hierarchy([[[0, 1], [2]], [3]], 4).blocks(2)
        [[0, 1], [2], [3]]
        """
        if not 1 <= level <= self.depth:
            raise ValueError(f"level must be in 1..{self.depth}, got {level}")
        nodes = np.unique(self.levels[:, level - 1])
        out = [np.flatnonzero(self.members[v]).tolist() for v in nodes]
        return sorted(out, key=lambda b: b[0])

    def restricted(self, players: np.ndarray) -> Hierarchy:
        """The hierarchy of the game on ``players`` only (renumbered 0..len-1); empty blocks vanish.

        Examples
        --------
        >>> Hierarchy([[0, 1], [2, 3]], 4).restricted(np.array([1, 2, 3])).nested()
        [[0], [1, 2]]
        """
        players = np.asarray(players, dtype=np.int64)
        new = np.full(self.n_players, -1, dtype=np.int64)
        new[players] = np.arange(players.size)

        def walk(node: int) -> Any:
            p = self.player_of[node]
            if p >= 0:
                return int(new[p]) if new[p] >= 0 else None
            kept = [b for b in (walk(c) for c in self.children[node]) if b is not None and b != []]
            return kept

        return Hierarchy(walk(0), players.size)

    # ------------------------------------------------------------------ orders of the players
    def permutations(self, rng: np.random.Generator, t: int, antithetic: bool = False) -> np.ndarray:
        """``t`` random orders of the players (rows) that keep every block together, uniform over such orders;
        with ``antithetic`` every second one is the reverse of the one before (reversed, blocks stay together).

        Examples
        --------
        >>> h = Hierarchy([[0, 1], [2, 3, 4]], 5)
        >>> P = h.permutations(np.random.default_rng(0), 100)
        >>> bool(np.all(np.abs(np.argsort(P, axis=1)[:, 0] - np.argsort(P, axis=1)[:, 1]) == 1))
        True
        """
        base_count = (t + 1) // 2 if antithetic else t
        keys = rng.random((base_count, self.parent.size))[:, self.levels]       # (t, n, levels)
        order = np.broadcast_to(np.arange(self.n_players), (base_count, self.n_players)).copy()
        for level in range(self.depth - 1, -1, -1):                             # stable sorts, deepest key first
            k = np.take_along_axis(keys[:, :, level], order, axis=1)
            order = np.take_along_axis(order, np.argsort(k, axis=1, kind="stable"), axis=1)
        if not antithetic:
            return order
        return np.stack([order, order[:, ::-1]], axis=1).reshape(-1, self.n_players)[:t]

    def sibling_blocks(self, player: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The blocks that may precede ``player``: for every level of its path the other children of its
        ancestor. Returns ``(masks (b, n) bool, level of each (b,), size of each level's family (levels,))``.

        Examples
        --------
        >>> masks, level, size = Hierarchy([[0, 1], [2, 3, 4]], 5).sibling_blocks(2)
        >>> masks.astype(int).tolist(), level.tolist(), size.tolist()
        ([[1, 1, 0, 0, 0], [0, 0, 0, 1, 0], [0, 0, 0, 0, 1]], [0, 1, 1], [2, 3])
        """
        path = self._path(player)
        masks, level, size = [], [], []
        for depth, (node, child) in enumerate(zip(path[:-1], path[1:])):
            family = self.children[node]
            size.append(len(family))
            for sib in family:
                if sib != child:
                    masks.append(self.members[sib])
                    level.append(depth)
        masks_arr = np.array(masks, dtype=bool).reshape(-1, self.n_players)
        return masks_arr, np.asarray(level, dtype=np.int64), np.asarray(size, dtype=np.int64)

    def sibling_counts(self) -> np.ndarray:
        """``(n,)``: how many sibling blocks may precede each player (along its path, the other children of each
        ancestor), without building them.

        Examples
        --------
        >>> Hierarchy([[0, 1], [2, 3, 4]], 5).sibling_counts().tolist()
        [2, 2, 3, 3, 3]
        """
        fanout = np.array([len(c) for c in self.children], dtype=np.int64)
        acc = np.zeros(self.parent.size, dtype=np.int64)
        for node in range(1, self.parent.size):                 # children are numbered after their parents
            acc[node] = acc[self.parent[node]] + fanout[self.parent[node]] - 1
        return acc[self.leaf_of]

    def exact_size(self) -> int:
        """How many coalitions (and their values with the player added) exact Owen values read, before the
        coalitions shared between players are counted once: ``sum_i 2^(sibling blocks of i + 1)``.

        Examples
        --------
        >>> Hierarchy([[0, 1], [2, 3, 4]], 5).exact_size()      # 2 players with 2 blocks, 3 with 3
        64
        """
        b = self.sibling_counts()
        if b.max() > MAX_OWEN_BITS:
            return 1 << 62
        return int((np.int64(2) << b).sum())

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Hierarchy) and self.n_players == other.n_players and \
            _canonical(self.nested()) == _canonical(other.nested())

    def __hash__(self) -> int:
        return hash(str(_canonical(self.nested())))

    def __repr__(self) -> str:
        return f"Hierarchy({self.nested()!r}, {self.n_players})"


def _correlation(X: np.ndarray) -> np.ndarray:
    """Pearson correlations of the columns of ``X``, each pair over the rows where both are present (NaN: missing);
    0 where undefined (a constant column, fewer than 2 rows in common).

    Examples
    --------
    >>> X = np.array([[1.0, 2.0], [2.0, 4.1], [3.0, 5.9], [np.nan, 100.0]])
    >>> np.round(_correlation(X), 4).tolist()
    [[1.0, 0.999], [0.999, 1.0]]
    """
    present = ~np.isnan(X)
    with np.errstate(divide="ignore", invalid="ignore"):
        if present.all():
            Z = X - X.mean(axis=0)
            scale = np.sqrt((Z ** 2).sum(axis=0))
            C = (Z.T @ Z) / np.outer(scale, scale)
        else:
            P = present.astype(float)
            V = np.where(present, X - np.nanmean(np.where(present, X, np.nan), axis=0), 0.0)
            count, sums = P.T @ P, V.T @ P           # sums[i, j]: column i over the rows where j is present too
            cov = V.T @ V - sums * sums.T / count
            var = (V ** 2).T @ P - sums ** 2 / count
            C = np.where(count >= 2, cov / np.sqrt(var * var.T), np.nan)
    return np.where(np.isfinite(C), C, 0.0)


def balanced(block: Any, branching: int = 8) -> Any:
    """``block`` (nested lists) with every list of more than ``branching`` parts cut into ``branching`` runs of
    consecutive parts, as even as the count allows, recursively: a tree ``O(log n)`` deep whose blocks have at
    most ``branching`` parts (what ``owen-adaptive`` walks block by block).

    Examples
    --------
    >>> balanced(list(range(6)), branching=2)
    [[[0, 1], 2], [[3, 4], 5]]
    >>> balanced(list(range(6)), branching=4)
    [[0, 1], 2, 3, [4, 5]]
    """
    if not isinstance(block, list):
        return block
    parts = [balanced(b, branching) for b in block]
    if len(parts) <= branching:
        return parts
    cuts = np.linspace(0, len(parts), branching + 1).round().astype(int)
    runs = [parts[a:b] if b - a > 1 else parts[a] for a, b in zip(cuts[:-1], cuts[1:])]
    return [balanced(r, branching) if isinstance(r, list) and len(r) > branching else r for r in runs]


def _canonical(nested: Any) -> Any:
    if _is_player(nested):
        return int(nested)
    return sorted((_canonical(b) for b in nested), key=str)


class OwenIndex:
    """The Owen value of a hierarchy (``index="owen"`` with ``partition=`` at every door).

    Examples
    --------
    >>> ix = OwenIndex(Hierarchy([[0, 1], [2]], 3))
    >>> ix.name, ix.n_players
    ('owen', 3)
    """

    name = "owen"

    def __init__(self, hierarchy: Hierarchy) -> None:
        self.hierarchy = hierarchy
        self.n_players = hierarchy.n_players

    def reduced(self, n: int, removed: int, active: np.ndarray | None = None) -> OwenIndex:
        """The Owen value of the game without its null players (the values of the others do not change)."""
        if removed == 0 or active is None:
            return self
        return OwenIndex(self.hierarchy.restricted(active))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, OwenIndex) and self.hierarchy == other.hierarchy

    def __hash__(self) -> int:
        return hash(("owen", self.hierarchy))

    def __repr__(self) -> str:
        return f"OwenIndex({self.hierarchy.nested()!r})"


def resolve_value_index(index: Any, n_players: int, partition: Any = None) -> Any:
    """The index of a door that gives one value per player: a semivalue (see
    :func:`~fairshare.indices.semivalues.resolve_index`) or, for ``"owen"``, the Owen value of ``partition``.

    Examples
    --------
    >>> resolve_value_index("owen", 3, [[0, 1], [2]])
    OwenIndex([[0, 1], [2]])
    >>> resolve_value_index("shapley", 3).name
    'shapley'
    """
    if isinstance(index, OwenIndex):
        if partition is not None:
            raise ValueError("partition: give it once, either inside the OwenIndex or as partition=")
        if index.n_players != n_players:
            raise ValueError(f"index: the OwenIndex is for {index.n_players} players, the game has {n_players}")
        return index
    if isinstance(index, str) and index.strip().lower() == "owen":
        if partition is None:
            raise ValueError("index='owen' needs partition=: the blocks of players (e.g. [[0, 1, 2], [3, 4]]), "
                             "nested lists for a hierarchy")
        return OwenIndex(Hierarchy(partition, n_players))
    if partition is not None:
        name = index.name if hasattr(index, "name") else index
        raise ValueError(f"partition is given but index is {name!r}: a partition defines Owen values; use "
                         "index='owen'")
    return resolve_index(index, n_players)


def check_value_index(value: Any) -> Any:
    """A door's ``index`` argument checked before the game is known: a semivalue (resolved), or ``"owen"`` / an
    :class:`OwenIndex` (its partition is checked against the game's players by :func:`resolve_value_index`).

    Examples
    --------
    >>> check_value_index("owen"), check_value_index("banzhaf").name
    ('owen', 'banzhaf')
    """
    if isinstance(value, OwenIndex) or isinstance(value, str) and value.strip().lower() == "owen":
        return value
    return resolve_index(value)


def check_partition(value: Any) -> Any:
    """A door's ``partition`` argument: None or a list of blocks (checked against the players later).

    Examples
    --------
    >>> check_partition("abc")
    Traceback (most recent call last):
    ...
    ValueError: partition must be a list of blocks of player indices (nested for a hierarchy), got 'abc'
    """
    if value is not None and not isinstance(value, Hierarchy) and (
            isinstance(value, (str, bytes, int, float)) or not hasattr(value, "__len__")):
        raise ValueError(f"partition must be a list of blocks of player indices (nested for a hierarchy), got "
                         f"{value!r}")
    return value
