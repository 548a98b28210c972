"""Every benchmark runs on its tiny configuration (no timing is asserted: benchmarks report, tests check)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DATASETS = Path(os.environ.get("FAIRSHARE_DATASETS", ROOT.parent / "shared" / "datasets"))


@pytest.mark.parametrize("name", ["shapley", "banzhaf", "trees", "sgd", "examples", "highdim", "engine", "datavalue",
                                  "interactions", "imputation", "text", "deep", "lm", "default", "sage",
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
