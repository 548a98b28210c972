"""Planted sources in long prompts: the sentence an answer comes from ranks first within the budget, and a larger
budget does not rank it worse (owen-adaptive with ``refine``, a generation game's default: more budget sharpens the
values of the blocks already open instead of walking two whole orders from the start, or only opening deeper
blocks whose values are pinned to those of their noisy parents)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import fairshare as fs

KEYS, DECOYS, FILLER = (1, 2, 3, 4), (5, 6, 7, 8, 9, 10), 50


class Words:
    """A whitespace tokenizer of ``k1..``, ``w1..`` and ``.``: each token decodes to its word and a space."""

    def __init__(self) -> None:
        self.words = ["."] + [f"k{i}" for i in range(1, 11)] + [f"w{i}" for i in range(FILLER)]
        self.vocab = {w: i for i, w in enumerate(self.words)}

    def encode(self, text: str, add_special_tokens: bool = False) -> list[int]:
        return [self.vocab[w] for w in text.split()]

    def decode(self, ids: list[int]) -> str:
        return " ".join(self.words[i] for i in ids) + " "


def document(rng: np.random.Generator, sentences: int = 30) -> tuple[str, int]:
    """Sentences of 6-13 filler words; one (the source) holds the 4 keys, three others 2 decoys each."""
    body = [[f"w{i}" for i in rng.integers(0, FILLER, int(rng.integers(6, 14)))] for _ in range(sentences)]
    where = rng.permutation(sentences)[:4]
    for s, planted in zip(where, [KEYS, DECOYS[:2], DECOYS[2:4], DECOYS[4:]]):
        spots = rng.choice(len(body[s]), len(planted), replace=False)
        for spot, key in zip(spots, planted):
            body[s][spot] = f"k{key}"
    return " ".join(" ".join(words) + " ." for words in body), int(where[0])


def logprobs(token_lists, target):
    """The answer's log-probability saturates in its evidence: the keys kept, plus half the decoys kept (so the
    source sentence's Owen value is about twice a decoy sentence's), and a small association of every filler word."""
    weight = np.zeros(11 + FILLER)
    weight[list(KEYS)], weight[list(DECOYS)] = 1.0, 0.5
    drift = np.random.default_rng(0).normal(0.0, 0.02, 11 + FILLER)
    drift[:11] = 0.0
    evidence = np.array([weight[t].sum() for t in token_lists])
    score = 6.0 * np.tanh(evidence / 2.0) + np.array([drift[t].sum() for t in token_lists])
    return np.repeat((score - np.logaddexp(np.log(500.0), score + np.log(3.0)))[:, None], len(target), axis=1)


def sentence_first(text: str, where: int, budget: int) -> bool:
    game = fs.games.GenerationGame(logprobs, text, target=[0, 0, 0], tokenizer=Words())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", fs.FairshareWarning)
        e = fs.explain(game, budget=budget, seed=0, progress=False)
    assert e.method == "owen-adaptive"
    sentence = np.cumsum([p.strip() == "." for p in game.pieces]) - np.array([p.strip() == "." for p in game.pieces])
    return bool(np.argmax(np.bincount(sentence, weights=e.values[0])) == where)


def test_the_planted_sentence_ranks_first_and_more_budget_does_not_rank_it_worse():
    docs = [document(np.random.default_rng(seed)) for seed in range(12)]
    first = {budget: sum(sentence_first(text, where, budget) for text, where in docs) for budget in (300, 1200)}
    assert first[1200] >= 11 and first[1200] >= first[300]


def test_refine_adds_up_same_seed_same_bits_and_walks_open_blocks_again():
    from test_owen import soum

    partition = [[[0, 1], [2, 3, 4]], [[5, 6], [7]], [[8, 9, 10, 11]]]
    g = fs.games.FunctionGame(soum(12, 3), n_players=12)
    exact = fs.exact(g, "owen", partition=partition).values
    runs = [fs.estimate(g, "owen", partition=partition, budget=3000, seed=0, method="owen-adaptive", refine=True)
            for _ in range(2)]
    np.testing.assert_array_equal(runs[0].values, runs[1].values)
    a = runs[0]
    assert a.values.sum() == pytest.approx(a.grand_value - a.empty_value, abs=1e-9) and a.n_evaluations <= 3000
    assert a.info["n_walks"] > 4 * 6                       # blocks walked again: more than 4 walks of each of 6
    assert np.all(np.isfinite(a.stderr)) and np.max(np.abs(a.values - exact)) < 4 * np.max(a.stderr) + 1e-9
