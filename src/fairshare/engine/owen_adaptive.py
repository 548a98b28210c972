"""``owen-adaptive``: Owen values of a hierarchy, top down, opening the blocks whose values are largest first.

In an order that keeps every block together, the players before a block ``u`` are whole sibling blocks of
``u``'s ancestors, and ``u``'s children follow one another in a random order. So the marginal contributions of
``u``'s children need only the coalitions at the boundaries between them: a *walk* of ``u`` costs
``children + 1`` evaluations, whatever the length of the rest, and gives one unbiased sample of the Owen value
of each child (and of ``u``, their sum). A child's Owen value does not depend on how finely the other
branches are resolved, so samples from walks of different nodes are samples of the same values.

The sampler opens the root, then repeatedly the block with the largest estimated value (``walks`` walks
each, 4 by default), so a budget reaches the players a prediction rests on through ``O(depth)`` =
``O(log n)`` openings of ``O(branching)`` evaluations each, instead of ``n - 1`` evaluations per order. Once every block is open (or
from the start, when the budget pays for two whole orders) it walks whole orders, every block at once,
which is the optimized permutation walk over block-preserving orders; what is left of the budget goes to a
partial order over the blocks with the largest values.

With ``refine`` (a generation game's default), a larger budget also sharpens the values of the blocks open
already: before opening the next block, the open block whose parts have the largest standard error (root of the
sum of squares) is walked as many times again if that error exceeds the next block's value; and no whole orders
are walked before every block is open. Without it, every block is walked ``walks`` times and never again, so the
values of the upper levels (to which the parts' values are made to add up) stop improving however large the
budget; and a budget for two whole orders walks just those two (each block's value from two samples).

The solver averages each node's samples, then makes them add up top down: the children of an opened block
are shifted to sum to the block's value, each by a share proportional to its variance. Players in a block
that was never opened get an equal share of its value and an infinite standard error (their own values were
not estimated); ``info["unresolved_blocks"]`` lists those blocks.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

import numpy as np
from scipy.special import gammaln

from .._core.arguments import Option
from ..indices.hierarchy import Hierarchy, OwenIndex
from .montecarlo import Moments
from .protocols import History, Sampler
from .solve import AGREEING_DRAWS
from .spec import MethodSpec, Setup

__all__ = ["BlockTree", "OwenWalks", "OwenWalkBatch", "OwenWalkSolver", "SPECS"]

_BLOCK_BOOLS = 1 << 26           # most booleans of coalition rows materialized per batch (64 MB)
WHOLE_ORDERS = 2                 # a budget for this many whole orders walks them from the start (every word resolved)


class BlockTree:
    """A hierarchy as arrays, blocks with one child merged into it: nodes numbered breadth first (the root is 0,
    siblings are consecutive, every level a contiguous range), each with its parent, size, depth and children.

    Examples
    --------
    >>> t = BlockTree(Hierarchy([[0, 1], [[2]], [3, 4, 5]], 6))
    >>> t.n_nodes, t.n_children[:4].tolist(), t.size[:4].tolist()      # the block [[2]] is the player 2
    (9, [3, 2, 0, 3], [6, 2, 1, 3])
    >>> t.members(3).tolist()
    [3, 4, 5]
    """

    def __init__(self, hierarchy: Hierarchy) -> None:
        h = hierarchy

        def skip(node: int) -> int:                    # a block of one child is that child
            while len(h.children[node]) == 1:
                node = h.children[node][0]
            return node

        order, parent, depth = [skip(0)], [-1], [0]
        head = 0
        while head < len(order):
            for c in h.children[order[head]]:
                order.append(skip(c))
                parent.append(head)
                depth.append(depth[head] + 1)
            head += 1
        self.n_players = h.n_players
        self.n_nodes = m = len(order)
        self.parent = np.asarray(parent, dtype=np.int64)
        self.depth = np.asarray(depth, dtype=np.int64)
        self.player = h.player_of[np.asarray(order)]
        self.leaf_of = np.empty(h.n_players, dtype=np.int64)
        leaves = np.flatnonzero(self.player >= 0)
        self.leaf_of[self.player[leaves]] = leaves
        self.n_children = np.bincount(self.parent[1:], minlength=m).astype(np.int64)
        self.first_child = np.full(m, -1, dtype=np.int64)
        has = self.n_children > 0
        self.first_child[has] = 1 + np.concatenate([[0], np.cumsum(self.n_children)[:-1]])[has]
        self.internal = np.flatnonzero(has)
        self.levels = [np.flatnonzero(self.depth == d) for d in range(int(self.depth.max()) + 1)]
        self.size = np.zeros(m, dtype=np.int64)
        self.size[leaves] = 1
        for nodes in self.levels[:0:-1]:               # deepest level first: a level's sizes add into its parents
            np.add.at(self.size, self.parent[nodes], self.size[nodes])
        # players in depth-first order: every node's players are the range lo .. lo + size of it
        self.lo = np.zeros(m, dtype=np.int64)
        for nodes in self.levels[1:]:                  # siblings are consecutive: each starts after those before it
            before = np.cumsum(self.size[nodes]) - self.size[nodes]
            first = self.first_child[self.parent[nodes]] - nodes[0]
            self.lo[nodes] = self.lo[self.parent[nodes]] + before - before[first]
        self.dfs = np.empty(h.n_players, dtype=np.int64)
        self.dfs[self.lo[leaves]] = self.player[leaves]
        # the position of each non-root node's sibling group in the order of nodes 1..m-1
        self.group_start = self.first_child[self.parent[1:]] - 1

    def members(self, node: int) -> np.ndarray:
        """The players of ``node``, sorted."""
        return np.sort(self.dfs[self.lo[node]:self.lo[node] + self.size[node]])

    def children(self, node: int) -> np.ndarray:
        """The children of ``node`` (node ids)."""
        return np.arange(self.first_child[node], self.first_child[node] + self.n_children[node])

    def starts(self, rng: np.random.Generator, t: int) -> np.ndarray:
        """``(t, nodes)``: the position at which each node's block starts in ``t`` random block-preserving orders
        (the players of node ``v`` take positions ``start .. start + size - 1``)."""
        m = self.n_nodes
        out = np.zeros((t, m), dtype=np.int64)
        if m == 1:
            return out
        keys = rng.random((t, m - 1)) + self.parent[1:][None, :]          # siblings sorted by a random key
        order = np.argsort(keys, axis=1)
        sizes = self.size[1:][order]
        before = np.cumsum(sizes, axis=1) - sizes
        before -= before[:, self.group_start]                             # from the start of the sibling group
        offset = np.empty_like(before)
        np.put_along_axis(offset, order, before, axis=1)
        for nodes in self.levels[1:]:
            out[:, nodes] = offset[:, nodes - 1] + out[:, self.parent[nodes]]
        return out


@dataclass
class OwenWalkBatch:
    """Coalitions at block boundaries of random orders; sample ``j`` of node ``child[j]`` is
    ``v(coalitions[after[j]]) - v(coalitions[before[j]])``."""

    coalitions: np.ndarray       # (rows, n)
    child: np.ndarray            # (q,) node ids
    before: np.ndarray           # (q,) rows
    after: np.ndarray            # (q,) rows
    n_draws: int
    fresh: bool = False


class NodeSamples(Moments):
    """Per-node running means and spreads of the samples in :class:`OwenWalkBatch` es (both the sampler and the
    solver keep one, and see the same values)."""

    def absorb(self, batch: OwenWalkBatch, values: np.ndarray) -> None:
        self.add_grouped(batch.child, values[batch.after] - values[batch.before])


def walk_batch(tree: BlockTree, starts: np.ndarray, sample: np.ndarray, child: np.ndarray,
               n_draws: int) -> OwenWalkBatch:
    """The batch that samples node ``child[j]`` in the order of row ``sample[j]`` of ``starts``: the coalitions
    before and after its block (each distinct one once)."""
    n = tree.n_players
    lo = starts[sample, child]
    key = np.concatenate([sample * (n + 1) + lo, sample * (n + 1) + lo + tree.size[child]])
    uniq, inverse = np.unique(key, return_inverse=True)
    rows, cut = np.divmod(uniq, n + 1)
    ranks = starts[:, tree.leaf_of]                                        # (t, n) each player's position
    coalitions = ranks[rows] < cut[:, None]
    q = child.size
    return OwenWalkBatch(coalitions, child, inverse[:q], inverse[q:], n_draws)


class OwenWalks(Sampler):
    """Walks of the blocks of a hierarchy: the root first, then the block with the largest estimated value whose
    parent is open (``walks`` walks each), then whole orders; with a budget for two whole orders, whole orders
    from the start.

    Examples
    --------
    >>> h = Hierarchy([[0, 1], [2, 3, 4]], 5)
    >>> s = OwenWalks(np.random.default_rng(0), h, budget=9, walks=4)
    >>> b = s.propose(9, History(empty_value=np.zeros(1), grand_value=np.ones(1)))
    >>> b.child.tolist()                                  # the root's two blocks, in 4 walks
    [1, 2, 1, 2, 1, 2, 1, 2]
    """

    def __init__(self, rng: np.random.Generator, hierarchy: Hierarchy, budget: int, walks: int = 4,
                 tree: BlockTree | None = None, refine: bool = False) -> None:
        super().__init__(rng, hierarchy.n_players)
        self.tree = tree if tree is not None else BlockTree(hierarchy)
        self.walks = int(walks)
        self.refine = bool(refine)
        self.target = np.full(self.tree.n_nodes, self.walks)          # walks each block is due
        self.log_walks = _log_distinct_walks(self.tree) if self.refine else None
        self.unit_cost = max(int(self.tree.n_children[0]) - 1, 1)     # the cheapest walk: the root's
        n = self.d
        # a budget for two whole orders walks them from the start (no discovery), unless refining
        self.whole = not self.refine and budget >= WHOLE_ORDERS * max(n - 1, 1) + 2
        self.samples: NodeSamples | None = None
        self.seen = 0
        self.opened = 0

    def _absorb(self, history: History) -> None:
        for batch, values in zip(history.batches[self.seen:], history.values[self.seen:]):
            if self.samples is None:
                self.samples = NodeSamples((self.tree.n_nodes, values.shape[1]))
            self.samples.absorb(batch, np.asarray(values, dtype=float))
        self.seen = len(history.batches)

    def _walked(self) -> np.ndarray:
        """Walks so far of every node (0 for players)."""
        t = self.tree
        out = np.zeros(t.n_nodes)
        if self.samples is not None:
            out[t.internal] = self.samples.count[t.first_child[t.internal]]
        return out

    def _priority(self) -> np.ndarray:
        if self.samples is None:
            return np.zeros(self.tree.n_nodes)
        return np.linalg.norm(self.samples.mean, axis=1)

    def _refined(self, u: int, value: float, walked: np.ndarray) -> int:
        """The block to walk next with ``refine``: ``u`` (the block to open, of estimated value ``value``), unless
        an open block's parts have a larger standard error (root of the sum of their squares) than ``value``:
        then that block, its walks doubled (the values of blocks open already are what the ranking of the next
        ones rests on, and what the values of their parts are made to add up to). A block walked as often as its
        walks can differ is not walked again (they would repeat coalitions already evaluated)."""
        tree = self.tree
        done = tree.internal[(walked[tree.internal] >= self.target[tree.internal]) & (walked[tree.internal] > 0)
                             & (np.log(np.maximum(walked[tree.internal], 1)) < self.log_walks[tree.internal])]
        if not done.size:
            return u
        se = np.nan_to_num(self.samples.stderr(), posinf=0.0)
        error = np.sqrt(_group_sum(tree.parent[1:], (se[1:] ** 2).sum(axis=1, keepdims=True), tree.n_nodes)[:, 0])
        w = int(done[np.argmax(error[done])])
        if error[w] <= value:
            return u
        self.target[w] = 2 * walked[w]
        return w

    def _nodes(self, nodes: np.ndarray | None, t: int) -> OwenWalkBatch:
        """``t`` walks of every node in ``nodes`` (None: every block, whole orders) on each of ``t`` fresh orders."""
        tree = self.tree
        kids = np.arange(1, tree.n_nodes) if nodes is None else np.concatenate([tree.children(u) for u in nodes])
        starts = tree.starts(self.rng, t)
        sample = np.repeat(np.arange(t), kids.size)
        return walk_batch(tree, starts, sample, np.tile(kids, t), t)

    def propose(self, allowance: int, history: History) -> OwenWalkBatch | None:
        self._absorb(history)
        tree, n = self.tree, self.d
        walked = self._walked()
        if not self.whole:
            ready = tree.internal[walked[tree.internal] < self.target[tree.internal]]
            ready = ready[(ready == 0) | (walked[tree.parent[ready]] >= self.walks)]
            if ready.size:
                priority = self._priority()[ready]
                first = (ready == 0) | (self.refine & (walked[ready] > 0))     # refining: walks due go first
                u = int(ready[np.argmax(np.where(first, np.inf, priority))])
                if self.refine and walked[u] == 0:
                    u = self._refined(u, float(priority[ready == u][0]), walked)
                cost = int(tree.n_children[u]) + (1 if u else -1)           # the root's ends are known
                t = min(int(self.target[u] - walked[u]), allowance // cost)
                if t < 1:
                    return None
                self.opened += 1
                return self._nodes(np.array([u]), t)
            self.whole = True                                           # every block open: whole orders
        per = max(n - 1, 1)
        t = min(allowance // per, max(1, _BLOCK_BOOLS // (n * (n + 1))))
        if t >= 1:
            return self._nodes(None, t)
        return self._partial(allowance) if history.last_round else None     # (a round's rest goes to the next)

    def _partial(self, allowance: int) -> OwenWalkBatch | None:
        """One order walked at the boundaries of the blocks with the largest values (the root first, a block
        only with its parent), as far as ``allowance`` pays (each open block adds ``children - 1``)."""
        tree = self.tree
        cost = int(tree.n_children[0]) - 1
        if cost > allowance:
            return None
        priority = self._priority()
        chosen, heap = [0], []

        def offer(u: int) -> None:
            for c in tree.children(u):
                if tree.n_children[c] > 0:
                    heapq.heappush(heap, (-float(priority[c]), int(c)))

        offer(0)
        while heap:
            _, u = heapq.heappop(heap)
            extra = int(tree.n_children[u]) - 1
            if cost + extra <= allowance:
                chosen.append(u)
                cost += extra
                offer(u)
        return self._nodes(np.array(chosen), 1)


class OwenWalkSolver:
    """Means of every node's samples, made to add up top down (children shifted to their block's value in
    proportion to their variances); players in blocks never opened share their block's value equally, with an
    infinite standard error."""

    def __init__(self, setup: Setup) -> None:
        self.tree: BlockTree = setup.plan["tree"]

    def start(self, v0: np.ndarray, vN: np.ndarray) -> None:
        self.total = np.asarray(vN, dtype=float) - np.asarray(v0, dtype=float)
        self.samples = NodeSamples((self.tree.n_nodes, self.total.size))
        self.n_draws = 0

    def absorb(self, batch: OwenWalkBatch, values: np.ndarray) -> None:
        self.samples.absorb(batch, np.asarray(values, dtype=float))
        self.n_draws += int(batch.n_draws)

    def reconciled(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every node's value and variance ``(nodes, k)`` and whether it was estimated (its parent was opened)."""
        t, s = self.tree, self.samples
        m, k = s.mean.shape
        mean, var = s.mean, s.stderr(AGREEING_DRAWS) ** 2          # the values add up whatever the walks saw
        opened = np.zeros(m, dtype=bool)
        opened[t.internal] = s.count[t.first_child[t.internal]] > 0
        value, variance = np.zeros((m, k)), np.zeros((m, k))
        value[0] = self.total
        known = np.zeros(m, dtype=bool)
        known[0] = True
        for nodes in t.levels[1:]:
            par = t.parent[nodes]
            ok = opened[par] & known[par]
            share = (t.size[nodes] / t.size[par])[:, None]
            value[nodes] = value[par] * share                               # blocks never opened: equal shares
            variance[nodes] = np.inf
            if not ok.any():
                continue
            v, p = nodes[ok], par[ok]
            c, s2 = mean[v], var[v]
            infinite = ~np.isfinite(s2)
            sums = _group_sum(p, np.hstack([c, np.where(infinite, 0.0, s2), infinite.astype(float)]), m)
            gap = (value[p] - sums[p, :k])
            finite_total, n_inf = sums[p, k:2 * k], sums[p, 2 * k:]
            n_kids = t.n_children[p][:, None].astype(float)
            with np.errstate(divide="ignore", invalid="ignore"):
                w = np.where(n_inf > 0, infinite / np.maximum(n_inf, 1),
                             np.where(finite_total > 0, s2 / finite_total, 1.0 / n_kids))
            value[v] = c + w * gap
            with np.errstate(invalid="ignore"):
                adjusted = np.where(w > 0, s2 * (1 - w) + w ** 2 * variance[p], s2)
            variance[v] = np.where(infinite, np.inf, adjusted)
            known[v] = True
        return value, variance, known

    def result(self) -> tuple[np.ndarray, np.ndarray, dict]:
        t = self.tree
        value, variance, known = self.reconciled()
        leaves = t.leaf_of
        unresolved = np.flatnonzero(~known & known[np.maximum(t.parent, 0)] & (t.n_children > 0))
        info = {"n_walks": int(self.n_draws), "resolved_players": int(known[leaves].sum()),
                "unresolved_blocks": [t.members(int(u)).tolist() for u in unresolved]}
        info.update(self.samples.agreement_note(self.samples.stderr(AGREEING_DRAWS), "block"))
        if unresolved.size:
            info["stderr"] = "; ".join([f"{t.n_players - info['resolved_players']} of {t.n_players} players are in "
                                        "blocks the budget did not open (info['unresolved_blocks']): each has an "
                                        "equal share of its block's value"] + ([info["stderr"]] if "stderr" in info
                                                                               else []))
        return value[leaves], np.sqrt(variance[leaves]), info


def _log_distinct_walks(tree: BlockTree) -> np.ndarray:
    """Log of how many walks of each node differ in their coalitions (at most): the orders of its children, times
    the sets of siblings before each block on its path from the root."""
    prefix = np.zeros(tree.n_nodes)
    for nodes in tree.levels[1:]:
        prefix[nodes] = prefix[tree.parent[nodes]] + (tree.n_children[tree.parent[nodes]] - 1) * np.log(2.0)
    return gammaln(tree.n_children + 1.0) + prefix


def _group_sum(groups: np.ndarray, rows: np.ndarray, m: int) -> np.ndarray:
    """Sum of ``rows`` (r, c) by ``groups`` (r,) into ``(m, c)``."""
    out = np.zeros((m, rows.shape[1]))
    np.add.at(out, groups, rows)
    return out


def _plan(setup: Setup) -> dict:
    return {"tree": BlockTree(setup.semivalue.hierarchy)}


def _sampler(setup: Setup) -> OwenWalks:
    return OwenWalks(setup.sampler_rng, setup.semivalue.hierarchy, setup.budget, setup.options["walks"],
                     tree=setup.plan["tree"], refine=setup.options["refine"])


def _min_budget(n: int, ix: OwenIndex, opts: dict) -> int:
    return 2 + max(int(BlockTree(ix.hierarchy).n_children[0]) - 1, 1)


SPECS = [MethodSpec(
    name="owen-adaptive", indices=("owen",),
    description="Owen values top down: walks of one block's children at a time (children + 1 evaluations), "
                "the blocks with the largest values opened first, so a budget reaches the players that matter in "
                "O(log n) openings; whole block-preserving orders once every block is open",
    sampler=_sampler, solver=OwenWalkSolver, plan=_plan,
    options=(Option("walks", 4, "walks of a block before its children's values rank the blocks to open next "
                    "(fewer open more blocks, on noisier rankings)", kind="int", minimum=2),
             Option("refine", False, "double the walks of an open block when its parts' standard error exceeds the "
                    "value of the next block to open (more budget then sharpens the values already ranked, not only "
                    "deeper ones), and no whole orders before every block is open", kind="bool")),
    min_budget=_min_budget, default_for={"owen": 20})]
