"""Small-data runs of the SV-DKL experiment scripts (as subprocesses) and the notebook."""
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent


def run_script(name, *args, timeout=300, check=True):
    """``python -m experiments.NAME ARGS`` from the repository root (the way users run the scripts)."""
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    done = subprocess.run([sys.executable, "-m", f"experiments.{name}", *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=timeout)
    if check:
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done


def test_svdkl_uci_small_run(data_dir, dataset_path, tmp_path):
    dataset_path("adult", "adult.data.gz")
    out = tmp_path / "adult.json"
    run_script(
        "svdkl_uci", "--data-dir", str(data_dir), "--dataset", "adult", "--epochs", "1", "--smoke", "--hidden", "32,8",
        "--grid-size", "16", "--no-progress", "--dropout", "0.2", "--output", str(out), "--logdir", str(tmp_path / "runs"),
    )
    saved = results = json.loads(out.read_text())
    assert [r["model"] for r in saved["summary"]] == ["DNN", "DNN+GP", "SV-DKL"]
    # two optimiser steps per stage: no score to compare with a baseline (the DNN stage is below the majority
    # class), only that every stage ran to a finite score
    assert all(np.isfinite(r["accuracy"]) and np.isfinite(r["nlp"]) for r in results["summary"])
    assert saved["summary"][2]["paper_accuracy"] == 0.857
    assert saved["arguments"]["dropout"] == 0.2 and saved["arguments"]["indicators"] == "keep"
    assert (tmp_path / "runs" / "svdkl_adult_figure3.png").stat().st_size > 1000
    assert any((tmp_path / "runs" / "figures").iterdir())  # Figure 3 in TensorBoard


def test_svdkl_adult_schedule_small_run(data_dir, dataset_path, tmp_path):
    dataset_path("adult", "adult.data.gz")
    out = tmp_path / "schedules.json"
    run_script("svdkl_adult_schedule", "--data-dir", str(data_dir), "--candidates", "6,9", "--smoke", "--output", str(out))
    record = json.loads(out.read_text())
    saved = record["rows"]
    assert record["provenance"]["command"].startswith("python -m experiments.svdkl_adult_schedule")
    assert len(saved) == 2
    assert saved[0]["config"]["gp_epochs"] == 5
    assert saved[0]["config"]["log1p"] is True
    assert saved[1]["config"]["dropout"] == 0.5
    # a few optimiser steps per stage on 300 rows: no score to compare with a baseline (the DNN+GP stage is
    # below the majority class here), only that every stage ran to a finite score
    assert all(np.isfinite(row[k][m]) for row in saved for k in ("dnn", "dnn_gp", "svdkl") for m in ("accuracy", "nlp"))


def test_svdkl_adult_schedule_cross_validation_means_its_folds(data_dir, dataset_path, tmp_path):
    dataset_path("adult", "adult.data.gz")
    out = tmp_path / "cv.json"
    run_script("svdkl_adult_schedule", "--data-dir", str(data_dir), "--candidates", "18", "--folds", "2", "--smoke",
               "--output", str(out))
    (row,) = json.loads(out.read_text())["rows"]
    assert row["config"]["joint_gp_learning_rate"] == 1e-3 and row["folds"] == 2
    assert len(row["per_fold"]) == 2
    for key in ("dnn", "dnn_gp", "svdkl"):
        np.testing.assert_allclose(row[key]["accuracy"], np.mean([f[key]["accuracy"] for f in row["per_fold"]]), rtol=1e-15)
    done = run_script("svdkl_adult_schedule", "--data-dir", str(data_dir), "--folds", "0", check=False)
    assert done.returncode == 2 and "--folds must be >= 1" in done.stderr


def test_svdkl_mnist_schedule_small_run(data_dir, dataset_path, tmp_path):
    dataset_path("mnist", "train-images-idx3-ubyte.gz")
    out = tmp_path / "mnist_schedules.json"
    run_script(
        "svdkl_mnist_schedule", "--data-dir", str(data_dir), "--smoke", "--network-epochs", "1",
        "--gp-epochs", "1", "--joint-epochs", "2", "--joint-lrs", "1e-4,3e-4", "--joint-batch-sizes", "64,300",
        "--grid-size", "16",
        "--network-lr-decay", "cosine", "--network-optimizer", "sgd", "--network-lr", "0.01",
        "--network-weight-decay", "5e-3", "--no-progress", "--output", str(out),
    )
    saved = results = json.loads(out.read_text())
    assert saved["validation_size"] == 100  # the --smoke setting
    assert saved["network_optimizer"] == "sgd" and saved["network_weight_decay"] == 5e-3
    assert [(row["joint_batch_size"], row["joint_learning_rate"]) for row in saved["joint"]] == [
        (64, 1e-4), (64, 3e-4), (300, 1e-4), (300, 3e-4)]
    assert all([p["epoch"] for p in row["per_epoch"]] == [1, 2] for row in saved["joint"])
    best = max(p["accuracy"] for row in saved["joint"] for p in row["per_epoch"])
    assert saved["best"]["accuracy"] == best == results["best"]["accuracy"]
    done = run_script("svdkl_mnist_schedule", "--data-dir", str(data_dir), "--smoke", "--validation-size", "400",
                      check=False)
    assert done.returncode != 0 and "--validation-size must be in" in done.stderr


def test_svdkl_images_small_run(data_dir, dataset_path, tmp_path):
    dataset_path("mnist", "train-images-idx3-ubyte.gz")
    out = tmp_path / "mnist.json"
    run_script("svdkl_images", "--data-dir", str(data_dir), "--smoke", "--grid-size", "16", "--no-progress",
               "--figure-dir", str(tmp_path), "--grid-prior", "circulant", "--max-train", "250", "--output", str(out))
    results = json.loads(out.read_text())
    assert results["train_images"] == 250  # a stratified subset of the training images
    assert set(results["chosen_epoch"]) == {"network", "gp", "joint"}
    done = run_script("svdkl_images", "--data-dir", str(data_dir), "--smoke", "--max-train", "5", check=False)
    assert done.returncode == 2 and "--max-train must be at least 10" in done.stderr
    assert [r["model"] for r in results["rows"]] == ["CNN", "CNN+GP", "SV-DKL"]
    assert results["rows"][2]["paper_accuracy"] == 0.9920
    assert (tmp_path / "svdkl_mnist_figure3.png").exists()


def test_notebook_executes(tmp_path):
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(REPO / "notebooks" / "svdkl.ipynb", as_version=4)
    os.environ["GPFLOW_EXT_QUICK"] = "1"
    env_path = os.environ.get("PYTHONPATH", "")
    os.environ["PYTHONPATH"] = f"{REPO}{os.pathsep}{env_path}" if env_path else str(REPO)
    try:
        NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(REPO)}}).execute()
    finally:
        os.environ["PYTHONPATH"] = env_path
    text = "".join(
        o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
    )
    assert "svdkl   accuracy" in text
    assert "it/s" in text or "step/s" in text or "s/step" in text  # the text progress bars, in stderr
    assert "IProgress" not in text and "TqdmWarning" not in text  # no widget warning in Jupyter
    assert any("image/png" in o.get("data", {}) for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))


def test_svdkl_budgets_small_run(tmp_path):
    out = tmp_path / "budgets.json"
    run_script("svdkl_budgets", "--datasets", "digits", "--budgets", "1/1/1", "--seeds", "0", "--output", str(out))
    results = json.loads(out.read_text())
    (cell,) = results["cells"]
    assert (cell["dataset"], cell["budget"], cell["seed"]) == ("digits", "1/1/1", 0)
    epochs = cell["config"]
    assert (epochs["network_epochs"], epochs["gp_epochs"], epochs["joint_epochs"]) == (1, 1, 1)
    assert set(cell["chosen_epoch"]) == {"network", "gp", "joint"}
    # each stage is kept only if no worse on the validation rows than where it started
    assert cell["validation_svdkl"]["nlp"] <= cell["validation_dnn_gp"]["nlp"] + 1e-12
    assert cell["validation_svdkl"]["accuracy"] >= cell["validation_dnn_gp"]["accuracy"]
    (row,) = results["summary"]
    assert row["svdkl_worst_accuracy_gain"] == cell["svdkl"]["accuracy"] - cell["dnn"]["accuracy"]
    assert results["provenance"]["seeds"] == [0]
    done = run_script("svdkl_budgets", "--datasets", "cifar", check=False)
    assert done.returncode == 2 and "--datasets must name some of" in done.stderr
    for bad in ("0", "2/3", "a/b/c", "2,2"):
        done = run_script("svdkl_budgets", "--budgets", bad, check=False)
        assert done.returncode == 2 and "--budgets must" in done.stderr
