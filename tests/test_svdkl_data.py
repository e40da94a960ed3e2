"""The Covertype loader on small files in the published format (Diabetes 130-US: tests/data/test_diabetes.py)."""
import gzip

import numpy as np
import pytest

from gpflow_ext.data import load_covtype, read_covtype

def test_read_covtype(tmp_path):
    rows = np.zeros((3, 55), dtype=int)
    rows[:, 0] = [2596, 2590, 2804]
    rows[:, -1] = [5, 2, 7]
    path = tmp_path / "covtype.data.gz"
    with gzip.open(path, "wt") as f:
        f.write("\n".join(",".join(map(str, r)) for r in rows) + "\n")
    data = load_covtype(tmp_path)
    np.testing.assert_array_equal(data.y, [4, 1, 6])
    assert data.X.shape == (3, 54) and data.X[2, 0] == 2804
    (tmp_path / "bad.csv").write_text("1,2,3\n")
    with pytest.raises(ValueError, match="55"):
        read_covtype(tmp_path / "bad.csv")
    with pytest.raises(FileNotFoundError):
        load_covtype(tmp_path / "nowhere")
