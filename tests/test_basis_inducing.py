"""Z = X̃ (BasisInducingPoints) under a linear kernel: the diagonal O(B·R·P) path against the generic
dense path, stock GPflow on the explicit Z, and exact Bayesian linear regression when R = rank(X)."""
import json

import gpflow
import numpy as np
import pytest
import scipy.sparse
import tensorflow as tf

from gpflow_ext.conditionals.preconditioned import (
    _kl_and_marginals_dense,
    _marginals_dense,
    _prior_kl_dense,
    kl_and_marginals,
    marginals,
    prior_kl,
)
from gpflow_ext.inducing_variables import BasisInducingPoints, SubspaceInducingPoints
from gpflow_ext.models import PreconditionedSVGP
from gpflow_ext.utilities import to_input_tensor
from gpflow_ext.variational import preconditioned_mean_and_covariance

R, P = 7, 3


@pytest.fixture
def setup():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 12))
    iv = BasisInducingPoints.from_data(X, rank=R)
    kernel = gpflow.kernels.Linear(variance=0.7)
    q_mu = rng.normal(size=(R, P))
    q_sigma = rng.uniform(0.05, 2.0, size=(R, P))
    return X, iv, kernel, q_mu, q_sigma


def test_basis_is_the_identity_combination(setup):
    X, iv, _, _, _ = setup
    assert isinstance(iv, SubspaceInducingPoints) and iv.orthonormal_basis
    np.testing.assert_array_equal(iv.A.numpy(), np.eye(R))
    assert not iv.A.trainable and iv.num_inducing == R
    np.testing.assert_allclose(iv.Z.numpy() @ iv.Z.numpy().T, np.eye(R), atol=1e-12)


def test_diagonal_kl_equals_dense_and_gauss_kl(setup):
    _, iv, kernel, q_mu, q_sigma = setup
    fast = prior_kl(iv, kernel, q_mu=tf.constant(q_mu), q_sigma=tf.constant(q_sigma))
    dense = _prior_kl_dense(iv, kernel, q_mu=tf.constant(q_mu), q_sigma=tf.constant(q_sigma))
    Kmm = 0.7 * np.eye(R)
    m, S = preconditioned_mean_and_covariance(Kmm, q_mu, q_sigma)
    reference = gpflow.kullback_leiblers.gauss_kl(m, tf.linalg.cholesky(S), K=Kmm)
    np.testing.assert_allclose(fast.numpy(), dense.numpy(), rtol=1e-12)
    np.testing.assert_allclose(fast.numpy(), reference.numpy(), rtol=1e-10)


@pytest.mark.parametrize("sparse", [False, True])
def test_diagonal_marginals_equal_dense_path(setup, sparse):
    X, iv, kernel, q_mu, q_sigma = setup
    Xb = X[:9] * (np.random.default_rng(1).uniform(size=X[:9].shape) < 0.5)  # zeros: a valid sparse input
    Xin = to_input_tensor(scipy.sparse.csr_matrix(Xb)) if sparse else tf.constant(Xb)
    args = dict(X=Xin, q_mu=tf.constant(q_mu), q_sigma=tf.constant(q_sigma))
    kl, mean, var = kl_and_marginals(iv, kernel, **args)
    kl_d, mean_d, var_d = _kl_and_marginals_dense(iv, kernel, **args)
    np.testing.assert_allclose(kl.numpy(), kl_d.numpy(), rtol=1e-12)
    np.testing.assert_allclose(mean.numpy(), mean_d.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(var.numpy(), var_d.numpy(), rtol=1e-10, atol=1e-12)
    mean_f, cov_f = marginals(iv, kernel, full_cov=True, **args)
    mean_fd, cov_fd = _marginals_dense(iv, kernel, full_cov=True, **args)
    np.testing.assert_allclose(mean_f.numpy(), mean_fd.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(cov_f.numpy(), cov_fd.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(np.stack([np.diag(c) for c in cov_f.numpy()], axis=1), var.numpy(), atol=1e-12)


def test_model_matches_stock_svgp_on_the_explicit_basis(setup):
    """PreconditionedSVGP on BasisInducingPoints = gpflow.models.SVGP on Z = X̃ with the equivalent q(u)."""
    X, iv, kernel, q_mu, q_sigma = setup
    Y = np.random.default_rng(2).normal(size=(40, P))
    model = PreconditionedSVGP(kernel, gpflow.likelihoods.Gaussian(variance=0.3), iv, num_latent_gps=P,
                               num_data=40, q_mu=q_mu, q_sigma=q_sigma)
    m, S = preconditioned_mean_and_covariance(0.7 * np.eye(R), q_mu, q_sigma)
    stock = gpflow.models.SVGP(
        gpflow.kernels.Linear(variance=0.7), gpflow.likelihoods.Gaussian(variance=0.3),
        gpflow.inducing_variables.InducingPoints(iv.Z.numpy()), num_latent_gps=P, whiten=False,
        q_mu=m.numpy(), q_sqrt=tf.linalg.cholesky(S).numpy(), num_data=40,
    )
    with gpflow.config.as_context(gpflow.config.Config(jitter=0.0)):
        np.testing.assert_allclose(model.elbo((X, Y)).numpy(), stock.elbo((X, Y)).numpy(), rtol=1e-9)
        for a, b in zip(model.predict_f(X[:5]), stock.predict_f(X[:5])):
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-8, atol=1e-10)


def test_full_rank_is_bayesian_linear_regression():
    """R = D: q(f(x)) is that of w ~ N(σ² X̃ᵀμ, X̃ᵀ S X̃) with f = wᵀx, for any x (nothing outside the span)."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(30, 5))
    iv = BasisInducingPoints.from_data(X, rank=5)
    kernel = gpflow.kernels.Linear(variance=1.9)
    q_mu, q_sigma = rng.normal(size=(5, 1)), rng.uniform(0.1, 1.0, size=(5, 1))
    x = rng.normal(size=(4, 5))
    mean, var = marginals(iv, kernel, X=tf.constant(x), q_mu=tf.constant(q_mu), q_sigma=tf.constant(q_sigma))
    Vt = iv.basis.numpy()  # [5, 5]
    w_mean = Vt.T @ (1.9 * q_mu[:, 0])  # [D]
    w_cov = Vt.T @ np.diag(1.9 * q_sigma[:, 0] / (1.9 + q_sigma[:, 0])) @ Vt  # [D, D]
    np.testing.assert_allclose(mean.numpy()[:, 0], x @ w_mean, rtol=1e-10)
    np.testing.assert_allclose(var.numpy()[:, 0], np.einsum("nd,de,ne->n", x, w_cov, x), rtol=1e-9)


def test_gradients_equal_dense_path(setup):
    X, iv, _, q_mu, q_sigma = setup
    kernel = gpflow.kernels.Linear(variance=0.7)
    Y = np.random.default_rng(4).normal(size=(40, P))
    model = PreconditionedSVGP(kernel, gpflow.likelihoods.Gaussian(), iv, num_latent_gps=P, num_data=40,
                               q_mu=q_mu, q_sigma=q_sigma)
    variables = [model.kernel.variance.unconstrained_variable, model.q.q_mu.unconstrained_variable,
                 model.q.q_sigma.unconstrained_variable]
    with tf.GradientTape() as tape:
        fast = model.elbo((X, Y))
    g_fast = tape.gradient(fast, variables)
    with tf.GradientTape() as tape:
        kl, mean, var = _kl_and_marginals_dense(iv, kernel, X=tf.constant(X), q_mu=model.q.q_mu, q_sigma=model.q.q_sigma)
        dense = tf.reduce_sum(model.likelihood.variational_expectations(X, mean, var, Y)) - kl
    g_dense = tape.gradient(dense, variables)
    np.testing.assert_allclose(fast.numpy(), dense.numpy(), rtol=1e-12)
    for a, b in zip(g_fast, g_dense):
        assert np.all(np.isfinite(a.numpy()))
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-8, atol=1e-10)


def test_polynomial_kernel_takes_the_dense_path(setup):
    X, iv, _, q_mu, q_sigma = setup
    kernel = gpflow.kernels.Polynomial(degree=2.0, variance=0.5, offset=1.0)
    args = dict(X=tf.constant(X[:6]), q_mu=tf.constant(q_mu), q_sigma=tf.constant(q_sigma))
    for got, want in zip(kl_and_marginals(iv, kernel, **args), _kl_and_marginals_dense(iv, kernel, **args)):
        np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_bad_basis_raises():
    with pytest.raises(ValueError, match="orthonormal"):
        BasisInducingPoints(np.ones((2, 4)))
    with pytest.raises(ValueError, match="basis"):
        BasisInducingPoints(np.ones(4))
    with pytest.raises(ValueError, match="rank"):
        BasisInducingPoints.from_data(np.ones((3, 4)), rank=5)


def test_speed_benchmark_small_run(run_python, tmp_path):
    """``python -m benchmarks.label_gps_speed`` at a small R: both paths run and print the same bound, and
    ``--output`` writes the printed rows with their provenance."""
    output = tmp_path / "speed.json"
    stdout = run_python("-m", "benchmarks.label_gps_speed", "--ranks", "20", "--repeats", "1", "--output", output).stdout
    rows = [line.split() for line in stdout.splitlines() if line.startswith("20 ")]
    assert len(rows) == 2 and "dense time / this" in stdout, stdout
    bounds = [float(row[-1]) for row in rows]
    np.testing.assert_allclose(bounds[0], bounds[1], rtol=1e-4)
    stored = json.loads(output.read_text())
    assert [r["R"] for r in stored["rows"]] == [20, 20] and "provenance" in stored
    np.testing.assert_allclose([r["bound"] for r in stored["rows"]], bounds, rtol=1e-4)


def test_from_stream_equals_from_data():
    """Exact-rank data read in blocks: the same X̃ (same sign convention) as from_data, A = I."""
    rng = np.random.default_rng(4)
    X = scipy.sparse.csr_matrix(rng.normal(size=(120, 9)) @ rng.normal(size=(9, 50)))
    reference = BasisInducingPoints.from_data(X, rank=9)
    for blocks in (lambda: (X[i : i + 37] for i in range(0, 120, 37)), [X[:50], X[50:]],
                   tf.data.Dataset.from_tensor_slices(X.toarray()).batch(32)):
        streamed = BasisInducingPoints.from_stream(blocks, 9, 50, passes=2)
        assert isinstance(streamed, BasisInducingPoints) and streamed.num_inducing == 9
        np.testing.assert_allclose(streamed.basis.numpy(), reference.basis.numpy(), atol=1e-9)
        np.testing.assert_array_equal(streamed.A.numpy(), np.eye(9))
        assert not streamed.A.trainable
    with pytest.raises(ValueError, match="rank"):
        BasisInducingPoints.from_stream([X], 51, 50)
    with pytest.raises(ValueError, match="passes"):
        BasisInducingPoints.from_stream([X], 9, 50, passes=1)
