"""GPLVF with the paper's isotropic base q(x_n) = N(μ_n, s_n I_Q) (eq. 2, 4): the bound, its gradients and
KL against the diagonal model with s_n repeated over Q, new-row inference, the encoder and bad inputs."""
import numpy as np
import pytest
import tensorflow as tf

from gpflow_ext.bijectors import planar_flow
from gpflow_ext.kullback_leiblers import AnalyticGaussianKL
from gpflow_ext.latents import Diagonal, Isotropic
from gpflow_ext.models import GPLVF
from gpflow_ext.recipes.gplvf import build_encoder, infer_latent


def _rows(rng, n=18, d=5, q=3, missing=0.4):
    X = rng.standard_normal((n, q))
    Y = np.tanh(X) @ rng.standard_normal((q, d)) + 0.1 * rng.standard_normal((n, d))
    drop = rng.random(Y.shape) < missing
    drop[:, 0] = False  # no empty row
    Y[drop] = np.nan
    return Y


def _pair(rng, flow_layers, Q=3, M=6):
    """The isotropic model and its diagonal twin (s_n repeated over Q); same Z, μ, flow parameters."""
    Y = _rows(rng, q=Q)
    N = Y.shape[0]
    x_mean = rng.standard_normal((N, Q))
    s = rng.uniform(0.05, 0.8, (N, 1))
    Z = rng.standard_normal((M, Q))
    models = []
    for base, x_var in ((Isotropic(), np.repeat(s, Q, axis=1)), (Diagonal(), np.repeat(s, Q, axis=1))):
        flow = planar_flow(flow_layers, Q, seed=3, init_scale=0.5) if flow_layers else None
        models.append(GPLVF(Y, Q, M, flow=flow, X_mean=x_mean, X_var=x_var, Z=Z, base_covariance=base))
    iso, diag = models
    assert iso.X_var.shape == (N, 1) and diag.X_var.shape == (N, Q)
    return iso, diag


@pytest.mark.parametrize("flow_layers", [0, 2])
def test_isotropic_bound_and_gradients_equal_the_diagonal_twin(flow_layers):
    rng = np.random.default_rng(0)
    iso, diag = _pair(rng, flow_layers)
    noise = tf.constant(rng.standard_normal((4, iso.num_data, iso.latent_dim)))
    bounds, grads = [], []
    for model in (iso, diag):
        with tf.GradientTape() as tape:
            bound = model.elbo_given_base_noise(model.training_data(), noise)
        bounds.append(bound.numpy())
        grads.append(tape.gradient(bound, [model.X_var.unconstrained_variable, model.X_mean.unconstrained_variable]))
    np.testing.assert_allclose(bounds[0], bounds[1], rtol=1e-12)
    (g_iso_var, g_iso_mean), (g_diag_var, g_diag_mean) = [[tf.convert_to_tensor(g) for g in pair] for pair in grads]
    # s_n is shared by the Q coordinates, so its gradient is the sum of the diagonal model's Q gradients
    np.testing.assert_allclose(g_iso_var.numpy(), g_diag_var.numpy().sum(axis=1, keepdims=True), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(g_iso_mean.numpy(), g_diag_mean.numpy(), rtol=1e-10, atol=1e-12)
    assert np.all(np.abs(g_iso_var.numpy()) > 0) and np.all(np.isfinite(g_iso_var.numpy()))


def test_isotropic_gaussian_kl_is_the_closed_form_of_n_mu_s_identity():
    rng = np.random.default_rng(1)
    iso, _ = _pair(rng, 0)
    assert isinstance(iso.kl_x, AnalyticGaussianKL)
    values, mask, rows = iso.training_data()
    x_mean, x_var = iso.local_parameters(values, mask, rows)
    noise = tf.constant(rng.standard_normal((1, iso.num_data, iso.latent_dim)))
    _, kl = iso.latent_samples_and_kl(x_mean, x_var, noise)
    mu, s, Q = iso.X_mean.numpy(), iso.X_var.numpy()[:, 0], iso.latent_dim
    closed_form = 0.5 * (Q * s + (mu**2).sum(1) - Q - Q * np.log(s))  # KL(N(μ, s I_Q) ‖ N(0, I_Q))
    np.testing.assert_allclose(kl.numpy(), closed_form, rtol=1e-12)


def test_isotropic_new_rows_encoder_and_training_latents():
    rng = np.random.default_rng(2)
    iso, _ = _pair(rng, 1)
    mu, s = iso.training_latents()
    assert mu.shape == s.shape == (iso.num_data, iso.latent_dim)
    np.testing.assert_array_equal(s, np.repeat(iso.X_var.numpy(), iso.latent_dim, axis=1))
    before = [v.numpy().copy() for v in iso.trainable_variables]
    Y_new = _rows(rng, n=4, q=iso.latent_dim)
    x_mean, x_var = infer_latent(iso, Y_new, num_steps=20, num_samples=2)
    assert x_mean.shape == x_var.shape == (4, iso.latent_dim)
    np.testing.assert_array_equal(x_var, np.repeat(x_var[:, :1], iso.latent_dim, axis=1))
    assert np.all(x_var > 0) and not np.allclose(x_var, 0.1)  # s*_n moved from its start
    for a, v in zip(before, iso.trainable_variables):
        np.testing.assert_array_equal(a, v.numpy())
    mean, var = iso.predict_y_marginal(x_mean, x_var, num_samples=10)
    assert np.all(np.isfinite(mean.numpy())) and np.all(var.numpy() > 0)

    Y = _rows(rng, n=12, q=2)
    amortised = GPLVF(Y, 2, 4, flow=planar_flow(1, 2), encoder=build_encoder(5, 2), base_covariance=Isotropic())
    enc_mean, enc_var = amortised.encode(Y[:5])
    assert enc_mean.shape == enc_var.shape == (5, 2)
    np.testing.assert_allclose(enc_var[:, 0], enc_var[:, 1], rtol=1e-14)
    with tf.GradientTape() as tape:
        bound = amortised.elbo(amortised.training_data())
    grads = tape.gradient(bound, amortised.encoder.trainable_variables)
    assert all(g is not None and np.all(np.isfinite(g.numpy())) for g in grads)


def test_isotropic_arguments_give_clear_errors():
    rng = np.random.default_rng(3)
    Y = _rows(rng, n=10, q=2)
    with pytest.raises(TypeError, match="base_covariance must be a gpflow_ext.latents.Diagonal"):
        GPLVF(Y, 2, 4, base_covariance="isotropic")
    x_var = rng.uniform(0.1, 1.0, (10, 2))
    with pytest.raises(ValueError, match="X_var must have equal variances along each row"):
        GPLVF(Y, 2, 4, X_var=x_var, base_covariance=Isotropic())
    GPLVF(Y, 2, 4, X_var=x_var, base_covariance=Diagonal())  # fine for the diagonal base
