"""The spans of a prompt: its tokens' text, and the words, sentences and paragraphs they make up.

A prompt is a sequence of token ids. Each token has a *piece* of text (from the tokenizer's offsets, or its own
decoding), and the pieces are read the way :mod:`fairshare.games.text` reads a text: a new word starts after
whitespace or where letters meet punctuation, a sentence ends after ``.``, ``!``, ``?`` or a line break, a
paragraph after a blank line. The players of a :class:`~fairshare.games.GenerationGame` are runs of consecutive
tokens (its *spans*), and :func:`span_hierarchy` nests them document > paragraphs > sentences > words, every block
cut into runs of at most ``branching`` parts, for Owen values (``owen-adaptive`` walks that tree top down).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..indices.hierarchy import balanced

__all__ = ["encode", "token_pieces", "token_starts", "unit_starts", "spans_of", "check_spans", "span_hierarchy",
           "display_pieces", "UNITS"]

#: the named kinds of spans, finest first
UNITS = ("tokens", "words", "sentences", "paragraphs")
_PARAGRAPH = re.compile(r"\n[^\S\n]*\n")
_SENTENCE_END = re.compile(r"[.!?]+[\"')\]]*$")


def encode(tokenizer: Any, text: str) -> tuple[list[int], list[tuple[int, int]] | None]:
    """``text``'s token ids without special tokens, and each token's (start, end) characters where the tokenizer
    gives offsets (a Hugging Face fast tokenizer, a ``tokenizers.Tokenizer``), else None.

    Examples
    --------
    >>> class Words:                                     # any object with encode / decode
    ...     vocab = {"a": 0, "b": 1}
    ...     def encode(self, text, add_special_tokens=False):
    ...         return [self.vocab[w] for w in text.split()]
    >>> encode(Words(), "a b a")
    ([0, 1, 0], None)
    """
    if hasattr(tokenizer, "encode_batch") and hasattr(tokenizer, "get_vocab_size"):   # a tokenizers.Tokenizer
        enc = tokenizer.encode(text, add_special_tokens=False)
        return [int(i) for i in enc.ids], [tuple(o) for o in enc.offsets]
    if callable(tokenizer) and getattr(tokenizer, "is_fast", False):
        enc = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
        return [int(i) for i in enc["input_ids"]], [tuple(o) for o in enc["offset_mapping"]]
    if not callable(getattr(tokenizer, "encode", None)):
        raise TypeError(f"tokenizer must have encode(text) (a Hugging Face tokenizer), got {type(tokenizer).__name__}")
    return [int(i) for i in tokenizer.encode(text, add_special_tokens=False)], None


def token_pieces(ids: Sequence[int], tokenizer: Any = None, text: str | None = None,
                 offsets: Sequence[tuple[int, int]] | None = None) -> list[str]:
    """One piece of text per token: with ``text``, the text from each token's start to the next one's (the first
    from the text's start), so that the pieces rebuild the text exactly; the starts are the tokenizer's
    ``offsets``, or else where each token's decoding lies in ``text`` (:func:`token_starts`). Without ``text``, each
    token decoded on its own; without a tokenizer, the ids themselves (``"[17] "``).

    Examples
    --------
    >>> token_pieces([5, 6], text="Hi you", offsets=[(0, 2), (3, 6)])
    ['Hi ', 'you']
    >>> token_pieces([5, 6])
    ['[5] ', '[6] ']
    """
    if text is not None and len(ids):
        starts = None
        if offsets is not None and len(offsets) == len(ids):
            starts = [0] + [int(a) for a, _ in offsets[1:]]
            starts = starts if all(a <= b for a, b in zip(starts, starts[1:])) else None
        if starts is None and tokenizer is not None:
            starts = token_starts(ids, tokenizer, text)
        if starts is not None:
            return [text[a:b] for a, b in zip(starts, starts[1:] + [len(text)])]
    if tokenizer is None:
        return [f"[{int(i)}] " for i in ids]
    return [str(tokenizer.decode([int(i)])) for i in ids]


def token_starts(ids: Sequence[int], tokenizer: Any, text: str) -> list[int]:
    """Where each token starts in ``text`` (the first at 0), for a tokenizer that gives no offsets: each token is
    decoded on its own (or with up to 3 next ones, where alone it is no text of its own: a character split into
    bytes) and found in the text after the one before, only whitespace between them (which goes with the token
    before); a token of whitespace takes the text's whitespace where it stands.

    Raises ValueError naming the tokenizer where its decoding is not the text (then words, sentences and
    paragraphs cannot be read from it).

    Examples
    --------
    >>> class Words:
    ...     vocab = ["the", "cat", "sat"]
    ...     def decode(self, ids):
    ...         return " ".join(self.vocab[i] for i in ids)
    >>> token_starts([0, 1, 2], Words(), "the cat\\n\\nsat")
    [0, 4, 9]
    """
    ids = [int(i) for i in ids]
    starts: list[int] = []
    cursor, i, n = 0, 0, len(ids)
    while i < n:
        found = None
        for j in range(i + 1, min(i + 4, n) + 1):
            piece = str(tokenizer.decode(ids[i:j]))
            found = _locate(piece, text, cursor)
            if found is not None:
                break
        if found is None:
            piece = str(tokenizer.decode(ids[i:i + 1]))
            raise ValueError(
                f"tokenizer: {type(tokenizer).__name__} gives no offsets, and its decoding of token {i} "
                f"({piece!r}) is not in the prompt's text where it should be (at character {cursor}: "
                f"{text[cursor:cursor + 20]!r}), so the prompt's words, sentences and paragraphs cannot be read; "
                "give a tokenizer with offsets (a Hugging Face fast tokenizer) or the spans as (start, end) token "
                "ranges")
        a, cursor = found
        starts += [a] + [cursor] * (j - i - 1)
        i = j
    if text[cursor:].strip():
        raise ValueError(f"tokenizer: {type(tokenizer).__name__}'s tokens end at character {cursor} of the prompt, "
                         f"before {text[cursor:cursor + 20]!r}: its decoding is not the prompt's text")
    starts[0] = 0
    return starts


def _locate(piece: str, text: str, cursor: int) -> tuple[int, int] | None:
    """``piece``'s (start, end) in ``text`` at or after ``cursor`` with only whitespace before it; a piece of
    whitespace (or nothing) stands at ``cursor`` and takes as much of the text's whitespace there as it has."""
    core = piece.strip()
    if not core:
        room = len(text[cursor:]) - len(text[cursor:].lstrip())
        return cursor, cursor + min(len(piece), room)
    lowered = text.lower()
    for hay, needle in ((text, core), (lowered, core.lower())) if len(lowered) == len(text) else ((text, core),):
        at = hay.find(needle, cursor)
        if at >= 0 and not text[cursor:at].strip():
            return at, at + len(core)
    return None


def unit_starts(pieces: Sequence[str]) -> dict[str, np.ndarray]:
    """For each kind of :data:`UNITS`, whether a new one starts at each token (the first token starts every kind; a
    token of whitespace only starts none: it goes with the one before).

    Examples
    --------
    >>> s = unit_starts(["Paris", ".", " It", " is", ".\\n\\n", "Yes"])
    >>> {k: v.astype(int).tolist() for k, v in s.items()}       # doctest: +NORMALIZE_WHITESPACE
    {'tokens': [1, 1, 1, 1, 1, 1], 'words': [1, 1, 1, 1, 1, 1], 'sentences': [1, 0, 1, 0, 0, 1],
     'paragraphs': [1, 0, 0, 0, 0, 1]}
    """
    n = len(pieces)
    out = {kind: np.zeros(n, dtype=bool) for kind in UNITS}
    out["tokens"][:] = True
    gap, last = "", ""                          # the whitespace since the last token with text, and that text
    for i, piece in enumerate(pieces):
        core = piece.strip()
        if not core:
            gap += piece
            continue
        gap += piece[:len(piece) - len(piece.lstrip())]
        first = i == 0 or not last
        paragraph = first or bool(_PARAGRAPH.search(gap))
        sentence = paragraph or "\n" in gap or bool(_SENTENCE_END.search(last))
        word = sentence or bool(gap) or not (_word_char(last[-1]) and _word_char(core[0]))
        out["paragraphs"][i], out["sentences"][i], out["words"][i] = paragraph, sentence, word
        last, gap = core, piece[len(piece.rstrip()):]
    out["paragraphs"][0] = out["sentences"][0] = out["words"][0] = True
    return out


def _word_char(c: str) -> bool:
    """A letter, digit or underscore, or a combining mark (an accent, a vowel sign: part of the letter before)."""
    return c.isalnum() or c == "_" or unicodedata.category(c)[0] == "M"


def spans_of(spans: Any, pieces: Sequence[str]) -> list[tuple[int, int]]:
    """The players' token ranges ``[start, end)`` for ``spans``: one of :data:`UNITS`, or a list of ranges
    (checked by :func:`check_spans`).

    Examples
    --------
    >>> spans_of("words", ["Hel", "lo", " you", "."])
    [(0, 2), (2, 3), (3, 4)]
    >>> spans_of([(0, 2), (3, 4)], ["a", "b", "c", "d"])
    [(0, 2), (3, 4)]
    """
    n = len(pieces)
    if isinstance(spans, str):
        starts = np.flatnonzero(unit_starts(pieces)[spans]).tolist()
        return list(zip(starts, starts[1:] + [n]))
    return check_spans(spans, n)


def check_spans(spans: Any, n_tokens: int) -> list[tuple[int, int]]:
    """``spans`` as a list of token ranges ``(start, end)`` (end excluded), each non-empty, inside the prompt's
    ``n_tokens`` and overlapping no other; tokens in no span are always kept.

    Examples
    --------
    >>> check_spans([(0, 2), (1, 3)], 4)
    Traceback (most recent call last):
    ...
    ValueError: spans: (0, 2) and (1, 3) overlap (token 1 is in both); each token may be in one span only
    """
    if isinstance(spans, str):
        raise ValueError(f"spans must be one of {list(UNITS)} or a list of (start, end) token ranges, got {spans!r}")
    try:
        ranges = [(int(a), int(b)) for a, b in spans]
        exact = all(float(a) == int(a) and float(b) == int(b) for a, b in spans)
    except (TypeError, ValueError):
        raise ValueError(f"spans must be one of {list(UNITS)} or a list of (start, end) token ranges, got "
                         f"{spans!r:.80}") from None
    if not exact or not ranges:
        raise ValueError(f"spans: give at least one (start, end) range of integer token positions, got {spans!r:.80}")
    for a, b in ranges:
        if not 0 <= a < b:
            raise ValueError(f"spans: ({a}, {b}) is not a range of tokens (0 <= start < end)")
        if b > n_tokens:
            raise ValueError(f"spans: ({a}, {b}) runs past the prompt's {n_tokens} tokens")
    order = sorted(ranges)
    for (a, b), (c, d) in zip(order, order[1:]):
        if c < b:
            raise ValueError(f"spans: ({a}, {b}) and ({c}, {d}) overlap (token {c} is in both); each token may be "
                             "in one span only")
    return ranges


def span_hierarchy(ranges: Sequence[tuple[int, int]], pieces: Sequence[str], branching: int = 8) -> list:
    """The players (positions of ``ranges``) nested document > paragraphs > sentences > words, by the unit their
    first token lies in; levels the spans do not go below are left out, a block of one part is that part, and
    every block of more than ``branching`` parts is cut into runs (:func:`~fairshare.indices.hierarchy.balanced`).

    Examples
    --------
    >>> pieces = ["A", " b", ".", " C", " d", "."]
    >>> span_hierarchy(spans_of("tokens", pieces), pieces)
    [[0, 1, 2], [3, 4, 5]]
    >>> span_hierarchy(spans_of("words", pieces), pieces, branching=2)
    [[[0, 1], 2], [[3, 4], 5]]
    """
    starts = unit_starts(pieces)
    firsts = np.array([a for a, _ in ranges], dtype=np.int64)
    order = np.argsort(firsts, kind="stable")
    labels = []
    for kind in ("paragraphs", "sentences", "words"):
        ids = np.cumsum(starts[kind]) - 1
        lab = ids[firsts[order]]
        if np.unique(lab).size < lab.size:          # the spans are finer than this unit: it is a level
            labels.append(lab)
    tree = _nest(order.tolist(), labels)
    if not isinstance(tree, list):
        tree = [tree]
    return balanced(tree, int(branching))


def _nest(players: list[int], labels: list[np.ndarray]) -> Any:
    """``players`` grouped by the first of ``labels`` (runs of equal labels), each group by the next ones."""
    if not labels:
        return players[0] if len(players) == 1 else players
    lab = labels[0]
    cuts = np.flatnonzero(np.diff(lab)) + 1
    bounds = [0] + cuts.tolist() + [len(players)]
    groups = [_nest(players[a:b], [x[a:b] for x in labels[1:]]) for a, b in zip(bounds, bounds[1:])]
    return groups[0] if len(groups) == 1 else groups


def display_pieces(ranges: Sequence[tuple[int, int]], pieces: Sequence[str]) -> list[str]:
    """Each player's text as a piece of a text (its own text, then its whitespace), for the text plot and HTML:
    text in no span goes with the span before it (the first span takes what comes before it), and leading
    whitespace moves to the end of the piece before.

    Examples
    --------
    >>> display_pieces([(0, 1), (1, 3)], ["Hel", "lo", " you"])
    ['Hel', 'lo you']
    >>> display_pieces([(0, 1), (1, 2)], ["a", " b"])
    ['a ', 'b']
    """
    n = len(pieces)
    order = sorted(range(len(ranges)), key=lambda p: ranges[p][0])
    texts = [""] * len(ranges)
    for k, p in enumerate(order):
        a = 0 if k == 0 else ranges[p][0]
        b = n if k == len(order) - 1 else ranges[order[k + 1]][0]
        texts[p] = "".join(pieces[a:b])
    for k in range(1, len(order)):
        p, before = order[k], order[k - 1]
        core = texts[p].lstrip()
        texts[before] += texts[p][:len(texts[p]) - len(core)]
        texts[p] = core
    return texts
