"""The preconditioned q(u) (eq. 8–10) against GPflow's gauss_kl / conditional on the equivalent (m, S),
and PreconditionedSVGP: gradients vs finite differences, sparse inputs, float32 at M = 500."""
import concurrent.futures
import dataclasses
import json

import gpflow
import numpy as np
import pytest
import scipy.sparse
import tensorflow as tf
from gpflow.covariances import Kuf, Kuu
from gpflow.keras import tf_keras

from gpflow_ext.inducing_variables import SubspaceInducingPoints
from gpflow_ext.models import PreconditionedSVGP
from gpflow_ext.training import Callback, fit
from gpflow_ext.utilities import to_input_tensor
from gpflow_ext.variational import (
    PreconditionedGaussian,
    preconditioned_conditional,
    preconditioned_kl,
    preconditioned_mean_and_covariance,
)

M, P = 12, 3


@pytest.fixture
def setup():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(80, 6))
    iv = SubspaceInducingPoints.from_data(X, M, 5)
    kernel = gpflow.kernels.SquaredExponential(variance=1.4, lengthscales=1.3)
    Kmm = Kuu(iv, kernel, jitter=1e-4).numpy()
    q_mu = rng.normal(size=(M, P))
    q_sigma = rng.uniform(0.05, 2.0, size=(M, P))
    return X, iv, kernel, Kmm, q_mu, q_sigma


def _no_jitter():
    return gpflow.config.as_context(dataclasses.replace(gpflow.config.config(), jitter=0.0))


def test_equivalent_mean_and_covariance(setup):
    _, _, _, Kmm, q_mu, q_sigma = setup
    m, S = preconditioned_mean_and_covariance(Kmm, q_mu, q_sigma)
    np.testing.assert_allclose(m.numpy(), Kmm @ q_mu, rtol=1e-12)
    for p in range(P):
        S_ref = np.linalg.inv(np.linalg.inv(Kmm) + np.diag(1.0 / q_sigma[:, p]))  # (K⁻¹ + Σ⁻¹)⁻¹
        np.testing.assert_allclose(S[p].numpy(), S_ref, rtol=1e-6, atol=1e-9)


def test_kl_equals_gauss_kl(setup):
    _, _, _, Kmm, q_mu, q_sigma = setup
    m, S = preconditioned_mean_and_covariance(Kmm, q_mu, q_sigma)
    q_sqrt = tf.linalg.cholesky(S)
    expected = gpflow.kullback_leiblers.gauss_kl(m, q_sqrt, K=Kmm)
    np.testing.assert_allclose(preconditioned_kl(Kmm, q_mu, q_sigma).numpy(), expected.numpy(), rtol=1e-8)
    # per latent GP too
    for p in range(P):
        np.testing.assert_allclose(
            preconditioned_kl(Kmm, q_mu[:, p : p + 1], q_sigma[:, p : p + 1]).numpy(),
            gpflow.kullback_leiblers.gauss_kl(m[:, p : p + 1], q_sqrt[p : p + 1], K=Kmm).numpy(),
            rtol=1e-8,
        )


@pytest.mark.parametrize("full_cov", [False, True])
def test_conditional_equals_gpflow_conditional(setup, full_cov):
    X, iv, kernel, _, q_mu, q_sigma = setup
    Xnew = X[:25]
    with _no_jitter():
        Kmm = Kuu(iv, kernel)
        m, S = preconditioned_mean_and_covariance(Kmm, q_mu, q_sigma)
        expected_mean, expected_var = gpflow.conditionals.conditional(
            Xnew, iv, kernel, m, q_sqrt=tf.linalg.cholesky(S), white=False, full_cov=full_cov
        )
    mean, var = preconditioned_conditional(
        Kuf(iv, kernel, Xnew), Kmm, kernel(Xnew, full_cov=full_cov), q_mu, q_sigma, full_cov=full_cov
    )
    np.testing.assert_allclose(mean.numpy(), expected_mean.numpy(), rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(var.numpy(), expected_var.numpy(), rtol=1e-7, atol=1e-9)
    assert var.shape == ((P, 25, 25) if full_cov else (25, P))


def test_preconditioned_gaussian_module():
    q = PreconditionedGaussian(num_inducing=7, num_latent_gps=2, sigma_floor=1e-3)
    assert q.q_mu.shape == (7, 2) and q.q_sigma.shape == (7, 2)
    assert len(q.trainable_variables) == 2  # 2·M·P numbers in total
    q.q_sigma.unconstrained_variable.assign(-1e3 * tf.ones((7, 2), tf.float64))
    assert np.all(q.q_sigma.numpy() >= 1e-3)  # the floor holds for any unconstrained value
    with pytest.raises(ValueError, match="q_sigma"):
        PreconditionedGaussian(7, 2, q_sigma=np.zeros((7, 2)))
    with pytest.raises(ValueError, match="q_mu"):
        PreconditionedGaussian(7, 2, q_mu=np.zeros((6, 2)))
    with pytest.raises(ValueError, match="num_inducing"):
        PreconditionedGaussian(0)
    with pytest.raises(ValueError, match="sigma_floor"):
        PreconditionedGaussian(3, sigma_floor=0.0)


# ---------------------------------------------------------------------------------------------
# the model
# ---------------------------------------------------------------------------------------------


def _model(X, num_latent=2, likelihood=None, kernel=None, seed=0):
    rng = np.random.default_rng(seed)
    iv = SubspaceInducingPoints.from_data(X, 8, 5, seed=seed)
    return PreconditionedSVGP(
        kernel or gpflow.kernels.SquaredExponential(variance=1.2, lengthscales=2.0),
        likelihood or gpflow.likelihoods.Gaussian(variance=0.2),
        iv,
        num_data=10 * X.shape[0],
        num_latent_gps=num_latent,
        q_mu=rng.normal(size=(8, num_latent)),
        q_sigma=rng.uniform(0.1, 1.0, size=(8, num_latent)),
    )


def test_elbo_matches_stock_svgp_with_equivalent_q():
    """The ELBO of PreconditionedSVGP equals stock SVGP (white=False) holding the equivalent (m, S)."""
    rng = np.random.default_rng(1)
    X, Y = rng.normal(size=(60, 6)), rng.normal(size=(60, 2))
    model = _model(X)
    with _no_jitter():
        Kmm = Kuu(model.inducing_variable, model.kernel)
        m, S = preconditioned_mean_and_covariance(Kmm, model.q_mu, model.q_sigma)
        stock = gpflow.models.SVGP(
            model.kernel, model.likelihood, model.inducing_variable, num_latent_gps=2,
            q_mu=m.numpy(), q_sqrt=tf.linalg.cholesky(S).numpy(), whiten=False, num_data=600,
        )
        expected = stock.elbo((X, Y)).numpy()
    np.testing.assert_allclose(model.elbo((X, Y)).numpy(), expected, rtol=1e-9)


def test_gradients_finite_and_match_finite_differences():
    rng = np.random.default_rng(2)
    X, Y = rng.normal(size=(40, 6)), rng.normal(size=(40, 2))
    model = _model(X)
    variables = {
        "A": model.inducing_variable.A.unconstrained_variable,
        "q_mu": model.q_mu.unconstrained_variable,
        "q_sigma": model.q_sigma.unconstrained_variable,
        "variance": model.kernel.variance.unconstrained_variable,
        "lengthscales": model.kernel.lengthscales.unconstrained_variable,
    }
    assert {id(v) for v in variables.values()} <= {id(v) for v in model.trainable_variables}
    with tf.GradientTape() as tape:
        elbo = model.elbo((X, Y))
    grads = dict(zip(variables, tape.gradient(elbo, list(variables.values()))))
    eps = 1e-6
    for name, var in variables.items():
        grad = grads[name].numpy()
        assert np.all(np.isfinite(grad)), name
        flat = var.numpy().reshape(-1)
        for index in rng.choice(flat.size, size=min(6, flat.size), replace=False):
            values = []
            for step in (eps, -eps):
                shifted = flat.copy()
                shifted[index] += step
                var.assign(shifted.reshape(var.shape))
                values.append(model.elbo((X, Y)).numpy())
            var.assign(flat.reshape(var.shape))
            fd = (values[0] - values[1]) / (2 * eps)
            np.testing.assert_allclose(grad.reshape(-1)[index], fd, rtol=1e-5, atol=1e-5 * abs(elbo.numpy()) * 1e-3,
                                       err_msg=f"d ELBO / d {name}[{index}]")


def test_sparse_inputs_give_same_elbo_and_predictions():
    rng = np.random.default_rng(3)
    X = scipy.sparse.random(70, 40, density=0.2, random_state=3, format="csr")
    Y = (rng.uniform(size=(70, 1)) < 0.5).astype(float)
    model = _model(X, num_latent=1, likelihood=gpflow.likelihoods.Bernoulli())
    dense_elbo = model.elbo((X.toarray(), Y)).numpy()
    np.testing.assert_allclose(model.elbo((X, Y)).numpy(), dense_elbo, rtol=1e-12)
    np.testing.assert_allclose(model.elbo((to_input_tensor(X), Y)).numpy(), dense_elbo, rtol=1e-12)
    for full_cov in (False, True):
        for a, b in zip(model.predict_f(X[:9], full_cov=full_cov), model.predict_f(X[:9].toarray(), full_cov=full_cov)):
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-10, atol=1e-12)


def test_plain_inducing_points_and_other_likelihoods():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(50, 3))
    Y = rng.poisson(2.0, size=(50, 1)).astype(float)
    model = PreconditionedSVGP(
        gpflow.kernels.Matern32(), gpflow.likelihoods.Poisson(), X[:10].copy(), num_data=50,
        mean_function=gpflow.mean_functions.Constant(0.5),
    )
    loss = tf.function(model.training_loss_closure((X, Y)))
    first = loss().numpy()
    fit(model, (X, Y), epochs=15, optimizer=tf_keras.optimizers.Adam(0.05), progress=False)  # full batch
    assert np.isfinite(loss().numpy()) and loss().numpy() < first
    mean, var = model.predict_f(X[:4])
    assert mean.shape == (4, 1) and np.all(var.numpy() > 0)
    mean_y, _ = model.predict_y(X[:4])
    assert np.all(mean_y.numpy() > 0)


def test_model_rejects_bad_input():
    rng = np.random.default_rng(5)
    X, Y = rng.normal(size=(30, 6)), rng.normal(size=(30, 1))
    model = _model(X, num_latent=1)
    with pytest.raises(ValueError, match="D = 6"):
        model.predict_f(np.ones((3, 7)))
    with pytest.raises(ValueError, match="D = 6"):
        model.elbo((np.ones((3, 5)), Y[:3]))
    bad = X.copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        model.elbo((bad, Y))
    with pytest.raises(ValueError, match="NaN"):
        model.predict_f(tf.constant(bad))
    with pytest.raises(ValueError, match="NaN"):
        model.predict_f(to_input_tensor(scipy.sparse.csr_matrix(bad)))
    with pytest.raises(ValueError, match="2-D"):
        model.predict_f(np.ones(6))
    with pytest.raises(TypeError, match="likelihood"):
        PreconditionedSVGP(gpflow.kernels.Linear(), "gaussian", X[:4])
    with pytest.raises(ValueError, match="num_data"):
        PreconditionedSVGP(gpflow.kernels.Linear(), gpflow.likelihoods.Gaussian(), X[:4], num_data=0)
    with pytest.raises(TypeError, match="inverse_and_logdet"):
        PreconditionedSVGP(gpflow.kernels.Linear(), gpflow.likelihoods.Gaussian(), X[:4], inverse_and_logdet="tf")


def _autodiff_inverse_and_logdet(A):
    """(L⁻¹, log|A|) through ``cholesky`` and ``triangular_solve``, differentiated by TensorFlow."""
    L = tf.linalg.cholesky(A)
    eye = tf.eye(tf.shape(A)[-1], batch_shape=tf.shape(A)[:-2], dtype=A.dtype)
    return tf.linalg.triangular_solve(L, eye, lower=True), 2.0 * tf.reduce_sum(tf.math.log(tf.linalg.diag_part(L)), -1)


def test_model_with_its_own_factorisation_has_the_same_bound_and_gradients():
    """``inverse_and_logdet`` changes how K + Σ_p is differentiated, not the bound: a model built with TensorFlow's
    own Cholesky gradient has the default model's ELBO, prior KL and gradients; deepcopy keeps the choice."""
    rng = np.random.default_rng(9)
    X, Y = rng.normal(size=(40, 6)), rng.normal(size=(40, 2))
    base = _model(X)
    twin = PreconditionedSVGP(
        base.kernel, base.likelihood, base.inducing_variable, num_data=400, num_latent_gps=2,
        q_mu=base.q_mu.numpy(), q_sigma=base.q_sigma.numpy(), inverse_and_logdet=_autodiff_inverse_and_logdet,
    )
    models = [base, twin]
    values, grads = [], []
    for model in models:
        with tf.GradientTape() as tape:
            elbo = model.elbo((X, Y))
        values.append((elbo.numpy(), model.prior_kl().numpy()))
        grads.append(tape.gradient(elbo, [model.q.q_mu.unconstrained_variable, model.q.q_sigma.unconstrained_variable]))
    np.testing.assert_allclose(values[1], values[0], rtol=1e-12)
    for g, g_ref in zip(grads[1], grads[0]):
        np.testing.assert_allclose(g.numpy(), g_ref.numpy(), rtol=1e-8, atol=1e-10)
    assert gpflow.utilities.deepcopy(twin).q.inverse_and_logdet is _autodiff_inverse_and_logdet


class _StepObjectives(Callback):
    """Records the minibatch objective of every step of ``fit``."""

    def __init__(self):
        self.objectives = []

    def on_step_end(self, run):
        self.objectives.append(run.objective)


def test_float32_preconditioned_svgp_trains_at_500_inducing_points():
    """M = 500 inducing points packed in a 2-D input space (K_ZZ numerically singular in float32, the problem
    of benchmarks/float32_stability.py, which also runs stock SVGP: with jitter 1e-6 its float32 Cholesky of
    K_ZZ breaks down): PreconditionedSVGP trains by fit in float32, every step finite, the loss going down."""
    num_data, num_inducing = 2000, 500
    rng = np.random.default_rng(0)
    X = rng.uniform(-3, 3, size=(num_data, 2)).astype(np.float32)
    Y = (np.sin(X[:, :1]) * np.cos(X[:, 1:]) + 0.1 * rng.normal(size=(num_data, 1))).astype(np.float32)
    Z = X[rng.choice(num_data, num_inducing, replace=False)]
    steps = _StepObjectives()
    with gpflow.config.as_context(dataclasses.replace(gpflow.config.config(), float=np.float32, jitter=1e-6)):
        model = PreconditionedSVGP(gpflow.kernels.SquaredExponential(lengthscales=1.0),
                                   gpflow.likelihoods.Gaussian(variance=0.1), Z.copy(), num_data=num_data)
        history = fit(model, (X, Y), epochs=8, batch_size=500, optimizer=tf_keras.optimizers.Adam(0.01),
                      callbacks=[steps], progress=False)  # 8 epochs of 4 steps
    assert model.q_sigma.dtype == tf.float32 and history.epochs == list(range(1, 9))
    assert len(steps.objectives) == 32 and np.all(np.isfinite(steps.objectives))
    assert np.mean(steps.objectives[-5:]) < np.mean(steps.objectives[:5])


def test_trained_by_fit_on_sparse_csr_data():
    """The foundation's fit loop feeds CSR minibatches as tf.SparseTensor; the subspace model trains."""
    from gpflow_ext.training import fit

    rng = np.random.default_rng(6)
    X = scipy.sparse.random(400, 300, density=0.05, random_state=6, format="csr")
    w = rng.normal(size=(300, 1))
    Y = (X @ w > 0).astype(float)
    iv = SubspaceInducingPoints.from_data(X, 20, 15)
    model = PreconditionedSVGP(gpflow.kernels.Linear(), gpflow.likelihoods.Bernoulli(), iv, num_data=400)
    before = model.elbo((X, Y)).numpy()
    history = fit(model, (X, Y), epochs=4, batch_size=100, learning_rate=0.05, progress=False)
    after = model.elbo((X, Y)).numpy()
    assert np.isfinite(after) and after > before
    assert history.epochs == [1, 2, 3, 4] and np.all(np.isfinite(history.objective))


def test_subspace_scaling_benchmark_worker_small(run_python):
    """The benchmark's per-configuration worker (``python -m benchmarks.subspace_scaling --worker``, as the
    benchmark starts it for each model) on a tiny problem, both models at once; the full table is benchmarks/."""
    common = ["--dim", "300", "--kernel", "se", "--num-data", "200", "--num-inducing", "20", "--rank", "30",
              "--batch-size", "50", "--steps", "2", "--warmup", "1", "--seed", "0"]

    def worker(model):
        stdout = run_python("-m", "benchmarks.subspace_scaling", "--worker", "--model", model, *common).stdout
        return json.loads([line for line in stdout.splitlines() if line.startswith("RESULT ")][-1][len("RESULT "):])

    models = ("subspace", "free-Z")
    with concurrent.futures.ThreadPoolExecutor(len(models)) as pool:
        results = dict(zip(models, pool.map(worker, models)))
    for model, result in results.items():
        assert result["model"] == model and result["final_loss_finite"] and result["step_seconds_median"] > 0
        expected = 20 * 30 if model == "subspace" else 20 * 300
        assert result["trainable_parameters"] == expected + 2 * 20 + 2  # Z or A, μ, Σ, kernel


@pytest.mark.parametrize(
    "module_name",
    ["gpflow_ext.inducing_variables.subspace", "gpflow_ext.variational.preconditioned",
     "gpflow_ext.models.preconditioned_svgp"],
)
def test_docstring_examples_run(module_name):
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(module_name), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


def test_fused_kl_and_marginals_equal_the_separate_functions_and_gauss_kl():
    """The one-pass KL + marginals (used by MLGPF's bound) == preconditioned_kl / _conditional
    and GPflow's gauss_kl on the equivalent (m, S); gradients agree too."""
    from gpflow.kullback_leiblers import gauss_kl

    from gpflow_ext.variational import (
        preconditioned_conditional,
        preconditioned_kl,
        preconditioned_kl_and_marginals,
        preconditioned_mean_and_covariance,
    )

    rng = np.random.default_rng(7)
    M, N, P = 9, 6, 3
    Z, X = rng.normal(size=(M, 2)), rng.normal(size=(N, 2))
    kernel = gpflow.kernels.SquaredExponential(lengthscales=1.3)
    Kmm = kernel(Z) + 1e-6 * np.eye(M)
    Kmn, Knn = kernel(Z, X), kernel(X, full_cov=False)
    q_mu = tf.Variable(rng.normal(size=(M, P)))
    q_sigma = tf.Variable(rng.uniform(0.1, 2.0, size=(M, P)))
    with tf.GradientTape(persistent=True) as tape:
        kl, mean, var = preconditioned_kl_and_marginals(Kmn, Kmm, Knn, q_mu, q_sigma)
        fused = kl + tf.reduce_sum(mean) + tf.reduce_sum(var)
        kl_ref = preconditioned_kl(Kmm, q_mu, q_sigma)
        mean_ref, var_ref = preconditioned_conditional(Kmn, Kmm, Knn, q_mu, q_sigma)
        separate = kl_ref + tf.reduce_sum(mean_ref) + tf.reduce_sum(var_ref)
    np.testing.assert_allclose(kl.numpy(), kl_ref.numpy(), rtol=1e-12)
    np.testing.assert_allclose(mean.numpy(), mean_ref.numpy(), rtol=1e-12)
    np.testing.assert_allclose(var.numpy(), var_ref.numpy(), rtol=1e-9, atol=1e-12)
    m, S = preconditioned_mean_and_covariance(Kmm, q_mu, q_sigma)
    dense = gauss_kl(m, tf.linalg.cholesky(S + 1e-12 * np.eye(M)), K=Kmm)
    np.testing.assert_allclose(kl.numpy(), dense.numpy(), rtol=1e-6)
    for g, g_ref in zip(tape.gradient(fused, [q_mu, q_sigma]), tape.gradient(separate, [q_mu, q_sigma])):
        assert np.all(np.isfinite(g.numpy()))
        np.testing.assert_allclose(g.numpy(), g_ref.numpy(), rtol=1e-8, atol=1e-10)


def _inverse_and_logdet_functions():
    from gpflow_ext import utilities

    return {
        "default": utilities.cholesky_inverse_and_logdet,
        "solves": utilities.solve_cholesky_inverse_and_logdet,
        "products, blocks of 3": lambda A: utilities.matmul_cholesky_inverse_and_logdet(A, block_size=3),
        "products, one block": utilities.matmul_cholesky_inverse_and_logdet,
    }


@pytest.mark.parametrize("implementation", ["default", "solves", "products, blocks of 3", "products, one block"])
@pytest.mark.parametrize("dtype, rtol", [(np.float64, 1e-10), (np.float32, 2e-3)])
@pytest.mark.parametrize("outputs", ["both", "inverse", "logdet"])
def test_cholesky_inverse_and_logdet_gradient_equals_autodiff_of_cholesky(implementation, dtype, rtol, outputs):
    """Each way of forming (L⁻¹, log|A|) and its gradient (triangular solves; recursive blocks and matrix
    products) equals TensorFlow's ``cholesky`` and ``triangular_solve`` and their gradient, for a batch, with
    upstream gradients on either output or both (the other unused); 7 rows in blocks of 3 recurse twice."""
    cholesky_inverse_and_logdet = _inverse_and_logdet_functions()[implementation]

    rng = np.random.default_rng(3)
    X = rng.standard_normal((3, 7, 12))
    A = tf.constant(X @ np.transpose(X, (0, 2, 1)) / 12 + 0.3 * np.eye(7), dtype=dtype)  # [3, 7, 7]
    W = tf.constant(rng.standard_normal((3, 7, 7)), dtype=dtype)  # weights on L⁻¹ (upper part too)
    w = tf.constant(rng.standard_normal(3), dtype=dtype)

    def loss(L_inv, logdet):
        parts = {"inverse": tf.reduce_sum(W * L_inv), "logdet": tf.reduce_sum(w * logdet)}
        return parts["inverse"] + parts["logdet"] if outputs == "both" else parts[outputs]

    with tf.GradientTape() as tape:
        tape.watch(A)
        value = loss(*cholesky_inverse_and_logdet(A))
    grad = tape.gradient(value, A)
    with tf.GradientTape() as tape:
        tape.watch(A)
        L = tf.linalg.cholesky(A)
        L_inv = tf.linalg.triangular_solve(L, tf.eye(7, batch_shape=[3], dtype=dtype), lower=True)
        twin = loss(L_inv, 2.0 * tf.reduce_sum(tf.math.log(tf.linalg.diag_part(L)), axis=-1))
    twin_grad = tape.gradient(twin, A)
    np.testing.assert_allclose(value.numpy(), twin.numpy(), rtol=rtol)
    scale = np.max(np.abs(twin_grad.numpy()))
    np.testing.assert_allclose(grad.numpy(), twin_grad.numpy(), rtol=rtol, atol=rtol * scale)
    np.testing.assert_allclose(grad.numpy(), np.transpose(grad.numpy(), (0, 2, 1)), rtol=0, atol=1e-6 * scale)
    if dtype == np.float64:  # and a central finite difference along a symmetric direction
        E = rng.standard_normal((3, 7, 7))
        E = tf.constant(E + np.transpose(E, (0, 2, 1)))
        h = 1e-6
        fd = (loss(*cholesky_inverse_and_logdet(A + h * E)) - loss(*cholesky_inverse_and_logdet(A - h * E))) / (2 * h)
        np.testing.assert_allclose(float(tf.reduce_sum(grad * E)), float(fd), rtol=1e-6)


def test_blocked_cholesky_inverse_equals_the_factorisation_at_every_size():
    """The recursive 2 × 2 blocks give L⁻¹ and log|A| of the whole factorisation for sizes around the block
    size (odd and even splits, 1 × 1 leaves), and a size unknown when traced is factorised whole."""
    from gpflow_ext.utilities import matmul_cholesky_inverse_and_logdet

    rng = np.random.default_rng(5)
    for M in (1, 2, 5, 8, 13):
        X = rng.standard_normal((2, M, M + 3))
        A = tf.constant(X @ np.transpose(X, (0, 2, 1)) / M + 0.1 * np.eye(M))  # [2, M, M]
        L = np.linalg.cholesky(A.numpy())
        for block_size in (1, 2, 4, 16):
            L_inv, logdet = matmul_cholesky_inverse_and_logdet(A, block_size=block_size)
            np.testing.assert_allclose(L_inv.numpy(), np.linalg.inv(L), rtol=1e-10, atol=1e-10)
            np.testing.assert_allclose(logdet.numpy(), np.linalg.slogdet(A.numpy())[1], rtol=1e-12)
            assert np.all(np.triu(L_inv.numpy()[0], 1) == 0.0)
    unknown = tf.function(lambda A: matmul_cholesky_inverse_and_logdet(A, block_size=2),
                          input_signature=[tf.TensorSpec([None, None, None], tf.float64)])
    np.testing.assert_allclose(unknown(A)[0].numpy(), np.linalg.inv(L), rtol=1e-10, atol=1e-10)


def test_cholesky_inverse_and_logdet_takes_the_faster_path_for_each_dtype():
    """float64 through triangular solves, float32 through matrix products: the same numbers as each path."""
    from gpflow_ext.utilities import (
        cholesky_inverse_and_logdet,
        matmul_cholesky_inverse_and_logdet,
        solve_cholesky_inverse_and_logdet,
    )

    X = np.random.default_rng(6).standard_normal((3, 200, 210))
    for dtype, path in ((np.float64, solve_cholesky_inverse_and_logdet), (np.float32, matmul_cholesky_inverse_and_logdet)):
        A = tf.constant(X @ np.transpose(X, (0, 2, 1)) / 200 + np.eye(200), dtype=dtype)
        for value, twin in zip(cholesky_inverse_and_logdet(A), path(A)):
            np.testing.assert_array_equal(value.numpy(), twin.numpy())


def test_cholesky_inverse_and_logdet_refuses_non_square_input():
    from gpflow_ext.utilities import cholesky_inverse_and_logdet, matmul_cholesky_inverse_and_logdet

    with pytest.raises(ValueError, match=r"A must be a batch of square matrices"):
        cholesky_inverse_and_logdet(np.ones((3, 4)))
    for block_size in (0, 2.5, True):
        with pytest.raises(ValueError, match=r"block_size must be a positive int"):
            matmul_cholesky_inverse_and_logdet(np.eye(3), block_size=block_size)


def test_mlgpf_speed_benchmark_small_checks_its_cholesky_gradient_peer(run_python, dataset_path, tmp_path):
    """``python -m benchmarks.mlgpf_speed --smoke``: every contender times a step, and the peers differentiated
    through L⁻¹, with TensorFlow's own Cholesky gradient and with the other way of forming L⁻¹ evaluate the same
    bound as the model at the same parameters; ``--profile`` stores where the traced steps' time goes."""
    dataset_path("bibtex", "bibtex-train.arff.gz")
    output = tmp_path / "speed.json"
    run_python("-m", "benchmarks.mlgpf_speed", "--smoke", "--float32", "--profile", tmp_path / "trace", "--output", output)
    results = json.loads(output.read_text())["results"]
    for dtype in ("float64", "float32"):  # the traced steps: their op types, largest first, matrix products among them
        trace = results[f"MLGPF s-linear ({dtype})"]["profile"]
        seconds = [value for key, value in trace["op_type_seconds"] if key != "(other)"]
        assert trace["wall_seconds_per_step"] > 0 and seconds == sorted(seconds, reverse=True) and seconds[0] > 0
        assert any("MatMul" in op_type for op_type, _ in trace["op_type_seconds"])
    peers = [name for name in results if "time_over_s_linear" in results[name]]
    assert sorted(peers) == ["s-linear, TF Cholesky gradient (float32)", "s-linear, TF Cholesky gradient (float64)",
                             "s-linear, gradient through L⁻¹ (float32)", "s-linear, gradient through L⁻¹ (float64)",
                             "s-linear, matrix-product L⁻¹ and gradient (float64)",
                             "s-linear, triangular-solve L⁻¹ and gradient (float32)"]
    for name in peers:
        assert results[name]["bound_difference"] <= 1e-6 * 1e4  # the bound is O(1e4) here: equal to rounding
        assert results[name]["time_over_s_linear"] > 0
    for name in ("s-linear, matrix-product L⁻¹ and gradient (float64)",
                 "s-linear, triangular-solve L⁻¹ and gradient (float32)"):
        assert results[name]["time_over_default_path"] > 0
    assert all(row["seconds_per_step"] > 0 for row in results.values())


@pytest.mark.parametrize("dtype, rtol", [(np.float64, 1e-10), (np.float32, 2e-3)])
@pytest.mark.parametrize("outputs", ["all", "logdet", "inverse diagonal", "explained"])
@pytest.mark.parametrize("compiled", [False, True])
def test_inverse_terms_and_their_closed_form_gradient_equal_autodiff_and_dense_algebra(dtype, rtol, outputs, compiled):
    """preconditioned_inverse_terms == log|A_p|, diag(A_p⁻¹) and diag(K_xz A_p⁻¹ K_zx) from dense inverses, and its
    closed-form gradient (at K, Σ_p and K_zx, upstream on any subset of the three outputs) == TensorFlow's
    gradient of cholesky and triangular_solve; a central finite difference in float64 too."""
    from gpflow_ext.variational import preconditioned_inverse_terms

    rng = np.random.default_rng(11)
    M, N, P = 7, 5, 3
    Z, X = rng.normal(size=(M, 9)), rng.normal(size=(N, 9))
    Kmm = tf.constant(Z @ Z.T / 9 + 0.2 * np.eye(M), dtype=dtype)
    Kmn = tf.constant(Z @ X.T / 9, dtype=dtype)
    q_sigma = tf.constant(rng.uniform(0.1, 2.0, size=(M, P)), dtype=dtype)
    weights = [tf.constant(rng.normal(size=shape), dtype=dtype) for shape in ((P,), (P, M), (P, N))]
    chosen = {"all": (0, 1, 2), "logdet": (0,), "inverse diagonal": (1,), "explained": (2,)}[outputs]

    def loss(terms):
        return tf.add_n([tf.reduce_sum(weights[i] * terms[i]) for i in chosen])

    def autodiff_terms(Kmm, q_sigma, Kmn):
        A = tf.linalg.set_diag(tf.broadcast_to(Kmm, [P, M, M]), tf.linalg.diag_part(Kmm) + tf.transpose(q_sigma))
        L = tf.linalg.cholesky(A)
        L_inv = tf.linalg.triangular_solve(L, tf.eye(M, batch_shape=[P], dtype=dtype), lower=True)
        V = tf.matmul(L_inv, tf.broadcast_to(Kmn, [P, M, N]))
        return (2.0 * tf.reduce_sum(tf.math.log(tf.linalg.diag_part(L)), -1), tf.reduce_sum(tf.square(L_inv), -2),
                tf.reduce_sum(tf.square(V), -2))

    def value_and_gradients(terms_function):
        def run(Kmm, q_sigma, Kmn):
            with tf.GradientTape() as tape:
                tape.watch([Kmm, q_sigma, Kmn])
                terms = terms_function(Kmm, q_sigma, Kmn)
                value = loss(terms)
            return terms, value, tape.gradient(value, [Kmm, q_sigma, Kmn], unconnected_gradients="zero")

        return (tf.function(run) if compiled else run)(Kmm, q_sigma, Kmn)

    terms, value, grads = value_and_gradients(preconditioned_inverse_terms)
    _, twin_value, twin_grads = value_and_gradients(autodiff_terms)
    for p in range(P):  # the values against dense algebra
        A = Kmm.numpy().astype(np.float64) + np.diag(q_sigma.numpy()[:, p])
        A_inv = np.linalg.inv(A)
        np.testing.assert_allclose(terms[0].numpy()[p], np.linalg.slogdet(A)[1], rtol=rtol)
        np.testing.assert_allclose(terms[1].numpy()[p], np.diag(A_inv), rtol=rtol)
        np.testing.assert_allclose(terms[2].numpy()[p], np.einsum("mn,mk,kn->n", Kmn.numpy(), A_inv, Kmn.numpy()),
                                   rtol=rtol)
    np.testing.assert_allclose(value.numpy(), twin_value.numpy(), rtol=rtol)
    K_bar, twin_K_bar = grads[0].numpy(), twin_grads[0].numpy()
    symmetric = lambda G: 0.5 * (G + G.T)  # noqa: E731  (K is symmetric: only the symmetric part acts)
    for got, want in ((symmetric(K_bar), symmetric(twin_K_bar)), (grads[1].numpy(), twin_grads[1].numpy()),
                      (grads[2].numpy(), twin_grads[2].numpy())):
        assert np.all(np.isfinite(got))
        np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * np.max(np.abs(want)))
    if dtype == np.float64:
        E = rng.normal(size=(M, M))
        E, e, F = tf.constant(E + E.T), tf.constant(rng.normal(size=(M, P))), tf.constant(rng.normal(size=(M, N)))
        h = 1e-6
        fd = (loss(preconditioned_inverse_terms(Kmm + h * E, q_sigma + h * e, Kmn + h * F))
              - loss(preconditioned_inverse_terms(Kmm - h * E, q_sigma - h * e, Kmn - h * F))) / (2 * h)
        directional = sum(float(tf.reduce_sum(g * d)) for g, d in zip(grads, (E, e, F)))
        np.testing.assert_allclose(directional, float(fd), rtol=1e-6)


def test_default_kl_and_marginals_take_the_closed_form_gradient_and_equal_the_differentiated_path():
    """With inverse_and_logdet=None the fused KL + marginals use preconditioned_inverse_terms: the same values and
    gradients (at μ, Σ, K and K_zx) as differentiating through cholesky_inverse_and_logdet."""
    from gpflow_ext.utilities import cholesky_inverse_and_logdet
    from gpflow_ext.variational import preconditioned_kl_and_marginals

    rng = np.random.default_rng(5)
    M, N, P = 8, 6, 2
    Z, X = rng.normal(size=(M, 4)), rng.normal(size=(N, 4))
    kernel = gpflow.kernels.SquaredExponential(lengthscales=1.1)
    Kmm = tf.Variable(kernel(Z).numpy() + 1e-4 * np.eye(M))
    Kmn, Knn = tf.Variable(kernel(Z, X).numpy()), kernel(X, full_cov=False)
    q_mu, q_sigma = tf.Variable(rng.normal(size=(M, P))), tf.Variable(rng.uniform(0.1, 2.0, size=(M, P)))
    weights = rng.normal(size=(N, P)), rng.normal(size=(N, P))
    results = []
    for inverse_and_logdet in (None, cholesky_inverse_and_logdet):
        with tf.GradientTape() as tape:
            kl, mean, var = preconditioned_kl_and_marginals(Kmn, Kmm, Knn, q_mu, q_sigma,
                                                            inverse_and_logdet=inverse_and_logdet)
            value = 0.7 * kl + tf.reduce_sum(weights[0] * mean) + tf.reduce_sum(weights[1] * var)
        grads = tape.gradient(value, [q_mu, q_sigma, Kmm, Kmn])
        grads[2] = 0.5 * (grads[2] + tf.transpose(grads[2]))
        results.append((value.numpy(), [g.numpy() for g in grads]))
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-12)
    for got, want in zip(results[0][1], results[1][1]):
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-11 * np.max(np.abs(want)))
