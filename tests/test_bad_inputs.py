"""Bad inputs of every kind, at every door, refused before any model call with an error naming the argument (issue
43: "no new door can accept what another refuses").

One table, ``INPUTS``: for each input kind (numpy tables, DataFrames, sparse tables, texts, sequences, images for
torch modules, prompts of language models, interactions, Owen partitions, conditional imputation) the ways its
inputs go wrong, each a function of where the fault lies (drawn by hypothesis) that calls a door with a counting
model. The same faults (NaN, inf, a word among numbers, a wrong shape, an empty input) are listed for every kind that
can hold them.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.compose import ColumnTransformer
from sklearn.datasets import load_breast_cancer
from sklearn.decomposition import PCA
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler

import fairshare as fs

PROPERTY = settings(max_examples=6, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])

_DATA = load_breast_cancer(as_frame=True)
X6 = _DATA.data.iloc[:, :6]
LR = LogisticRegression(max_iter=5000).fit(X6, _DATA.target)


class _CountsPredictions:
    """Counts a scikit-learn model's predictions in ``calls.n`` (when ``calls`` is set)."""

    calls: Any = None

    def predict_proba(self, X):
        if self.calls is not None:
            self.calls.n += 1
        return super().predict_proba(X)


class CountingLR(_CountsPredictions, LogisticRegression):
    """A fitted scikit-learn model (it takes no NaN) that counts its predictions in ``calls.n``."""


_COUNTING_LR = CountingLR(max_iter=5000).fit(X6, _DATA.target)


class CountingForest(_CountsPredictions, RandomForestClassifier):
    """A forest that counts its predictions in ``calls.n`` (reading its trees checks them against some)."""


def _pipeline(last: Any, fit: bool = True) -> Pipeline:
    """A ColumnTransformer (three columns scaled, three ``last``) and a counting forest."""
    cols = list(X6.columns)
    pipe = Pipeline([("prep", ColumnTransformer([("scale", StandardScaler(), cols[:3]), ("last", last, cols[3:])])),
                     ("forest", CountingForest(n_estimators=3, max_depth=3, random_state=0))])
    return pipe.fit(X6, _DATA.target) if fit else pipe


_PIPELINES = {"traced": _pipeline("passthrough"), "mixing": _pipeline(PCA(2)), "unfitted": _pipeline("passthrough",
                                                                                                       fit=False)}


class Calls:
    """Counts every call a door makes to a model, whatever the model takes."""

    def __init__(self) -> None:
        self.n = 0
        self.lr = _COUNTING_LR
        self.lr.calls = self
        for pipe in _PIPELINES.values():
            pipe.steps[-1][1].calls = self

    def pipeline(self, kind: str = "traced") -> Pipeline:
        """A scikit-learn pipeline of X6's columns whose final forest counts its predictions."""
        return _PIPELINES[kind]

    def table(self, rows):
        self.n += 1
        return LR.predict_proba(np.asarray(rows, dtype=float))

    def texts(self, texts):
        self.n += 1
        return np.array([len(t) for t in texts], dtype=float)

    def cells(self, inputs):
        self.n += 1
        return np.asarray(inputs, dtype=float).reshape(len(inputs), -1).sum(axis=1)

    def module(self):
        import torch

        calls = self

        class Net(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.linear = torch.nn.Linear(12, 2)

            def forward(self, x):
                calls.n += 1
                return self.linear(x.reshape(x.shape[0], -1))

        return Net()

    def conv(self):
        """A counting CNN of images (3, 4, 4): a convolution, then a linear layer of 3 outputs."""
        import torch

        calls = self

        class Conv(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.conv = torch.nn.Conv2d(3, 2, 3, padding=1)
                self.linear = torch.nn.Linear(2 * 4 * 4, 3)

            def forward(self, x):
                calls.n += x.device.type != "meta"       # a pass on meta tensors computes nothing: no model call
                return self.linear(self.conv(x).flatten(1))

        return Conv().eval()

    def logprobs(self, token_lists, target):
        self.n += 1
        return np.full((len(token_lists), len(target)), -1.0)

    def lm(self, vocab: int = 20, context: int = 16):
        """A causal LM of ``vocab`` tokens and a context of ``context`` (a torch module with a config)."""
        import types

        import torch

        calls = self

        class LM(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.config = types.SimpleNamespace(vocab_size=vocab, n_positions=context, bos_token_id=0)
                self.head = torch.nn.Embedding(vocab, vocab)

            def forward(self, input_ids, attention_mask):
                calls.n += 1
                return self.head(input_ids)

        return LM()


class WordTokenizer:
    """A tokenizer of ``size`` words ``w0 .. w{size-1}`` (not the model's when its vocabulary differs)."""

    def __init__(self, size: int) -> None:
        self.size = size

    def __len__(self) -> int:
        return self.size

    def encode(self, text, add_special_tokens=False):
        return [int(w[1:]) for w in text.split()]

    def decode(self, ids):
        return " ".join(f"w{i}" for i in ids)


def _poked(X: np.ndarray, where: int, value) -> np.ndarray:
    out = np.array(X, dtype=object if isinstance(value, str) else float)
    out.reshape(-1)[where % out.size] = value
    return out


def _explain(model, X, background=None, **kw):
    return fs.explain(model, X, background, **({"budget": 40, "progress": False, "seed": 0} | kw))


_ROWS, _BG = X6.iloc[:3].to_numpy(), X6.iloc[100:110].to_numpy()
_SEQ, _SEQ_BG = np.arange(36.0).reshape(3, 4, 3), np.zeros((5, 4, 3))


def _sparse(where: int, value: float):
    S = sp.random(4, 6, density=0.6, format="csr", random_state=0)
    S.data[where % S.data.size] = value
    return S


def _images(where: int, value: float):
    import torch

    images = torch.rand(2, 3, 4, generator=torch.Generator().manual_seed(0))
    images.reshape(-1)[where % images.numel()] = value
    return images


def _pictures(where: int, value: float, channels: int = 3):
    import torch

    pictures = torch.rand(2, channels, 4, 4, generator=torch.Generator().manual_seed(0))
    pictures.reshape(-1)[where % pictures.numel()] = value
    return pictures


def _negative(where: int) -> np.ndarray:
    labels = np.arange(16).reshape(4, 4) // 4
    labels.reshape(-1)[where % 16] = -1 - where % 3
    return labels


def _patches(c, X, **kw):
    return _explain(c.conv(), X, **({"groups": "patches", "patch_size": 2} | kw))


def _generation(c, where: int, model=None, **kw):
    """A generation game of a log-probability function (or ``model``) explained by the game door."""
    args = {"prompt": [1, 2, 3, 4, 5][: 3 + where % 3], "target": [6, 7]} | kw
    return _explain(fs.games.GenerationGame(c.logprobs if model is None else model, **args), None)


#: input kind -> fault -> (the argument the error names, a function of (calls, where) that calls the door)
INPUTS = {
    "numpy table": {
        "NaN (model takes none)": ("X", lambda c, w: _explain(c.lr, _poked(_ROWS, w, np.nan), _BG)),
        "inf": ("X", lambda c, w: _explain(c.table, _poked(_ROWS, w, np.inf), _BG)),
        "inf in background": ("background", lambda c, w: _explain(c.table, _ROWS, _poked(_BG, w, -np.inf))),
        "word among numbers": ("X", lambda c, w: _explain(c.table, _poked(_ROWS, w, "oops"), _BG)),
        "background of other width": ("background", lambda c, w: _explain(c.table, _ROWS, _BG[:, : 1 + w % 5])),
        "no rows": ("X", lambda c, w: _explain(c.table, _ROWS[:0], _BG)),
        "empty background": ("background", lambda c, w: _explain(c.table, _ROWS, _BG[:0])),
        "groups overlap": ("groups", lambda c, w: _explain(c.table, _ROWS, _BG, groups=[[0, 1], [1 + w % 5, 2, 3, 4,
                                                                                                  5]])),
    },
    "DataFrame": {
        "NaN (model takes none)": ("X", lambda c, w: _explain(c.lr, pd.DataFrame(_poked(_ROWS, w, np.nan),
                                                                                 columns=X6.columns), X6.iloc[100:110])),
        "word among numbers": ("X", lambda c, w: _explain(c.lr, pd.DataFrame(_poked(_ROWS, w, "oops"),
                                                                             columns=X6.columns), X6.iloc[100:110])),
        "word in background": ("background", lambda c, w: _explain(c.lr, X6.iloc[:3], pd.DataFrame(
            _poked(_BG, w, "oops"), columns=X6.columns))),
        "missing column": ("X", lambda c, w: _explain(c.lr, X6.iloc[:3].drop(columns=X6.columns[w % 6]),
                                                       X6.iloc[100:110])),
    },
    "pipeline": {
        "missing column": ("X", lambda c, w: _explain(c.pipeline(), X6.iloc[:3].drop(columns=X6.columns[w % 6]),
                                                       X6.iloc[100:110])),
        "inf": ("X", lambda c, w: _explain(c.pipeline(), pd.DataFrame(_poked(_ROWS, w, np.inf), columns=X6.columns),
                                           X6.iloc[100:110])),
        "word among numbers": ("X", lambda c, w: _explain(c.pipeline(), pd.DataFrame(_poked(_ROWS, w, "oops"),
                                                                                     columns=X6.columns),
                                                          X6.iloc[100:110])),
        "not fitted": ("model: the pipeline's step 'prep'", lambda c, w: _explain(c.pipeline("unfitted"),
                                                                                  X6.iloc[:3], X6.iloc[100:110])),
        "a step that mixes columns, no background": (
            "background: step 'prep' (ColumnTransformer) → 'last' (PCA) mixes columns",
            lambda c, w: _explain(c.pipeline("mixing"), X6.iloc[w % 3: 3])),
    },
    "sparse table": {
        "inf": ("X", lambda c, w: _explain(lambda A: c.cells(A.toarray()), _sparse(w, np.inf),
                                           sp.random(5, 6, density=0.5, format="csr", random_state=1))),
        "background of other width": ("background", lambda c, w: _explain(
            lambda A: c.cells(A.toarray()), _sparse(w, 1.0), sp.random(5, 7, density=0.5, format="csr"))),
    },
    "texts": {
        "a non-string among texts": ("X[", lambda c, w: _explain(c.texts, ["a b", "c", None, "d"][: 3 + w % 2])),
        "a tokenizer that finds nothing": ("tokenizer", lambda c, w: _explain(c.texts, ["AB cd", "ef"][w % 2:],
                                                                              tokenizer=r"[0-9]+")),
        "a model of numbers": ("texts", lambda c, w: _explain(c.lr, ["free prize", "see you"])),
    },
    "sequences": {
        "NaN": ("X", lambda c, w: _explain(c.cells, _poked(_SEQ, w, np.nan), _SEQ_BG)),
        "inf in background": ("background", lambda c, w: _explain(c.cells, _SEQ, _poked(_SEQ_BG, w, np.inf))),
        "background of other shape": ("background", lambda c, w: _explain(c.cells, _SEQ, np.zeros((2, 4 + 1 + w % 3,
                                                                                                     3)))),
        "window past the end": ("groups", lambda c, w: _explain(c.cells, _SEQ, _SEQ_BG, groups=("time", 5 + w % 4))),
        "labels of other shape": ("groups", lambda c, w: _explain(c.cells, _SEQ, _SEQ_BG,
                                                                  groups=np.zeros((4, 2), dtype=int) if w % 2 else np.zeros((5, 3), dtype=int))),
    },
    "torch images": {
        "NaN": ("X", lambda c, w: _explain(c.module(), _images(w, float("nan")))),
        "inf": ("X", lambda c, w: _explain(c.module(), _images(w, float("inf")))),
        "background of other shape": ("background", lambda c, w: _explain(c.module(), _images(w, 0.5),
                                                                          np.zeros((2, 3, 5 + w % 2)))),
        "labels of other shape": ("groups", lambda c, w: _explain(c.module(), _images(w, 0.5),
                                                                  groups=np.zeros((3, 5), dtype=int))),
    },
    "images": {
        "NaN": ("X", lambda c, w: _patches(c, _pictures(w, float("nan")))),
        "inf": ("X", lambda c, w: _patches(c, _pictures(w, float("-inf")))),
        "wrong channel count": ("X", lambda c, w: _patches(c, _pictures(w, 0.5, channels=1 + w % 2))),
        "images of different sizes": ("X", lambda c, w: _patches(c, [_pictures(w, 0.5)[0],
                                                                      _pictures(w, 0.5)[1, :, :, : 2 + w % 2]])),
        "labels of other shape": ("groups", lambda c, w: _patches(c, _pictures(w, 0.5), patch_size=None,
                                                                  groups=np.zeros((4, 5 + w % 2), dtype=int))),
        "negative labels": ("groups", lambda c, w: _patches(c, _pictures(w, 0.5), patch_size=None,
                                                            groups=_negative(w))),
        "output out of range": ("output", lambda c, w: _patches(c, _pictures(w, 0.5), output=3 + w % 5)),
        "baseline of other shape": ("baseline", lambda c, w: _patches(c, _pictures(w, 0.5),
                                                                      baseline=np.zeros((3, 4, 5 + w % 2)))),
        "inf in baseline": ("baseline", lambda c, w: _patches(c, _pictures(w, 0.5), baseline=_pictures(w, np.inf))),
    },
    "prompts": {           # (a function that answers the wrong shape or NaN is refused on its first batch:
        #                       tests/test_generation.py)
        "empty prompt": ("prompt", lambda c, w: _generation(c, w, prompt=["", " \n", []][w % 3],
                                                             tokenizer=WordTokenizer(9))),
        "empty target": ("target", lambda c, w: _generation(c, w, target=["", []][w % 2], tokenizer=WordTokenizer(9))),
        "target ids outside the vocabulary": ("target", lambda c, w: _generation(c, w, c.lm(), target=[3, 20 + w % 9])),
        "prompt longer than the context": ("prompt", lambda c, w: _generation(c, w, c.lm(), prompt=[1] * (15 + w % 9),
                                                                               target=[2, 3])),
        "spans overlap": ("spans", lambda c, w: _generation(c, w, spans=[(0, 2), (w % 2, 3)])),
        "spans past the prompt": ("spans", lambda c, w: _generation(c, w, spans=[(0, 1), (1, 6 + w % 4)])),
        "a tokenizer that disagrees with the ids": ("tokenizer", lambda c, w: _generation(
            c, w, c.lm() if w % 2 else None, prompt=[1, 2, 12 + w % 4], tokenizer=WordTokenizer(10))),
        "a tokenizer of another model": ("tokenizer", lambda c, w: _generation(c, w, c.lm(), prompt="w1 w2",
                                                                               tokenizer=WordTokenizer(21 + w % 5))),
    },
    "interactions": {
        "budget below the minimum": ("budget", lambda c, w: fs.interactions(
            fs.games.FunctionGame(c.cells, n_players=12), "k-sii", order=2, budget=5 + w % 40)),
        "order above the players": ("order", lambda c, w: fs.interactions(
            fs.games.FunctionGame(c.cells, n_players=3), "k-sii", order=4 + w % 3, budget=100)),
    },
    "Owen partitions": {
        "blocks overlap": ("partition", lambda c, w: _explain(c.table, _ROWS, _BG, index="owen",
                                                             partition=[[0, 1, 2], [2 + w % 4, 3, 4, 5]])),
        "a player in no block": ("partition", lambda c, w: _explain(c.table, _ROWS, _BG, index="owen",
                                                                   partition=[[0, 1, 2], [3, 4, 5][: 1 + w % 2]])),
        "an unknown name": ("partition", lambda c, w: _explain(c.lr, X6.iloc[:3], X6.iloc[100:110], index="owen",
                                                              partition=[["no such"], list(X6.columns)])),
    },
    "conditional imputation": {
        "words in the background": ("background", lambda c, w: _explain(
            c.table, _ROWS, _poked(_BG, w, "oops"), imputation=["gaussian", "copula", "empirical"][w % 3])),
        "one background row": ("imputation", lambda c, w: _explain(
            c.table, _ROWS, _BG[:1], imputation=["gaussian", "copula", "empirical"][w % 3])),
        "sparse rows": ("imputation", lambda c, w: _explain(
            lambda A: c.cells(A.toarray()), _sparse(w, 1.0), sp.random(5, 6, density=0.5, format="csr"),
            imputation="gaussian")),
    },
}
CASES = [(kind, fault) for kind, faults in INPUTS.items() for fault in faults]


@PROPERTY
@pytest.mark.parametrize("kind, fault", CASES, ids=[f"{k}: {f}" for k, f in CASES])
@given(where=st.integers(0, 10**6))
def test_every_bad_input_is_refused_naming_its_argument_before_any_model_call(kind, fault, where):
    if kind in ("torch images", "images", "prompts"):
        pytest.importorskip("torch")
    argument, call = INPUTS[kind][fault]
    calls = Calls()
    with pytest.raises((ValueError, TypeError)) as info:
        call(calls, where)
    assert argument in str(info.value), str(info.value)
    assert calls.n == 0


def test_the_same_fault_is_refused_at_every_kind_that_can_hold_it():
    """NaN, inf, a word among numbers and a background of the wrong shape are listed for every input kind that
    can hold them, so a new kind that forgets one fails the table's own check."""
    holds = {"NaN": ["numpy table", "DataFrame", "sequences", "torch images", "images"],
             "inf": ["numpy table", "sparse table", "torch images", "images", "pipeline"],
             "word among numbers": ["numpy table", "DataFrame", "pipeline"],
             "of other": ["numpy table", "sparse table", "sequences", "torch images", "images"]}
    for fault, kinds in holds.items():
        for kind in kinds:
            assert any(fault in name for name in INPUTS[kind]), (kind, fault)
