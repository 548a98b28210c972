"""HTML outputs: every user string goes through :func:`escape`; a text's tokens shaded by value; a page of texts.

Names, tokens, indices and labels come from users and from loaded files, so none of them is ever inserted into
HTML raw: a name such as ``<img src=x onerror=alert(1)>`` shows as text, it never runs.
"""

from __future__ import annotations

import html
import json
from typing import Any

import numpy as np

__all__ = ["escape", "script_json", "pick_output", "output_position", "unnamed_output", "output_slice", "text_values",
           "text_html", "texts_page", "answer_outputs", "base_value", "shade", "shade_scale", "TOTAL"]

#: the ``output`` of a generated answer's whole log-probability, when each answer token is an output
TOTAL = "total"


def escape(value: Any) -> str:
    """``value`` as HTML text, safe in element content and in quoted attribute values (``& < > " '`` escaped).

    Examples
    --------
    >>> escape('<img src=x onerror="alert(1)">')
    '&lt;img src=x onerror=&quot;alert(1)&quot;&gt;'
    >>> escape(3.5)
    '3.5'
    """
    return html.escape(str(value), quote=True)


#: what JSON inside a ``<script>`` element must not hold raw: ``</script>`` and ``<!--`` would end or change the
#: element, ``&`` starts a character reference in some contexts, and U+2028/U+2029 end a line in older JavaScript
_SCRIPT_UNSAFE = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def script_json(value: Any) -> str:
    r"""``value`` as JSON that is safe inside a ``<script>`` element (``type="application/json"`` read with
    ``JSON.parse``, or a script): ``<``, ``>``, ``&``, U+2028 and U+2029 written as ``\uXXXX`` escapes, which JSON
    reads back as the same characters, so a name such as ``</script><script>alert(1)</script>`` stays a string.
    Non-finite floats are refused (JSON has none; encode them first).

    Examples
    --------
    >>> print(script_json({"name": "</script><b>&"}))
    {"name": "\u003c/script\u003e\u003cb\u003e\u0026"}
    >>> import json; json.loads(script_json(["\u2028<"])) == ["\u2028<"], "\u2028" in script_json(["\u2028"])
    (True, False)
    """
    text = json.dumps(value, ensure_ascii=False, allow_nan=False)
    return text.translate(str.maketrans(_SCRIPT_UNSAFE))


def pick_output(names: list[str], output: Any, default: int = 0) -> int:
    """The position of ``output`` among outputs called ``names``: a name, or a position in ``0..k-1`` (not a bool);
    None gives ``default``; any other is refused, naming ``output`` and the valid choices.

    Examples
    --------
    >>> pick_output(["0", "1"], "1"), pick_output(["0", "1"], None)
    (1, 0)
    >>> pick_output(["0", "1"], "a")
    Traceback (most recent call last):
    ...
    ValueError: output must be one of ['0', '1'] (or a position in 0..1), got 'a'
    """
    if output is None:
        return default
    if isinstance(output, (int, np.integer)) and not isinstance(output, bool):
        if not 0 <= int(output) < len(names):
            raise ValueError(f"output must be a position in 0..{len(names) - 1} or one of {names}, got {output}")
        return int(output)
    if str(output) in names and not isinstance(output, bool):
        return names.index(str(output))
    raise ValueError(f"output must be one of {names} (or a position in 0..{len(names) - 1}), got {output!r}")


def output_position(expl: Any, output: Any) -> int:
    """The position of one output of an Explanation of several: ``output`` by name or position (default: the positive
    class of a binary classifier, else the first); any other is refused, naming ``output`` and the outputs
    (:func:`pick_output`).

    Examples
    --------
    >>> import fairshare as fs
    >>> e = fs.Explanation(values=np.ones((1, 2, 3)), stderr=None, empty_value=np.zeros((1, 3)), data=None,
    ...                    player_names=["a", "b"], index="shapley", output_names=["x", "y", "z"])
    >>> output_position(e, None), output_position(e, "z"), output_position(e, 1)
    (0, 2, 1)
    """
    names = expl._outputs()
    return pick_output(names, output, len(names) - 1 if len(names) == 2 else 0)


def unnamed_output(count: int | None, output: Any) -> int | None:
    """The position of ``output`` among ``count`` unnamed outputs (interaction values: outputs ``"0"``, ``"1"``...;
    default the first), None for values of one output (``count`` None), where an ``output`` is refused.

    Examples
    --------
    >>> unnamed_output(3, None), unnamed_output(3, 2), unnamed_output(None, None)
    (0, 2, None)
    >>> unnamed_output(None, 1)
    Traceback (most recent call last):
    ...
    ValueError: output: these values have one output, got 1
    """
    if count is None:
        if output is not None:
            raise ValueError(f"output: these values have one output, got {output!r}")
        return None
    return pick_output([str(j) for j in range(count)], output)


def output_slice(expl: Any, output: Any) -> tuple[np.ndarray, np.ndarray | None, str, int | None]:
    """Values and standard errors of one output (:func:`output_position`), the label that names it and its position
    (None for a single output: any ``output`` but the name ``info["output"]`` of a slice ``e[:, :, 1]`` is refused,
    as the image plot refuses it).

    Examples
    --------
    >>> import fairshare as fs
    >>> e = fs.Explanation(values=np.ones((1, 2, 2)), stderr=None, empty_value=np.zeros((1, 2)), data=None,
    ...                    player_names=["a", "b"], index="shapley", output_names=["no", "yes"])
    >>> output_slice(e, None)[2:]
    (' (output yes)', 1)
    """
    values, stderr = expl.values, expl.stderr
    if values.ndim == 2:                          # one output: named where it is one output of several (e[:, :, 1])
        named = (getattr(expl, "info", None) or {}).get("output")
        if output is not None and (named is None or str(output) != str(named)):
            raise ValueError(f"output: this explanation has one output{'' if named is None else f' ({named})'}, "
                             f"got {output!r}")
        return values, stderr, "" if named is None else f" (output {named})", None
    j = output_position(expl, output)
    return values[:, :, j], None if stderr is None else stderr[:, :, j], f" (output {expl._outputs()[j]})", j


def text_values(expl: Any, output: Any) -> tuple[list[str], np.ndarray, np.ndarray, str]:
    """A text's pieces (tokens with their whitespace), values and standard errors of one output, and its label.

    Examples
    --------
    >>> import fairshare as fs
    >>> e = fs.explain(lambda ts: [t.count("a") for t in ts], "a b", progress=False)
    >>> text_values(e, None)[0]
    ['a ', 'b']
    """
    if not getattr(expl, "is_text", False):
        why = f"this one holds {len(expl)} rows" if len(expl) != 1 else "this one holds no text (its info has no " \
            "'text'; one from shap is a text where its data is one row of string pieces named by their tokens)"
        raise ValueError(f"the text plot takes the Explanation of one text (fs.explain(model, text)); {why}")
    if answer_outputs(expl) and (output is None or output == TOTAL):
        # the answer's values are the sum of its tokens' (the game is their sum); their errors are not independent
        return [str(p) for p in expl.data[0]], expl.values[0].sum(axis=1), np.full(expl.values.shape[1], np.nan), \
            " (the whole answer)"
    values, stderr, label, _ = output_slice(expl, output)
    se = stderr[0] if stderr is not None else np.zeros_like(values[0])
    return [str(p) for p in expl.data[0]], values[0], se, label


def shade(v: float, scale: float) -> tuple[float, float, float, float]:
    """Red for positive, blue for negative values, opacity growing with |v| (up to ``scale``, the largest finite
    |value|: :func:`shade_scale`); a value that is not finite is grey.

    Examples
    --------
    >>> shade(2.0, 2.0), shade(float("nan"), 2.0)
    ((0.84, 0.15, 0.16, 0.9), (0.5, 0.5, 0.5, 0.25))
    """
    if not np.isfinite(v):
        return (0.5, 0.5, 0.5, 0.25)
    rgb = (0.84, 0.15, 0.16) if v >= 0 else (0.12, 0.47, 0.71)
    return rgb + (0.1 + 0.8 * min(1.0, abs(v) / scale) if scale > 0 else 0.1,)


def shade_scale(values: np.ndarray) -> float:
    """The largest finite |value| (0 for none), which :func:`shade` shades at full strength: one NaN value must not
    fade every other token.

    Examples
    --------
    >>> shade_scale(np.array([5.0, np.nan, -1.0]))
    5.0
    """
    finite = np.abs(np.asarray(values, dtype=float))
    finite = finite[np.isfinite(finite)]
    return float(finite.max()) if finite.size else 0.0


def answer_outputs(expl: Any) -> list[str]:
    """The answer tokens that are the outputs of a generated answer explained token by token (``per_token=True``),
    else ``[]``."""
    per_token = bool(getattr(expl, "info", {}).get("per_token")) and np.ndim(expl.values) == 3
    return list(expl._outputs()) if per_token else []


def base_value(expl: Any, output: Any) -> float:
    """The base value shown with a text: an answer's (the sum of its tokens') or one answer token's; else that of
    the output shown (the one :func:`output_slice` picks), so each output's header carries its own base value.

    Examples
    --------
    >>> import fairshare as fs
    >>> e = fs.Explanation(values=np.ones((1, 2, 3)), stderr=None, empty_value=np.array([[10.0, 20.0, 30.0]]),
    ...                    data=None, player_names=["a", "b"], index="shapley")
    >>> base_value(e, 0), base_value(e, 1), base_value(e, None)
    (10.0, 20.0, 10.0)
    """
    base = np.asarray(expl.empty_value, dtype=float).reshape(-1)
    if answer_outputs(expl):
        return float(base.sum()) if output is None or output == TOTAL else float(base[output_slice(expl, output)[3]])
    j = output_slice(expl, output)[3]
    return float(base[0 if j is None else j])


def text_html(expl: Any, output: Any = None) -> str:
    """The text as HTML, each token shaded by its value (red raises the output, blue lowers it); a token whose
    value is within two standard errors of zero is underlined dotted (so is one in a block the budget did not open,
    whose standard error is infinite); hovering shows value +- 2 stderr. A generated answer explained token by
    token shows the whole answer's values, then each answer token's (``output``: one of them, or ``"total"``).

    Examples
    --------
    >>> import fairshare as fs
    >>> e = fs.explain(lambda ts: [t.count("good") for t in ts], "good, bad", progress=False)
    >>> text_html(e).count("<span")
    3
    """
    answer = answer_outputs(expl)
    if answer and output is None:
        parts = [f"<details><summary>answer token {escape(name)}</summary>{_highlight(expl, j)}</details>"
                 for j, name in enumerate(answer)]
        said = " ".join(escape(str(name).split(":", 1)[-1]) for name in answer)
        return f"<div><small>answer: {said}</small></div>" + _highlight(expl, TOTAL) + "".join(parts)
    return _highlight(expl, output)


def _highlight(expl: Any, output: Any) -> str:
    """One output's values over the text (see :func:`text_html`)."""
    pieces, v, se, label = text_values(expl, output)
    scale = shade_scale(v)
    spans = []
    for piece, value, err in zip(pieces, v, se):
        core = piece.rstrip()
        gap = piece[len(core):]
        r, g, b, a = shade(value, scale)
        unsure = "border-bottom:1px dotted #555;" if abs(value) <= 2 * err else ""
        tip = f"{value:+.4g}" + (" (an equal share of a block the budget did not open)" if np.isinf(err) else
                                 f" ± {2 * err:.2g}" if err > 0 else "")
        tip = tip if np.isfinite(value) else "n/a (not finite)"
        spans.append(f'<span title="{escape(tip)}" style="background:rgba({int(255 * r)},{int(255 * g)},'
                     f'{int(255 * b)},{a:.2f});{unsure}">{escape(core)}</span>{escape(gap)}')
    head = f"<div><small>{escape(expl.index)} values{escape(label)}; base value {base_value(expl, output):.4g}" \
           "</small></div>"
    return head + '<div style="white-space:pre-wrap;line-height:1.8">' + "".join(spans) + "</div>"


def texts_page(explanations: list, labels: list) -> str:
    """One HTML page of texts, each under its label (``text 3``), tokens shaded as :func:`text_html` shades them.

    Examples
    --------
    >>> import fairshare as fs
    >>> e = fs.explain(lambda ts: [t.count("a") for t in ts], "a b", progress=False)
    >>> texts_page([e], ["<b>"]).count("&lt;b&gt;")
    1
    """
    parts = [f"<h4>{escape(label)}</h4>" + (text_html(e) if e.player_names else "(no tokens)")
             for e, label in zip(explanations, labels)]
    return "<html><meta charset='utf-8'><body>" + "<hr>".join(parts) + "</body></html>"
