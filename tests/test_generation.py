"""Language models: GenerationGame on synthetic log-probability functions whose answer rests on planted spans (exact
values known), and on a tiny GPT-2 with random weights and a tokenizer built here from a small vocabulary (no
download); fs.explain(game) with the door's guarantees; the text plot and HTML per answer token; the CLI."""

from __future__ import annotations

import unicodedata

import numpy as np
import pytest

import fairshare as fs
from fairshare.games.spans import span_hierarchy, spans_of, unit_starts
from tiny_lm import PROMPT, tiny_gpt2


# ---------------------------------------------------------------------------------------- synthetic models
def needs(sources: list, weight: float = 2.0):
    """A log-probability function: answer token ``j`` is likely (log 0) when every id of ``sources[j]`` is kept,
    else unlikely (-weight); its exact Shapley values: ``weight / len(sources[j])`` to each of them."""
    def logprobs(token_lists, target):
        return np.array([[0.0 if all(s in t for s in need) else -weight for need in sources] for t in token_lists])

    return logprobs


def test_values_add_up_and_go_to_the_planted_tokens():
    game = fs.games.GenerationGame(needs([[7], [7, 3]]), prompt=[1, 7, 5, 3, 9], target=[20, 21])
    e = fs.explain(game, progress=False)
    assert e.method == "exact" and e.index == "shapley"
    np.testing.assert_allclose(e.values[0], [0.0, 3.0, 0.0, 1.0, 0.0], atol=1e-12)
    assert e.values[0].sum() == pytest.approx(float(e.grand_value[0] - e.empty_value[0]))
    assert e.grand_value[0] == 0.0 and e.empty_value[0] == -4.0         # log p(target | prompt) - | nothing kept
    per = fs.explain(fs.games.GenerationGame(needs([[7], [7, 3]]), prompt=[1, 7, 5, 3, 9], target=[20, 21],
                                             per_token=True), progress=False)
    np.testing.assert_allclose(per.values[0, :, 0], [0, 2, 0, 0, 0], atol=1e-12)
    np.testing.assert_allclose(per.values[0, :, 1], [0, 1, 0, 1, 0], atol=1e-12)
    np.testing.assert_allclose(per.values[0].sum(axis=1), e.values[0], atol=1e-12)
    assert per.output_names == ["0:[20]", "1:[21]"] and per.info["per_token"]


def test_a_log_probability_function_may_answer_in_bfloat16():
    """A language model run in bfloat16 answers in a dtype numpy lacks: read as float64 (it stopped the game)."""
    torch = pytest.importorskip("torch")
    planted = needs([[7], [7, 3]])
    as_bf16 = lambda lists, target: torch.as_tensor(planted(lists, target), dtype=torch.bfloat16)   # noqa: E731
    e = fs.explain(fs.games.GenerationGame(as_bf16, prompt=[1, 7, 5, 3, 9], target=[20, 21]), progress=False)
    np.testing.assert_allclose(e.values[0], [0.0, 3.0, 0.0, 1.0, 0.0], atol=1e-12)   # -2 and 0: exact in bfloat16


def test_spans_and_replacement_tokens():
    game = fs.games.GenerationGame(needs([[7]]), prompt=[1, 7, 5, 3], target=[2], spans=[(0, 2), (3, 4)],
                                   removal=0)
    assert game.token_lists(np.array([[False, True]]))[0].tolist() == [0, 0, 5, 3]   # token 2 is in no span: kept
    np.testing.assert_allclose(fs.explain(game, progress=False).values[0], [2.0, 0.0])


def test_a_long_prompt_gets_owen_adaptive_over_its_hierarchy_and_finds_the_planted_span():
    rng = np.random.default_rng(0)
    prompt = rng.integers(100, 5000, 4000)
    prompt[2417:2421] = [7, 8, 9, 11]                              # the planted source of the answer
    source = [7, 8, 9, 11]

    def logprobs(token_lists, target):                              # saturating in the source tokens kept
        kept = np.array([np.isin(source, t).sum() for t in token_lists], dtype=float)
        noise = np.array([0.001 * (t[t % 97 == 0].size % 5) for t in token_lists])
        return np.repeat((-3.0 + 3.0 * np.tanh(kept / 2.0) - noise)[:, None], len(target), axis=1)

    game = fs.games.GenerationGame(logprobs, prompt=prompt, target=[1, 2])
    with pytest.warns(fs.FairshareWarning, match="blocks the budget did not open"):
        e = fs.explain(game, budget=1000, seed=0, progress=False)
    assert (e.index, e.method) == ("owen", "owen-adaptive") and "4000 players > 64" in e.info["index_choice"]
    assert e.options["walks"] == game.walks == 8
    assert 2417 <= int(np.argmax(e.values[0])) < 2421
    assert e.info["forward_passes"] == e.n_evaluations[0] <= 1000
    assert e.values[0].sum() == pytest.approx(float(e.grand_value[0] - e.empty_value[0]))
    short = fs.games.GenerationGame(logprobs, prompt=prompt[2380:2480], target=[1, 2])
    assert fs.explain(short, budget=400, seed=0, progress=False).index == "owen"        # 100 players > 64
    shapley = fs.explain(short, method="kernelshap", budget=400, seed=0, progress=False)
    assert (shapley.index, shapley.method) == ("shapley", "kernelshap") and 37 <= np.argmax(shapley.values) < 41
    assert shapley.info["forward_passes"] == shapley.n_evaluations[0] <= 400      # this run's passes only


def test_same_seed_same_bits_cache_resume_and_dask(tmp_path):
    distributed = pytest.importorskip("distributed")
    rng = np.random.default_rng(1)
    prompt = rng.integers(10, 90, 120)

    def make():
        return fs.games.GenerationGame(needs([[int(prompt[5]), int(prompt[70])], [int(prompt[100])]]), prompt=prompt,
                                       target=[1, 2], per_token=True)

    args = dict(budget=300, seed=3, progress=False)
    first = fs.explain(make(), cache=tmp_path / "c", **args)
    again = make()
    resumed = fs.explain(again, cache=tmp_path / "c", **args)
    np.testing.assert_array_equal(first.values, resumed.values)
    np.testing.assert_array_equal(first.stderr, resumed.stderr)
    assert again.sequences == 0                                      # every value read from the cache
    np.testing.assert_array_equal(first.values, fs.explain(make(), **args).values)
    with distributed.Client(processes=False, n_workers=1, threads_per_worker=1, dashboard_address=None) as client:
        remote = fs.explain(make(), client=client, **args)
    np.testing.assert_array_equal(first.values, remote.values)


def test_a_function_that_returns_the_wrong_shape_or_nan_is_refused_on_its_first_batch():
    calls = []

    def wrong(token_lists, target):
        calls.append(len(token_lists))
        return np.zeros(len(token_lists))

    with pytest.raises(ValueError, match=r"model: .*returned shape \(8,\) for 8 prompts and a target of 2 tokens"):
        fs.explain(fs.games.GenerationGame(wrong, prompt=[1, 2, 3], target=[4, 5]), progress=False)
    assert calls == [8]
    nan = fs.games.GenerationGame(lambda ts, t: np.full((len(ts), len(t)), np.nan), prompt=[1, 2], target=[3])
    with pytest.raises(ValueError, match="model: .*NaN"):
        fs.explain(nan, progress=False)
    with pytest.raises(ValueError, match="model: .*> 0"):
        fs.explain(fs.games.GenerationGame(lambda ts, t: np.full((len(ts), len(t)), 0.5), prompt=[1], target=[3]),
                   progress=False)


def test_the_door_refuses_what_a_game_does_not_take():
    game = fs.games.GenerationGame(needs([[7]]), prompt=[1, 7], target=[2])
    with pytest.raises(ValueError, match="background"):
        fs.explain(game, background=np.zeros((1, 2)))
    with pytest.raises(ValueError, match="^X: "):
        fs.explain(lambda X: X.sum(axis=1))
    with pytest.raises(ValueError, match="target: a log-probability function cannot continue"):
        fs.games.GenerationGame(needs([[7]]), prompt=[1, 7])
    with pytest.raises(ValueError, match="spans='words' reads the prompt's text"):
        fs.games.GenerationGame(needs([[7]]), prompt=[1, 7], target=[2], spans="words")


# ------------------------------------------------------------------------------------------ spans and text
def test_words_sentences_and_paragraphs_of_subword_pieces():
    pieces = ["Par", "is", " is", " big", ".", " It", " rains", ",", " often", ".\n\n", "Yes", "!"]
    starts = unit_starts(pieces)
    assert np.flatnonzero(starts["words"]).tolist() == [0, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]
    assert np.flatnonzero(starts["sentences"]).tolist() == [0, 5, 10]
    assert np.flatnonzero(starts["paragraphs"]).tolist() == [0, 10]
    assert spans_of("sentences", pieces) == [(0, 5), (5, 10), (10, 12)]
    assert span_hierarchy(spans_of("words", pieces), pieces) == [[[0, 1, 2, 3], [4, 5, 6, 7, 8]], [9, 10]]
    assert span_hierarchy(spans_of("tokens", pieces), pieces) == [[[[0, 1], 2, 3, 4], [5, 6, 7, 8, 9]], [10, 11]]


class _NoOffsets:
    """Only encode / decode (the kind :func:`fairshare.games.spans.encode`'s docstring shows), no offsets."""

    def __init__(self, tokenizer):
        self.tokenizer = tokenizer

    def encode(self, text, add_special_tokens=False):
        return self.tokenizer.encode(text, add_special_tokens=False)

    def decode(self, ids):
        return self.tokenizer.decode(ids)


class _Bytes:
    """One token per UTF-8 byte, no offsets: a character of two bytes decodes to U+FFFD byte by byte."""

    def encode(self, text, add_special_tokens=False):
        return list(text.encode("utf-8"))

    def decode(self, ids):
        return bytes(int(i) for i in ids).decode("utf-8", errors="replace")


def _lp(token_lists, target):
    return np.zeros((len(token_lists), len(target)))


@pytest.mark.parametrize("text", [PROMPT, "  the cat sat .\nthe dog ran .\n\n\nParis is old .  ",
                                  "the  cat\tsat . \n \n the mat"])
def test_a_tokenizer_without_offsets_gives_the_spans_of_one_with_offsets(text):
    """Pieces decoded token by token lost the prompt's whitespace: 'words' merged 'the old cat' into 'theoldcat'
    and a prompt of two paragraphs had one. They are now found in the prompt's text, which they rebuild."""
    tokenizer = tiny_gpt2()[1]
    for spans in ("tokens", "words", "sentences", "paragraphs"):
        with_offsets = fs.games.GenerationGame(_lp, text, target=[5], tokenizer=tokenizer, spans=spans)
        without = fs.games.GenerationGame(_lp, text, target=[5], tokenizer=_NoOffsets(tokenizer), spans=spans)
        assert without.ranges == with_offsets.ranges and without.span_texts == with_offsets.span_texts
        assert "".join(without.pieces) == "".join(without.span_texts) == text
    words = fs.games.GenerationGame(_lp, PROMPT, target=[5], tokenizer=_NoOffsets(tokenizer), spans="words")
    assert words.player_names[:3] == ["0:the", "1:old", "2:cat"] and words.n_players == 23
    paragraphs = fs.games.GenerationGame(_lp, PROMPT, target=[5], tokenizer=_NoOffsets(tokenizer), spans="paragraphs")
    assert paragraphs.span_texts == [PROMPT[:PROMPT.index("Paris")], "Paris is the capital of France ."]


def test_bytes_of_one_character_and_a_decoding_that_is_not_the_prompt():
    text = "café au lait.\n\nNé ici."
    game = fs.games.GenerationGame(_lp, text, target=[5], tokenizer=_Bytes(), spans="words")
    assert "".join(game.pieces) == text and game.n_players == 7
    assert [t.strip() for t in game.span_texts] == ["café", "au", "lait", ".", "Né", "ici", "."]
    assert fs.games.GenerationGame(_lp, text, target=[5], tokenizer=_Bytes(), spans="paragraphs").n_players == 2

    class Upper(_Bytes):                                       # decodes to other text: it cannot be aligned
        def decode(self, ids):
            return "X" + super().decode(ids)
    with pytest.raises(ValueError, match=r"spans='words': tokenizer: Upper gives no offsets, and its decoding of "
                                         r"token 0 \('Xc'\) is not in the prompt's text"):
        fs.games.GenerationGame(_lp, text, target=[5], tokenizer=Upper(), spans="words")
    with pytest.warns(fs.FairshareWarning, match="each token is decoded on its own"):
        tokens = fs.games.GenerationGame(_lp, text, target=[5], tokenizer=Upper(), spans="tokens")
    assert tokens.n_players == len(text.encode("utf-8")) and tokens.pieces[0] == "Xc"


# ------------------------------------------------------------------------------------------- a tiny GPT-2
@pytest.fixture(scope="module")
def tiny():
    """:func:`tiny_lm.tiny_gpt2` (float32), run on one thread."""
    torch = pytest.importorskip("torch")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)              # a tiny model: one thread (spinning threads on a busy machine cost 100x)
    yield tiny_gpt2()
    torch.set_num_threads(threads)




def _direct(model, game, S):
    """log p(target | kept) of each coalition, one unpadded sequence at a time."""
    import torch

    out = []
    for keep in game.keep(S):
        shown = np.concatenate([[True], keep if game.removal is None else np.ones_like(keep),
                                [True] * game.target.size])
        ids = np.concatenate([game.start, game.prompt if game.removal is None else
                              np.where(keep, game.prompt, game.removal), game.target])
        mask = np.concatenate([[1], keep, np.ones(game.target.size)]).astype(np.int64)
        ids, mask = ids[shown], (mask[shown] if game.removal is not None else np.ones(shown.sum(), np.int64))
        with torch.inference_mode():
            logp = model(input_ids=torch.as_tensor(ids[None]), attention_mask=torch.as_tensor(mask[None]),
                         position_ids=torch.arange(ids.size)[None]).logits[0].log_softmax(-1)
        c = ids.size - game.target.size
        out.append(sum(float(logp[c - 1 + j, t]) for j, t in enumerate(game.target)))
    return np.array(out)


@pytest.mark.parametrize("removal", ["drop", 1])
def test_tiny_gpt2_batches_with_padding_and_kv_cache_match_one_sequence_at_a_time(tiny, removal):
    model, tokenizer = tiny
    rng = np.random.default_rng(0)
    S = rng.random((30, 23)) < 0.6
    S[:6, :12] = True                                                 # long kept prefixes: the KV cache serves them
    S[6] = False
    for kv in (True, False):
        game = fs.games.GenerationGame(model, PROMPT, target="Paris is old", tokenizer=tokenizer, removal=removal,
                                       kv_cache=kv, batch_size=4)
        assert game.n_players == 23 and game.target.size == 3
        np.testing.assert_allclose(game(S), _direct(model, game, S), atol=2e-5)
        assert game.info()["kv_cache"] == ("used" if kv else "off (kv_cache=False)")
        if kv:
            assert game.info()["positions_computed"] < game.info()["positions_without_kv_cache"]


def test_a_float64_language_models_log_probabilities_keep_float64(tiny):
    """The log-softmax cast the logits to float32 whatever the model's dtype: a float64 model's values were float32's
    (2e-7 relative apart between a GPU and the CPU). Half precision is still read in float32."""
    import copy

    torch = pytest.importorskip("torch")
    model, tokenizer = tiny
    wide = copy.deepcopy(model).double()
    S = np.random.default_rng(1).random((12, 23)) < 0.6
    for removal in ("drop", 1):
        game = fs.games.GenerationGame(wide, PROMPT, target="Paris is old", tokenizer=tokenizer, removal=removal,
                                       batch_size=4)
        np.testing.assert_allclose(game(S), _direct(wide, game, S), rtol=1e-12, atol=1e-12)
    half = fs.games.GenerationGame(copy.deepcopy(model).to(torch.bfloat16), PROMPT, target="Paris is old",
                                   tokenizer=tokenizer, batch_size=4)
    np.testing.assert_allclose(half(S), _direct(model, half, S), rtol=0.1)             # bfloat16: 3 digits


def test_batch_size_moves_a_causal_lms_values_by_its_rounding_only(tiny):
    """The README promised bit-for-bit values whatever the batch_size; a GenerationGame's log-probabilities moved
    by 4.8e-7 between batch sizes 1, 3 and None (float32; 8.9e-16 in float64): a batch of another size or padding
    sums in another order. What holds: the same batch_size and seed give the same bits, another batch_size the
    same values to the model's rounding."""
    import copy

    model, tokenizer = tiny
    S = np.random.default_rng(0).random((24, 23)) < 0.6
    S[:6, :8] = True
    for m, rtol in ((model, 2e-6), (copy.deepcopy(model).double(), 1e-13)):
        runs = {bs: fs.games.GenerationGame(m, PROMPT, target="the cat", tokenizer=tokenizer, spans="words",
                                            batch_size=bs) for bs in (None, 1, 3)}
        got = {bs: g(S) for bs, g in runs.items()}
        np.testing.assert_array_equal(got[3], runs[3](S))                           # the same batch size: bits
        assert np.abs(got[None]).min() > 5
        for bs in (1, 3):
            np.testing.assert_allclose(got[bs], got[None], rtol=rtol, atol=0)
    e = {bs: fs.explain(fs.games.GenerationGame(model, PROMPT, target="the cat", tokenizer=tokenizer, spans="words",
                                                batch_size=bs), progress=False, seed=0, budget=120) for bs in (None, 3)}
    scale = abs(float(e[None].empty_value.ravel()[0]))
    np.testing.assert_allclose(e[3].values, e[None].values, rtol=0, atol=2e-6 * scale)
    np.testing.assert_allclose(e[3].empty_value, e[None].empty_value, rtol=2e-6)


def test_tiny_gpt2_continuation_spans_and_values(tiny):
    torch = pytest.importorskip("torch")
    model, tokenizer = tiny
    game = fs.games.GenerationGame(model, PROMPT, tokenizer=tokenizer, spans="sentences", max_new_tokens=4,
                                   per_token=True)
    with torch.inference_mode():
        generated = model.generate(torch.as_tensor(np.concatenate([[0], game.prompt])[None]), max_new_tokens=4,
                                   do_sample=False, pad_token_id=1)[0, game.prompt.size + 1:]
    stop = np.flatnonzero(generated.numpy() == 0)
    assert game.target.tolist() == generated.numpy()[:stop[0] + 1 if stop.size else None].tolist()
    assert game.info()["generation_passes"] == game.target.size
    assert [t.strip() for t in game.span_texts] == ["the old cat sat on the mat .", "the dog ran fast , and slow .",
                                                    "Paris is the capital of France ."]
    e = fs.explain(game, progress=False)
    assert e.method == "exact" and e.values.shape == (1, 3, game.target.size)
    np.testing.assert_allclose(e.values[0].sum(axis=0), e.grand_value[0] - e.empty_value[0], atol=1e-9)
    full = game(np.ones((1, 3), bool))[0]
    assert e.grand_value[0] == pytest.approx(full)
    ax = e.plot("text")
    assert len(ax) == game.target.size
    html = e._repr_html_()
    assert html.count("<details>") == game.target.size and "the whole answer" in html


def test_text_html_escapes_prompts_and_answers(tiny):
    model, tokenizer = tiny
    game = fs.games.GenerationGame(model, "the <script> cat .", target="<script> Paris", tokenizer=tokenizer,
                                   spans="words", per_token=True)
    html = fs.explain(game, progress=False)._repr_html_()
    assert "<script>" not in html and "&lt;script&gt;" in html


def test_cli_explain_generation(tiny, tmp_path, capsys):
    import pandas as pd

    from fairshare.cli import main

    model, tokenizer = tiny
    model.save_pretrained(tmp_path / "lm")
    tokenizer.save_pretrained(tmp_path / "lm")
    (tmp_path / "prompt.txt").write_text(PROMPT, encoding="utf-8")
    assert main(["explain-generation", "--model", str(tmp_path / "lm"), "--prompt", str(tmp_path / "prompt.txt"),
                 "--target", "Paris is", "--spans", "sentences", "--out", str(tmp_path / "o.csv"), "--html",
                 str(tmp_path / "o.html"), "--quiet"]) == 0
    frame = pd.read_csv(tmp_path / "o.csv")
    assert frame["text"].tolist()[2] == "Paris is the capital of France ." and frame.shape == (3, 6)
    assert "explained 3 spans of a 23-token prompt for the answer 'Paris is'" in capsys.readouterr().out
    assert (tmp_path / "o.html").read_text(encoding="utf-8").count("<span") == 3
    assert "<h4>answer: Paris is</h4>" in (tmp_path / "o.html").read_text(encoding="utf-8")
    assert main(["explain-generation", "--model", str(tmp_path), "--prompt", str(tmp_path / "prompt.txt"),
                 "--out", str(tmp_path / "p.csv")]) == 2
    assert "no config.json" in capsys.readouterr().err
    args = ["explain-generation", "--model", str(tmp_path / "lm"), "--prompt", str(tmp_path / "prompt.txt"), "--out",
            str(tmp_path / "q.csv"), "--quiet"]
    assert main(args + ["--device", "gpu"]) == 2                      # refused before the model is read
    assert "--device gpu is not a torch device" in capsys.readouterr().err
    assert main(args + ["--device", "cuda:99"]) == 2
    assert "--device cuda:99: this" in capsys.readouterr().err          # no CUDA, or not 100 of them
    assert main(args + ["--removal", "999"]) == 2                       # the door's "removal:" names the flag
    assert "fairshare: error: --removal: token id 999 is outside the vocabulary" in capsys.readouterr().err


def test_a_negative_removal_token_is_refused_naming_it(tiny):
    """removal=-1 passed the vocabulary check (only its top was read) and failed in torch's embedding at the first
    forward pass, 'index out of range in self'."""
    model, tokenizer = tiny
    with pytest.raises(ValueError, match="removal: token id -1 is negative"):
        fs.games.GenerationGame(model, PROMPT, target="the", tokenizer=tokenizer, removal=-1)


def test_the_continuation_stops_at_any_end_token_a_config_lists(tiny):
    """A config or generation config listing several end tokens (Llama 3.1's, Gemma 3's) was read as none: the
    greedy continuation ran to max_new_tokens past them, [27, 27, 4, 4, ...] where model.generate stopped at 4."""
    import copy

    torch = pytest.importorskip("torch")
    model, tokenizer = tiny
    plain = fs.games.GenerationGame(model, PROMPT, tokenizer=tokenizer, max_new_tokens=6)
    assert plain.target.tolist() == [27, 27, 4, 4, 4, 4]                  # never its end token 0
    listed = copy.deepcopy(model)
    listed.generation_config.eos_token_id = [0, 4]
    game = fs.games.GenerationGame(listed, PROMPT, tokenizer=tokenizer, max_new_tokens=6)
    with torch.inference_mode():
        generated = listed.generate(torch.as_tensor(np.concatenate([[0], game.prompt])[None]), max_new_tokens=6,
                                    do_sample=False, pad_token_id=1)[0, game.prompt.size + 1:]
    assert game.target.tolist() == generated.tolist() == [27, 27, 4]
    listed.config.eos_token_id, listed.generation_config.eos_token_id = [0, 4], None
    assert fs.games.GenerationGame(listed, plain.prompt, max_new_tokens=6).target.tolist() == [27, 27, 4]


def test_a_prompt_and_answer_that_fill_the_context_exactly_are_scored(tiny):
    """The last answer token is only predicted, never read: 1 start + 62 prompt + 2 answer tokens read 64 positions,
    the tiny GPT-2's context, but were refused as 65."""
    model, tokenizer = tiny
    torch = pytest.importorskip("torch")
    game = fs.games.GenerationGame(model, " ".join(["the"] * 62), target="the cat", tokenizer=tokenizer)
    ids = torch.as_tensor(np.concatenate([game.start, game.prompt, game.target[:1]])[None])
    with torch.inference_mode():
        logp = model(input_ids=ids).logits[0, -2:].log_softmax(-1)
    by_hand = float(logp[0, game.target[0]] + logp[1, game.target[1]])
    assert game(np.ones((1, 62), bool))[0] == pytest.approx(by_hand, abs=2e-5)
    with pytest.raises(ValueError, match="= 65 positions exceed the model's context of 64"):
        fs.games.GenerationGame(model, " ".join(["the"] * 63), target="the cat", tokenizer=tokenizer)


def test_replaced_tokens_hand_torch_writable_arrays(tiny, monkeypatch):
    """removal=<id> handed torch a read-only broadcast array of positions (torch warned that writing to it is
    undefined behaviour, once per process, into the user's output)."""
    torch = pytest.importorskip("torch")
    model, tokenizer = tiny
    game = fs.games.GenerationGame(model, PROMPT, target="the", tokenizer=tokenizer, removal=1, batch_size=1)
    given, as_tensor = [], torch.as_tensor
    monkeypatch.setattr(torch, "as_tensor", lambda x, *a, **k: (given.append(x), as_tensor(x, *a, **k))[1])
    game(np.ones((2, 23), bool))
    assert given and all(x.flags.writeable for x in given if isinstance(x, np.ndarray))


def test_a_span_is_named_by_its_own_text_and_the_answer_keeps_its_spaces(tiny):
    """Token ranges that leave tokens out were named with the text up to the next span ('0:the old cat sat on the
    mat . the' for tokens 0-2), and the answer 'Paris is the capital' was shown as 'Parisisthecapital'."""
    model, tokenizer = tiny
    game = fs.games.GenerationGame(model, PROMPT, target="Paris is the capital", tokenizer=tokenizer,
                                   spans=[(0, 3), (9, 12)])
    assert game.player_names == ["0:the old cat", "1:dog ran fast"]
    assert game.span_texts[0].startswith("the old cat sat on")                     # the text shown stays whole
    assert game.answer_text() == "Paris is the capital"


def test_a_word_split_at_its_combining_marks_is_one_word():
    """A token starting with a combining mark (a Hindi vowel sign, an accent written apart) started a new word:
    'हिन्दी भाषा' read byte by byte was 10 words, not 2, every vowel sign and virama cutting a word."""
    text = "हिन्दी भाषा. café"
    game = fs.games.GenerationGame(_lp, text, target=[5], tokenizer=_Bytes(), spans="words")
    assert [t.strip() for t in game.span_texts] == ["हिन्दी", "भाषा", ".", "café"]
    nfd = unicodedata.normalize("NFD", "naïve")
    assert np.flatnonzero(unit_starts(["nai", nfd[3], "ve", " x"])["words"]).tolist() == [0, 3]
