"""Expected log-likelihoods with missing entries marginalised out (GPLVF, paper eq. 5 and 20-21).

A missing entry of y contributes nothing: Σ_{d observed} E_{q(f_d)} log p(y_d | f_d), each term the
likelihood's own ``variational_expectations`` (for ``gpflow.likelihoods.Gaussian``: log N(y_d | μ_d, σ²) - v_d/(2σ²)).
"""

import gpflow
import numpy as np
import tensorflow as tf
from check_shapes import check_shapes

__all__ = [
    "entrywise_variational_expectations",
    "entrywise_predict_log_density",
    "masked_variational_expectations",
    "masked_predict_log_density",
    "masked_gaussian_expected_log_likelihood",
    "likelihood_and_mean_for",
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


def likelihood_and_mean_for(
    values: np.ndarray,
    observed: np.ndarray,
    likelihood: gpflow.likelihoods.ScalarLikelihood | None = None,
    noise_variance: float | None = None,
    mean_function: gpflow.mean_functions.MeanFunction | None = None,
) -> tuple[gpflow.likelihoods.ScalarLikelihood, gpflow.mean_functions.MeanFunction]:
    """A latent-variable model's likelihood and per-output mean function from its observed entries.

    ``likelihood=None`` is ``Gaussian(noise_variance)`` (default σ² = 0.1 · the variance of the observed values)
    with each output's mean shrunk to the global mean by 5 pseudo-observations; any other
    ``gpflow.likelihoods.ScalarLikelihood`` (``Bernoulli``, ``Ordinal``, ``Poisson``, ...) gets a zero
    ``Constant`` per output, learnt with the rest (its f lives on the link's scale, not the data's).
    ``SwitchedLikelihood`` is refused: it reads a likelihood index from the data, which these models do not carry.
    """
    if likelihood is not None:
        if not isinstance(likelihood, gpflow.likelihoods.ScalarLikelihood):
            raise TypeError(
                "likelihood must be a gpflow.likelihoods.ScalarLikelihood (e.g. Gaussian(), Bernoulli(), "
                f"Ordinal(bin_edges)) or None, got {type(likelihood).__name__}"
            )
        if isinstance(likelihood, gpflow.likelihoods.SwitchedLikelihood):
            raise TypeError("likelihood: a SwitchedLikelihood needs a likelihood index per entry, not supported here")
        if noise_variance is not None:
            raise ValueError("noise_variance sets the default Gaussian likelihood: pass it or likelihood=, not both")
    output_dim = values.shape[1]
    if mean_function is None and (likelihood is None or isinstance(likelihood, gpflow.likelihoods.Gaussian)):
        column_sum, column_count = values.sum(0), observed.sum(0)
        global_mean = column_sum.sum() / column_count.sum()
        mean_function = gpflow.mean_functions.Constant((column_sum + 5.0 * global_mean) / (column_count + 5.0))
    elif mean_function is None:
        mean_function = gpflow.mean_functions.Constant(np.zeros(output_dim))
    if likelihood is None:
        if noise_variance is None:
            noise_variance = max(0.1 * float(np.var(values[observed])), 1e-3)
        likelihood = gpflow.likelihoods.Gaussian(variance=noise_variance)
    return likelihood, mean_function
