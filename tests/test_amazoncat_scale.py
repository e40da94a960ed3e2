"""The AmazonCat-size benchmark's small run: generated files in the XMC text format (``benchmarks.amazoncat_synth``),
then ``benchmarks.amazoncat_scale`` for s-LINEAR and for the label-gps recipe's model, every label exactly and with
sampled negatives, sharing one cached basis."""
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
