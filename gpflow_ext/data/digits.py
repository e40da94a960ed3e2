"""scikit-learn's bundled 8x8 digits: the no-download default dataset (the one loader of the digits)."""

from typing import NamedTuple

import numpy as np


class ClassificationSplit(NamedTuple):
    X_train: np.ndarray  # [N_train, D] float64
    y_train: np.ndarray  # [N_train] int64
    X_test: np.ndarray  # [N_test, D] float64
    y_test: np.ndarray  # [N_test] int64


def load_digits(test_fraction: float = 0.25, seed: int = 0, scale: bool = True) -> ClassificationSplit:
    """The 1797 8x8 digits shipped with scikit-learn, split into train/test (stratified, seeded).

    :param test_fraction: share of the points held out, in [0, 1); 0 gives every digit as training rows, in the
        file's order (and empty test arrays).
    :param scale: divide the 0..16 pixel counts by 16 so features lie in [0, 1].
    """
    from sklearn.datasets import load_digits as sklearn_load_digits
    from sklearn.model_selection import train_test_split

    if isinstance(test_fraction, bool) or not isinstance(test_fraction, (int, float)) or not 0.0 <= test_fraction < 1.0:
        raise ValueError(f"test_fraction must lie in [0, 1), got {test_fraction!r}")
    bunch = sklearn_load_digits()
    X = bunch.data.astype(np.float64) / (16.0 if scale else 1.0)  # [1797, 64]
    y = bunch.target.astype(np.int64)  # [1797]
    if test_fraction == 0:
        return ClassificationSplit(X, y, X[:0], y[:0])
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=test_fraction, random_state=seed, stratify=y)
    return ClassificationSplit(X_train, y_train, X_test, y_test)
