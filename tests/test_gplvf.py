"""GPLVF: the SVI bound against GPflow's collapsed BayesianGPLVM, the flow KL estimator,
missing-data masks, minibatch factorisation, new-row inference, prediction and bad inputs."""
import gpflow
import numpy as np
import pytest
import tensorflow as tf
import tensorflow_probability as tfp
from gpflow.expectations import expectation
from gpflow.probability_distributions import DiagonalGaussian

from gpflow_ext.bijectors import planar_flow
from gpflow_ext.conditionals.pairs import (
    PerOutput,
    PerPair,
    RowSums,
    conditional_at_pairs,
    masked_quadratic_forms,
    mean_at_pairs,
)
from gpflow_ext.kullback_leiblers import (
    AnalyticGaussianKL,
    flow_kl_to_standard_normal,
    gaussian_kl_to_standard_normal,
)
from gpflow_ext.latents import Isotropic
from gpflow_ext.likelihoods.masked import masked_variational_expectations
from gpflow_ext.models import GPLVF
from gpflow_ext.models.new_rows_latents import NewRowsLatents
from gpflow_ext.recipes.gplvf import KERNEL_NAMES, _best_training_latents, build_encoder, infer_latent, make_kernel
from gpflow_ext.training import adam_by_group, fit
from gpflow_ext.validation import check_observations


def _toy(rng, n=24, d=4, q=2, missing=0.0, linear_trend=False):
    """Rows sin(x) W (+ x W' with ``linear_trend``) + noise, x ~ N(0, I_q); ``missing`` of the
    entries NaN (never a whole row)."""
    X = rng.standard_normal((n, q))
    Y = np.sin(X) @ rng.standard_normal((q, d))
    if linear_trend:
        Y = Y + X @ rng.standard_normal((q, d))
    Y = Y + 0.1 * rng.standard_normal((n, d))
    if missing:
        drop = rng.random(Y.shape) < missing
        drop[:, 0] = False  # no row empty
        Y[drop] = np.nan
    return Y


# ------------------------------------------------------------------------------- KL(q(x)||p(x))
def _per_sample_kl(flow, x_mean, x_var, noise, base_in_closed_form=True):
    """One-sample KL estimates [S, N] in a single call (rows tiled S times)."""
    S, N, Q = noise.shape
    tiled_mean = np.tile(x_mean, (S, 1))
    tiled_var = np.tile(x_var, (S, 1))
    _, kl = flow_kl_to_standard_normal(
        flow, tiled_mean, tiled_var, noise.reshape(1, S * N, Q), base_in_closed_form=base_in_closed_form
    )
    return kl.numpy().reshape(S, N)


def _mean_and_standard_error(samples):
    return samples.mean(0), samples.std(0) / np.sqrt(samples.shape[0])


def test_mc_kl_matches_closed_form_for_identity_flow():
    rng = np.random.default_rng(0)
    x_mean = rng.standard_normal((3, 2))
    x_var = rng.uniform(0.1, 2.0, (3, 2))
    exact = gaussian_kl_to_standard_normal(x_mean, x_var).numpy()
    noise = rng.standard_normal((40000, 3, 2))
    for flow in (None, tfp.bijectors.Identity(), planar_flow(0, 2)):
        plain = _per_sample_kl(flow, x_mean, x_var, noise, base_in_closed_form=False)
        estimate, standard_error = _mean_and_standard_error(plain)
        assert np.all(np.abs(estimate - exact) < 4 * standard_error), (estimate, exact, standard_error)
        assert np.all(standard_error < 0.02)
        # the default estimator keeps the base KL in closed form: exact for the identity, every draw
        split = _per_sample_kl(flow, x_mean, x_var, noise[:5])
        np.testing.assert_allclose(split, np.broadcast_to(exact, split.shape), rtol=1e-12)


def _kl_by_quadrature(flow, mean, var, points=241, half_width=7.0):
    """KL(q‖N(0,I)) for Q=2 by quadrature over the base variable with an autodiff log|det J|:
    KL = ∫ N(ε; 0, I) [log q0(x0) - log|det J(x0)| - log N(g(x0); 0, I)] dε,  x0 = μ + √s ε."""
    grid = np.linspace(-half_width, half_width, points)
    e1, e2 = np.meshgrid(grid, grid, indexing="ij")
    eps = np.stack([e1.ravel(), e2.ravel()], 1)
    columns = []
    for k in range(2):  # forward-mode autodiff: one Jacobian column per tangent direction
        x0 = tf.constant(mean + np.sqrt(var) * eps)  # a fresh tensor: tfp caches forward() per input
        tangent = tf.constant(np.tile(np.eye(2)[k], (x0.shape[0], 1)))
        with tf.autodiff.ForwardAccumulator(x0, tangent) as acc:
            x = flow.forward(x0)
        columns.append(acc.jvp(x).numpy())
    jacobian = np.stack(columns, axis=-1)  # [G, 2, 2]
    log_abs_det = np.log(np.abs(np.linalg.det(jacobian)))
    log_q0 = -0.5 * np.sum(np.log(2 * np.pi * var) + eps**2, 1)
    log_p = -0.5 * np.sum(np.log(2 * np.pi) + x.numpy() ** 2, 1)
    weight = np.exp(-0.5 * np.sum(eps**2, 1)) / (2 * np.pi) * (grid[1] - grid[0]) ** 2
    return float(np.sum(weight * (log_q0 - log_abs_det - log_p)))


def test_mc_kl_with_planar_flow_matches_quadrature_and_differs_from_base_kl():
    rng = np.random.default_rng(1)
    flow = planar_flow(4, 2, init_scale=1.5, seed=3)
    mean = np.array([[0.4, -0.7]])
    var = np.array([[0.5, 1.3]])
    exact = _kl_by_quadrature(flow, mean[0], var[0])
    estimate, standard_error = _mean_and_standard_error(_per_sample_kl(flow, mean, var, rng.standard_normal((50000, 1, 2))))
    assert abs(estimate[0] - exact) < 4 * standard_error[0], (estimate, exact, standard_error)
    base_kl = gaussian_kl_to_standard_normal(mean, var).numpy()[0]
    assert abs(base_kl - exact) > 10 * standard_error[0]  # the base-Gaussian KL is the wrong quantity


def test_mc_kl_with_flow_matches_high_sample_estimate():
    rng = np.random.default_rng(2)
    flow = planar_flow(3, 3, init_scale=1.0, seed=5)
    x_mean = rng.standard_normal((2, 3))
    x_var = rng.uniform(0.2, 1.0, (2, 3))
    reference = flow_kl_to_standard_normal(flow, x_mean, x_var, rng.standard_normal((40000, 2, 3)))[1].numpy()
    small = _per_sample_kl(flow, x_mean, x_var, rng.standard_normal((2000, 2, 3)))  # one-sample estimates
    estimate, standard_error = _mean_and_standard_error(small)
    assert np.all(np.abs(estimate - reference) < 4 * standard_error)


def test_split_and_plain_kl_estimators_agree_and_the_split_one_is_quieter_near_the_identity():
    """KL(N(μ, s)‖p) in closed form + MC flow correction (default) vs every term by MC: same expectation for a
    strong flow; for the identity a single draw is exact; near it the split estimator's variance is far smaller."""
    rng = np.random.default_rng(21)
    x_mean = rng.standard_normal((2, 3))
    x_var = rng.uniform(0.2, 1.0, (2, 3))

    def one_sample(flow, closed_form, num=4000):
        return _per_sample_kl(flow, x_mean, x_var, rng.standard_normal((num, 2, 3)), base_in_closed_form=closed_form)

    strong = planar_flow(3, 3, init_scale=1.0, seed=5)
    split, plain = one_sample(strong, True), one_sample(strong, False)
    difference = split.mean(0) - plain.mean(0)
    standard_error = np.sqrt(split.var(0) / len(split) + plain.var(0) / len(plain))
    assert np.all(np.abs(difference) < 4 * standard_error), (difference, standard_error)
    exact = gaussian_kl_to_standard_normal(x_mean, x_var).numpy()
    np.testing.assert_allclose(one_sample(None, True, num=3), np.broadcast_to(exact, (3, 2)), rtol=1e-12)
    near_identity = planar_flow(10, 3, seed=1)  # default init_scale: within 0.01 of the identity
    assert np.all(one_sample(near_identity, True).var(0) < 1e-2 * one_sample(near_identity, False).var(0))


# ------------------------------------------------------------------------------- bound vs BayesianGPLVM
def _optimal_q_u(kernel, Z, x_mean, x_var, Y, noise_variance):
    """Analytic optimum q*(u_d) = N(m_d, Σ): Σ = K (K + σ⁻²Ψ2)⁻¹ K, m_d = σ⁻² K (K + σ⁻²Ψ2)⁻¹ Ψ1ᵀ y_d."""
    iv = gpflow.inducing_variables.InducingPoints(Z)
    px = DiagonalGaussian(tf.constant(x_mean), tf.constant(x_var))
    psi1 = expectation(px, (kernel, iv)).numpy()  # [N, M]
    psi2 = tf.reduce_sum(expectation(px, (kernel, iv), (kernel, iv)), 0).numpy()  # [M, M]
    K = gpflow.covariances.Kuu(iv, kernel, jitter=gpflow.config.default_jitter()).numpy()
    A = K + psi2 / noise_variance
    Sigma = K @ np.linalg.solve(A, K)
    m = K @ np.linalg.solve(A, psi1.T @ Y) / noise_variance  # [M, D]
    return m, Sigma, K


@pytest.mark.parametrize("whiten", [True, False])
def test_svi_bound_matches_collapsed_bayesian_gplvm_at_optimal_q_u(whiten):
    rng = np.random.default_rng(10)
    N, D, Q, M = 20, 3, 2, 6
    Y = _toy(rng, N, D, Q)
    x_mean = rng.standard_normal((N, Q))
    x_var = rng.uniform(0.05, 0.5, (N, Q))
    Z = rng.standard_normal((M, Q))
    lengthscales = np.array([1.3, 0.8])
    noise_variance = 0.2

    kernel = gpflow.kernels.SquaredExponential(variance=1.5, lengthscales=lengthscales)
    reference = gpflow.models.BayesianGPLVM(
        Y, x_mean, x_var, kernel, inducing_variable=gpflow.inducing_variables.InducingPoints(Z)
    )
    reference.likelihood.variance.assign(noise_variance)
    collapsed = reference.elbo().numpy()

    model = GPLVF(
        Y, Q, M, flow=None, X_mean=x_mean, X_var=x_var, Z=Z, whiten=whiten,
        kernel=gpflow.kernels.SquaredExponential(variance=1.5, lengthscales=lengthscales),
        mean_function=gpflow.mean_functions.Zero(), noise_variance=noise_variance,
    )
    m, Sigma, K = _optimal_q_u(model.kernel, Z, x_mean, x_var, Y, noise_variance)
    if whiten:
        L = np.linalg.cholesky(K)
        m = np.linalg.solve(L, m)
        Sigma = np.linalg.solve(L, np.linalg.solve(L, Sigma).T)
    model.q_mu.assign(m)
    model.q_sqrt.assign(np.tile(np.linalg.cholesky(Sigma)[None], (D, 1, 1)))

    data = model.training_data()
    chunks = np.array([
        model.elbo_given_base_noise(data, tf.constant(rng.standard_normal((100, N, Q)))).numpy() for _ in range(40)
    ])  # 40 estimates, 100 samples each
    estimate, standard_error = chunks.mean(), chunks.std() / np.sqrt(len(chunks))
    assert abs(estimate - collapsed) < 4 * standard_error + 1e-8, (estimate, collapsed, standard_error)
    assert standard_error < 0.05 * abs(collapsed)  # the comparison is not vacuous

    # a non-optimal q(u) gives a strictly lower bound (the collapsed bound is the max over q(u))
    model.q_mu.assign(m + 0.3)
    worse = np.mean([
        model.elbo_given_base_noise(data, tf.constant(rng.standard_normal((100, N, Q)))).numpy() for _ in range(10)
    ])
    assert worse < collapsed - 10 * standard_error


# ------------------------------------------------------------------------------- missing data
@pytest.mark.parametrize("with_flow", [False, True])
def test_masked_entries_have_no_effect_on_bound_or_gradients(with_flow):
    rng = np.random.default_rng(20)
    Y = _toy(rng, 16, 5, 2, missing=0.4)
    mask = ~np.isnan(Y)
    garbage = np.where(mask, Y, rng.normal(0, 1e6, Y.shape))

    def build(values, m):
        return GPLVF(values, 2, 5, mask=m, flow=planar_flow(2, 2, init_scale=0.5) if with_flow else None, seed=1)

    model_nan = build(Y, None)
    model_garbage = build(garbage, mask)
    noise = tf.constant(rng.standard_normal((3, 16, 2)))
    idx = np.arange(16)

    def bound_and_grads(model, values):
        with tf.GradientTape() as tape:
            bound = model.elbo_given_base_noise((values, mask.astype(float), idx), noise)
        return bound.numpy(), [tf.convert_to_tensor(g).numpy() for g in tape.gradient(bound, model.trainable_variables)]

    b1, g1 = bound_and_grads(model_nan, model_nan.training_data()[0])
    b2, g2 = bound_and_grads(model_garbage, garbage)  # raw garbage straight into the bound
    b3, g3 = bound_and_grads(model_nan, np.where(mask, Y, np.nan))  # NaN at the masked entries
    assert np.isfinite(b1)
    np.testing.assert_allclose(b2, b1, rtol=1e-13)
    np.testing.assert_allclose(b3, b1, rtol=1e-13)
    for a, b, c in zip(g1, g2, g3):
        assert np.all(np.isfinite(a))
        np.testing.assert_allclose(b, a, rtol=1e-11, atol=1e-12)
        np.testing.assert_allclose(c, a, rtol=1e-11, atol=1e-12)

    # and an observed entry does matter
    changed = model_nan.training_data()[0].copy()
    changed[np.argwhere(mask)[0][0], np.argwhere(mask)[0][1]] += 1.0
    b4, _ = bound_and_grads(model_nan, changed)
    assert b4 != b1


@pytest.mark.parametrize("variance_by", [PerPair(), PerOutput(), RowSums()])
@pytest.mark.parametrize("whiten", [True, False])
@pytest.mark.parametrize("mean_function", ["constant", "zero", "linear", "constant+shared-linear"])
def test_pairwise_terms_equal_dense_conditional_and_masked_sum(whiten, mean_function, variance_by):
    """The bound evaluates f at observed (row, output) pairs only; its dense twin is GPflow's conditional over
    every output, masked and summed. Values, per-row terms and gradients must agree, whichever way the pairs'
    variances are formed."""
    rng = np.random.default_rng(70)
    Y = _toy(rng, 12, 7, 3, missing=0.6)
    mean = {"constant": None, "zero": gpflow.mean_functions.Zero(),
            "linear": gpflow.mean_functions.Linear(rng.standard_normal((3, 7)), rng.standard_normal(7)),
            # a per-output constant plus one linear function of x shared by every output ([N, 1] broadcast to D)
            "constant+shared-linear": gpflow.mean_functions.Constant(rng.standard_normal(7))
            + gpflow.mean_functions.Linear(rng.standard_normal((3, 1)), np.zeros(1))}[mean_function]
    model = GPLVF(Y, 3, 5, flow=planar_flow(2, 3, init_scale=0.5), whiten=whiten, mean_function=mean,
                  variance_by=variance_by)
    assert model.variance_by is variance_by
    model.q_mu.assign(rng.standard_normal((5, 7)))
    model.q_sqrt.assign(np.tril(0.3 * rng.standard_normal((7, 5, 5))) + 0.5 * np.eye(5))
    values, mask = check_observations(Y)
    x = tf.constant(rng.standard_normal((4, 12, 3)))  # [S, N, Q]
    rows, outputs = np.nonzero(mask)
    f_mean, f_var = conditional_at_pairs(
        x, tf.constant(rows), tf.constant(outputs), model.inducing_variable, model.kernel, model.q_mu,
        model.q_sqrt, white=whiten, variance_by=variance_by,
    )
    dense_mean, dense_var = model.predict_f(x)  # [S, N, D], mean function included
    f_mean = f_mean + mean_at_pairs(model.mean_function, x, tf.constant(rows), tf.constant(outputs), 7)
    np.testing.assert_allclose(f_mean.numpy(), dense_mean.numpy()[:, rows, outputs], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(f_var.numpy(), dense_var.numpy()[:, rows, outputs], rtol=1e-10, atol=1e-12)

    x_mean = tf.constant(rng.standard_normal((12, 3)))
    x_var = tf.constant(rng.uniform(0.1, 1.0, (12, 3)))
    noise = tf.constant(rng.standard_normal((4, 12, 3)))

    def dense_row_terms():
        xs, kl = model.latent_samples_and_kl(x_mean, x_var, noise)
        m, v = model.predict_f(xs)
        ell = masked_variational_expectations(
            model.likelihood, xs, tf.broadcast_to(values[None], tf.shape(m)), tf.broadcast_to(mask[None], tf.shape(m)),
            m, v,
        )
        return tf.reduce_mean(ell, axis=0), kl

    variables = model.trainable_variables
    with tf.GradientTape(persistent=True) as tape:
        ell, kl = model.row_terms(tf.constant(values), tf.constant(mask), x_mean, x_var, noise)
        dense_ell, dense_kl = dense_row_terms()
        loss, dense_loss = tf.reduce_sum(ell - kl), tf.reduce_sum(dense_ell - dense_kl)
    np.testing.assert_allclose(ell.numpy(), dense_ell.numpy(), rtol=1e-10)
    np.testing.assert_allclose(kl.numpy(), dense_kl.numpy(), rtol=1e-12)
    for v, g, dense_g in zip(variables, tape.gradient(loss, variables), tape.gradient(dense_loss, variables)):
        if dense_g is None:
            assert g is None, v.name
            continue
        g, dense_g = tf.convert_to_tensor(g).numpy(), tf.convert_to_tensor(dense_g).numpy()
        assert np.all(np.isfinite(g)), v.name
        np.testing.assert_allclose(g, dense_g, rtol=1e-8, atol=1e-10 * np.abs(dense_g).max(), err_msg=v.name)


@pytest.mark.parametrize("jit_compile", [False, True])
def test_masked_quadratic_forms_and_their_written_out_gradient_equal_autodiff_of_the_pairwise_sum(jit_compile):
    """Σ_d mask[n, d] ‖L_dᵀ a_sn‖² [S, B], and its hand-written gradient in A and L, against the same sum formed
    pair by pair with autodiff, under a non-uniform upstream gradient; the mask gets no gradient."""
    rng = np.random.default_rng(71)
    A = tf.Variable(rng.standard_normal((3, 6, 4)))  # [S, B, M]
    L = tf.Variable(np.tril(rng.standard_normal((5, 4, 4))))  # [D, M, M]
    mask = tf.constant((rng.uniform(size=(6, 5)) < 0.4).astype(np.float64))  # [B, D]
    weights = tf.constant(rng.standard_normal((3, 6)))  # upstream gradient [S, B]

    def brute():
        LTa = tf.einsum("dij,sbi->sbdj", L, A)  # [S, B, D, M]: L_dᵀ a_sb
        return tf.reduce_sum(tf.reduce_sum(tf.square(LTa), axis=-1) * mask[None], axis=-1)  # [S, B]

    @tf.function(jit_compile=jit_compile)
    def value_and_gradients(function):
        with tf.GradientTape() as tape:
            tape.watch(mask)
            value = function()
            loss = tf.reduce_sum(weights * value)
        return value, tape.gradient(loss, [A, L, mask])

    value, (dA, dL, dmask) = value_and_gradients(lambda: masked_quadratic_forms(A, L, mask))
    twin, (twin_dA, twin_dL, _) = value_and_gradients(brute)
    np.testing.assert_allclose(value.numpy(), twin.numpy(), rtol=1e-12)
    np.testing.assert_allclose(dA.numpy(), twin_dA.numpy(), rtol=1e-11, atol=1e-12)
    np.testing.assert_allclose(dL.numpy(), twin_dL.numpy(), rtol=1e-11, atol=1e-12)
    assert dmask is None


def test_bound_shares_one_q_sqrt_transform_between_its_terms():
    """The bound converts q_sqrt once and hands the value to both terms; passing it changes no number."""
    rng = np.random.default_rng(72)
    model = GPLVF(_toy(rng, 10, 6, 2, missing=0.5), 2, 4)
    model.q_sqrt.assign(np.tril(0.3 * rng.standard_normal((6, 4, 4))) + 0.5 * np.eye(4))
    q_sqrt = tf.convert_to_tensor(model.q_sqrt)
    np.testing.assert_allclose(model.prior_kl(q_sqrt).numpy(), model.prior_kl().numpy(), rtol=1e-14)
    values, mask, _ = model.training_data()
    x_mean, x_var = model.training_latents()
    noise = tf.constant(rng.standard_normal((2, 10, 2)))
    shared = model.row_terms(values, mask, x_mean, x_var, noise, q_sqrt=q_sqrt)
    own = model.row_terms(values, mask, x_mean, x_var, noise)
    for a, b in zip(shared, own):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-14)


def test_bound_factorises_over_rows_for_minibatches():
    rng = np.random.default_rng(30)
    Y = _toy(rng, 12, 4, 2, missing=0.3)
    model = GPLVF(Y, 2, 4, flow=planar_flow(2, 2, init_scale=0.5))
    values, mask, idx = model.training_data()
    noise = rng.standard_normal((2, 12, 2))
    full = model.elbo_given_base_noise((values, mask, idx), tf.constant(noise)).numpy()
    perm = rng.permutation(12)
    batches = [perm[:4], perm[4:8], perm[8:]]
    minibatch = [
        model.elbo_given_base_noise((values[b], mask[b], idx[b]), tf.constant(noise[:, b])).numpy() for b in batches
    ]
    np.testing.assert_allclose(np.mean(minibatch), full, rtol=1e-12)


# ------------------------------------------------------------------------------- prediction
def test_predictions_match_gpflow_svgp_at_points():
    rng = np.random.default_rng(40)
    Y = _toy(rng, 15, 3, 2, missing=0.2)
    model = GPLVF(Y, 2, 5)
    model.q_mu.assign(rng.standard_normal((5, 3)))
    svgp = gpflow.models.SVGP(
        model.kernel, model.likelihood, model.inducing_variable, mean_function=model.mean_function,
        num_latent_gps=3, q_mu=model.q_mu.numpy(), q_sqrt=model.q_sqrt.numpy(), whiten=True,
    )
    x = rng.standard_normal((4, 2))
    tiny = np.full_like(x, 1e-30)  # q(x*) a point mass: eq. 33 with J = 1 is an SVGP predictive density
    mean, var = model.predict_y_marginal(x, tiny, num_samples=1)
    ref_mean, ref_var = svgp.predict_y(x)
    np.testing.assert_allclose(mean.numpy(), ref_mean.numpy(), rtol=1e-9)
    np.testing.assert_allclose(var.numpy(), ref_var.numpy(), rtol=1e-9)
    # GPflow's contract at latent points: tensors (mean, var) of f and y, the log density of (X, Y)
    for ours, ref in ((model.predict_f(x), svgp.predict_f(x)), (model.predict_y(x), svgp.predict_y(x))):
        assert all(isinstance(t, tf.Tensor) for t in ours)
        np.testing.assert_allclose(ours[0].numpy(), ref[0].numpy(), rtol=1e-12)
        np.testing.assert_allclose(ours[1].numpy(), ref[1].numpy(), rtol=1e-12)
    y_test = rng.standard_normal((4, 3))
    np.testing.assert_allclose(model.predict_log_density((x, y_test)).numpy(),
                               svgp.predict_log_density((x, y_test)).numpy(), rtol=1e-12)
    y_missing = y_test.copy()
    y_missing[1, 2] = np.nan  # a missing entry contributes nothing: the density of the other two outputs
    two = model.predict_log_density((x, y_missing)).numpy()[1]
    f_mean, f_var = svgp.predict_f(x[1:2])
    ref_two = sum(-0.5 * np.log(2 * np.pi * (f_var[0, d] + model.likelihood.variance.numpy()))
                  - 0.5 * (y_test[1, d] - f_mean[0, d]) ** 2 / (f_var[0, d] + model.likelihood.variance.numpy())
                  for d in range(2))
    np.testing.assert_allclose(two, ref_two, rtol=1e-12)
    np.testing.assert_allclose(
        model.predict_log_density_marginal(y_test, x, tiny, num_samples=1).numpy(),
        svgp.predict_log_density((x, y_test)).numpy(), rtol=1e-9,
    )
    # with spread in q(x*): mixture over samples (log-mean-exp), never above the best sample
    x_var = np.full_like(x, 0.3)
    per_row = model.predict_log_density_marginal(y_test, x, x_var, num_samples=200).numpy()
    assert per_row.shape == (4,) and np.all(np.isfinite(per_row))
    # processing rows in chunks (memory bound) changes nothing
    whole_mean, whole_var = model.predict_y_marginal(x, x_var, num_samples=7)
    model._row_chunks = lambda n, j: [(i, i + 1) for i in range(n)]
    chunk_mean, chunk_var = model.predict_y_marginal(x, x_var, num_samples=7)
    np.testing.assert_allclose(chunk_mean, whole_mean, rtol=1e-12)
    np.testing.assert_allclose(chunk_var, whole_var, rtol=1e-12)
    np.testing.assert_allclose(model.predict_log_density_marginal(y_test, x, x_var, num_samples=200), per_row, rtol=1e-12)


def test_infer_latent_keeps_model_fixed_and_improves_bound():
    rng = np.random.default_rng(50)
    Y = _toy(rng, 30, 5, 2, missing=0.3)
    model = GPLVF(Y, 2, 6, flow=planar_flow(2, 2, init_scale=0.3))
    before = [v.numpy().copy() for v in model.trainable_variables]
    Y_new = _toy(rng, 5, 5, 2, missing=0.5)
    mu0 = _best_training_latents(model, *check_observations(Y_new))
    values, mask = check_observations(Y_new)
    noise = tf.constant(rng.standard_normal((256, 5, 2)))

    def local_bound(mu, var):
        ell, kl = model.row_terms(tf.constant(values), tf.constant(mask), tf.constant(mu), tf.constant(var), noise)
        return float(tf.reduce_sum(ell - kl))

    mu, var = infer_latent(model, Y_new, num_steps=60, learning_rate=0.05, num_samples=4)
    assert mu.shape == (5, 2) and var.shape == (5, 2) and np.all(var > 0)
    assert local_bound(mu, var) > local_bound(mu0, np.full_like(mu0, 0.1))
    for a, v in zip(before, model.trainable_variables):
        np.testing.assert_array_equal(a, v.numpy())
    mean, pred_var = model.predict_y_marginal(mu, var, num_samples=20)
    assert mean.shape == (5, 5) and np.all(pred_var.numpy() > 0)
    assert np.isfinite(model.test_log_likelihood(Y_new, mu, var, num_samples=20))


def test_infer_latent_reproduces_its_numbers_through_fit():
    """infer_latent trains NewRowsLatents with fit; these (μ*, s*) were produced by the hand-written Adam
    loop it replaced (same seed, same generator draws): the values agree to the last digits."""
    rng = np.random.default_rng(51)
    Y = _toy(rng, 20, 5, 2, missing=0.3)
    Y_new = _toy(rng, 3, 5, 2, missing=0.4)
    model = GPLVF(Y, 2, 4, flow=planar_flow(2, 2, init_scale=0.3, seed=0), seed=0)
    before = [v.numpy().copy() for v in model.trainable_variables]
    mu, var = infer_latent(model, Y_new, num_steps=15, learning_rate=0.05, num_samples=3, seed=7, decay="cosine")
    expected_mu = [[-0.22743412505892854, 0.02977544733381917], [-0.2277510468434976, 0.03578470054391291],
                   [-0.227662682751491, 0.052227302404025726]]
    expected_var = [[0.14906992898565077, 0.1490578843728184], [0.14907703835749758, 0.1490544956365623],
                    [0.1490818074411171, 0.14910525496755195]]
    np.testing.assert_allclose(mu, expected_mu, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(var, expected_var, rtol=1e-9, atol=1e-12)
    for a, v in zip(before, model.trainable_variables):
        np.testing.assert_array_equal(a, v.numpy())
    again = infer_latent(model, Y_new, num_steps=15, learning_rate=0.05, num_samples=3, seed=7, decay="cosine")
    np.testing.assert_array_equal(again[0], mu)
    np.testing.assert_array_equal(again[1], var)


def test_new_rows_latents_trains_only_its_own_variables():
    rng = np.random.default_rng(52)
    Y = _toy(rng, 12, 4, 2, missing=0.2)
    model = GPLVF(Y, 2, 3, base_covariance=Isotropic())
    values, mask = check_observations(Y[:2])
    problem = NewRowsLatents(model, values, mask, np.zeros((2, 2)), np.zeros((2, 1)), num_samples=2, seed=0)
    assert {v.ref() for v in problem.trainable_variables} == {problem.x_mean.ref(), problem.x_log_var.ref()}
    assert problem.training_loss().shape == ()


def test_infer_latent_cosine_decay_settles_nearer_the_optimum():
    """With one Monte Carlo draw per step, constant-rate Adam stops one noisy step from the optimum of the
    local bound; the cosine-decayed rate settles. Reference optimum: a long many-draw run."""
    rng = np.random.default_rng(51)
    Y = _toy(rng, 30, 5, 2, missing=0.3)
    model = GPLVF(Y, 2, 6, flow=planar_flow(2, 2, init_scale=0.3))
    fit(model, model.training_data(), epochs=60, batch_size=30, learning_rate=0.03, progress=False)
    Y_new = _toy(rng, 8, 5, 2, missing=0.4)
    ref_mu, ref_var = infer_latent(model, Y_new, num_steps=1500, num_samples=64, decay="cosine", seed=1)
    errors = {}
    for decay in ("constant", "cosine"):
        mu, var = infer_latent(model, Y_new, num_steps=300, num_samples=1, decay=decay, seed=2)
        errors[decay] = (np.abs(mu - ref_mu).mean(), np.abs(np.log(var / ref_var)).mean())
    # measured: mean |Δμ| 0.11 (constant) against 0.05 (cosine); mean |Δ log s| 0.11 against 0.08
    assert errors["cosine"][0] < 0.7 * errors["constant"][0], errors
    assert errors["cosine"][1] < errors["constant"][1], errors
    with pytest.raises(ValueError, match="decay must be 'constant' or 'cosine'"):
        infer_latent(model, Y_new, decay="linear")
    with pytest.raises(ValueError, match="num_samples must be >= 1"):
        infer_latent(model, Y_new, num_samples=0)


def test_encoder_amortises_q_x():
    rng = np.random.default_rng(60)
    Y = _toy(rng, 20, 6, 2, missing=0.3)
    model = GPLVF(Y, 2, 5, flow=planar_flow(1, 2), encoder=build_encoder(6, 2))
    encoder_vars = {id(v) for v in model.encoder.trainable_variables}
    assert encoder_vars and encoder_vars <= {id(v) for v in model.trainable_variables}
    data = model.training_data()
    with tf.GradientTape() as tape:
        bound = model.elbo(data)
    grads = tape.gradient(bound, model.encoder.trainable_variables)
    assert all(g is not None and np.all(np.isfinite(g.numpy())) for g in grads)
    # the row index does not matter with an encoder
    noise = tf.constant(rng.standard_normal((1, 20, 2)))
    b1 = model.elbo_given_base_noise(data, noise)
    b2 = model.elbo_given_base_noise((data[0], data[1], data[2][::-1]), noise)
    np.testing.assert_allclose(b1.numpy(), b2.numpy())
    mu, var = model.encode(Y[:3])
    assert mu.shape == (3, 2) and np.all(var > 0)
    # no per-row (μ_n, s_n) at all, and the training rows' q(x_n) is the encoder's
    with pytest.raises(AttributeError, match="no per-row X_mean"):
        model.X_mean
    assert {v.ref() for v in model.latents.local_variables} == {v.ref() for v in model.encoder.trainable_variables}
    train_mu, train_var = model.training_latents()
    all_mu, all_var = model.encode(Y)
    np.testing.assert_array_equal(train_mu, all_mu)
    np.testing.assert_array_equal(train_var, all_var)


def test_short_training_increases_bound():
    rng = np.random.default_rng(70)
    Y = _toy(rng, 40, 5, 2, missing=0.3)
    _assert_training_increases_bound(GPLVF(Y, 2, 8, flow=planar_flow(2, 2), num_samples=2), rng, steps=100)


def _assert_training_increases_bound(model, rng, steps):
    """Adam on the training loss raises the bound evaluated with fixed base noise (16 samples)."""
    data = model.training_data()
    noise = tf.constant(rng.standard_normal((16, model.num_data, model.latent_dim)))
    start = model.elbo_given_base_noise(data, noise).numpy()
    fit(model, data, epochs=steps, optimizer=gpflow.keras.tf_keras.optimizers.Adam(0.02), progress=False)
    assert model.elbo_given_base_noise(data, noise).numpy() > start


# ------------------------------------------------------------------------------- bad inputs
def test_bad_inputs_give_clear_errors():
    rng = np.random.default_rng(80)
    Y = _toy(rng, 10, 4, 2)
    bad = Y.copy()
    bad[3] = np.nan
    with pytest.raises(ValueError, match="no observed entry"):
        GPLVF(bad, 2, 3)
    with pytest.raises(ValueError, match="no observed entry"):
        row_two_unobserved = np.ones(Y.shape, bool)
        row_two_unobserved[2] = False
        GPLVF(Y, 2, 3, mask=row_two_unobserved)
    model = GPLVF(Y, 2, 3)
    with pytest.raises(ValueError, match="width D=4"):
        infer_latent(model, Y[:, :3])
    with pytest.raises(ValueError, match="width D=4"):
        model.predict_log_density_marginal(Y[:, :3], np.zeros((10, 2)), np.ones((10, 2)))
    nan_observed = Y.copy()
    nan_observed[1, 1] = np.nan
    with pytest.raises(ValueError, match="NaN at observed entry \\(1, 1\\)"):
        GPLVF(nan_observed, 2, 3, mask=np.ones_like(Y, dtype=bool))
    inf = Y.copy()
    inf[0, 2] = np.inf
    with pytest.raises(ValueError, match="infinite"):
        GPLVF(inf, 2, 3)
    with pytest.raises(ValueError, match="2-D"):
        GPLVF(Y[0], 2, 3)
    with pytest.raises(ValueError, match="empty"):
        GPLVF(np.zeros((0, 4)), 2, 3)
    with pytest.raises(ValueError, match="mask must have the shape"):
        GPLVF(Y, 2, 3, mask=np.ones((10, 3), bool))
    with pytest.raises(ValueError, match="mask must be boolean"):
        GPLVF(Y, 2, 3, mask=np.full(Y.shape, 2))
    with pytest.raises(ValueError, match="latent_dim"):
        GPLVF(Y, 0, 3)
    with pytest.raises(ValueError, match=r"Z must be finite, of shape \[num_inducing=3, Q=2\], got \(4, 2\)"):
        GPLVF(Y, 2, 3, Z=np.zeros((4, 2)))
    with pytest.raises(ValueError, match="Z must be finite"):  # before GPflow's Parameter check inside TensorFlow
        GPLVF(Y, 2, 3, Z=np.where(np.eye(3, 2) > 0, np.nan, 0.0))
    with pytest.raises(ValueError, match="x_var must be strictly positive"):
        model.predict_y_marginal(np.zeros((2, 2)), np.zeros((2, 2)))
    with pytest.raises(ValueError, match="Xnew must have 2 columns"):
        model.predict_f(np.zeros((2, 3)))
    with pytest.raises(TypeError, match="flow must be"):
        GPLVF(Y, 2, 3, flow="planar")
    with pytest.raises(ValueError, match="kl_x='analytic' needs flow=None"):
        GPLVF(Y, 2, 3, flow=planar_flow(1, 2), kl_x=AnalyticGaussianKL())
    with pytest.raises(ValueError, match="no encoder"):
        model.encode(Y)


def test_sparse_input_equals_nan_input():
    import scipy.sparse

    rng = np.random.default_rng(90)
    Y = _toy(rng, 8, 5, 2, missing=0.5)
    mask = ~np.isnan(Y)
    sparse = scipy.sparse.csr_matrix((Y[mask], np.nonzero(mask)), shape=Y.shape)
    v1, m1 = check_observations(Y)
    v2, m2 = check_observations(sparse)
    np.testing.assert_array_equal(v1, v2)
    np.testing.assert_array_equal(m1, m2)


def test_trains_with_the_shared_fit_loop():
    rng = np.random.default_rng(100)
    Y = _toy(rng, 30, 4, 2, missing=0.3)
    model = GPLVF(Y, 2, 5, flow=planar_flow(1, 2))
    history = fit(model, model.training_data(), epochs=3, batch_size=10, learning_rate=0.02, progress=False)
    assert len(history.objective) == 3 and np.all(np.isfinite(history.objective))



@pytest.mark.parametrize("flow_length, encoder", [(0, None), (2, None), (1, True)])
def test_parameter_groups_split_the_trainable_variables_exactly_once(flow_length, encoder):
    Y = _toy(np.random.default_rng(101), 20, 4, 2, missing=0.2)
    model = GPLVF(Y, 2, 5, flow=planar_flow(flow_length, 2) if flow_length else None,
                  encoder=build_encoder(4, 2) if encoder else None)
    groups = model.parameter_groups()
    assert list(groups) == ["flow", "local", "global"]
    grouped = [v.ref() for g in groups.values() for v in g]
    assert len(grouped) == len(set(grouped)) and set(grouped) == {v.ref() for v in model.trainable_variables}
    refs = {name: {v.ref() for v in g} for name, g in groups.items()}
    assert refs["flow"] == ({v.ref() for v in model.flow.trainable_variables} if flow_length else set())
    if encoder:  # the encoder replaces the per-row parameters
        assert refs["local"] == {v.ref() for v in model.encoder.trainable_variables}
    else:
        assert refs["local"] == {model.X_mean.unconstrained_variable.ref(), model.X_var.unconstrained_variable.ref()}
    for parameter in (model.kernel.lengthscales, model.likelihood.variance, model.q_mu, model.q_sqrt,
                      model.inducing_variable.Z):
        assert (parameter.unconstrained_variable.ref() in refs["global"]) == parameter.trainable


def test_a_vanishing_group_rate_in_fit_freezes_exactly_that_group():
    """adam_by_group(model.parameter_groups(), ...) through the shared fit loop: the flow at 1e-12 stays put
    (an Adam step is at most about its rate) while the local and global groups train at the default rate."""
    Y = _toy(np.random.default_rng(102), 30, 4, 2, missing=0.3)
    model = GPLVF(Y, 2, 5, flow=planar_flow(2, 2))
    before = {name: [v.numpy().copy() for v in g] for name, g in model.parameter_groups().items()}
    optimizer = adam_by_group(model.parameter_groups(), {"flow": 1e-12}, 0.02)
    fit(model, model.training_data(), epochs=3, batch_size=10, optimizer=optimizer, progress=False)
    moved = {name: max(np.abs(v.numpy() - b).max() for v, b in zip(g, before[name]))
             for name, g in model.parameter_groups().items()}
    assert moved["flow"] < 1e-10 and moved["local"] > 1e-3 and moved["global"] > 1e-3, moved


# ------------------------------------------------------------------------------- named kernels
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
    model = GPLVF(_toy(np.random.default_rng(1), 8, 3, 2, linear_trend=True), 2, 3)
    assert isinstance(model.kernel, gpflow.kernels.SquaredExponential)
    np.testing.assert_array_equal(model.kernel.lengthscales.numpy(), np.ones(2))
    named = GPLVF(_toy(np.random.default_rng(1), 8, 3, 2, linear_trend=True), 2, 3, kernel=make_kernel("se+linear", 2, 3))
    assert isinstance(named.kernel, gpflow.kernels.Sum)


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
    Y = _toy(rng, N, D, Q, linear_trend=True)
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
        Y, Q, M, flow=None, X_mean=x_mean, X_var=x_var, Z=Z, whiten=False, kernel=make_kernel(name, Q, M),
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
    Y = _toy(rng, 24, 5, 2, missing=0.4, linear_trend=True)
    model = GPLVF(Y, 2, 5, flow=planar_flow(2, 2, init_scale=0.5), kernel=make_kernel("se+linear", 2, 5), num_samples=2,
                  seed=3)
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

    _assert_training_increases_bound(model, rng, steps=60)
    mu, var = infer_latent(model, Y[:4], num_steps=5)
    mean, _ = model.predict_y_marginal(mu, var, num_samples=5)
    assert np.all(np.isfinite(mean.numpy()))


def test_kernel_arguments_give_clear_errors():
    Y = _toy(np.random.default_rng(13), 10, 4, 2, linear_trend=True)
    assert KERNEL_NAMES == ("se", "linear", "se+linear")
    with pytest.raises(ValueError, match="kernel must be one of"):
        make_kernel("rbf", 2, 3)
    with pytest.raises(ValueError, match="num_inducing=3 must be <= latent_dim=2"):
        make_kernel("linear", 2, 3)
    with pytest.raises(ValueError, match="latent_dim"):
        make_kernel("se", 0)
    with pytest.raises(TypeError, match="kernel must be a gpflow Kernel"):
        GPLVF(Y, 2, 3, kernel=3.0)
    GPLVF(Y, 2, 2, kernel=make_kernel("linear", 2, 2))  # M <= Q is fine


def test_variance_by_auto_follows_the_likelihood_and_observed_fraction_and_bad_values_are_rejected():
    rng = np.random.default_rng(71)
    sparse_rows = _toy(rng, 12, 8, 2, missing=0.95)
    dense_rows = _toy(rng, 12, 8, 2, missing=0.3)
    assert isinstance(GPLVF(sparse_rows, 2, 3).variance_by, RowSums)  # a Gaussian of one variance: row sums
    binary = {"likelihood": gpflow.likelihoods.Bernoulli()}
    sparse_binary, dense_binary = (np.where(np.isnan(Y), np.nan, Y > 0) for Y in (sparse_rows, dense_rows))
    assert isinstance(GPLVF(sparse_binary, 2, 3, **binary).variance_by, PerPair)
    assert isinstance(GPLVF(dense_binary, 2, 3, **binary).variance_by, PerOutput)
    switched = gpflow.likelihoods.SwitchedLikelihood([gpflow.likelihoods.Gaussian(), gpflow.likelihoods.Gaussian()])
    assert not isinstance(GPLVF(sparse_rows, 2, 3, likelihood=switched, likelihood_columns=[0, 1] * 4).variance_by,
                          RowSums)
    with pytest.raises(TypeError, match="variance_by must be a gpflow_ext.conditionals.pairs.PerPair"):
        GPLVF(dense_rows, 2, 3, variance_by="pairs")
    with pytest.raises(ValueError, match=r"variance_by=RowSums\(\) needs a gpflow.likelihoods.Gaussian likelihood"):
        GPLVF(dense_binary, 2, 3, variance_by=RowSums(), **binary)


def test_expected_log_likelihood_is_the_likelihoods_own_and_equals_the_explicit_gaussian_formula():
    """row_terms uses gpflow.likelihoods.Gaussian.variational_expectations at the observed pairs; its twin is
    the explicit Σ_{d observed} [log N(y_d | μ_d, σ²) - v_d / (2σ²)] (eq. 20-21) on GPflow's dense conditional."""
    rng = np.random.default_rng(72)
    Y = _toy(rng, 10, 6, 2, missing=0.5)
    model = GPLVF(Y, 2, 4, flow=planar_flow(2, 2, init_scale=0.5), noise_variance=0.3)
    model.q_mu.assign(rng.standard_normal((4, 6)))
    values, mask = check_observations(Y)
    x_mean, x_var = tf.constant(rng.standard_normal((10, 2))), tf.constant(rng.uniform(0.1, 1.0, (10, 2)))
    noise = tf.constant(rng.standard_normal((3, 10, 2)))
    ell, _ = model.row_terms(tf.constant(values), tf.constant(mask), x_mean, x_var, noise)
    x, _ = model.latent_samples_and_kl(x_mean, x_var, noise)
    f_mean, f_var = (t.numpy() for t in model.predict_f(x))  # [S, N, D]
    sigma2 = model.likelihood.variance.numpy()
    explicit = -0.5 * np.log(2 * np.pi * sigma2) - 0.5 * ((values[None] - f_mean) ** 2 + f_var) / sigma2
    np.testing.assert_allclose(ell.numpy(), np.where(mask[None], explicit, 0.0).sum(-1).mean(0), rtol=1e-12)
    dense = masked_variational_expectations(model.likelihood, x, np.broadcast_to(values, f_mean.shape),
                                            np.broadcast_to(mask, f_mean.shape), f_mean, f_var)
    np.testing.assert_allclose(dense.numpy().mean(0), ell.numpy(), rtol=1e-12)


def test_masked_gaussian_expected_log_likelihood_keeps_its_numbers():
    """The Gaussian likelihood's own variational expectations at the observed entries equal the explicit formula
    Σ_{d observed} [log N(y_d | μ_d, σ²) - v_d / (2σ²)]."""
    from gpflow_ext.likelihoods.masked import masked_gaussian_expected_log_likelihood

    rng = np.random.default_rng(3)
    Y, f_mean, f_var = rng.standard_normal((3, 5, 6)), rng.standard_normal((3, 5, 6)), rng.uniform(0.1, 1, (3, 5, 6))
    mask = rng.random((3, 5, 6)) < 0.6
    Y_nan = np.where(mask, Y, np.nan)
    explicit = np.where(mask, -0.5 * (np.log(2 * np.pi) + np.log(0.4)) - 0.5 * ((Y - f_mean) ** 2 + f_var) / 0.4, 0)
    new = masked_gaussian_expected_log_likelihood(Y_nan, mask, f_mean, f_var, 0.4).numpy()
    np.testing.assert_allclose(new, explicit.sum(-1), rtol=1e-13)


def test_gplvf_arguments_are_objects():
    """Kernels, encoders, base covariances, KL estimators and pair variances are objects; names are the recipes'."""
    Y = _toy(np.random.default_rng(4), 10, 4, 2, missing=0.3)
    for argument, value, error in [("kernel", "se", TypeError), ("encoder", True, TypeError),
                                   ("kl_x", "monte_carlo", TypeError)]:
        with pytest.raises(error, match=argument):
            GPLVF(Y, 2, 3, **{argument: value})


def test_gplvf_models_never_import_training_or_recipes():
    """GPLVF's model modules know neither the training loop nor the recipes, not even lazily."""
    import pathlib
    import re

    import gpflow_ext

    upward = re.compile(r"^\s*(from|import)\s+(gpflow_ext\.|\.\.)(training|recipes)\b|import_module\(", re.M)
    models = pathlib.Path(gpflow_ext.__file__).parent / "models"
    for name in ("gplvf.py", "new_rows_latents.py"):
        assert not upward.search((models / name).read_text(encoding="utf-8")), name


@pytest.mark.parametrize("num_samples", [1, 3])
def test_per_pair_variance_equals_its_einsum_form(num_samples):
    """PerPair forms aᵀ m_d and ‖L_dᵀ a‖² with a batched matmul; the einsums it replaced are the twin: the bound
    and its gradients agree to 1e-10 in float64."""
    rng = np.random.default_rng(71)
    Y = _toy(rng, 15, 9, 3, missing=0.7)
    model = GPLVF(Y, 3, 4, variance_by=PerPair(), num_samples=num_samples)
    model.q_mu.assign(rng.standard_normal((4, 9)))
    model.q_sqrt.assign(np.tril(0.3 * rng.standard_normal((9, 4, 4))) + 0.5 * np.eye(4))
    data = tuple(tf.constant(a) for a in model.training_data())
    noise = tf.constant(rng.standard_normal((num_samples, 15, 3)))

    class EinsumPerPair(PerPair):
        def mean_and_variance(self, A, row_index, output_index, q_mu, L):
            A_pairs = tf.gather(A, row_index, axis=1)  # [S, P, M]
            mean = tf.einsum("spm,pm->sp", A_pairs, tf.gather(tf.transpose(q_mu), output_index))  # [S, P]
            LTA = tf.einsum("pmk,spm->spk", tf.gather(L, output_index), A_pairs)  # [S, P, M]
            return mean, tf.reduce_sum(tf.square(LTA), axis=-1)

    def bound_and_grads(variance_by):
        model.variance_by = variance_by
        with tf.GradientTape() as tape:
            bound = model.elbo_given_base_noise(data, noise)
        grads = tape.gradient(bound, model.trainable_variables)
        return bound.numpy(), [tf.convert_to_tensor(g).numpy() for g in grads]

    bound, grads = bound_and_grads(PerPair())
    twin, twin_grads = bound_and_grads(EinsumPerPair())
    np.testing.assert_allclose(bound, twin, rtol=1e-10)
    for g, t in zip(grads, twin_grads):
        np.testing.assert_allclose(g, t, rtol=1e-10, atol=1e-12)
