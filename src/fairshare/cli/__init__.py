"""The ``fairshare`` command line: ``methods``, ``demo``, ``explain``, ``explain-generation``, ``value-data``,
``bench``.

Every error is one line on stderr naming the flag (``fairshare: error: --rows 99 is past the end ...``) and exit
status 2; nothing is written before every path and flag has been checked.
"""

from __future__ import annotations

import argparse
import re
import string
import sys
import warnings
from typing import Any

from ..indices.semivalues import INDEX_NAMES
from .basic import add_demo, add_methods
from .bench import add_bench
from .explain import add_explain
from .explain_generation import add_explain_generation
from .files import read_texts
from .value_data import add_value_data

__all__ = ["main", "build_parser", "read_texts"]

#: the doors' names of what a command reads from files, as the command line names it
_READ_FROM = {"X": ("--data {data}", "--images {images}", "--texts {texts}"),
              "background": ("--background {background}",), "X_train": ("--train {train}",),
              "y_train": ("--target {target} of --train {train}",), "X_val": ("--val {val}",),
              "y_val": ("--target {target} of --val {val}",)}
#: the games' names of an argument that the doors (and flags) name otherwise
_ALIASES = {"outputs": "output"}
#: the doors' arguments whose value the flag does not take (``interactions=2``: ``--interactions`` names a file)
_UNSAID = {"interactions"}
_INDEX_HELP = f"one of {', '.join(INDEX_NAMES)}, beta-shapley(a,b) or weighted-banzhaf(w)"


#: the actions a flag may be given more than once to (each time adds)
_REPEATABLE = (argparse._AppendAction, argparse._AppendConstAction, argparse._CountAction, argparse._ExtendAction,
               argparse._HelpAction)


class _OneLineParser(argparse.ArgumentParser):
    """Argument errors as one line on stderr and exit status 2 (no usage dump, no traceback); flags spelled out
    (``--see`` is not ``--seed``) and given once (a second ``--rows`` silently replaced the first)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)            # every parser, the commands' too (parser_class)
        super().__init__(*args, **kwargs)

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:  # type: ignore[override]
        given = list(sys.argv[1:] if args is None else args)
        ends = given.index("--") if "--" in given else len(given)   # after --, no flags
        for action in self._actions:
            if not action.option_strings or isinstance(action, _REPEATABLE):
                continue
            at = [i for i, a in enumerate(given[:ends]) if a.split("=", 1)[0] in action.option_strings
                  and (a in action.option_strings or "=" in a)]
            if len(at) > 1:
                takes = action.nargs != 0                    # store_true and the like take no value
                typed = [given[i] if "=" in given[i] or not takes or i + 1 >= ends else f"{given[i]} {given[i + 1]}"
                         for i in at]
                self.error(f"{given[at[0]].split('=', 1)[0]} is given {len(at)} times ({', '.join(typed)}); give "
                           "it once")
        return super().parse_known_args(given, namespace)

    def error(self, message: str) -> None:  # type: ignore[override]
        print(f"fairshare: error: {message}", file=sys.stderr)
        raise SystemExit(2)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``fairshare`` command.

    Examples
    --------
    >>> build_parser().parse_args(["methods"]).command
    'methods'
    """
    parser = _OneLineParser(prog="fairshare", description="Shapley, Banzhaf and semivalue attributions.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_OneLineParser)
    add_methods(sub)
    add_demo(sub)
    add_explain(sub, _INDEX_HELP)
    add_explain_generation(sub, _INDEX_HELP)
    add_value_data(sub, _INDEX_HELP)
    add_bench(sub)
    return parser


def one_line(exc: BaseException) -> str:
    """An exception as one line: its first non-empty line (a library's message may start with a line break), or
    its type's name when it says nothing.

    Examples
    --------
    >>> one_line(ValueError("\\nx^\\n  ^"))
    'x^'
    >>> one_line(KeyError())
    'KeyError'
    """
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return lines[0] if lines else type(exc).__name__


def _read_from(name: str, args: argparse.Namespace) -> str | None:
    """How the command line names the door's argument ``name`` where the command read it from a file (else None).

    Examples
    --------
    >>> _read_from("y_val", argparse.Namespace(target="y", val="val.csv"))
    '--target y of --val val.csv'
    >>> _read_from("X", argparse.Namespace(data=None, images=None, texts="t.txt"))
    '--texts t.txt'
    >>> _read_from("X", argparse.Namespace(data=None)) is None
    True
    """
    for form in _READ_FROM.get(name, ()):
        fields = [f[1] for f in string.Formatter().parse(form) if f[1]]
        if all(isinstance(getattr(args, f, None), str) for f in fields):
            return form.format(**{f: getattr(args, f) for f in fields})
    return None


def _file_rows(message: str, args: argparse.Namespace) -> str:
    """A door's message with the numbers of the items it was given (positions in the rows ``--rows`` picked) as
    the file's own: ``row 2`` of X, ``texts[2]`` and ``text 2`` as the file's row, or its line counted from 1.

    Examples
    --------
    >>> picked = argparse.Namespace(texts="t.txt", picked=[5, 6, 7])
    >>> _file_rows("tokenizer found no tokens in texts[2] ('ok')", picked)
    "tokenizer found no tokens in --texts t.txt line 8 ('ok')"
    >>> _file_rows("ModelError: text 1: the model raised ValueError", picked)
    'ModelError: --texts t.txt line 7: the model raised ValueError'
    >>> _file_rows("X holds inf at row 2, column 'b'", argparse.Namespace(data="x.csv", picked=[5, 6, 7]))
    "X holds inf at row 7, column 'b'"
    """
    picked = getattr(args, "picked", None)
    at = (lambda k: picked[int(k)] if picked is not None and int(k) < len(picked) else int(k))
    if isinstance(getattr(args, "texts", None), str):                   # the file's lines, from 1
        message = re.sub(r"texts\[(\d+)\]", lambda m: f"--texts {args.texts} line {at(m.group(1)) + 1}", message)
        message = re.sub(r"^(\w+: )?text (\d+):", lambda m: f"{m.group(1) or ''}--texts {args.texts} line "
                         f"{at(m.group(2)) + 1}:", message)
    elif picked is not None and re.match(r"(\w+: )?X ", message):        # X's rows (images) are the file's
        message = re.sub(r"\b(row|image) (\d+)\b", lambda m: f"{m.group(1)} {at(m.group(2))}", message)
    return message


def _flag(name: str, value: str, args: argparse.Namespace) -> str | None:
    """The door's ``name=value`` as the flag that gives it (``--name value``, the value without Python's quotes),
    or None where the command has no such flag.

    Examples
    --------
    >>> _flag("layout", "'NHWC'", argparse.Namespace(layout=None)), _flag("lam", "0.1", argparse.Namespace())
    ('--layout NHWC', None)
    """
    flag = _ALIASES.get(name, name)
    if flag not in set(vars(args)) - {"func", "command", "picked"}:
        return None
    value = value[1:-1] if len(value) > 1 and value[0] == value[-1] and value[0] in "'\"" else value
    said = value and flag not in _UNSAID
    return f"--{flag.replace('_', '-')}" + (f" {value}" if said else "")


def _in_call(message: str, at: int) -> bool:
    """Whether position ``at`` lies inside the parentheses of a Python call written in ``message``
    (``fs.explain(model.predict, X, background=...)``: advice in Python, not a flag)."""
    opened = message.rfind("(", 0, at)
    return opened > 0 and ")" not in message[opened:at] and (message[opened - 1].isalnum() or
                                                             message[opened - 1] in "._")


def _as_flags(message: str, args: argparse.Namespace) -> str:
    """A door's message as the command line says it: its first word, the door's name of an argument, as the flag
    (``budget=50 ...`` -> ``--budget 50 ...``; ``X ...`` -> ``--data rows.csv ...``), every other ``name=value``
    of an argument the command takes as a flag (``pass layout='NHWC'`` -> ``pass --layout NHWC``) and the files'
    arguments (``X_train`` -> ``--train rows.csv``), its items numbered as in the file (:func:`_file_rows`).

    Examples
    --------
    >>> _as_flags("budget=50 is too small", argparse.Namespace(budget=50))
    '--budget 50 is too small'
    >>> _as_flags("removal: token id 9 is unknown", argparse.Namespace(removal="9"))
    '--removal: token id 9 is unknown'
    >>> _as_flags("texts[2] is empty", argparse.Namespace(texts="t.txt"))
    '--texts t.txt line 3 is empty'
    >>> _as_flags("index='owen' needs partition=: blocks", argparse.Namespace(index="owen", partition=None))
    '--index owen needs --partition: blocks'
    >>> _as_flags("model: 3 fits raised; fitting it on X_train raises", argparse.Namespace(model="m", train="t.csv"))
    '--model: 3 fits raised; fitting it on --train t.csv raises'
    >>> _as_flags("or fs.explain(model.predict, X, background=...)", argparse.Namespace(background="b.csv"))
    'or fs.explain(model.predict, X, background=...)'
    """
    message = _file_rows(message, args)
    first = message.split(" ", 1)[0]
    read = _read_from(first, args)
    if read is not None:                        # read from a file: its flag and path
        message = f"{read}{message[len(first):]}"
    else:
        name, _, value = first.rstrip(":").partition("=")
        shown = _flag(name, value, args)        # the door names its argument; the command line calls it a flag
        if shown is not None:
            message = shown + message[len(name) + (len(value) + 1 if value else 0):]

    def spelled(m: re.Match) -> str:
        if _in_call(message, m.start()):
            return m.group(0)
        if m.group(1) is not None:
            return _read_from(m.group(1), args) or m.group(0)
        return _flag(m.group(2), m.group(3), args) or m.group(0)

    return re.sub(r"(?<![\w.-])(?:(X_train|y_train|X_val|y_val)\b(?!=)|(\w+)=('[^']*'|\"[^\"]*\"|[^\s,;:)]*))",
                  spelled, message)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``fairshare`` console script."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        with warnings.catch_warnings():         # one line on stderr, without the source line, flags for names
            warnings.showwarning = lambda message, *_, **__: print(
                f"fairshare: warning: {_as_flags(str(message), args)}", file=sys.stderr)
            return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print("fairshare: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # noqa: BLE001 - every failure is one line naming its flag, never a traceback
        message = one_line(exc)
        if not isinstance(exc, (ValueError, TypeError, ImportError, OSError, KeyError)):
            message = f"{type(exc).__name__}: {message}"
        message = _as_flags(message, args)
        print(f"fairshare: error: {message}", file=sys.stderr)
        return 2
