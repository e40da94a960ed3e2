"""Preprocessing and baselines of the SV-DKL tables: standardising (one-hot columns kept at 0/1), log(1 + x)
of heavy-tailed columns, the majority-class rate."""

from collections.abc import Sequence

import numpy as np

__all__ = ["standardise", "log1p_features", "majority_rate", "INDICATOR_SCALINGS", "ADULT_HEAVY_TAILED"]

INDICATOR_SCALINGS = ("standardise", "keep")
ADULT_HEAVY_TAILED = ("capital-gain", "capital-loss")


def standardise(train: np.ndarray, *others: np.ndarray, indicators: str = "standardise") -> list[np.ndarray]:
    """Zero-mean unit-variance columns using the training statistics (constant columns left at 0).

    ``indicators="keep"`` leaves the 0/1 indicator columns of the training set (one-hot categories) as they are
    and standardises only the others. Standardising an indicator that is 1 in k of N rows makes it
    about sqrt(N / k) where it is set: about 180 for Adult's rarest native country (1 row in 32 561).
    """
    if indicators not in INDICATOR_SCALINGS:
        raise ValueError(f"indicators must be one of {INDICATOR_SCALINGS}, got {indicators!r}")
    mean = train.mean(0)
    std = train.std(0)
    std[std == 0] = 1.0
    if indicators == "keep":
        binary = np.all((train == 0) | (train == 1), axis=0)  # [D] one-hot / indicator columns
        mean = np.where(binary, 0.0, mean)
        std = np.where(binary, 1.0, std)
    return [(a - mean) / std for a in (train,) + others]


def log1p_features(X: np.ndarray, feature_names: Sequence[str], columns: Sequence[str]) -> np.ndarray:
    """A copy of ``X`` with log(1 + x) applied to the named non-negative columns.

    Adult's capital-gain / capital-loss are 0 for ~92 % of rows and reach 99 999; after standardising, a
    handful of rows sit 13 standard deviations out and dominate the first layer's inputs.
    """
    X = np.array(X, dtype=np.float64, copy=True)
    for name in columns:
        if name not in feature_names:
            raise ValueError(f"columns: {name!r} is not a feature name (have {list(feature_names)[:8]}...)")
        j = list(feature_names).index(name)
        if np.any(X[:, j] < 0):
            raise ValueError(f"columns: {name!r} has negative values; log1p needs x >= 0")
        X[:, j] = np.log1p(X[:, j])
    return X


def majority_rate(y_train: np.ndarray, y_test: np.ndarray) -> float:
    """Test accuracy of always predicting the training set's most frequent class."""
    majority = np.bincount(np.asarray(y_train, dtype=np.int64)).argmax()
    return float(np.mean(np.asarray(y_test) == majority))
