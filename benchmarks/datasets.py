"""Loaders for the papers' datasets, read from ``../shared/datasets`` (never copied into the repo).

Each loader follows the preprocessing of ``../shared/datasets/README.md`` and returns
``(X, y, feature_names)`` as numpy arrays; missing values are left as NaN (tree models
handle them) unless a loader says otherwise.
"""

from __future__ import annotations

import io
import os
import tarfile
import zipfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def datasets_dir() -> Path:
    """``$FAIRSHARE_DATASETS``, else ``../shared/datasets`` next to the repository."""
    path = Path(os.environ.get("FAIRSHARE_DATASETS", ROOT.parent / "shared" / "datasets"))
    if not path.is_dir():
        raise FileNotFoundError(f"datasets not found at {path}; set FAIRSHARE_DATASETS")
    return path


def _pd():
    import pandas as pd

    return pd


def _encode_categories(df):
    """Replace every non-numeric column by its category codes (in place); returns the frame."""
    pd = _pd()
    for c in df.columns:
        if not pd.api.types.is_numeric_dtype(df[c]):
            df[c] = df[c].astype("category").cat.codes
    return df


def _split(df, target, positive=None, encode: bool = False, names=None):
    """``(X, y, feature names)`` from a frame: pop ``target`` (``== positive`` when given, as 0/1),
    optionally replace text columns by category codes."""
    y = df.pop(target)
    y = (y == positive).to_numpy(float) if positive is not None else y.to_numpy(float)
    if encode:
        _encode_categories(df)
    return df.to_numpy(float), y, list(df.columns) if names is None else names


def _sklearn(load):
    data = load()
    return data.data, data.target.astype(float), list(data.feature_names)


def adult_shap():
    """shap.datasets.adult(): 12 features, category codes, target '>50K' (32,561 rows)."""
    pd = _pd()
    cols = ["Age", "Workclass", "fnlwgt", "Education", "Education-Num", "Marital Status", "Occupation",
            "Relationship", "Race", "Sex", "Capital Gain", "Capital Loss", "Hours per week", "Country", "Target"]
    df = pd.read_csv(datasets_dir() / "adult" / "adult.data", names=cols, na_values="?")
    df = df.drop(columns=["Education", "fnlwgt"])
    y = (df.pop("Target") == " >50K").to_numpy(float)
    relationship = {" Not-in-family": 0, " Unmarried": 1, " Other-relative": 2, " Own-child": 3, " Husband": 4, " Wife": 5}
    df["Relationship"] = df["Relationship"].map(relationship)
    for c in ("Workclass", "Marital Status", "Occupation", "Race", "Sex", "Country"):
        df[c] = df[c].astype("category").cat.codes
    return df.to_numpy(float), y, list(df.columns)


def adult_census():
    """shapiq's adult census (14 features, rows with missing categoricals dropped)."""
    pd = _pd()
    df = pd.read_csv(datasets_dir() / "adult" / "adult_census.csv").dropna()
    df["class"] = df["class"].astype(str).str.strip()
    return _split(df, "class", ">50K", encode=True)


def adult_census_frame(rows: int | None = None):
    """shapiq's adult census as users hold it: a DataFrame with its string columns (12 features, as shap's adult:
    no fnlwgt, no education) and the 0/1 target; rows with a missing value dropped."""
    pd = _pd()
    df = pd.read_csv(datasets_dir() / "adult" / "adult_census.csv", nrows=rows).dropna().reset_index(drop=True)
    y = (df.pop("class").astype(str).str.strip() == ">50K").to_numpy(int)
    return df.drop(columns=["fnlwgt", "education"]), y


def california():
    pd = _pd()
    return _split(pd.read_csv(datasets_dir() / "california_housing" / "california_housing.csv"), "MedHouseVal")


def communities():
    """shap.datasets.communitiesandcrime(): 1,994 rows, 101 features, violent crimes per 100k."""
    pd = _pd()
    df = pd.read_csv(datasets_dir() / "communities_crime" / "CommViolPredUnnormalizedData.txt", na_values="?")
    df = df[df.iloc[:, -2].notna()]
    y = df.iloc[:, -2].to_numpy(float)
    X = df.iloc[:, 5:-18]
    X = X.loc[:, X.notna().all()]
    return X.to_numpy(float), y, list(X.columns)


def diabetes_sklearn():
    from sklearn.datasets import load_diabetes

    return _sklearn(load_diabetes)


def iris():
    from sklearn.datasets import load_iris

    return _sklearn(load_iris)


def _shap_linear60(correlated: bool):
    """shap.datasets.independentlinear60 / corrgroups60 (N = 1000, M = 60), generated as shap does."""
    rng = np.random.RandomState(0)
    N, M = 1000, 60
    beta = np.zeros(M)
    beta[0:30:3] = 1
    X_start = rng.randn(N, M)
    Xc = X_start - X_start.mean(0)
    if correlated:
        C = np.eye(M)
        for i in range(0, 30, 3):
            C[i:i + 3, i:i + 3] = 0.99
            np.fill_diagonal(C[i:i + 3, i:i + 3], 1.0)
        cov = Xc.T @ Xc / N
        L = np.linalg.cholesky(np.linalg.inv(cov))
        X = (Xc @ L) @ np.linalg.cholesky(C).T
    else:
        X = Xc
    y = X @ beta + rng.randn(N) * 1e-2
    return X, y, [f"x{i}" for i in range(M)]


def independent60():
    return _shap_linear60(False)


def correlated60():
    return _shap_linear60(True)


def nhanes():
    """shap.datasets.nhanesi(): 79 features (NaNs kept), y = survival time (negative: censored)."""
    pd = _pd()
    X = pd.read_csv(datasets_dir() / "nhanesi" / "NHANESI_X.csv", index_col=0)
    y = pd.read_csv(datasets_dir() / "nhanesi" / "NHANESI_y.csv", index_col=0).iloc[:, 0]
    return X.to_numpy(float), y.to_numpy(float), list(X.columns)


def pima():
    pd = _pd()
    df = pd.read_csv(datasets_dir() / "diabetes_pima" / "pima-indians-diabetes.data.csv", header=None)
    names = ["Pregnancies", "Glucose", "BloodPressure", "SkinThickness", "Insulin", "BMI", "DiabetesPedigree", "Age"]
    return df.iloc[:, :8].to_numpy(float), df.iloc[:, 8].to_numpy(float), names


def bank():
    pd = _pd()
    with zipfile.ZipFile(datasets_dir() / "bank_marketing" / "bank-full.zip") as z:
        name = [n for n in z.namelist() if n.endswith(".csv")][0]
        df = pd.read_csv(io.BytesIO(z.read(name)))
    return _split(df, "y", "yes", encode=True)


def german_credit():
    pd = _pd()
    df = pd.read_csv(datasets_dir() / "german_credit" / "german.data", sep=" ", header=None)
    return _split(df, 20, 1, encode=True, names=[f"a{i + 1}" for i in range(20)])


def brca():
    pd = _pd()
    return _split(pd.read_csv(datasets_dir() / "brca" / "brca_small.csv"), "BRCA_Subtype_PAM50")


def tuandromd():
    pd = _pd()
    return _split(pd.read_csv(datasets_dir() / "tuandromd" / "TUANDROMD.csv").dropna(), "Label", "malware")


def enron1_path() -> Path:
    return datasets_dir() / "enron1" / "enron1.tar.gz"


def read_enron1() -> tuple[list[str], np.ndarray]:
    """Raw e-mails of enron1 and labels (spam = 1)."""
    texts, labels = [], []
    with tarfile.open(enron1_path()) as tar:
        for member in tar.getmembers():
            if not member.isfile() or not member.name.endswith(".txt") or "Summary" in member.name:
                continue
            raw = tar.extractfile(member).read().decode("latin-1")
            texts.append(raw)
            labels.append(1.0 if "/spam/" in member.name else 0.0)
    return texts, np.asarray(labels)


#: The unified framework's low-dimensional datasets (Table 2).
SHAPLEY_DATASETS = {
    "adult": adult_shap, "california": california, "communities": communities, "correlated": correlated60,
    "diabetes": diabetes_sklearn, "independent": independent60, "iris": iris, "nhanes": nhanes,
}

#: The Kernel Banzhaf paper's datasets (Table 1).
BANZHAF_DATASETS = {
    "diabetes": pima, "adult": adult_census, "bank": bank, "german_credit": german_credit, "nhanes": nhanes,
    "brca": brca, "communities": communities, "tuandromd": tuandromd,
}


def digits_task():
    """scikit-learn's 8x8 digits: (1797, 64) pixel intensities and the labels."""
    from sklearn.datasets import load_digits

    d = load_digits()
    return d.data.astype(float), d.target


def cifar_sized_task():
    """Digits upsampled to 32x32x3 with tinted channels and pixel noise (the offline CIFAR-10 stand-in)."""
    from scipy.ndimage import zoom

    X, y = digits_task()
    images = zoom(X.reshape(-1, 8, 8) / 16.0, (1, 4, 4), order=1)                 # (N, 32, 32)
    tints = np.array([1.0, 0.8, 0.6])
    rgb = images[:, :, :, None] * tints                                            # (N, 32, 32, 3)
    rgb = rgb + 0.05 * np.random.default_rng(0).standard_normal(rgb.shape)
    return np.clip(rgb, 0.0, 1.0).reshape(len(X), -1), y
