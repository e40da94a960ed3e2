"""The README main job (``python -m experiments.tour``) on a tiny budget: its SVGP-on-digits section and the CLI."""
import json

import numpy as np


def test_tour_svgp_section_tiny_budget_and_cli(tmp_path, run_python, baselines):
    output = tmp_path / "tour.json"
    printed = run_python(
        "-m", "experiments.tour", "--sections", "svgp_digits", "--epochs", "2", "--logdir", tmp_path / "runs",
        "--output", output, "--no-progress",
    ).stdout
    assert "SVGP on digits: test accuracy" in printed and str(tmp_path / "runs") in printed
    results = json.loads(output.read_text())
    assert set(results) == {"svgp_digits", "provenance"}
    result = results["svgp_digits"]
    # 2 epochs of SVGP on 1347 digits already separate the classes far above the majority class (0.93 vs 0.10 here), on the
    # tour's split (75/25, stratified, seed 0)
    from gpflow_ext.data import load_digits

    _, y_train, _, y_test = load_digits(test_fraction=0.25, seed=0)
    majority = baselines.majority_accuracy(y_train, y_test)
    assert result["test_accuracy"] > majority + 0.7, (result["test_accuracy"], majority)
    assert np.isfinite(result["test_nlpd"]) and result["epochs"] == 2
    assert f"test accuracy {result['test_accuracy']:.4f}" in printed  # the printed figure is the saved one
    logdir = tmp_path / "runs" / "svgp_digits"
    assert list(logdir.glob("events.out.tfevents.*")) and (logdir / "checkpoints" / "checkpoint").exists()


def test_tour_rejects_unknown_sections(run_python):
    # TF_CPP_MIN_LOG_LEVEL=0: experiments.quiet leaves TensorFlow unimported; the command line fails before training
    completed = run_python("-m", "experiments.tour", "--sections", "nope", env={"TF_CPP_MIN_LOG_LEVEL": "0"},
                           check=False, timeout=120)
    assert completed.returncode == 2, completed.stderr[-3000:]  # argparse's usage error
    assert "unknown section" in completed.stderr
