"""``fairshare bench text``: token attributions of spam filters on enron1 e-mails, against shap's Partition
explainer (Text masker) and captum's ShapleyValueSampling / FeatureAblation, at equal model calls.

Two models trained here on 80% of enron1 (shuffled with seed 0): a TF-IDF + logistic regression pipeline and a
small torch CNN over word embeddings (its own tokenizer). Explained: test e-mails of 60-200 words, the
probability of the class each model predicts. The players are the words (``\\w+``; what follows a word up to
the next goes with it, as shap's Text masker splits): every method's values are mapped onto the same words.

Faithfulness (higher is better): delete the top 5 / 10 / 20% words by value (deleted words leave their
whitespace) and measure the drop of the explained probability; insertion AUC: insert words in order of value
into the all-deleted text one at a time, the mean probability over the curve (``fs.metrics.insertion_auc``). Time: milliseconds per e-mail,
and the same without the model's own time (every method calls one timed prediction function).
"""

from __future__ import annotations

import re
import time

import numpy as np

import fairshare as fs
from fairshare.games.text import TextGame

from .common import TimedFunction, configuration, plot_lines, results_dir, table, write_report
from .datasets import read_enron1

SIZES = {
    "quick": dict(emails=2, budgets=(300,), seeds=1, train=1500, epochs=1, lengths=(100, 1000), long_budgets=(300,),
                  documents=1),
    "default": dict(emails=20, budgets=(300, 1000), seeds=1, train=None, epochs=3, lengths=(100, 1000, 10000),
                    long_budgets=(300, 1000), documents=3),
    "full": dict(emails=50, budgets=(300, 1000, 3000), seeds=3, train=None, epochs=3, lengths=(100, 1000, 10000),
                 long_budgets=(300, 1000), documents=5),
}
PASSAGE = 15          # words of the spam passage planted in a long ham document
HAM_BELOW = 0.05      # ham e-mails whose every window the classifier scores below this make the documents
LONG_METHODS = ("fairshare owen (owen-adaptive)", "fairshare owen-permutation", "shap Partition",
                "captum ShapleyValueSampling")
WORDS = r"\w+"
FRACTIONS = (0.05, 0.10, 0.20)
METHODS = ("fairshare", "fairshare owen", "shap Partition", "captum ShapleyValueSampling", "captum FeatureAblation")


# ---------------------------------------------------------------------------------------------- models
def tfidf_model(texts: list[str], labels: np.ndarray):
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    return make_pipeline(TfidfVectorizer(min_df=2), LogisticRegression(C=10.0, max_iter=2000)).fit(texts, labels)


class WordCNN:
    """A word-embedding CNN with its own tokenizer: lower-cased words -> ids -> conv -> max over time -> 2 classes."""

    def __init__(self, texts: list[str], labels: np.ndarray, epochs: int, seed: int = 0, max_len: int = 300) -> None:
        import torch

        torch.manual_seed(seed)
        counts: dict[str, int] = {}
        for t in texts:
            for w in re.findall(WORDS, t.lower()):
                counts[w] = counts.get(w, 0) + 1
        vocab = sorted((w for w, c in counts.items() if c >= 2), key=lambda w: -counts[w])[:20000]
        self.ids = {w: i + 1 for i, w in enumerate(vocab)}
        self.max_len = max_len
        self.embed = torch.nn.Embedding(len(vocab) + 1, 32, padding_idx=0)
        self.conv = torch.nn.Conv1d(32, 64, 3, padding=1)
        self.out = torch.nn.Linear(64, 2)
        params = list(self.embed.parameters()) + list(self.conv.parameters()) + list(self.out.parameters())
        opt = torch.optim.Adam(params, lr=2e-3)
        y = torch.as_tensor(np.asarray(labels), dtype=torch.long)
        rng = np.random.default_rng(seed)
        for _ in range(epochs):
            shuffled = rng.permutation(len(texts))
            for start in range(0, len(texts), 64):
                batch = shuffled[start:start + 64]
                logits = self._logits([texts[i] for i in batch])
                loss = torch.nn.functional.cross_entropy(logits, y[batch])
                opt.zero_grad()
                loss.backward()
                opt.step()

    def _logits(self, texts: list[str]):
        import torch

        seqs = [[self.ids.get(w, 0) for w in re.findall(WORDS, t.lower())][: self.max_len] or [0] for t in texts]
        width = max(len(s) for s in seqs)
        ids = torch.zeros(len(seqs), max(width, 3), dtype=torch.long)
        for r, s in enumerate(seqs):
            ids[r, : len(s)] = torch.as_tensor(s)
        h = torch.relu(self.conv(self.embed(ids).transpose(1, 2)))
        h = h.masked_fill((ids == 0)[:, None, :], -1e4).amax(dim=2)
        return self.out(h)

    def predict_proba(self, texts: list[str]) -> np.ndarray:
        import torch

        with torch.no_grad():
            return torch.softmax(self._logits(list(texts)), dim=1).numpy().astype(float)


# --------------------------------------------------------------------------------------------- methods
def _word_starts(text: str) -> list[int]:
    return [m.start() for m in re.finditer(WORDS, text)]


def run_fairshare(f, text: str, budget: int, seed: int, index: str = "shapley") -> tuple[np.ndarray, np.ndarray]:
    e = fs.explain(f, text, tokenizer=WORDS, budget=budget, seed=seed, index=index, progress=False)
    return e.values[0], e.stderr[0]


def run_shap(f, text: str, budget: int, seed: int) -> np.ndarray:
    import shap

    masker = shap.maskers.Text(r"\W+")
    explainer = shap.Explainer(lambda ts: f(list(ts)), masker, seed=seed)
    sv = explainer([text], max_evals=budget, silent=True)
    offsets = masker.tokenizer(text)["offset_mapping"]
    where = {a: i for i, a in enumerate(_word_starts(text))}
    values = np.zeros(len(where))
    for (a, b), v in zip(offsets, sv.values[0]):
        if b > a and a in where:
            values[where[a]] = v
    return values


def _captum(kind: str, f, text: str, budget: int, seed: int) -> np.ndarray:
    import torch
    from captum.attr import FeatureAblation, ShapleyValueSampling

    game = TextGame(f, text, WORDS)
    n = game.n_players

    def forward(mask):
        return torch.as_tensor(game(mask.detach().numpy() > 0.5), dtype=torch.float64)

    ones = torch.ones(1, n, dtype=torch.float64)
    torch.manual_seed(seed)
    if kind == "ablation":
        attr = FeatureAblation(forward).attribute(ones, baselines=0.0, perturbations_per_eval=256)
    else:
        attr = ShapleyValueSampling(forward).attribute(ones, baselines=0.0, n_samples=max(1, budget // (n + 1)),
                                                       perturbations_per_eval=256)
    return attr.detach().numpy()[0]


# ---------------------------------------------------------------------------------------------- metrics
def faithfulness(f, text: str, values: np.ndarray) -> dict:
    """Drops of the explained probability after deleting the top words, and the insertion AUC."""
    game = TextGame(f, text, WORDS)
    n = game.n_players
    drop = deletion_drops(game, values, [max(1, int(round(frac * n))) for frac in FRACTIONS])
    drops = {f"drop {int(100 * fr)}%": float(drop[i]) for i, fr in enumerate(FRACTIONS)}
    return {**drops, "insertion AUC": fs.metrics.insertion_auc(game, values, max_features=None)}


def deletion_drops(game, values: np.ndarray, counts: list[int], extra: np.ndarray | None = None) -> np.ndarray:
    """The output on the whole text minus its value after deleting the top ``count`` words by value, for each
    count (one game call; ``extra`` coalitions' values follow, raw)."""
    n = game.n_players
    order = np.argsort(-values, kind="stable")
    rows = [np.ones(n, dtype=bool)]
    for count in counts:
        keep = np.ones(n, dtype=bool)
        keep[order[:count]] = False
        rows.append(keep)
    v = game(np.array(rows + ([] if extra is None else list(extra))))
    drop = v[0] - v[1:1 + len(counts)]
    return drop if extra is None else np.concatenate([drop, v[1 + len(counts):]])


def explained(model, texts: list[str]) -> list:
    """For each text, the probability of the class the model predicts (a function of a list of texts)."""
    predicted = model.predict_proba(texts).argmax(axis=1)
    return [(lambda ts, c=int(c): model.predict_proba(list(ts))[:, c]) for c in predicted]


def evaluate(model_name: str, model, emails: list[str], budgets: tuple, seeds: int) -> tuple[list, dict]:
    rows, curves = [], {}
    functions = explained(model, emails)
    for budget in budgets:
        agg: dict[str, dict[str, list]] = {m: {} for m in METHODS}
        for text, f in zip(emails, functions):
            for seed in range(seeds):
                for method in METHODS:
                    timed = TimedFunction(f)
                    start = time.perf_counter()
                    stderr = None
                    if method == "fairshare":
                        values, stderr = run_fairshare(timed, text, budget, seed)
                    elif method == "fairshare owen":
                        values, stderr = run_fairshare(timed, text, budget, seed, index="owen")
                    elif method == "shap Partition":
                        values = run_shap(timed, text, budget, seed)
                    elif method == "captum ShapleyValueSampling":
                        values = _captum("sampling", timed, text, budget, seed)
                    else:
                        values = _captum("ablation", timed, text, budget, seed)
                    seconds = time.perf_counter() - start
                    scores = faithfulness(f, text, values)
                    scores["ms"] = 1000 * seconds
                    scores["ms without the model"] = 1000 * (seconds - timed.seconds)
                    scores["model calls"] = timed.rows
                    if stderr is not None:
                        scale = np.abs(values).max() or 1.0
                        scores["stderr / max |value|"] = float(np.median(stderr) / scale)
                        scores["words with |value| > 2 se"] = float(np.mean(np.abs(values) > 2 * stderr))
                        scores["finite stderr"] = float(np.all(np.isfinite(stderr)))
                    for k, v in scores.items():
                        agg[method].setdefault(k, []).append(v)
        for method in METHODS:
            a = {k: float(np.median(v) if k == "stderr / max |value|" else np.mean(v)) for k, v in agg[method].items()}
            rows.append([model_name, budget, method, a["model calls"], a["drop 5%"], a["drop 10%"], a["drop 20%"],
                         a["insertion AUC"], a["ms"], a["ms without the model"],
                         a.get("stderr / max |value|", float("nan")), a.get("words with |value| > 2 se", float("nan")),
                         a.get("finite stderr", float("nan"))])
            curves.setdefault(model_name, {})[method] = (
                [0.0] + [100 * fr for fr in FRACTIONS], [0.0] + [a[f"drop {int(100 * fr)}%"] for fr in FRACTIONS])
    return rows, curves


def long_email_seconds(model, texts: list[str], budget: int) -> list:
    """fairshare on the longest e-mails (about 200 words) at ``budget``: seconds without the model."""
    rows = []
    for text in texts:
        f = explained(model, [text])[0]
        timed = TimedFunction(f)
        start = time.perf_counter()
        run_fairshare(timed, text, budget, 0)
        total = time.perf_counter() - start
        rows.append([len(_word_starts(text)), budget, 1000 * total, 1000 * (total - timed.seconds)])
    return rows


# ------------------------------------------------------------------------------------------ long texts
class ChunkMax:
    """A long-document classifier as they are deployed: the text model scores windows of ``width`` consecutive
    words, one starting every ``stride`` words, and a document is as spammy as its spammiest window (max over
    windows; a passage of ``width - stride + 1`` words lies whole in some window wherever words are deleted)."""

    def __init__(self, model, width: int = 30, stride: int = 15) -> None:
        self.model, self.width, self.stride = model, width, stride

    def predict_proba(self, texts: list[str]) -> np.ndarray:
        windows, owner = [], []
        for i, t in enumerate(texts):
            words = re.findall(WORDS, t)
            for a in range(0, max(len(words) - self.width, 0) + 1, self.stride):
                windows.append(" ".join(words[a:a + self.width]))
                owner.append(i)
        p = self.model.predict_proba(windows)[:, 1]
        spam = np.full(len(texts), -np.inf)
        np.maximum.at(spam, np.asarray(owner), p)
        return np.column_stack([1.0 - spam, spam])


def spam_passage(model, spam: list[str]) -> str:
    """The first ``PASSAGE`` words of the spam e-mail whose opening alone the model finds most spammy."""
    openings = []
    for text in spam:
        starts = _word_starts(text)
        if len(starts) > PASSAGE:
            end = starts[PASSAGE]
            openings.append(" ".join(text[starts[0]:end].split()))
    p = model.predict_proba(openings)[:, 1]
    return openings[int(np.argmax(p))]


def long_document(ham: list[str], length: int, passage: str, rng: np.random.Generator) -> tuple[str, np.ndarray]:
    """``length`` words of consecutive ham e-mails with the spam ``passage`` planted at a random word; returns the
    text and a mask of the words (``\\w+``) that belong to the passage."""
    words: list[str] = []
    start = int(rng.integers(len(ham)))
    while len(words) < length:
        words += ham[start % len(ham)].split()
        start += 1
    body = words[:length - len(re.findall(WORDS, passage))]
    at = int(rng.integers(len(body) + 1))
    left, right = " ".join(body[:at]), " ".join(body[at:])
    text = (left + " " if left else "") + passage + (" " + right if right else "")
    lo = len(left) + (1 if left else 0)
    starts = _word_starts(text)
    planted = np.array([lo <= a < lo + len(passage) for a in starts])
    return text, planted


def long_texts(model, ham: list[str], spam: list[str], lengths: tuple, budgets: tuple, documents: int) -> list:
    """At each length and budget: the share of the top 10 words inside the planted spam passage, the drop of the
    spam probability after deleting them, model calls and time without the model, for every method."""
    ham = [t for t, p in zip(ham, model.predict_proba(ham)[:, 1]) if p < HAM_BELOW]     # no spam evidence of its own
    passage = spam_passage(model, spam)

    def f(texts):                                       # the spam probability
        return model.predict_proba(list(texts))[:, 1]

    rows = []
    for length in lengths:
        for budget in budgets:
            agg: dict[str, dict[str, list]] = {m: {} for m in LONG_METHODS}
            for d in range(documents):
                text, planted = long_document(ham, length, passage, np.random.default_rng(1000 * length + d))
                n = planted.size
                for method in LONG_METHODS:
                    if method in ("fairshare owen-permutation", "captum ShapleyValueSampling") and budget < n + 1:
                        continue                          # one order costs n - 1 (n + 1) model calls: beyond budget
                    timed = TimedFunction(f)
                    start = time.perf_counter()
                    if method == "shap Partition":
                        values = run_shap(timed, text, budget, d)
                    elif method == "captum ShapleyValueSampling":
                        values = _captum("sampling", timed, text, budget, d)
                    else:
                        how = "owen-adaptive" if "adaptive" in method else "owen-permutation"
                        e = fs.explain(timed, text, tokenizer=WORDS, budget=budget, seed=d, index="owen",
                                       method=how, progress=False)
                        values = e.values[0]
                    seconds = time.perf_counter() - start
                    top = np.argsort(-values, kind="stable")[:10]
                    game = TextGame(f, text, WORDS)
                    drop, no_passage = deletion_drops(game, values, [10], extra=~planted[None, :])
                    scores = {"in passage": float(planted[top].mean()), "drop": float(drop), "calls": timed.rows,
                              "ms": 1000 * (seconds - timed.seconds), "p": float(game(np.ones((1, n), bool))[0]),
                              "p0": float(no_passage)}
                    for k, v in scores.items():
                        agg[method].setdefault(k, []).append(v)
            for method in LONG_METHODS:
                a = {k: float(np.mean(v)) for k, v in agg[method].items()}
                if not a:
                    rows.append([length, budget, method, "needs n + 1 calls per order", "-", "-", "-", "-", "-"])
                    continue
                rows.append([length, budget, method, a["calls"], a["in passage"], a["drop"], a["p"], a["p0"],
                             a["ms"]])
    return rows


def main(size: str = "default", seeds: int | None = None, out: str | None = None) -> None:
    cfg = configuration(SIZES, size, seeds, quiet=True)
    start = time.perf_counter()
    texts, labels = read_enron1()
    order = np.random.default_rng(0).permutation(len(texts))
    cut = int(0.8 * len(texts))
    train = order[:cut] if cfg["train"] is None else order[: cfg["train"]]
    test = order[cut:]
    train_texts, train_labels = [texts[i] for i in train], labels[train].astype(int)
    test_texts, test_labels = [texts[i] for i in test], labels[test].astype(int)
    models = {"tfidf + logistic": tfidf_model(train_texts, train_labels),
              "word CNN (torch)": WordCNN(train_texts, train_labels, cfg["epochs"])}
    accuracy = {name: float((m.predict_proba(test_texts).argmax(axis=1) == test_labels).mean())
                for name, m in models.items()}
    lengths = np.array([len(_word_starts(t)) for t in test_texts])
    eligible = np.flatnonzero((lengths >= 60) & (lengths <= 200))
    emails = [test_texts[i] for i in eligible[: cfg["emails"]]]
    longest = [test_texts[i] for i in eligible[np.argsort(-lengths[eligible])][:3]]
    rows, curves = [], {}
    for name, model in models.items():
        r, c = evaluate(name, model, emails, cfg["budgets"], cfg["seeds"])
        rows += r
        curves.update(c)
    speed = long_email_seconds(models["tfidf + logistic"], longest, max(cfg["budgets"]))
    long_rows = long_texts(ChunkMax(models["tfidf + logistic"]), [t for t, y in zip(test_texts, test_labels) if y == 0],
                           [t for t, y in zip(test_texts, test_labels) if y == 1], cfg["lengths"],
                           cfg["long_budgets"], cfg["documents"])
    folder = results_dir("text", out)
    for name, series in curves.items():
        slug = re.sub(r"\W+", "_", name).strip("_")
        plot_lines(folder / f"deletion_{slug}.png", f"{name}: drop of the explained probability (budget "
                   f"{max(cfg['budgets'])})", "% of words deleted (top by value)", "drop in probability", series,
                   logx=False, logy=False)
    sections = [
        f"Run with `fairshare bench text --size {size}` in {time.perf_counter() - start:.0f} s. Test accuracy: "
        + ", ".join(f"{k} {v:.3f}" for k, v in accuracy.items())
        + f". {len(emails)} test e-mails of 60-200 words, {cfg['seeds']} seed(s); every method explains the "
        "probability of the predicted class with the same model-call budget (captum's FeatureAblation needs only "
        "n + 1; ShapleyValueSampling gets budget // (n + 1) permutations).",
        "## Faithfulness and time\n\nDrop: the explained probability minus its value after deleting the top words "
        "(higher: the values found the words the prediction rests on). Insertion AUC: mean probability while "
        "inserting words by value (higher is better). fairshare's error bars: the median over e-mails of the "
        "median standard error relative to the largest |value|, the share of words whose value is more than 2 "
        "standard errors from 0, and the share of e-mails whose every standard error is finite (a budget below "
        "what the method needs for its own error estimate gives infinite ones, said in a warning); shap and "
        "captum give none.\n\n" + table(
            ["model", "budget", "method", "model calls", "drop 5%", "drop 10%", "drop 20%", "insertion AUC",
             "ms per e-mail", "ms without the model", "stderr / max |value|", "words > 2 se",
             "e-mails with finite stderr"], rows),
        "## The longest e-mails (fairshare, tfidf + logistic)\n\n"
        + table(["words", "budget", "ms per e-mail", "ms without the model"], speed),
        "## Long texts: finding a spam passage in a long ham document\n\n"
        f"Ham test e-mails (those whose every window scores below {HAM_BELOW}) joined into documents of 100 to "
        f"{max(cfg['lengths'])} words, with the {PASSAGE}-word "
        "opening of the spam e-mail the classifier finds most spammy planted at a random word. The model is how "
        "long documents are classified in practice: the tfidf + logistic pipeline scores windows of 30 "
        "consecutive words and the document gets the largest window probability; its spam probability is "
        "explained. In passage: the share of the 10 "
        "words with the largest values that lie in the planted passage (1 is perfect). Drop: the spam probability "
        "minus its value after deleting those 10 words. fairshare's Owen values use its sentence hierarchy (at "
        "most 8 parts per block), owen-adaptive by default; permutation methods need n - 1 (n + 1) calls for one "
        f"order, so they cannot run below that. Mean over {cfg['documents']} documents per length.\n\n"
        + table(["words", "budget", "method", "model calls", "top 10 in passage", "drop", "spam probability",
                 "without the passage", "ms without the model"], long_rows),
    ]
    write_report("text", "fairshare bench text", sections, out)
