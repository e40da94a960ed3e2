"""Small-data runs of the SV-DKL experiment scripts, the tour, and the notebook."""
import json
import os
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parent.parent


def test_svdkl_uci_small_run(data_dir, dataset_path, tmp_path):
    dataset_path("adult", "adult.data.gz")
    from experiments import svdkl_uci

    out = tmp_path / "adult.json"
    results = svdkl_uci.main([
        "--data-dir", str(data_dir), "--dataset", "adult", "--epochs", "1", "--smoke", "--hidden", "32,8", "--grid-size", "16", "--no-progress", "--dropout", "0.2",
        "--output", str(out), "--logdir", str(tmp_path / "runs"),
    ])
    saved = json.loads(out.read_text())
    assert [r["model"] for r in saved["summary"]] == ["DNN", "DNN+GP", "SV-DKL"]
    assert all(0.0 <= r["accuracy"] <= 1.0 for r in results["summary"])
    assert saved["summary"][2]["paper_accuracy"] == 0.857
    assert saved["arguments"]["dropout"] == 0.2 and saved["arguments"]["indicators"] == "keep"
    assert (tmp_path / "runs" / "svdkl_adult_figure3.png").stat().st_size > 1000
    assert any((tmp_path / "runs" / "figures").iterdir())  # Figure 3 in TensorBoard


def test_svdkl_adult_schedule_small_run(data_dir, dataset_path, tmp_path):
    dataset_path("adult", "adult.data.gz")
    from experiments import svdkl_adult_schedule

    out = tmp_path / "schedules.jsonl"
    rows = svdkl_adult_schedule.main([
        "--data-dir", str(data_dir), "--candidates", "6,9", "--smoke", "--output", str(out),
    ])
    saved = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == len(saved) == 2
    assert saved[0]["config"]["gp_epochs"] == 5
    assert saved[0]["config"]["log1p"] is True
    assert saved[1]["config"]["dropout"] == 0.5
    assert all(0.0 <= row[k]["accuracy"] <= 1.0 for row in saved for k in ("dnn", "dnn_gp", "svdkl"))


def test_svdkl_adult_schedule_cross_validation_means_its_folds(data_dir, dataset_path, tmp_path):
    dataset_path("adult", "adult.data.gz")
    import numpy as np

    from experiments import svdkl_adult_schedule

    (row,) = svdkl_adult_schedule.main([
        "--data-dir", str(data_dir), "--candidates", "18", "--folds", "2", "--smoke",
    ])
    assert row["config"]["joint_gp_learning_rate"] == 1e-3 and row["folds"] == 2
    assert len(row["per_fold"]) == 2
    for key in ("dnn", "dnn_gp", "svdkl"):
        np.testing.assert_allclose(row[key]["accuracy"], np.mean([f[key]["accuracy"] for f in row["per_fold"]]), rtol=1e-15)
    with pytest.raises(SystemExit):
        svdkl_adult_schedule.main(["--data-dir", str(data_dir), "--folds", "0"])


def test_log1p_features_transforms_only_named_columns():
    import numpy as np

    from experiments.svdkl_common import log1p_features

    X = np.array([[0.0, 5.0, 2.0], [99999.0, 7.0, 0.0]])
    out = log1p_features(X, ["capital-gain", "age", "capital-loss"], ["capital-gain", "capital-loss"])
    np.testing.assert_array_equal(out[:, 1], X[:, 1])
    np.testing.assert_allclose(out[:, [0, 2]], np.log(1.0 + X[:, [0, 2]]), rtol=1e-15)
    assert X[1, 0] == 99999.0  # the input is not modified
    with pytest.raises(ValueError, match="columns: 'hours' is not a feature name"):
        log1p_features(X, ["capital-gain", "age", "capital-loss"], ["hours"])
    with pytest.raises(ValueError, match="negative values"):
        log1p_features(-X, ["capital-gain", "age", "capital-loss"], ["capital-gain"])


def test_standardise_can_keep_indicator_columns_at_zero_one():
    from experiments.svdkl_common import standardise

    rng = np.random.default_rng(0)
    train = np.column_stack([rng.normal(3.0, 2.0, 50), (np.arange(50) == 7).astype(float), rng.integers(0, 2, 50),
                             np.full(50, 4.0)])  # continuous, rare one-hot, common one-hot, constant
    test = np.column_stack([rng.normal(3.0, 2.0, 5), np.eye(5)[1], np.ones(5), np.full(5, 4.0)])
    scaled_train, scaled_test = standardise(train, test)
    assert scaled_train[7, 1] == pytest.approx(np.sqrt(49.0))  # 1 of 50 rows: (1 - 1/50) / sqrt(1/50 * 49/50)
    kept_train, kept_test = standardise(train, test, indicators="keep")
    np.testing.assert_array_equal(kept_train[:, 1:3], train[:, 1:3])
    np.testing.assert_array_equal(kept_test[:, 1:3], test[:, 1:3])
    for kept, scaled in ((kept_train, scaled_train), (kept_test, scaled_test)):
        np.testing.assert_array_equal(kept[:, 0], scaled[:, 0])  # continuous columns: the training statistics
    np.testing.assert_array_equal(kept_test[:, 3], 0.0)  # a constant column is centred either way
    with pytest.raises(ValueError, match="indicators must be one of"):
        standardise(train, indicators="none")


def test_decayed_learning_rate_reaches_zero_after_the_stage():
    import numpy as np

    from experiments.svdkl_common import decayed_learning_rate

    assert decayed_learning_rate(1e-3, "constant", 10, 1000, 256) == 1e-3
    schedule = decayed_learning_rate(1e-3, "cosine", 10, 1000, 256)  # 10 epochs × 4 steps
    values = np.array([float(schedule(step)) for step in (0, 20, 39, 40)])
    np.testing.assert_allclose(values, [1e-3, 0.5e-3, 0.5e-3 * (1 + np.cos(np.pi * 39 / 40)), 0.0], rtol=1e-6, atol=1e-9)  # float32 schedule
    with pytest.raises(ValueError, match="network_lr_decay must be 'constant' or 'cosine'"):
        decayed_learning_rate(1e-3, "linear", 10, 1000, 256)


def test_network_optimizer_choices_and_errors():
    from gpflow.keras import tf_keras

    from experiments.svdkl_common import network_optimizer

    sgd = network_optimizer("sgd", 1e-2, 5e-3)
    assert isinstance(sgd, tf_keras.optimizers.SGD) and sgd.momentum == 0.9 and sgd.weight_decay == 5e-3
    assert type(network_optimizer("adam", 1e-3)) is tf_keras.optimizers.Adam
    adamw = network_optimizer("adam", 1e-3, 1e-2)
    assert isinstance(adamw, tf_keras.optimizers.AdamW) and adamw.weight_decay == 1e-2
    with pytest.raises(ValueError, match="network_optimizer must be one of"):
        network_optimizer("rmsprop", 1e-3)
    with pytest.raises(ValueError, match="network_weight_decay must be a finite number >= 0"):
        network_optimizer("sgd", 1e-3, -1.0)


def test_build_mlp_dropout_is_active_only_in_training():
    from experiments.svdkl_common import build_mlp

    X = np.random.default_rng(0).normal(size=(50, 6))
    net = build_mlp(6, 2, hidden=(64, 8), dropout=0.5)
    assert sum(type(layer).__name__ == "Dropout" for layer in net.layers) == 2
    np.testing.assert_array_equal(net(X, training=False).numpy(), net(X, training=False).numpy())
    assert not np.allclose(net(X, training=True).numpy(), net(X, training=False).numpy())
    assert not any(type(layer).__name__ == "Dropout" for layer in build_mlp(6, 2, hidden=(8,)).layers)
    with pytest.raises(ValueError, match=r"dropout must be in \[0, 1\)"):
        build_mlp(6, 2, dropout=1.0)


def test_svdkl_mnist_schedule_small_run(data_dir, dataset_path, tmp_path):
    dataset_path("mnist", "train-images-idx3-ubyte.gz")
    from experiments import svdkl_mnist_schedule

    out = tmp_path / "mnist_schedules.json"
    results = svdkl_mnist_schedule.main([
        "--data-dir", str(data_dir), "--smoke", "--network-epochs", "1",
        "--gp-epochs", "1", "--joint-epochs", "2", "--joint-lrs", "1e-4,3e-4", "--joint-batch-sizes", "64,300",
        "--grid-size", "16",
        "--network-lr-decay", "cosine", "--network-optimizer", "sgd", "--network-lr", "0.01",
        "--network-weight-decay", "5e-3", "--no-progress", "--output", str(out),
    ])
    saved = json.loads(out.read_text())
    assert saved["validation_size"] == svdkl_mnist_schedule.SMOKE["validation_size"]
    assert saved["network_optimizer"] == "sgd" and saved["network_weight_decay"] == 5e-3
    assert [(row["joint_batch_size"], row["joint_learning_rate"]) for row in saved["joint"]] == [
        (64, 1e-4), (64, 3e-4), (300, 1e-4), (300, 3e-4)]
    assert all([p["epoch"] for p in row["per_epoch"]] == [1, 2] for row in saved["joint"])
    best = max(p["accuracy"] for row in saved["joint"] for p in row["per_epoch"])
    assert saved["best"]["accuracy"] == best == results["best"]["accuracy"]
    with pytest.raises(ValueError, match="--validation-size"):
        svdkl_mnist_schedule.main(["--data-dir", str(data_dir), "--smoke", "--validation-size", "400"])


def test_svdkl_images_small_run(data_dir, dataset_path, tmp_path):
    dataset_path("mnist", "train-images-idx3-ubyte.gz")
    from experiments import svdkl_images

    results = svdkl_images.main([
        "--data-dir", str(data_dir), "--smoke", "--grid-size", "16", "--no-progress", "--figure-dir", str(tmp_path),
        "--grid-prior", "circulant",
    ])
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
