"""The MLGPF recipe's rows checked as given, before the inner cross-validation cuts them into folds: a non-finite
feature is reported at its own row of the training or test rows, not at its row within an inner fold."""

import dataclasses

import numpy as np
import pytest
import scipy.sparse as sp

from gpflow_ext.recipes import mlgpf_config as configs
from gpflow_ext.recipes.mlgpf import run_mlgpf, synthetic_multilabel
from gpflow_ext.recipes.mlgpf_auto import resolve_config


def _data():
    (X, Y), (X_test, Y_test) = synthetic_multilabel(num_rows=120, num_features=20, num_labels=6, seed=0)
    dense = X.toarray() if sp.issparse(X) else np.array(X, dtype=float)
    dense_test = X_test.toarray() if sp.issparse(X_test) else np.array(X_test, dtype=float)
    return (dense, Y), (dense_test, Y_test)


def _config():
    return dataclasses.replace(configs.best_config(rank=10, epochs=1, batch_size=60), ensemble_size=1)


@pytest.mark.parametrize("as_csr", [False, True])
def test_a_nan_in_the_training_rows_is_named_at_its_own_row(as_csr):
    (X, Y), test = _data()
    X[37, 4] = np.nan  # a row that lands in an inner fold's held-out part at another index
    X = sp.csr_matrix(X) if as_csr else X
    with pytest.raises(ValueError, match=r"train\[0\] \(X\).*NaN at index \(37, 4\)"):
        run_mlgpf(_config(), (X, Y), test, progress=False)
    with pytest.raises(ValueError, match=r"^X.*NaN at index \(37, 4\)"):
        resolve_config(_config(), X, Y)


def test_an_inf_in_the_test_rows_is_named_before_any_training():
    train, (X_test, Y_test) = _data()
    X_test[5, 0] = np.inf
    with pytest.raises(ValueError, match=r"test\[0\] \(X\).*inf at index \(5, 0\)"):
        run_mlgpf(_config(), train, (X_test, Y_test), progress=False)
