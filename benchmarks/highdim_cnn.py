"""The CNN game of ``fairshare bench highdim``: a small CNN on the CIFAR-sized digits, n = 3072 pixel-channels,
all ten class probabilities, masked forward passes on the model's device (torch; a GPU with ``--device cuda``).

Per budget ``m``: wall time per explicand split into model time (masking and forward passes, measured inside
the game) and estimator time (everything else: sampling, deduplication, the solve, standard errors), the
model floor (``m`` masked forward passes alone), and the normalized MSE against a long reference run of the
same estimator. Peers at equal ``m`` on the same machine: shap.KernelExplainer(l1_reg=False) and captum's
KernelShap (one call per class; captum is an optional benchmark dependency).
"""

from __future__ import annotations

import time

import numpy as np

import fairshare as fs

from .common import configuration, table, write_report
from .datasets import cifar_sized_task

SIZES = {"quick": dict(points=1, budgets=(6500,), reference=13000, epochs=1, peers=(), train=400),
         "default": dict(points=3, budgets=(10_000, 100_000), reference=400_000, epochs=4, peers=(10_000,),
                         train=1400),
         "full": dict(points=5, budgets=(10_000, 100_000, 1_000_000), reference=2_000_000, epochs=6,
                      peers=(10_000,), train=1400)}


def train_cnn(images: np.ndarray, labels: np.ndarray, device, epochs: int):
    import torch

    torch.manual_seed(0)
    net = torch.nn.Sequential(
        torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(16, 32, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Flatten(), torch.nn.Linear(32 * 8 * 8, 64), torch.nn.ReLU(), torch.nn.Linear(64, 10),
        torch.nn.Softmax(dim=1)).to(device)
    X = torch.as_tensor(images, dtype=torch.float32, device=device)
    y = torch.as_tensor(labels, device=device)
    opt = torch.optim.Adam(net.parameters(), lr=2e-3)
    for _ in range(epochs):
        order = torch.randperm(X.shape[0], device=device)
        for start in range(0, X.shape[0], 64):
            idx = order[start:start + 64]
            loss = torch.nn.functional.nll_loss(torch.log(net(X[idx]) + 1e-9), y[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
    return net.eval()


def _sync(device) -> None:
    import torch

    if torch.device(device).type == "cuda":
        torch.cuda.synchronize()


def run(cfg: dict, device: str) -> tuple[list, list, list]:
    """Rows of the CNN table, the peers' table and the floor/summary lines."""
    import torch

    X, y = cifar_sized_task()
    images = X.reshape(-1, 32, 32, 3).transpose(0, 3, 1, 2)                 # (N, 3, 32, 32)
    n_train = cfg["train"]
    net = train_cnn(images[:n_train], y[:n_train], device, cfg["epochs"])
    accuracy = float((net(torch.as_tensor(images[1400:], dtype=torch.float32, device=device)).argmax(1).cpu().numpy()
                      == y[1400:]).mean())
    base = torch.as_tensor(images[0], dtype=torch.float32, device=device)
    points = [torch.as_tensor(images[1400 + i], dtype=torch.float32, device=device) for i in range(cfg["points"])]

    def game(x):
        # on a GPU everything stays there; on the CPU numpy's packed iterative solver is the faster path
        return fs.games.TorchGame(net, x, baseline=base, device=device)

    references = [fs.estimate(game(x), "shapley", method="regression", budget=cfg["reference"], seed=10_000 + i).values
                  for i, x in enumerate(points)]
    rows, floor_rows = [], []
    for m in cfg["budgets"]:
        fs.estimate(game(points[0]), "shapley", method="regression", budget=min(m, 6500), seed=99)      # warm-up
        totals, models, errors = [], [], []
        for i, x in enumerate(points):
            g = game(x)
            _sync(device)
            start = time.perf_counter()
            phi = fs.estimate(g, "shapley", method="regression", budget=m, seed=i)
            _sync(device)
            totals.append(time.perf_counter() - start)
            models.append(g.seconds)
            errors.append(fs.metrics.relative_squared_error(phi.values, references[i]))
        # the floor: m masked forward passes alone (random coalitions drawn on the device)
        g = game(points[0])
        S = torch.rand((m, g.n_players), device=device) < 0.5
        _sync(device)
        start = time.perf_counter()
        g(S)
        _sync(device)
        floor = time.perf_counter() - start
        total, model = float(np.mean(totals)), float(np.mean(models))
        rows.append([m, total, model, total - model, floor, total / floor, float(np.median(errors))])
        floor_rows.append((m, total, floor))
    peer_rows = []
    for m in cfg["peers"]:
        for name, fn in (("fairshare regression", lambda x, i: fs.estimate(game(x), "shapley", method="regression",
                                                                          budget=m, seed=i).values),
                         ("shap KernelExplainer (l1_reg=False)", lambda x, i: _shap(net, x, base, m, i, device)),
                         ("captum KernelShap (one call per class)", lambda x, i: _captum(net, x, base, m, i))):
            times, errs = [], []
            for i, x in enumerate(points):
                try:
                    _sync(device)
                    start = time.perf_counter()
                    values = fn(x, i)
                    _sync(device)
                    times.append(time.perf_counter() - start)
                    errs.append(fs.metrics.relative_squared_error(np.asarray(values, dtype=float), references[i]))
                except ImportError as exc:
                    times, errs = [float("nan")], [float("nan")]
                    name = f"{name} (not installed: {exc.name})"
                    break
            peer_rows.append([m, name, float(np.mean(times)), float(np.median(errs))])
    ours = {r[0]: r for r in peer_rows if r[1] == "fairshare regression"}
    for r in peer_rows:
        r.append(r[2] / ours[r[0]][2] if np.isfinite(r[2]) else float("nan"))
        r.append(r[3] / ours[r[0]][3] if np.isfinite(r[3]) else float("nan"))
    return rows, peer_rows, [f"CNN test accuracy {accuracy:.3f}; reference runs: m = {cfg['reference']}."]


def _shap(net, x, base, m: int, seed: int, device) -> np.ndarray:
    import shap
    import torch

    shape = tuple(x.shape)

    def f(Z):
        with torch.inference_mode():
            batch = torch.as_tensor(Z, dtype=torch.float32, device=device).reshape((-1,) + shape)
            return net(batch).cpu().numpy()

    np.random.seed(seed)
    explainer = shap.KernelExplainer(f, base.reshape(1, -1).cpu().numpy())
    values = explainer.shap_values(x.reshape(1, -1).cpu().numpy(), nsamples=m, l1_reg=False, silent=True)
    values = np.asarray(values)
    return values[0] if values.ndim == 3 and values.shape[0] == 1 else np.moveaxis(values[:, 0], 0, -1)


def _captum(net, x, base, m: int, seed: int) -> np.ndarray:
    import torch
    from captum.attr import KernelShap

    torch.manual_seed(seed)
    explainer = KernelShap(net)
    out = []
    for c in range(10):
        attr = explainer.attribute(x[None], baselines=base[None], target=c, n_samples=m,
                                   perturbations_per_eval=min(m, 2048))
        out.append(attr.reshape(-1).detach().cpu().numpy())
    return np.stack(out, axis=1)


def sections(size: str, device: str, cfg: dict | None = None) -> list[str]:
    """The CNN game (benchmarks/highdim_cnn.py): model and estimator time, the model floor, peers."""
    try:
        import torch  # noqa: F401
    except ImportError:
        return ["## CNN game\n\nleft out: torch is not installed (extra `torch`)."]
    cfg = cfg or SIZES[size]
    rows, peers, notes = run(cfg, "cuda" if device == "cuda" else "cpu")
    import platform

    machine = f"{platform.processor() or platform.machine()}"
    if device == "cuda":
        import torch

        machine = torch.cuda.get_device_name(0)
    return [
        f"## CNN game on {device} ({machine})\n\nA small CNN (two conv layers) trained on the CIFAR-sized digits, "
        "n = 3072 pixel-channels, all ten class probabilities, the first training image as the baseline; "
        "`fs.games.TorchGame` keeps coalitions, masked inputs, model calls, the solve and the standard errors on the "
        "device. Model time is measured inside the game (masking and forward passes); the floor is m masked forward "
        "passes alone; NMSE is against a long reference run. " + " ".join(notes) + "\n\n" + table(
            ["m", "total s / explicand", "model s", "estimator s", "model floor s", "total / floor",
             "median NMSE vs reference"], rows),
        "## CNN game: peers at equal m (same machine)\n\n" + table(
            ["m", "method", "s / explicand", "median NMSE vs reference", "time / fairshare", "NMSE / fairshare"],
            peers),
    ]


def main(size: str = "default", seeds: int | None = None, out: str | None = None, device: str = "cpu") -> None:
    """Only the CNN game (``fairshare bench highdim`` includes it after the random-forest tasks)."""

    cfg = configuration(SIZES, size, seeds, key="points")
    write_report("highdim_cnn", "fairshare bench highdim_cnn", sections(size, device, cfg), out)
