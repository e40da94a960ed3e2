"""GPLVF's named kernels (``make_kernel``, ``GPLVF(kernel="se+linear")``): the SVI bound against
GPflow's collapsed BayesianGPLVM (analytic Ψ statistics, including the SE x Linear cross term),
finite gradients with a flow and missing data, and clear errors."""
import numpy as np
import pytest
import tensorflow as tf
import gpflow
from gpflow.expectations import expectation
from gpflow.probability_distributions import DiagonalGaussian

from gpflow_ext.bijectors import planar_flow
from gpflow_ext.models import GPLVF
from gpflow_ext.models.gplvf import KERNEL_NAMES, make_kernel


def _toy(rng, n, d, q, missing=0.0):
    X = rng.standard_normal((n, q))
    Y = np.sin(X) @ rng.standard_normal((q, d)) + X @ rng.standard_normal((q, d)) + 0.1 * rng.standard_normal((n, d))
    if missing:
        drop = rng.random(Y.shape) < missing
        drop[:, 0] = False  # no row empty
        Y[drop] = np.nan
    return Y


def test_named_kernels_are_what_they_say():
    se = make_kernel("se", 3)
    assert isinstance(se, gpflow.kernels.SquaredExponential)
    np.testing.assert_array_equal(se.lengthscales.numpy(), np.ones(3))
    linear = make_kernel("linear", 4, num_inducing=4)
    assert isinstance(linear, gpflow.kernels.Linear)
    np.testing.assert_allclose(linear.variance.numpy(), np.full(4, 0.25))
    both = make_kernel("se+linear", 3)
    assert isinstance(both, gpflow.kernels.Sum)
    assert [type(k) for k in both.kernels] == [gpflow.kernels.SquaredExponential, gpflow.kernels.Linear]
    x = np.random.default_rng(0).standard_normal((5, 3))
    np.testing.assert_allclose(
        both(x).numpy(), both.kernels[0](x).numpy() + 0.5 / 3 * x @ x.T, rtol=1e-12
    )
    # the default stays the paper's SE-ARD with unit lengthscales
    model = GPLVF(_toy(np.random.default_rng(1), 8, 3, 2), 2, 3)
    assert isinstance(model.kernel, gpflow.kernels.SquaredExponential)
    np.testing.assert_array_equal(model.kernel.lengthscales.numpy(), np.ones(2))
    named = GPLVF(_toy(np.random.default_rng(1), 8, 3, 2), 2, 3, kernel="se+linear")
    assert isinstance(named.kernel, gpflow.kernels.Sum)


def _optimal_q_u(kernel, Z, x_mean, x_var, Y, noise_variance):
    """q*(u_d) = N(m_d, Σ): Σ = K (K + σ⁻²Ψ2)⁻¹ K, m_d = σ⁻² K (K + σ⁻²Ψ2)⁻¹ Ψ1ᵀ y_d (analytic Ψ)."""
    iv = gpflow.inducing_variables.InducingPoints(Z)
    px = DiagonalGaussian(tf.constant(x_mean), tf.constant(x_var))
    psi1 = expectation(px, (kernel, iv)).numpy()  # [N, M]
    psi2 = tf.reduce_sum(expectation(px, (kernel, iv), (kernel, iv)), 0).numpy()  # [M, M]
    K = gpflow.covariances.Kuu(iv, kernel, jitter=gpflow.config.default_jitter()).numpy()
    A = K + psi2 / noise_variance
    return K @ np.linalg.solve(A, psi1.T @ Y) / noise_variance, K @ np.linalg.solve(A, K), K


def _set_hyperparameters(kernel):
    """Move every hyperparameter away from make_kernel's initial values (a non-trivial check)."""
    for k in getattr(kernel, "kernels", [kernel]):
        if isinstance(k, gpflow.kernels.SquaredExponential):
            k.variance.assign(1.2)
            k.lengthscales.assign([1.3, 0.8])
        else:
            k.variance.assign([0.4, 0.7])


@pytest.mark.parametrize("name", ["se+linear", "linear"])
def test_svi_bound_matches_collapsed_bayesian_gplvm_for_named_kernels(name):
    rng = np.random.default_rng(11)
    N, D, Q = 20, 3, 2
    M = 2 if name == "linear" else 6  # a linear kernel's Kuu has rank Q
    Y = _toy(rng, N, D, Q)
    x_mean = rng.standard_normal((N, Q))
    x_var = rng.uniform(0.05, 0.5, (N, Q))
    Z = rng.standard_normal((M, Q))
    noise_variance = 0.2

    reference_kernel = make_kernel(name, Q, M)
    _set_hyperparameters(reference_kernel)
    reference = gpflow.models.BayesianGPLVM(
        Y, x_mean, x_var, reference_kernel, inducing_variable=gpflow.inducing_variables.InducingPoints(Z)
    )
    reference.likelihood.variance.assign(noise_variance)
    collapsed = reference.elbo().numpy()

    model = GPLVF(
        Y, Q, M, flow=None, X_mean=x_mean, X_var=x_var, Z=Z, whiten=False, kernel=name,
        mean_function=gpflow.mean_functions.Zero(), noise_variance=noise_variance,
    )
    _set_hyperparameters(model.kernel)
    m, Sigma, _ = _optimal_q_u(model.kernel, Z, x_mean, x_var, Y, noise_variance)
    model.q_mu.assign(m)
    model.q_sqrt.assign(np.tile(np.linalg.cholesky(Sigma)[None], (D, 1, 1)))

    data = model.training_data()
    chunks = np.array([
        model.elbo_given_base_noise(data, tf.constant(rng.standard_normal((100, N, Q)))).numpy() for _ in range(40)
    ])
    estimate, standard_error = chunks.mean(), chunks.std() / np.sqrt(len(chunks))
    assert abs(estimate - collapsed) < 4 * standard_error + 1e-8, (estimate, collapsed, standard_error)
    assert standard_error < 0.05 * abs(collapsed)

    # a non-optimal q(u) gives a strictly lower bound (the collapsed bound is the max over q(u))
    model.q_mu.assign(m + 0.3)
    worse = np.mean([
        model.elbo_given_base_noise(data, tf.constant(rng.standard_normal((100, N, Q)))).numpy() for _ in range(10)
    ])
    assert worse < collapsed - 10 * standard_error


def test_sum_kernel_with_flow_and_missing_data_has_finite_gradients_and_trains():
    rng = np.random.default_rng(12)
    Y = _toy(rng, 24, 5, 2, missing=0.4)
    model = GPLVF(Y, 2, 5, flow=planar_flow(2, 2, init_scale=0.5), kernel="se+linear", num_samples=2, seed=3)
    data = model.training_data()
    with tf.GradientTape() as tape:
        bound = model.elbo(data)
    grads = tape.gradient(bound, model.trainable_variables)
    assert np.isfinite(bound.numpy())
    for v, g in zip(model.trainable_variables, grads):
        assert g is not None and np.all(np.isfinite(tf.convert_to_tensor(g).numpy())), v.name
    linear_variance = model.kernel.kernels[1].variance.unconstrained_variable
    (g_linear,) = [g for v, g in zip(model.trainable_variables, grads) if v is linear_variance]
    assert np.all(np.abs(g_linear.numpy()) > 0)

    noise = tf.constant(rng.standard_normal((16, 24, 2)))
    start = model.elbo_given_base_noise(data, noise).numpy()
    optimizer = gpflow.keras.tf_keras.optimizers.Adam(0.02)
    loss = tf.function(lambda: model.training_loss(data))
    for _ in range(60):
        optimizer.minimize(loss, model.trainable_variables)
    assert model.elbo_given_base_noise(data, noise).numpy() > start
    mu, var = model.infer_latent(Y[:4], num_steps=5)
    mean, _ = model.predict_y(mu, var, num_samples=5)
    assert np.all(np.isfinite(mean))


def test_kernel_arguments_give_clear_errors():
    Y = _toy(np.random.default_rng(13), 10, 4, 2)
    assert KERNEL_NAMES == ("se", "linear", "se+linear")
    with pytest.raises(ValueError, match="kernel must be one of"):
        GPLVF(Y, 2, 3, kernel="rbf")
    with pytest.raises(ValueError, match="num_inducing=3 must be <= latent_dim=2"):
        GPLVF(Y, 2, 3, kernel="linear")
    with pytest.raises(ValueError, match="latent_dim"):
        make_kernel("se", 0)
    with pytest.raises(TypeError, match="kernel must be a gpflow Kernel"):
        GPLVF(Y, 2, 3, kernel=3.0)
    GPLVF(Y, 2, 2, kernel="linear")  # M <= Q is fine
