"""GPLVF's expected log-likelihood per row, Σ_{d observed in row n} E_{q(f_d(x_n))} log p(y_nd | f) (eq. 5, 17-21).

:func:`row_expected_log_likelihood` forms it with the model's ``variance_by``
(:mod:`gpflow_ext.conditionals.pairs`): :class:`~gpflow_ext.conditionals.pairs.RowSums` in closed form from each
row's sums of squared errors and variances (a Gaussian likelihood of one constant variance), any other choice from
each observed pair's own ``variational_expectations`` at q(f) of :func:`~gpflow_ext.conditionals.pairs.conditional_at_pairs`.
"""

import numpy as np
import tensorflow as tf

from ..conditionals.pairs import (
    PairVariance,
    RowSums,
    conditional_at_pairs,
    gaussian_with_one_variance,
    mean_at_pairs,
)
from .columns import pairwise_variational_expectations

__all__ = ["row_expected_log_likelihood"]


def row_expected_log_likelihood(
    variance_by: PairVariance, x, values, mask, gp, likelihood, likelihood_columns
) -> tf.Tensor:
    """Σ_{d observed in row n} E_{q(f_d(x_n))} log p(y_nd | f), averaged over the samples x [S, B, Q]: ``[B]``.

    ``gp``: the GP's parts, ``(inducing_variable, kernel, q_mu [M, D], q_sqrt [D, M, M], mean_function, white)``;
    ``values``, ``mask`` [B, D]. With :class:`~gpflow_ext.conditionals.pairs.RowSums` and a Gaussian of variance σ²,
    -½ Σ_{d ∈ O_n} [log 2πσ² + ((y_nd - μ_nd)² + v_nd) / σ²] from the row sums; otherwise each pair's term is its
    column likelihood's ``variational_expectations``.
    """
    if isinstance(variance_by, RowSums):
        if not gaussian_with_one_variance(likelihood, likelihood_columns):
            raise TypeError(f"RowSums needs a Gaussian likelihood with one constant variance, got {likelihood!r}")
        squared_error, variance_sum, count = variance_by.row_sums(x, values, mask, gp)  # [B] each
        noise = tf.reshape(likelihood.variance, [])
        log_2pi_noise = tf.math.log(tf.constant(2.0 * np.pi, squared_error.dtype) * noise)
        return -0.5 * (count * log_2pi_noise + (squared_error + variance_sum) / noise)  # [B]
    inducing_variable, kernel, q_mu, q_sqrt, mean_function, white = gp
    pairs = tf.where(tf.cast(mask, tf.bool))  # [P, 2] observed (row, output), int64
    row_index, output_index = pairs[:, 0], pairs[:, 1]  # [P] each
    f_mean, f_var = conditional_at_pairs(
        x, row_index, output_index, inducing_variable, kernel, q_mu, q_sqrt, white=white, variance_by=variance_by
    )  # [S, P] each
    f_mean = f_mean + mean_at_pairs(mean_function, x, row_index, output_index, tf.shape(q_mu)[1])
    y = tf.gather_nd(tf.cast(values, f_mean.dtype), pairs)  # [P]
    x_pairs = tf.gather(x, row_index, axis=1)  # [S, P, Q]
    per_pair = pairwise_variational_expectations(
        likelihood, likelihood_columns, x_pairs, f_mean, f_var, y[None], output_index
    )  # [S, P]
    per_pair = tf.reduce_mean(per_pair, axis=0)  # [P]
    return tf.math.unsorted_segment_sum(per_pair, row_index, tf.shape(values)[0])  # [B]
