"""Checks of targets: class indices, 0/1 label matrices, observations with missing entries, row indices."""

from typing import Any, TypeAlias

import numpy as np
import scipy.sparse as sp
import tensorflow as tf
from check_shapes import check_shapes

from .arrays import _as_numpy, check_input_matrix

Array: TypeAlias = np.ndarray | sp.csr_matrix


def check_class_labels(Y: Any, num_classes: int | None, name: str = "Y", num_rows: int | None = None) -> np.ndarray:
    """Class indices ``[N]`` or ``[N, 1]`` with integer values in ``[0, num_classes)``; returns int64 ``[N]``.

    Values such as 1.5 (which a cast would silently truncate), -1 or ``>= num_classes`` are refused,
    naming the first bad row. ``num_classes=None`` (unknown) checks only for non-negative integers.
    """
    if sp.issparse(Y):
        raise TypeError(f"{name} must be a dense array of class indices [N] or [N, 1], got a scipy.sparse matrix")
    Y = _as_numpy(Y, name)
    if Y.ndim == 2 and Y.shape[1] == 1:
        Y = Y[:, 0]
    if Y.ndim != 1:
        raise ValueError(f"{name} must be class indices of shape [N] or [N, 1], got {Y.shape}")
    if num_rows is not None and Y.shape[0] != num_rows:
        raise ValueError(f"{name} has {Y.shape[0]} rows but X has {num_rows}")
    if Y.shape[0] == 0:
        raise ValueError(f"{name} is empty (N = 0)")
    expected = f"[0, {num_classes})" if num_classes is not None else ">= 0"
    if np.issubdtype(Y.dtype, np.floating):
        finite = np.isfinite(Y)
        if not finite.all():
            row = int(np.argmin(finite))
            raise ValueError(f"{name} must hold class indices in {expected}, got {Y[row]} at row {row}")
        fractional = Y != np.round(Y)
        if fractional.any():
            row = int(np.argmax(fractional))
            raise ValueError(
                f"{name} must hold integer class indices in {expected}, got {Y[row]!r} at row {row} "
                "(a cast would truncate it)"
            )
    elif Y.dtype == bool or not np.issubdtype(Y.dtype, np.integer):
        raise TypeError(f"{name} must hold integer class indices, got dtype {Y.dtype}")
    outside = (Y < 0) if num_classes is None else (Y < 0) | (Y >= num_classes)
    if outside.any():
        row = int(np.argmax(outside))
        raise ValueError(
            f"{name}: labels must be in {expected}, got {Y[row]} at row {row} (range [{Y.min()}, {Y.max()}])"
        )
    return Y.astype(np.int64)


def check_multilabel_labels(
    Y: Any, num_labels: int | None = None, num_rows: int | None = None, name: str = "Y"
) -> sp.csr_matrix:
    """Multi-label targets as a 0/1 CSR matrix ``[N, K]`` (float64, sorted indices) from a sparse or dense
    0/1 matrix or a list of label-id lists (``num_labels`` then required).

    :raises ValueError: label index < 0 or >= ``num_labels``, values other than 0/1 (e.g. 0.5, naming the
        first one), NaN/inf, ``K != num_labels``, ``N != num_rows``.
    """
    if isinstance(Y, (list, tuple)) and (len(Y) == 0 or not np.isscalar(Y[0])):
        if num_labels is None:
            raise ValueError(f"num_labels is required when {name} is given as lists of label ids")
        row_parts: list[np.ndarray] = []
        col_parts: list[np.ndarray] = []
        for i, row in enumerate(Y):
            ids = np.asarray(list(row), dtype=np.int64).ravel()
            row_parts.append(np.full(ids.size, i, dtype=np.int64))
            col_parts.append(ids)
        rows = np.concatenate(row_parts) if row_parts else np.zeros(0, np.int64)
        cols = np.concatenate(col_parts) if col_parts else np.zeros(0, np.int64)
        if cols.size and (cols.min() < 0 or cols.max() >= num_labels):
            bad = cols.max() if cols.max() >= num_labels else cols.min()
            raise ValueError(f"{name}: label index {bad} out of range [0, num_labels={num_labels})")
        Y = sp.csr_matrix((np.ones(cols.size), (rows, cols)), shape=(len(Y), num_labels))
        Y.sum_duplicates()
        Y.data[:] = 1.0
    elif sp.issparse(Y):
        if not (np.issubdtype(Y.dtype, np.number) or Y.dtype == bool):
            raise TypeError(f"{name} must be numeric 0/1, got dtype {Y.dtype}")
        Y = sp.csr_matrix(Y, dtype=np.float64)
        Y.sum_duplicates()
    else:
        Y = _as_numpy(Y, name)
        if Y.ndim != 2:
            raise ValueError(
                f"{name} must be a 2-D label matrix [N, K] or a list of label-id lists, got shape {Y.shape}"
            )
        Y = sp.csr_matrix(Y.astype(np.float64))
    if not np.all(np.isfinite(Y.data)):
        raise ValueError(f"{name} contains NaN or inf")
    Y.eliminate_zeros()
    if Y.nnz and not np.all(Y.data == 1.0):
        position = int(np.argmax(Y.data != 1.0))
        row = int(np.searchsorted(Y.indptr, position, side="right") - 1)
        raise ValueError(
            f"{name} must hold 0/1 label indicators (found values other than 0 and 1: "
            f"{Y.data[position]!r} at row {row}, column {int(Y.indices[position])})"
        )
    if num_labels is not None and Y.shape[1] != num_labels:
        raise ValueError(f"{name} has {Y.shape[1]} label columns, expected num_labels={num_labels}")
    if num_rows is not None and Y.shape[0] != num_rows:
        raise ValueError(f"{name} has {Y.shape[0]} rows but X has {num_rows}")
    Y.sort_indices()
    return Y


def check_observations(
    Y: Any,
    mask: Any = None,
    *,
    name: str = "data",
    num_outputs: int | None = None,
    allow_empty_rows: bool = False,
    mask_name: str = "mask",
) -> tuple[np.ndarray, np.ndarray]:
    """Turn observations into (values [N, D] float64 with 0 where missing, mask [N, D] bool).

    ``Y`` is a 2-D array with NaN for missing entries, or a 2-D array plus a boolean/0-1 ``mask``
    (True = observed), or a ``scipy.sparse`` matrix whose stored entries are the observed ones. Raises
    ValueError naming the argument for: wrong rank or width (``num_outputs``), empty data, NaN at an
    entry the mask says is observed, ±inf, a mask of the wrong shape or values, and rows with nothing
    observed (unless ``allow_empty_rows``).
    """
    if sp.issparse(Y):
        if mask is not None:
            raise ValueError(f"{name}: a scipy.sparse matrix carries its own mask (its stored entries); pass mask=None")
        Y = sp.csr_matrix(Y)
        Y.sum_duplicates()
        values = np.zeros(Y.shape, dtype=np.float64)
        observed = np.zeros(Y.shape, dtype=bool)
        rows = np.repeat(np.arange(Y.shape[0]), np.diff(Y.indptr))
        values[rows, Y.indices] = Y.data
        observed[rows, Y.indices] = True
        Y, mask = values, observed
        if not np.all(np.isfinite(Y)):
            raise ValueError(f"{name}: stored entries of the sparse matrix must be finite (NaN/inf found)")
    if isinstance(Y, tf.Tensor):
        Y = Y.numpy()
    try:
        Y = np.asarray(Y, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise TypeError(f"{name} must be a numeric 2-D array, got {type(Y).__name__}") from err
    if Y.ndim != 2:
        raise ValueError(f"{name} must be 2-D [N, D], got shape {Y.shape}")
    if Y.shape[0] == 0 or Y.shape[1] == 0:
        raise ValueError(f"{name} is empty: shape {Y.shape}")
    if num_outputs is not None and Y.shape[1] != num_outputs:
        raise ValueError(f"{name} must have width D={num_outputs} (the model's outputs), got {Y.shape[1]}")
    if mask is None:
        mask = ~np.isnan(Y)
    else:
        mask = np.asarray(mask.numpy() if isinstance(mask, tf.Tensor) else mask)
        if mask.shape != Y.shape:
            raise ValueError(f"{mask_name} must have the shape of {name} {Y.shape}, got {mask.shape}")
        if mask.dtype != bool:
            if not np.all(np.isin(mask, (0, 1))):
                raise ValueError(f"{mask_name} must be boolean or 0/1 (1 = observed)")
            mask = mask.astype(bool)
        if np.any(np.isnan(Y[mask])):
            bad = np.argwhere(np.isnan(Y) & mask)[0]
            raise ValueError(
                f"{name} has NaN at observed entry {tuple(int(i) for i in bad)}: with an explicit mask, "
                f"NaN is only allowed where {mask_name} is False (or pass mask=None to read NaN as missing)"
            )
    if np.any(np.isinf(Y[mask])):
        bad = np.argwhere(np.isinf(Y) & mask)[0]
        raise ValueError(f"{name} has an infinite value at observed entry {tuple(int(i) for i in bad)}")
    empty_rows = np.flatnonzero(~mask.any(axis=1))
    if empty_rows.size and not allow_empty_rows:
        raise ValueError(
            f"{name}: {empty_rows.size} row(s) have no observed entry (first: {empty_rows[:5].tolist()}); "
            "a row with nothing observed carries no information about its latent point - drop it"
        )
    values = np.where(mask, Y, 0.0)
    return values, mask


def check_row_index(rows: Any, num_data: int, name: str = "row_index", num_rows: int | None = None) -> np.ndarray:
    """Row indices ``[N]`` (or ``[N, 1]``) of local parameters: integers in ``[0, num_data)``; returns int64 ``[N]``."""
    rows = _as_numpy(rows, name)
    if sp.issparse(rows):
        raise TypeError(f"{name} must be a dense 1-D integer array, got a scipy.sparse matrix")
    if rows.ndim == 2 and rows.shape[1] == 1:
        rows = rows[:, 0]
    if rows.ndim != 1:
        raise ValueError(f"{name} must be a 1-D array of row indices [N], got shape {rows.shape}")
    if np.issubdtype(rows.dtype, np.floating) or rows.dtype == bool or not np.issubdtype(rows.dtype, np.integer):
        raise TypeError(f"{name} must hold integer row indices in [0, num_data={num_data}), got dtype {rows.dtype}")
    if num_rows is not None and rows.shape[0] != num_rows:
        raise ValueError(f"{name} has {rows.shape[0]} entries but the data have {num_rows} rows")
    outside = (rows < 0) | (rows >= num_data)
    if outside.any():
        position = int(np.argmax(outside))
        raise ValueError(
            f"{name} must hold row indices in [0, num_data={num_data}) (one per training row of the model), "
            f"got {rows[position]} at position {position}"
        )
    return rows.astype(np.int64)


def labels_to_csr(Y: Any, num_labels: int | None = None, num_rows: int | None = None) -> sp.csr_matrix:
    """Labels as a 0/1 CSR matrix ``[N, K]`` from a sparse/dense 0/1 matrix or a list of label-id lists
    (:func:`check_multilabel_labels` with ``name="Y"``).

    :raises ValueError: label index < 0 or >= ``num_labels``, values other than 0/1, NaN, wrong
        number of rows.
    """
    return check_multilabel_labels(Y, num_labels=num_labels, num_rows=num_rows, name="Y")


@check_shapes(
    "return[0]: [N, D]",
    "return[1]: [N, K]",
)
def check_multilabel_data(
    X: Any,
    Y: Any,
    num_labels: int | None = None,
    input_dim: int | None = None,
    names: tuple[str, str] = ("X", "Y"),
) -> tuple[Array, sp.csr_matrix]:
    """Validate and normalise multi-label data ``(X, Y)``: X dense array or CSR ``[N, D]`` (finite, non-empty,
    ``D == input_dim``; returned as float64), Y 0/1 CSR ``[N, K]`` (label ids < ``num_labels``; from a
    matrix or lists of label ids, which is why only X's shape is declared). ``names`` name the two
    arrays in the messages.

    :raises TypeError: X is a TensorFlow tensor.
    :raises ValueError: as :func:`~gpflow_ext.validation.check_input_matrix` and :func:`check_multilabel_labels`.
    """
    if isinstance(X, (tf.Tensor, tf.SparseTensor)):
        raise TypeError(f"{names[0]} must be a numpy array or scipy.sparse matrix (convert tensors with .numpy())")
    X = check_input_matrix(X, names[0], input_dim=input_dim, allow_sparse=True, integer="cast")
    if sp.issparse(X):
        X = sp.csr_matrix(X, dtype=np.float64)
    else:
        X = X.astype(np.float64, copy=False)
    Y = check_multilabel_labels(Y, num_labels=num_labels, num_rows=X.shape[0], name=names[1])
    return X, Y
