"""fairshare bench attribution: the linear datamodeling score (LDS) of data attributions on a small CNN.

Task: scikit-learn's real handwritten digits (8x8; MNIST itself is not available offline), the CNN of
``fairshare bench cleaning`` (section 6.1's architecture, 13,706 parameters, dropout, Adam), trained for 30 epochs.
Training set: ``n_train`` digits; test examples: the last ``n_test`` digits of the same seeded permutation (disjoint
from the examples used while writing this benchmark). Ground truth (Ilyas et al. 2022, Park et al. 2023): ``subsets``
random halves of the training set, a CNN trained on each (same recipe, own seed), and each test example's output:
the correct-class margin ``logit_y - logsumexp(other logits)`` (TRAK's output). A method's prediction for a subset
is the sum of its scores over the subset's points; LDS = mean over test examples of the Spearman correlation, across
subsets, between predicted and actual outputs. Every method attributes the same ``E`` CNNs trained on the whole
training set (seeds 100, 101, ...) and averages over them where it ensembles.

Methods, at projection dimension ``k`` where the method projects:
- ours: ``fairshare.examples.influence`` with the Fisher Hessian formed and damped in k dimensions (Gaussian
  projection of the full-network log-likelihood gradients); damping "auto" (a tenth of the mean eigenvalue,
  Grosse et al. 2023); the score is minus the influence on the test loss, averaged over the E models. Also with
  damping 0 (undamped) and with the countsketch projection. "auto" is the default of `influence` with a projection.
- TRAK (traker 0.3.2): BasicProjector (Rademacher, CPU), float32, its default ridge 0 and, as an analysis row, its
  ridge set by our "auto" rule from its own features; dattri 0.3.0's TRAK (its default ridge 0).
- dattri's TracIn (loss-gradient dot products at the E models, projected to k) and influence function (conjugate
  gradient, 10 iterations, no damping: dattri's defaults; full-network gradients, not projected; its Hessian summed
  over 4 batches of the training set, a constant factor that Spearman ignores; E = 1 only: it takes minutes).
- captum 0.9's TracInCP: the E models as checkpoints, full gradients (TracInCP does not project).
kronfluence is not installed: it needs torchvision, which cannot be imported beside CPU torch 2.13.0.

Time: wall seconds to compute the (test x train) scores from the trained models (imports and one small warm-up
call excluded; the models are trained once for all). Memory: peak resident-set growth during that computation
(``common.measured``: Linux VmHWM reset through /proc/self/clear_refs, after gc and malloc_trim), in one process,
methods in turn. One thread.

Scale (issue 39's memory targets): ``fisher_embedding`` of a CIFAR-sized CNN (random weights; the cost does not
depend on them) on ``n`` inputs streamed in chunks (the CIFAR-sized digits, cycled), countsketch projection:
default 1M parameters x 3,000 examples x k = 512; full 10M parameters x 50,000 examples x k = 2,048.
"""

from __future__ import annotations

import os
import tempfile
import time
import warnings

import numpy as np

from fairshare.examples import fisher_embedding, influence

from .cleaning import digit_images, digits_cnn, train_cnn
from .common import configuration, measured, results_dir, table, write_report
from .datasets import cifar_sized_task

warnings.filterwarnings("ignore")

SIZES = {"quick": dict(n_train=80, n_test=8, subsets=8, epochs=3, projection=32, ensembles=(1,),
                       peers=("traker", "captum"), scale=None),
         "default": dict(n_train=1000, n_test=200, subsets=100, epochs=30, projection=512, ensembles=(1, 5),
                         peers=("traker", "dattri", "captum"), scale=(240, 3000, 512)),
         "full": dict(n_train=1000, n_test=200, subsets=100, epochs=30, projection=512, ensembles=(1, 5),
                      peers=("traker", "dattri", "captum"), scale=(2400, 50_000, 2048))}


# ------------------------------------------------------------------------------------------ the task
def task(cfg: dict) -> dict:
    X, y = digit_images()
    perm = np.random.default_rng(0).permutation(len(y))
    tr, te = perm[: cfg["n_train"]], perm[-cfg["n_test"]:]
    return dict(X_tr=X[tr], y_tr=y[tr], X_te=X[te], y_te=y[te], epochs=cfg["epochs"])


def _steps(d: dict, n: int) -> int:
    return d["epochs"] * int(np.ceil(n / 64))


def margins(net, X, y) -> np.ndarray:
    """The correct-class margin ``logit_y - logsumexp(other logits)`` of every example."""
    import torch

    with torch.no_grad():
        out = net(torch.as_tensor(X)).double().numpy()
    correct = out[np.arange(len(y)), y]
    out[np.arange(len(y)), y] = -np.inf
    top = out.max(axis=1)
    return correct - (top + np.log(np.exp(out - top[:, None]).sum(axis=1)))


def ground_truth(d: dict, subsets: int) -> tuple[np.ndarray, np.ndarray]:
    """``(masks (subsets, n_train), outputs (subsets, n_test))``: the CNN retrained on random halves."""
    n = len(d["y_tr"])
    masks, outputs = np.zeros((subsets, n), dtype=bool), np.zeros((subsets, len(d["y_te"])))
    for s in range(subsets):
        sub = np.sort(np.random.default_rng(10_000 + s).choice(n, n // 2, replace=False))
        masks[s, sub] = True
        net = train_cnn(d["X_tr"][sub], d["y_tr"][sub], 10_000 + s, _steps(d, sub.size))
        outputs[s] = margins(net, d["X_te"], d["y_te"])
    return masks, outputs


def lds(scores: np.ndarray, masks: np.ndarray, outputs: np.ndarray) -> np.ndarray:
    """Spearman correlation, per test example, between ``masks @ scores.T`` and ``outputs`` across subsets."""
    from scipy.stats import rankdata

    predicted = masks.astype(float) @ np.asarray(scores, dtype=float).T             # (subsets, n_test)
    a, b = rankdata(predicted, axis=0), rankdata(outputs, axis=0)
    a, b = a - a.mean(axis=0), b - b.mean(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (a * b).sum(axis=0) / np.sqrt((a**2).sum(axis=0) * (b**2).sum(axis=0))


# ------------------------------------------------------------------------------------------- methods
def ours(models, d, k, damping="auto", kind="gaussian") -> np.ndarray:
    """Minus the influence on the test loss (Fisher Hessian in k dimensions), averaged over the models."""
    return np.mean([-influence(m, d["X_tr"], d["y_tr"], d["X_te"], d["y_te"], hessian="fisher", damping=damping,
                               projection=k, projection_kind=kind, seed=0) for m in models], axis=0)


def trak_traker(models, d, k, auto_ridge=False) -> np.ndarray:
    """TRAK (traker) scores ``(n_test, n_train)``; ``auto_ridge``: its ridge set by our "auto" rule (a tenth of the
    mean eigenvalue of its own ``X^T X``, averaged over the models)."""
    import logging

    import torch
    from trak import TRAKer
    from trak.projectors import BasicProjector, ProjectionType

    X_tr, y_tr, X_te, y_te = (torch.as_tensor(d[key]) for key in ("X_tr", "y_tr", "X_te", "y_te"))
    template = digits_cnn().eval()
    n_params = sum(p.numel() for p in template.parameters())
    with tempfile.TemporaryDirectory() as tmp:
        # at least two blocks: traker 0.3.2's one-block path projects with the matrix finalize_features freed
        projector = BasicProjector(grad_dim=n_params, proj_dim=k, seed=0, proj_type=ProjectionType.rademacher,
                                   device="cpu", dtype=torch.float32, block_size=min(100, max(1, k // 2)))
        traker = TRAKer(model=template, task="image_classification", train_set_size=len(y_tr), save_dir=tmp,
                        device="cpu", projector=projector, use_half_precision=False, logging_level=logging.ERROR)
        for i, m in enumerate(models):
            traker.load_checkpoint(m.state_dict(), model_id=i)
            for s in range(0, len(y_tr), 100):
                traker.featurize(batch=(X_tr[s:s + 100], y_tr[s:s + 100]), num_samples=len(y_tr[s:s + 100]))
        if auto_ridge:                          # a tenth of the mean eigenvalue of its X^T X, averaged over models
            ridge = []
            for i in range(len(models)):
                traker.saver.load_current_store(i)
                ridge.append(0.1 * float(np.sum(np.asarray(traker.saver.current_store["grads"], dtype=float)**2)) / k)
            traker.score_computer.lambda_reg = float(np.mean(ridge))
        traker.finalize_features()
        for i, m in enumerate(models):
            traker.start_scoring_checkpoint(exp_name="lds", checkpoint=m.state_dict(), model_id=i,
                                            num_targets=len(y_te))
            traker.score(batch=(X_te, y_te), num_samples=len(y_te))
        return np.array(traker.finalize_scores(exp_name="lds"), dtype=float).T


def _dattri_task(models, kind: str):
    """A dattri AttributionTask on the models with a per-example ``margin`` or ``loss``, or a batch ``mean-loss``."""
    import torch
    from dattri.task import AttributionTask

    template = digits_cnn().eval()

    def out(params, image):
        return torch.func.functional_call(template, params, image)

    def margin(params, data):
        image, label = data
        logp = -torch.nn.functional.cross_entropy(out(params, image.unsqueeze(0)), label.unsqueeze(0))
        return logp - torch.log(1 - torch.exp(logp))

    def loss(params, data):
        image, label = data
        return torch.nn.functional.cross_entropy(out(params, image.unsqueeze(0)), label.unsqueeze(0))

    def mean_loss(params, data):
        image, label = data
        return torch.nn.functional.cross_entropy(out(params, image), label)

    def probability(params, data):
        return torch.exp(-loss(params, data))

    fn = {"margin": margin, "loss": loss, "mean-loss": mean_loss}[kind]
    return AttributionTask(loss_func=fn, model=template, checkpoints=[m.state_dict() for m in models]), probability


def _loader(X, y, batch: int):
    import torch
    from torch.utils.data import DataLoader, TensorDataset

    return DataLoader(TensorDataset(torch.as_tensor(X), torch.as_tensor(y)), batch_size=batch, shuffle=False)


def dattri_method(models, d, k, which: str) -> np.ndarray:
    """dattri's TRAK, TracIn or influence function (CG) scores ``(n_test, n_train)``."""
    import torch

    proj = {"proj_dim": k, "proj_max_batch_size": 32, "proj_seed": 0, "device": "cpu"}
    train, test = _loader(d["X_tr"], d["y_tr"], 100), _loader(d["X_te"], d["y_te"], 100)
    if which == "trak":
        from dattri.algorithm.trak import TRAKAttributor

        task_, probability = _dattri_task(models, "margin")
        attributor = TRAKAttributor(task=task_, correct_probability_func=probability, device="cpu",
                                    projector_kwargs=proj)
        attributor.cache(train)
        scores = attributor.attribute(test)
    elif which == "tracin":
        from dattri.algorithm.tracin import TracInAttributor

        attributor = TracInAttributor(task=_dattri_task(models, "loss")[0], weight_list=torch.ones(len(models)),
                                      normalized_grad=False, projector_kwargs=proj)
        scores = attributor.attribute(train, test)
    else:
        from dattri.algorithm.influence_function import IFAttributorCG

        attributor = IFAttributorCG(task=_dattri_task(models, "mean-loss")[0], max_iter=10, mode="rev-fwd")
        attributor.cache(_loader(d["X_tr"], d["y_tr"], max(1, len(d["y_tr"]) // 4)))
        scores = attributor.attribute(_loader(d["X_tr"], d["y_tr"], len(d["y_tr"])), _loader(d["X_te"], d["y_te"], 5))
    return scores.detach().double().numpy().T


def captum_tracincp(models, d, k=None) -> np.ndarray:
    """captum's TracInCP with the models as checkpoints (full gradients)."""
    import torch
    from captum.influence import TracInCP
    from torch.utils.data import TensorDataset

    def load(net, path):
        net.load_state_dict(torch.load(path))
        net.eval()
        return 1.0

    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for i, m in enumerate(models):
            paths.append(os.path.join(tmp, f"model{i}.pt"))
            torch.save(m.state_dict(), paths[-1])
        tracin = TracInCP(digits_cnn().eval(), TensorDataset(torch.as_tensor(d["X_tr"]), torch.as_tensor(d["y_tr"])),
                          paths, checkpoints_load_func=load, loss_fn=torch.nn.CrossEntropyLoss(reduction="sum"),
                          batch_size=100, sample_wise_grads_per_batch=True)
        return tracin.influence((torch.as_tensor(d["X_te"]), torch.as_tensor(d["y_te"])),
                                show_progress=False).detach().double().numpy()


def methods(cfg: dict) -> list[tuple[str, str, str, int, object]]:
    """``(method, library, projection, E, fn(models, d))`` rows, ours first."""
    k, rows = cfg["projection"], []
    for E in cfg["ensembles"]:
        rows += [("ours: influence, Fisher in k dims, damping auto (the default)", "fairshare", f"{k} Gaussian", E,
                  lambda m, d: ours(m, d, k)),
                 ("ours, countsketch projection", "fairshare", f"{k} countsketch", E,
                  lambda m, d: ours(m, d, k, kind="countsketch")),
                 ("ours, damping 0 (undamped)", "fairshare", f"{k} Gaussian", E,
                  lambda m, d: ours(m, d, k, damping=0.0))]
        if "traker" in cfg["peers"]:
            rows += [("TRAK", "traker", f"{k} Rademacher", E, lambda m, d: trak_traker(m, d, k)),
                     ("TRAK, ridge by our auto rule (analysis)", "traker", f"{k} Rademacher", E,
                      lambda m, d: trak_traker(m, d, k, auto_ridge=True))]
        if "dattri" in cfg["peers"]:
            rows += [("TRAK", "dattri", f"{k} Gaussian", E, lambda m, d: dattri_method(m, d, k, "trak")),
                     ("TracIn (grad-dot at the E models)", "dattri", f"{k} Gaussian", E,
                      lambda m, d: dattri_method(m, d, k, "tracin"))]
            if E == 1:
                rows.append(("influence function (CG)", "dattri", "none (13,706)", E,
                             lambda m, d: dattri_method(m, d, k, "if-cg")))
        if "captum" in cfg["peers"]:
            rows.append(("TracInCP", "captum", "none (13,706)", E, captum_tracincp))
    return rows


def _warm(fn, models, d) -> None:
    """One small call first (every training point, two test points): imports and first-call compilation are not
    timed."""
    small = dict(d, X_te=d["X_te"][:2], y_te=d["y_te"][:2])
    fn(models[:1], small)


def run(cfg: dict) -> tuple[list, dict]:
    """Every method's LDS, time and memory, one torch thread; facts for the report."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return _run(cfg)
    finally:
        torch.set_num_threads(threads)


def _run(cfg: dict) -> tuple[list, dict]:
    d = task(cfg)
    start = time.perf_counter()
    masks, outputs = ground_truth(d, cfg["subsets"])
    truth_s = time.perf_counter() - start
    models = [train_cnn(d["X_tr"], d["y_tr"], 100 + e, _steps(d, len(d["y_tr"])))
              for e in range(max(cfg["ensembles"]))]
    rows, facts = [], dict(truth_s=truth_s, accuracy=float(np.mean(
        [np.mean(margins(m, d["X_te"], d["y_te"]) > 0) for m in models])))
    for label, library, proj, E, fn in methods(cfg):
        try:
            _warm(fn, models, d)
            scores, seconds, cpu, mb = measured(lambda: fn(models[:E], d))
        except (ValueError, RuntimeError, np.linalg.LinAlgError) as err:         # reported, not hidden
            facts.setdefault("failed", []).append(f"{library} {label} (E = {E}): {type(err).__name__}: {err}")
            rows.append([label, library, proj, E] + [float("nan")] * 5)
            continue
        per = lds(scores, masks, outputs)
        rows.append([label, library, proj, E, float(np.nanmean(per)), float(np.nanstd(per) / np.sqrt(per.size)),
                     seconds, cpu, mb])
        if library == "dattri" and label == "TRAK" and E == 1:
            facts["dattri_lds"] = _dattri_lds(scores, masks, outputs, per)
    return rows, facts


def _dattri_lds(scores, masks, outputs, ours_per) -> float:
    """Largest difference between our LDS per test example and dattri.metric.lds on the same scores."""
    import torch
    from dattri.metric import lds as dattri_lds

    idx = torch.as_tensor(np.array([np.flatnonzero(m) for m in masks]))
    theirs = dattri_lds(torch.as_tensor(scores.T), (torch.as_tensor(outputs), idx))[0].numpy()
    return float(np.nanmax(np.abs(theirs - ours_per)))


# ---------------------------------------------------------------------------------------------- scale
def scale_net(width: int):
    """A CIFAR-sized CNN: two conv-pool blocks (32 and 64 channels), a hidden layer of ``width`` units, 10 outputs
    (``width`` 240: 1.0M parameters; 2,430: 10.0M)."""
    import torch.nn as nn

    return nn.Sequential(nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(32, 64, 3, padding=1),
                         nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(4096, width), nn.ReLU(),
                         nn.Linear(width, 10))


def scale(width: int, n: int, k: int) -> dict:
    """Countsketch-projected Fisher embeddings of ``n`` CIFAR-sized inputs (the digits, cycled, 1,797 at a time):
    parameters, seconds, peak resident-memory growth (MB), and the embeddings' own size (MB)."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    X, y = cifar_sized_task()
    images = X.reshape(-1, 32, 32, 3).transpose(0, 3, 1, 2).astype(np.float32)
    torch.manual_seed(0)
    net = scale_net(width)

    def embed() -> np.ndarray:
        out = np.empty((n, k))
        for s in range(0, n, len(images)):
            idx = np.arange(s, min(n, s + len(images))) % len(images)
            out[s:s + idx.size] = fisher_embedding(net, images[idx], y[idx], projection=k,
                                                   projection_kind="countsketch", seed=0)
        return out

    try:
        emb, seconds, cpu, mb = measured(embed)
    finally:
        torch.set_num_threads(threads)
    return dict(params=sum(p.numel() for p in net.parameters()), n=n, k=k, seconds=seconds, cpu=cpu, mb=mb,
                output_mb=emb.nbytes / 2**20, finite=bool(np.all(np.isfinite(emb))))


# --------------------------------------------------------------------------------------------- report
def _versions() -> str:
    from importlib.metadata import PackageNotFoundError, version

    out = []
    for dist in ("traker", "dattri", "captum", "kronfluence"):
        try:
            out.append(f"{dist} {version(dist)}")
        except PackageNotFoundError:
            out.append(f"{dist} not installed")
    return ", ".join(out)


def _plot(path, rows) -> None:
    """LDS against CPU seconds, one labelled point per method (filled: E = 1, open: larger ensembles)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for r in rows:
        if not np.isfinite(r[4]):
            continue
        color = {"fairshare": "C0", "traker": "C3", "dattri": "C2", "captum": "C1"}[r[1]]
        ax.scatter([max(r[7], 1e-3)], [r[4]], color=color if r[3] == 1 else "white", edgecolors=color, zorder=3)
        ax.annotate(f"{r[1]} {r[0].split(':')[0].split(',')[0].split(' (')[0]}" + (", " + r[0].split(", ")[1]
                    if r[0].count(", ") and not r[0].startswith("ours:") else "") + f" E={r[3]}",
                    (max(r[7], 1e-3), r[4]), fontsize=6, xytext=(4, 2), textcoords="offset points")
    ax.set_xscale("log")
    ax.set_xlabel("CPU seconds to compute the scores")
    ax.set_ylabel("LDS")
    ax.set_title("Linear datamodeling score against time (digits CNN)")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(size: str = "default", seeds: int | None = None, out: str | None = None) -> None:
    cfg = configuration(SIZES, size, seeds, key="subsets")
    start = time.perf_counter()
    rows, facts = run(cfg)
    head = ["method", "library", "projection", "E", "LDS", "± s.e.", "wall s", "CPU s", "peak RSS growth (MB)"]
    best = {E: max((r for r in rows if r[1] == "traker" and r[0] == "TRAK" and r[3] == E), key=lambda r: r[4],
                   default=None) for E in cfg["ensembles"]}
    lines = []
    for E in cfg["ensembles"]:
        ours_row = next(r for r in rows if r[0].startswith("ours:") and r[3] == E)
        if best[E] is not None:
            lines.append(f"- E = {E}: ours {ours_row[4]:.3f} in {ours_row[7]:.1f} CPU s, TRAK (traker) "
                         f"{best[E][4]:.3f} in {best[E][7]:.1f} CPU s: LDS ratio {ours_row[4] / best[E][4]:.2f}, "
                         f"CPU time ratio {ours_row[7] / best[E][7]:.2f}.")
    failed = "".join(f"\n- failed: {f}" for f in facts.get("failed", []))
    check = (f" Our LDS equals `dattri.metric.lds` on the same scores to {facts['dattri_lds']:.1e}."
             if "dattri_lds" in facts else "")
    sections = [
        f"Run with `fairshare bench attribution --size {size}` in {time.perf_counter() - start:.0f} s "
        f"(ground truth: {cfg['subsets']} CNNs on random halves in {facts['truth_s']:.0f} s). "
        f"{cfg['n_train']} training and {cfg['n_test']} test digits, projection k = {cfg['projection']}, "
        f"CNN test accuracy {facts['accuracy']:.3f}. Protocol and choices: `benchmarks/attribution.py`'s "
        f"docstring. Peers: {_versions()}.",
        "## Linear datamodeling score, time and memory\n\n" + table(head, rows) + "\n\n" + "\n".join(lines)
        + "\n\nLDS: mean over test examples (± its standard error); time and memory: computing the scores from the "
        "trained models, one thread (CPU seconds of the process, which the other sessions on this shared machine do "
        "not inflate; wall seconds do grow with them), peak resident-set growth (VmHWM after a reset of "
        "/proc/self/clear_refs)." + check + failed]
    _plot(results_dir("attribution", out) / "lds_time.png", rows)
    if cfg["scale"]:
        got = scale(*cfg["scale"])
        sections.append(
            f"## Scale: Fisher embeddings of {got['params']:,} parameters for {got['n']:,} examples, k = {got['k']}\n\n"
            f"Countsketch projection, one thread: {got['cpu']:.0f} CPU s ({1000 * got['cpu'] / got['n']:.1f} ms "
            f"per example; {got['seconds']:.0f} s wall on the shared machine), peak resident-set growth "
            f"{got['mb']:.0f} MB, of which the embeddings themselves {got['output_mb']:.0f} MB; all finite: "
            f"{got['finite']}.")
    write_report("attribution", "fairshare bench attribution", sections, out)
