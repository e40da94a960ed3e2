"""The fit-overhead benchmark runs on a small budget and prints both loops side by side."""
import importlib.util
from pathlib import Path

import numpy as np


def test_bench_fit_quick(capsys):
    path = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_fit.py"
    spec = importlib.util.spec_from_file_location("bench_fit", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    rows = module.run(quick=True, repeats=1)
    assert len(rows) == 1 and rows[0]["fit_s_per_epoch"] > 0 and np.isfinite(rows[0]["ratio"])
    assert "GPflow loop / fit" in capsys.readouterr().out
