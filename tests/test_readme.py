"""The README's code runs as written: every ```python block is executed in order, in one namespace, on the
data it names (breast cancer), so the first thing a user copies always works.

Blocks that use names the README leaves to the reader (``X``, ``y`` of the tree section, the training
and validation sets of the examples and data-valuation sections) get them from a small prelude here.
The model and the workload are made smaller (``_SMALLER``: fewer trees, rows and fits; the code is
otherwise the README's, character for character) so that the test takes seconds.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]

_PRELUDES = {
    "### Tree models": """
from sklearn.datasets import load_diabetes
X, y = load_diabetes(return_X_y=True)
""",
    "## Which training points are responsible?": """
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split as _split
_X, _y = load_breast_cancer(return_X_y=True)
_X = (_X - _X.mean(0)) / _X.std(0)
X_train, X_val, y_train, y_val = _split(_X, _y, random_state=0)
model = LogisticRegression(max_iter=2000).fit(X_train, y_train)
wrong = model.predict(X_val) != y_val
if not wrong.any():
    wrong[:3] = True
""",
    "## What is each training point worth?": """
_rng = np.random.default_rng(0)
X_train, X_val, y_train, y_val = X_train[:120], X_val[:100], y_train[:120].copy(), y_val[:100]
label_was_flipped = np.zeros(120, dtype=bool)
label_was_flipped[_rng.choice(120, 12, replace=False)] = True
y_train[label_was_flipped] = 1 - y_train[label_was_flipped]
""",
}


# (what the README says, what the test runs): a small model, the same calls
_SMALLER = [("n_estimators=200", "n_estimators=20"), ("X_test.iloc[:40]", "X_test.iloc[:4]"),
            ("budget=2000, seed=0)", "budget=300, seed=0)")]


def _blocks() -> list[tuple[str, str]]:
    """(the heading above it, the code) for every python block, in order."""
    text = (ROOT / "README.md").read_text()
    out, heading = [], ""
    for m in re.finditer(r"^(#{2,3} [^\n]+)$|^```python\n(.*?)^```", text, flags=re.M | re.S):
        if m.group(1):
            heading = m.group(1).strip()
        else:
            out.append((heading, m.group(2)))
    return out


def test_the_readme_has_its_code_blocks():
    text = "".join(code for _, code in _blocks())
    assert all(said in text for said, _ in _SMALLER), "a substitution no longer matches the README"
    headings = [h for h, _ in _blocks()]
    assert "## Five minutes with a real model" in headings and len(headings) >= 5
    assert set(_PRELUDES) <= set(headings), "a prelude's section is gone from the README"


def test_every_readme_code_block_runs_as_written(tmp_path, monkeypatch):
    pytest.importorskip("xgboost")
    pytest.importorskip("matplotlib")
    monkeypatch.chdir(tmp_path)                       # e.save("explanation.npz") writes here
    namespace: dict = {"np": np}
    for heading, code in _blocks():
        if heading in _PRELUDES:
            exec(compile("import numpy as np\nfrom sklearn.datasets import load_breast_cancer\n" + _PRELUDES[heading],
                         f"<prelude {heading}>", "exec"), namespace)
        for said, run in _SMALLER:
            code = code.replace(said, run)
        try:
            exec(compile(code, f"<README: {heading}>", "exec"), namespace)
        except Exception as exc:                       # noqa: BLE001 - say which block failed
            raise AssertionError(f"the README block under {heading!r} fails: {type(exc).__name__}: {exc}") from exc
    assert (tmp_path / "explanation.npz").exists()
    page = (tmp_path / "report.html").read_text(encoding="utf-8")              # e.to_html: every feature, xgboost's
    assert all(name in page for name in namespace["X_test"].columns) and "xgboost " in page    # version
    assert namespace["e"].values.shape == (4, 30, 2)
    assert np.allclose(namespace["fs"].exact(namespace["eec"], "shapley").values * 60, [14, 14, 14, 9, 9, 0])
    assert namespace["values"].values.shape == (120,)
    said = (ROOT / "README.md").read_text()                # the stopping example's comments are what it gives
    stopped = re.search(r'^phi\.info\["stopped"\]\s+# (\{.*\})$', said, flags=re.M)
    spent = re.search(r"^phi\.n_evaluations\s+# (\d+) of the", said, flags=re.M)
    assert stopped and spent, "the stopping example's comments are gone from the README"
    assert namespace["phi"].info["stopped"] == ast.literal_eval(stopped.group(1))
    assert namespace["phi"].n_evaluations == int(spent.group(1))
