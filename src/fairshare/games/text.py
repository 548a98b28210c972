"""Text as a game: the players are the tokens of one text, a removed token is deleted or replaced by a mask.

A text is cut into pieces that rebuild it exactly (``"".join(pieces) == text``): each piece is a token and the
whitespace after it (the text's leading whitespace goes with the first). The value of a coalition is the model's
output on the text rebuilt from its tokens, the others deleted or replaced by ``mask_token`` (their whitespace
stays either way). Long texts get a hierarchy, sentences -> phrases -> tokens, for Owen
values (:mod:`fairshare.indices.hierarchy`).
"""

from __future__ import annotations

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
        found in the text in order, and what lies between them joins the token before.

    Examples
    --------
    >>> tokenize("Hello,  world!\\n")
    ['Hello', ',  ', 'world', '!\\n']
    >>> tokenize("  a b", r"\\S+")
    ['  a ', 'b']
    """
    if not isinstance(text, str):
        raise TypeError(f"texts must be strings, got {type(text).__name__}")
    if tokenizer is None or isinstance(tokenizer, str):
        spans = [m.span() for m in re.finditer(tokenizer or WORDS, text) if m.end() > m.start()]
    elif callable(tokenizer):
        spans, pos = [], 0
        for tok in tokenizer(text):
            tok = str(tok)
            if not tok:
                continue
            at = text.find(tok, pos)
            if at < 0:
                stripped = tok.lstrip("#Ġ▁ ")                      # subword markers (WordPiece, BPE, SentencePiece)
                at = text.find(stripped, pos) if stripped else -1
                tok = stripped
            if at < 0:
                raise ValueError(f"tokenizer: the token {tok!r} is not in the text after position {pos}; the "
                                 "tokens must appear in the text in order")
            spans.append((at, at + len(tok)))
            pos = at + len(tok)
    else:
        raise TypeError(f"tokenizer must be None, a regular expression or a callable, got {type(tokenizer).__name__}")
    if not spans:
        return []
    starts = [0] + [s for s, _ in spans[1:]]
    ends = [s for s, _ in spans[1:]] + [len(text)]
    return [text[a:b] for a, b in zip(starts, ends)]


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
