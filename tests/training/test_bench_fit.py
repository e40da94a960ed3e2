"""The fit-overhead benchmark (``python -m benchmarks.bench_fit --smoke``) runs on a small budget and prints
both loops side by side."""
import json

import numpy as np


def test_bench_fit_smoke(tmp_path, run_python):
    output = tmp_path / "bench_fit.json"
    printed = run_python("-m", "benchmarks.bench_fit", "--smoke", "--repeats", "1", "--output", output).stdout
    rows = json.loads(output.read_text())["rows"]
    assert len(rows) == 1 and rows[0]["fit_s_per_epoch"] > 0 and np.isfinite(rows[0]["ratio"])
    assert "GPflow loop / fit" in printed
