"""MLGPF model: the bound against a brute force that builds every q(f_ik), unbiasedness of the
label-sub-sampled bound, prediction/ranking, the eight variants, memory at K = 13 330, bad input."""
import gpflow
import numpy as np
import pytest
import scipy.integrate
import scipy.sparse as sp
import tensorflow as tf

from gpflow_ext.inducing_variables import SubspaceInducingPoints
from gpflow_ext.metrics import ranking_metrics
from gpflow_ext.models import MLGPF
from gpflow_ext.recipes.mlgpf import build_mlgpf
from gpflow_ext.recipes.mlgpf_config import METHODS, paper_config, parse_method
from gpflow_ext.utilities import to_input_tensor
from gpflow_ext.validation import check_multilabel_data


def _log_sigmoid(f):
    return -np.logaddexp(0.0, -f)


def _small_problem(rng, N=9, D=5, K=6, P=2, M=3, R=4):
    X = rng.normal(size=(N, D))
    Y = (rng.random((N, K)) < 0.35).astype(float)
    Y[0] = 0.0
    Y[1] = 1.0
    basis = np.linalg.qr(rng.normal(size=(D, R)))[0].T  # [R, D]
    A = rng.normal(size=(M, R))
    params = dict(
        q_mu=rng.normal(size=(M, P)) * 0.3,
        q_sigma=rng.uniform(0.2, 2.0, size=(M, P)),
        loadings=rng.normal(size=(K, P)),
        bias=rng.normal(size=K),
    )
    return X, Y, basis, A, params


def _kernel_numpy(kernel, A, B):
    if isinstance(kernel, gpflow.kernels.Linear):
        return float(kernel.variance.numpy()) * A @ B.T
    d2 = np.sum(A**2, 1)[:, None] + np.sum(B**2, 1)[None, :] - 2 * A @ B.T
    ell = float(kernel.lengthscales.numpy())
    return float(kernel.variance.numpy()) * np.exp(-0.5 * np.maximum(d2, 0) / ell**2)


def _brute_force_bound(kernel, Z, X, Y, params, num_data):
    """Builds every q(f_ik) explicitly (eq. 18-19, 21), integrates by adaptive quadrature, and
    takes the KL from gpflow's gauss_kl on the equivalent (m, S) of q(u_p) (eq. 17)."""
    Kzz = _kernel_numpy(kernel, Z, Z)
    Kxz = _kernel_numpy(kernel, X, Z)
    kxx = np.diag(_kernel_numpy(kernel, X, X))
    mu, sigma, phi, b = params["q_mu"], params["q_sigma"], params["loadings"], params["bias"]
    P = mu.shape[1]
    m = Kxz @ mu  # [N, P]
    s = np.stack(
        [kxx - np.einsum("nm,mk,nk->n", Kxz, np.linalg.inv(Kzz + np.diag(sigma[:, p])), Kxz) for p in range(P)],
        axis=1,
    )
    data_term = 0.0
    for i in range(X.shape[0]):
        for k in range(Y.shape[1]):
            mean, var = phi[k] @ m[i] + b[k], (phi[k] ** 2) @ s[i]
            sign = 1.0 if Y[i, k] else -1.0
            data_term += scipy.integrate.quad(
                lambda f: _log_sigmoid(sign * f) * np.exp(-0.5 * (f - mean) ** 2 / var) / np.sqrt(2 * np.pi * var),
                mean - 12 * np.sqrt(var),
                mean + 12 * np.sqrt(var),
                epsabs=1e-13,
                epsrel=1e-13,
            )[0]
    kl = 0.0
    for p in range(P):
        S = Kzz - Kzz @ np.linalg.solve(Kzz + np.diag(sigma[:, p]), Kzz)
        kl += float(
            gpflow.kullback_leiblers.gauss_kl(
                tf.constant((Kzz @ mu[:, p])[:, None]),
                tf.constant(np.linalg.cholesky(S + 1e-12 * np.eye(len(S)))[None]),
                K=tf.constant(Kzz),
            )
        )
    return num_data / X.shape[0] * data_term - kl


@pytest.mark.parametrize("subspace", [True, False])
@pytest.mark.parametrize("kernel_name", ["linear", "se"])
def test_full_label_bound_equals_brute_force(rng, subspace, kernel_name):
    X, Y, basis, A, params = _small_problem(rng)
    if kernel_name == "linear":
        kernel = gpflow.kernels.Linear(variance=0.7)
    else:
        kernel = gpflow.kernels.SquaredExponential(variance=1.3, lengthscales=1.7)
    Z = A @ basis
    iv = SubspaceInducingPoints(basis, A) if subspace else gpflow.inducing_variables.InducingPoints(Z)
    num_data = 20
    model = MLGPF(kernel, iv, num_labels=Y.shape[1], num_latent_gps=2, num_data=num_data,
                  num_gauss_hermite_points=80, **params)
    X_checked, Y_checked = model.prepare_data(X, Y)
    elbo = float(model.elbo((X_checked, Y_checked)))
    brute = _brute_force_bound(kernel, Z, X, Y, params, num_data)
    np.testing.assert_allclose(elbo, brute, rtol=1e-7)
    # the same through sparse X and sparse Y tensors (what fit feeds)
    sparse_elbo = float(model.elbo((to_input_tensor(sp.csr_matrix(X)), to_input_tensor(sp.csr_matrix(Y)))))
    np.testing.assert_allclose(sparse_elbo, elbo, rtol=1e-10)
    # and the dense Likelihood interface (GPflow's variational_expectations)
    mean, var = model.predict_f(X)
    dense = num_data / X.shape[0] * tf.reduce_sum(
        model.likelihood.variational_expectations(None, mean, var, tf.constant(Y))
    ) - model.prior_kl()
    np.testing.assert_allclose(float(dense), elbo, rtol=1e-10)


def test_subsampled_bound_is_unbiased(rng):
    X, Y, basis, A, params = _small_problem(rng, N=8, K=12)
    Y[2] = 0.0
    Y[2, 3] = 1.0
    model_full = MLGPF(gpflow.kernels.Linear(), SubspaceInducingPoints(basis, A), 12, 2, num_data=30, **params)
    model_sub = MLGPF(gpflow.kernels.Linear(), SubspaceInducingPoints(basis, A), 12, 2, num_data=30,
                      num_negative_samples=3, seed=5, **params)
    data = tuple(to_input_tensor(a) for a in model_full.prepare_data(sp.csr_matrix(X), Y))
    full = float(model_full.elbo(data))
    draw = tf.function(lambda: model_sub.elbo(data))
    draws = np.array([float(draw()) for _ in range(2000)])  # 2000 independent estimates
    mean, se = draws.mean(), draws.std() / np.sqrt(draws.size)
    assert draws.std() > 0.1  # it really is stochastic
    assert abs(mean - full) < 4.5 * se, (mean, full, se)


def test_gradients_are_finite_for_every_variant(rng):
    X = sp.random(40, 30, density=0.2, format="csr", random_state=3)
    Y = sp.random(40, 15, density=0.15, format="csr", random_state=4)
    Y.data[:] = 1.0
    for method in METHODS:
        config = paper_config(method, num_inducing=6, num_latent_gps=3, rank=8, num_negative_samples=5)
        model = build_mlgpf(config, X, Y)
        subspace, trainable, kernel_name = parse_method(method)
        data = tuple(to_input_tensor(a) for a in model.prepare_data(X, Y))
        with tf.GradientTape() as tape:
            loss = model.training_loss(data)
        names = [v.name for v in model.trainable_variables]
        grads = tape.gradient(loss, model.trainable_variables)
        assert np.isfinite(float(loss))
        assert all(g is not None and np.all(np.isfinite(tf.convert_to_tensor(g).numpy())) for g in grads), method
        iv_var = model.inducing_variable.A if subspace else model.inducing_variable.Z
        assert iv_var.trainable == trainable, method
        assert isinstance(model.kernel, gpflow.kernels.Linear) == (kernel_name == "linear")
        assert len(names) == (6 if trainable else 5) + (kernel_name == "se"), (method, names)


def test_prediction_ranking_and_metrics(rng):
    X, Y, basis, A, params = _small_problem(rng, N=30, K=6)
    model = MLGPF(gpflow.kernels.Linear(), SubspaceInducingPoints(basis, A), 6, 2, num_data=30, **params)
    scores = model.predict_utilities(X).numpy()
    mean, _ = model.predict_f(X)
    np.testing.assert_allclose(scores, mean.numpy() @ params["loadings"].T + params["bias"], rtol=1e-12)
    top = model.predict_top_k(X, k=3, batch_size=7)
    np.testing.assert_array_equal(top, np.argsort(-scores, axis=1)[:, :3])
    probabilities = model.predict_probabilities(X).numpy()
    assert np.all((probabilities > 0) & (probabilities < 1))
    metrics = model.evaluate(X, Y, ks=(1, 3))
    hits = np.take_along_axis(Y, top, axis=1)
    assert metrics["P@1"] == pytest.approx(100 * hits[:, 0].mean())
    assert metrics["P@3"] == pytest.approx(100 * hits.mean())
    discount = 1 / np.log2(np.arange(2, 5))
    ideal = np.array([discount[: int(min(3, n))].sum() for n in Y.sum(1)])
    ndcg = np.where(ideal > 0, (hits * discount).sum(1) / np.where(ideal > 0, ideal, 1), 0.0)
    assert metrics["nDCG@3"] == pytest.approx(100 * ndcg.mean())


def test_training_with_fit_improves_ranking(rng):
    """Trained by the foundation's ``fit`` on CSR minibatches, on labels that a rank-4 linear factor
    model can express; rows with no features at all (k(x, x) = 0) must keep gradients finite."""
    from gpflow_ext.training import fit

    X = sp.random(300, 50, density=0.2, format="csr", random_state=0)
    X.data[:] = 1.0
    assert np.any(np.diff(X.indptr) == 0)  # some empty rows
    top = np.argsort(-(X @ rng.normal(size=(50, 4)) @ rng.normal(size=(4, 20))), axis=1)[:, :2]
    Y = sp.csr_matrix((np.ones(600), (np.repeat(np.arange(300), 2), top.ravel())), shape=(300, 20))
    model = build_mlgpf(paper_config("s-linear", num_inducing=30, num_latent_gps=4, rank=30), X[:200], Y[:200])
    before = model.evaluate(X[200:], Y[200:])["P@1"]
    history = fit(model, model.prepare_data(X[:200], Y[:200]), epochs=20, batch_size=100,
                  learning_rate=0.05, progress=False)
    assert history.objective[-1] < history.objective[0] - 100.0
    after = model.evaluate(X[200:], Y[200:])["P@1"]
    assert after > before + 15.0, (before, after)


def test_step_memory_is_bounded_at_amazoncat_label_count(rng):
    """K = 13 330 with sampled negatives: no tensor in the compiled step has B × K entries."""
    B, D, K, P, M, R, S = 500, 60, 13_330, 4, 8, 6, 20
    X = sp.random(B, D, density=0.1, format="csr", random_state=0)
    rows = np.repeat(np.arange(B), 5)
    Y = sp.csr_matrix((np.ones(rows.size), (rows, rng.integers(0, K, rows.size))), shape=(B, K))
    Y.data[:] = 1.0
    basis = np.linalg.qr(rng.normal(size=(D, R)))[0].T
    model = MLGPF(gpflow.kernels.Linear(), SubspaceInducingPoints(basis, rng.normal(size=(M, R))), K, P,
                  num_data=10 * B, num_negative_samples=S)
    data = tuple(to_input_tensor(a) for a in model.prepare_data(X, Y))

    def loss_and_grads(X, Y):
        with tf.GradientTape() as tape:
            loss = model.training_loss((X, Y))
        return loss, tape.gradient(loss, model.trainable_variables)

    concrete = tf.function(loss_and_grads).get_concrete_function(*data)
    largest = 0
    for op in concrete.graph.get_operations():
        for out in op.outputs:
            if out.shape.rank is not None and out.shape.is_fully_defined():
                largest = max(largest, int(np.prod(out.shape.as_list())))
    assert largest < B * K / 10, largest  # the biggest tensor is Φ-sized (K × P) or B × S × P
    loss, grads = concrete(*data)
    assert np.isfinite(float(loss)) and all(np.all(np.isfinite(tf.convert_to_tensor(g).numpy())) for g in grads)


def test_bad_inputs_raise_clear_errors(rng):
    X, Y, basis, A, params = _small_problem(rng)
    model = MLGPF(gpflow.kernels.Linear(), SubspaceInducingPoints(basis, A), Y.shape[1], 2, num_data=9, **params)
    with pytest.raises(ValueError, match="label index 6 out of range"):
        model.prepare_data(X, [[0, 6]] + [[1]] * 8)
    with pytest.raises(ValueError, match="label columns"):
        model.prepare_data(X, np.zeros((9, 7)))
    with pytest.raises(ValueError, match="features but the model"):
        model.prepare_data(X[:, :4], Y)
    with pytest.raises(ValueError, match="NaN"):
        Xn = X.copy()
        Xn[2, 1] = np.nan
        model.prepare_data(Xn, Y)
    with pytest.raises(ValueError, match="NaN"):
        Yn = Y.copy()
        Yn[0, 0] = np.nan
        model.prepare_data(X, Yn)
    with pytest.raises(ValueError, match="0/1"):
        model.prepare_data(X, 2 * Y)
    with pytest.raises(ValueError, match="rows but X has"):
        model.prepare_data(X, Y[:5])
    with pytest.raises(ValueError, match="non-empty"):
        check_multilabel_data(np.zeros((0, 5)), np.zeros((0, 6)))
    with pytest.raises(ValueError, match="NaN"):  # elbo called eagerly on numpy data checks too
        model.elbo((np.full_like(X, np.nan), Y))
    with pytest.raises(ValueError, match="method must be one of"):
        paper_config("s-rbf")
    with pytest.raises(ValueError, match="num_negative_samples"):
        MLGPF(gpflow.kernels.Linear(), SubspaceInducingPoints(basis, A), 6, 2, num_data=9, num_negative_samples=0)
    with pytest.raises(ValueError, match="num_data"):
        MLGPF(gpflow.kernels.Linear(), SubspaceInducingPoints(basis, A), 6, 2, num_data=0)
    with pytest.raises(TypeError, match="inducing_variable"):
        MLGPF(gpflow.kernels.Linear(), A @ basis, 6, 2, num_data=9)
    with pytest.raises(ValueError, match="k must be"):
        model.predict_top_k(X, k=7)


def test_ranking_metrics_brute_force(rng):
    Y = sp.csr_matrix((rng.random((50, 10)) < 0.2).astype(float))
    top = np.stack([rng.permutation(10)[:5] for _ in range(50)])
    out = ranking_metrics(top, Y, ks=(1, 5))
    dense = Y.toarray()
    for k in (1, 5):
        p = np.mean([dense[i, top[i, :k]].sum() / k for i in range(50)])
        assert out[f"P@{k}"] == pytest.approx(100 * p)
