"""catboost's hash of a category: the low 32 bits of CityHash64 (version 1.0) of the value's string.

catboost stores no category strings in a model: a one-hot split compares the hash of a row's
category with one value, so reading a row's category the way the model does needs this hash. It is
CityHash 1.0.2 (Pike and Alakuijala, 2011), whose results differ from later CityHash releases;
:func:`category_hash` is checked against the hashes catboost itself writes for a pool's categories
(``save_model(..., format="json", pool=...)``) in the tests, for strings of every length class.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["category_hash", "category_string", "hash_codes"]

_M = (1 << 64) - 1
_K0 = 0xC3A5C85C97CB3127
_K1 = 0xB492B66FBE98F273
_K2 = 0x9AE16A3B2F90404F
_K3 = 0xC949D7C7509E6557
_KMUL = 0x9DDFEA08EB382D69


def _u64(b: bytes, i: int) -> int:
    return int.from_bytes(b[i:i + 8], "little")


def _u32(b: bytes, i: int) -> int:
    return int.from_bytes(b[i:i + 4], "little")


def _rot(v: int, s: int) -> int:
    return v if s == 0 else ((v >> s) | (v << (64 - s))) & _M


def _mix(v: int) -> int:
    return v ^ (v >> 47)


def _len16(u: int, v: int) -> int:
    a = ((u ^ v) * _KMUL) & _M
    a ^= a >> 47
    b = ((v ^ a) * _KMUL) & _M
    b ^= b >> 47
    return (b * _KMUL) & _M


def _len0to16(s: bytes) -> int:
    n = len(s)
    if n > 8:
        a, b = _u64(s, 0), _u64(s, n - 8)
        return _len16(a, _rot((b + n) & _M, n)) ^ b
    if n >= 4:
        return _len16((n + (_u32(s, 0) << 3)) & _M, _u32(s, n - 4))
    if n > 0:
        y = s[0] + (s[n >> 1] << 8)
        z = n + (s[n - 1] << 2)
        return (_mix(((y * _K2) ^ (z * _K3)) & _M) * _K2) & _M
    return _K2


def _len17to32(s: bytes) -> int:
    n = len(s)
    a = (_u64(s, 0) * _K1) & _M
    b = _u64(s, 8)
    c = (_u64(s, n - 8) * _K2) & _M
    d = (_u64(s, n - 16) * _K0) & _M
    return _len16((_rot((a - b) & _M, 43) + _rot(c, 30) + d) & _M, (a + _rot(b ^ _K3, 20) - c + n) & _M)


def _len33to64(s: bytes) -> int:
    n = len(s)
    z = _u64(s, 24)
    a = (_u64(s, 0) + (n + _u64(s, n - 16)) * _K0) & _M
    b = _rot((a + z) & _M, 52)
    c = _rot(a, 37)
    a = (a + _u64(s, 8)) & _M
    c = (c + _rot(a, 7)) & _M
    a = (a + _u64(s, 16)) & _M
    vf, vs = (a + z) & _M, (b + _rot(a, 31) + c) & _M
    a = (_u64(s, 16) + _u64(s, n - 32)) & _M
    z = _u64(s, n - 8)
    b = _rot((a + z) & _M, 52)
    c = _rot(a, 37)
    a = (a + _u64(s, n - 24)) & _M
    c = (c + _rot(a, 7)) & _M
    a = (a + _u64(s, n - 16)) & _M
    wf, ws = (a + z) & _M, (b + _rot(a, 31) + c) & _M
    r = _mix(((vf + ws) * _K2 + (wf + vs) * _K0) & _M)
    return (_mix((r * _K0 + vs) & _M) * _K2) & _M


def _weak32(s: bytes, i: int, a: int, b: int) -> tuple[int, int]:
    w, x, y, z = _u64(s, i), _u64(s, i + 8), _u64(s, i + 16), _u64(s, i + 24)
    a = (a + w) & _M
    b = _rot((b + a + z) & _M, 21)
    c = a
    a = (a + x + y) & _M
    b = (b + _rot(a, 44)) & _M
    return (a + z) & _M, (b + c) & _M


def city_hash64(s: bytes) -> int:
    """CityHash64, version 1.0.2, of a byte string.

    Examples
    --------
    >>> hex(city_hash64(b""))
    '0x9ae16a3b2f90404f'
    """
    n = len(s)
    if n <= 16:
        return _len0to16(s)
    if n <= 32:
        return _len17to32(s)
    if n <= 64:
        return _len33to64(s)
    x = _u64(s, 0)
    y = _u64(s, n - 16) ^ _K1
    z = _u64(s, n - 56) ^ _K0
    v = _weak32(s, n - 64, n, y)
    w = _weak32(s, n - 32, (n * _K1) & _M, _K0)
    z = (z + _mix(v[1]) * _K1) & _M
    x = (_rot((z + x) & _M, 39) * _K1) & _M
    y = (_rot(y, 33) * _K1) & _M
    pos, left = 0, (n - 1) & ~63
    while True:
        x = (_rot((x + y + v[0] + _u64(s, pos + 16)) & _M, 37) * _K1) & _M
        y = (_rot((y + v[1] + _u64(s, pos + 48)) & _M, 42) * _K1) & _M
        x ^= w[1]
        y ^= v[0]
        z = _rot(z ^ w[0], 33)
        v = _weak32(s, pos, (v[1] * _K1) & _M, (x + w[0]) & _M)
        w = _weak32(s, pos + 32, (z + w[1]) & _M, y)
        z, x = x, z
        pos += 64
        left -= 64
        if left == 0:
            break
    return _len16((_len16(v[0], w[0]) + _mix(y) * _K1 + z) & _M, (_len16(v[1], w[1]) + x) & _M)


def category_string(value: Any) -> str:
    """The string catboost hashes for a categorical value: strings as they are, integers in decimal.

    catboost refuses other values (floats, missing values) in a categorical feature, and so does this.

    Examples
    --------
    >>> category_string("red"), category_string(3)
    ('red', '3')
    """
    if isinstance(value, str):
        return value
    if isinstance(value, bytes):
        return value.decode("utf-8")
    if hasattr(value, "dtype") and getattr(value.dtype, "kind", "") in "biu" or isinstance(value, int):
        return str(int(value))
    raise ValueError(f"catboost's categorical features take strings or integers, got {value!r} "
                     f"({type(value).__name__}); convert the column to strings (missing values too, e.g. 'none')")


def category_hash(value: Any) -> int:
    """catboost's hash of a categorical value (``CalcCatFeatureHash``): ``CityHash64(str) & 0xffffffff``.

    Examples
    --------
    >>> category_hash("red")
    3052168893
    """
    return city_hash64(category_string(value).encode("utf-8")) & 0xFFFFFFFF


def hash_codes(values: Any, hashes: np.ndarray, name: str, column: str) -> np.ndarray:
    """catboost category codes of one column: the position of each value's hash among ``hashes`` (those the model
    splits on), ``len(hashes)`` (in no split's set) for any other value. Each distinct value is hashed once.

    Examples
    --------
    >>> hash_codes(["red", "blue", "red"], np.array([category_hash("red")]), "X", "colour")
    array([0., 1., 0.])
    """
    import pandas as pd

    inverse, distinct = pd.factorize(pd.Series(values, dtype=object), use_na_sentinel=True)
    if np.any(inverse < 0):
        raise ValueError(f"{name} column {column!r} has a missing value; catboost takes no missing categories "
                         "(it refuses them too): fill them with a string, e.g. 'none'")
    position = {int(h): i for i, h in enumerate(hashes.tolist())}
    try:
        codes = np.array([position.get(category_hash(v), len(hashes)) for v in distinct], dtype=float)
    except ValueError as exc:
        raise ValueError(f"{name} column {column!r}: {exc}") from None
    return codes[inverse] if inverse.size else np.zeros(0)
