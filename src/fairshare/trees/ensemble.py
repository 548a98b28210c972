"""One flat array representation for tree ensembles (each library's reader in ``trees/readers/`` builds it).

Every node of every tree is a row of the same arrays (children as global indices). Each
model's own split rule is kept exactly: xgboost goes left when ``float32(x) < threshold``
(thresholds are float32), lightgbm and HistGradientBoosting when ``x <= threshold`` in double,
scikit-learn trees and catboost when ``float32(x) <= threshold``; a missing value follows the
node's default direction.

*Categorical splits* (xgboost, lightgbm, HistGradientBoosting) hold a set of categories per
node: a value is truncated to an integer category ``c``; ``c`` in the node's left set goes
left, in its right set goes right, and anything else (another or an invalid category) goes
the node's ``cat_other_left`` way; NaN follows ``default_left``. The sets are stored as sorted
``node << 32 | category`` keys, so deciding many rows at many nodes is one ``searchsorted``.

*Linear leaves* (lightgbm ``linear_tree=True``): a leaf outputs ``const + sum_j a_j x_j`` over
its features, or its plain leaf value when one of those features is missing.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["TreeEnsemble", "LinearLeaves", "UnreadableSplits", "assemble", "MISSING_NAN", "MISSING_ZERO",
           "MISSING_AS_ZERO"]

# how a missing value is recognised at a node
MISSING_NAN = 0          # NaN goes the default way (xgboost, scikit-learn, lightgbm "NaN")
MISSING_ZERO = 1         # NaN and 0 go the default way (lightgbm "Zero")
MISSING_AS_ZERO = 2      # NaN is compared as 0 (lightgbm "None")

class UnreadableSplits(ValueError):
    """A model whose splits depend on several features at once (catboost's CTRs of feature combinations): its
    trees cannot be read into one representation, but the model itself can be explained through its predictions."""


@dataclass
class LinearLeaves:
    """Leaf linear models of lightgbm linear trees, in compressed rows over nodes.

    ``ptr[node]..ptr[node + 1]`` index ``feature`` and ``coeff`` for the node (empty for
    internal nodes and constant leaves); ``fallback[node]`` is the output when one of the
    leaf's features is NaN (the leaf's ``value`` holds the constant of the linear model).
    """

    ptr: np.ndarray          # (N + 1,) int64
    feature: np.ndarray      # (nnz,) int64
    coeff: np.ndarray        # (nnz,) float
    fallback: np.ndarray     # (N, k) float

    def terms(self, leaves: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """For a flat array of leaf nodes: (owner position, feature, coefficient) of every linear term."""
        start, stop = self.ptr[leaves], self.ptr[leaves + 1]
        count = stop - start
        owner = np.repeat(np.arange(leaves.size), count)
        offsets = np.arange(int(count.sum())) - np.repeat(np.cumsum(count) - count, count)
        idx = np.repeat(start, count) + offsets
        return owner, self.feature[idx], self.coeff[idx]


@dataclass
class TreeEnsemble:
    """Nodes of all trees in flat arrays; the ensemble's output is ``base + sum of reached leaf values``.

    Attributes
    ----------
    feature : int (N,), -1 at leaves
    threshold : float (N,)
    left, right : int (N,), global child indices, -1 at leaves
    default_left : bool (N,), direction of a missing value
    missing : int8 (N,), how a missing value is recognised
    cover : float (N,), training weight reaching the node (for path-dependent values)
    value : float (N, k), leaf outputs (already scaled: learning rate, forest averaging)
    roots : int (T,), root node of each tree
    base : float (k,), constant added to the sum of leaves; NaN while a reading made without a model call owes it
        (xgboost's and lightgbm's, found by predicting one row: :func:`fairshare.trees.readers.settle_ensemble`)
    n_features : int
    strict : bool, True for ``x < threshold`` (xgboost), False for ``x <= threshold``
    float32 : bool, compare ``float32(x)`` (xgboost, scikit-learn, catboost)
    categorical : bool (N,) or None, nodes with a categorical split
    cat_left, cat_right : sorted int64 keys ``node << 32 | category`` of the categories going left / right
    cat_other_left : bool (N,), direction of any other (or invalid) category
    linear : LinearLeaves or None
    output : what the ensemble's output is (e.g. "margin", "probability", "average path length")
    feature_names : the model's feature names, when it has them
    category_maps : feature -> categories of the training data (a category's position is its code);
        rows given as pandas categoricals or strings are coded with them
    missing_value : a value that means missing besides NaN (xgboost's ``missing=``), or None
    sparse_missing : entries absent from a sparse matrix are missing (xgboost) rather than 0
    category_note : why the training categories could not be read, when they could not (rows with
        pandas categoricals are then refused with this message)
    category_hash : the name of the reader that codes categories by hash, when ``category_maps`` hold the
        hashes of the categories the model splits on (catboost stores no category strings): a row's value is
        coded by that reader's ``category_codes`` (its hash's position); any other value gets a code in no
        split's set
    refuses_missing : the model's name when the model itself refuses rows with NaN (scikit-learn's gradient
        boosting): rows with NaN are then refused, not walked down the splits' default ways
    refuses_float32_overflow : the model's name when the model itself refuses values beyond float32's range
        (scikit-learn's trees and forests cast rows to float32 and refuse the infinities that makes): such rows
        are then refused, not walked as infinities
    labels : the outputs are labels of a multi-label classifier (xgboost or catboost fitted on a 0/1 label matrix):
        each output's probability is its own logistic, and no output is a class whose log loss a label would name
    no_probability : why the model's ``predict_proba`` gives no probability (xgboost's ``binary:logitraw`` margins,
        ``binary:hinge`` labels): ``model_output`` ``"probability"`` and ``"log_loss"`` are refused before any call
    """

    feature: np.ndarray
    threshold: np.ndarray
    left: np.ndarray
    right: np.ndarray
    default_left: np.ndarray
    missing: np.ndarray
    cover: np.ndarray
    value: np.ndarray
    roots: np.ndarray
    base: np.ndarray
    n_features: int
    strict: bool
    float32: bool
    categorical: np.ndarray | None = None
    cat_left: np.ndarray | None = None
    cat_right: np.ndarray | None = None
    cat_other_left: np.ndarray | None = None
    linear: LinearLeaves | None = None
    output: str = "raw output"
    feature_names: list[str] | None = None
    category_maps: dict[int, np.ndarray] = field(default_factory=dict)
    missing_value: float | None = None
    sparse_missing: bool = False
    category_note: str | None = None
    category_hash: str | None = None
    refuses_missing: str | None = None
    refuses_float32_overflow: str | None = None
    labels: bool = False
    no_probability: str | None = None

    @property
    def n_outputs(self) -> int:
        return int(self.value.shape[1])

    @property
    def n_trees(self) -> int:
        return int(self.roots.size)

    @property
    def settled(self) -> bool:
        """Whether the base is known (its array is shared by the ensembles made from this one, so settling it in
        place settles them too)."""
        return not bool(np.isnan(self.base).any())

    def tree_outputs(self) -> np.ndarray:
        """Output each tree adds into: ``(T,)``, ``-1`` for a tree whose leaves feed several outputs.

        xgboost and lightgbm multiclass models grow one tree per class; the compiled walks then
        touch one output per leaf instead of all of them.
        """
        tree_of = np.repeat(np.arange(self.n_trees), np.diff(np.append(self.roots, self.feature.size)))
        nonzero = self.value != 0.0                                          # (N, k)
        if self.linear is not None:
            nonzero = nonzero | (self.linear.fallback != 0.0)
            has_terms = np.diff(self.linear.ptr) > 0
            nonzero = nonzero | (has_terms[:, None] & np.ones((1, self.n_outputs), bool))
        used = np.zeros((self.n_trees, self.n_outputs), dtype=bool)
        np.logical_or.at(used, tree_of, nonzero)
        count = used.sum(axis=1)
        return np.where(count == 1, np.argmax(used, axis=1), np.where(count == 0, 0, -1)).astype(np.int64)

    # ----------------------------------------------------------------------------------- decisions
    def decisions(self, X: np.ndarray) -> np.ndarray:
        """``go_left[r, node]``: row ``X[r]`` goes to the left child at every internal node (False at leaves).

        Examples
        --------
        >>> from sklearn.tree import DecisionTreeRegressor
        >>> from fairshare.trees import read_ensemble
        >>> X = np.arange(8.0).reshape(-1, 1)
        >>> ens = read_ensemble(DecisionTreeRegressor(max_depth=1).fit(X, X[:, 0] > 3))
        >>> ens.decisions(np.array([[0.0], [7.0]]))[:, ens.roots[0]]
        array([ True, False])
        """
        from .kernels import decisions

        return decisions(self, np.atleast_2d(np.asarray(X, dtype=float)))

    def depth(self) -> int:
        """Largest number of edges on a root-to-leaf path."""
        depth = np.zeros(self.feature.size, dtype=np.int64)
        frontier = self.roots[self.feature[self.roots] >= 0]
        level = 0
        while frontier.size:
            level += 1
            children = np.concatenate([self.left[frontier], self.right[frontier]])
            depth[children] = level
            frontier = children[self.feature[children] >= 0]
        return int(depth.max(initial=0))

    def leaves(self, X: np.ndarray) -> np.ndarray:
        """Leaf reached by each row in each tree: ``(m, T)`` node indices (compiled, rows in parallel)."""
        from .kernels import leaves

        return leaves(self, np.atleast_2d(np.asarray(X, dtype=float)))

    def leaf_outputs(self, X: np.ndarray, leaves: np.ndarray) -> np.ndarray:
        """Output of the reached leaves ``(m, T, k)`` (linear leaves evaluated at the rows)."""
        out = self.value[leaves]
        if self.linear is None:
            return out
        flat = leaves.reshape(-1)
        rows = np.repeat(np.arange(X.shape[0]), leaves.shape[1])
        owner, feat, coeff = self.linear.terms(flat)
        x = X[rows[owner], feat]
        nan = np.bincount(owner, weights=np.isnan(x), minlength=flat.size) > 0
        linear = np.bincount(owner, weights=coeff * np.nan_to_num(x), minlength=flat.size)
        value = out.reshape(flat.size, -1) + linear[:, None]
        value = np.where(nan[:, None], self.linear.fallback[flat], value)
        return value.reshape(out.shape)

    def predict(self, X: np.ndarray) -> np.ndarray:
        """Raw output for each row of ``X``: ``(m, k)``; vectorized over rows and trees.

        Examples
        --------
        >>> from sklearn.tree import DecisionTreeRegressor
        >>> from fairshare.trees import read_ensemble
        >>> X = np.arange(8.0).reshape(-1, 1)
        >>> read_ensemble(DecisionTreeRegressor(max_depth=1).fit(X, X[:, 0])).predict(X[:2]).ravel()
        array([1.5, 1.5])
        """
        X = np.asarray(X, dtype=float)
        if self.linear is None:                        # constant leaves: summed in the walk
            from .kernels import leaf_sums

            return self.base[None, :] + leaf_sums(self, np.atleast_2d(X))
        leaves = self.leaves(X)
        return self.base[None, :] + self.leaf_outputs(X, leaves).sum(axis=1)


_ARRAY_KEYS = ("feature", "threshold", "left", "right", "default_left", "missing", "cover", "value")


def assemble(trees: list[dict], n_features: int, k: int, base: np.ndarray, strict: bool, float32: bool,
             **extra) -> TreeEnsemble:
    """Concatenate per-tree arrays (local child indices) into one TreeEnsemble.

    A tree is a dict of the node arrays named in ``TreeEnsemble`` (``value`` of shape ``(nodes, k)``);
    optional per-node entries: ``categorical`` (bool), ``cat_left`` / ``cat_right`` (a list of
    category arrays, one per node), ``cat_other_left`` (bool), and ``linear`` (a list of
    ``(features, coefficients)`` per node) with ``fallback`` ``(nodes, k)``. ``extra`` goes to the
    ensemble's keyword fields (``output``, ``feature_names``, ``category_maps``, ...).
    """
    offset, roots, parts = 0, [], {key: [] for key in _ARRAY_KEYS}
    cat_nodes, cat_left, cat_right, cat_other = [], [], [], []
    lin_ptr, lin_feat, lin_coeff, lin_fallback = [0], [], [], []
    any_cat = any("categorical" in t for t in trees)
    any_linear = any("linear" in t for t in trees)
    for t in trees:
        size = len(t["feature"])
        roots.append(offset)
        for key in _ARRAY_KEYS:
            arr = np.asarray(t[key])
            if key in ("left", "right"):
                arr = np.where(arr >= 0, arr + offset, -1)
            parts[key].append(arr)
        if any_cat:
            flags = np.asarray(t.get("categorical", np.zeros(size, bool)), dtype=bool)
            cat_nodes.append(flags)
            cat_other.append(np.asarray(t.get("cat_other_left", np.zeros(size, bool)), dtype=bool))
            for store, name in ((cat_left, "cat_left"), (cat_right, "cat_right")):
                for node in np.flatnonzero(flags):
                    cats = np.asarray(t.get(name, {}).get(int(node), []), dtype=np.int64)
                    store.append(((node + offset) << 32) | cats)
        if any_linear:
            terms = t.get("linear", {})
            for node in range(size):
                feats, coeffs = terms.get(node, ((), ()))
                lin_feat.extend(int(f) for f in feats)
                lin_coeff.extend(float(c) for c in coeffs)
                lin_ptr.append(len(lin_feat))
            lin_fallback.append(np.asarray(t.get("fallback", t["value"]), dtype=float).reshape(size, k))
        offset += size
    value = np.concatenate(parts["value"]).reshape(offset, k)
    ens = TreeEnsemble(
        feature=np.concatenate(parts["feature"]).astype(np.int64),
        threshold=np.concatenate(parts["threshold"]).astype(float),
        left=np.concatenate(parts["left"]).astype(np.int64),
        right=np.concatenate(parts["right"]).astype(np.int64),
        default_left=np.concatenate(parts["default_left"]).astype(bool),
        missing=np.concatenate(parts["missing"]).astype(np.int8),
        cover=np.concatenate(parts["cover"]).astype(float),
        value=value.astype(float),
        roots=np.asarray(roots, dtype=np.int64),
        base=np.asarray(base, dtype=float).reshape(k),
        n_features=int(n_features), strict=strict, float32=float32, **extra,
    )
    if any_cat:
        ens.categorical = np.concatenate(cat_nodes)
        ens.cat_other_left = np.concatenate(cat_other)
        ens.cat_left = np.sort(np.concatenate(cat_left)) if cat_left else np.zeros(0, np.int64)
        ens.cat_right = np.sort(np.concatenate(cat_right)) if cat_right else np.zeros(0, np.int64)
    if any_linear:
        ens.linear = LinearLeaves(np.asarray(lin_ptr, dtype=np.int64), np.asarray(lin_feat, dtype=np.int64),
                                  np.asarray(lin_coeff, dtype=float), np.concatenate(lin_fallback))
    return ens
