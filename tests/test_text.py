"""Texts: tokens that rebuild the text exactly, values that add up, one Explanation per text, Owen values over
sentences and phrases, bad arguments refused before any model call."""

from __future__ import annotations

import itertools
import math
import re
import unicodedata

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import fairshare as fs
from fairshare.games.text import TextGame, text_hierarchy, tokenize

from test_owen import brute_owen

CORPUS = [
    ("win a free prize now, click here!", 1), ("cheap meds, free shipping, order now", 1),
    ("free money!!! claim your prize today", 1), ("exclusive offer: win cash now", 1),
    ("meeting moved to monday, see agenda", 0), ("please review the attached report", 0),
    ("lunch tomorrow? the usual place", 0), ("the gas contract numbers for march", 0),
    ("can you send the updated schedule", 0), ("free to talk about the deal today?", 0),
]


@pytest.fixture(scope="module")
def spam_model():
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    texts, labels = zip(*CORPUS)
    return make_pipeline(TfidfVectorizer(), LogisticRegression(C=10.0)).fit(list(texts), list(labels))


TEXT_CHARS = st.text(alphabet=st.sampled_from(list("ab Zé漢字 \t\n.,!?'-") + ["\u00a0", "ü", "ß", "😀", "\u0301",
                                                                         "\u200d", "ि", "\ufe0f"]), max_size=40)


@settings(max_examples=200, deadline=None)
@given(text=TEXT_CHARS)
def test_tokens_rebuild_the_text_exactly(text):
    for tokenizer in (None, r"\S+", str.split, lambda t: re.findall(r"\w", t)):
        pieces = tokenize(text, tokenizer)
        if pieces:
            assert "".join(pieces) == text
            assert all(p.strip() for p in pieces[1:])              # no piece is only whitespace (but the first's lead)
            g = TextGame(lambda ts: [len(t) for t in ts], text, tokenizer)
            full = np.ones((1, g.n_players), dtype=bool)
            assert g.texts(full) == [text]
            assert not g.texts(~full)[0].strip()                   # deletion keeps the whitespace only
        else:
            assert not text.strip() or tokenizer is not None


def test_masking_keeps_whitespace_and_deletion_drops_it():
    g = TextGame(len, "  Hello,\tbig  world!\n", mask_token="[MASK]")
    assert g.tokens == ["Hello", ",", "big", "world", "!"]
    S = np.array([[1, 0, 1, 0, 1], [0, 0, 0, 0, 0]], dtype=bool)
    assert g.texts(S) == ["  Hello[MASK]\tbig  [MASK]!\n", "  [MASK][MASK]\t[MASK]  [MASK][MASK]\n"]
    d = TextGame(len, "  Hello,\tbig  world!\n")
    assert d.texts(S) == ["  Hello\tbig  !\n", "  \t  \n"]


def test_subword_tokenizer_callable_is_aligned_to_the_text():
    pieces = tokenize("unbelievable results", lambda t: ["un", "##believ", "##able", "results"])
    assert pieces == ["un", "believ", "able ", "results"]
    with pytest.raises(ValueError, match="tokenizer: the token 'xyz'"):
        tokenize("abc", lambda t: ["xyz"])


def test_values_add_up_and_short_texts_are_exact(spam_model):
    text = "Win a free prize now, click here!"
    e = fs.explain(spam_model, text, seed=0, progress=False)
    assert e.method == "exact" and e.values.shape == (1, 9, 2)
    f = spam_model.predict_proba
    game = TextGame(f, text)
    full, empty = f([text])[0], f(game.texts(np.zeros((1, 9), dtype=bool)))[0]
    np.testing.assert_allclose(e.values[0].sum(axis=0), full - empty, atol=1e-6)
    game = TextGame(f, text)
    np.testing.assert_allclose(e.values[0, :, 1], fs.exact(game).values[:, 1], atol=1e-12)
    # brute force from the definition for one token: the Shapley formula over every coalition of the others
    n, i = 9, 2
    phi = 0.0
    for size in range(n):
        for S in itertools.combinations([j for j in range(n) if j != i], size):
            w = 1.0 / (n * math.comb(n - 1, size))
            X = np.zeros((2, n), dtype=bool)
            X[:, list(S)] = True
            X[1, i] = True
            v = f(game.texts(X))[:, 1]
            phi += w * (v[1] - v[0])
    assert e.values[0, i, 1] == pytest.approx(phi, abs=1e-12)
    assert e.tokens[i] == "free" and e.values[0, i, 1] > 0                # the spam word pushes towards spam


def test_long_text_estimates_add_up_with_error_bars(spam_model):
    text = " ".join(t for t, _ in CORPUS * 3)                             # 180 tokens
    for index in ("shapley", "owen"):
        e = fs.explain(spam_model, text, index=index, budget=1500, seed=1, progress=False)
        assert e.values.shape[1] == len(tokenize(text)) > 150
        assert e.method in ("surrogate-regression", "owen-adaptive") and e.n_evaluations[0] <= 1500
        np.testing.assert_allclose(e.values[0].sum(axis=0), (e.grand_value - e.empty_value)[0], atol=1e-6)
        assert np.all(np.isfinite(e.stderr)) and e.stderr.max() > 0
    again = fs.explain(spam_model, text, index="owen", budget=1500, seed=1, progress=False)
    np.testing.assert_array_equal(again.values, e.values)


def test_owen_values_of_a_text_follow_sentences_and_phrases(spam_model):
    text = "Free prize, click now. See the report"
    pieces = tokenize(text)
    h = text_hierarchy(pieces)
    assert h == [[[0, 1, 2], [3, 4, 5]], [6, 7, 8]]
    e = fs.explain(spam_model, text, index="owen", seed=0, progress=False)
    assert e.method == "exact"
    game = TextGame(lambda ts: spam_model.predict_proba(ts)[:, 1], text)
    np.testing.assert_allclose(e.values[0, :, 1], brute_owen(game, h, len(pieces)), atol=1e-12)
    own = fs.explain(spam_model, text, index="owen", partition=[[0, 1, 2, 3, 4, 5], [6, 7, 8]], seed=0,
                     progress=False)
    np.testing.assert_allclose(own.values[0, :, 1], brute_owen(game, [[0, 1, 2, 3, 4, 5], [6, 7, 8]], 9),
                               atol=1e-12)


def test_many_texts_ragged_same_seed_same_values_in_threads(spam_model):
    texts = ["free prize now", "see the attached report please", "", "win", "   "]
    with pytest.warns(fs.FairshareWarning) as caught:
        a = fs.explain(spam_model, texts, seed=3, progress=False)
    said = [str(w.message) for w in caught]
    assert any("texts[2] is empty" in m for m in said) and any("texts[4] is only whitespace" in m for m in said)
    with pytest.warns(fs.FairshareWarning):
        b = fs.explain(spam_model, texts, seed=3, progress=False, n_jobs=3)
    assert [x.values.shape[1] for x in a] == [3, 5, 0, 1, 0]
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x.values, y.values)
    f = spam_model.predict_proba
    np.testing.assert_allclose(a[3].values[0, 0], f(["win"])[0] - f([""])[0], atol=1e-12)    # one token
    assert a[2].method == "none" and "empty" in a[2].info["why"]
    np.testing.assert_allclose(a[2].grand_value[0], f([""])[0])


def test_mask_token_and_logit_link(spam_model):
    text = "claim your free prize"
    e = fs.explain(spam_model, text, mask_token="...", link="logit", progress=False)
    p = spam_model.predict_proba([text, "... ... ... ..."])
    logit = np.log(p) - np.log1p(-p)
    np.testing.assert_allclose(e.values[0].sum(axis=0), logit[0] - logit[1], atol=1e-9)


def test_bad_text_arguments_are_refused_before_any_model_call(tmp_path):
    calls = []

    def f(texts):
        calls.append(len(texts))
        return [0.0] * len(texts)

    for kwargs, error, match in [
        (dict(background=["x"]), ValueError, "background: not used for texts"),
        (dict(tokenizer="(unclosed"), ValueError, "not a regular expression"),
        (dict(tokenizer=3), TypeError, "tokenizer must be"),
        (dict(mask_token=0), TypeError, "mask_token must be"),
        (dict(partition=[[0, 1]]), ValueError, "fits one text"),
        (dict(partition="correlation"), ValueError, "for texts use 'sentences'"),
        (dict(index="owen", partition=[[0], [1]], X="a b c"), ValueError, "in no block"),
        (dict(interactions=2), ValueError, "interactions: not used for texts"),
        (dict(cache=3), TypeError, "cache"),
    ]:
        X = kwargs.pop("X", ["a b", "c d"])
        with pytest.raises(error, match=match):
            fs.explain(f, X, progress=False, **kwargs)
    with pytest.raises(ValueError, match="tokenizer and mask_token are for texts"):
        fs.explain(f, np.zeros((2, 3)), background=np.zeros((1, 3)), mask_token="_", progress=False)
    assert calls == []


def test_texts_with_a_cache_resume_an_interrupted_run_with_the_same_values(tmp_path, spam_model):
    """Finished texts are kept whole, a text's evaluated coalitions after each model call: a run killed in its second
    text resumes there, without asking the model again for the first, and gives the values of an unbroken run."""
    texts = ["win a free prize now, click here and claim it today", "please review the attached report before monday",
             "cheap meds, free shipping, order now"]
    args = dict(budget=300, seed=7, batch_size=25, progress=False)
    plain = fs.explain(spam_model, texts, **args)

    def flaky(batch):                   # its counters are its attributes: not part of the cache key, as closures are
        if flaky.limit is not None and flaky.rows + len(batch) > flaky.limit:
            raise KeyboardInterrupt("the run is killed")
        flaky.rows += len(batch)
        return spam_model.predict_proba(batch)

    flaky.rows, flaky.limit = 0, None
    fs.explain(flaky, texts, **args)
    unbroken = flaky.rows
    flaky.rows = 0
    fs.explain(flaky, texts[:1], **args)
    first = flaky.rows
    flaky.rows, flaky.limit = 0, first + 60                                   # dies inside the second text
    with pytest.raises(KeyboardInterrupt):
        fs.explain(flaky, texts, cache=tmp_path / "run", **args)
    assert flaky.rows == first + 50
    flaky.rows, flaky.limit = 0, None
    resumed = fs.explain(flaky, texts, cache=tmp_path / "run", **args)
    assert flaky.rows <= unbroken - first                   # the first text is not asked again (nor finished calls)
    for a, b in zip(resumed, plain):
        np.testing.assert_array_equal(a.values, b.values)
        np.testing.assert_array_equal(a.stderr, b.stderr)
        assert list(a.tokens) == list(b.tokens) and a.method == b.method
    flaky.rows = 0
    again = fs.explain(flaky, texts, cache=tmp_path / "run", **args)          # everything finished: no call at all
    assert flaky.rows == 0 and all(np.array_equal(a.values, b.values) for a, b in zip(again, plain))
    with pytest.raises(ValueError, match="holds a different run"):                     # another seed: not served
        fs.explain(flaky, texts, cache=tmp_path / "run", **{**args, "seed": 8})
    assert flaky.rows == 0


def test_text_plot_and_html_show_every_token(tmp_path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    text = "if a < b & \"free\"\nprize"
    e = fs.explain(lambda ts: [t.count("free") + 0.1 * t.count("prize") for t in ts], text, progress=False)
    html = e._repr_html_()
    assert html.count("<span") == len(e.tokens) == 9 and e.method == "exact"
    assert "&lt;" in html and "&amp;" in html and ">free<" in html and "&quot;" in html
    assert 'title="+1"' in html                                  # the value of "free", exact: no error bar
    _, ax = plt.subplots()
    assert e.plot("text", ax=ax) is ax
    drawn = [t.get_text() for t in ax.texts]
    assert drawn == e.tokens
    free = drawn.index("free")
    assert ax.texts[free].get_bbox_patch().get_facecolor()[3] == pytest.approx(0.9)     # the largest value
    ax.figure.savefig(tmp_path / "text.png")
    assert (tmp_path / "text.png").stat().st_size > 1000
    with pytest.raises(ValueError, match="one text"):
        fs.plots.text(fs.Explanation(values=np.zeros((2, 2)), stderr=None, empty_value=np.zeros(2), data=None,
                                     player_names=["a", "b"], index="shapley"))


def test_each_output_of_a_text_shows_its_own_base_value_in_html_and_plot():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from fairshare.results.html import text_html

    def f(texts):                                                # 3 outputs; the empty text gives 10, 20, 30
        return np.array([[10 + s.count("a"), 20 + 2 * s.count("a"), 30 + 3 * s.count("b")] for s in texts])

    e = fs.explain(f, "a b a", progress=False, seed=0)
    assert e.empty_value.reshape(-1).tolist() == [10, 20, 30]
    for j, base in enumerate([10, 20, 30]):
        head = re.search(r"<small>(.*?)</small>", text_html(e, j)).group(1)
        assert head == f"shapley values (output {j}); base value {base}"
        _, ax = plt.subplots()
        e.plot("text", output=j, ax=ax)
        assert f", base {base}:" in ax.get_title(loc="left")
        plt.close(ax.figure)
    assert "base value 10" in text_html(e)                       # the default output, the first, and its base


def test_same_seed_same_values_whatever_the_batch_size_and_every_text_checked_first(spam_model):
    texts = ["free prize now, click here and win cash today", "see the attached report before the meeting"]
    a = fs.explain(spam_model, texts, budget=300, seed=7, progress=False)
    b = fs.explain(spam_model, texts, budget=300, seed=7, progress=False, batch_size=7)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x.values, y.values)
        np.testing.assert_array_equal(x.stderr, y.stderr)
    calls = []

    def f(ts):
        calls.append(len(ts))
        return [0.0] * len(ts)

    long = " ".join(["word"] * 40)
    with pytest.raises(ValueError, match="budget=20 is too small"):
        fs.explain(f, ["short text", long], budget=20, method="permutation", progress=False)
    assert calls == []                                # the second text's refusal came before the first's calls


def test_a_torch_model_behind_its_own_tokenizer():
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    vocab = {w: i + 1 for i, w in enumerate("free prize win cash meeting report monday see".split())}
    bag = torch.nn.EmbeddingBag(len(vocab) + 1, 4, mode="mean")
    head = torch.nn.Linear(4, 2)

    def model(texts):                                  # the model's own tokenizer: lower-cased words, unknown = 0
        ids = [torch.tensor([vocab.get(w, 0) for w in re.findall(r"\w+", t.lower())] or [0]) for t in texts]
        offsets = torch.tensor([0] + [len(i) for i in ids[:-1]]).cumsum(0)
        with torch.no_grad():
            return torch.softmax(head(torch.tanh(bag(torch.cat(ids), offsets))), dim=1).numpy()

    text = "Free prize: see the report on Monday"
    e = fs.explain(model, text, seed=0, progress=False)
    assert e.method == "exact" and e.values.shape == (1, 8, 2)
    full, empty = model([text])[0], model([TextGame(model, text).texts(np.zeros((1, 8), dtype=bool))[0]])[0]
    np.testing.assert_allclose(e.values[0].sum(axis=0), full - empty, atol=1e-6)
    np.testing.assert_allclose(e.values[0, :, 0], -e.values[0, :, 1], atol=1e-6)   # two classes, one probability


def test_a_text_explanation_saves_and_loads_with_its_tokens(tmp_path, spam_model):
    e = fs.explain(spam_model, "free prize, see you", seed=0, progress=False)
    back = fs.Explanation.load(e.save(tmp_path / "t.npz"))
    assert back.tokens == e.tokens and back.is_text
    np.testing.assert_array_equal(back.values, e.values)
    assert back._repr_html_() == e._repr_html_()
    table = fs.Explanation(values=[[1.0, 2.0]], stderr=None, empty_value=[0.0], player_names=["a", "b"],
                           data=np.array([["x", "y"]], dtype=object), index="shapley")
    assert not table.is_text and table._repr_html_() is None      # a table row of strings is no text


def test_texts_on_a_dask_cluster_give_the_local_values(spam_model):
    distributed = pytest.importorskip("dask.distributed")
    texts = ["win a free prize now, click here", "see the report", "", "free cash today or see the agenda"]
    local = fs.explain(spam_model, texts, budget=200, seed=5, progress=False)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as c, \
            distributed.Client(c) as client:
        remote = fs.explain(spam_model, texts, budget=200, seed=5, progress=False, client=client)
    for a, b in zip(local, remote):
        assert a.tokens == b.tokens if a.player_names else not b.player_names
        np.testing.assert_array_equal(a.values, b.values)
        np.testing.assert_array_equal(a.stderr, b.stderr)


def test_a_long_text_reaches_its_keywords_in_a_few_hundred_model_calls():
    rng = np.random.default_rng(0)
    filler = ["we", "will", "see", "the", "report", "on", "monday", "please", "find", "attached", "thanks"]
    words = list(rng.choice(filler, size=3000))
    keywords = {"viagra": 0.6, "lottery": 0.5, "winner": 0.4}
    for w, at in zip(keywords, rng.choice(3000, 3, replace=False)):
        words[at] = w
    text = "".join(w + (". " if rng.random() < 0.07 else ", " if rng.random() < 0.1 else " ") for w in words)
    calls = []

    def detector(texts):                               # a noisy OR of the keywords present
        calls.append(len(texts))
        found = [set(t.split()) | set(t.replace(",", " ").replace(".", " ").split()) for t in texts]
        return [1.0 - np.prod([1.0 - q for k, q in keywords.items() if k in f]) for f in found]

    e = fs.explain(detector, text, index="owen", budget=400, seed=0, progress=False)
    assert e.method == "owen-adaptive" and sum(calls) <= 400 + 2 and e.values.shape[1] > 3000
    top = np.argsort(-e.values[0])[:3]
    assert {e.tokens[i] for i in top} == set(keywords)
    np.testing.assert_allclose(e.values[0].sum(), (e.grand_value - e.empty_value)[0], atol=1e-9)
    assert 0 < e.info["resolved_players"] < 3000 and e.info["unresolved_blocks"]
    unresolved = [p for block in e.info["unresolved_blocks"] for p in block]
    assert np.all(np.isinf(e.stderr[0, unresolved])) and np.all(np.isfinite(e.stderr[0, top]))
    assert "equal share" in e._repr_html_()


def test_default_tokens_keep_a_words_combining_marks():
    """The default tokens split words at their combining marks: 'हिन्दी भाषा' (two Hindi words) was 10 players, its
    vowel signs players of their own, 'naïve' written with a combining diaeresis three ('nai', '̈', 've'), an emoji
    and its variation selector two."""
    nfd = unicodedata.normalize("NFD", "naïve café")
    assert tokenize("हिन्दी भाषा") == ["हिन्दी ", "भाषा"] and tokenize("தமிழ் மொழி") == ["தமிழ் ", "மொழி"]
    assert tokenize(nfd) == [nfd[:7], nfd[7:]] and len(nfd) == 12
    assert tokenize("❤️ 👨\u200d👩\u200d👧 👍🏽 🇫🇷!") == ["❤️ ", "👨\u200d👩\u200d👧 ", "👍🏽 ", "🇫🇷", "!"]
    e = fs.explain(lambda ts: [2.0 * t.count("भाषा") + t.count("हिन्दी") for t in ts], "हिन्दी भाषा", progress=False)
    assert e.tokens == ["हिन्दी", "भाषा"]
    np.testing.assert_allclose(e.values[0], [1.0, 2.0], atol=1e-12)


@pytest.mark.parametrize("text, tokens, pieces", [
    ("Paris is old", ["paris", "is", "old"], ["Paris ", "is ", "old"]),                    # uncased WordPiece
    ("The cat and the dog", ["the", "cat", "and", "the", "dog"], ["The ", "cat ", "and ", "the ", "dog"]),
    ("café naïve", ["cafe", "naive"], ["café ", "naïve"]),                                  # accents stripped
    ("the  cat 1 2", ["the", "cat", "[UNK]", "[UNK]"], ["the  ", "cat 1 2"]),               # unknown tokens
    ("the cat\nsat", ["t", "he", "\u0120c", "at", "\u010a", "s", "at"], ["t", "he ", "c", "at\n", "s", "at"]),
    ("café naïve", ["caf", "Ã", "©", "\u0120", "naÃ", "¯", "v", "e"], ["caf", "é ", "naï", "v", "e"]),  # GPT-2 bytes
    ("the  cat 1", ["\u2581the", "\u2581", "\u2581cat", "\u2581", "1"], ["the  ", "cat ", "1"]),   # SentencePiece
    ("the cat\nsat", ["\u2581the", "\u2581cat", "\n", "s", "at"], ["the ", "cat\n", "s", "at"]),
])
def test_a_subword_tokenizers_own_tokens_are_found_in_the_text(text, tokens, pieces):
    """A Hugging Face tokenizer's tokenize was refused unless each token was the text's own: an uncased one's
    'paris' for 'Paris', 'cafe' for 'café', '[UNK]', byte-level BPE's 'Ċ' (a line break) and 'Ã', '©' (the bytes of
    'é'), a SentencePiece or byte-level space on its own ('▁', 'Ġ'); a token of whitespace ('\\n') was a player
    that removed nothing."""
    assert tokenize(text, lambda t: tokens) == pieces
    e = fs.explain(lambda ts: [float(len(t.replace(" ", ""))) for t in ts], text, tokenizer=lambda t: tokens,
                   progress=False)
    np.testing.assert_allclose(e.values[0], [len(p.rstrip().replace(" ", "")) for p in pieces], atol=1e-12)


def test_one_nan_token_value_does_not_fade_every_other_token():
    """A NaN value of 'food' made the shading scale NaN: 'good' (+5, the largest) was drawn at opacity 0.10 like a
    zero, in the HTML and the text plot, and 'food' blue with the tip '+nan'. The scale is now the largest finite
    |value| (good at 0.90), a value that is not finite grey with the tip 'n/a (not finite)'."""
    from fairshare.results.html import text_html

    e = fs.explain(lambda ts: [t.count("good") - t.count("bad") for t in ts], "good food, bad  service",
                   progress=False)
    e.values[0, :2] = [5.0, np.nan]
    spans = re.findall(r'title="([^"]*)" style="background:rgba\(([^)]*)\)', text_html(e))
    assert spans[0] == ("+5", "214,38,40,0.90") and spans[1] == ("n/a (not finite)", "127,127,127,0.25")
    assert spans[3][1] == "30,119,181,0.26"                                 # bad: -1 of 5
    ax = e.plot("text")
    boxes = [t.get_bbox_patch().get_facecolor() for t in ax.texts]
    assert boxes[0][3] == pytest.approx(0.9) and boxes[1][:3] == pytest.approx((0.5, 0.5, 0.5))
