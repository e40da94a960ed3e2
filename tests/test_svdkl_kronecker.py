"""Kronecker q(u): mat-vecs and the closed-form KL (eq. 10–11) against dense GPflow gauss_kl."""
import gpflow
import numpy as np
import pytest
import tensorflow as tf
from gpflow.kullback_leiblers import gauss_kl

from gpflow_ext.covariances.grid import grid_kuu_factors
from gpflow_ext.inducing_variables.grid import GridInducingPoints
from gpflow_ext.utilities import dense_kron
from gpflow_ext.variational.kronecker import (
    KroneckerGaussian,
    gauss_kl_kronecker,
    kron_matmul,
    kron_triangular_solve,
)


def _random_lower(rng, J, m):
    L = np.tril(rng.normal(size=(J, m, m)) * 0.3)
    idx = np.arange(m)
    L[:, idx, idx] = rng.uniform(0.5, 1.5, size=(J, m)) * rng.choice([-1, 1], size=(J, m))
    return L


def _random_spd(rng, J, m):
    A = rng.normal(size=(J, m, m))
    return A @ np.transpose(A, (0, 2, 1)) + m * np.eye(m)


@pytest.mark.parametrize("sizes", [[7], [3, 4], [2, 3, 4]])
def test_kron_matmul_and_solve_equal_dense(rng, sizes):
    J = 2
    factors = [tf.constant(_random_lower(rng, J, s)) for s in sizes]
    x = tf.constant(rng.normal(size=(J, int(np.prod(sizes)), 3)))
    dense = dense_kron(factors).numpy()
    np.testing.assert_allclose(kron_matmul(factors, x).numpy(), dense @ x.numpy(), atol=1e-12)
    np.testing.assert_allclose(
        kron_triangular_solve(factors, x).numpy(), np.linalg.solve(dense, x.numpy()), atol=1e-9
    )


@pytest.mark.parametrize("sizes", [[9], [3, 4], [2, 3, 4]])
@pytest.mark.parametrize("whiten", [False, True])
def test_kronecker_kl_equals_dense_gauss_kl(rng, sizes, whiten):
    J = 3
    m = int(np.prod(sizes))
    q_mu = rng.normal(size=(J, m))
    L_factors = [_random_lower(rng, J, s) for s in sizes]
    K_factors = None if whiten else [_random_spd(rng, J, s) for s in sizes]
    kl = gauss_kl_kronecker(
        tf.constant(q_mu),
        [tf.constant(L) for L in L_factors],
        None if whiten else [tf.constant(K) for K in K_factors],
    ).numpy()
    S = dense_kron([tf.constant(L) for L in L_factors]).numpy()  # ⊗ L_d
    q_sqrt = np.linalg.cholesky(S @ np.transpose(S, (0, 2, 1)))  # dense chol of ⊗ S_d
    Kdense = None if whiten else tf.constant(dense_kron([tf.constant(K) for K in K_factors]).numpy())
    ref = gauss_kl(tf.constant(q_mu.T), tf.constant(q_sqrt), Kdense).numpy()
    np.testing.assert_allclose(kl, ref, rtol=1e-9)


def test_kl_on_a_real_grid_prior_and_zero_at_prior(rng):
    grid = GridInducingPoints([10, 8], input_dim=2)
    kernels = [gpflow.kernels.SquaredExponential(lengthscales=[0.5, 0.8], variance=v) for v in (1.0, 2.0)]
    per_gp = [grid_kuu_factors(grid, k, jitter=1e-4) for k in kernels]
    K_factors = [tf.stack([f[d] for f in per_gp]) for d in range(2)]
    q = KroneckerGaussian(2, grid.grid_sizes)
    q.init_from_prior(K_factors)
    assert abs(q.kl(K_factors).numpy()) < 1e-8
    q.q_mu.assign(rng.normal(size=(2, 80)))
    Kdense = dense_kron(K_factors)
    S = q.covariance()
    ref = gauss_kl(tf.transpose(q.q_mu), tf.linalg.cholesky(S), Kdense).numpy()
    np.testing.assert_allclose(q.kl(K_factors).numpy(), ref, rtol=1e-7)
    # the KL gradient w.r.t. the kernel hyperparameters (Appendix B eq. 12) is finite
    with tf.GradientTape() as tape:
        per_gp = [grid_kuu_factors(grid, k, jitter=1e-4) for k in kernels]
        kl = q.kl([tf.stack([f[d] for f in per_gp]) for d in range(2)])
    grads = tape.gradient(kl, [k.lengthscales.unconstrained_variable for k in kernels])
    assert all(np.all(np.isfinite(g.numpy())) and np.any(g.numpy() != 0) for g in grads)


def test_reparameterised_samples_have_the_kronecker_moments(rng):
    q = KroneckerGaussian(1, [3, 2])
    q.q_mu.assign(rng.normal(size=(1, 6)))
    for L, s in zip(q.q_sqrt_factors, [3, 2]):
        L.assign(_random_lower(rng, 1, s))
    tf.random.set_seed(0)
    u = q.sample(200_000).numpy()[0]  # [m, T]
    np.testing.assert_allclose(u.mean(1), q.q_mu.numpy()[0], atol=0.02)
    np.testing.assert_allclose(np.cov(u), q.covariance().numpy()[0], atol=0.05)


def test_bad_arguments():
    with pytest.raises(ValueError):
        KroneckerGaussian(0, [4])
