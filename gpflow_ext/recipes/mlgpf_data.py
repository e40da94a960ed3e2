"""Multi-label data for the MLGPF recipes: :func:`load_xmc` reads a dataset under any of its published
file names; :func:`load_training_file` reads only its training file (for choosing settings);
:func:`synthetic_multilabel` is the no-download tour problem. :func:`load_xmc` and :func:`synthetic_multilabel`
are re-exported by :mod:`gpflow_ext.recipes.mlgpf`. :func:`tuning_subsample` bounds the rows and labels an inner
cross-validation of settings sees."""

from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse

from ..validation import check_positive_int, check_positive_number

__all__ = [
    "SUBSAMPLE_RULE",
    "load_xmc",
    "load_training_file",
    "synthetic_multilabel",
    "fold_multiply_adds",
    "tuning_subsample",
]

#: How :func:`tuning_subsample` bounds the cost of an inner cross-validation (``MLGPFConfig``'s
#: ``tuning_max_labels`` and ``tuning_budget``).
SUBSAMPLE_RULE = (
    "where the rows carry more than {max_labels} labels, the {max_labels} labels with the most positives (the lower "
    "index of equal counts); then, where one inner fold's product of features and weights, n_fit × R × labels "
    "multiply-adds (n_fit = n − floor(n / folds) of n rows, R = min(rank, n_fit, D)), exceeds {budget:.3g}, the most "
    "rows n within it, drawn uniformly without replacement (numpy default_rng(seed)), in their order in the file"
)


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


def fold_multiply_adds(num_rows: int, num_features: int, num_labels: int, *, rank: int, folds: int) -> int:
    """Multiply-adds of one product Φ U [n_fit, R] x [R, K] in the largest of ``folds`` inner folds of
    ``num_rows`` rows, R = min(``rank``, n_fit, ``num_features``): the cost :func:`tuning_subsample` bounds."""
    n_fit = num_rows - num_rows // folds
    return n_fit * min(rank, n_fit, num_features) * num_labels


def tuning_subsample(
    X: Any,
    Y: Any,
    max_labels: int | None = None,
    budget: float | None = None,
    *,
    rank: int = 2000,
    folds: int = 3,
    seed: int = 0,
) -> tuple[Any, Any, dict[str, Any] | None]:
    """``(X, Y, record)``: the rows ``X`` [N, D] and labels ``Y`` [N, K] an inner ``folds``-fold cross-validation
    with a rank-``rank`` basis is run on, cut by :data:`SUBSAMPLE_RULE` to at most ``max_labels`` labels (the most
    frequent) and to the rows whose fold products cost at most ``budget`` multiply-adds (random rows); None leaves
    that side whole. ``record`` is None when nothing is cut, else ``{"rule", "rows", "of_rows", "labels",
    "of_labels", "label_indices", "multiply_adds"}`` (``label_indices``: the kept labels' columns in ``Y``)."""
    max_labels = check_positive_int(max_labels, "max_labels", allow_none=True)
    if budget is not None:
        budget = check_positive_number(budget, "budget", "a positive finite number of multiply-adds or None")
    num_rows, num_labels = Y.shape
    labels = np.arange(num_labels)
    if max_labels is not None and num_labels > max_labels:
        counts = np.asarray(Y.sum(axis=0)).ravel()  # [K]
        labels = np.sort(np.argsort(-counts, kind="stable")[:max_labels])  # the most positives, lower index first

    def cost(n: int) -> int:
        return fold_multiply_adds(n, X.shape[1], len(labels), rank=rank, folds=folds)

    rows = np.arange(num_rows)
    if budget is not None and cost(num_rows) > budget:
        low, high = 1, num_rows  # cost(low) <= budget < cost(high): the largest n within it
        while high - low > 1:
            middle = (low + high) // 2
            low, high = (middle, high) if cost(middle) <= budget else (low, middle)
        rows = np.sort(np.random.default_rng(seed).choice(num_rows, size=low, replace=False))
    if len(rows) == num_rows and len(labels) == num_labels:
        return X, Y, None
    record = {
        "rule": SUBSAMPLE_RULE.format(
            max_labels="K" if max_labels is None else max_labels, budget=float("inf") if budget is None else budget
        ),
        "rows": int(len(rows)),
        "of_rows": int(num_rows),
        "labels": int(len(labels)),
        "of_labels": int(num_labels),
        "label_indices": [int(k) for k in labels],
        "multiply_adds": int(cost(len(rows))),
    }
    return X[rows], Y[rows][:, labels], record
