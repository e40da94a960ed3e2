"""Multi-label data for the MLGPF recipes: :func:`load_xmc` reads a dataset under any of its published
file names; :func:`load_training_file` reads only its training file (for choosing settings);
:func:`synthetic_multilabel` is the no-download tour problem. :func:`load_xmc` and :func:`synthetic_multilabel`
are re-exported by :mod:`gpflow_ext.recipes.mlgpf`."""

from pathlib import Path

import numpy as np
import scipy.sparse

__all__ = ["load_xmc", "load_training_file", "synthetic_multilabel"]


def load_xmc(dataset: str, data_dir: str | Path | None = None, max_rows: int | None = None):
    """``((X_train, Y_train), (X_test, Y_test))`` as CSR matrices through :func:`gpflow_ext.data.load_multilabel`
    (which tries each published file name of ``dataset``); ``max_rows`` keeps only the first rows of each split
    (smoke runs).

    :raises FileNotFoundError: none of the names was found (the message lists every attempt).
    """
    from ..data import load_multilabel

    train, test = load_multilabel(dataset, data_dir)
    assert test is not None  # both splits are read unless train_only
    rows = slice(max_rows or None)
    return (train.X[rows], train.Y[rows]), (test.X[rows], test.Y[rows])


def load_training_file(dataset: str, data_dir: str | Path | None = None, max_rows: int | None = None):
    """``(X_train, Y_train)`` (CSR) of ``dataset`` read from its training file alone: the test file is neither
    opened nor required to exist (:func:`gpflow_ext.data.load_multilabel` with ``train_only=True``). Same names
    and folders as :func:`load_xmc`; ``max_rows`` keeps the first rows.

    :raises FileNotFoundError: no training file under any of the dataset's names."""
    from ..data import load_multilabel

    train, _ = load_multilabel(dataset, data_dir, train_only=True)
    rows = slice(max_rows or None)
    return train.X[rows], train.Y[rows]


def synthetic_multilabel(num_rows: int = 2500, num_features: int = 300, num_labels: int = 50, seed: int = 0):
    """The tour's problem, no download: sparse binary bag-of-words rows (~5 % of the words each) whose 3
    labels are the top scores of a rank-8 linear map of the words, which MLGPF's factor model (linear
    kernel, Φ, b) can express. Returns ``((X, Y) train, (X, Y) test)``, the last fifth of the rows as test."""
    rng = np.random.default_rng(seed)
    X = scipy.sparse.random(num_rows, num_features, density=0.05, format="csr", random_state=seed)
    X.data[:] = 1.0
    scores = X @ rng.normal(size=(num_features, 8)) @ rng.normal(size=(8, num_labels))  # [N, K]
    top = np.argsort(-scores, axis=1)[:, :3]  # [N, 3]
    Y = scipy.sparse.csr_matrix(
        (np.ones(top.size), (np.repeat(np.arange(num_rows), 3), top.ravel())), shape=(num_rows, num_labels)
    )
    split = num_rows * 4 // 5
    return (X[:split], Y[:split]), (X[split:], Y[split:])
