"""Progress for every door, one type: ``progress=True`` (a bar), ``False`` (nothing) or a callable.

A callable is called as ``progress(done, total, relative_error)``: ``done`` and ``total`` count the door's
unit of work (evaluations for ``fs.estimate`` and ``fs.value_data``, rows for ``fs.explain``) and
``relative_error`` is ``||stderr|| / ||values||`` of the last round, or None before the first.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["Reporter", "reporter", "reporting"]


class Reporter:
    """Passes progress to the user's callable or to a tqdm bar; ``close()`` ends the bar.

    Examples
    --------
    >>> seen = []
    >>> r = reporter(lambda done, total, err: seen.append((done, total, err)), "explaining", "row")
    >>> r(1, 3, None); r.close(); seen
    [(1, 3, None)]
    """

    def __init__(self, target: Any, desc: str, unit: str) -> None:
        self.target, self.desc, self.unit = target, desc, unit
        self.bar: Any = None

    def __call__(self, done: int, total: int, relative_error: float | None = None) -> None:
        if self.target is not True:
            self.target(done, total, relative_error)
            return
        if self.bar is None:
            from tqdm.auto import tqdm

            self.bar = tqdm(total=total, desc=self.desc, unit=self.unit, leave=False)
        self.bar.total = total
        self.bar.n = done
        if relative_error is not None:
            self.bar.set_postfix_str(f"relative error ~{relative_error:.3g}", refresh=False)
        self.bar.refresh()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


def reporter(progress: Any, desc: str, unit: str) -> Reporter | None:
    """A :class:`Reporter` for a checked ``progress`` argument, or None when it is False.

    Examples
    --------
    >>> reporter(False, "estimating", "evaluation") is None
    True
    """
    if progress is False or progress is None:
        return None
    return Reporter(progress, desc, unit)


@contextmanager
def reporting(progress: Any, desc: str, unit: str) -> Iterator[Reporter | None]:
    """:func:`reporter` for the code inside, its bar closed however that code ends.

    Examples
    --------
    >>> with reporting(False, "estimating", "evaluation") as report:
    ...     report is None
    True
    """
    report = reporter(progress, desc, unit)
    try:
        yield report
    finally:
        if report is not None:
            report.close()
