"""The stand-alone DNN of SV-DKL's Section 5: a tf_keras feature extractor, an optional linear head, softmax."""

from typing import Any

import gpflow
import numpy as np
import tensorflow as tf
from check_shapes import check_shapes
from gpflow.base import InputData, RegressionData
from gpflow.keras import tf_keras
from gpflow.models import BayesianModel, ExternalDataTrainingLossMixin

from ..validation import check_classifier_data, check_network_inputs, check_positive_int, check_training_data
from ..validation.classifiers import layer_input_shape

__all__ = ["SoftmaxNetwork"]


class SoftmaxNetwork(BayesianModel, ExternalDataTrainingLossMixin):
    """The stand-alone DNN of Section 5: feature extractor (+ optional linear head) and softmax.

    Its objective is the mean log-softmax probability of the labels over a minibatch, so that
    ``gpflow_ext.training.fit`` trains it like any GPflow model.
    """

    def __init__(self, feature_extractor: tf_keras.layers.Layer, head: tf_keras.layers.Layer | None = None):
        super().__init__()
        if not isinstance(feature_extractor, tf_keras.layers.Layer):
            raise TypeError(
                "feature_extractor must be a tf_keras model or layer "
                f"(from gpflow.keras import tf_keras), got {type(feature_extractor).__name__}"
            )
        if head is not None and not isinstance(head, tf_keras.layers.Layer):
            raise TypeError(f"head must be a tf_keras layer or None, got {type(head).__name__}")
        self.feature_extractor = feature_extractor
        self.head = head

    @property
    def input_shape(self) -> tuple[int, ...] | None:
        """The shape of one input row the feature extractor expects (``None`` when it is not known)."""
        return layer_input_shape(self.feature_extractor)

    @property
    def num_classes(self) -> int | None:
        """C: the head's units, else the feature extractor's outputs (``None`` when not known)."""
        if self.head is not None:
            units = getattr(self.head, "units", None)
            return int(units) if units is not None else None
        try:
            return int(self.feature_extractor.output_shape[-1])
        except (AttributeError, RuntimeError, TypeError, ValueError):
            return None

    @check_shapes("X: [B, input_shape...]", "return: [B, C]")
    def logits(self, X: InputData, training: bool = False) -> tf.Tensor:
        """Class scores of the network (and head), in ``gpflow.default_float()``."""
        H = self.feature_extractor(X, training=training)
        out = H if self.head is None else self.head(H)
        return tf.cast(out, gpflow.default_float())  # [B, C]

    def maximum_log_likelihood_objective(self, data: RegressionData) -> tf.Tensor:
        X, Y = data
        labels = tf.reshape(tf.cast(Y, tf.int32), [-1])
        logits = self.logits(X, training=True)
        return -tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))

    @tf.function(reduce_retracing=True)
    def _predict_fn(self, x: tf.Tensor) -> tf.Tensor:
        # a compiled method: TF keeps its per-instance traces outside the instance, so the model still deep-copies
        return tf.nn.softmax(self.logits(x))  # [B, C]

    def predict_proba(self, X: np.ndarray, batch_size: int = 2048) -> np.ndarray:
        """Softmax class probabilities ``[N, C]``, in batches through one compiled function (traced once per
        model, not once per call)."""
        X = check_network_inputs(X, "X", self.input_shape)
        batch_size = check_positive_int(batch_size, "batch_size")
        return np.concatenate(
            [self._predict_fn(tf.constant(X[i : i + batch_size])).numpy() for i in range(0, len(X), batch_size)]
        )


@check_training_data.register(SoftmaxNetwork)
def _check_softmax_network_data(model: SoftmaxNetwork, data: Any) -> tuple[Any, ...]:
    """``(X, Y)`` for :class:`SoftmaxNetwork`: X rows of the network's input shape, Y class indices in
    [0, C) with C the head's (or the network's) outputs, returned as int64 ``[N, 1]``."""
    return check_classifier_data(model, data, model.num_classes)
