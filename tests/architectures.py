"""Small networks of the architectures deep-model explainers break on (issue 37), built with random weights and no
downloads: residual blocks that reuse one ReLU module, BatchNorm, max pooling, attention with LayerNorm and GELU, LSTM
and GRU, ResNet-18 and a small vision transformer.

torchvision is not used: PyPI's torchvision 0.28.0 is built against a CUDA torch and fails to import beside the
pinned CPU torch 2.13.0 ("operator torchvision::nms does not exist"), so ResNet-18 (He et al. 2016: basic blocks
[2, 2, 2, 2], widths 64-512) and the ViT (Dosovitskiy et al. 2021: patch embedding, class token, pre-norm blocks) are
written here.
"""

from __future__ import annotations

import torch
from torch import nn


class Basic(nn.Module):
    """ResNet's basic block: two 3x3 convolutions with BatchNorm, ONE ReLU module applied twice, a shortcut."""

    def __init__(self, cin: int, cout: int, stride: int = 1) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU()
        self.down = None if stride == 1 and cin == cout else nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                                                           nn.BatchNorm2d(cout))

    def forward(self, x):
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + (x if self.down is None else self.down(x)))


class ResNet18(nn.Module):
    """ResNet-18: a 7x7 stem, max pooling, four stages of two basic blocks (64, 128, 256, 512), global pooling."""

    def __init__(self, classes: int = 10, channels: int = 3) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(channels, 64, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU()
        self.pool = nn.MaxPool2d(3, 2, 1)
        widths, stages, cin = (64, 128, 256, 512), [], 64
        for i, w in enumerate(widths):
            stages += [Basic(cin, w, 1 if i == 0 else 2), Basic(w, w)]
            cin = w
        self.layers = nn.Sequential(*stages)
        self.fc = nn.Linear(512, classes)

    def forward(self, x):
        x = self.pool(self.relu(self.bn1(self.conv1(x))))
        return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(self.layers(x), 1), 1))


class SmallResidual(nn.Module):
    """A small residual CNN: one ReLU module reused in every block, BatchNorm, max pooling."""

    def __init__(self, classes: int = 4) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, padding=1)
        self.blocks = nn.ModuleList([nn.Sequential(nn.Conv2d(8, 8, 3, padding=1), nn.BatchNorm2d(8)) for _ in range(2)])
        self.relu = nn.ReLU()
        self.pool = nn.MaxPool2d(2)
        self.head = nn.Linear(8 * 4 * 4, classes)

    def forward(self, x):
        x = self.pool(self.relu(self.stem(x)))
        for block in self.blocks:
            x = self.relu(x + block(x))
        return self.head(self.pool(x).flatten(1))


class Block(nn.Module):
    """A pre-norm transformer block: LayerNorm, multi-head attention, LayerNorm, a GELU MLP, residuals."""

    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.attention = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.mlp = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))

    def forward(self, x):
        h = self.norm1(x)
        x = x + self.attention(h, h, h, need_weights=False)[0]
        return x + self.mlp(self.norm2(x))


class ViT(nn.Module):
    """A small vision transformer: patch embedding (a strided convolution), class token, learned positions,
    pre-norm attention blocks, the class token's LayerNorm into a linear head."""

    def __init__(self, image: int = 16, patch: int = 4, dim: int = 32, depth: int = 2, heads: int = 4,
                 classes: int = 4, channels: int = 3) -> None:
        super().__init__()
        self.embed = nn.Conv2d(channels, dim, patch, patch)
        self.cls = nn.Parameter(torch.randn(1, 1, dim) * 0.02)
        self.position = nn.Parameter(torch.randn(1, (image // patch) ** 2 + 1, dim) * 0.02)
        self.blocks = nn.Sequential(*[Block(dim, heads) for _ in range(depth)])
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, classes)

    def forward(self, x):
        tokens = self.embed(x).flatten(2).transpose(1, 2)
        tokens = torch.cat([self.cls.expand(x.shape[0], -1, -1), tokens], dim=1) + self.position
        return self.head(self.norm(self.blocks(tokens)[:, 0]))


class Recurrent(nn.Module):
    """An LSTM or GRU over sequences (N, T, F), its last state into a linear head."""

    def __init__(self, cell: str = "lstm", features: int = 3, hidden: int = 8, outputs: int = 2) -> None:
        super().__init__()
        self.rnn = (nn.LSTM if cell == "lstm" else nn.GRU)(features, hidden, batch_first=True)
        self.head = nn.Linear(hidden, outputs)

    def forward(self, x):
        return self.head(self.rnn(x)[0][:, -1])


def built(name: str, seed: int = 0) -> nn.Module:
    """The network ``name`` with seeded random weights, in eval mode (BatchNorm's running statistics made
    non-trivial by a few batches in train mode first)."""
    torch.manual_seed(seed)
    net = {"residual": SmallResidual, "resnet18": ResNet18, "vit": ViT, "lstm": lambda: Recurrent("lstm"),
           "gru": lambda: Recurrent("gru")}[name]()
    if any(isinstance(m, nn.BatchNorm2d) for m in net.modules()):
        with torch.no_grad():
            for _ in range(3):
                net(torch.rand(8, 3, 16, 16) * 2)
    return net.eval()
