"""The AmazonCat-size benchmark's small run: generated files in the XMC text format (``benchmarks.amazoncat_synth``),
then ``benchmarks.amazoncat_scale`` for s-LINEAR and for the label-gps recipe's model, every label exactly and with
sampled negatives, sharing one cached basis, and the ``best`` recipe with its label-score first stage."""
import json

import numpy as np
import pytest


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    return tmp_path_factory.mktemp("acs")


@pytest.mark.parametrize("model, negatives", [("label-gps", 0), ("label-gps", 5), ("s-linear", 5)])
def test_small_run_times_steps_and_scores(run_python, tmp_path, files, model, negatives):
    if not (files / "train.txt").exists():
        run_python("-m", "benchmarks.amazoncat_synth", "--out", files, "--num-train", 400, "--num-test", 60,
                   "--num-features", 300, "--num-labels", 30, "--nnz-per-row", 12, "--labels-per-row", 2)
    output = tmp_path / "run.json"
    run_python("-m", "benchmarks.amazoncat_scale", "--float32", "--model", model, "--rank", 20, "--num-inducing", 10,
               "--num-latent-gps", 4, "--batch-size", 20, "--num-negative-samples", negatives, "--max-steps", 14,
               "--basis-cache", tmp_path / f"basis_{model}.npz", "--train", files / "train.txt",
               "--test", files / "test.txt", "--output", output)
    result = json.loads(output.read_text())
    assert (result["model"], result["exact_labels"], result["K"], result["N"]) == (model, negatives == 0, 30, 400)
    assert result["steps_trained"] == 14 and result["steps_per_epoch"] == 20  # the median skips the first 10
    assert np.isfinite(result["seconds_per_step"]) and result["seconds_per_step"] > 0
    assert np.isfinite(result["final_objective"])
    assert all(0.0 <= result[f"P@{k}"] <= 100.0 for k in (1, 3, 5)) and result["test_rows"] == 60
    assert result["peak_rss_gb"] > 0


def test_small_run_with_the_best_recipes_label_scores(run_python, tmp_path, files):
    if not (files / "train.txt").exists():
        run_python("-m", "benchmarks.amazoncat_synth", "--out", files, "--num-train", 400, "--num-test", 60,
                   "--num-features", 300, "--num-labels", 30, "--nnz-per-row", 12, "--labels-per-row", 2)
    output = tmp_path / "run.json"
    run_python("-m", "benchmarks.amazoncat_scale", "--float32", "--model", "label-gps", "--tune", "--label-scores",
               "--rank", 20, "--batch-size", 20, "--num-negative-samples", 0, "--max-steps", 14,
               "--basis-sample", 200, "--train", files / "train.txt", "--test", files / "test.txt", "--output", output)
    result = json.loads(output.read_text())
    scores = result["label_scores"]
    assert scores["labels"] == 30 and scores["weight"] == 0.25 and scores["kernel_variance"] == result["kernel_variance"]
    assert result["D_joined"] == result["D"] + 30  # every label scored (K < 256), one column each
    assert len(scores["rows_fitted"]) == scores["folds"] + 1 and scores["rows_fitted"][-1] == 400
    assert scores["nnz_per_row"] > 30  # the rows' own features and a dense probability per label
    assert result["steps_trained"] == 14 and np.isfinite(result["final_objective"])
    assert all(0.0 <= result[f"P@{k}"] <= 100.0 for k in (1, 3, 5)) and result["test_rows"] == 60
    assert {"tuning", "label_scores", "basis", "training", "evaluation"} <= set(result["phases_seconds"])


def test_label_scores_need_the_tuned_variance(run_python, tmp_path, files):
    refused = run_python("-m", "benchmarks.amazoncat_scale", "--model", "label-gps", "--label-scores",
                         "--train", tmp_path / "train.txt", "--test", tmp_path / "test.txt", check=False)
    assert refused.returncode == 2 and "--label-scores fits the first stage at the σ² --tune chooses" in refused.stderr
