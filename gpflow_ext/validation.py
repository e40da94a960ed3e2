"""One set of argument and data checks for gpflow_ext, run at the API boundary before any tf.function.

Every problem raises a plain Python error (``TypeError`` for a wrong kind of value, ``ValueError``
for a wrong value) whose message names the argument and says what was expected, so that a user
never has to read a TensorFlow traceback from inside a traced graph.

* Arguments: :func:`check_positive_int`, :func:`check_positive_number`, :func:`check_positive_values`,
  :func:`check_choice`, :func:`check_model`.
* Arrays: :func:`check_data` (a tuple of arrays with equal first dimension), :func:`check_input_matrix`
  (inputs ``X [N, D]``), :func:`check_class_labels` (class indices), :func:`check_multilabel_labels`
  (0/1 label matrices), :func:`check_observations` (values with missing entries and masks),
  :func:`check_row_index` (row indices of local parameters).
* The data-check hook :func:`check_training_data` (``functools.singledispatch``): what a training loop
  calls on ``(model, data)`` before anything is traced. It returns the data as a tuple of numpy /
  ``scipy.sparse`` arrays, normalised the way the model's ``training_loss`` expects, or raises naming
  the offending array (``data[1] (Y)``). The default is :func:`check_data`; GPflow's ``SVGP`` is
  registered here, gpflow_ext's models register next to their classes.

This module sits below every other gpflow_ext module: it imports only numpy, scipy, TensorFlow and
GPflow (gpflow_ext classes are looked up lazily, when a check runs).
"""
import functools
import numbers
from typing import Any, List, Optional, Sequence, Tuple, Union

import gpflow
import numpy as np
import scipy.sparse as sp
import tensorflow as tf

__all__ = [
    "check_data",
    "check_positive_int",
    "check_positive_number",
    "check_positive_values",
    "check_choice",
    "check_model",
    "check_input_matrix",
    "check_network_inputs",
    "check_class_labels",
    "check_multilabel_labels",
    "check_observations",
    "check_row_index",
    "check_data_tuple",
    "check_same_num_rows",
    "check_regression_data",
    "inducing_input_dim",
    "check_training_data",
]

Array = Union[np.ndarray, sp.csr_matrix]


# ---------------------------------------------------------------------------------------------
# generic checks (arguments and tuples of arrays)
# ---------------------------------------------------------------------------------------------
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


def check_data(data: Any, name: str = "data") -> Tuple[Any, ...]:
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


def check_positive_int(value: Any, name: str, allow_none: bool = False, minimum: int = 1) -> Optional[int]:
    """``value`` must be a Python/numpy integer >= ``minimum`` (``None`` allowed if ``allow_none``)."""
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an integer >= {minimum}, got {value!r} ({type(value).__name__})")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return int(value)


def check_positive_number(value: Any, name: str, expected: str = "a positive number") -> float:
    """``value`` must be a finite real number > 0 (not a bool); the error says ``{name} must be {expected}``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not np.isfinite(value) or not value > 0:
        raise ValueError(f"{name} must be {expected}, got {value!r}")
    return float(value)


def check_model(model: Any) -> None:
    """The model must be a ``tf.Module`` with a callable ``training_loss``."""
    if not isinstance(model, tf.Module):
        raise TypeError(
            f"model must be a GPflow model (a tf.Module with training_loss), got {type(model).__name__}"
        )
    if not callable(getattr(model, "training_loss", None)):
        raise TypeError(
            f"model {type(model).__name__} has no training_loss method; subclass "
            "gpflow.models.ExternalDataTrainingLossMixin (training_loss(data)) or "
            "InternalDataTrainingLossMixin (training_loss())"
        )


def check_positive_values(value: Any, name: str, allow_none: bool = False) -> Optional[np.ndarray]:
    """``value`` (a number or an array of numbers, e.g. lengthscales or variances) must be finite and > 0
    everywhere; returns it as a float64 array (``None`` passes if ``allow_none``).

    Catches what a ``positive()`` GPflow parameter would otherwise report as a TensorFlow
    ``CheckNumerics`` error deep inside its bijector.
    """
    if value is None and allow_none:
        return None
    if isinstance(value, bool):
        raise TypeError(f"{name} must be a positive number (or an array of them), got {value!r}")
    try:
        array = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise TypeError(
            f"{name} must be a positive number (or an array of them), got {value!r} ({type(value).__name__})"
        ) from err
    if array.size == 0:
        raise ValueError(f"{name} must be a positive number (or a non-empty array of them), got an empty array")
    bad = ~(np.isfinite(array) & (array > 0))
    if bad.any():
        first = array.ravel()[int(np.argmax(bad.ravel()))]
        raise ValueError(f"{name} must be finite and > 0, got {first!r}" + ("" if array.ndim == 0 else f" in {value!r}"))
    return array


def check_choice(value: Any, name: str, choices: Sequence[Any]) -> Any:
    """``value`` must be one of ``choices``; the error lists them."""
    if not any(value is choice or (type(value) is type(choice) and value == choice) for choice in choices):
        raise ValueError(f"{name} must be one of {tuple(choices)}, got {value!r}")
    return value


def _describe(name: str, part: Optional[str]) -> str:
    return name if part is None else f"{name} ({part})"


def check_data_tuple(data: Any, parts: Sequence[str], model_name: str, name: str = "data",
                     optional_tail: int = 0) -> List[Any]:
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
    input_dim: Optional[int] = None,
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
    X: Any, name: str = "X", input_shape: Optional[Sequence[int]] = None, integer: str = "keep"
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


def check_class_labels(
    Y: Any, num_classes: Optional[int], name: str = "Y", num_rows: Optional[int] = None
) -> np.ndarray:
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
            f"{name}: labels must be in {expected}, got {Y[row]} at row {row} "
            f"(range [{Y.min()}, {Y.max()}])"
        )
    return Y.astype(np.int64)


def check_multilabel_labels(
    Y: Any, num_labels: Optional[int] = None, num_rows: Optional[int] = None, name: str = "Y"
) -> sp.csr_matrix:
    """Multi-label targets as a 0/1 CSR matrix ``[N, K]`` (float64, sorted indices) from a sparse or dense
    0/1 matrix or a list of label-id lists (``num_labels`` then required).

    :raises ValueError: label index < 0 or >= ``num_labels``, values other than 0/1 (e.g. 0.5, naming the
        first one), NaN/inf, ``K != num_labels``, ``N != num_rows``.
    """
    if isinstance(Y, (list, tuple)) and (len(Y) == 0 or not np.isscalar(Y[0])):
        if num_labels is None:
            raise ValueError(f"num_labels is required when {name} is given as lists of label ids")
        rows, cols = [], []
        for i, row in enumerate(Y):
            ids = np.asarray(list(row), dtype=np.int64).ravel()
            rows.append(np.full(ids.size, i, dtype=np.int64))
            cols.append(ids)
        rows = np.concatenate(rows) if rows else np.zeros(0, np.int64)
        cols = np.concatenate(cols) if cols else np.zeros(0, np.int64)
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
    Y: Any, mask: Any = None, *, name: str = "data", num_outputs: Optional[int] = None,
    allow_empty_rows: bool = False, mask_name: str = "mask",
) -> Tuple[np.ndarray, np.ndarray]:
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


def check_row_index(rows: Any, num_data: int, name: str = "row_index", num_rows: Optional[int] = None) -> np.ndarray:
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


# ---------------------------------------------------------------------------------------------
# the data-check hook
# ---------------------------------------------------------------------------------------------
def inducing_input_dim(inducing_variable: Any) -> Optional[int]:
    """D of the inputs an inducing variable expects (the basis' D for subspace inducing inputs; the
    shared or first separate inducing variable of a multi-output one), ``None`` when unknown."""
    from gpflow.inducing_variables import (
        FallbackSeparateIndependentInducingVariables,
        FallbackSharedIndependentInducingVariables,
    )
    from gpflow.inducing_variables.inducing_variables import InducingPointsBase

    if isinstance(inducing_variable, FallbackSharedIndependentInducingVariables):
        inducing_variable = inducing_variable.inducing_variable
    elif isinstance(inducing_variable, FallbackSeparateIndependentInducingVariables):
        inducing_variable = inducing_variable.inducing_variable_list[0]
    if isinstance(inducing_variable, InducingPointsBase):
        dim = inducing_variable.Z.shape[-1]
        return None if dim is None else int(dim)
    dim = getattr(inducing_variable, "input_dim", None)
    if isinstance(dim, (int, np.integer)) and not isinstance(dim, bool):
        return int(dim)
    return None


def _accepts_sparse_inputs(inducing_variable: Any) -> bool:
    from .inducing_variables.subspace import SubspaceInducingPoints  # lazy: the layers above import this module

    return isinstance(inducing_variable, SubspaceInducingPoints)


def check_regression_data(
    data: Any,
    *,
    input_dim: Optional[int],
    num_latent_gps: int,
    likelihood: Any,
    allow_sparse: bool = False,
    model_name: str = "the model",
) -> Tuple[Array, np.ndarray]:
    """``(X, Y)`` for an SVGP-like model: X as :func:`check_input_matrix` (integer X refused),
    Y a finite 2-D array with as many rows as X and

    * class indices ``[N, 1]`` in ``[0, C)`` (returned int64) for a likelihood with ``num_classes``
      (GPflow's ``Softmax``/``MultiClass``, gpflow_ext's ``MixedSoftmax``);
    * ``num_latent_gps`` columns for a scalar likelihood (which would otherwise broadcast a wrong
      width silently); integer/boolean Y is returned as float64 (same values);
    * ``observation_dim`` columns for a multi-output likelihood that declares it.
    """
    X, Y = check_data_tuple(data, ("X", "Y"), model_name)
    X = check_input_matrix(X, "data[0] (X)", input_dim=input_dim, allow_sparse=allow_sparse)
    label = "data[1] (Y)"
    num_classes = getattr(likelihood, "num_classes", None)
    if isinstance(num_classes, (int, np.integer)) and getattr(likelihood, "observation_dim", None) is None:
        Y = check_class_labels(Y, int(num_classes), name=label, num_rows=X.shape[0])[:, None]
        return X, Y
    if sp.issparse(Y):
        raise TypeError(f"{label} must be a dense array [N, P] for {model_name}, got a scipy.sparse matrix")
    Y = _as_numpy(Y, label)
    if Y.ndim != 2:
        raise ValueError(
            f"{label} must be a 2-D array [N, P], got shape {Y.shape}"
            + ("; pass y[:, None] for a single output column" if Y.ndim == 1 else "")
        )
    check_same_num_rows([X, Y], ["data[0] (X)", label])
    _first_nonfinite_dense(label, Y)
    if isinstance(likelihood, gpflow.likelihoods.ScalarLikelihood):
        if Y.shape[1] != num_latent_gps:
            raise ValueError(
                f"{label} has {Y.shape[1]} columns but {model_name} has num_latent_gps={num_latent_gps} and the scalar "
                f"likelihood {type(likelihood).__name__} would broadcast them silently; pass Y with {num_latent_gps} "
                f"column(s) or build the model with num_latent_gps={Y.shape[1]}"
            )
        if not np.issubdtype(Y.dtype, np.floating):
            Y = Y.astype(np.float64)
    else:
        observation_dim = getattr(likelihood, "observation_dim", None)
        if isinstance(observation_dim, (int, np.integer)) and Y.shape[1] != observation_dim:
            raise ValueError(
                f"{label} has {Y.shape[1]} columns but the likelihood {type(likelihood).__name__} "
                f"observes {int(observation_dim)} per row"
            )
    return X, Y


@functools.singledispatch
def check_training_data(model: Any, data: Any) -> Tuple[Any, ...]:
    """Check ``data`` for training ``model`` before anything is traced; return it normalised.

    The result is a tuple of numpy arrays / ``scipy.sparse`` CSR matrices with equal first dimension,
    in the layout ``model.training_loss`` takes (what a training loop batches). Bad data raise
    ``TypeError``/``ValueError`` naming the array (``data[1] (Y)``) and the expectation.

    This default applies the generic :func:`check_data`; models register their own rules with
    ``@check_training_data.register(ModelClass)`` (a subclass inherits its base class' rules unless it
    registers its own).
    """
    return check_data(data)


@check_training_data.register(gpflow.models.SVGP)
def _check_svgp_data(model: gpflow.models.SVGP, data: Any) -> Tuple[Any, ...]:
    """GPflow's SVGP: ``(X [N, D], Y [N, P])``, D from the inducing variable (sparse X with subspace
    inducing inputs), P = ``num_latent_gps`` for a scalar likelihood."""
    return check_regression_data(
        data,
        input_dim=inducing_input_dim(model.inducing_variable),
        num_latent_gps=int(model.num_latent_gps),
        likelihood=model.likelihood,
        allow_sparse=_accepts_sparse_inputs(model.inducing_variable),
        model_name=type(model).__name__,
    )
