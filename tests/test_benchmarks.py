"""Every benchmark runs on its tiny configuration (no timing is asserted: benchmarks report, tests check)."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
DATASETS = Path(os.environ.get("FAIRSHARE_DATASETS", ROOT.parent / "shared" / "datasets"))


@pytest.mark.parametrize("name", ["shapley", "banzhaf", "trees", "sgd", "examples", "engine", "datavalue",
                                  "interactions", "imputation", "deep", "lm", "default", "sage",
                                  # the two costliest quick runs (30 and 16 CPU s), kept out of the default run so
                                  # the suite stays under 10 minutes on 2 cores; their estimators' own tests stay in
                                  pytest.param("highdim", marks=pytest.mark.slow),
                                  pytest.param("text", marks=pytest.mark.slow),
                                  "report", "pipeline",
                                  # starts a Dask cluster, a Spark session and Ray: a minute of start-ups alone on a
                                  # busy 2-core machine; the backends' own tests are in tests/test_scale_out.py
                                  pytest.param("scale", marks=pytest.mark.slow),
                                  pytest.param("scale_memory", marks=pytest.mark.slow)])
def test_benchmark_runs_on_a_tiny_configuration(tmp_path, name):
    pytest.importorskip("shap")
    pytest.importorskip("shapiq")
    if name == "lm":
        pytest.importorskip("transformers")
        pytest.importorskip("captum")
    if name in ("shapley", "banzhaf", "trees", "examples", "datavalue", "imputation", "text", "default", "sage",
                "pipeline", "scale") \
            and not DATASETS.is_dir():
        pytest.skip("../shared/datasets is not available")
    result = subprocess.run([sys.executable, "-m", "fairshare.cli", "bench", name, "--size", "quick", "--out",
                             str(tmp_path)], capture_output=True, text=True, cwd=ROOT, timeout=900)
    assert result.returncode == 0, result.stderr[-2000:]
    report = (tmp_path / "README.md").read_text()
    assert report.startswith(f"# fairshare bench {name}") and "| " in report and "libraries:" in report
    assert list(tmp_path.glob("*.png")) or name in ("trees", "pipeline")
    if name == "examples":
        pytest.importorskip("torch")


def _benchmark(name):
    import importlib

    from fairshare.cli.bench import benchmarks_folder, load_benchmarks

    load_benchmarks(benchmarks_folder())
    return importlib.import_module(f"_fairshare_benchmarks.{name}")


@pytest.mark.parametrize("name", ["cleaning", "attribution"])
def test_torch_attribution_benchmark_runs_on_a_tiny_configuration(tmp_path, name):
    """``bench cleaning`` (section 6 on a CNN) and ``bench attribution`` (LDS against TRAK and captum) at their quick
    size, in this process: a subprocess would import torch, its compiler (Adam imports it) and scikit-learn again,
    several CPU seconds more than the runs themselves."""
    torch = pytest.importorskip("torch")
    if name == "attribution":
        pytest.importorskip("trak")
        pytest.importorskip("captum")
    threads = torch.get_num_threads()
    _benchmark(name).main(size="quick", out=str(tmp_path))
    assert torch.get_num_threads() == threads                      # the run's one thread is handed back
    report = (tmp_path / "README.md").read_text()
    assert report.startswith(f"# fairshare bench {name}") and "| " in report and "libraries:" in report
    assert list(tmp_path.glob("*.png"))


def test_lds_is_the_mean_spearman_correlation_across_subsets():
    """``bench attribution``'s LDS: per test example, Spearman between the summed scores of each subset and the
    output retrained on it (scipy's spearmanr, column by column); a perfect linear datamodel scores 1."""
    from scipy.stats import spearmanr

    attribution = _benchmark("attribution")
    rng = np.random.default_rng(0)
    masks = rng.random((30, 12)) < 0.5
    scores = rng.normal(size=(4, 12))
    outputs = masks @ scores.T + rng.normal(scale=0.5, size=(30, 4))
    got = attribution.lds(scores, masks, outputs)
    expected = [spearmanr((masks @ scores.T)[:, j], outputs[:, j]).statistic for j in range(4)]
    np.testing.assert_allclose(got, expected, rtol=1e-12)
    np.testing.assert_allclose(attribution.lds(scores, masks, masks @ scores.T), 1.0)


@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get("FAIRSHARE_SLOW"), reason="about 20 s (dattri's import alone takes 5 s); "
                    "the default run does not deselect the slow marker, FAIRSHARE_SLOW=1 runs it")
def test_attribution_benchmark_runs_dattri_and_its_lds_agrees():
    """The dattri peers (TRAK, TracIn, influence by CG) on the quick task; our LDS equals ``dattri.metric.lds`` on
    the same scores (dattri's import alone takes seconds, so this is kept out of the default run)."""
    pytest.importorskip("dattri")
    attribution = _benchmark("attribution")
    cfg = dict(attribution.SIZES["quick"], peers=("dattri",))
    rows, facts = attribution.run(cfg)
    dattri_rows = [r for r in rows if r[1] == "dattri"]
    assert len(dattri_rows) == 3 and all(np.isfinite(r[4]) for r in dattri_rows)
    assert facts["dattri_lds"] < 1e-6
