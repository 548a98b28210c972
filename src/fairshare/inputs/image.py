"""Images for a torch module: ``fs.explain(model, images, groups="patches", baseline="blur", output="top")``.

The images ``(N, C, H, W)`` (a tensor, an array, a list of equal-sized images; ``layout="NHWC"`` for channels
last), their players (``groups``: patches of ``patch_size``, SLIC superpixels of each image, integer labels of
pixels shared or per image, labels of every element, or every element), the baseline (``"blur"``, ``"mean"``, a
number, one image, a background batch averaged over) and the outputs (an index, a list, ``"top"``: each image's
predicted class) are all checked before any model call (:mod:`.image_parts`). Each image is one
:class:`~fairshare.games.TorchGame` on the model's device: masked images composed there, a batch of coalitions in
one tensor operation, the model in eval mode during the run (each submodule's mode restored after; a warning when
it was training). The values come back one per player (padded with zeros, null players, where images have fewer
superpixels than others); ``e.input_values()`` puts them on the pixels ``(N, H, W[, k])`` and ``e.plot("image")``
draws them over the image.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._core.arrays import to_numpy
from ..engine.choice import choose
from ..games.base import Game
from ..games.torch_game import TorchGame, module_input
from ..games.torch_modes import warn_training
from ..indices.hierarchy import resolve_value_index
from .base import Plan, default_budget
from .cells import check_finite_inputs
from .image_parts import check_channels, check_output, image_baseline, image_players, read_images
from .torch import TorchInput, is_torch_module

__all__ = ["ImageInput", "IMAGE_ARGUMENTS"]

#: explain's arguments that only images take
IMAGE_ARGUMENTS = ("layout", "baseline", "output", "patch_size", "sigma", "slic")


class ImageInput(TorchInput):
    """Images ``(N, C, H, W)`` for a torch module, each explained by a TorchGame over its players.

    Examples
    --------
    >>> import torch, fairshare as fs
    >>> net = torch.nn.Sequential(torch.nn.Conv2d(3, 2, 3), torch.nn.Flatten(), torch.nn.Linear(72, 4)).eval()
    >>> e = fs.explain(net, torch.rand(2, 3, 8, 8), groups="patches", patch_size=4, baseline="blur", output="top",
    ...                progress=False, seed=0)
    >>> e.values.shape, e.input_values().shape, e.method
    ((2, 4), (2, 8, 8), 'exact')
    """

    kind = "images"
    noun = "image"

    @classmethod
    def accepts(cls, model: Any, X: Any, background: Any) -> bool:
        """A torch module and images: an array or tensor of four dimensions, or a list of images (C, H, W)."""
        if not is_torch_module(model):
            return False
        if isinstance(X, (list, tuple)):
            return bool(X) and all(len(getattr(x, "shape", ())) == 3 for x in X)
        return len(getattr(X, "shape", ())) == 4

    def __init__(self, model: Any, X: Any, background: Any, args: dict) -> None:
        layout = args.get("layout")
        hwc = not hasattr(X, "detach") and layout is None
        self.model, self.X = model, read_images(X, layout, module_input(model)[0])    # a float64 module's: float64
        self.n_items = int(self.X.shape[0])
        if self.n_items == 0:
            raise ValueError("X holds no images to explain")
        check_finite_inputs(self.X, "X")
        check_channels(model, self.X, layout, hwc)
        given = args.get("baseline")
        if given is not None and background is not None:
            raise ValueError("baseline and background are the same thing for images: give one of them")
        name = "baseline" if given is not None else "background"
        self.baseline, self.per_image_baseline, self.imputation = image_baseline(
            given if given is not None else background, name, self.X, layout, args.get("sigma"))
        self.players = image_players(args["groups"], self.X, args.get("patch_size"), args.get("slic"),
                                     args["feature_names"])
        self.output = check_output(args.get("output"), model, self.X)
        self.batch_size, self.groups = args["batch_size"], args["groups"]
        self.shape = tuple(int(d) for d in self.X.shape[1:])
        self.item_names = [str(i) for i in range(self.n_items)]
        self._classes: list[int] | None = None
        warn_training(model)

    def check(self, args: dict) -> None:
        """Players that differ between images have no shared partition or pairs."""
        if self.players.per_image and args.get("partition") is not None:
            raise ValueError("partition: the players differ between images (labels per image, superpixels); an Owen "
                             "partition needs players shared by every image")
        if self.players.per_image and args.get("interactions"):
            raise ValueError("interactions: the players differ between images (labels per image, superpixels); "
                             "pairwise interactions need players shared by every image")

    # ------------------------------------------------------------------------------------------- games
    def _game(self, i: int, outputs: Any) -> Game:
        x = self.X[i]
        base = self.baseline[i] if self.per_image_baseline else self.baseline
        return TorchGame(self.model, x, baseline=base, groups=self.players.groups(i, self.shape),
                         batch_size=self.batch_size, player_names=self.players.names[i], outputs=outputs,
                         eval_mode=True)

    def game(self, i: int) -> Game:
        return self._game(i, self.classes()[i] if self.output == "top" else self.output)

    def classes(self) -> list[int]:
        """Each image's predicted class (the largest output), from one pass over the images in eval mode."""
        if self._classes is None:
            import torch

            probe = self._game(0, None)
            outs = []
            with torch.inference_mode(), probe._modes():
                for lo in range(0, self.n_items, probe.row_batch):
                    batch = self.X[lo:lo + probe.row_batch].to(probe.device)
                    outs.append(probe._forward(batch).argmax(dim=1).cpu())
            self._classes = [int(c) for c in torch.cat(outs)]
        return self._classes

    def value_index(self, args: dict) -> Any:
        game = self._game(0, None)
        return resolve_value_index(args["index"], game.n_players, self.partition(game, args))

    def plans(self, args: dict, rule: Any, options: dict) -> list[Plan | None]:
        """One plan for images that share their players; one per number of players where they differ (labels per
        image, superpixels). Every check is made before the first model call (``output="top"``'s pass)."""
        by_size: dict[int, Plan] = {}
        plans = []
        for i in range(self.n_items if self.players.per_image else 1):
            game = self._game(i, None)
            if game.n_players not in by_size:
                sv = resolve_value_index(args["index"], game.n_players, self.partition(game, args))
                budget = args["budget"] if args["budget"] is not None else default_budget(game.n_players)
                by_size[game.n_players] = Plan(sv, choose(game, sv, args["method"], budget, rule, options), budget)
            plans.append(by_size[game.n_players])
        if self.output == "top":
            self.classes()
        return plans if self.players.per_image else plans * self.n_items

    # ------------------------------------------------------------------------------------------ results
    def key(self) -> tuple[tuple, dict]:
        labels = () if self.players.labels is None else (self.players.labels,)
        arrays = (self.X, self.baseline if not isinstance(self.baseline, float) else np.float64(self.baseline))
        return arrays + labels, dict(groups=repr(self.players.lists), output=repr(self.output),
                                     imputation=self.imputation, names=self.players.names[0])

    def info(self) -> dict:
        pixels = self.players.pixels
        out = {"model_output": "torch module outputs" + ("" if self.output is None else f", output {self.output!r}"),
               "input_shape": list(self.shape[1:]) if pixels else list(self.shape), "imputation": self.imputation,
               "input_groups": self.players.label_map(), "images": to_numpy(self.X),
               "per_row": ["images", "rows"] + (["input_groups"] if self.players.per_image else [])}
        if self.output == "top":
            out["classes"] = self.classes()
            out["per_row"].append("classes")
        return out

    def result(self, results: list[dict], plans: list, info: dict) -> Any:
        """The images' values as one Explanation: images with fewer players (superpixels) padded with null players
        (zero values and errors); a list of outputs named by their indices."""
        widest = max(len(r["names"]) for r in results)
        padded = []
        for r in results:
            extra = widest - len(r["names"])
            pad = lambda a: a if a is None or not extra else np.concatenate(      # noqa: E731
                [a, np.zeros((extra,) + a.shape[1:])])
            padded.append({**r, "values": pad(r["values"]), "stderr": pad(r["stderr"])})
        if self.players.per_image:
            info = {**info, "players_per_image": [len(r["names"]) for r in results]}
            methods = [p.choice.method for p in plans]
            if len(set(methods)) > 1:
                info["methods"] = methods
            for r in padded:
                r["names"] = [f"segment {j}" for j in range(widest)]
        gaps = [r["info"].get("completeness") for r in results]
        if all(g is not None for g in gaps):                # gradient methods: each image's completeness gap
            info = {**info, "completeness": gaps, "per_row": info["per_row"] + ["completeness"]}
        e = super().result(padded, plans, info)
        if isinstance(self.output, (list, tuple)) and e.values.ndim == 3:
            e.output_names = [str(j) for j in self.output]
        return e

