"""Plots of results (matplotlib, imported lazily) and the text highlights; each plot is registered as a kind a
result's ``plot(kind)`` draws (``results/plotting.py``)."""

from ..results.html import text_html
from ..results.plotting import register
from .common import new_axes, plain
from .convergence import convergence
from .dependence import dependence, strongest_partner
from .image import image
from .interactions import interaction_dependence, interaction_heatmap, interaction_network
from .rows import bar, beeswarm, decision, heatmap, waterfall
from .text import text
from .values import data_values

__all__ = ["bar", "waterfall", "beeswarm", "dependence", "heatmap", "decision", "convergence", "interaction_heatmap",
           "interaction_network", "interaction_dependence", "text", "image", "text_html", "data_values",
           "strongest_partner", "new_axes", "plain"]

for _kind, _fn in {"bar": bar, "waterfall": waterfall, "beeswarm": beeswarm, "dependence": dependence,
                   "heatmap": heatmap, "decision": decision, "text": text, "image": image}.items():
    register("explanation", _kind)(_fn)
register("data values", "values")(data_values)
for _kind, _fn in {"heatmap": interaction_heatmap, "network": interaction_network}.items():
    register("interactions", _kind)(_fn)
