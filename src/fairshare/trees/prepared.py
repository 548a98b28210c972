"""A tree model read once: its ensemble, paths and walk layout, cached per model object.

Reading a large ensemble costs far more than explaining one row (0.1 s for 300 deep xgboost
trees), so :func:`prepared` keeps what was read for as long as the model object lives, and
re-reads it when the model was refitted: the cache entry remembers the fitted state it was read
from (its library's reader says what: the trees' containers by identity, the number of boosting
rounds, the best iteration), and a new fit replaces them. ``TreeGame(model, x)`` in a loop over
rows costs only the rows.
"""

from __future__ import annotations

import hashlib
import threading
import weakref
from functools import cached_property
from typing import Any, NamedTuple

import numpy as np

from .ensemble import TreeEnsemble, UnreadableSplits
from .paths import LeafPaths, leaf_paths
from .readers import check_ensemble, fit_state, read_ensemble, settle_ensemble

__all__ = ["Prepared", "prepared", "planned", "verified", "unchecked", "remembered", "forget", "unreadable", "Layout"]

_REMEMBERED_ROW_SETS = 4


class Layout(NamedTuple):
    """Per node: cover ratio to its parent, parent, factor slot of the parent's feature on the path,
    whether that feature repeats on the path; and the most distinct features on one path."""

    ratio: np.ndarray
    parent: np.ndarray
    slot: np.ndarray
    repeat: np.ndarray
    distinct_depth: int


class Prepared:
    """An ensemble with what the exact-value walks need, shared by every row explained."""

    def __init__(self, ensemble: TreeEnsemble) -> None:
        self.ensemble = ensemble
        self.max_depth = ensemble.depth()
        self._decided: dict = {}
        self.links: dict = {}          # the output scale's link, checked once against the model's predict_proba

    def decisions(self, rows: np.ndarray) -> np.ndarray:
        """``ensemble.decisions(rows)``, remembered for the last few row sets (a background explained against
        in a loop over rows is decided once)."""
        rows = np.ascontiguousarray(rows, dtype=float)
        key = (rows.shape, hashlib.blake2b(rows.tobytes(), digest_size=16).digest())
        hit = self._decided.get(key)
        if hit is None:
            hit = self.ensemble.decisions(rows)
            if len(self._decided) >= _REMEMBERED_ROW_SETS:
                self._decided.pop(next(iter(self._decided)))
            self._decided[key] = hit
        return hit

    @cached_property
    def paths(self) -> LeafPaths:
        """Root-to-leaf paths (the game's coalition values; semivalues given by weights only)."""
        return leaf_paths(self.ensemble)

    @cached_property
    def ratios(self) -> np.ndarray:
        return self.paths.cover_ratios()

    @cached_property
    def expected_value(self) -> np.ndarray:
        """The path-dependent game's value at the empty coalition: each leaf weighted by its share of the
        training cover along its path, ``(k,)``."""
        paths = self.paths
        weight = self.ratios.prod(axis=1)                               # every factor at its cover ratio
        return self.ensemble.base + weight @ paths.value

    @cached_property
    def tree_out(self) -> np.ndarray:
        return self.ensemble.tree_outputs()

    @cached_property
    def layout(self) -> Layout:
        """What the compiled walks need besides the ensemble's arrays."""
        from .kernels import path_layout

        ens = self.ensemble
        slot, repeat, n_slots, parent = path_layout(ens.left, ens.right, ens.feature, ens.roots, self.max_depth)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(parent >= 0, ens.cover / ens.cover[np.maximum(parent, 0)], 1.0)
        ratio = np.where(np.isfinite(ratio), ratio, 0.0)
        return Layout(ratio, parent, slot, repeat, max(1, int(n_slots.max(initial=0))))


def _same(a: tuple, b: tuple) -> bool:
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if isinstance(x, (int, float, str, type(None), type)) and isinstance(y, (int, float, str, type(None), type)):
            if x != y and not (isinstance(x, float) and isinstance(y, float) and np.isnan(x) and np.isnan(y)):
                return False
        elif x is not y:
            return False
    return True


# (id(model), kind) -> (weak reference to the model, fit state, what was built): keyed by identity, since some models
# (catboost's) define __eq__ without __hash__; an entry leaves with its model
_CACHE: dict[tuple, tuple] = {}
# reentrant: a model collected while the lock is held (a garbage cycle freed by any allocation) drops its entries
# through its weak reference's callback on the same thread, which takes the lock again
_LOCK = threading.RLock()


def _drop(key: tuple, ref: weakref.ref) -> None:
    if _CACHE is None or _LOCK is None:          # a model collected at interpreter shutdown: nothing left to drop
        return
    with _LOCK:
        entry = _CACHE.get(key)
        if entry is not None and entry[0] is ref:
            del _CACHE[key]


def remembered(model: Any, kind: str, build: Any) -> Any:
    """``build(model)``, kept per (model, ``kind``) while ``model`` lives and is unchanged (refitting it is noticed).
    A reading that fails with :class:`UnreadableSplits` is kept too, so asking again costs nothing.

    Examples
    --------
    >>> from sklearn.tree import DecisionTreeRegressor
    >>> model = DecisionTreeRegressor(max_depth=1).fit(np.arange(8.0)[:, None], np.arange(8.0))
    >>> remembered(model, "depth", lambda m: m.get_depth()), remembered(model, "depth", lambda m: -1)
    (1, 1)
    """
    state = fit_state(model)
    key = (id(model), kind)
    with _LOCK:
        entry = _CACHE.get(key)
        hit = entry is not None and entry[0]() is model and _same(entry[1], state)
    if hit:
        result = entry[2]
    else:
        try:
            result = build(model)
        except UnreadableSplits as exc:
            result = exc
        try:
            ref = weakref.ref(model, lambda r, key=key: _drop(key, r))
        except TypeError:                        # not weakly referenceable: built every time
            ref = None
        if ref is not None:
            with _LOCK:
                _CACHE[key] = (ref, state, result)
    if isinstance(result, UnreadableSplits):
        raise UnreadableSplits(str(result))
    return result


def planned(model: Any) -> Prepared:
    """The model read into a :class:`Prepared` ensemble *without* any model call (:func:`unchecked`: the reading not
    yet checked, an xgboost or lightgbm base not yet found), cached while ``model`` lives and unchanged: what a door
    or a game plans on. The same object :func:`prepared` returns once it is checked, so whatever it caches (decisions,
    paths, the probability link) is shared; :func:`verified` checks it before any value is computed.

    Examples
    --------
    >>> from sklearn.tree import DecisionTreeRegressor
    >>> X = np.arange(20.0).reshape(10, 2)
    >>> model = DecisionTreeRegressor(max_depth=2).fit(X, X[:, 0])
    >>> plan = planned(model)
    >>> plan.ensemble.n_features, prepared(model) is plan
    (2, True)
    """
    if isinstance(model, Prepared):
        return model
    if isinstance(model, TreeEnsemble):
        return Prepared(model)
    return remembered(model, "ensemble", lambda m: Prepared(unchecked(m)))


def prepared(model: Any) -> Prepared:
    """The model read into a :class:`Prepared` ensemble and checked against the model's own predictions (once),
    cached while ``model`` lives and unchanged: :func:`planned`'s object, completed and checked.

    Examples
    --------
    >>> from sklearn.tree import DecisionTreeRegressor
    >>> X = np.arange(20.0).reshape(10, 2)
    >>> model = DecisionTreeRegressor(max_depth=2).fit(X, X[:, 0])
    >>> prepared(model) is prepared(model)
    True
    >>> first = prepared(model); _ = model.fit(X, X[:, 1])
    >>> prepared(model) is first                     # refitted: read again
    False
    """
    prep = planned(model)
    if not isinstance(model, (Prepared, TreeEnsemble)):
        remembered(model, "checked", lambda m: check_ensemble(m, prep.ensemble) is prep.ensemble)
    return prep


def verified(model: Any, prep: Prepared) -> Prepared:
    """``prep``, a reading of ``model`` made without a model call (:func:`planned`, a grouping of its columns, or one
    sent to another process), ready for values: its base found in place where the reading left it (one row of
    xgboost or lightgbm) and the model's reading checked against its predictions (once per model: cached). A door
    calls it after every argument is checked, before the first value.

    Examples
    --------
    >>> from sklearn.tree import DecisionTreeRegressor
    >>> model = DecisionTreeRegressor(max_depth=1).fit(np.arange(8.0)[:, None], np.arange(8.0))
    >>> verified(model, planned(model)) is prepared(model)
    True
    """
    if isinstance(model, (Prepared, TreeEnsemble)):
        return prep
    ens = prep.ensemble
    settle_ensemble(model, getattr(ens, "columns", None) or ens)     # a grouped ensemble shares its columns' base
    prepared(model)
    return prep


def unchecked(model: Any) -> TreeEnsemble:
    """The trees of ``model`` read *without* any model call (neither the check against its predictions nor the one
    row that finds an xgboost or lightgbm base: NaN until :func:`verified`), kept while the model lives and is
    unchanged; a door plans on it and checks the reading (``prepared(model)``, cached, which checks this reading
    rather than reading the trees again) before it computes any value.

    Examples
    --------
    >>> from sklearn.tree import DecisionTreeRegressor
    >>> model = DecisionTreeRegressor(max_depth=1).fit(np.arange(8.0)[:, None], np.arange(8.0))
    >>> unchecked(model).n_features, unchecked(model) is unchecked(model)
    (1, True)
    """
    return remembered(model, "ensemble, unchecked", lambda m: read_ensemble(m, check=False, settle=False))


def unreadable(model: Any) -> str | None:
    """Why the trees of ``model`` cannot be read (splits on several features at once, e.g. catboost's CTRs of
    feature combinations: :func:`fairshare.trees.classes.class_explanation` explains those), or None when they
    can; other reading errors are raised. No model call: only a reader refuses such splits, never the check.

    Examples
    --------
    >>> from sklearn.tree import DecisionTreeRegressor
    >>> X = np.arange(20.0).reshape(10, 2)
    >>> unreadable(DecisionTreeRegressor(max_depth=2).fit(X, X[:, 0])) is None
    True
    """
    if isinstance(model, (Prepared, TreeEnsemble)):
        return None
    try:
        unchecked(model)
    except UnreadableSplits as exc:
        return str(exc)
    return None


def forget(model: Any = None) -> None:
    """Drop the cached reading of ``model`` (of every model when None), e.g. to free its memory.

    Examples
    --------
    >>> forget()
    """
    with _LOCK:
        if model is None:
            _CACHE.clear()
        else:
            for key in [k for k in _CACHE if k[0] == id(model)]:
                _CACHE.pop(key, None)
