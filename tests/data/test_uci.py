"""UCI Adult and Connect-4 readers."""
import gzip

import numpy as np
import pytest

from gpflow_ext.data import (
    DataFormatError,
    connect4_one_hot,
    load_adult,
    load_connect4,
    read_adult,
    read_connect4_pmlb,
    read_connect4_uci,
)
from gpflow_ext.data.uci import ADULT_CATEGORIES, ADULT_COLUMNS


def test_adult_counts_and_missing_policies(dataset_path):
    folder = dataset_path("adult")
    train, test = load_adult(folder, download=False)
    assert train.X.shape == (32561, 108) and test.X.shape == (16281, 108)
    np.testing.assert_array_equal(np.bincount(train.y), [24720, 7841])
    np.testing.assert_array_equal(np.bincount(test.y), [12435, 3846])
    missing_columns = [i for i, name in enumerate(train.feature_names) if name.endswith("=?")]
    assert len(missing_columns) == 3
    assert (train.X[:, missing_columns].sum(axis=1) > 0).sum() == 2399
    assert (test.X[:, missing_columns].sum(axis=1) > 0).sum() == 1221
    # each categorical attribute is one-hot: exactly one 1 per row and attribute
    for column in ADULT_CATEGORIES:
        block = [i for i, name in enumerate(train.feature_names) if name.startswith(column + "=")]
        np.testing.assert_array_equal(train.X[:, block].sum(axis=1), 1.0)
    assert train.X[0, train.feature_names.index("age")] == 39 and train.X[0, train.feature_names.index("fnlwgt")] == 77516
    dropped_train, dropped_test = load_adult(folder, missing="drop", download=False)
    assert dropped_train.X.shape == (32561 - 2399, 105) and dropped_test.X.shape == (16281 - 1221, 105)


def test_adult_test_comment_line_both_forms(tmp_path, dataset_path):
    text = gzip.decompress(dataset_path("adult", "adult.test.gz").read_bytes()).decode()
    assert text.startswith("# 1x3 Cross validator\n")
    uci_form = tmp_path / "adult.test"
    uci_form.write_text("|1x3 Cross validator\n" + text.split("\n", 1)[1] + "\n")
    a, b = read_adult(uci_form), read_adult(dataset_path("adult", "adult.test.gz"))
    np.testing.assert_array_equal(a.X, b.X)
    np.testing.assert_array_equal(a.y, b.y)


def test_adult_bad_input(tmp_path):
    row = ("39, State-gov, 77516, Bachelors, 13, Never-married, Adm-clerical, Not-in-family, White, Male, 2174, 0, 40, "
           "United-States, <=50K")
    path = tmp_path / "adult.data"
    for text, message in [
        (row.replace("<=50K", "maybe"), "class must be"),
        (row.replace("State-gov", "Space-agency"), "unknown workclass category 'Space-agency'"),
        (row.replace("White", "?"), "'\\?' \\(missing\\) in race"),
        (row.replace("77516", "?"), "fnlwgt must be a number"),
        (row.rsplit(",", 1)[0], "expected 15 comma-separated fields"),
        ("# only a comment\n", "no Adult data rows"),
    ]:
        path.write_text(text + "\n")
        with pytest.raises(DataFormatError, match=message):
            read_adult(path)
    with pytest.raises(ValueError, match="missing must be one of"):
        read_adult(path, missing="mean")
    assert len(ADULT_COLUMNS) == 14


def test_connect4_uci_text_equals_pmlb(dataset_path):
    folder = dataset_path("connect-4")
    pmlb = load_connect4(folder, source="pmlb", download=False)
    uci = load_connect4(folder, source="uci", download=False)
    assert pmlb.X.shape == (67557, 42) and pmlb.X.dtype == np.int8
    np.testing.assert_array_equal(pmlb.X, uci.X)
    np.testing.assert_array_equal(pmlb.y, uci.y)
    counts = dict(zip(pmlb.class_names, np.bincount(pmlb.y)))
    assert counts == {"win": 44473, "loss": 16635, "draw": 6449}
    # UCI's first row: b,b,b,b,b,b,b,b,b,b,b,b,x,o,b,b,b,b,x,o,x,o,x,o,b,... win
    first = "b,b,b,b,b,b,b,b,b,b,b,b,x,o,b,b,b,b,x,o,x,o,x,o".split(",") + ["b"] * 18
    np.testing.assert_array_equal(uci.X[0], ["box".index(c) for c in first])
    assert uci.class_names[uci.y[0]] == "win"
    one_hot = connect4_one_hot(pmlb.X[:5])
    assert one_hot.shape == (5, 126)
    np.testing.assert_array_equal(one_hot.reshape(5, 42, 3).argmax(-1), pmlb.X[:5])


def test_connect4_bad_input(tmp_path):
    uci = tmp_path / "connect-4.data"
    uci.write_text(",".join(["b"] * 42) + ",tie\n")
    with pytest.raises(DataFormatError, match="win/loss/draw"):
        read_connect4_uci(uci)
    uci.write_text(",".join(["b"] * 41) + ",win\n")
    with pytest.raises(DataFormatError, match="expected 43 comma-separated fields"):
        read_connect4_uci(uci)
    pmlb = tmp_path / "connect_4.tsv"
    pmlb.write_text("x1\tx2\ttarget\n0\t1\t2\n")
    with pytest.raises(DataFormatError, match="header must be the 42 cells"):
        read_connect4_pmlb(pmlb)
    with pytest.raises(ValueError, match="shape \\[N, 42\\]"):
        connect4_one_hot(np.zeros((2, 41), dtype=int))
