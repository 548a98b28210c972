"""fairshare bench deep: image games of deep models, every library on the same game, side by side (issue 37).

The game of an explicand: a network, one image, its Gaussian blur as the baseline, square patches as the players,
v(S) = the predicted class's output with the patches of S kept and the others blurred. Every library gets that game
at the same number of model evaluations m (captum's ShapleyValueSampling: m // n permutations; IntegratedGradients
and GradientShap: m points, each a forward and a backward pass):

- fairshare: the image door's default (``fs.explain``, ``method="auto"``) and plain regression;
- captum: ShapleyValueSampling, KernelShap (patches as its feature mask), IntegratedGradients (pixels summed over
  each patch; midpoint rule: its default Gauss-Legendre nodes cost an m x m eigenvalue problem, minutes per call at
  m = 8192), GradientShap (its one baseline, the blur; no noise);
- shap: the Permutation explainer and the Partition explainer (Owen values of a spatial hierarchy of the patches) on
  the patch game (a function of 0/1 patch masks), where they run.

Error: the normalized squared error ``||phi - ref||^2 / ||ref||^2`` against an independent reference (exact values
by enumeration at 16 patches, else fairshare's antithetic permutation sampling at 30x the largest budget), median
over explicands. Time: seconds per explicand and as a multiple of the model floor, m forward passes alone (composed
images, the game's batch size), and as a multiple of its own forward passes (the time the network took inside the
run: on a shared machine this ratio is steadier). Model rows: what each library actually sent to the network.

Sizes: a CPU size (a small CNN trained on the CIFAR-sized digits, 32 x 32, 16 and 64 patches) and a GPU size
(ResNet-50, random weights, 224 x 224, 196 patches of 16 x 16, blur baseline, m = 1k / 4k / 16k) with
``--device cuda`` (which also times fairshare on the small CNN up to m = 1e5). ``--size quick`` runs a tiny CNN and
the GPU size reduced (a ResNet-50 of width 8 on 24 x 24 images, 9 patches) on the CPU, in under a minute.
"""

from __future__ import annotations

import os
import time
import warnings

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")     # idle OpenMP workers (numba, torch) must not spin

import numpy as np  # noqa: E402

import fairshare as fs  # noqa: E402

from .common import configuration, plot_lines, results_dir, table, write_report  # noqa: E402

CPU_GAMES = {"quick": [dict(net="tiny", image=16, patch=4, budgets=(256,), points=1, train=0)],
             "default": [dict(net="digits", image=32, patch=8, budgets=(256, 1024, 4096), points=3, train=1400),
                         dict(net="digits", image=32, patch=4, budgets=(512, 2048, 8192), points=3, train=1400)],
             "full": [dict(net="digits", image=32, patch=8, budgets=(256, 1024, 4096, 16384), points=8, train=1400),
                      dict(net="digits", image=32, patch=4, budgets=(512, 2048, 8192, 32768), points=8,
                           train=1400)]}
GPU_GAME = {"quick": dict(net="resnet50", width=8, image=24, patch=8, budgets=(128,), points=1),
            "default": dict(net="resnet50", width=64, image=224, patch=16, budgets=(1000, 4000, 16000), points=2),
            "full": dict(net="resnet50", width=64, image=224, patch=16, budgets=(1000, 4000, 16000), points=5)}
SIZES = {k: dict(cpu=CPU_GAMES[k], gpu=GPU_GAME[k], seeds=1) for k in CPU_GAMES}
REFERENCE_FACTOR = 30           # the permutation reference's evaluations: 30x the largest budget
LARGE = (100_000,)              # --device cuda: fairshare alone on the small CNN at these budgets (the 1e5 target)


# ------------------------------------------------------------------------------------------------ networks
def resnet50(width: int = 64, classes: int = 1000):
    """ResNet-50 (He et al. 2016): bottleneck blocks [3, 4, 6, 3], widths ``width`` x (1, 2, 4, 8), expansion 4."""
    from torch import nn

    class Bottleneck(nn.Module):
        def __init__(self, cin: int, mid: int, stride: int) -> None:
            super().__init__()
            cout = 4 * mid
            self.body = nn.Sequential(nn.Conv2d(cin, mid, 1, bias=False), nn.BatchNorm2d(mid), nn.ReLU(),
                                      nn.Conv2d(mid, mid, 3, stride, 1, bias=False), nn.BatchNorm2d(mid), nn.ReLU(),
                                      nn.Conv2d(mid, cout, 1, bias=False), nn.BatchNorm2d(cout))
            self.down = None if stride == 1 and cin == cout else nn.Sequential(
                nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
            self.relu = nn.ReLU()

        def forward(self, x):
            return self.relu(self.body(x) + (x if self.down is None else self.down(x)))

    layers = [nn.Conv2d(3, width, 7, 2, 3, bias=False), nn.BatchNorm2d(width), nn.ReLU(), nn.MaxPool2d(3, 2, 1)]
    cin = width
    for stage, blocks in enumerate((3, 4, 6, 3)):
        for b in range(blocks):
            layers.append(Bottleneck(cin, width * 2 ** stage, 2 if b == 0 and stage > 0 else 1))
            cin = 4 * width * 2 ** stage
    return nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(cin, classes))


def network(cfg: dict, device: str):
    """The game's network (eval mode) and its explicands ``(points, 3, H, W)``."""
    import torch

    torch.manual_seed(0)
    if cfg["net"] == "digits":
        from .datasets import cifar_sized_task
        from .highdim_cnn import train_cnn

        X, y = cifar_sized_task()
        images = X.reshape(-1, 32, 32, 3).transpose(0, 3, 1, 2).astype(np.float32)
        net = train_cnn(images[:cfg["train"]], y[:cfg["train"]], device, epochs=4)
        return net.eval(), torch.as_tensor(images[1400:1400 + cfg["points"]], device=device)
    if cfg["net"] == "tiny":
        net = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
                                  torch.nn.Flatten(), torch.nn.Linear(8 * (cfg["image"] // 2) ** 2, 10))
    else:
        net = resnet50(cfg["width"])
    images = torch.rand(cfg["points"], 3, cfg["image"], cfg["image"], generator=torch.Generator().manual_seed(1))
    return net.to(device).eval(), images.to(device)


class Counted:
    """A network that counts the rows it is given (every library's model calls, measured the same way)."""

    def __init__(self, net) -> None:
        import torch

        class Wrapped(torch.nn.Module):
            def __init__(self, inner) -> None:
                super().__init__()
                self.inner, self.rows, self.seconds = inner, 0, 0.0

            def forward(self, x):
                if x.device.type == "meta":              # fairshare's count of the network's work: no model call
                    return self.inner(x)
                self.rows += int(x.shape[0])
                _sync(x.device.type)
                start = time.perf_counter()
                out = self.inner(x)
                _sync(x.device.type)
                self.seconds += time.perf_counter() - start
                return out

        self.module = Wrapped(net).eval()


# ------------------------------------------------------------------------------------------------ the game
class Explicand:
    """One explicand's game: the image, its blur, the patch labels, the class, composed images on the device."""

    def __init__(self, net, x, patch: int, device: str) -> None:
        import torch

        from fairshare.inputs.image_parts import blurred

        self.net, self.x, self.device = net, x, device
        h = x.shape[-1]
        self.base = blurred(x[None], max(1.0, h / 16))[0]
        grid = h // patch
        self.labels = (np.arange(h)[:, None] // patch) * grid + np.arange(h)[None, :] // patch
        self.n = grid * grid
        self.owner = torch.as_tensor(self.labels.reshape(-1), device=device)
        with torch.inference_mode():
            self.target = int(net(x[None]).argmax())
        self.batch = fs.games.TorchGame(net, x).row_batch

    def game(self):
        return fs.games.TorchGame(self.net, self.x, baseline=self.base, outputs=self.target,
                                  groups=np.broadcast_to(self.labels, tuple(self.x.shape)))

    def patch_function(self, module):
        """``f(Z)`` of 0/1 patch masks ``(m, n)`` (shap's view of the game), batched as the game batches."""
        import torch

        def f(Z):
            outs = []
            with torch.inference_mode():
                for lo in range(0, len(Z), self.batch):
                    keep = torch.as_tensor(np.asarray(Z[lo:lo + self.batch]) > 0.5, device=self.device)
                    images = self.compose(keep)
                    outs.append(module(images)[:, self.target].double().cpu().numpy())
            return np.concatenate(outs)

        return f

    def compose(self, keep):
        """Images ``(c, C, H, W)`` of coalitions ``keep`` (boolean ``(c, n)``): as the game composes them (one
        channel's mask gathered as bytes, broadcast over the channels)."""
        import torch

        mask = torch.index_select(keep.to(torch.uint8), 1, self.owner).view(-1, 1, *self.x.shape[1:])
        return torch.where(mask.view(torch.bool), self.x, self.base)

    def floor(self, m: int) -> float:
        """Seconds of ``m`` forward passes alone: a batch of composed images timed (best of 3), scaled."""
        import torch

        b = min(self.batch, m)
        images = self.compose(torch.rand((b, self.n), device=self.device) < 0.5)
        best = float("inf")
        with torch.inference_mode():
            for _ in range(3):
                _sync(self.device)
                start = time.perf_counter()
                self.net(images)
                _sync(self.device)
                best = min(best, time.perf_counter() - start)
        return best * m / b

    def per_patch(self, pixels) -> np.ndarray:
        """Pixel attributions ``(C, H, W)`` summed over each patch."""
        a = np.asarray(pixels.detach().double().cpu().numpy()).sum(axis=0).reshape(-1)
        return np.bincount(self.labels.reshape(-1), weights=a, minlength=self.n)

    def one_per_patch(self, broadcast) -> np.ndarray:
        """A feature-mask attribution ``(C, H, W)`` (each patch's value on its every pixel): one value per patch."""
        a = broadcast.detach().double().cpu().numpy()[0].reshape(-1)
        first = np.unique(self.labels.reshape(-1), return_index=True)[1]
        return a[first]


def _sync(device: str) -> None:
    import torch

    if str(device).startswith("cuda"):
        torch.cuda.synchronize()


def reference(e: Explicand, budgets: tuple) -> tuple[np.ndarray, str]:
    """Exact values at 16 patches; else antithetic permutation sampling at 30x the largest budget."""
    if e.n <= 16:
        return fs.exact(e.game(), "shapley").values, f"exact (all 2^{e.n} coalitions)"
    m = REFERENCE_FACTOR * max(budgets)
    phi = fs.estimate(e.game(), "shapley", method="permutation", antithetic=True, budget=m, seed=123_456)
    rel = float(np.sum(phi.stderr ** 2) / np.sum(phi.values ** 2))
    return phi.values, f"antithetic permutations, {m} evaluations (its estimated NMSE {rel:.2g})"


# ------------------------------------------------------------------------------------------------ the libraries
def _ours(method: str):
    def run(e: Explicand, module, m: int, seed: int) -> np.ndarray:
        res = fs.explain(module, e.x[None], groups=e.labels, baseline=e.base, output=e.target, budget=m, seed=seed,
                         method=method, progress=False)
        return res.values[0]
    return run


def _captum_sampling(kind: str):
    def run(e: Explicand, module, m: int, seed: int) -> np.ndarray:
        import torch
        from captum.attr import KernelShap, ShapleyValueSampling

        torch.manual_seed(seed)
        mask = torch.as_tensor(e.labels, device=e.device)[None, None]
        if kind == "svs":                                  # one baseline call, then n per permutation
            a = ShapleyValueSampling(module).attribute(e.x[None], baselines=e.base[None], target=e.target,
                                                       feature_mask=mask, n_samples=max(1, (m - 1) // e.n),
                                                       perturbations_per_eval=min(e.batch, e.n))
        else:
            a = KernelShap(module).attribute(e.x[None], baselines=e.base[None], target=e.target, feature_mask=mask,
                                             n_samples=m, perturbations_per_eval=min(e.batch, m))
        return e.one_per_patch(a)
    return run


def _captum_gradients(kind: str):
    def run(e: Explicand, module, m: int, seed: int) -> np.ndarray:
        import torch
        from captum.attr import GradientShap, IntegratedGradients

        torch.manual_seed(seed)
        chunk = max(1, e.batch // 4)                         # a backward pass holds the activations
        if kind == "ig":                 # midpoints: its default Gauss-Legendre nodes solve an m x m eigenproblem
            a = IntegratedGradients(module).attribute(e.x[None], baselines=e.base[None], target=e.target, n_steps=m,
                                                      internal_batch_size=chunk, method="riemann_middle")
            return e.per_patch(a[0])
        total, left = 0.0, m                                 # GradientShap repeats the input n_samples times at once
        while left > 0:
            k = min(chunk, left)
            a = GradientShap(module).attribute(e.x[None], baselines=e.base[None], n_samples=k, stdevs=0.0,
                                               target=e.target)
            total, left = total + k * e.per_patch(a[0]), left - k
        return total / m
    return run


def _shap(kind: str):
    def run(e: Explicand, module, m: int, seed: int) -> np.ndarray:
        import shap

        np.random.seed(seed)
        f = e.patch_function(module)
        if kind == "permutation":
            explainer = shap.PermutationExplainer(f, shap.maskers.Independent(np.zeros((1, e.n))), seed=seed)
        else:                                              # Owen values of a spatial hierarchy of the patches
            from scipy.cluster.hierarchy import linkage

            grid = int(round(np.sqrt(e.n)))
            coords = np.stack(np.divmod(np.arange(e.n), grid), axis=1).astype(float)
            coords += 1e-6 * np.arange(e.n)[:, None]         # no ties: one hierarchy whatever the platform
            masker = shap.maskers.Partition(np.zeros((1, e.n)), clustering=linkage(coords, "ward"))
            explainer = shap.PartitionExplainer(f, masker)
        return np.asarray(explainer(np.ones((1, e.n)), max_evals=m, batch_size=e.batch, silent=True).values[0])
    return run


RUNNERS = {"fairshare default (auto)": _ours("auto"), "fairshare regression": _ours("regression"),
           "captum ShapleyValueSampling": _captum_sampling("svs"), "captum KernelShap": _captum_sampling("kernel"),
           "shap Permutation": _shap("permutation"), "shap Partition (Owen values)": _shap("partition"),
           "captum IntegratedGradients": _captum_gradients("ig"), "captum GradientShap": _captum_gradients("gs")}


# ------------------------------------------------------------------------------------------------ the runs
def _measure(fn, exps: list, refs: list, counted, m: int) -> tuple[list, list, list, list, list]:
    errors, seconds, ratios, rows, own = [], [], [], [], []
    for i, e in enumerate(exps):
        counted.rows, counted.seconds = 0, 0.0
        _sync(e.device)
        start = time.perf_counter()
        values = fn(e, counted, m, i)
        _sync(e.device)
        seconds.append(time.perf_counter() - start)
        ratios.append(seconds[-1] / e.floor(m))
        errors.append(fs.metrics.relative_squared_error(np.asarray(values, dtype=float), refs[i]))
        rows.append(counted.rows)
        own.append(seconds[-1] / max(counted.seconds, 1e-9))
    return errors, seconds, ratios, rows, own


def run_game(cfg: dict, device: str, large: tuple = ()) -> tuple[list, dict, str]:
    """Table rows (m, library, model rows, s / explicand, time / floor, median NMSE, NMSE / ours), error curves and
    the game's description (the libraries of ``_PART["libraries"]``; peers at budgets up to
    ``_PART["peer_budget"]``)."""
    net, images = network(cfg, device)
    counted = Counted(net).module
    exps = [Explicand(net, x, cfg["patch"], device) for x in images]
    start = time.perf_counter()
    refs, how = zip(*[reference(e, cfg["budgets"]) for e in exps])
    print(f"   reference: {how[0]}, {(time.perf_counter() - start) / len(exps):.1f} s per explicand", flush=True)
    rows, curves = [], {}
    for name, fn in RUNNERS.items():
        if _PART["libraries"] is not None and not any(name.startswith(lib) for lib in _PART["libraries"]):
            continue
        try:
            fn(exps[0], counted, min(cfg["budgets"]), 99)                 # untimed: imports and first calls
        except Exception as exc:  # noqa: BLE001 - a peer that does not run on this game is reported, not fatal
            rows.append(["-", name, "-", float("nan"), float("nan"), float("nan"), float("nan"),
                         f"does not run: {exc}"[:90]])
            continue
        ours = name.startswith("fairshare")
        for m in [b for b in cfg["budgets"] if ours or b <= _PART["peer_budget"]] + list(large if ours else ()):
            errors, seconds, ratios, used, own = _measure(fn, exps, refs, counted, m)
            rows.append([m, name, int(np.median(used)), float(np.mean(seconds)), float(np.median(ratios)),
                         float(np.median(own)), float(np.median(errors)), ""])
            curves.setdefault(name, ([], []))
            curves[name][0].append(m)
            curves[name][1].append(float(np.median(errors)))
            print(f"   {cfg['net']} n={exps[0].n} {name} @ {m}: NMSE {rows[-1][6]:.3g}, {rows[-1][4]:.2f}x floor, "
                  f"{rows[-1][5]:.2f}x own forward passes", flush=True)
    ours = {r[0]: r[6] for r in rows if r[1] == "fairshare default (auto)"}
    for r in rows:
        r[7] = r[7] or (r[6] / ours[r[0]] if r[0] in ours and ours[r[0]] > 0 else float("nan"))
    size = f"{images.shape[-1]} x {images.shape[-1]}"
    what = {"digits": "a small CNN (two conv layers) trained on the CIFAR-sized digits",
            "tiny": "a tiny CNN (one conv layer, random weights)",
            "resnet50": f"ResNet-50 (bottleneck blocks [3, 4, 6, 3], width {cfg.get('width')}, random weights)"}
    return rows, curves, (f"{what[cfg['net']]}, {size} images, {exps[0].n} patches of {cfg['patch']} x "
                          f"{cfg['patch']} pixels, blur baseline (sigma {max(1.0, images.shape[-1] / 16):g}), the "
                          f"predicted class's output, {len(exps)} explicands; reference: {how[0]}")


def _machine(device: str) -> str:
    import platform

    import torch

    if device == "cuda":
        return torch.cuda.get_device_name(0)
    return f"{platform.processor() or platform.machine()}, {torch.get_num_threads()} torch threads"


def sections(size: str, device: str, cfg: dict) -> list[str]:
    """One section per game: its table and its error curves (a PNG)."""
    games = [(g, device) for g in cfg["cpu"]] if _PART["cpu_games"] else []
    if device == "cuda":                      # the GPU size first: its figures are what a lent device is for
        games.insert(0, (cfg["gpu"], device))
    elif size == "quick":
        games.append((cfg["gpu"], device))
    out = []
    headers = ["m", "library", "model rows", "s / explicand", "time / floor", "time / own forward passes",
               "median NMSE vs reference",
               "NMSE / fairshare default"]
    for k, (game, dev) in enumerate(games):
        print(f"== game {k + 1}: {game['net']}, patches of {game['patch']}", flush=True)
        rows, curves, about = run_game(game, dev, LARGE if dev == "cuda" and game["net"] != "resnet50" else ())
        plot_lines(results_dir("deep", _OUT[0]) / f"error_{k + 1}_{game['net']}_{game['patch']}.png",
                   f"{game['net']}, patches of {game['patch']}", "model evaluations m", "median NMSE vs reference",
                   curves)
        out.append(f"## Game {k + 1} on {dev} ({_machine(dev)})\n\n{about}.\n\n" + table(headers, rows))
        write_report("deep", "fairshare bench deep", out, _OUT[0], quiet=True)   # kept as it goes: a run cut short
    if device != "cuda" and size != "quick":
        out.append("## GPU size\n\nResNet-50 on 224 x 224 images (196 patches, m = 1k / 4k / 16k): "
                   "`fairshare bench deep --device cuda` (not run here: no GPU).")
    return out


_OUT: list = [None]
_PART: dict = {"libraries": None, "peer_budget": float("inf"), "cpu_games": True}


def main(size: str = "default", seeds: int | None = None, out: str | None = None, device: str = "cpu",
         libraries: tuple[str, ...] | None = None, peer_budget: float = float("inf"), cpu_games: bool = True) -> None:
    """Run the benchmark; a part of it (a rerun on a lent device's few minutes) with ``libraries`` (the rows whose
    names start with one of these), ``peer_budget`` (the peers at budgets up to it) and ``cpu_games=False`` (with
    ``device="cuda"``: the GPU size alone)."""
    _PART.update(libraries=libraries, peer_budget=peer_budget, cpu_games=cpu_games)
    cfg = configuration(SIZES, size, None)
    if seeds:
        cfg["cpu"] = [dict(g, points=seeds) for g in cfg["cpu"]]
        cfg["gpu"] = dict(cfg["gpu"], points=seeds)
    _OUT[0] = out
    warnings.simplefilter("ignore")
    try:
        import captum  # noqa: F401
        import torch  # noqa: F401
    except ImportError as exc:
        write_report("deep", "fairshare bench deep", [f"left out: {exc.name} is not installed (extra `bench`)."], out)
        return
    notes = ("Time / floor: seconds per explicand over m forward passes of composed images alone (the game's batch "
             "size); gradient methods also run a backward pass per point. Time / own forward passes: the same seconds "
             "over the time the network's forward passes took inside that run (measured under the same load; a "
             "backward pass counts on the other side). OpenMP workers wait passively "
             f"(OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY')}).")
    write_report("deep", "fairshare bench deep", [notes] + sections(size, device, cfg), out)
