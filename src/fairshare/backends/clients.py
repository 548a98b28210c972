"""What a door's ``client=`` is: :func:`as_backend` tells a Dask client, a Spark session or context and the ray
module apart without importing pyspark or ray unless the object is theirs; :func:`check_client` is the doors'
argument check (the cluster usable now, before any work)."""

from __future__ import annotations

import types
from typing import Any

from .base import KINDS, Backend

__all__ = ["as_backend", "check_client"]


def _is_ray(client: Any) -> bool:
    return isinstance(client, types.ModuleType) and client.__name__ == "ray"


def as_backend(client: Any) -> Backend | None:
    """The :class:`Backend` of a door's ``client`` (None for None); pyspark and ray are imported only for their own
    objects.

    Examples
    --------
    >>> as_backend(3)
    Traceback (most recent call last):
    ...
    TypeError: client must be a dask.distributed.Client, a pyspark SparkSession or SparkContext, or the ray module after ray.init(), or None; got int
    """
    if client is None or isinstance(client, Backend):
        return client
    if _is_ray(client):
        from .ray import RayBackend

        return RayBackend(client)
    if (type(client).__module__ or "").startswith("pyspark."):
        from .spark import SparkBackend

        return SparkBackend(client)
    if hasattr(client, "submit") and hasattr(client, "scatter"):
        from .dask import DaskBackend

        return DaskBackend(client)
    raise TypeError(f"client must be {KINDS}, or None; got {type(client).__name__}")


def check_client(value: Any, name: str = "client") -> Any:
    """A door's ``client``: None, or a cluster :func:`as_backend` knows that can take work now (a stopped
    SparkSession or Ray before ``ray.init()`` raise :class:`BackendError`); returned as given.

    Examples
    --------
    >>> check_client(None) is None
    True
    """
    try:
        backend = as_backend(value)
    except TypeError:
        raise TypeError(f"{name} must be {KINDS}, or None; got {type(value).__name__}") from None
    if backend is not None:
        backend.check()
    return value
