"""Readable names for a model's variables and the culprit of a non-finite training step.

Names follow ``gpflow.utilities.parameter_dict`` (``.kernel.lengthscales``), except tf_keras weights,
whose tracking paths (``._self_tracked_trackables[2]._trainable_weights[0]``) are replaced by the
layer and weight names (``.feature_extractor/dense_2/kernel``).
"""

import re
import traceback
from collections.abc import Callable, Sequence
from typing import Any

import gpflow
import numpy as np
import tensorflow as tf

__all__ = ["variable_names", "nonfinite_culprits", "first_nonfinite_operation"]

_KERAS_PATH = re.compile(r"\._(self_tracked_trackables|trainable_weights|non_trainable_weights|layers)\b")


def _readable(path: str, variable: tf.Variable) -> str:
    match = _KERAS_PATH.search(path)
    if match is None:
        return path
    owner = path[: match.start()]  # the gpflow attribute path of the Keras object
    return f"{owner}/{variable.name.split(':')[0]}"


def variable_names(model: tf.Module, variables: Sequence[tf.Variable]) -> list[str]:
    """Readable names for ``variables`` (parameters of ``model`` or not)."""
    by_ref: dict[Any, str] = {}
    for path, leaf in gpflow.utilities.parameter_dict(model).items():
        variable = leaf.unconstrained_variable if isinstance(leaf, gpflow.Parameter) else leaf
        if isinstance(variable, tf.Variable):
            by_ref.setdefault(variable.ref(), _readable(path, variable))
    return [by_ref.get(v.ref(), v.name.split(":")[0]) for v in variables]


def _constrained_values(model: tf.Module) -> dict:
    """``{unconstrained variable ref: constrained value}`` for the model's Parameters."""
    out = {}
    for parameter in model.trainable_parameters if hasattr(model, "trainable_parameters") else []:
        out[parameter.unconstrained_variable.ref()] = parameter
    return out


def nonfinite_culprits(model: tf.Module, variables: Sequence[tf.Variable], flags: np.ndarray) -> list[str]:
    """What went non-finite, culprits first.

    ``flags`` = [objective finite, gradient of variables[i] finite ...]. A parameter whose value is
    non-finite (a transform overflowed) is named first; then gradients that are non-finite while
    others are not (the culprit is among them); when the objective itself is non-finite, every
    gradient is too and naming them all would hide the cause: ``objective`` is reported instead.
    """
    names = variable_names(model, variables)
    parameters = _constrained_values(model)
    bad_values = []
    for variable, name in zip(variables, names):
        value = variable.numpy() if variable.ref() not in parameters else parameters[variable.ref()].numpy()
        if not np.all(np.isfinite(value)):
            bad_values.append(f"value of {name}")
    objective_ok = bool(flags[0])
    grad_ok = np.asarray(flags[1:], dtype=bool)
    bad_grads = [f"gradient of {name}" for ok, name in zip(grad_ok, names) if not ok]
    what = list(bad_values)
    if not objective_ok:
        what.append("objective")
        if bad_grads and len(bad_grads) < len(names):
            what.extend(bad_grads)
    else:
        what.extend(bad_grads)
    return what or ["objective or gradient"]


def first_nonfinite_operation(loss: Callable[[], Any]) -> str | None:
    """Re-run ``loss`` eagerly under ``tf.debugging.enable_check_numerics`` and describe the first
    operation whose output is NaN/inf, with the source line that called it (for a Cholesky: the
    matrix it factorised), or ``None`` if the re-run stays finite or fails otherwise."""
    tf.debugging.enable_check_numerics()
    try:
        loss()
    except tf.errors.InvalidArgumentError as err:
        return _describe_check_numerics(str(err.message), traceback.extract_tb(err.__traceback__))
    except Exception:  # the diagnosis must never hide the original problem
        return None
    finally:
        tf.debugging.disable_check_numerics()
    return None


_LIBRARY_FRAMES = ("/tensorflow/", "/tensorflow_probability/", "/check_shapes/", "/gpflow_ext/training/")


def _describe_check_numerics(message: str, frames: Sequence[traceback.FrameSummary]) -> str:
    op = re.search(r'op "([A-Za-z0-9_]+)"', message)
    what = op.group(1) if op else "an operation"
    shape = re.search(r"shape: (\([0-9, ]*\))", message)
    caller = next((f for f in reversed(frames) if not any(part in f.filename for part in _LIBRARY_FRAMES)), None)
    if caller is None:
        return what
    source = (caller.line or "").strip()
    matrix = re.search(r"cholesky\((\w+)", source)
    if matrix:
        what = f"{what} of {matrix.group(1)}"
    if shape:
        what = f"{what} {shape.group(1)}"
    short = "/".join(caller.filename.split("/")[-3:])
    return f"{what} at {short}:{caller.lineno} ({source})"
