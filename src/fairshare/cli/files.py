"""The command line's files: paths checked before any work, CSV tables, text files, row selections.

Outputs are checked before anything runs: their folder exists, none of them is an input of the command, none
overwrites an existing file unless ``--overwrite`` is given. Inputs are read whole and checked: a numeric column
holding a word is named with its row, a row selection past the end of the file is refused, never clipped.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

__all__ = ["check_paths", "read_csv", "read_texts", "parse_rows", "parse_partition", "aligned"]


def check_paths(inputs: dict[str, Any], outputs: dict[str, Any], overwrite: bool = False) -> None:
    """Refuse, before any work, an output (``{flag: path}``) in a folder that does not exist, one that is also an
    input or another output, and one that exists already unless ``overwrite``.

    Examples
    --------
    >>> check_paths({"--data": "rows.csv"}, {"--out": "rows.csv"})
    Traceback (most recent call last):
    ...
    ValueError: --out rows.csv is the --data file: the output would overwrite its input; write it elsewhere
    """
    given_in = {flag: Path(p) for flag, p in inputs.items() if p is not None}
    given_out = {flag: Path(p) for flag, p in outputs.items() if p is not None}
    seen: dict[Path, str] = {}
    for flag, path in given_out.items():
        _check_suffix(flag, path)
        where = _resolved(path)
        for in_flag, in_path in given_in.items():
            if where == _resolved(in_path) or (path.exists() and in_path.exists() and os.path.samefile(path, in_path)):
                raise ValueError(f"{flag} {path} is the {in_flag} file: the output would overwrite its input; "
                                 "write it elsewhere")
        if where in seen:
            raise ValueError(f"{flag} {path} is also the {seen[where]} file: give each output its own file")
        seen[where] = flag
        folder = where.parent
        if not folder.is_dir():
            raise ValueError(f"{flag} {path}: the folder {str(folder)!r} does not exist")
        if not os.access(folder, os.W_OK):
            raise ValueError(f"{flag} {path}: the folder {str(folder)!r} is not writable")
        if path.is_dir():
            raise ValueError(f"{flag} {path} is a folder; give a file name")
        if path.exists() and not overwrite:
            raise ValueError(f"{flag} {path} exists already; pass --overwrite to replace it, or write elsewhere")


def _check_suffix(flag: str, path: Path) -> None:
    """Refuse an output whose writer would add or not understand its suffix: ``np.save`` appends ``.npy`` (the
    file written would not be the one checked), matplotlib appends ``.png`` to a name without one and refuses a
    suffix it cannot write (after the other outputs were written)."""
    suffix = path.suffix.lower()
    if flag == "--pixels" and suffix != ".npy":
        raise ValueError(f"--pixels {path}: the pixels' values are written as .npy; give a name ending in .npy")
    if flag == "--plot":
        from matplotlib.figure import Figure

        formats = sorted(Figure().canvas.get_supported_filetypes())
        if suffix.lstrip(".") not in formats:
            raise ValueError(f"--plot {path}: give a name ending in one of the image formats "
                             f"{', '.join('.' + f for f in formats)}")


def _resolved(path: Path) -> Path:
    return Path(os.path.abspath(os.path.realpath(path)))


def _check_fields(path: str, flag: str) -> None:
    """Refuse a header that names a column twice (pandas reads the second as ``name.1``, a column no model knows,
    or one that silently stands for another) and a row with more or fewer fields than the header, naming its line:
    pandas reads one field more as the row's index (every value shifted by a column, the shape R's ``write.table``
    gives with row names) and one fewer as a missing last value."""
    import csv

    with open(path, encoding="utf-8-sig", newline="") as fh:
        reader = csv.reader(fh)
        header = next(reader, [])
        twice = next((name for name in header if name and header.count(name) > 1), None)
        if twice is not None:
            fields = [str(i + 1) for i, name in enumerate(header) if name == twice]
            raise ValueError(f"{flag} {path}: the header names column {twice!r} {len(fields)} times (fields "
                             f"{', '.join(fields[:-1])} and {fields[-1]}); give each column its own name")
        for row in reader:
            if row and len(row) != len(header):
                raise ValueError(f"{flag} {path}: line {reader.line_num} has {len(row)} fields where the header has "
                                 f"{len(header)}")


def read_csv(path: str, flag: str) -> Any:
    """A CSV file as a DataFrame; a file that is not CSV, has no rows, names a column twice, or holds a word in a
    column of numbers is refused naming ``flag``, the column and the row.

    Examples
    --------
    >>> import tempfile, os
    >>> with tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False) as fh:
    ...     _ = fh.write("a,b\\n1,2\\n3,oops\\n4,5\\n")
    >>> read_csv(fh.name, "--data")                    # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: --data ...: column 'b' holds 'oops' in row 1 where its other rows hold numbers
    >>> with open(fh.name, "w") as out:
    ...     _ = out.write("a,b,a\\n1,2,3\\n")
    >>> read_csv(fh.name, "--data")                    # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: --data ...: the header names column 'a' 2 times (fields 1 and 3); give each column its own name
    >>> os.remove(fh.name)
    """
    import pandas as pd

    try:
        frame = pd.read_csv(path)
    except FileNotFoundError:
        raise OSError(f"{flag} {path}: no such file") from None
    except IsADirectoryError:
        raise OSError(f"{flag} {path} is a folder, not a CSV file") from None
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise ValueError(f"{flag} {path}: not a readable CSV file ({str(exc).splitlines()[0]})") from None
    if frame.empty:
        raise ValueError(f"{flag} {path}: no rows")
    _check_fields(path, flag)
    for column in frame.columns:
        values = frame[column]
        if values.dtype != object and str(values.dtype) not in ("string", "str"):
            continue
        numbers = pd.to_numeric(values, errors="coerce")
        words = numbers.isna() & values.notna()
        if words.any() and numbers.notna().sum() >= words.sum():
            row = int(words.to_numpy().nonzero()[0][0])
            raise ValueError(f"{flag} {path}: column {str(column)!r} holds {values.iloc[row]!r} in row {row} where "
                             "its other rows hold numbers")
    return frame


def read_texts(path: str) -> list[str]:
    r"""The texts of a file, one per line, split only at ``\n`` and ``\r\n`` (a form feed or U+2028 stays inside
    its text), so text ``i`` is line ``i`` (counted from 0; an empty line is an empty text). A ``.jsonl`` file holds
    one JSON string (or object with a ``text`` field) per line; in any other file ``\n`` written in a line stands
    for a line break.

    Examples
    --------
    >>> import tempfile, os
    >>> with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False, newline="") as fh:
    ...     _ = fh.write("free prize\\nnow\r\nsee\fyou\u2028soon\n")
    >>> read_texts(fh.name)
    ['free prize\nnow', 'see\x0cyou\u2028soon']
    >>> os.remove(fh.name)
    """
    import json

    try:
        with open(path, encoding="utf-8-sig", newline="") as fh:                 # a BOM is no token
            content = fh.read()
    except FileNotFoundError:
        raise OSError(f"--texts {path}: no such file") from None
    except IsADirectoryError:
        raise OSError(f"--texts {path} is a folder, not a file of texts") from None
    except UnicodeDecodeError as exc:
        raise ValueError(f"--texts {path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    lines = content.split("\n")
    if lines and lines[-1] == "":
        lines.pop()                                         # the file's last line break ends the last text
    lines = [line[:-1] if line.endswith("\r") else line for line in lines]
    if not any(line.strip() for line in lines):
        raise ValueError(f"--texts {path}: no texts in the file")
    if not path.endswith(".jsonl"):
        return [line.replace("\\n", "\n") for line in lines]
    texts = []
    for number, line in enumerate(lines):
        if not line.strip():
            texts.append("")
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError:
            raise ValueError(f"--texts {path}: line {number + 1} is not JSON") from None
        item = item.get("text") if isinstance(item, dict) else item
        if not isinstance(item, str):
            raise ValueError(f"--texts {path}: line {number + 1} holds no text (a JSON string or {{\"text\": ...}})")
        texts.append(item)
    return texts


def parse_rows(text: str | None, total: int, what: str = "rows") -> list[int]:
    """``--rows``: ``10``, ``0:100``, ``5:`` or ``:20`` as positions, refused when they run past the ``total``
    rows (never clipped).

    Examples
    --------
    >>> parse_rows("1:3", 5), parse_rows(None, 2)
    ([1, 2], [0, 1])
    >>> parse_rows("7", 5)
    Traceback (most recent call last):
    ...
    ValueError: --rows 7 is past the end: there are 5 rows (0..4)
    """
    if text is None:
        return list(range(total))
    try:
        if ":" in text:
            a, b = text.split(":", 1)
            start, stop = int(a) if a.strip() else 0, int(b) if b.strip() else total
        else:
            start = int(text)
            stop = start + 1
    except ValueError:
        raise ValueError(f"--rows must look like 10, 0:100 or 5: (got {text!r})") from None
    if start < 0 or stop < 0:
        raise ValueError(f"--rows takes positions from 0, got {text!r}")
    if start >= total or stop > total:
        raise ValueError(f"--rows {text} is past the end: there are {total} {what} (0..{total - 1})")
    if stop <= start:
        raise ValueError(f"--rows {text} selects no {what}")
    return list(range(start, stop))


def parse_partition(text: str | None) -> Any:
    """``--partition``: correlation, sentences, or a JSON list of blocks.

    Examples
    --------
    >>> parse_partition("[[0, 1], [2]]")
    [[0, 1], [2]]
    """
    import json

    if text is None or text in ("correlation", "sentences"):
        return text
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        raise ValueError(f"--partition must be correlation, sentences or a JSON list of blocks such as "
                         f"[[0,1],[2,3]], got {text!r}") from None


def aligned(frame: Any, model: Any, flag: str, path: str, reference: list[str] | None = None) -> Any:
    """``frame``'s columns matched by name to the model's features (or to ``reference``), naming the flag."""
    from .._core.tables import aligned as align, model_columns

    names, source = (reference, "the columns of --data") if reference is not None else model_columns(model)
    if names is None:
        n = getattr(model, "n_features_in_", None)
        if n and frame.shape[1] != n:                   # (a catboost model read back from a file says 0)
            raise ValueError(f"{flag} {path} has {frame.shape[1]} columns but the model takes {n} features")
        return frame
    return align(frame, names, f"{flag} {path}", source)
