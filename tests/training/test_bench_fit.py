"""The fit-overhead benchmark runs on a small budget and prints both loops side by side."""
import numpy as np


def test_bench_fit_smoke(capsys):
    from benchmarks import bench_fit

    rows = bench_fit.run(smoke=True, repeats=1)
    assert len(rows) == 1 and rows[0]["fit_s_per_epoch"] > 0 and np.isfinite(rows[0]["ratio"])
    assert "GPflow loop / fit" in capsys.readouterr().out
