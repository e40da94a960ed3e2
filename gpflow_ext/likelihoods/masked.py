"""Expected log-likelihoods with missing entries marginalised out (GPLVF, paper eq. 5 and 20-21).

A missing entry of y contributes nothing: Σ_{d observed} E_{q(f_d)} log p(y_d | f_d), each term the
likelihood's own ``variational_expectations`` (for ``gpflow.likelihoods.Gaussian``: log N(y_d | μ_d, σ²) - v_d/(2σ²)).
"""

import gpflow
import numpy as np
import tensorflow as tf
from check_shapes import check_shapes

from .columns import by_column, check_likelihood_columns
from .support import check_values_in_support

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
def entrywise_variational_expectations(
    likelihood: gpflow.likelihoods.ScalarLikelihood, X, Fmu, Fvar, Y, likelihood_columns=None
) -> tf.Tensor:
    """E_{N(f; μ, v)} log p(y | f) for each entry: a scalar likelihood's ``variational_expectations`` on a
    trailing axis of length 1 (it sums that axis), with the inputs X of a row broadcast over its D entries.
    ``likelihood_columns`` [D]: column d's term from ``likelihood.likelihoods[likelihood_columns[d]]``
    (:mod:`~gpflow_ext.likelihoods.columns`)."""
    return by_column(
        likelihood,
        likelihood_columns,
        lambda lik, take: lik.variational_expectations(
            X[..., None, :], take(Fmu)[..., None], take(Fvar)[..., None], take(Y)[..., None]
        ),
    )


@_entrywise_shapes
def entrywise_predict_log_density(
    likelihood: gpflow.likelihoods.ScalarLikelihood, X, Fmu, Fvar, Y, likelihood_columns=None
) -> tf.Tensor:
    """log ∫ p(y | f) N(f; μ, v) df for each entry (Gaussian: log N(y | μ, v + σ²)), as
    :func:`entrywise_variational_expectations` does for the likelihood's ``predict_log_density``."""
    return by_column(
        likelihood,
        likelihood_columns,
        lambda lik, take: lik.predict_log_density(
            X[..., None, :], take(Fmu)[..., None], take(Fvar)[..., None], take(Y)[..., None]
        ),
    )


def _sum_observed(per_entry_terms, likelihood, X, Y, mask, f_mean, f_var, likelihood_columns) -> tf.Tensor:
    """Σ_d over the observed entries of ``per_entry_terms(likelihood, X, f_mean, f_var, Y)`` [..., D]; the values
    at missing entries never reach the maths (replaced by 0 first), so NaN there is harmless."""
    mask = tf.cast(mask, tf.bool)
    Y = tf.where(mask, Y, tf.zeros_like(Y))  # [..., D]
    per_entry = per_entry_terms(likelihood, X, f_mean, f_var, Y, likelihood_columns)  # [..., D]
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
    likelihood: gpflow.likelihoods.ScalarLikelihood, X, Y, mask, f_mean, f_var, likelihood_columns=None
) -> tf.Tensor:
    """Σ_{d observed} E_{N(f; μ_d, v_d)} log p(y_d | f) (eq. 20-21, 5). Missing entries (mask False) contribute
    exactly zero, whatever ``Y`` holds there (NaN included). ``likelihood_columns``: as for
    :func:`entrywise_variational_expectations`."""
    return _sum_observed(
        entrywise_variational_expectations, likelihood, X, Y, mask, f_mean, f_var, likelihood_columns
    )  # [...]


@check_shapes(
    "X: [broadcast batch..., Q]",
    "Y: [broadcast batch..., D]",
    "mask: [broadcast batch..., D]",
    "f_mean: [batch..., D]",
    "f_var: [batch..., D]",
    "return: [batch...]",
)
def masked_predict_log_density(
    likelihood: gpflow.likelihoods.ScalarLikelihood, X, Y, mask, f_mean, f_var, likelihood_columns=None
) -> tf.Tensor:
    """Σ_{d observed} log ∫ p(y_d | f) N(f; μ_d, v_d) df (the log predictive density of the observed entries);
    missing entries (mask False) contribute exactly zero, whatever ``Y`` holds there (NaN included)."""
    return _sum_observed(
        entrywise_predict_log_density, likelihood, X, Y, mask, f_mean, f_var, likelihood_columns
    )  # [...]


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
    likelihood_columns=None,
) -> tuple[gpflow.likelihoods.ScalarLikelihood, gpflow.mean_functions.MeanFunction, np.ndarray | None]:
    """A latent-variable model's likelihood, per-output mean function and column index from its observed entries.

    ``likelihood=None`` is ``Gaussian(noise_variance)`` (default σ² = 0.1 · the variance of the observed values);
    any other ``gpflow.likelihoods.ScalarLikelihood`` (``Bernoulli``, ``Ordinal``, ``Poisson``, ...) serves every
    column; ``SwitchedLikelihood([lik_0, ...])`` with ``likelihood_columns`` [D] gives column d the likelihood
    ``lik_{likelihood_columns[d]}`` (:func:`~gpflow_ext.likelihoods.columns.check_likelihood_columns`). Default mean:
    a ``Constant`` per output, at a Gaussian column its mean shrunk to the Gaussian columns' global mean by 5
    pseudo-observations, elsewhere 0 (f lives on the link's scale, not the data's); learnt with the rest.
    """
    if likelihood is not None:
        if not isinstance(likelihood, gpflow.likelihoods.ScalarLikelihood):
            raise TypeError(
                "likelihood must be a gpflow.likelihoods.ScalarLikelihood (e.g. Gaussian(), Bernoulli(), "
                f"Ordinal(bin_edges), SwitchedLikelihood([...]) with likelihood_columns) or None, "
                f"got {type(likelihood).__name__}"
            )
        if noise_variance is not None:
            raise ValueError("noise_variance sets the default Gaussian likelihood: pass it or likelihood=, not both")
    output_dim = values.shape[1]
    columns = check_likelihood_columns(likelihood, likelihood_columns, output_dim)
    if columns is not None and isinstance(likelihood, gpflow.likelihoods.SwitchedLikelihood):
        gaussian = np.array([isinstance(likelihood.likelihoods[k], gpflow.likelihoods.Gaussian) for k in columns])
    else:
        gaussian = np.full(output_dim, likelihood is None or isinstance(likelihood, gpflow.likelihoods.Gaussian))
    if mean_function is None:
        column_sum, column_count = (values * observed).sum(0), observed.sum(0)
        global_mean = column_sum[gaussian].sum() / max(column_count[gaussian].sum(), 1)
        shrunk = (column_sum + 5.0 * global_mean) / (column_count + 5.0)
        mean_function = gpflow.mean_functions.Constant(np.where(gaussian, shrunk, 0.0))
    if likelihood is None:
        if noise_variance is None:
            noise_variance = max(0.1 * float(np.var(values[observed])), 1e-3)
        likelihood = gpflow.likelihoods.Gaussian(variance=noise_variance)
    check_values_in_support(likelihood, columns, values, observed, name="data")
    return likelihood, mean_function, columns
