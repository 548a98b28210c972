"""Generation as a game: which parts of a prompt a language model's answer comes from.

The players are spans of the prompt (its tokens, words, sentences, paragraphs, or token ranges); the value of a
coalition is the log-probability of the target answer, teacher-forced, when only the spans in it are kept (a
removed span is cut out, or replaced by a token the attention mask hides). The values add up to
``log p(target | prompt) - log p(target | nothing kept)``. With ``per_token=True`` each answer token is an output
of its own (the values of the whole answer are their sum). The spans nest document > paragraphs > sentences >
words (:meth:`GenerationGame.hierarchy`), which ``fs.explain`` walks with ``owen-adaptive`` for long prompts.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from .._core.errors import FairshareWarning
from .base import Game
from .causal_lm import CausalLM, is_causal_lm
from .spans import UNITS, display_pieces, encode, span_hierarchy, spans_of, token_pieces

__all__ = ["GenerationGame"]


def _ids(value: Any, name: str) -> np.ndarray:
    """A 1-D sequence of integer token ids (a list, an array, a tensor), refused naming ``name`` otherwise."""
    if hasattr(value, "detach"):
        value = value.detach().cpu().numpy()
    arr = np.asarray(value)
    if arr.ndim == 2 and arr.shape[0] == 1:
        arr = arr[0]
    if arr.ndim != 1 or (arr.size and arr.dtype.kind not in "iu" and not (
            arr.dtype.kind == "f" and np.all(np.isfinite(arr)) and np.all(arr == np.round(arr)))):
        raise TypeError(f"{name} must be a string or a 1-D sequence of integer token ids, got {type(value).__name__} "
                        f"of shape {arr.shape} and dtype {arr.dtype}")
    if arr.size == 0:
        raise ValueError(f"{name} is empty: it needs at least one token")
    if arr.min() < 0:
        raise ValueError(f"{name}: token id {int(arr.min())} is negative")
    return arr.astype(np.int64)


def _vocabulary(tokenizer: Any) -> int | None:
    if tokenizer is None:
        return None
    if callable(getattr(tokenizer, "get_vocab_size", None)):
        return int(tokenizer.get_vocab_size())
    return len(tokenizer) if hasattr(tokenizer, "__len__") else None


class GenerationGame(Game):
    """The log-probability of a language model's answer when only some spans of the prompt are kept.

    Parameters
    ----------
    model : a log-probability function ``model(token_lists, target) -> (batch, len(target))`` (the log-probability
        of each target token given each list of kept prompt tokens, teacher-forced), or a causal LM: a torch module
        called with ``input_ids`` and ``attention_mask`` that returns logits (a Hugging Face
        ``AutoModelForCausalLM``); it runs in batches on its own device (:mod:`fairshare.games.causal_lm`)
    prompt : a string (with a tokenizer; encoded without special tokens) or its token ids
    target : the answer, token ids or a string (with a tokenizer), or None: the model's greedy continuation of the
        whole prompt (``max_new_tokens`` tokens at most, up to its end-of-sequence token; causal LMs only)
    tokenizer : the model's tokenizer (a Hugging Face tokenizer or a ``tokenizers.Tokenizer``): reads string
        prompts and targets, and gives the spans their text
    spans : ``"tokens"``, ``"words"``, ``"sentences"``, ``"paragraphs"``, or a list of ``(start, end)`` token ranges
        (end excluded; tokens in no range are always kept)
    removal : ``"drop"`` (a removed span is cut out) or a token id that replaces each removed token (pad or unk),
        hidden by the attention mask
    per_token : one output per target token instead of the answer's total log-probability
    max_new_tokens : the longest greedy continuation when ``target`` is None
    start : the token every sequence starts with (not a player); None: the tokenizer's (or config's) beginning-
        of-sequence token, else its end-of-sequence token, for causal LMs (a prompt that starts with it keeps it as
        the start); none for functions
    batch_size : most sequences per model call (None: by length, for causal LMs; all, for functions); a causal
        LM's log-probabilities at another batch size agree to its rounding (float32: about 1e-7 relative), not bit
        for bit (:mod:`fairshare.games.causal_lm`)
    kv_cache : reuse the full prompt's keys and values for a kept common prefix (causal LMs that allow it)
    branching : most parts of a block of :meth:`hierarchy`

    Examples
    --------
    >>> def logprobs(token_lists, target):            # the answer needs token 7 in the prompt
    ...     return np.array([[0.0 if 7 in t else -2.0] * len(target) for t in token_lists])
    >>> g = GenerationGame(logprobs, prompt=[3, 7, 5], target=[9, 9])
    >>> g(np.array([[True, False, True], [False, True, False]])).tolist()
    [-4.0, 0.0]
    >>> import fairshare as fs
    >>> fs.explain(g, progress=False).values.round(6).tolist()
    [[0.0, 4.0, 0.0]]
    """

    kind = "model"
    #: walks of a block by ``owen-adaptive`` before its parts rank the blocks to open next (``fs.explain``'s
    #: default for this game; the engine's is 4): an answer's log-probability moves a lot with what else is kept
    #: (evidence saturates), so its blocks' values need more walks to rank; measured on planted-source prompts of
    #: 500 tokens at 300 passes and 4,000 at 300 and 1,000 (16 prompts apart from the benchmark's), the planted
    #: sentence ranked first in 81-94% of prompts with 8 walks against 63-75% with 4 (a budget of two whole orders,
    #: 500 tokens at 1,000 passes, walks whole orders: no walks of single blocks)
    walks = 8
    #: ``owen-adaptive`` doubles the walks of an open block when its parts' error exceeds the value of the next
    #: block to open, so a larger budget sharpens the ranking of the blocks open already (without it, a budget for
    #: two whole orders walked just two of them: the planted sentence of 500-token prompts ranked first in 50% of
    #: prompts at 1,000 passes against 80% at 300; and blocks were never walked again, their parts pinned to their
    #: first estimates however large the budget)
    refine = True
    #: ``regression`` (the default for short prompts) moves the values toward equal shares by their own standard
    #: errors (James-Stein, :mod:`fairshare.engine.shrink`): an answer's log-probability under a small LM is so
    #: noisy a game that 64 coalitions of 14 tokens gave errors 3x the values' own size; shrunk, 0.6x (256: 0.2 ->
    #: 0.18; measured on the tiny GPT-2 of ``fairshare bench lm`` against exact values)
    shrink = True

    def __init__(self, model: Any, prompt: Any, target: Any = None, tokenizer: Any = None, spans: Any = "tokens",
                 removal: Any = "drop", per_token: bool = False, max_new_tokens: int = 20, start: Any = None,
                 batch_size: int | None = None, kv_cache: bool = True, branching: int = 8) -> None:
        self._check_flags(removal, per_token, max_new_tokens, batch_size, kv_cache, branching, spans)
        self.lm = CausalLM(model, batch_size, kv_cache) if is_causal_lm(model) else None
        if self.lm is None and not callable(model):
            raise TypeError(f"model must be a log-probability function (token_lists, target) -> (batch, "
                            f"len(target)) or a causal LM (a torch module), got {type(model).__name__}")
        self.model, self.tokenizer, self.rows = model, tokenizer, batch_size
        self.vocab = self.lm.vocab_size if self.lm is not None else _vocabulary(tokenizer)
        self.prompt, self.text, offsets = self._prompt(prompt, tokenizer)
        self.start = self._start(start, tokenizer)
        if self.start.size and self.prompt[0] == self.start[0] and start is None and self.prompt.size > 1:
            self.prompt, offsets = self.prompt[1:], None if offsets is None else offsets[1:]
        self._check_tokenizer(tokenizer)
        self._check_ids(self.prompt, "prompt")
        given = None if target is None else self._target(target, tokenizer)
        self._check_context(given.size if given is not None else int(max_new_tokens))
        if isinstance(removal, (int, np.integer)) and not isinstance(removal, bool):
            self._check_ids(_ids([removal], "removal"), "removal")
        self.removal = None if isinstance(removal, str) else int(removal)
        self.per_token = bool(per_token)
        if isinstance(spans, str) and spans != "tokens" and tokenizer is None:
            raise ValueError(f"spans={spans!r} reads the prompt's text: give the tokenizer (without one, spans are "
                             "'tokens' or (start, end) ranges)")
        self.pieces = self._pieces(tokenizer, offsets, spans)
        self.ranges = spans_of(spans, self.pieces)
        self.spans, self.branching = spans, int(branching)
        self.generation_passes = 0
        self.target = given if given is not None else self._generate(int(max_new_tokens))
        self.owner = np.full(self.prompt.size, -1, dtype=np.int64)
        for p, (a, b) in enumerate(self.ranges):
            self.owner[a:b] = p
        self.covered = np.flatnonzero(self.owner >= 0)
        self.span_texts = display_pieces(self.ranges, self.pieces)
        names = [f"{p}:{t.strip()[:40]}" for p, t in enumerate(self.own_texts())]
        super().__init__(len(self.ranges), player_names=names)
        self.calls = self.sequences = 0

    # ----------------------------------------------------------------------------------------- checks
    @staticmethod
    def _check_flags(removal: Any, per_token: Any, max_new_tokens: Any, batch_size: Any, kv_cache: Any,
                     branching: Any, spans: Any) -> None:
        if not (removal == "drop" if isinstance(removal, str) else
                isinstance(removal, (int, np.integer)) and not isinstance(removal, bool)):
            raise ValueError(f"removal must be 'drop' or a token id that replaces removed tokens, got {removal!r}")
        for name, value in (("per_token", per_token), ("kv_cache", kv_cache)):
            if not isinstance(value, (bool, np.bool_)):
                raise TypeError(f"{name} must be True or False, got {value!r}")
        for name, value, low in (("max_new_tokens", max_new_tokens, 1), ("batch_size", batch_size, 1),
                                 ("branching", branching, 2)):
            if value is None and name == "batch_size":
                continue
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
                raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
        if isinstance(spans, str) and spans not in UNITS:
            raise ValueError(f"spans must be one of {list(UNITS)} or a list of (start, end) token ranges, got "
                             f"{spans!r}")

    def _prompt(self, prompt: Any, tokenizer: Any) -> tuple[np.ndarray, str | None, Any]:
        if isinstance(prompt, str):
            if not prompt.strip():
                raise ValueError("prompt is empty (or only whitespace): nothing to explain")
            if tokenizer is None:
                raise TypeError("tokenizer: a string prompt needs the model's tokenizer (or give the token ids)")
            ids, offsets = encode(tokenizer, prompt)
            if not ids:
                raise ValueError(f"prompt: the tokenizer found no tokens in {prompt!r:.60}")
            return np.asarray(ids, dtype=np.int64), prompt, offsets
        return _ids(prompt, "prompt"), None, None

    def _pieces(self, tokenizer: Any, offsets: Any, spans: Any) -> list[str]:
        """The prompt's tokens' pieces of text (:func:`~fairshare.games.spans.token_pieces`). Where a tokenizer
        without offsets does not decode back to the prompt, words, sentences and paragraphs are refused (they were
        read from pieces that had lost their whitespace, and merged runs of words); tokens and ranges are kept,
        each token decoded on its own, with a warning."""
        try:
            return token_pieces(self.prompt, tokenizer, self.text, offsets)
        except ValueError as exc:
            if isinstance(spans, str) and spans != "tokens":
                raise ValueError(f"spans={spans!r}: {exc}") from None
            warnings.warn(f"{exc}; each token is decoded on its own, and the text shown and the Owen hierarchy of "
                          "the spans read those pieces", FairshareWarning, stacklevel=4)
            return token_pieces(self.prompt, tokenizer)

    def _start(self, start: Any, tokenizer: Any) -> np.ndarray:
        if start is not None:
            return self._check_ids(_ids([start], "start"), "start")
        if self.lm is None:
            return np.zeros(0, dtype=np.int64)
        config = getattr(self.model, "config", None)
        for source, name in ((tokenizer, "bos_token_id"), (config, "bos_token_id"), (tokenizer, "eos_token_id"),
                             (config, "eos_token_id")):
            value = getattr(source, name, None)
            if isinstance(value, (int, np.integer)) and not isinstance(value, bool) and value >= 0:
                return np.array([int(value)], dtype=np.int64)
        raise ValueError("start: the model needs a token to start every sequence from (the answer's first token is "
                         "predicted after it when every span is removed); its tokenizer and config name no bos or "
                         "eos token: give start=<token id>")

    def _check_ids(self, ids: np.ndarray, name: str) -> np.ndarray:
        if self.vocab is not None and ids.size and int(ids.max()) >= self.vocab:
            raise ValueError(f"{name}: token id {int(ids.max())} is outside the vocabulary of {self.vocab} tokens "
                             f"(0..{self.vocab - 1})")
        return ids

    def _check_tokenizer(self, tokenizer: Any) -> None:
        words = _vocabulary(tokenizer)
        if words is None:
            return
        if self.lm is not None and self.vocab is not None and words > self.vocab:
            raise ValueError(f"tokenizer: its vocabulary of {words} tokens does not fit the model's {self.vocab} "
                             "(a tokenizer of another model?)")
        if self.prompt.size and int(self.prompt.max()) >= words:
            raise ValueError(f"tokenizer: the prompt's token id {int(self.prompt.max())} is not in the tokenizer's "
                             f"vocabulary of {words} tokens (ids of another tokenizer?)")

    def _target(self, target: Any, tokenizer: Any) -> np.ndarray:
        if isinstance(target, str):
            if not target:
                raise ValueError("target is empty: it needs at least one token")
            if tokenizer is None:
                raise TypeError("tokenizer: a string target needs the model's tokenizer (or give the token ids)")
            ids = encode(tokenizer, target)[0]
            if not ids:
                raise ValueError(f"target: the tokenizer found no tokens in {target!r:.60}")
            return self._check_ids(np.asarray(ids, dtype=np.int64), "target")
        return self._check_ids(_ids(target, "target"), "target")

    def _check_context(self, answer: int) -> None:
        """The positions the model reads (start, prompt, every answer token but the last, which is only predicted)
        fit its context."""
        limit = None if self.lm is None else self.lm.context
        total = self.start.size + self.prompt.size + answer - 1
        if limit is not None and total > limit:
            raise ValueError(f"prompt: {self.prompt.size} tokens + {self.start.size} start + {answer} answer - 1 (the "
                             f"last is only predicted) = {total} positions exceed the model's context of {limit}")

    # ------------------------------------------------------------------------------------------ model
    def _generate(self, max_new_tokens: int) -> np.ndarray:
        if self.lm is None:
            raise ValueError("target: a log-probability function cannot continue the prompt; give the target "
                             "(token ids, or a string with the tokenizer)")
        out = self.lm.greedy(np.concatenate([self.start, self.prompt]), max_new_tokens, self._end_tokens())
        self.generation_passes = self.lm.passes            # the scorer's counts start after them
        self.lm.passes = self.lm.calls = 0
        return out

    def _end_tokens(self) -> list[int]:
        """Every end-of-sequence token the tokenizer, the model's config and its generation config name (each an id
        or a list of ids, as ``model.generate`` reads them: Llama 3.1's and Gemma 3's configs list several)."""
        sources = (self.tokenizer, getattr(self.model, "config", None), getattr(self.model, "generation_config", None))
        ends: list[int] = []
        for source in sources:
            value = getattr(source, "eos_token_id", None)
            for token in value if isinstance(value, (list, tuple)) else [value]:
                if isinstance(token, (int, np.integer)) and not isinstance(token, bool) and token >= 0:
                    ends += [int(token)] if int(token) not in ends else []
        return ends

    def keep(self, coalitions: np.ndarray) -> np.ndarray:
        """The prompt's tokens each coalition keeps, ``(m, prompt tokens)`` (tokens in no span always)."""
        X = np.asarray(coalitions, dtype=bool)
        keep = np.ones((X.shape[0], self.prompt.size), dtype=bool)
        keep[:, self.covered] = X[:, self.owner[self.covered]]
        return keep

    def token_lists(self, coalitions: np.ndarray) -> list[np.ndarray]:
        """What a log-probability function is given: each coalition's kept prompt tokens (after ``start``; removed
        ones replaced by ``removal`` where it is a token id)."""
        keep = self.keep(coalitions)
        if self.removal is not None:
            rows = np.where(keep, self.prompt[None, :], self.removal)
            keep = np.ones_like(keep)
        else:
            rows = np.broadcast_to(self.prompt, keep.shape)
        rows = np.concatenate([np.broadcast_to(self.start, (keep.shape[0], self.start.size)), rows], axis=1)
        keep = np.concatenate([np.ones((keep.shape[0], self.start.size), bool), keep], axis=1)
        return np.split(rows[keep], np.cumsum(keep.sum(axis=1))[:-1])

    def _evaluate(self, coalitions: np.ndarray) -> np.ndarray:
        m, T = coalitions.shape[0], self.target.size
        if self.lm is not None:
            out = self.lm.score(self.start, self.prompt, self.keep(coalitions), self.target, self.removal)
        else:
            lists = self.token_lists(coalitions)
            step = self.rows or max(m, 1)
            out = np.concatenate([self._call(lists[a:a + step]) for a in range(0, m, step)], axis=0)
        self.sequences += m
        return out if self.per_token else out.sum(axis=1)

    def _call(self, lists: list[np.ndarray]) -> np.ndarray:
        """One call of the log-probability function, its answer checked (shape, finite, at most 0)."""
        T = self.target.size
        raw = self.model(lists, self.target.copy())
        self.calls += 1
        out = np.asarray(raw.detach().double().cpu().numpy() if hasattr(raw, "detach") else raw, dtype=float)
        if out.shape != (len(lists), T):
            raise ValueError(f"model: the log-probability function returned shape {out.shape} for {len(lists)} "
                             f"prompts and a target of {T} tokens; it must return ({len(lists)}, {T})")
        if not np.all(np.isfinite(out)):
            bad = int(np.flatnonzero(~np.all(np.isfinite(out), axis=1))[0])
            raise ValueError(f"model: the log-probability function returned {out[bad]} (NaN or inf) for the kept "
                             f"tokens {lists[bad].tolist()[:12]}")
        if out.max() > 1e-6:
            raise ValueError(f"model: the log-probability function returned {out.max():.4g} > 0; log-probabilities "
                             "are at most 0 (probabilities or logits given?)")
        return out

    # ------------------------------------------------------------------------------------ what it is
    def hierarchy(self) -> list:
        """The players nested document > paragraphs > sentences > words (blocks of at most ``branching`` parts),
        the partition of Owen values for long prompts.

        Examples
        --------
        >>> g = GenerationGame(lambda ts, t: np.zeros((len(ts), len(t))), prompt=list(range(20)), target=[1])
        >>> g.hierarchy()[:2]                   # 20 tokens of one sentence: 8 runs of consecutive tokens
        [[0, 1], [2, 3, 4]]
        """
        return span_hierarchy(self.ranges, self.pieces, self.branching)

    def answer_tokens(self) -> list[str]:
        """The target's tokens as text (``"[id]"`` without a tokenizer)."""
        return [p.strip() or p for p in token_pieces(self.target, self.tokenizer)]

    def answer_text(self) -> str:
        """The target as text: the tokenizer's decoding of it (its spaces kept), else its tokens' pieces joined.

        Examples
        --------
        >>> GenerationGame(lambda ts, t: np.zeros((len(ts), len(t))), prompt=[1, 2], target=[3, 4]).answer_text()
        '[3] [4]'
        """
        if callable(getattr(self.tokenizer, "decode", None)):
            return str(self.tokenizer.decode([int(i) for i in self.target]))
        return "".join(token_pieces(self.target, self.tokenizer)).strip()

    def own_texts(self) -> list[str]:
        """Each span's own text (its tokens' pieces joined, without the tokens in no span that :attr:`span_texts`
        shows with it), the players' names.

        Examples
        --------
        >>> lp = lambda ts, t: np.zeros((len(ts), len(t)))
        >>> GenerationGame(lp, prompt=[1, 2, 3, 4], target=[3], spans=[(0, 1), (3, 4)]).own_texts()
        ['[1] ', '[4] ']
        """
        return ["".join(self.pieces[a:b]) for a, b in self.ranges]

    def prompt_text(self) -> str:
        """The prompt as text: the string given, else its tokens' pieces joined."""
        return self.text if self.text is not None else "".join(self.pieces)

    def info(self) -> dict:
        """What the game ran to score coalitions: forward passes (sequences through the model: one per coalition,
        and one of the whole prompt where the KV cache serves a prefix), model calls, and for causal LMs the
        positions computed (and without the cache) and whether the KV cache served a prefix; and the forward passes
        of the greedy continuation, when the game was made (``generation_passes``)."""
        if self.lm is not None:
            ran = self.lm.info()
        else:
            ran = {"forward_passes": self.sequences, "model_calls": self.calls}
        return {**ran, "generation_passes": self.generation_passes, "prompt_tokens": int(self.prompt.size),
                "target": self.target.tolist(), "answer": self.answer_tokens(), "spans": self.spans
                if isinstance(self.spans, str) else [list(r) for r in self.ranges],
                "removal": "drop" if self.removal is None else int(self.removal), "per_token": self.per_token}
