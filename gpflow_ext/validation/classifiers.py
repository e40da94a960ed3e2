"""Checks for classifiers on a tf_keras network (SVDKL, SoftmaxNetwork): inputs, class labels, layer dtypes."""

from typing import Any

import gpflow
import numpy as np
import tensorflow as tf

from .arrays import check_data_tuple, check_network_inputs
from .labels import check_class_labels

__all__ = ["validate_classification_data", "check_network_dtype", "check_classifier_data", "layer_input_shape"]


def validate_classification_data(
    X: Any, Y: Any, num_classes: int, input_shape: tuple[int, ...] | None = None, name: str = "data"
) -> tuple[np.ndarray, np.ndarray]:
    """Check ``(X, Y)`` at the API boundary: X non-empty, finite, rows of ``input_shape``; Y integer-valued
    class indices in [0, C) with one per row of X (``[N]`` or ``[N, 1]``). Returns (X unchanged, Y int64 [N]).

    The rules are :func:`check_network_inputs` and :func:`check_class_labels`; ``name`` prefixes the arrays
    (``data[1] (Y)``).
    """
    X = check_network_inputs(X, f"{name}[0] (X)", input_shape)
    Y = check_class_labels(Y, num_classes, name=f"{name}[1] (Y)", num_rows=X.shape[0])
    return X, Y


def layer_input_shape(layer: Any) -> tuple[int, ...] | None:
    """The shape of one input row of a built tf_keras layer/model, ``None`` when it is not known."""
    try:
        return tuple(int(s) for s in layer.input_shape[1:])
    except (AttributeError, RuntimeError, TypeError, ValueError):
        return None


def check_network_dtype(model: Any) -> None:
    """Raise when the model's ``tf_keras`` layers (``feature_extractor``, ``head``) hold floating weights of another
    type than ``gpflow.default_float()``: tf_keras layers default to float32, GPflow to float64, and the mix cannot
    train. The message names the layers' ``dtype=`` argument, the fix in the network's own code."""
    expected = tf.as_dtype(gpflow.default_float())
    layers = [getattr(model, name, None) for name in ("feature_extractor", "head")]
    wrong = [
        v
        for layer in layers
        if layer is not None
        for v in layer.weights
        if v.dtype.is_floating and v.dtype.base_dtype != expected
    ]
    if not wrong:
        return
    found = sorted({v.dtype.base_dtype.name for v in wrong})
    names = ", ".join(v.name for v in wrong[:3]) + (", ..." if len(wrong) > 3 else "")
    raise ValueError(
        f"{type(model).__name__}'s tf_keras layers hold {'/'.join(found)} weights ({names}) but the model computes in "
        f'{expected.name} (gpflow.default_float()); tf_keras layers default to float32: pass dtype="{expected.name}" '
        f"to every layer and to tf_keras.Input, e.g. tf_keras.layers.Dense(50, dtype=gpflow.default_float()), "
        "or build the whole model in float32 under gpflow.config.as_context(gpflow.config.Config(float=np.float32))"
    )


def check_classifier_data(model: Any, data: Any, num_classes: int | None) -> tuple[np.ndarray, np.ndarray]:
    """``(X, Y)`` for a classifier on a network: X rows of the network's input shape (integer X cast to
    float64), Y integer class indices in [0, C) returned as int64 ``[N, 1]``; the network's layers must compute
    in ``gpflow.default_float()`` (:func:`check_network_dtype`)."""
    check_network_dtype(model)
    X, Y = check_data_tuple(data, ("X", "Y"), type(model).__name__)
    X = check_network_inputs(X, "data[0] (X)", model.input_shape, integer="cast")
    Y = check_class_labels(Y, num_classes, name="data[1] (Y)", num_rows=X.shape[0])
    return X, Y[:, None]
