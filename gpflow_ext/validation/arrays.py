"""Checks of arrays: tuples with equal first dimension, finite values, inputs ``X [N, D]``."""

from collections.abc import Sequence
from typing import Any, TypeAlias

import numpy as np
import scipy.sparse as sp
import tensorflow as tf

Array: TypeAlias = np.ndarray | sp.csr_matrix


def _first_nonfinite_dense(name: str, array: np.ndarray) -> None:
    if not np.issubdtype(array.dtype, np.floating) and not np.issubdtype(array.dtype, np.complexfloating):
        return
    bad = ~np.isfinite(array)
    if bad.any():
        location = tuple(int(i) for i in np.argwhere(bad)[0])
        value = array[location]
        raise ValueError(
            f"{name} contains {'NaN' if np.isnan(value) else 'inf'} at index {location} "
            f"({int(bad.sum())} non-finite entries in total); fit needs finite data. "
            "Impute or drop these rows (or pass a missing-data mask as a separate array)."
        )


def _first_nonfinite_sparse(name: str, matrix: sp.csr_matrix) -> None:
    if not np.issubdtype(matrix.data.dtype, np.floating):
        return
    bad = ~np.isfinite(matrix.data)
    if bad.any():
        position = int(np.argmax(bad))
        row = int(np.searchsorted(matrix.indptr, position, side="right") - 1)
        col = int(matrix.indices[position])
        value = matrix.data[position]
        raise ValueError(
            f"{name} (sparse) contains {'NaN' if np.isnan(value) else 'inf'} at index ({row}, {col}) "
            f"({int(bad.sum())} non-finite stored entries in total); fit needs finite data."
        )


def check_data(data: Any, name: str = "data") -> tuple[Any, ...]:
    """Validate ``data`` = tuple of arrays with equal first dimension; returns it as a tuple.

    Accepted elements: numpy arrays (or anything ``np.asarray`` takes, e.g. tf tensors) with ndim >= 1,
    and ``scipy.sparse`` matrices (converted to CSR). Floating arrays must be finite. A 1-D floating
    array is rejected because GPflow models expect ``[N, D]`` columns (1-D *integer* arrays, such as
    row indices for models with local parameters, are fine).
    """
    if isinstance(data, (np.ndarray, tf.Tensor)) or sp.issparse(data):
        raise TypeError(
            f"{name} must be a tuple of arrays such as (X, Y), got a single {type(data).__name__}; "
            f"write {name}=(X, Y) (or {name}=(X,) for a single array)"
        )
    if not isinstance(data, (tuple, list)):
        raise TypeError(f"{name} must be a tuple of arrays such as (X, Y), got {type(data).__name__}")
    if len(data) == 0:
        raise ValueError(f"{name} is an empty tuple; expected arrays such as (X, Y)")
    arrays = []
    for i, element in enumerate(data):
        label = f"{name}[{i}]"
        if element is None:
            raise TypeError(f"{label} is None; expected an array")
        if sp.issparse(element):
            if element.ndim != 2:
                raise ValueError(f"{label} must be a 2-D sparse matrix, got ndim={element.ndim}")
            element = sp.csr_matrix(element)
            if not (np.issubdtype(element.dtype, np.number) or element.dtype == bool):
                raise TypeError(f"{label} must hold numbers, got dtype {element.dtype}")
            _first_nonfinite_sparse(label, element)
        else:
            try:
                element = np.asarray(element)
            except Exception as err:  # pragma: no cover - exotic inputs
                raise TypeError(f"{label} could not be converted to an array: {err}") from err
            if element.dtype == object or not (np.issubdtype(element.dtype, np.number) or element.dtype == bool):
                raise TypeError(f"{label} must hold numbers, got dtype {element.dtype}")
            if element.ndim == 0:
                raise ValueError(f"{label} must have a leading data dimension [N, ...], got a scalar")
            if element.ndim == 1 and np.issubdtype(element.dtype, np.floating):
                raise ValueError(
                    f"{label} has shape {element.shape} (1-D); GPflow models expect 2-D [N, D] arrays, "
                    f"e.g. pass y[:, None] for a single output column"
                )
            _first_nonfinite_dense(label, element)
        arrays.append(element)
    lengths = [a.shape[0] for a in arrays]
    if len(set(lengths)) != 1:
        shapes = ", ".join(f"{name}[{i}].shape={tuple(a.shape)}" for i, a in enumerate(arrays))
        raise ValueError(f"the arrays in {name} must have the same number of rows (first dimension); got {shapes}")
    if lengths[0] == 0:
        raise ValueError(f"{name} is empty (0 rows); fit needs at least one data point")
    return tuple(arrays)


def _describe(name: str, part: str | None) -> str:
    return name if part is None else f"{name} ({part})"


def check_data_tuple(
    data: Any, parts: Sequence[str], model_name: str, name: str = "data", optional_tail: int = 0
) -> list[Any]:
    """``data`` must be a tuple/list of ``len(parts)`` arrays (the last ``optional_tail`` of them may be
    left out); returns it as a list. ``parts`` names them, e.g. ``("X", "Y")``."""
    layout = "(" + ", ".join(parts) + ")"
    if isinstance(data, (np.ndarray, tf.Tensor, tf.SparseTensor)) or sp.issparse(data):
        raise TypeError(
            f"{name} must be a tuple {layout} for {model_name}, got a single {type(data).__name__}; "
            f"write {name}={layout}"
        )
    if not isinstance(data, (tuple, list)):
        raise TypeError(f"{name} must be a tuple {layout} for {model_name}, got {type(data).__name__}")
    if not len(parts) - optional_tail <= len(data) <= len(parts):
        raise ValueError(f"{name} must be a tuple {layout} for {model_name}, got {len(data)} array(s)")
    for i, element in enumerate(data):
        if element is None:
            raise TypeError(f"{_describe(f'{name}[{i}]', parts[i])} is None; expected an array")
    return list(data)


def check_same_num_rows(arrays: Sequence[Any], labels: Sequence[str]) -> int:
    """All arrays must have the same number of rows; returns it (the first array's)."""
    lengths = [int(a.shape[0]) for a in arrays]
    for array_label, length in zip(labels[1:], lengths[1:]):
        if length != lengths[0]:
            raise ValueError(
                f"{array_label} has {length} rows but {labels[0]} has {lengths[0]}; "
                "the arrays of data must have the same number of rows (first dimension)"
            )
    return lengths[0]


def _as_numpy(value: Any, name: str) -> Any:
    """numpy array or scipy.sparse CSR from numpy/scipy/tf input; tf.SparseTensor is refused."""
    if isinstance(value, tf.SparseTensor):
        raise TypeError(f"{name} is a tf.SparseTensor; pass a scipy.sparse CSR matrix (or a dense numpy array)")
    if sp.issparse(value):
        if value.ndim != 2:
            raise ValueError(f"{name} must be a 2-D sparse matrix, got ndim={value.ndim}")
        return sp.csr_matrix(value)
    if isinstance(value, tf.Tensor):
        return value.numpy()
    try:
        array = np.asarray(value)
    except Exception as err:  # pragma: no cover - exotic inputs
        raise TypeError(f"{name} could not be converted to an array: {err}") from err
    if array.dtype == object or not (np.issubdtype(array.dtype, np.number) or array.dtype == bool):
        raise TypeError(f"{name} must hold numbers, got dtype {array.dtype}")
    return array


def check_input_matrix(
    X: Any,
    name: str = "X",
    *,
    input_dim: int | None = None,
    allow_sparse: bool = False,
    integer: str = "reject",
    what: str = "inducing inputs",
) -> Array:
    """Inputs ``X [N, D]``: 2-D, non-empty, finite, floating, ``D == input_dim`` (when given).

    :param allow_sparse: accept ``scipy.sparse`` (returned as CSR float64); otherwise a dense array is required.
    :param integer: ``"reject"`` (integer/boolean X raise ``TypeError`` asking for a cast to float: a model
        would otherwise fail inside TensorFlow) or ``"cast"`` (converted to float64, values unchanged).
    :param what: what fixes D, for the message ("X has 4 features but the model's {what} have D=5").
    :return: the dense array (its floating dtype kept) or the CSR matrix.
    """
    X = _as_numpy(X, name)
    if sp.issparse(X):
        if not allow_sparse:
            raise TypeError(
                f"{name} is a scipy.sparse matrix but this model needs a dense array [N, D] "
                f"(sparse inputs need SubspaceInducingPoints); pass {name.split(' ')[0]}.toarray() if it fits in memory"
            )
        if not np.issubdtype(X.dtype, np.floating):
            if integer != "cast":
                raise TypeError(
                    f"{name} has integer dtype {X.dtype}; cast it to float first, e.g. X.astype(np.float64)"
                )
            X = X.astype(np.float64)
    else:
        if not np.issubdtype(X.dtype, np.floating):
            if integer != "cast" or np.issubdtype(X.dtype, np.complexfloating):
                raise TypeError(
                    f"{name} has {'boolean' if X.dtype == bool else 'non-float'} dtype {X.dtype}; "
                    "GPflow inputs are floating point: cast it to float first, e.g. X.astype(np.float64)"
                )
            X = X.astype(np.float64)
        if X.ndim != 2:
            raise ValueError(f"{name} must be a 2-D array [N, D], got shape {X.shape}")
    if X.shape[0] == 0 or X.shape[1] == 0:
        raise ValueError(f"{name} must be non-empty, got shape {X.shape}")
    if sp.issparse(X):
        _first_nonfinite_sparse(name, X)
    else:
        _first_nonfinite_dense(name, X)
    if input_dim is not None and int(X.shape[1]) != int(input_dim):
        raise ValueError(f"{name} has {X.shape[1]} features but the model's {what} have D={int(input_dim)}")
    return X


def check_network_inputs(
    X: Any, name: str = "X", input_shape: Sequence[int] | None = None, integer: str = "keep"
) -> np.ndarray:
    """Inputs of a neural network ``[N, ...]``: a dense numeric array with at least 2 dimensions, non-empty,
    finite, rows of shape ``input_shape`` (when known).

    :param integer: ``"keep"`` returns integer/boolean arrays unchanged, ``"cast"`` converts them to float64
        (values unchanged), for a network that only takes floating inputs.
    """
    if sp.issparse(X):
        raise TypeError(f"{name} must be a dense array [N, ...] for the network, got a scipy.sparse matrix")
    X = _as_numpy(X, name)
    if X.ndim < 2:
        raise ValueError(f"{name} must be at least 2-D [N, ...], got shape {X.shape}")
    if X.shape[0] == 0:
        raise ValueError(f"{name} is empty (N = 0)")
    _first_nonfinite_dense(name, X)
    if input_shape is not None and tuple(X.shape[1:]) != tuple(input_shape):
        raise ValueError(
            f"{name} rows have shape {tuple(X.shape[1:])}, the feature extractor expects {tuple(input_shape)}"
        )
    if integer == "cast" and not np.issubdtype(X.dtype, np.floating):
        X = X.astype(np.float64)
    return X
