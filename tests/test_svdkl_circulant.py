"""Circulant-embedding grid prior for SV-DKL: FFT square root, spectra, model wiring, errors.

Brute-force twins: the periodised kernel summed over periods in space
(:func:`periodised_grid_kuu`), dense matrices built column by column, the squared exponential
K_ZZ itself, autodiff against central finite differences.
"""
import gpflow
import numpy as np
import pytest
import tensorflow as tf
from gpflow.keras import tf_keras

from gpflow_ext.covariances.grid import (
    circulant_embedding_size,
    circulant_sqrt_apply,
    grid_circulant_spectra,
    periodised_grid_kuu,
)
from gpflow_ext.inducing_variables import GridInducingPoints
from gpflow_ext.models import SVDKL
from gpflow_ext.variational import CirculantGridPrior, KISSGPGrid

F64 = gpflow.default_float()


def _dense_sqrt(spectrum, n, m):
    """R [m, n] by applying the FFT square root to the identity."""
    return circulant_sqrt_apply(spectrum[None], tf.eye(n, dtype=F64)[None], m)[0].numpy()


@pytest.mark.parametrize("lengthscale", [0.3, 0.7, 2.0])
@pytest.mark.parametrize("m", [6, 40])
def test_fft_square_root_reproduces_periodised_kernel(m, lengthscale):
    grid = GridInducingPoints(m)
    kernel = gpflow.kernels.SquaredExponential(variance=1.7, lengthscales=lengthscale)
    n = circulant_embedding_size(m)
    lam = grid_circulant_spectra(grid, kernel, [n], jitter=1e-6)[0]
    assert np.all(lam.numpy() >= 1e-6 - 1e-14 * lam.numpy().max())  # PSD for any lengthscale
    R = _dense_sqrt(lam, n, m)
    K_periodic = periodised_grid_kuu(grid, kernel, [n], jitter=1e-6).numpy()
    np.testing.assert_allclose(R @ R.T, K_periodic, rtol=0, atol=1e-12 * 1.7)


def test_periodised_prior_equals_squared_exponential_when_period_is_long():
    """With the default factor 3 the prior is the SE K_ZZ up to k(2·span) (1.2e-8 at ℓ = 0.7)."""
    grid = GridInducingPoints(64)
    for lengthscale, tol in [(0.3, 1e-14), (0.7, 2e-8)]:
        kernel = gpflow.kernels.SquaredExponential(lengthscales=lengthscale)
        n = circulant_embedding_size(64)
        R = _dense_sqrt(grid_circulant_spectra(grid, kernel, [n])[0], n, 64)
        K = gpflow.covariances.Kuu(grid, kernel).numpy()
        np.testing.assert_allclose(R @ R.T, K, rtol=0, atol=tol)


def test_embedding_size_is_even_fft_friendly_and_checked():
    for m in (4, 70, 500, 2000):
        n = circulant_embedding_size(m)
        assert n % 2 == 0 and n >= 3 * (m - 1)
    assert circulant_embedding_size(70, period_factor=2.0) >= 2 * 69
    with pytest.raises(ValueError, match="period_factor"):
        circulant_embedding_size(70, period_factor=1.5)
    grid = GridInducingPoints(10)
    with pytest.raises(ValueError, match="ring size"):
        grid_circulant_spectra(grid, gpflow.kernels.SquaredExponential(), [10])
    with pytest.raises(TypeError, match="SquaredExponential"):
        grid_circulant_spectra(grid, gpflow.kernels.Matern32(), [40])


def test_spectrum_gradient_matches_finite_differences():
    grid = GridInducingPoints(30)
    n = circulant_embedding_size(30)
    v = tf.constant(np.random.default_rng(0).normal(size=(1, n, 2)))

    def value(log_ell, log_var):
        kernel = gpflow.kernels.SquaredExponential()
        kernel.lengthscales.assign(tf.exp(log_ell))
        kernel.variance.assign(tf.exp(log_var))
        lam = grid_circulant_spectra(grid, kernel, [n], jitter=1e-6)[0]
        return tf.reduce_sum(tf.sin(circulant_sqrt_apply(lam[None], v, 30)))

    kernel = gpflow.kernels.SquaredExponential(lengthscales=0.4, variance=1.3)
    with tf.GradientTape() as tape:
        lam = grid_circulant_spectra(grid, kernel, [n], jitter=1e-6)[0]
        out = tf.reduce_sum(tf.sin(circulant_sqrt_apply(lam[None], v, 30)))
    g_ell, g_var = tape.gradient(out, [kernel.lengthscales.unconstrained_variable, kernel.variance.unconstrained_variable])
    x0 = np.array([np.log(0.4), np.log(1.3)])
    # the Parameters' default softplus transform: convert the autodiff gradients to log space
    ell, var = 0.4, 1.3
    def dsoft(y):
        return 1.0 - np.exp(-y)  # d softplus / d raw at softplus(raw) = y
    g_log = np.array([g_ell.numpy() / dsoft(ell) * ell, g_var.numpy() / dsoft(var) * var])
    eps = 1e-6
    fd = []
    for i in range(2):
        e = np.zeros(2)
        e[i] = eps
        fd.append((value(*(x0 + e)).numpy() - value(*(x0 - e)).numpy()) / (2 * eps))
    np.testing.assert_allclose(g_log, fd, rtol=1e-6)


def _net(d_in=5, q=2, seed=0):
    tf_keras.utils.set_random_seed(seed)
    return tf_keras.Sequential(
        [tf_keras.Input((d_in,), dtype=F64), tf_keras.layers.Dense(q, dtype=F64)]
    )


@pytest.mark.parametrize("groups", [None, [[0, 1]]])
def test_model_whitening_map_is_a_square_root_of_the_prior(groups):
    """u = (⊗ R_d) v: R Rᵀ = the periodised K_ZZ of every GP (1-D and 2-D Kronecker grids)."""
    model = SVDKL(_net(), 3, num_data=10, inducing=KISSGPGrid(9, prior=CirculantGridPrior()), feature_groups=groups)
    model.kernel.kernels[0].lengthscales.assign([0.35] if groups is None else [0.35, 0.6])
    ring_sizes = model.gps.prior.latent_sizes(model.inducing_variable)
    n_total = int(np.prod(ring_sizes))
    eye = tf.tile(tf.eye(n_total, dtype=F64)[None], [model.num_gps, 1, 1])
    R = model.gps.grid_values(eye).numpy()  # [J, m, n]
    for j, kernel in enumerate(model.kernel.kernels):
        K = periodised_grid_kuu(model.inducing_variable, kernel, ring_sizes, jitter=model.jitter).numpy()
        np.testing.assert_allclose(R[j] @ R[j].T, K, rtol=0, atol=1e-12)


def test_model_samples_have_the_low_frequency_q_moments(rng):
    """Monte Carlo moments of u equal R_low μ and R_low S R_lowᵀ + R_high R_highᵀ."""
    model = SVDKL(_net(q=1), 2, num_data=10, inducing=KISSGPGrid(8, prior=CirculantGridPrior()))
    k = model.gps.prior.variational_sizes(model.inducing_variable)[0]
    n = model.gps.prior.latent_sizes(model.inducing_variable)[0]
    assert (k, n) == (8, circulant_embedding_size(8))
    model.q.q_mu.assign(rng.normal(size=(1, k)))
    L = np.tril(rng.normal(size=(1, k, k)) * 0.3) + np.eye(k) * 0.5
    model.q.q_sqrt_factors[0].assign(L)
    R = model.gps.grid_values(tf.eye(n, dtype=F64)[None]).numpy()[0]  # [m, n]
    mean = R[:, :k] @ model.q.q_mu.numpy()[0]
    cov = R[:, :k] @ L[0] @ L[0].T @ R[:, :k].T + R[:, k:] @ R[:, k:].T
    tf.random.set_seed(3)
    u = model.sample_inducing(200_000).numpy()[0]  # [m, T]
    np.testing.assert_allclose(u.mean(1), mean, atol=0.02)
    np.testing.assert_allclose(np.cov(u), cov, atol=0.03)


def test_circulant_model_trains_with_finite_gradients(rng):
    X = rng.normal(size=(60, 5))
    Y = (X[:, 0] > 0).astype(np.int64)
    model = SVDKL(_net(), 2, num_data=60, inducing=KISSGPGrid(50, prior=CirculantGridPrior(variational_size=20)))
    model.q.q_mu.assign(rng.normal(size=model.q.q_mu.shape))
    data = (tf.constant(X), tf.constant(Y[:, None].astype(float)))
    with tf.GradientTape() as tape:
        loss = model.training_loss(data)
    grads = tape.gradient(loss, model.trainable_variables)
    assert all(g is not None and np.all(np.isfinite(g.numpy())) for g in grads)
    from gpflow_ext.training import fit

    before = model.evaluate(X, Y)["nlp"]
    fit(model, (X, Y[:, None]), epochs=40, batch_size=60, learning_rate=0.05, progress=False, seed=0,
        exact_random_resume=False)
    after = model.evaluate(X, Y)
    assert after["nlp"] < before and after["accuracy"] > 0.9


def test_circulant_bad_arguments():
    with pytest.raises(TypeError, match="prior must be a GridPrior"):
        KISSGPGrid(8, prior="circulant")
    with pytest.raises(ValueError, match="whiten=True"):
        SVDKL(_net(), 2, num_data=10, inducing=KISSGPGrid(8, prior=CirculantGridPrior()), whiten=False)
    with pytest.raises(ValueError, match="period_factor"):
        CirculantGridPrior(period_factor=1.0)
    with pytest.raises(ValueError, match="variational_size must be >= 1"):
        CirculantGridPrior(variational_size=0)
