"""The MLGPF data term (eq. 20 and 23) for dense 0/1 labels ``Y`` [B, K], with fixed shapes only.

:func:`~gpflow_ext.likelihoods.multilabel.multilabel_expected_log_likelihood` takes the positives as a
``tf.SparseTensor``, whose number of stored entries changes from minibatch to minibatch and whose ops
(reordering, ragged padding) have no XLA kernels. This module computes the same numbers from the dense
indicator matrix, so that a step compiled with XLA (``fit(..., jit_compile=True)``, which hands the compiled
step dense minibatches) has fixed shapes:

* exact (eq. 20): ``Σ_k (E[log σ(f_ik)] − E[f_ik]) + Σ_k y_ik E[f_ik]``;
* sampled negatives (eq. 23): the positives' term is ``Σ_k y_ik E[log σ(f_ik)]``; the negative of uniform rank
  ``r`` (0-based, among the row's zeros in label order) is ``#{k : c_ik ≤ r}`` with ``c_ik`` the number of zeros
  among labels ``0..k`` of row ``i`` -- the same label the sparse sampler's ``searchsorted`` gives for the same
  uniform draws, at O(B·S·K) instead of O(B·S·log|P_i|).
"""

import tensorflow as tf
from check_shapes import check_shapes
from gpflow.base import TensorType

from ..conditionals.multilabel import utility_moments
from .multilabel import (
    DEFAULT_NUM_GAUSS_HERMITE_POINTS,
    _negative_ranks,
    _weighted_negative_sum,
    _where_any_negative,
    expected_log_sigmoid,
)

__all__ = ["dense_negative_labels", "dense_multilabel_expected_log_likelihood"]


@check_shapes(
    "labels: [B, K]",
    "uniform: [B, S]",
    "return[0]: [B, S]",
    "return[1]: [B]",
)
def dense_negative_labels(labels: TensorType, uniform: TensorType) -> tuple[tf.Tensor, tf.Tensor]:
    """Negative label ids ``[B, S]`` drawn by ``uniform`` [B, S] from dense 0/1 ``labels`` [B, K], and ``|N_i|``
    [B]: the labels :func:`~gpflow_ext.likelihoods.multilabel.sample_negative_labels` draws from the same rows
    given as a ``tf.SparseTensor`` (rows with no negative get id 0 and ``|N_i| = 0``)."""
    negative = tf.cast(tf.equal(labels, 0), tf.int64)  # [B, K]
    num_negative = tf.reduce_sum(negative, axis=1)  # [B]
    zeros_so_far = tf.cumsum(negative, axis=1)  # [B, K]
    ranks = _negative_ranks(uniform, num_negative)  # [B, S]
    below = tf.cast(zeros_so_far[:, None, :] <= ranks[:, :, None], tf.int64)  # [B, S, K]
    return _where_any_negative(tf.reduce_sum(below, axis=-1), num_negative), num_negative  # [B, S], [B]


@check_shapes(
    "h_mean: [B, P]",
    "h_var: [B, P]",
    "loadings: [K, P]",
    "bias: [K]",
    "labels: [B, K]",
    "return: [B]",
)
def dense_multilabel_expected_log_likelihood(
    h_mean: TensorType,
    h_var: TensorType,
    loadings: TensorType | None,
    bias: TensorType,
    labels: TensorType,
    num_negative_samples: int | None = None,
    num_points: int = DEFAULT_NUM_GAUSS_HERMITE_POINTS,
    uniform: TensorType | None = None,
) -> tf.Tensor:
    """Per-row data term ``Σ_{k∈P_i} E[log σ(f_ik)] + |N_i|/|L_i| Σ_{ℓ∈L_i} E[log σ(−f_iℓ)]`` [B] from dense 0/1
    ``labels`` [B, K]: :func:`~gpflow_ext.likelihoods.multilabel.multilabel_expected_log_likelihood`'s numbers
    (exact with ``num_negative_samples=None``, else ``S`` negatives per row drawn by ``uniform`` [B, S])."""
    f_mean, f_var = utility_moments(h_mean, h_var, loadings, bias)  # [B, K] each
    y = tf.cast(labels, f_mean.dtype)  # [B, K]
    log_sigmoid = expected_log_sigmoid(f_mean, f_var, num_points)  # [B, K]
    if num_negative_samples is None or num_negative_samples >= bias.shape[0]:
        return tf.reduce_sum(log_sigmoid - f_mean, axis=-1) + tf.reduce_sum(y * f_mean, axis=-1)  # [B]
    if uniform is None:
        raise ValueError("uniform [B, num_negative_samples] draws are required when sampling")
    positive_term = tf.reduce_sum(y * log_sigmoid, axis=-1)  # [B]
    negatives, num_negative = dense_negative_labels(labels, uniform)  # [B, S], [B]
    return positive_term + _weighted_negative_sum(
        h_mean, h_var, loadings, bias, negatives, num_negative, num_negative_samples, num_points
    )  # [B]
