"""GPLVF with a non-Gaussian likelihood: each term against a brute-force or Monte Carlo twin, masked entries
inert, the default Gaussian unchanged, bad arguments refused by name."""

import gpflow
import numpy as np
import pytest
import tensorflow as tf

from gpflow_ext.bijectors import planar_flow
from gpflow_ext.models import GPLVF
from gpflow_ext.training import fit


def _binary(num_rows=12, num_outputs=5, seed=0, missing=0.3):
    rng = np.random.default_rng(seed)
    values = (rng.random((num_rows, num_outputs)) < 0.4).astype(float)
    values[rng.random(values.shape) < missing] = np.nan
    values[np.isnan(values).all(axis=1), 0] = 1.0  # every row keeps an entry
    return values


def _model(likelihood, flow=None, seed=0, **kwargs):
    Y = _binary(seed=seed)
    model = GPLVF(Y, latent_dim=2, num_inducing=4, flow=flow, likelihood=likelihood, seed=seed, **kwargs)
    rng = np.random.default_rng(seed + 1)  # a q(u) away from the prior, so that every term matters
    model.q_mu.assign(0.5 * rng.standard_normal(model.q_mu.shape))
    model.mean_function.c.assign(0.3 * rng.standard_normal(model.output_dim))
    return model, Y


@pytest.mark.parametrize("with_flow", [False, True])
def test_bernoulli_expected_log_likelihood_matches_monte_carlo_over_f(with_flow):
    flow = planar_flow(2, 2, seed=3) if with_flow else None
    model, Y = _model(gpflow.likelihoods.Bernoulli(), flow=flow)
    values, mask, rows = model.training_data()
    x_mean, x_var = model.local_parameters(tf.constant(values), tf.constant(mask), tf.constant(rows))
    noise = np.random.default_rng(5).standard_normal((3, Y.shape[0], 2))
    expected, _ = model.row_terms(values, mask, x_mean, x_var, noise)  # [N]

    # twin: the dense q(f(x)) at every draw, then Monte Carlo over f and a plain sum over observed entries
    x = model.latent_draws(x_mean, x_var, noise)  # [S, N, Q]
    f_mean, f_var = (t.numpy() for t in model.predict_f(x))  # [S, N, D]
    eps = np.random.default_rng(7).standard_normal((200_000, 1, 1, 1))
    f = f_mean[None] + np.sqrt(f_var[None]) * eps  # [T, S, N, D]
    p = gpflow.likelihoods.Bernoulli().invlink(tf.constant(f)).numpy()
    log_lik = np.where(values[None, None] == 1, np.log(p), np.log1p(-p)).mean(axis=0).mean(axis=0)  # [N, D]
    twin = (log_lik * mask).sum(axis=1)
    np.testing.assert_allclose(expected.numpy(), twin, rtol=3e-3, atol=3e-3)


def test_masked_entries_change_nothing_for_a_bernoulli_model():
    model, Y = _model(gpflow.likelihoods.Bernoulli())
    values, mask, rows = model.training_data()
    noise = np.random.default_rng(1).standard_normal((2, Y.shape[0], 2))
    before = model.elbo_given_base_noise((values, mask, rows), noise)
    changed = np.where(mask > 0, values, 7.0)  # garbage where unobserved
    after = model.elbo_given_base_noise((changed, mask, rows), noise)
    assert float(before) == pytest.approx(float(after), abs=1e-12)


def test_bernoulli_predictive_mean_is_the_probability_averaged_over_q_x():
    model, Y = _model(gpflow.likelihoods.Bernoulli())
    x_mean, x_var = model.training_latents()
    noise = model.base_noise(Y.shape[0], 50, seed=2)
    mean, var = model.predict_y_marginal_given_base_noise(x_mean, x_var, noise)
    x = model.latent_draws(x_mean, x_var, noise)
    f_mean, f_var = (t.numpy() for t in model.predict_f(x))  # [J, N, D]
    from scipy.stats import norm

    jitter = 1e-3  # GPflow's probit keeps p in [jitter, 1 - jitter]
    p = jitter + (1 - 2 * jitter) * norm.cdf(f_mean / np.sqrt(1.0 + f_var))  # P(y = 1 | x), closed form
    np.testing.assert_allclose(mean.numpy(), p.mean(axis=0), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(var.numpy(), p.mean(axis=0) * (1.0 - p.mean(axis=0)), rtol=1e-6, atol=1e-8)


def test_gaussian_default_keeps_its_moments_and_bound():
    Y = np.where(np.isnan(_binary()), np.nan, np.random.default_rng(0).standard_normal(_binary().shape))
    default = GPLVF(Y, latent_dim=2, num_inducing=4, seed=0)
    explicit = GPLVF(
        Y, latent_dim=2, num_inducing=4, seed=0, likelihood=gpflow.likelihoods.Gaussian(default.likelihood.variance)
    )
    x_mean, x_var = default.training_latents()
    noise = default.base_noise(Y.shape[0], 20, seed=0)
    mean, var = default.predict_y_marginal_given_base_noise(x_mean, x_var, noise)
    f_mean, f_var = default.predict_f(default.latent_draws(x_mean, x_var, noise))
    expected_mean = tf.reduce_mean(f_mean, axis=0)
    expected_var = tf.reduce_mean(f_var + f_mean**2, axis=0) - expected_mean**2 + default.likelihood.variance
    np.testing.assert_allclose(mean.numpy(), expected_mean.numpy(), rtol=1e-12)
    np.testing.assert_allclose(var.numpy(), expected_var.numpy(), rtol=1e-10)
    np.testing.assert_allclose(explicit.mean_function.c.numpy(), default.mean_function.c.numpy())
    data = default.training_data()
    base = np.random.default_rng(0).standard_normal((1, Y.shape[0], 2))
    assert float(default.elbo_given_base_noise(data, base)) == pytest.approx(
        float(explicit.elbo_given_base_noise(data, base)), rel=1e-12
    )


def test_a_bernoulli_gplvf_trains_with_fit_and_improves_its_bound():
    model, Y = _model(gpflow.likelihoods.Bernoulli())
    data = model.training_data()
    noise = np.random.default_rng(0).standard_normal((4, Y.shape[0], 2))
    start = float(model.elbo_given_base_noise(data, noise))
    history = fit(model, data, epochs=30, batch_size=6, learning_rate=0.03, progress=False)
    assert np.all(np.isfinite(history.objective))
    assert float(model.elbo_given_base_noise(data, noise)) > start


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        (dict(likelihood="bernoulli"), TypeError, "likelihood must be a gpflow.likelihoods.ScalarLikelihood"),
        (dict(likelihood=gpflow.likelihoods.Softmax(3)), TypeError, "likelihood must be"),
        (
            dict(likelihood=gpflow.likelihoods.SwitchedLikelihood([gpflow.likelihoods.Gaussian()])),
            ValueError,
            "likelihood_columns is required with a SwitchedLikelihood",
        ),
        (dict(likelihood=gpflow.likelihoods.Bernoulli(), noise_variance=0.1), ValueError, "noise_variance"),
    ],
)
def test_bad_likelihood_arguments_are_refused_by_name(kwargs, error, match):
    with pytest.raises(error, match=match):
        GPLVF(_binary(), latent_dim=2, num_inducing=4, **kwargs)
