"""Input transforms for sparse bag-of-words features: L2 row normalisation and TF-IDF.

A transform is fitted on the training inputs only and then applied to every split, so no statistic of
the test rows leaks into training:

>>> import numpy as np, scipy.sparse as sp
>>> from gpflow_ext.data.transforms import TfidfRows
>>> X = sp.csr_matrix(np.array([[1.0, 1.0, 0.0], [1.0, 0.0, 1.0]]))
>>> transform = TfidfRows().fit(X)
>>> np.round(np.asarray(sp.linalg.norm(transform(X), axis=1)), 6).tolist()
[1.0, 1.0]
"""

from typing import Any, TypeAlias

import numpy as np
import scipy.sparse

from ..validation import check_input_matrix

__all__ = ["l2_normalise_rows", "TfidfRows"]

Matrix: TypeAlias = np.ndarray | scipy.sparse.csr_matrix


def l2_normalise_rows(X: Any) -> Matrix:
    """Each row of X [N, D] (dense or sparse) divided by its Euclidean norm (all-zero rows stay zero)."""
    X = check_input_matrix(X, "X", allow_sparse=True, integer="cast", what="inputs")
    if scipy.sparse.issparse(X):
        X = scipy.sparse.csr_matrix(X, dtype=np.float64)
        norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())  # [N]
        norms[norms == 0.0] = 1.0
        return scipy.sparse.csr_matrix(scipy.sparse.diags(1.0 / norms) @ X)
    X = np.asarray(X, dtype=np.float64)
    norms = np.linalg.norm(X, axis=1, keepdims=True)  # [N, 1]
    return X / np.where(norms == 0.0, 1.0, norms)


class TfidfRows:
    """TF-IDF weighting then L2 row normalisation, ``x_d ← x_d · idf_d`` with the smoothed
    ``idf_d = log((1 + N) / (1 + df_d)) + 1`` (``df_d``: training rows where feature d is non-zero; the
    scikit-learn convention), then ``x ← x / ‖x‖``.

    ``fit(X_train)`` learns the IDF from the training rows and returns the fitted transform; calling it
    on any split applies the same weights. Calling an unfitted transform raises.
    """

    __name__ = "tfidf_rows"

    def __init__(self) -> None:
        self.idf: np.ndarray | None = None  # [D]

    def fit(self, X: Any) -> "TfidfRows":
        """Learn the IDF of each feature from the training inputs X [N, D]; returns ``self``."""
        X = check_input_matrix(X, "X", allow_sparse=True, integer="cast", what="inputs")
        nonzero = X != 0
        df = np.asarray(nonzero.sum(axis=0)).ravel()  # [D]
        self.idf = np.log((1.0 + X.shape[0]) / (1.0 + df)) + 1.0  # [D]
        return self

    def __call__(self, X: Any) -> Matrix:
        if self.idf is None:
            raise ValueError("TfidfRows is not fitted: call fit(X_train) first")
        X = check_input_matrix(X, "X", input_dim=self.idf.shape[0], allow_sparse=True, integer="cast", what="inputs")
        if scipy.sparse.issparse(X):
            weighted = scipy.sparse.csr_matrix(X, dtype=np.float64) @ scipy.sparse.diags(self.idf)  # [N, D]
        else:
            weighted = np.asarray(X, dtype=np.float64) * self.idf  # [N, D]
        return l2_normalise_rows(weighted)
