"""The README main job (experiments/tour.py) on a tiny budget: its SVGP-on-digits section and the CLI."""
import json

import numpy as np

from experiments import tour


def test_tour_svgp_section_tiny_budget_and_cli(tmp_path, capsys):
    output = tmp_path / "tour.json"
    results = tour.main(
        ["--sections", "svgp_digits", "--epochs", "2", "--logdir", str(tmp_path / "runs"), "--output", str(output),
         "--no-progress"]
    )
    result = results["svgp_digits"]
    printed = capsys.readouterr().out
    assert "SVGP on digits: test accuracy" in printed and str(tmp_path / "runs") in printed
    # 2 epochs of SVGP on 1347 digits already separate the classes far above chance (0.1)
    assert 0.6 < result["test_accuracy"] <= 1.0
    assert np.isfinite(result["test_nlpd"]) and result["epochs"] == 2
    saved = json.loads(output.read_text())
    assert saved["svgp_digits"]["test_accuracy"] == result["test_accuracy"]
    logdir = tmp_path / "runs" / "svgp_digits"
    assert list(logdir.glob("events.out.tfevents.*")) and (logdir / "checkpoints" / "checkpoint").exists()


def test_tour_rejects_unknown_sections(capsys):
    import pytest

    with pytest.raises(SystemExit):
        tour.main(["--sections", "nope"])
    assert "unknown section" in capsys.readouterr().err
