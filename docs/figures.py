"""Regenerate the README's figures: python docs/figures.py (needs the ml and plot extras)."""

from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import xgboost as xgb  # noqa: E402
from sklearn.datasets import load_breast_cancer  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402

import fairshare as fs  # noqa: E402

HERE = Path(__file__).parent

data = load_breast_cancer(as_frame=True)
X_train, X_test, y_train, y_test = train_test_split(data.data, data.target, random_state=0)
model = xgb.XGBClassifier(n_estimators=200, max_depth=4).fit(X_train, y_train)

# any model: a prediction function, 50 background rows, an estimator with error bars
e = fs.explain(model.predict_proba, X_test.iloc[:40], background=X_train.iloc[:50], budget=1000, seed=0)
e.plot("beeswarm", output=1).figure.savefig(HERE / "tour_beeswarm.png", dpi=110)
e.plot("waterfall", row=0, output=1).figure.savefig(HERE / "tour_waterfall.png", dpi=110)
print(e)
