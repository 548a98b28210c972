"""fairshare bench examples: the Fisher-kernel paper's three use cases, and the speed of greedy selection.

1. Speed: greedy SBQ selecting k = 300 of t = 20,000 candidates from precomputed embeddings, against
   the paper's Algorithm 1 as printed (a Proposition-1 inverse update per candidate, O(t k^3)) and an
   explicit inverse per candidate, at equal k.
2. Data cleaning (section 6.1): scikit-learn's 8x8 digits, 4s and 9s, a small torch MLP; 15% of the
   training labels are corrupted (the 8x8 set has too few naturally misleading images to measure);
   the prototypes responsible for the misclassified test points are removed (top 50 / 100 / 200) and
   the model retrained, against removing as many random points.
3. Fixing mislabeled examples (section 6.2): enron1 (bag of words of lower-cased alphabetic tokens
   minus English stop words, min_df = 5; Koh and Liang used spaCy lemmas, not available offline),
   logistic regression, 20% of the training labels flipped, 500 clean curated points; fraction of flips
   fixed and test accuracy against the fraction of data checked, for SBQ (full Fisher kernel),
   self-influence and random.
4. Summarization (section 6.3): logistic regression on the adult census data (ChemReact and CovType
   are not available offline); test log-likelihood against subset size for SBQ, random subsets and a
   sensitivity-sampling coreset (Huggins et al. 2016, k-means sensitivity bounds).
"""

from __future__ import annotations

import re
import time
import warnings

import numpy as np

from fairshare.examples import FisherKernel, fisher_embedding, select_prototypes, self_influence
from fairshare.examples.prototypes import greedy_on_embeddings

from .common import configuration, plot_lines, results_dir, table, timed, write_report
from .datasets import adult_census, read_enron1

warnings.filterwarnings("ignore")

SIZES = {"quick": dict(t=2000, k=30, naive_k=8, seeds=1, digit_epochs=60, enron_docs=800, fractions=(0.05, 0.1),
                       summary_sizes=(20, 50), summary_rows=4000),
         "default": dict(t=20000, k=300, naive_k=20, seeds=5, digit_epochs=200, enron_docs=None,
                         fractions=(0.05, 0.1, 0.15, 0.2, 0.3), summary_sizes=(5, 10, 15, 20, 50, 100, 200, 500),
                         summary_rows=20000),
         "full": dict(t=20000, k=300, naive_k=40, seeds=10, digit_epochs=300, enron_docs=None,
                      fractions=(0.05, 0.1, 0.15, 0.2, 0.25, 0.3), summary_sizes=(20, 50, 100, 200, 500, 1000, 2000),
                      summary_rows=20000)}


# ------------------------------------------------------------------------------------------- speed
def _algorithm1_as_printed(G, z, k):
    """The paper's loop: for every candidate, the Proposition-1 update of the inverse, O(t k^3)."""
    t = z.size
    S, invK = [], np.zeros((0, 0))
    for _ in range(k):
        best, best_val = -1, -np.inf
        KS = G[S] @ G.T if S else np.zeros((0, t))                      # k(X_S, x_j) for every j
        for j in range(t):
            if j in S:
                continue
            b, c = KS[:, j], G[j] @ G[j]
            Ab = invK @ b
            d = c - b @ Ab
            if d <= 1e-12:
                continue
            T = np.block([[invK + np.outer(Ab, Ab) / d, -Ab[:, None] / d], [-Ab[None, :] / d, np.array([[1 / d]])]])
            tt = z[S + [j]]
            val = tt @ T @ tt
            if val > best_val:
                best, best_val = j, val
        b, c = KS[:, best], G[best] @ G[best]
        Ab = invK @ b
        d = c - b @ Ab
        invK = np.block([[invK + np.outer(Ab, Ab) / d, -Ab[:, None] / d], [-Ab[None, :] / d, np.array([[1 / d]])]])
        S.append(best)
    return np.array(S)


def _explicit_inverse(G, z, k):
    t = z.size
    S = []
    for _ in range(k):
        best, best_val = -1, -np.inf
        for j in range(t):
            if j in S:
                continue
            idx = S + [j]
            K = G[idx] @ G[idx].T
            val = z[idx] @ np.linalg.inv(K + 1e-12 * np.eye(len(idx))) @ z[idx]
            if val > best_val:
                best, best_val = j, val
        S.append(best)
    return np.array(S)


def speed(cfg):
    rng = np.random.default_rng(0)
    t, k, dim = cfg["t"], cfg["k"], 64
    G = rng.normal(size=(t, dim)) / np.sqrt(dim)
    H = rng.normal(size=(500, dim)) / np.sqrt(dim) + 0.05
    h = H.mean(axis=0)
    z, mu = G @ h, float(h @ h)
    _, ours_k = timed(lambda: greedy_on_embeddings(G, z, mu, k))
    kn = cfg["naive_k"]
    (small, _, _), ours_small = timed(lambda: greedy_on_embeddings(G, z, mu, kn))
    printed, t_printed = timed(lambda: _algorithm1_as_printed(G, z, kn))
    kn2 = max(3, kn // 4)
    naive, t_naive = timed(lambda: _explicit_inverse(G, z, kn2))
    _, ours_tiny = timed(lambda: greedy_on_embeddings(G, z, mu, kn2))
    assert np.array_equal(printed, small[:kn]) and np.array_equal(naive, small[:kn2])
    rows = [[f"fairshare greedy (incremental Cholesky), k = {k}", t, k, ours_k, "-"],
            [f"fairshare greedy, k = {kn}", t, kn, ours_small, "1"],
            [f"Algorithm 1 as printed (Prop. 1 update per candidate), k = {kn}", t, kn, t_printed,
             f"{t_printed / ours_small:.0f}x slower"],
            [f"explicit inverse per candidate, k = {kn2}", t, kn2, t_naive, f"{t_naive / ours_tiny:.0f}x slower"]]
    return rows, ours_k


# ----------------------------------------------------------------------------------- data cleaning
def _train_mlp(X, y, epochs, seed):
    import torch

    torch.manual_seed(seed)
    net = torch.nn.Sequential(torch.nn.Linear(X.shape[1], 32), torch.nn.Tanh(), torch.nn.Linear(32, 2)).double()
    opt = torch.optim.Adam(net.parameters(), lr=0.01, weight_decay=1e-4)
    Xt, yt = torch.tensor(X), torch.tensor(y).long()
    for _ in range(epochs):
        opt.zero_grad()
        torch.nn.functional.cross_entropy(net(Xt), yt).backward()
        opt.step()
    return net


def _accuracy(net, X, y):
    import torch

    with torch.no_grad():
        return float((net(torch.tensor(X)).argmax(1).numpy() == y).mean())


def data_cleaning(cfg):
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    digits = load_digits()
    keep = np.isin(digits.target, [4, 9])
    X, y = digits.data[keep] / 16.0, (digits.target[keep] == 9).astype(int)
    rows = []
    for seed in range(cfg["seeds"]):
        X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.3, random_state=seed, stratify=y)
        rng = np.random.default_rng(seed)
        corrupt = rng.random(len(y_tr)) < 0.15
        y_noisy = np.where(corrupt, 1 - y_tr, y_tr)
        net = _train_mlp(X_tr, y_noisy, cfg["digit_epochs"], seed)
        wrong = np.flatnonzero(_predict(net, X_te) != y_te)
        if wrong.size == 0:
            continue
        F_tr = fisher_embedding(net, X_tr, y_noisy)
        F_wrong = fisher_embedding(net, X_te[wrong], y_te[wrong])
        chosen = select_prototypes(F_tr, F_wrong, k=min(200, len(X_tr) - 1), kernel="fisher", reg=1e-2).indices
        base = _accuracy(net, X_te, y_te)
        for m in (50, 100, 200):
            sel = chosen[:m]
            keep_sel = np.setdiff1d(np.arange(len(X_tr)), sel)
            keep_rand = np.setdiff1d(np.arange(len(X_tr)), rng.choice(len(X_tr), len(sel), replace=False))
            acc_sel = _accuracy(_train_mlp(X_tr[keep_sel], y_noisy[keep_sel], cfg["digit_epochs"], seed), X_te, y_te)
            acc_rand = _accuracy(_train_mlp(X_tr[keep_rand], y_noisy[keep_rand], cfg["digit_epochs"], seed), X_te, y_te)
            rows.append((seed, m, base, acc_sel, acc_rand, float(corrupt[sel].mean()), float(corrupt.mean())))
    table_rows = []
    for m in (50, 100, 200):
        r = np.array([row[2:] for row in rows if row[1] == m])
        if r.size:
            table_rows.append([m, r[:, 0].mean(), r[:, 1].mean(), r[:, 2].mean(), r[:, 3].mean(), r[:, 4].mean()])
    return table_rows


def _predict(net, X):
    import torch

    with torch.no_grad():
        return net(torch.tensor(X)).argmax(1).numpy()


# -------------------------------------------------------------------------------------- mislabels
_STOP = None


def _tokens(text: str) -> str:
    global _STOP
    if _STOP is None:
        from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

        _STOP = ENGLISH_STOP_WORDS
    return " ".join(w for w in re.findall(r"[a-z]+", text.lower()) if w not in _STOP and len(w) > 1)


def enron_task(enron_docs):
    """The enron1 mislabel task of section 6.2: bag-of-words counts, 80/20 split, 500 curated points, 20% of
    the other training labels flipped. Returns ``X_tr, y_tr (clean), y_noisy, flipped, curated, rest, X_te,
    y_te, rng``."""
    from sklearn.feature_extraction.text import CountVectorizer

    texts, labels = read_enron1()
    rng = np.random.default_rng(0)
    order = rng.permutation(len(texts))
    if enron_docs:
        order = order[:enron_docs]
    texts = [_tokens(texts[i]) for i in order]
    labels = labels[order].astype(int)
    split = int(0.8 * len(texts))
    vec = CountVectorizer(min_df=5)
    X_tr = vec.fit_transform(texts[:split]).toarray().astype(float)
    X_te = vec.transform(texts[split:]).toarray().astype(float)
    y_tr, y_te = labels[:split], labels[split:]
    curated = rng.choice(split, 500 if split > 1000 else split // 5, replace=False)
    rest = np.setdiff1d(np.arange(split), curated)
    flipped = np.zeros(split, dtype=bool)
    flipped[rng.choice(rest, int(0.2 * rest.size), replace=False)] = True
    y_noisy = np.where(flipped, 1 - y_tr, y_tr)
    return X_tr, y_tr, y_noisy, flipped, curated, rest, X_te, y_te, rng


def mislabels(cfg, out):
    from sklearn.linear_model import LogisticRegression

    X_tr, y_tr, y_noisy, flipped, curated, rest, X_te, y_te, rng = enron_task(cfg["enron_docs"])

    def fit(y):
        return LogisticRegression(C=1.0, max_iter=2000).fit(X_tr, y)

    orders = checking_orders(X_tr, y_tr, y_noisy, curated, rest, int(max(cfg["fractions"]) * rest.size), rng)
    rows, series_fix, series_acc = [], {}, {}
    for label, order_ in orders.items():
        fixes, accs = [], []
        for frac in cfg["fractions"]:
            checked = order_[: int(frac * rest.size)]
            y_fixed = y_noisy.copy()
            y_fixed[checked] = y_tr[checked]
            accs.append(float(fit(y_fixed).score(X_te, y_te)))
        fixes = fix_rate(order_, flipped, rest, cfg["fractions"])
        rows.append([label] + [f"{f:.2f} / {a:.3f}" for f, a in zip(fixes, accs)])
        series_fix[label] = (list(cfg["fractions"]), fixes)
        series_acc[label] = (list(cfg["fractions"]), accs)
    plot_lines(results_dir("examples", out) / "mislabels_fixed.png", "enron1: flipped labels fixed",
               "fraction of training data checked", "fraction of flips fixed", series_fix, logx=False, logy=False)
    plot_lines(results_dir("examples", out) / "mislabels_accuracy.png", "enron1: test accuracy after fixing",
               "fraction of training data checked", "test accuracy", series_acc, logx=False, logy=False)
    noisy_acc = float(fit(y_noisy).score(X_te, y_te))
    return rows, noisy_acc, X_tr.shape


def fix_rate(order, flipped, rest, fractions):
    """Share of the flipped labels found when the first ``fraction`` of ``rest`` in ``order`` is checked."""
    return [float(flipped[order[: int(f * rest.size)]].sum() / flipped.sum()) for f in fractions]


def checking_orders(X_tr, y_tr, y_noisy, curated, rest, max_checks, rng):
    """The orders in which section 6.2 checks the non-curated training points: SBQ prototypes responsible for
    the model's mistakes on the curated points, self-influence, random."""
    from sklearn.linear_model import LogisticRegression

    model = LogisticRegression(C=1.0, max_iter=2000).fit(X_tr, y_noisy)
    F_tr = fisher_embedding(model, X_tr, y_noisy)
    wrong = curated[model.predict(X_tr[curated]) != y_tr[curated]]
    target = wrong if wrong.size else curated
    F_target = fisher_embedding(model, X_tr[target], y_tr[target])
    kernel = FisherKernel(F_tr, reg=1e-2)
    order_sbq = rest[select_prototypes(F_tr[rest], F_target, k=max_checks, kernel=kernel).indices]
    if order_sbq.size < max_checks:                                  # span exhausted: continue by self-influence
        more = [i for i in np.argsort(-self_influence(model, X_tr, y_noisy, hessian="fisher", damping=1e-2))
                if i in set(rest) and i not in set(order_sbq)]
        order_sbq = np.concatenate([order_sbq, more])[:max_checks]
    infl = self_influence(model, X_tr, y_noisy, hessian="exact", damping=1e-3)
    return {"SBQ (Fisher kernel)": order_sbq, "self-influence": rest[np.argsort(-infl[rest])],
            "random": rng.permutation(rest)}


# ---------------------------------------------------------------------------------- summarization
def _coreset(X, y, m, rng, clusters=6, radius=1.0):
    """Sensitivity sampling for logistic regression (Huggins et al. 2016): bounds from k-means on y x."""
    from sklearn.cluster import KMeans

    Z = X * np.where(y > 0, 1.0, -1.0)[:, None]
    km = KMeans(n_clusters=clusters, n_init=3, random_state=0).fit(Z)
    sizes = np.bincount(km.labels_, minlength=clusters)
    dist = np.linalg.norm(Z[:, None, :] - km.cluster_centers_[None, :, :], axis=2)
    sens = len(X) / (1.0 + (sizes[None, :] * np.exp(-radius * dist)).sum(axis=1))
    p = sens / sens.sum()
    idx = rng.choice(len(X), size=m, replace=True, p=p)
    return idx, 1.0 / (m * p[idx])


def summarization(cfg, out):
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler

    X, y, _ = adult_census()
    rng = np.random.default_rng(0)
    order = rng.permutation(len(X))[: cfg["summary_rows"] + 5000]
    X, y = StandardScaler().fit_transform(X[order]), y[order].astype(int)
    X_te, y_te = X[-2500:], y[-2500:]
    X, y = X[:-2500], y[:-2500]
    n_val = len(X) // 10
    X_val, y_val, X_tr, y_tr = X[:n_val], y[:n_val], X[n_val:], y[n_val:]
    full = LogisticRegression(max_iter=2000).fit(X_tr, y_tr)

    def test_ll(model):
        p = np.clip(model.predict_proba(X_te)[np.arange(len(y_te)), y_te], 1e-12, 1)
        return float(np.mean(np.log(p)))

    F_tr = fisher_embedding(full, X_tr, y_tr)
    F_val = fisher_embedding(full, X_val, y_val)
    kernel = FisherKernel(F_tr, reg=1e-3)
    sbq = select_prototypes(F_tr, F_val, k=max(cfg["summary_sizes"]), kernel=kernel).indices
    series = {"SBQ (Fisher kernel)": [], "random": [], "coreset (sensitivity sampling)": []}
    for m in cfg["summary_sizes"]:
        sel = sbq[:m]
        series["SBQ (Fisher kernel)"].append(_fit_ll(X_tr[sel], y_tr[sel], None, test_ll))
        rand, core = [], []
        for s in range(cfg["seeds"]):
            r = np.random.default_rng(100 + s)
            idx = r.choice(len(X_tr), m, replace=False)
            rand.append(_fit_ll(X_tr[idx], y_tr[idx], None, test_ll))
            cidx, w = _coreset(X_tr, y_tr, m, r)
            core.append(_fit_ll(X_tr[cidx], y_tr[cidx], w, test_ll))
        series["random"].append(float(np.nanmean(rand)))
        series["coreset (sensitivity sampling)"].append(float(np.nanmean(core)))
    sizes = list(cfg["summary_sizes"])
    plot_lines(results_dir("examples", out) / "summarization.png", "adult: logistic regression on a subset",
               "subset size", "test log-likelihood", {k: (sizes, v) for k, v in series.items()}, logy=False)
    rows = [[label] + vals for label, vals in series.items()]
    rows.append(["full training set"] + [test_ll(full)] * len(sizes))
    return rows, sizes


def _fit_ll(X, y, w, score):
    from sklearn.linear_model import LogisticRegression

    if len(np.unique(y)) < 2:
        return float("nan")
    return score(LogisticRegression(max_iter=2000).fit(X, y, sample_weight=w))


def main(size: str = "default", seeds: int | None = None, out: str | None = None) -> None:
    cfg = configuration(SIZES, size, seeds)
    start = time.perf_counter()
    speed_rows, t_k = speed(cfg)
    cleaning = data_cleaning(cfg)
    mis_rows, noisy_acc, shape = mislabels(cfg, out)
    summary_rows, sizes = summarization(cfg, out)
    sections = [
        f"Run with `fairshare bench examples --size {size}` in {time.perf_counter() - start:.0f} s.",
        f"## Greedy selection speed (t = {cfg['t']:,} candidates, 64-dimensional embeddings)\n\n"
        + table(["method", "t", "k", "seconds", "relative"], speed_rows)
        + f"\n\nk = {cfg['k']} from t = {cfg['t']:,}: {t_k:.2f} s (target: under 30 s). Every method selects the same points.",
        "## Data cleaning: digits 4 vs 9, MLP, 15% corrupted labels (mean over seeds)\n\n" + table(
            ["removed", "accuracy before", "remove SBQ prototypes", "remove random points",
             "corrupted among SBQ prototypes", "corrupted overall"], cleaning),
        f"## Fixing mislabeled examples: enron1 ({shape[0]} training e-mails x {shape[1]} words), 20% flipped "
        f"(test accuracy with the noisy labels {noisy_acc:.3f})\n\nfraction of flips fixed / test accuracy, by "
        "fraction of training data checked:\n\n"
        + table(["method"] + [f"{f:.0%} checked" for f in cfg["fractions"]], mis_rows),
        "## Summarization: adult census, logistic regression (test log-likelihood, higher is better)\n\n"
        + table(["method"] + [f"{m} points" for m in sizes], summary_rows)
        + "\n\nThe Fisher kernel of a logistic regression with p parameters has rank p (here 15): once SBQ has "
        "chosen p points the quadrature of the validation mean is exact (v(S) = 0) and selection stops, so larger "
        "SBQ subsets repeat the p-point subset.",
        "Plots: `mislabels_fixed.png`, `mislabels_accuracy.png`, `summarization.png`.",
    ]
    write_report("examples", "fairshare bench examples", sections, out)
