"""Softmax over linearly mixed GPs (SV-DKL eq. 1).

``p(y | f, A) = exp((A f)ᵀ y) / Σ_c exp((A f)ᵀ e_c)`` with ``f`` [J] the outputs of J additive GPs
and ``A`` [C, J] a mixing matrix initialised to the identity (Section 5, "Model Training") and
learned jointly, so that the C class scores can borrow strength from correlated GPs.
"""

from typing import Any

import gpflow
import numpy as np
import tensorflow as tf
from check_shapes import check_shapes, inherit_check_shapes
from gpflow import Parameter
from gpflow.base import TensorType
from gpflow.likelihoods import MonteCarloLikelihood

from ..validation import check_positive_int

__all__ = ["MixedSoftmax", "mixed_softmax_logits", "softmax_log_prob"]


@check_shapes("F: [batch..., J]", "mixing: [C, J]", "return: [batch..., C]")
def mixed_softmax_logits(F: TensorType, mixing: TensorType) -> tf.Tensor:
    """Class scores ``A f`` for latent values ``F`` (eq. 1)."""
    return tf.linalg.matvec(mixing, F)  # [..., C]


@check_shapes("logits: [batch..., C]", "labels: [broadcast batch...]", "return: [batch...]")
def softmax_log_prob(logits: TensorType, labels: TensorType) -> tf.Tensor:
    """``log softmax(logits)[y]`` for integer class labels ``y`` (broadcast against the logits' batch)."""
    labels = tf.broadcast_to(tf.cast(labels, tf.int32), tf.shape(logits)[:-1])
    return -tf.nn.sparse_softmax_cross_entropy_with_logits(logits=logits, labels=labels)


class MixedSoftmax(MonteCarloLikelihood):
    """Multi-class softmax likelihood on ``A f`` (eq. 1); labels ``Y`` are class indices ``[..., 1]``.

    :param num_classes: C.
    :param num_latent_gps: J (default C); ``A`` starts as the C×J identity (``np.eye(C, J)``).
    :param mixing: optional initial ``A`` [C, J].
    """

    def __init__(
        self,
        num_classes: int,
        num_latent_gps: int | None = None,
        mixing: np.ndarray | None = None,
        **kwargs: Any,
    ) -> None:
        num_classes = check_positive_int(num_classes, "num_classes", minimum=2)
        J = check_positive_int(num_classes if num_latent_gps is None else num_latent_gps, "num_latent_gps")
        super().__init__(input_dim=None, latent_dim=J, observation_dim=None, **kwargs)
        self.num_classes = int(num_classes)
        if mixing is None:
            mixing = np.eye(self.num_classes, J)
        mixing = np.asarray(mixing, dtype=np.float64)
        if mixing.shape != (self.num_classes, J):
            raise ValueError(f"mixing must have shape [{self.num_classes}, {J}], got {mixing.shape}")
        self.mixing = Parameter(mixing, dtype=gpflow.default_float(), name="mixing")  # A [C, J]

    def logits(self, F: TensorType) -> tf.Tensor:
        return mixed_softmax_logits(F, self.mixing)

    @inherit_check_shapes
    def _log_prob(self, X: TensorType, F: TensorType, Y: TensorType) -> tf.Tensor:
        return softmax_log_prob(self.logits(F), Y[..., 0])

    @inherit_check_shapes
    def _conditional_mean(self, X: TensorType, F: TensorType) -> tf.Tensor:
        # E[one-hot y | f]: the class probabilities (note: [.., C], not [.., J])
        return tf.nn.softmax(self.logits(F))

    @inherit_check_shapes
    def _conditional_variance(self, X: TensorType, F: TensorType) -> tf.Tensor:
        p = self.conditional_mean(X, F)
        return p - p**2
