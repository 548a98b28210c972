"""A causal language model (a Hugging Face ``AutoModelForCausalLM``, or any torch module called like one) as a scorer
of an answer: the log-probability of each target token given a prompt with some of its tokens removed.

Every sequence is a start token, the prompt's kept tokens (a removed one cut out, or replaced by a token the
attention mask hides) and the target, teacher-forced. Sequences of a batch are padded on the left, so that the
target sits at the same positions in every row and only its logits are computed (``logits_to_keep`` where the
model takes it); position ids count only the tokens the mask shows, so a row reads as it would alone. Batches
hold at most ``batch_size`` rows (default: about 16,384 positions and 64M logits per call), built one at a time
on the model's device, under ``torch.inference_mode()`` and in eval mode.

**Batch size and rounding.** A row's log-probabilities are the same whatever rows share its batch up to the
model's rounding only: a batch of another size or padding width sums in another order (float32: about 1e-7 of
the log-probability, float64: 1e-15), so values at another ``batch_size`` agree to that, not bit for bit (the
same ``batch_size`` and seed give the same bits).

**The kept common prefix.** The tokens before the first removed one are the full prompt's, at the same
positions, so their keys and values are the full prompt's. The rows of a call are sorted by how many leading
tokens they keep; a batch whose rows share a prefix of at least :data:`MIN_PREFIX` tokens starts from the full
prompt's KV cache cut to it (the prompt is run once, with ``use_cache``), and the model computes only the rest.
Models whose forward takes no cache, or whose cache cannot be cut and repeated, run every position; ``info()``
says which, and counts sequences (forward passes), model calls and positions computed.
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Sequence
from typing import Any

import numpy as np

from .torch_game import module_input

__all__ = ["CausalLM", "is_causal_lm", "MIN_PREFIX"]

#: the shortest common prefix read from the KV cache (shorter ones are computed again: cutting and repeating a
#: cache costs more than a few positions)
MIN_PREFIX = 8
_TOKENS_PER_CALL = 1 << 14
_LOGITS_PER_CALL = 1 << 26


def is_causal_lm(model: Any) -> bool:
    """Whether ``model`` is a torch module (a causal LM is called with ``input_ids``, it returns logits).

    Examples
    --------
    >>> is_causal_lm(len)
    False
    """
    return hasattr(model, "forward") and hasattr(model, "parameters") and callable(model)


def _config(model: Any, *names: str) -> int | None:
    config = getattr(model, "config", None)
    for name in names:
        value = getattr(config, name, None)
        if isinstance(value, (int, np.integer)) and not isinstance(value, bool) and value > 0:
            return int(value)
    return None


class CausalLM:
    """A torch causal LM scoring targets in batches (see the module docstring).

    Parameters
    ----------
    model : torch module whose ``forward(input_ids=..., attention_mask=...)`` returns logits (or an object with
        ``.logits``), ``(batch, positions, vocabulary)``
    batch_size : most rows per model call (None: by the lengths, see the module docstring)
    kv_cache : reuse the full prompt's keys and values for a kept common prefix where the model allows it
    """

    def __init__(self, model: Any, batch_size: int | None = None, kv_cache: bool = True) -> None:
        import torch

        self.model, self.batch_size, self.torch = model, batch_size, torch
        params = inspect.signature(model.forward).parameters
        self.cache_arg = next((a for a in ("cache", "past_key_values") if a in params), None)
        self.keep_arg = next((a for a in ("logits_to_keep", "num_logits_to_keep") if a in params), None)
        self.positions = "position_ids" in params
        self.kv_cache = bool(kv_cache) and self.cache_arg is not None
        self.kv_note = "used" if self.kv_cache else ("off (kv_cache=False)" if not kv_cache else
                                                       "the model's forward takes no cache")
        device = getattr(model, "device", None)
        if device is None:                           # where its first weight lives (a module of none: the CPU)
            device = module_input(model)[1] or torch.device("cpu")
        self.device = device
        head = model.get_output_embeddings() if callable(getattr(model, "get_output_embeddings", None)) else None
        self.vocab_size = _config(model, "vocab_size") or (int(head.weight.shape[0]) if head is not None else None)
        self.context = _config(model, "n_positions", "max_position_embeddings", "n_ctx", "seq_length")
        self.passes = self.calls = self.tokens = self.tokens_plain = 0
        self._prefix: Any = None

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_prefix"], state["torch"] = None, None          # a cache of this process's device is not shipped
        return state

    def __setstate__(self, state: dict) -> None:
        import torch

        self.__dict__.update(state)
        self.torch = torch

    # ------------------------------------------------------------------------------------------- calls
    def _forward(self, ids: Any, mask: Any, positions: Any, keep: int | None, cache: Any = None,
                 want_cache: bool = False) -> Any:
        kwargs: dict[str, Any] = {"input_ids": ids, "attention_mask": mask}
        if self.positions:
            kwargs["position_ids"] = positions
        if keep is not None and self.keep_arg is not None:
            kwargs[self.keep_arg] = keep
        if self.cache_arg is not None:
            kwargs["use_cache"] = want_cache or cache is not None
            if cache is not None:
                kwargs[self.cache_arg] = cache
        out = self.model(**kwargs)
        self.calls += 1
        self.passes += int(ids.shape[0])
        logits = out if isinstance(out, self.torch.Tensor) else getattr(out, "logits", None)
        if logits is None and isinstance(out, (tuple, list)):
            logits = out[0]
        if logits is None or logits.ndim != 3 or logits.shape[0] != ids.shape[0]:
            raise ValueError(f"model: its forward must return logits (batch, positions, vocabulary); got "
                             f"{type(out).__name__}")
        cache_out = None
        if want_cache:
            cache_out = getattr(out, "cache", None) if self.cache_arg == "cache" else None
            cache_out = cache_out if cache_out is not None else getattr(out, "past_key_values", None)
        return logits, cache_out

    def run(self, fn: Any, *args: Any) -> Any:
        """``fn(*args)`` under ``torch.inference_mode()`` with the model in eval mode (its mode restored)."""
        training = bool(getattr(self.model, "training", False))
        if training:
            self.model.eval()
        try:
            with self.torch.inference_mode():
                return fn(*args)
        finally:
            if training:
                self.model.train(True)

    # ----------------------------------------------------------------------------------------- scoring
    def score(self, start: np.ndarray, prompt: np.ndarray, keep: np.ndarray, target: np.ndarray,
              replacement: int | None) -> np.ndarray:
        """``(m, T)`` log-probabilities of ``target``'s tokens after ``start`` + the prompt's ``keep`` tokens
        (``keep`` (m, L) bool; a removed token cut out, or shown as ``replacement`` under mask 0).

        Examples
        --------
        >>> import torch
        >>> class Uniform(torch.nn.Module):                   # every token equally likely: log(1/4) each
        ...     def forward(self, input_ids, attention_mask):
        ...         return torch.zeros(input_ids.shape + (4,))
        >>> lm = CausalLM(Uniform())
        >>> lm.score(np.array([0]), np.array([1, 2]), np.array([[True, False]]), np.array([3, 3]), None).round(3)
        array([[-1.386, -1.386]])
        """
        return self.run(self._score, np.asarray(start, dtype=np.int64), np.asarray(prompt, dtype=np.int64),
                        np.asarray(keep, dtype=bool), np.asarray(target, dtype=np.int64), replacement)

    def _score(self, start: np.ndarray, prompt: np.ndarray, keep: np.ndarray, target: np.ndarray,
               replacement: int | None) -> np.ndarray:
        m, L = keep.shape
        s, T = start.size, target.size
        lead = np.where(keep.all(axis=1), L, np.argmin(keep, axis=1))       # leading kept tokens of each row
        kept = keep.sum(axis=1) if replacement is None else np.full(m, L)
        order = np.argsort(-lead, kind="stable")
        out = np.empty((m, T))
        rows = self._rows(int(s + kept.max() + T - 1), T)
        for a in range(0, m, rows):
            chunk = order[a:a + rows]
            prefix = min(s + int(lead[chunk].min()), s + int(kept[chunk].min()) - 1)
            out[chunk] = self._batch(start, prompt, keep[chunk], target, replacement, prefix)
        return out

    def _rows(self, length: int, T: int) -> int:
        if self.batch_size is not None:
            return self.batch_size
        vocab = self.vocab_size or 1
        return int(max(1, min(64, _TOKENS_PER_CALL // max(length, 1), _LOGITS_PER_CALL // max(T * vocab, 1))))

    def _batch(self, start: np.ndarray, prompt: np.ndarray, keep: np.ndarray, target: np.ndarray,
               replacement: int | None, prefix: int) -> np.ndarray:
        """The log-probabilities of one batch of rows sharing ``prefix`` leading positions."""
        torch = self.torch
        b, T = keep.shape[0], target.size
        cache = self._cut(start, prompt, prefix, b) if prefix >= MIN_PREFIX and self.kv_cache else None
        skip = prefix if cache is not None else 0
        body = np.concatenate([np.broadcast_to(start, (b, start.size)), np.broadcast_to(prompt, keep.shape),
                               np.broadcast_to(target[:-1], (b, T - 1))], axis=1)
        shown = np.concatenate([np.ones((b, start.size), bool), keep, np.ones((b, T - 1), bool)], axis=1)
        if replacement is None:        # cut out: the shown tokens, the common prefix first, the rest padded on the left
            lengths = shown.sum(axis=1)
            width = int(lengths.max())
            ids, mask = np.zeros((b, width), np.int64), np.zeros((b, width), np.int64)
            rank = np.cumsum(shown, axis=1) - 1
            cols = np.where(rank < skip, rank, width - lengths[:, None] + rank)
            r = np.broadcast_to(np.arange(b)[:, None], shown.shape)
            ids[r[shown], cols[shown]] = body[shown]
            mask[r[shown], cols[shown]] = 1
        else:                                               # replaced, hidden by the mask, at their own positions
            ids = np.where(shown, body, replacement)
            mask = shown.astype(np.int64)
        self.tokens_plain += int(ids.size)
        self.tokens += int(ids[:, skip:].size)
        positions = np.maximum(np.cumsum(mask, axis=1) - 1, 0) if replacement is None else \
            np.broadcast_to(np.arange(ids.shape[1]), ids.shape)
        ids_t = torch.as_tensor(ids[:, skip:], device=self.device)
        mask_t = torch.as_tensor(mask, device=self.device)
        pos_t = torch.as_tensor(np.array(positions[:, skip:]), device=self.device)    # a copy: broadcast is read-only
        logits, _ = self._forward(ids_t, mask_t, pos_t, T, cache)
        # half precision is read in float32 (a stable log-softmax); float64 stays float64 (it was cast down)
        logits = logits[:, -T:, :]
        logp = torch.log_softmax(logits.to(torch.promote_types(logits.dtype, torch.float32)), dim=-1)
        picked = logp.gather(2, torch.as_tensor(target, device=self.device).view(1, T, 1).expand(b, T, 1))
        return picked[:, :, 0].double().cpu().numpy()

    def _cut(self, start: np.ndarray, prompt: np.ndarray, prefix: int, rows: int) -> Any:
        """The full prompt's KV cache cut to its first ``prefix`` positions, repeated for ``rows`` rows; None where
        the model's cache cannot be cut (then every position is computed, and ``info()`` says so)."""
        torch = self.torch
        try:
            if self._prefix is None:
                full = np.concatenate([start, prompt])[None, :]
                ids = torch.as_tensor(full, device=self.device)
                _, cache = self._forward(ids, torch.ones_like(ids), torch.arange(full.shape[1], device=self.device)
                                         [None, :], 1, want_cache=True)
                self.tokens += int(full.size)
                if cache is None or not hasattr(cache, "crop") or not hasattr(cache, "batch_repeat_interleave"):
                    raise TypeError(f"its cache ({type(cache).__name__}) cannot be cut and repeated")
                self._prefix = cache
            cache = copy.deepcopy(self._prefix)
            extra = start.size + prompt.size - prefix
            if extra > 0:
                cache.crop(-extra)
            cache.batch_repeat_interleave(rows)
            return cache
        except (TypeError, AttributeError, ValueError, RuntimeError) as exc:
            self.kv_cache, self.kv_note = False, f"not used: {exc}"
            return None

    # --------------------------------------------------------------------------------------- generation
    def greedy(self, context: np.ndarray, max_new_tokens: int, eos: int | Sequence[int] | None) -> np.ndarray:
        """The model's greedy continuation of ``context`` (at most ``max_new_tokens`` tokens, up to and with
        ``eos``: an end-of-sequence token id, or a list of them, any of which ends it), one forward pass per token,
        each reading the cache of the ones before where the model keeps one.

        Examples
        --------
        >>> import torch
        >>> class Next(torch.nn.Module):                      # always the next id
        ...     def forward(self, input_ids, attention_mask):
        ...         return torch.nn.functional.one_hot((input_ids + 1) % 9, 9).float()
        >>> CausalLM(Next()).greedy(np.array([0, 3]), 3, eos=5).tolist()
        [4, 5]
        >>> CausalLM(Next()).greedy(np.array([0, 3]), 3, eos=[8, 4]).tolist()       # any of them ends it
        [4]
        """
        ends = set() if eos is None else {int(eos)} if isinstance(eos, (int, np.integer)) else {int(e) for e in eos}
        return self.run(self._greedy, np.asarray(context, dtype=np.int64), int(max_new_tokens), ends)

    def _greedy(self, context: np.ndarray, steps: int, ends: set[int]) -> np.ndarray:
        torch = self.torch
        seq = torch.as_tensor(context[None, :], device=self.device)
        out: list[int] = []
        cache = None
        for _ in range(steps):
            fed = seq if cache is None else seq[:, -1:]
            positions = torch.arange(seq.shape[1] - fed.shape[1], seq.shape[1], device=self.device)[None, :]
            logits, cache = self._forward(fed, torch.ones_like(seq), positions, 1, cache,
                                          want_cache=self.cache_arg is not None)
            last = logits[0, -1]
            token = int(torch.argmax(last.to(torch.promote_types(last.dtype, torch.float32))))
            out.append(token)
            if token in ends:
                break
            seq = torch.cat([seq, torch.tensor([[token]], device=self.device)], dim=1)
        return np.asarray(out, dtype=np.int64)

    def info(self) -> dict:
        """What the model ran: sequences (forward passes: the greedy continuation's and the prompt's pass for the KV
        cache included), model calls, and the positions the scoring computed, and would have without the cache."""
        return {"forward_passes": self.passes, "model_calls": self.calls, "positions_computed": self.tokens,
                "positions_without_kv_cache": self.tokens_plain, "kv_cache": self.kv_note}
