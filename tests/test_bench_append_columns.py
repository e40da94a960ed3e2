"""``benchmarks.append_columns``'s small run: both joins in their own processes, equal on the first rows, with
their seconds, peak memory and ratios."""
import json

import numpy as np


def test_small_run_compares_the_two_joins(run_python, tmp_path):
    output = tmp_path / "run.json"
    run_python("-m", "benchmarks.append_columns", "--rows", 3000, "--nnz-per-row", 5, "--columns", 400,
               "--width", 7, "--repeats", 1, "--output", output)
    result = json.loads(output.read_text())
    assert result["same_first_rows"] is True
    summary = result["summary"]
    assert summary["append_columns"]["nnz"] == summary["scipy.sparse.hstack"]["nnz"] <= 3000 * (5 + 7)
    assert summary["append_columns"]["nnz"] > 3000 * 7  # every block entry stored, and most of the rows' own
    assert np.isfinite(result["seconds_ratio"]) and result["seconds_ratio"] > 0
    assert result["peak_ratio"] is None or result["peak_ratio"] > 0
    assert len(result["runs"]["append_columns"]) == len(result["runs"]["scipy.sparse.hstack"]) == 1
