"""Input checks for :func:`gpflow_ext.training.fit`, run at the API boundary before any tf.function.

Every problem raises a plain Python error (``TypeError`` / ``ValueError``) that names the argument
and what was expected, so a user never has to read a TensorFlow traceback from inside a graph.
"""
import numbers
from typing import Any, Optional, Sequence, Tuple

import numpy as np
import scipy.sparse as sp
import tensorflow as tf


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


_STATEFUL_RANDOM_OPS = {
    "RandomStandardNormal",
    "RandomUniform",
    "RandomUniformInt",
    "TruncatedNormal",
    "ParameterizedTruncatedNormal",
    "RandomGamma",
    "RandomPoisson",
    "RandomPoissonV2",
    "RandomShuffle",
    "Multinomial",
    "RandomCrop",
}


def uses_stateful_random_ops(graph: tf.Graph) -> bool:
    """Whether a traced graph (incl. nested functions: cond/while bodies) has seed-at-trace random ops.

    Stateless ops (``StatelessRandom*``) and ``tf.random.Generator`` ops (state in a variable) are not counted.
    """
    graph_def = graph.as_graph_def()
    nodes = list(graph_def.node)
    for function in graph_def.library.function:
        nodes.extend(function.node_def)
    return any(node.op in _STATEFUL_RANDOM_OPS for node in nodes)
