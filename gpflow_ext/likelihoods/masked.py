"""Expected log-likelihoods with missing entries marginalised out (GPLVF, paper eq. 5 and 20-21).

A missing entry of y contributes nothing: Σ_{d observed} E_{q(f_d)} log p(y_d | f_d), each term the
likelihood's own ``variational_expectations`` (for ``gpflow.likelihoods.Gaussian``: log N(y_d | μ_d, σ²) - v_d/(2σ²)).
"""

import gpflow
import tensorflow as tf
from check_shapes import check_shapes

__all__ = [
    "entrywise_variational_expectations",
    "entrywise_predict_log_density",
    "masked_variational_expectations",
    "masked_predict_log_density",
    "masked_gaussian_expected_log_likelihood",
]

#: shapes of the entry-wise terms: X [..., Q] of a row broadcast over its D entries
_entrywise_shapes = check_shapes(
    "X: [broadcast batch..., Q]",
    "Fmu: [batch..., D]",
    "Fvar: [batch..., D]",
    "Y: [broadcast batch..., D]",
    "return: [batch..., D]",
)


@_entrywise_shapes
def entrywise_variational_expectations(likelihood: gpflow.likelihoods.ScalarLikelihood, X, Fmu, Fvar, Y) -> tf.Tensor:
    """E_{N(f; μ, v)} log p(y | f) for each entry: a scalar likelihood's ``variational_expectations`` on a
    trailing axis of length 1 (it sums that axis), with the inputs X of a row broadcast over its D entries."""
    return likelihood.variational_expectations(X[..., None, :], Fmu[..., None], Fvar[..., None], Y[..., None])


@_entrywise_shapes
def entrywise_predict_log_density(likelihood: gpflow.likelihoods.ScalarLikelihood, X, Fmu, Fvar, Y) -> tf.Tensor:
    """log ∫ p(y | f) N(f; μ, v) df for each entry (Gaussian: log N(y | μ, v + σ²)), as
    :func:`entrywise_variational_expectations` does for the likelihood's ``predict_log_density``."""
    return likelihood.predict_log_density(X[..., None, :], Fmu[..., None], Fvar[..., None], Y[..., None])


def _sum_observed(per_entry_terms, likelihood, X, Y, mask, f_mean, f_var) -> tf.Tensor:
    """Σ_d over the observed entries of ``per_entry_terms(likelihood, X, f_mean, f_var, Y)`` [..., D]; the values
    at missing entries never reach the maths (replaced by 0 first), so NaN there is harmless."""
    mask = tf.cast(mask, tf.bool)
    Y = tf.where(mask, Y, tf.zeros_like(Y))  # [..., D]
    per_entry = per_entry_terms(likelihood, X, f_mean, f_var, Y)  # [..., D]
    return tf.reduce_sum(tf.where(mask, per_entry, tf.zeros_like(per_entry)), axis=-1)  # [...]


@check_shapes(
    "X: [broadcast batch..., Q]",
    "Y: [batch..., D]",
    "mask: [batch..., D]",
    "f_mean: [batch..., D]",
    "f_var: [batch..., D]",
    "return: [batch...]",
)
def masked_variational_expectations(
    likelihood: gpflow.likelihoods.ScalarLikelihood, X, Y, mask, f_mean, f_var
) -> tf.Tensor:
    """Σ_{d observed} E_{N(f; μ_d, v_d)} log p(y_d | f) (eq. 20-21, 5). Missing entries (mask False) contribute
    exactly zero, whatever ``Y`` holds there (NaN included)."""
    return _sum_observed(entrywise_variational_expectations, likelihood, X, Y, mask, f_mean, f_var)  # [...]


@check_shapes(
    "X: [broadcast batch..., Q]",
    "Y: [broadcast batch..., D]",
    "mask: [broadcast batch..., D]",
    "f_mean: [batch..., D]",
    "f_var: [batch..., D]",
    "return: [batch...]",
)
def masked_predict_log_density(likelihood: gpflow.likelihoods.ScalarLikelihood, X, Y, mask, f_mean, f_var) -> tf.Tensor:
    """Σ_{d observed} log ∫ p(y_d | f) N(f; μ_d, v_d) df (the log predictive density of the observed entries);
    missing entries (mask False) contribute exactly zero, whatever ``Y`` holds there (NaN included)."""
    return _sum_observed(entrywise_predict_log_density, likelihood, X, Y, mask, f_mean, f_var)  # [...]


@check_shapes(
    "Y: [batch..., D]",
    "mask: [batch..., D]",
    "f_mean: [batch..., D]",
    "f_var: [batch..., D]",
    "return: [batch...]",
)
def masked_gaussian_expected_log_likelihood(Y, mask, f_mean, f_var, noise_variance) -> tf.Tensor:
    """:func:`masked_variational_expectations` of ``gpflow.likelihoods.Gaussian(variance=noise_variance)``
    (a ``gpflow.Parameter`` is used as it is, so gradients reach it)."""
    likelihood = gpflow.likelihoods.Gaussian(variance=noise_variance)
    X = tf.zeros(tf.concat([tf.shape(f_mean)[:-1], [0]], axis=0), dtype=f_mean.dtype)  # [..., 0]: no inputs needed
    return masked_variational_expectations(likelihood, X, Y, mask, f_mean, f_var)
