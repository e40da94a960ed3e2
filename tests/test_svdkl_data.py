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


def test_svdkl_protocol_splits_are_seeded_disjoint_and_complete():
    from gpflow_ext.recipes.svdkl_data import fraction_rows, holdout_rows, validation_rows, validation_splits

    train, test = holdout_rows(1000, 0.25, seed=3)
    assert len(test) == 250 and sorted(np.concatenate([train, test]).tolist()) == list(range(1000))
    np.testing.assert_array_equal(holdout_rows(1000, 250, seed=3)[1], test)
    assert len(fraction_rows(train, 0.1)) == 75 and len(fraction_rows(train, 0.0)) == 2
    with pytest.raises(ValueError, match="test_size"):
        holdout_rows(10, 10, seed=0)
    train, valid = validation_rows(100, 30, seed=1)
    assert len(valid) == 30 and not set(train) & set(valid)
    with pytest.raises(ValueError, match="validation_size"):
        validation_rows(100, 100, seed=1)
    y = np.repeat([0, 1], 50)
    folds = list(validation_splits(y, folds=5, seed=0))
    assert [f for f, _, _ in folds] == list(range(5))
    assert sorted(np.concatenate([va for _, _, va in folds]).tolist()) == list(range(100))
    (_, tr, va), = validation_splits(y, folds=1, validation_fraction=0.2, seed=0)
    assert len(va) == 20 and y[va].sum() == 10


def test_svdkl_protocol_names_bad_datasets():
    from gpflow_ext.recipes.svdkl_data import mnist_split, uci_splits

    with pytest.raises(ValueError, match="dataset must be one of"):
        next(uci_splits("iris"))
    with pytest.raises(ValueError, match="dataset must be one of"):
        mnist_split("cifar10")
