"""Checks of scalar arguments (counts, rates, positive parameters, choices, models)."""

import numbers
from collections.abc import Sequence
from typing import Any, Literal, TypeAlias, overload

import numpy as np
import scipy.sparse as sp
import tensorflow as tf

Array: TypeAlias = np.ndarray | sp.csr_matrix


@overload
def check_positive_int(value: Any, name: str, allow_none: Literal[False] = False, minimum: int = 1) -> int: ...


@overload
def check_positive_int(value: Any, name: str, allow_none: bool, minimum: int = 1) -> int | None: ...


def check_positive_int(value: Any, name: str, allow_none: bool = False, minimum: int = 1) -> int | None:
    """``value`` must be a Python/numpy integer >= ``minimum`` (``None`` allowed if ``allow_none``)."""
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an integer >= {minimum}, got {value!r} ({type(value).__name__})")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return int(value)


def check_positive_number(
    value: Any, name: str, expected: str = "a positive number", *, allow_zero: bool = False
) -> float:
    """``value`` must be a finite real number > 0 (>= 0 with ``allow_zero``; not a bool); the error says
    ``{name} must be {expected}``."""
    if (
        isinstance(value, bool)
        or not isinstance(value, numbers.Real)
        or not np.isfinite(float(value))
        or not (float(value) >= 0 if allow_zero else float(value) > 0)
    ):
        raise ValueError(f"{name} must be {expected}, got {value!r}")
    return float(value)


def check_model(model: Any) -> None:
    """The model must be a ``tf.Module`` with a callable ``training_loss``."""
    if not isinstance(model, tf.Module):
        raise TypeError(f"model must be a GPflow model (a tf.Module with training_loss), got {type(model).__name__}")
    if not callable(getattr(model, "training_loss", None)):
        raise TypeError(
            f"model {type(model).__name__} has no training_loss method; subclass "
            "gpflow.models.ExternalDataTrainingLossMixin (training_loss(data)) or "
            "InternalDataTrainingLossMixin (training_loss())"
        )


def check_positive_values(value: Any, name: str, allow_none: bool = False) -> np.ndarray | None:
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
        raise ValueError(
            f"{name} must be finite and > 0, got {first!r}" + ("" if array.ndim == 0 else f" in {value!r}")
        )
    return array


def check_choice(value: Any, name: str, choices: Sequence[Any]) -> Any:
    """``value`` must be one of ``choices``; the error lists them."""
    if not any(value is choice or (type(value) is type(choice) and value == choice) for choice in choices):
        raise ValueError(f"{name} must be one of {tuple(choices)}, got {value!r}")
    return value


def check_float_tuple(values: Any, name: str, positive: bool = True) -> tuple[float, ...]:
    """A non-empty sequence of finite (and, with ``positive``, positive) floats as a tuple, or a ValueError naming
    ``name``."""
    if isinstance(values, str) or not hasattr(values, "__iter__") or len(tuple(values)) == 0:
        raise ValueError(f"{name} must be a non-empty sequence of floats or None, got {values!r}")
    for value in values:
        if positive:
            check_positive_number(value, name, "positive finite floats")
        elif isinstance(value, bool) or not isinstance(value, (int, float)) or not np.isfinite(value):
            raise ValueError(f"{name} must hold finite floats, got {values!r}")
    return tuple(float(v) for v in values)
