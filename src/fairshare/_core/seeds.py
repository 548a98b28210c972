"""The one seed policy: every random stream of a run comes from the user's ``seed`` through these functions.

- :func:`generator`: the run's ``numpy.random.Generator`` (an int, a SeedSequence, a Generator or None);
- :func:`item_seeds`: one :class:`numpy.random.SeedSequence` per item (row, text, fit block), spawned from the
  seed, so an item's values do not depend on which thread, worker or resumed run computes it; :func:`item_root`
  and :func:`item_seed` give item ``i``'s alone (a row of a distributed DataFrame, where no process knows them all);
- :func:`streams`: the independent streams one estimate splits its generator into (sampler, solver);
- :func:`fresh`: the same SeedSequence again (one that has spawned children would give others);
- :func:`integer_seed`: an integer drawn from a stream, the seed of a stream another library or a compiled kernel
  makes (a torch generator, scikit-learn's ``random_state``, a counter-based generator in compiled code);
- :func:`seed_key`: what tells one seed from another in a cache's key (a Generator by its state).

Same seed, same values, whatever the scheduler: local, threads, Dask, a cache that resumes.
"""

from __future__ import annotations

import json
import numbers

import numpy as np

__all__ = ["SeedLike", "generator", "item_seeds", "item_root", "item_seed", "streams", "fresh", "integer_seed",
           "seed_key"]

SeedLike = int | np.random.Generator | np.random.SeedSequence | None


def generator(seed: SeedLike, name: str = "seed") -> np.random.Generator:
    """``seed`` as a ``numpy.random.Generator`` (a Generator is used as it is); errors name ``name``.

    Examples
    --------
    >>> bool(generator(0).integers(10) == generator(0).integers(10))
    True
    """
    if isinstance(seed, np.random.Generator):
        return seed
    if seed is None or isinstance(seed, np.random.SeedSequence):
        return np.random.default_rng(seed)
    if isinstance(seed, numbers.Integral) and not isinstance(seed, bool):
        if seed < 0:
            raise ValueError(f"{name} must be a non-negative integer, got {seed}")
        return np.random.default_rng(int(seed))
    raise TypeError(f"{name} must be None, an int or a numpy Generator, got {type(seed).__name__}")


def item_seeds(seed: SeedLike, n: int) -> list[np.random.SeedSequence]:
    """One seed per item of a run (rows of a table, texts, fits): spawned from ``seed`` (a Generator gives a root
    drawn from it once).

    Examples
    --------
    >>> a, b = item_seeds(3, 2), item_seeds(3, 2)
    >>> bool(np.random.default_rng(a[1]).random() == np.random.default_rng(b[1]).random())
    True
    """
    root = seed.integers(2**63) if isinstance(seed, np.random.Generator) else _entropy(seed)
    return np.random.SeedSequence(root).spawn(n)


def _entropy(seed: SeedLike) -> int | None:
    """An int or None as it is; a SeedSequence's 128 bits of state (it is not spawned from: the same
    SeedSequence gives the same items every time)."""
    if isinstance(seed, np.random.SeedSequence):
        return int.from_bytes(seed.generate_state(4, np.uint32).tobytes(), "little")
    return seed


def item_root(seed: SeedLike) -> int:
    """The root entropy :func:`item_seeds` spawns from: the int given, one draw of a Generator, fresh for None.

    Examples
    --------
    >>> item_root(7)
    7
    """
    if isinstance(seed, np.random.Generator):
        return int(seed.integers(2**63))
    return int(np.random.SeedSequence(_entropy(seed)).entropy)


def item_seed(root: int, i: int) -> np.random.SeedSequence:
    """Item ``i``'s seed of a run whose root is ``root`` (:func:`item_root`): ``item_seeds(seed, n)[i]`` for any
    ``n > i``, computed without the others.

    Examples
    --------
    >>> a, b = item_seeds(3, 5)[4], item_seed(item_root(3), 4)
    >>> bool(np.all(a.generate_state(4) == b.generate_state(4)))
    True
    """
    return np.random.SeedSequence(root, spawn_key=(int(i),))


def streams(rng: np.random.Generator, k: int) -> list[np.random.Generator]:
    """``k`` independent generators split from ``rng`` (an estimate's sampler and solver streams).

    Examples
    --------
    >>> len(streams(generator(0), 2))
    2
    """
    return rng.spawn(k)


def fresh(seed: np.random.SeedSequence) -> np.random.SeedSequence:
    """The same seed again, as it was before spawning any child.

    Examples
    --------
    >>> s = item_seeds(0, 1)[0]; _ = s.spawn(1)
    >>> fresh(s).spawn(1)[0].entropy == s.entropy
    True
    """
    return np.random.SeedSequence(seed.entropy, spawn_key=seed.spawn_key)


def integer_seed(rng: np.random.Generator, high: int) -> int:
    """An integer in ``[0, high)`` drawn from ``rng`` (one draw of its stream): the seed of a stream that another
    library or a compiled kernel makes, so that it too follows from the run's seed.

    Examples
    --------
    >>> integer_seed(generator(0), 2**62) == integer_seed(generator(0), 2**62)
    True
    """
    return int(rng.integers(high))


def seed_key(seed: SeedLike) -> str:
    """What tells ``seed``'s random streams from another seed's, for a cache's key: an int, a SeedSequence or None
    as written; a Generator by the state of its bit generator, from which :func:`item_seeds` draws the run's root
    (every Generator is written 'Generator(PCG64)', so two of other states would share a key and a cache).

    Examples
    --------
    >>> seed_key(np.random.default_rng(0)) == seed_key(np.random.default_rng(0)), seed_key(3)
    (True, '3')
    >>> seed_key(np.random.default_rng(0)) == seed_key(np.random.default_rng(1))
    False
    """
    if isinstance(seed, np.random.Generator):
        state = json.dumps(seed.bit_generator.state, sort_keys=True, default=lambda a: np.asarray(a).tolist())
        return f"Generator {state}"
    return str(seed)
