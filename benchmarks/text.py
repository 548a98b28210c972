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
    "quick": dict(emails=2, budgets=(300,), seeds=1, train=1500, epochs=1),
    "default": dict(emails=20, budgets=(300, 1000), seeds=1, train=None, epochs=3),
    "full": dict(emails=50, budgets=(300, 1000, 3000), seeds=3, train=None, epochs=3),
}
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
    order = np.argsort(-values, kind="stable")
    full = game(np.ones((1, n), dtype=bool))[0]
    rows = []
    for frac in FRACTIONS:
        keep = np.ones(n, dtype=bool)
        keep[order[: max(1, int(round(frac * n)))]] = False
        rows.append(keep)
    v = game(np.array(rows))
    drops = {f"drop {int(100 * fr)}%": float(full - v[i]) for i, fr in enumerate(FRACTIONS)}
    return {**drops, "insertion AUC": fs.metrics.insertion_auc(game, values, max_features=None)}


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
    ]
    write_report("text", "fairshare bench text", sections, out)
