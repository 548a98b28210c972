"""fairshare bench cleaning: the Fisher-kernel paper's section 6 on a CNN, with full-network gradients.

The data: scikit-learn's handwritten digits (1,797 real 8x8 images, digits 0-9, shipped with scikit-learn; the
paper's MNIST is 28x28 and not available offline). The network, as section 6.1 describes it, sized for 8x8 images:
two 3x3 convolutions (stride 1, zero padding that keeps the size; 16 and 32 channels), each followed by ReLU and
2x2 max pooling, a fully connected layer of 64 units, dropout 0.25, a softmax output; 13,706 parameters, trained
with Adam (learning rate 2e-3, batches of 64) for a fixed number of steps (the paper: 20,000 steps of 100).
Every embedding is the per-example gradient of the log-likelihood over every parameter of the network
(``fisher_embedding``, streamed by ``torch.func``), projected to ``projection`` dimensions by a seeded Gaussian
matrix; the Fisher information is formed and damped (1e-2) in those dimensions.

1. Data cleaning (6.1). The paper's protocol: train; take the test 4s and 9s the model misclassifies; select the
   training points responsible with SBQ (Algorithm 1) on the full Fisher kernel between the training set and those
   test points; remove the first m, retrain, report the accuracy on the test 4s and 9s and on the whole test set,
   against removing m random points. Our choices: 50% of the images held out (stratified; about 180 test 4s and
   9s), m in 10 / 25 / 50 / 100 of about 900 training images (the paper: 50-300 of 60,000), every accuracy the mean
   of ``retrains`` trainings with different seeds, the same seeds before and after removal, a fresh random
   removal per training; beside SBQ the project's set influence z ranked from the most harmful
   (``rank_mislabeled`` with the misclassified points as the clean set). As the paper, the test points that pick
   the removals are among those scored. Run twice: on the digits as they are, and with 10% of the training 4s and
   9s relabelled as the other digit (planted harmful points, so the share found can be counted).
2. Mislabel fixing (6.2). 70/30 split, 150 curated points with their true labels (12% of the training set, the
   paper's 500 of 4,137), 20% of the other labels flipped to another digit; the CNN trained on the noisy labels;
   checking orders: SBQ responsible for the curated points the model gets wrong (the paper), the set influence z on
   every curated point (``rank_mislabeled``), self-influence (Koh and Liang, the Fisher Hessian in k dimensions:
   the exact Hessian of 13,706 parameters is not formed), the training loss, random. Reported: share of the flips
   found after checking k% of the non-curated points, and the test accuracy after retraining on the fixed labels.
3. Summarization (6.3). 10% of the training split as validation; SBQ picks m training images whose embeddings
   reproduce the validation set's (full Fisher kernel and RBF on Fisher embeddings, both with a 1e-3 nugget); a CNN
   trained on them with their BQ weights, against random subsets (3 draws) and the full training set.
"""

from __future__ import annotations

import time
import warnings
from functools import lru_cache

import numpy as np

from fairshare.examples import FisherKernel, RBFKernel, fisher_embedding, rank_mislabeled, select_prototypes

from .common import configuration, plot_lines, results_dir, table, write_report
from .examples import fix_rate

warnings.filterwarnings("ignore")

SIZES = {"quick": dict(rows=260, seeds=1, retrains=1, steps=10, removals=(10,), projection=48, curated=30,
                       fractions=(0.2,), summary_sizes=(20,), random_draws=1, planted=(True,)),
         "default": dict(rows=None, seeds=5, retrains=2, steps=600, removals=(10, 25, 50, 100), projection=512,
                         curated=150, fractions=(0.05, 0.1, 0.2, 0.3), summary_sizes=(20, 50, 100, 200),
                         random_draws=3, planted=(False, True)),
         "full": dict(rows=None, seeds=10, retrains=3, steps=1000, removals=(10, 25, 50, 100, 200), projection=1024,
                      curated=150, fractions=(0.05, 0.1, 0.2, 0.3), summary_sizes=(20, 50, 100, 200, 400),
                      random_draws=5, planted=(False, True))}
#: ridge of the Fisher information in k dimensions (``FisherKernel(reg=)`` and ``rank_mislabeled(damping=)``)
REG = 1e-2


# ---------------------------------------------------------------------------------------------- the CNN
@lru_cache(maxsize=1)
def _digits():
    from sklearn.datasets import load_digits

    d = load_digits()
    return (d.images / 16.0).astype(np.float32)[:, None], d.target.astype(np.int64)


def digit_images(rows: int | None = None):
    """The digits as ``(n, 1, 8, 8)`` float32 images in [0, 1] and their labels (``rows``: a stratified subset)."""
    X, y = _digits()
    if rows:
        keep = np.sort(np.concatenate([np.flatnonzero(y == c)[: rows // 10] for c in range(10)]))
        X, y = X[keep], y[keep]
    return X, y


def digits_cnn():
    """Section 6.1's network for 8x8 images: conv-pool, conv-pool, fully connected, dropout, softmax output."""
    import torch.nn as nn

    return nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                         nn.Linear(128, 64), nn.ReLU(), nn.Dropout(0.25), nn.Linear(64, 10))


def train_cnn(X, y, seed: int, steps: int, weights=None, batch: int = 64, lr: float = 2e-3):
    """The CNN trained by Adam for ``steps`` steps on reshuffled batches (``weights``: per-example loss weights)."""
    import torch

    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    net = digits_cnn()
    opt = torch.optim.Adam(net.parameters(), lr=lr)
    Xt, yt = torch.as_tensor(X), torch.as_tensor(y)
    wt = None if weights is None else torch.as_tensor(np.asarray(weights, dtype=np.float32))
    size = min(batch, len(Xt))
    order, pos = torch.randperm(len(Xt), generator=gen), 0
    for _ in range(steps):
        if pos + size > len(Xt):
            order, pos = torch.randperm(len(Xt), generator=gen), 0
        idx = order[pos:pos + size]
        pos += size
        loss = torch.nn.functional.cross_entropy(net(Xt[idx]), yt[idx], reduction="none")
        loss = loss.mean() if wt is None else (loss * wt[idx]).sum() / wt[idx].sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return net.eval()


def predict(net, X) -> np.ndarray:
    import torch

    with torch.no_grad():
        return net(torch.as_tensor(X)).argmax(1).numpy()


def _split(n: int, y, share: float, seed: int):
    from sklearn.model_selection import train_test_split

    return train_test_split(np.arange(n), test_size=share, random_state=seed, stratify=y)


# ------------------------------------------------------------------------------------------ 6.1 cleaning
def cleaning_split(cfg: dict, seed: int, planted: bool) -> dict | None:
    """One split of section 6.1: accuracies before and after each removal, and the planted share removed."""
    X, y = digit_images(cfg["rows"])
    tr, te = _split(len(y), y, 0.5, seed)
    X_tr, y_tr, X_te, y_te = X[tr], y[tr].copy(), X[te], y[te]
    rng = np.random.default_rng([seed, 1])
    bad = np.zeros(len(tr), dtype=bool)
    if planted:
        pool = np.flatnonzero(np.isin(y_tr, (4, 9)))
        bad[rng.choice(pool, int(0.1 * pool.size), replace=False)] = True
        y_tr[bad] = 13 - y_tr[bad]                                               # 4 <-> 9
    is49 = np.isin(y_te, (4, 9))
    seeds = [1000 * seed + r for r in range(cfg["retrains"])]

    def scores(keeps):
        """Accuracies on the test 4s and 9s and on the whole test set, one training per seed (``keeps``: the rows
        kept for each training, or one array for all)."""
        keeps = keeps if isinstance(keeps, list) else [keeps] * len(seeds)
        preds = [predict(train_cnn(X_tr[k], y_tr[k], s, cfg["steps"]), X_te) for k, s in zip(keeps, seeds)]
        return [float(np.mean(p[is49] == y_te[is49])) for p in preds], [float(np.mean(p == y_te)) for p in preds]

    net = train_cnn(X_tr, y_tr, seeds[0], cfg["steps"])
    wrong = np.flatnonzero(is49 & (predict(net, X_te) != y_te))
    if wrong.size == 0:
        return None
    emb = dict(projection=cfg["projection"], seed=0)
    F_tr = fisher_embedding(net, X_tr, y_tr, **emb)
    F_wrong = fisher_embedding(net, X_te[wrong], y_te[wrong], **emb)
    top = max(cfg["removals"])
    orders = {"SBQ prototypes (Algorithm 1, the paper)": select_prototypes(
                  F_tr, F_wrong, k=top, kernel=FisherKernel(F_tr, reg=REG)).indices,
              "set influence z, most harmful first": rank_mislabeled(
                  net, X_tr, y_tr, X_te[wrong], y_te[wrong], damping=REG, **emb)[0]}
    out = {"before": scores(np.arange(len(tr))), "wrong": int(wrong.size), "planted": int(bad.sum()), "rows": {}}
    for m in cfg["removals"]:
        for label, order in orders.items():
            removed = order[:m]
            out["rows"][(label, m)] = scores(np.setdiff1d(np.arange(len(tr)), removed)) + (float(bad[removed].sum()),)
        draws = [rng.choice(len(tr), m, replace=False) for _ in seeds]               # a fresh draw per training
        out["rows"][("random", m)] = tuple(scores([np.setdiff1d(np.arange(len(tr)), d) for d in draws])) + (
            float(np.mean([bad[d].sum() for d in draws])),)
    return out


def cleaning(cfg: dict, planted: bool) -> tuple[list, dict]:
    """Section 6.1 over ``cfg['seeds']`` splits: table rows and facts."""
    runs = [r for r in (cleaning_split(cfg, s, planted) for s in range(cfg["seeds"])) if r is not None]
    if not runs:
        return [], dict(runs=0)
    before49 = [a for r in runs for a in r["before"][0]]
    before = [a for r in runs for a in r["before"][1]]
    rows = [["none (trained on every point)", 0, _ms(before49), _ms(before), "-"]]
    for (label, m) in runs[0]["rows"]:
        got = [r["rows"][(label, m)] for r in runs]
        share = f"{np.sum([g[2] for g in got]) / max(1, np.sum([r['planted'] for r in runs])):.2f}" if planted else "-"
        rows.append([label, m, _ms([a for g in got for a in g[0]]), _ms([a for g in got for a in g[1]]), share])
    return rows, dict(runs=len(runs), wrong=[r["wrong"] for r in runs], planted=[r["planted"] for r in runs])


def _ms(values) -> str:
    return f"{np.mean(values):.4f} ± {np.std(values):.4f}"


# ------------------------------------------------------------------------------------ 6.2 mislabel fixing
def mislabel_split(cfg: dict, seed: int) -> dict:
    """One split of section 6.2: share of flips found and test accuracy after fixing, per checking order."""
    X, y = digit_images(cfg["rows"])
    tr, te = _split(len(y), y, 0.3, seed)
    X_tr, y_tr, X_te, y_te = X[tr], y[tr], X[te], y[te]
    rng = np.random.default_rng([seed, 2])
    curated = rng.choice(len(tr), cfg["curated"], replace=False)
    rest = np.setdiff1d(np.arange(len(tr)), curated)
    flipped = np.zeros(len(tr), dtype=bool)
    flipped[rng.choice(rest, int(0.2 * rest.size), replace=False)] = True
    y_noisy = np.where(flipped, (y_tr + rng.integers(1, 10, len(tr))) % 10, y_tr)
    net = train_cnn(X_tr, y_noisy, seed, cfg["steps"])
    emb = dict(projection=cfg["projection"], seed=0)
    F = fisher_embedding(net, X_tr, y_noisy, **emb)
    wrong = curated[predict(net, X_tr[curated]) != y_tr[curated]]
    targets = wrong if wrong.size else curated
    checks = int(max(cfg["fractions"]) * rest.size)
    sbq = rest[select_prototypes(F[rest], fisher_embedding(net, X_tr[targets], y_tr[targets], **emb),
                                 k=min(checks, cfg["projection"]), kernel=FisherKernel(F, reg=REG)).indices]
    in_rest = np.isin(np.arange(len(tr)), rest)
    on_rest = lambda order: order[in_rest[order]]                                    # noqa: E731
    with np.errstate(divide="ignore"):
        loss = -np.log(_probabilities(net, X_tr)[np.arange(len(tr)), y_noisy])
    orders = {"SBQ, misclassified curated points (the paper)": np.concatenate(
                  [sbq, rng.permutation(np.setdiff1d(rest, sbq))]),
              "set influence z, all curated points (rank_mislabeled)": on_rest(rank_mislabeled(
                  net, X_tr, y_noisy, X_tr[curated], y_tr[curated], damping=REG, **emb)[0]),
              "self-influence (Fisher Hessian in k dimensions)": on_rest(rank_mislabeled(
                  net, X_tr, y_noisy, damping=REG, **emb)[0]),
              "training loss, highest first": on_rest(np.argsort(-loss, kind="stable")),
              "random": rng.permutation(rest)}
    found, accs = {}, {}
    for label, order in orders.items():
        found[label] = fix_rate(order, flipped, rest, cfg["fractions"])
        accs[label] = []
        for frac in cfg["fractions"]:
            checked = order[: int(frac * rest.size)]
            y_fixed = y_noisy.copy()
            y_fixed[checked] = y_tr[checked]
            accs[label].append(float(np.mean(predict(train_cnn(X_tr, y_fixed, seed, cfg["steps"]), X_te) == y_te)))
    return dict(found=found, accs=accs, sbq=int(sbq.size), wrong=int(wrong.size),
                noisy=float(np.mean(predict(net, X_te) == y_te)))


def _probabilities(net, X) -> np.ndarray:
    import torch

    with torch.no_grad():
        return torch.softmax(net(torch.as_tensor(X)), 1).double().numpy()


def mislabels(cfg: dict, out: str | None) -> tuple[list, list, dict]:
    runs = [mislabel_split(cfg, s) for s in range(cfg["seeds"])]
    fr = cfg["fractions"]
    labels = list(runs[0]["found"])
    found = {lab: np.array([r["found"][lab] for r in runs]) for lab in labels}
    accs = {lab: np.array([r["accs"][lab] for r in runs]) for lab in labels}
    rows = [[lab, len(runs)] + [f"{m:.3f} ± {s:.3f}" for m, s in zip(found[lab].mean(0), found[lab].std(0))]
            for lab in labels]
    acc_rows = [[lab, len(runs)] + [f"{v:.4f}" for v in accs[lab].mean(0)] for lab in labels]
    folder = results_dir("cleaning", out)
    plot_lines(folder / "mislabels_found.png", "digits CNN, 20% flipped: flips found", "fraction checked",
               "fraction of flips found", {lab: (list(fr), list(found[lab].mean(0))) for lab in labels},
               logx=False, logy=False)
    return rows, acc_rows, dict(noisy=float(np.mean([r["noisy"] for r in runs])), wrong=[r["wrong"] for r in runs],
                                sbq=[r["sbq"] for r in runs])


# -------------------------------------------------------------------------------------- 6.3 summarization
def summary_split(cfg: dict, seed: int) -> dict:
    X, y = digit_images(cfg["rows"])
    tr, te = _split(len(y), y, 0.3, seed)
    n_val = len(tr) // 10
    val, tr = tr[:n_val], tr[n_val:]
    net = train_cnn(X[tr], y[tr], seed, cfg["steps"])
    emb = dict(projection=cfg["projection"], seed=0)
    F_tr, F_val = fisher_embedding(net, X[tr], y[tr], **emb), fisher_embedding(net, X[val], y[val], **emb)
    top = max(cfg["summary_sizes"])
    protos = {"SBQ, full Fisher kernel + nugget, BQ weights": select_prototypes(
                  F_tr, F_val, k=top, kernel=FisherKernel(F_tr, reg=1e-3), jitter=1e-3),
              "SBQ, RBF on Fisher embeddings + nugget, BQ weights": select_prototypes(
                  F_tr, F_val, k=top, kernel=RBFKernel(F_tr, reg=1e-3), jitter=1e-3)}
    acc = lambda sel, w=None: float(np.mean(predict(train_cnn(X[tr][sel], y[tr][sel], seed, cfg["steps"], w),  # noqa
                                                    X[te]) == y[te]))
    rng = np.random.default_rng([seed, 3])
    out = {label: [] for label in list(protos) + ["random subset", "full training set"]}
    for m in cfg["summary_sizes"]:
        for label, p in protos.items():
            out[label].append(acc(p.indices[:m], p.sample_weight(m)) if p.indices.size >= m else float("nan"))
        out["random subset"].append(float(np.mean([acc(rng.choice(len(tr), m, replace=False))
                                                   for _ in range(cfg["random_draws"])])))
        out["full training set"].append(float(np.mean(predict(net, X[te]) == y[te])))
    return out


def summarization(cfg: dict, out: str | None) -> list:
    runs = [summary_split(cfg, s) for s in range(cfg["seeds"])]
    means = {label: np.nanmean([r[label] for r in runs], axis=0) for label in runs[0]}
    plot_lines(results_dir("cleaning", out) / "summarization.png", "digits CNN trained on m selected images",
               "m", "test accuracy", {lab: (list(cfg["summary_sizes"]), list(v)) for lab, v in means.items()},
               logy=False)
    return [[label] + [float(v) for v in vals] for label, vals in means.items()]


# ----------------------------------------------------------------------------------------------- report
def cleaning_section(cfg: dict, rows: list, facts: dict, planted: bool) -> str:
    what = ("10% of the training 4s and 9s relabelled as the other digit (planted)" if planted
            else "the digits as they are")
    if not rows:
        return f"### 6.1, {what}\n\nNo split left a misclassified test 4 or 9 (nothing to explain)."
    return (f"### 6.1, {what}\n\n{facts['runs']} splits with misclassified test 4s or 9s (per split: "
            f"{facts['wrong']}), {cfg['retrains']} trainings per cell and split (mean ± sd over all):\n\n"
            + table(["removed", "m", "accuracy on test 4s and 9s", "accuracy on the whole test set",
                     "planted points removed (share of all planted)"], rows))


def main(size: str = "default", seeds: int | None = None, out: str | None = None) -> None:
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        _report(configuration(SIZES, size, seeds), size, out)
    finally:
        torch.set_num_threads(threads)


def _report(cfg: dict, size: str, out: str | None) -> None:
    start = time.perf_counter()
    sections = [f"Run with `fairshare bench cleaning --size {size}`; {cfg['steps']} Adam steps per training, "
                f"projection {cfg['projection']} of 13,706 parameters; the protocol and our choices are in "
                "`benchmarks/cleaning.py`'s docstring."]
    part = ["## 6.1 Data cleaning: remove the training points responsible for misclassified test 4s and 9s"]
    for planted in cfg["planted"]:
        rows, facts = cleaning(cfg, planted)
        part.append(cleaning_section(cfg, rows, facts, planted))
    sections.append("\n\n".join(part))
    rows, acc_rows, facts = mislabels(cfg, out)
    head = ["checking order", "splits"] + [f"{f:.0%} checked" for f in cfg["fractions"]]
    sections.append(
        f"## 6.2 Fixing mislabeled examples: 20% of the non-curated labels flipped, {cfg['curated']} curated\n\n"
        f"Test accuracy of the CNN on the noisy labels: {facts['noisy']:.4f}; curated points it misclassifies "
        f"(SBQ's targets): {facts['wrong']}; SBQ selected {facts['sbq']} points (at most the points checked at "
        f"{max(cfg['fractions']):.0%} and the projection's {cfg['projection']}; the rest of its order is random). "
        "Share of the flips found:\n\n" + table(head, rows)
        + "\n\nTest accuracy after retraining on the fixed labels:\n\n" + table(head, acc_rows))
    sections.append("## 6.3 Summarization: a CNN trained on m selected training images (test accuracy)\n\n"
                    + table(["selection"] + [f"m = {m}" for m in cfg["summary_sizes"]], summarization(cfg, out)))
    sections.append(f"Plots: `mislabels_found.png`, `summarization.png`. Wall time {time.perf_counter() - start:.0f} s "
                    "(a machine of 2 cores shared with other sessions).")
    write_report("cleaning", "fairshare bench cleaning", sections, out)
