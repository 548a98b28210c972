"""One device check (not part of the project): beta and weighted Banzhaf values under product measures on a CUDA
torch game, the tensor path against the host path, exactness at a full budget, and seconds per estimate."""
import sys, time
import numpy as np
import torch
sys.path.insert(0, "src")
import fairshare as fs

dev = torch.device("cuda")
print(torch.__version__, torch.cuda.get_device_name(0), flush=True)
torch.manual_seed(0)
net = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(2),
                          torch.nn.Flatten(), torch.nn.Linear(16, 3)).eval()
x = torch.rand(3, 6, 6)
groups = np.repeat(np.arange(12), 9).reshape(3, 6, 6)
for sv in (fs.Semivalue.beta_shapley(4, 1), fs.Semivalue.weighted_banzhaf(0.3)):
    truth = fs.exact(fs.games.TorchGame(net, x, groups=groups), sv).values
    for method in ("semivalue-regression", "surrogate-regression"):
        gpu = fs.estimate(fs.games.TorchGame(net.to(dev), x.to(dev), groups=groups, on_device=True), sv,
                          method=method, budget=600, seed=0)
        host = fs.estimate(fs.games.TorchGame(net.cpu(), x.cpu(), groups=groups), sv, method=method, budget=600,
                           seed=0)
        full = fs.estimate(fs.games.TorchGame(net.to(dev), x.to(dev), groups=groups, on_device=True), sv,
                           method=method, budget=4096, seed=0)
        print(sv.name, method, gpu.info.get("solver"), "gpu-host max", float(np.abs(gpu.values - host.values).max()),
              "full-exact max", float(np.abs(full.values - truth).max()),
              "err", float(((gpu.values - truth) ** 2).sum() / (truth ** 2).sum()), flush=True)
# seconds: a 64-patch CNN game (3 x 32 x 32 image, 4 x 4 patches), beta(4, 1) and weighted Banzhaf at 10n / 30n
torch.manual_seed(1)
big = torch.nn.Sequential(torch.nn.Conv2d(3, 32, 3, padding=1), torch.nn.ReLU(), torch.nn.Conv2d(32, 32, 3, padding=1),
                          torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(4), torch.nn.Flatten(),
                          torch.nn.Linear(512, 10)).eval()
img = torch.rand(3, 32, 32)
cell = np.arange(32 * 32).reshape(32, 32)
patch = np.broadcast_to(((cell // 32) // 4) * 8 + (cell % 32) // 4, (3, 32, 32))
for sv in (fs.Semivalue.beta_shapley(4, 1), fs.Semivalue.weighted_banzhaf(0.3)):
    for mult in (10, 30):
        for where in ("cuda", "cpu"):
            m = big.to(where)
            g = fs.games.TorchGame(m, img.to(where), groups=patch, outputs=0, on_device=(where == "cuda"))
            fs.estimate(g, sv, budget=mult * 64, seed=0)                       # warm-up
            t = time.perf_counter()
            e = fs.estimate(fs.games.TorchGame(m, img.to(where), groups=patch, outputs=0,
                                               on_device=(where == "cuda")), sv, budget=mult * 64, seed=1)
            print(sv.name, f"{mult}n", where, e.method, f"{time.perf_counter() - t:.3f} s", flush=True)
