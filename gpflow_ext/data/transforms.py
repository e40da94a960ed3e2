"""Input transforms for sparse bag-of-words features: L2 row normalisation, TF-IDF, the rows as given, and
random Fourier features appended to the rows.

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

__all__ = [
    "l2_normalise_rows",
    "append_columns",
    "L2Rows",
    "TfidfRows",
    "RowsAsGiven",
    "ROW_TRANSFORMS",
    "row_transform_names",
    "WithRandomFeatures",
    "median_distance",
]

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


class L2Rows:
    """L2 row normalisation alone, ``x ← x / ‖x‖``: no feature weights, so ``fit`` learns nothing and returns the
    transform (the same interface as :class:`TfidfRows`)."""

    __name__ = "l2_rows"

    def fit(self, X: Any) -> "L2Rows":
        check_input_matrix(X, "X", allow_sparse=True, integer="cast", what="inputs")
        return self

    def __call__(self, X: Any) -> Matrix:
        return l2_normalise_rows(X)


class RowsAsGiven:
    """The rows as read: no feature weights and no normalisation, so a row's length (e.g. how many words it has)
    enters its scores, where :class:`L2Rows` and :class:`TfidfRows` remove it. The linear kernel is then x·x' on the
    features themselves, and the prior variance σ² is on their own scale. ``fit`` checks the inputs and returns the
    transform (the same interface as :class:`TfidfRows`); calling it returns the checked rows (CSR or dense
    float64)."""

    __name__ = "rows_as_given"

    def fit(self, X: Any) -> "RowsAsGiven":
        check_input_matrix(X, "X", allow_sparse=True, integer="cast", what="inputs")
        return self

    def __call__(self, X: Any) -> Matrix:
        X = check_input_matrix(X, "X", allow_sparse=True, integer="cast", what="inputs")
        if scipy.sparse.issparse(X):
            return scipy.sparse.csr_matrix(X, dtype=np.float64)
        return np.asarray(X, dtype=np.float64)


#: Row transforms by name (``MLGPFConfig.input_transform_choices``): name -> the class of a new, unfitted transform.
ROW_TRANSFORMS: dict[str, type] = {"tfidf": TfidfRows, "l2": L2Rows, "none": RowsAsGiven}


def append_columns(rows: Any, block: np.ndarray, chunk_rows: int = 65_536) -> Matrix:
    """The rows [N, D] with the dense columns ``block`` [N, F] after them, [N, D + F]: dense rows by ``np.hstack``
    (float64); CSR rows stay CSR, written straight into the joined arrays ``chunk_rows`` rows at a time (each row's own
    entries, then its F block entries, every one stored), with none of the COO copies of ``scipy.sparse.hstack``:
    at a million rows the joined matrix is then held once."""
    if not scipy.sparse.issparse(rows):
        return np.hstack([np.asarray(rows, dtype=np.float64), block])
    rows = scipy.sparse.csr_matrix(rows)
    (num_rows, num_columns), width = rows.shape, block.shape[1]
    if block.shape[0] != num_rows:
        raise ValueError(f"block has {block.shape[0]} rows; the rows it is appended to have {num_rows}")
    own = np.diff(rows.indptr).astype(np.int64)  # [N] stored entries per row
    total = int(own.sum()) + num_rows * width
    index_dtype = np.int32 if max(total, num_columns + width) < np.iinfo(np.int32).max else np.int64
    indptr: np.ndarray = np.zeros(num_rows + 1, dtype=index_dtype)  # [N + 1]
    np.cumsum(own + width, out=indptr[1:])
    data = np.empty(total, dtype=np.result_type(rows.dtype, block.dtype))  # [nnz]
    indices = np.empty(total, dtype=index_dtype)  # [nnz]
    block_columns = np.arange(num_columns, num_columns + width)  # [F]
    for start in range(0, num_rows, chunk_rows):
        stop = min(start + chunk_rows, num_rows)
        first, last = rows.indptr[start], rows.indptr[stop]
        # row i's own entries move by F·i (the blocks of the rows before it); its block fills the last F places
        moved = np.arange(first, last) + width * np.repeat(np.arange(start, stop), own[start:stop])  # [nnz_chunk]
        data[moved], indices[moved] = rows.data[first:last], rows.indices[first:last]
        places = (indptr[start + 1 : stop + 1] - width)[:, None] + np.arange(width)  # [n, F]
        data[places], indices[places] = block[start:stop], block_columns
    return scipy.sparse.csr_matrix((data, indices, indptr), shape=(num_rows, num_columns + width))


def row_transform_names(names: Any, name: str = "input_transform_choices") -> tuple[str, ...]:
    """``names`` checked to be a non-empty sequence of distinct :data:`ROW_TRANSFORMS` names, as a tuple."""
    if isinstance(names, str) or not hasattr(names, "__iter__"):
        raise TypeError(f"{name} must be a sequence of names from {sorted(ROW_TRANSFORMS)}, got {names!r}")
    names = tuple(names)
    unknown = [n for n in names if n not in ROW_TRANSFORMS]
    if not names or unknown or len(set(names)) != len(names):
        raise ValueError(f"{name} must list distinct names from {sorted(ROW_TRANSFORMS)}, got {names!r}")
    return names


def median_distance(X: Any, rng: np.random.Generator, sample: int = 1000) -> float:
    """Median Euclidean distance between pairs of ``sample`` random rows of X [N, D] (dense or CSR; 1.0 if
    it is 0): the median heuristic for a squared-exponential lengthscale."""
    rows = rng.choice(X.shape[0], size=min(sample, X.shape[0]), replace=False)
    sub = X[rows]
    inner = sub @ sub.T  # [S, S]
    inner = inner.toarray() if scipy.sparse.issparse(inner) else np.asarray(inner)
    sq = np.diag(inner).copy()  # [S]
    dist2 = np.maximum(sq[:, None] + sq[None, :] - 2.0 * inner, 0.0)  # [S, S]
    upper = dist2[np.triu_indices(len(rows), k=1)]
    median = float(np.sqrt(np.median(upper))) if upper.size else 1.0
    return median if median > 0 else 1.0


class WithRandomFeatures:
    """The rows of a base transform with F random Fourier features of a squared-exponential kernel appended,
    ``x ← [x, φ(x)]`` with ``φ(x) = sqrt(2/F) cos(Wᵀx + c)``, ``W`` [D, F] ~ N(0, 1/ℓ²), ``c`` ~ U(0, 2π)
    (Rahimi and Recht, 2007). A linear kernel on the joined rows is ``x·x' + φ(x)·φ(x')``, whose second term
    is a Monte Carlo estimate of ``exp(−‖x − x'‖² / (2ℓ²))``: a linear model on them is the linear model plus
    a non-linear part of equal prior variance per row (both terms are 1 at x = x' on unit-norm rows).

    ``fit(X_train)`` fits the base transform, sets ℓ to the median distance between training rows
    (:func:`median_distance`, at most 1,000 rows) unless ``lengthscale`` is given, draws ``W`` and ``c`` from
    ``seed``, and returns the fitted transform. Sparse rows stay CSR (the features are a dense block of F columns
    in it).

    :param base: the transform applied first (e.g. :class:`TfidfRows`), or None for the rows as given.
    :param num_features: F, the number of random features appended.
    :param lengthscale: ℓ; None chooses it by the median heuristic on the training rows.
    :param seed: seeds the row sample of the heuristic and the draws of ``W`` and ``c``.
    """

    def __init__(
        self, base: Any = None, num_features: int = 1000, lengthscale: float | None = None, seed: int = 0
    ) -> None:
        if base is not None and not callable(base):
            raise TypeError(f"base must be a callable transform or None, got {type(base).__name__}")
        if isinstance(num_features, bool) or not isinstance(num_features, (int, np.integer)) or num_features < 1:
            raise ValueError(f"num_features must be a positive int, got {num_features!r}")
        if lengthscale is not None and not (np.isfinite(lengthscale) and lengthscale > 0):
            raise ValueError(f"lengthscale must be a positive finite float or None, got {lengthscale!r}")
        self.base = base
        self.num_features = int(num_features)
        self.lengthscale = lengthscale
        self.seed = seed
        self.__name__ = f"{getattr(base, '__name__', 'rows')}+rff{self.num_features}"
        self.fitted_base: Any = None
        self.weights: np.ndarray | None = None  # [D, F]
        self.phases: np.ndarray | None = None  # [F]
        self.fitted_lengthscale: float | None = None

    def _base(self, transform: Any, X: Any) -> Any:
        return X if transform is None else transform(X)

    def fit(self, X: Any) -> "WithRandomFeatures":
        """Fit the base transform, ℓ and the random features on the training inputs X [N, D]; returns ``self``."""
        X = check_input_matrix(X, "X", allow_sparse=True, integer="cast", what="inputs")
        base = self.base.fit(X) if hasattr(self.base, "fit") else self.base
        rows = self._base(base, X)  # [N, D']
        rng = np.random.default_rng(self.seed)
        lengthscale = self.lengthscale if self.lengthscale is not None else median_distance(rows, rng)
        self.fitted_base, self.fitted_lengthscale = base, float(lengthscale)
        self.weights = rng.standard_normal((rows.shape[1], self.num_features)) / lengthscale  # [D', F]
        self.phases = rng.uniform(0.0, 2.0 * np.pi, self.num_features)  # [F]
        return self

    def features(self, rows: Any) -> np.ndarray:
        """φ of rows already through the base transform [N, D'] -> [N, F]."""
        if self.weights is None or self.phases is None:
            raise ValueError("WithRandomFeatures is not fitted: call fit(X_train) first")
        projected = np.asarray(rows @ self.weights)  # [N, F]
        return np.sqrt(2.0 / self.num_features) * np.cos(projected + self.phases)  # [N, F]

    def __call__(self, X: Any) -> Matrix:
        if self.weights is None:
            raise ValueError("WithRandomFeatures is not fitted: call fit(X_train) first")
        X = check_input_matrix(X, "X", allow_sparse=True, integer="cast", what="inputs")
        rows = self._base(self.fitted_base, X)  # [N, D']
        if rows.shape[1] != self.weights.shape[0]:
            raise ValueError(
                f"X has {rows.shape[1]} columns after the base transform; fitted on {self.weights.shape[0]}"
            )
        return append_columns(rows, self.features(rows))  # [N, D' + F]
