"""Text as a game: the players are the tokens of one text, a removed token is deleted or replaced by a mask.

A text is cut into pieces that rebuild it exactly (``"".join(pieces) == text``): each piece is a token and the
whitespace after it (the text's leading whitespace goes with the first). The value of a coalition is the model's
output on the text rebuilt from its tokens, the others deleted or replaced by ``mask_token`` (their whitespace
stays either way). Long texts get a hierarchy, sentences -> phrases -> tokens, for Owen
values (:mod:`fairshare.indices.hierarchy`).
"""

from __future__ import annotations

import bisect
import re
import unicodedata
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .base import Game
from ..indices.hierarchy import balanced

__all__ = ["tokenize", "text_hierarchy", "TextGame", "WORDS"]


def _marks() -> str:
    """A regular expression's class of the combining marks (Unicode categories Mn, Mc, Me: accents, vowel signs,
    variation selectors) and emoji skin tones: characters that belong to the one before."""
    ranges: list[list[int]] = []
    for cp in list(range(0x20000)) + list(range(0xE0100, 0xE01F0)):
        if unicodedata.category(chr(cp))[0] == "M" or 0x1F3FB <= cp <= 0x1F3FF:
            if ranges and ranges[-1][1] == cp - 1:
                ranges[-1][1] = cp
            else:
                ranges.append([cp, cp])
    return "".join(f"\\U{a:08x}" if a == b else f"\\U{a:08x}-\\U{b:08x}" for a, b in ranges)


_MARK = _marks()
#: the default tokens: runs of word characters (with their combining marks: a Hindi word's vowel signs, an accent
#: written apart), and single other non-space characters (punctuation; an emoji with its modifiers, its joined
#: sequence, a flag)
WORDS = (rf"[\w{_MARK}]+|[\U0001F1E6-\U0001F1FF]{{2}}|[^\w\s{_MARK}][{_MARK}]*(?:\u200d[^\w\s][{_MARK}]*)*")
#: how subword tokenizers mark a token's place in a word (WordPiece's ``##``, byte-level BPE's space, SentencePiece's)
_MARKERS = "#\u0120\u2581 "
#: an unknown or special token of a subword tokenizer (``[UNK]``, ``<unk>``): it has no text of its own to find
_SPECIAL = re.compile(r"\[[A-Za-z_]+\]|<[^<>\s]+>")
_SENTENCE_END = re.compile(r"[.!?]+$|\n")
_PHRASE_END = re.compile(r"[,;:)\]]$|^[-\u2013\u2014]+$")


def tokenize(text: str, tokenizer: str | Callable[[str], Sequence[str]] | None = None) -> list[str]:
    """The pieces of ``text``: one per token, each with the whitespace that follows it, so that
    ``"".join(pieces) == text`` exactly (unicode and repeated whitespace included).

    Parameters
    ----------
    text : str
    tokenizer : None (words and punctuation, :data:`WORDS`), a regular expression whose matches are the tokens,
        or a callable ``text -> tokens`` (e.g. a subword tokenizer's ``tokenize``); a callable's tokens are
        found in the text in order (without their subword markers, lower-cased without accents for an uncased
        tokenizer, a byte-level BPE's as their bytes), and what lies between them (whitespace, unknown tokens such
        as ``[UNK]``) joins the token before.

    Examples
    --------
    >>> tokenize("Hello,  world!\\n")
    ['Hello', ',  ', 'world', '!\\n']
    >>> tokenize("  a b", r"\\S+")
    ['  a ', 'b']
    >>> tokenize("Paris is", lambda text: ["paris", "\u2581", "is"])       # uncased, a marker alone
    ['Paris ', 'is']
    """
    if not isinstance(text, str):
        raise TypeError(f"texts must be strings, got {type(text).__name__}")
    if tokenizer is None or isinstance(tokenizer, str):
        spans = [m.span() for m in re.finditer(tokenizer or WORDS, text) if m.end() > m.start()]
    elif callable(tokenizer):
        spans = _aligned(text, [str(t) for t in tokenizer(text)])
    else:
        raise TypeError(f"tokenizer must be None, a regular expression or a callable, got {type(tokenizer).__name__}")
    if not spans:
        return []
    starts = [0] + [s for s, _ in spans[1:]]
    ends = [s for s, _ in spans[1:]] + [len(text)]
    return [text[a:b] for a, b in zip(starts, ends)]


def _byte_level() -> dict[str, int]:
    """The byte each character of a byte-level BPE token stands for (GPT-2's ``bytes_to_unicode``, reversed)."""
    shown = [*range(33, 127), *range(161, 173), *range(174, 256)]
    chars = shown + [256 + k for k in range(256 - len(shown))]
    return {chr(c): b for b, c in zip(shown + [b for b in range(256) if b not in shown], chars)}


_BYTES = _byte_level()


def _fold(text: str) -> tuple[str, list[int]]:
    """``text`` lower-cased without its accents (as uncased tokenizers see it), and where each of its characters
    comes from in ``text``."""
    folded, where = [], []
    for i, c in enumerate(text):
        for f in "".join(x for x in unicodedata.normalize("NFD", c) if not unicodedata.combining(x)).lower():
            folded.append(f)
            where.append(i)
    return "".join(folded), where


def _find(text: str, piece: str, pos: int, folded: tuple[str, list[int]], exact: bool = True) -> Any:
    """``piece``'s first (start, end) in ``text`` at or after ``pos``, as it is or (``exact=False``) lower-cased
    without accents; None where it is not."""
    if exact:
        at = text.find(piece, pos) if piece else -1
        return (at, at + len(piece)) if at >= 0 else None
    needle = _fold(piece)[0]
    hay, where = folded
    k = hay.find(needle, bisect.bisect_left(where, pos)) if needle else -1
    return None if k < 0 else (where[k], where[k + len(needle) - 1] + 1)


def _from_bytes(token: str, pending: bytes) -> tuple[str | None, bytes]:
    """A byte-level BPE token's text after ``pending`` bytes (a character split across tokens): (text, b"") once
    the bytes decode, (None, bytes) while a character is incomplete; (None, b"") if the token is not byte-level."""
    if not all(c in _BYTES for c in token) or (token.isascii() and not pending):
        return None, b""
    data = pending + bytes(_BYTES[c] for c in token)
    try:
        return data.decode("utf-8"), b""
    except UnicodeDecodeError as exc:
        return (None, data) if exc.reason == "unexpected end of data" and len(data) < 16 else (None, b"")


def _aligned(text: str, tokens: list[str]) -> list[tuple[int, int]]:
    """Where a tokenizer's ``tokens`` lie in ``text``, in order: each as it is, without its subword marker, or
    lower-cased without accents (uncased tokenizers), the nearest first; else, where it is nowhere as it is, as the
    bytes of a byte-level BPE (a character may span tokens). Tokens of whitespace and unknown ones (``[UNK]``) have no text of their own: what
    lies between the tokens found joins the one before."""
    folded, spans, pos, pending = _fold(text), [], 0, b""
    for tok in tokens:
        core = tok.lstrip(_MARKERS)
        if not tok.strip() or not (pending or core.strip() or text.find(tok, pos) >= 0):
            continue                                             # whitespace, or a subword marker alone
        exact = [] if pending else [f for f in (_find(text, tok, pos, folded), _find(text, core, pos, folded)) if f]
        found = exact + [f for f in [None if pending else _find(text, core, pos, folded, exact=False)] if f]
        near = [f for f in found if not text[pos:f[0]].strip()]
        if not near and not exact:
            piece, pending = _from_bytes(tok, pending)
            if pending or (piece is not None and not piece.strip()):
                continue
            if piece is not None:
                found = [f for f in (_find(text, piece.strip(), pos, folded),
                                     _find(text, piece.strip(), pos, folded, exact=False)) if f is not None]
        if not found and _SPECIAL.fullmatch(tok):
            continue
        if not found:
            raise ValueError(f"tokenizer: the token {tok!r} is not in the text after position {pos}; the tokens "
                             "must appear in the text in order")
        spans.append(min(near or found))
        pos = spans[-1][1]
    return spans


def text_hierarchy(pieces: Sequence[str], branching: int = 8) -> list:
    """Sentences -> phrases -> tokens (positions) for Owen values of a long text: a sentence ends after a token
    ending in ``.``, ``!``, ``?`` or a line break; a phrase after a comma, semicolon, colon, closing bracket or dash.
    Levels with one block are dropped. A block of more than ``branching`` parts (sentences of a long text,
    phrases of a long sentence, words of a long phrase) is cut into ``branching`` runs of consecutive parts, again
    until none has more, so the tree is ``O(log length)`` deep and ``owen-adaptive`` reaches any word through
    ``O(log length)`` blocks of at most ``branching`` parts.

    Examples
    --------
    >>> text_hierarchy(tokenize("Hi there, you. Bye!"))
    [[[0, 1, 2], [3, 4]], [5, 6]]
    >>> text_hierarchy(tokenize("a b c d e"), branching=2)
    [[0, 1], [[2, 3], 4]]
    """
    if not isinstance(branching, (int, np.integer)) or isinstance(branching, bool) or branching < 2:
        raise ValueError(f"branching must be an integer of at least 2, got {branching!r}")
    sentences: list[list[list[int]]] = [[[]]]
    for i, piece in enumerate(pieces):
        core, gap = piece.rstrip(), piece[len(piece.rstrip()):]
        sentences[-1][-1].append(i)
        last = i == len(pieces) - 1
        if not last and (_SENTENCE_END.search(core) or "\n" in gap):
            sentences.append([[]])
        elif not last and _PHRASE_END.search(core):
            sentences[-1].append([])

    blocks = [phrases[0] if len(phrases) == 1 else phrases for phrases in sentences]
    return balanced(blocks[0] if len(blocks) == 1 else blocks, int(branching))


class TextGame(Game):
    """The model's output on one text when only the tokens in ``S`` are kept.

    Parameters
    ----------
    predict : callable
        Takes a list of strings, returns one value (or ``k``) per string: a scikit-learn text pipeline's
        ``predict_proba``, a torch model behind its own tokenizer, any function.
    text : str
    tokenizer : see :func:`tokenize`
    mask_token : str or None
        None deletes removed tokens (their whitespace stays, so their neighbours never merge into one word); a
        string replaces each removed token, e.g. ``"[MASK]"`` or ``"..."``.
    batch_size : int, optional
        Most texts per model call.
    pieces : list of str, optional
        The text's pieces when :func:`tokenize` already cut it (not cut again).

    Examples
    --------
    >>> g = TextGame(lambda texts: [t.count("good") for t in texts], "good, very good")
    >>> g.tokens, g(np.array([[1, 0, 0, 0], [1, 1, 1, 1]], dtype=bool))
    (['good', ',', 'very', 'good'], array([1., 2.]))
    >>> TextGame(len, "a b", mask_token="_").texts(np.array([[False, True]]))
    ['_ b']
    """

    kind = "model"

    def __init__(self, predict: Callable[[list[str]], Any], text: str, tokenizer: Any = None,
                 mask_token: str | None = None, batch_size: int | None = None,
                 pieces: Sequence[str] | None = None) -> None:
        if not callable(predict):
            raise TypeError(f"predict must be callable, got {type(predict).__name__}")
        if mask_token is not None and not isinstance(mask_token, str):
            raise TypeError(f"mask_token must be a string or None, got {type(mask_token).__name__}")
        self.text = text
        if pieces is not None and "".join(pieces) != text:
            raise ValueError("pieces must rebuild the text exactly (they are tokenize(text, tokenizer))")
        self.pieces = list(pieces) if pieces is not None else tokenize(text, tokenizer)
        if not self.pieces:
            raise ValueError("the text has no tokens (empty or only whitespace): nothing to explain")
        self.tokens = [p.strip() for p in self.pieces]
        super().__init__(len(self.pieces), player_names=[f"{i}:{t}" for i, t in enumerate(self.tokens)],
                         batch_size=batch_size)
        self.predict, self.mask_token = predict, mask_token
        lead = self.pieces[0][:len(self.pieces[0]) - len(self.pieces[0].lstrip())]
        gaps = [p[len(p.rstrip()):] for p in self.pieces]
        if mask_token is None:
            removed = [lead + gaps[0]] + gaps[1:]           # the whitespace stays: neighbours never merge
        else:
            removed = [lead + mask_token + gaps[0]] + [mask_token + g for g in gaps[1:]]
        self._kept = np.array(self.pieces, dtype=object)
        self._removed = np.array(removed, dtype=object)

    def texts(self, coalitions: np.ndarray) -> list[str]:
        """The texts the model sees for boolean ``coalitions`` (m, n)."""
        X = np.asarray(coalitions, dtype=bool)
        chosen = np.where(X, self._kept[None, :], self._removed[None, :])
        return ["".join(row) for row in chosen]

    def _evaluate(self, coalitions: np.ndarray) -> np.ndarray:
        out = np.asarray(self.predict(self.texts(coalitions)), dtype=float)
        return out
