"""SubspaceInducingPoints and its Kuu/Kuf against the explicit-Z twin InducingPoints(A @ X̃)."""

import gpflow
import numpy as np
import pytest
import scipy.linalg
import scipy.sparse
import tensorflow as tf
from gpflow.covariances import Kuf, Kuu

from gpflow_ext.covariances import Kff
from gpflow_ext.inducing_variables import SubspaceInducingPoints, subspace_basis
from gpflow_ext.utilities import to_input_tensor

N, D, M, R = 120, 60, 10, 14  # M <= R keeps the linear-kernel K_ZZ non-singular


def _data(kind, seed=0):
    rng = np.random.default_rng(seed)
    if kind == "dense":
        return rng.normal(size=(N, D))
    X = scipy.sparse.random(N, D, density=0.15, random_state=seed, format="csr")
    X.data = rng.normal(size=X.nnz)
    return X


def _inputs(X, kind):
    return to_input_tensor(X) if kind == "sparse" else X


def _dense(X):
    return X.toarray() if scipy.sparse.issparse(X) else X


def _random_iv(seed=1):
    """A subspace with a non-orthonormal basis and random A, to test the general formulas."""
    rng = np.random.default_rng(seed)
    return SubspaceInducingPoints(rng.normal(size=(R, D)) / np.sqrt(D), rng.normal(size=(M, R)))


KERNELS = {
    "linear": lambda: gpflow.kernels.Linear(variance=0.7),
    "se": lambda: gpflow.kernels.SquaredExponential(variance=1.3, lengthscales=1.1),
    "matern52": lambda: gpflow.kernels.Matern52(variance=0.9, lengthscales=1.7),
    "rq": lambda: gpflow.kernels.RationalQuadratic(lengthscales=1.5, alpha=0.7),
    "polynomial": lambda: gpflow.kernels.Polynomial(degree=2.0, variance=0.3, offset=0.5),
    "sum": lambda: gpflow.kernels.Linear(variance=0.2) + gpflow.kernels.SquaredExponential(lengthscales=2.0),
    "product": lambda: gpflow.kernels.Linear(variance=0.2) * gpflow.kernels.SquaredExponential(lengthscales=2.0),
}


@pytest.mark.parametrize("kind", ["dense", "sparse"])
@pytest.mark.parametrize("kernel_name", list(KERNELS))
def test_kuu_kuf_equal_explicit_inducing_points(kind, kernel_name):
    X = _data(kind)
    kernel = KERNELS[kernel_name]()
    from_data, general = SubspaceInducingPoints.from_data(X, M, R), _random_iv()
    assert from_data.orthonormal_basis and not general.orthonormal_basis  # both code paths
    for iv in (from_data, general):
        explicit = gpflow.inducing_variables.InducingPoints(iv.Z.numpy())
        np.testing.assert_allclose(Kuu(iv, kernel).numpy(), Kuu(explicit, kernel).numpy(), rtol=0, atol=1e-10)
        np.testing.assert_allclose(
            Kuu(iv, kernel, jitter=1e-3).numpy(), Kuu(explicit, kernel, jitter=1e-3).numpy(), rtol=0, atol=1e-10
        )
        Kmn = Kuf(iv, kernel, _inputs(X, kind)).numpy()
        np.testing.assert_allclose(Kmn, Kuf(explicit, kernel, _dense(X)).numpy(), rtol=0, atol=1e-10)
        assert Kmn.shape == (M, N)


@pytest.mark.parametrize("kernel_name", ["linear", "se", "sum"])
def test_kff_on_sparse_inputs_equals_dense(kernel_name):
    X = _data("sparse")
    kernel = KERNELS[kernel_name]()
    Xs = to_input_tensor(X[:40])
    for full_cov in (False, True):
        np.testing.assert_allclose(
            Kff(kernel, Xs, full_cov=full_cov).numpy(),
            kernel(X[:40].toarray(), full_cov=full_cov).numpy(),
            rtol=0,
            atol=1e-10,
        )


def test_kuf_inside_tf_function_with_sparse_batches():
    X = _data("sparse")
    iv = SubspaceInducingPoints.from_data(X, M, R)
    kernel = gpflow.kernels.SquaredExponential()
    explicit = gpflow.inducing_variables.InducingPoints(iv.Z.numpy())
    spec = tf.SparseTensorSpec([None, D], tf.float64)

    @tf.function(input_signature=[spec])
    def kuf(Xb):
        return Kuf(iv, kernel, Xb)

    for rows in (slice(0, 30), slice(30, 75)):
        np.testing.assert_allclose(
            kuf(to_input_tensor(X[rows])).numpy(),
            Kuf(explicit, kernel, X[rows].toarray()).numpy(),
            rtol=0,
            atol=1e-10,
        )


@pytest.mark.parametrize("whiten", [True, False])
@pytest.mark.parametrize("kernel_name", ["linear", "se"])
def test_stock_svgp_elbo_identical_with_explicit_z(kernel_name, whiten):
    rng = np.random.default_rng(3)
    X = _data("dense")
    Y = rng.normal(size=(N, 2))
    iv = SubspaceInducingPoints.from_data(X, M, R)
    q_mu = rng.normal(size=(M, 2))
    q_sqrt = np.tril(rng.normal(size=(2, M, M))) * 0.1 + np.eye(M)[None]

    def model(inducing_variable):
        return gpflow.models.SVGP(
            KERNELS[kernel_name](),
            gpflow.likelihoods.Gaussian(variance=0.3),
            inducing_variable,
            num_latent_gps=2,
            q_mu=q_mu,
            q_sqrt=q_sqrt,
            whiten=whiten,
            num_data=10 * N,
        )

    ours, explicit = model(iv), model(gpflow.inducing_variables.InducingPoints(iv.Z.numpy()))
    batch = (X[:50], Y[:50])
    np.testing.assert_allclose(ours.elbo(batch).numpy(), explicit.elbo(batch).numpy(), rtol=1e-10)
    # predictions too, and the compiled training loss
    for a, b in zip(ours.predict_f(X[50:], full_cov=True), explicit.predict_f(X[50:], full_cov=True)):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=0, atol=1e-9)
    loss = tf.function(ours.training_loss_closure(batch))
    np.testing.assert_allclose(loss().numpy(), -explicit.elbo(batch).numpy(), rtol=1e-10)


def test_gradient_wrt_A_matches_explicit_chain_rule():
    """d ELBO / dA through the subspace equals (d ELBO / dZ) X̃ᵀ from the explicit-Z model."""
    X = _data("dense")
    Y = np.random.default_rng(2).normal(size=(N, 1))
    iv = SubspaceInducingPoints.from_data(X, M, R)
    kernel = KERNELS["se"]()
    lik = gpflow.likelihoods.Gaussian(variance=0.3)
    ours = gpflow.models.SVGP(kernel, lik, iv)
    explicit_iv = gpflow.inducing_variables.InducingPoints(iv.Z.numpy())
    explicit = gpflow.models.SVGP(kernel, lik, explicit_iv)
    with tf.GradientTape() as tape:
        elbo = ours.elbo((X, Y))
    grad_A = tape.gradient(elbo, iv.A.unconstrained_variable)
    with tf.GradientTape() as tape:
        elbo = explicit.elbo((X, Y))
    grad_Z = tape.gradient(elbo, explicit_iv.Z.unconstrained_variable)
    np.testing.assert_allclose(grad_A.numpy(), grad_Z.numpy() @ iv.basis.numpy().T, rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("kind", ["dense", "sparse"])
def test_from_data_basis_is_leading_right_singular_subspace(kind):
    rng = np.random.default_rng(0)
    # low-rank-plus-noise data so the leading subspace is well separated
    low = rng.normal(size=(N, 5)) @ rng.normal(size=(5, D)) * 3.0
    X = low + 0.01 * rng.normal(size=(N, D))
    if kind == "sparse":
        X = scipy.sparse.csr_matrix(X)
    U, S, Vt = subspace_basis(X, 5)
    _, S_exact, Vt_exact = np.linalg.svd(_dense(X), full_matrices=False)
    np.testing.assert_allclose(S, S_exact[:5], rtol=1e-8)
    np.testing.assert_allclose(Vt.T @ Vt, Vt_exact[:5].T @ Vt_exact[:5], atol=1e-8)  # same projector
    np.testing.assert_allclose((U * S) @ Vt, _dense(X) @ Vt.T @ Vt, atol=1e-8)
    iv = SubspaceInducingPoints.from_data(X, 7, 5)
    assert iv.num_inducing == 7 and iv.A.shape == (7, 5) and iv.shape == (7, D, 1)
    # every inducing input is a centroid of projected rows: it lies in the row space of X̃
    Z = iv.Z.numpy()
    np.testing.assert_allclose(Z @ Vt.T @ Vt, Z, atol=1e-8)


def test_randomized_svd_on_large_sparse_matrix_without_densifying():
    np.random.default_rng(0)
    X = scipy.sparse.random(6000, 5500, density=0.002, random_state=0, format="csr")
    X = X @ scipy.sparse.diags(1.0 / (1.0 + np.arange(5500)) ** 0.5)  # decaying spectrum, like text
    X = scipy.sparse.csr_matrix(X)
    U, S, Vt = subspace_basis(X, 20, seed=0)  # randomized branch (min(N, D) > 5000, R << min(N, D))
    assert U.shape == (6000, 20) and Vt.shape == (20, 5500)
    np.testing.assert_allclose(Vt @ Vt.T, np.eye(20), atol=1e-8)
    from scipy.sparse.linalg import svds

    s_ref = np.sort(svds(X, k=10, random_state=0, tol=1e-6)[1])[::-1]
    np.testing.assert_allclose(S[:10], s_ref, rtol=1e-2)
    # the leading 10 directions capture within 1% of the optimal rank-10 energy
    captured = np.linalg.norm(X @ Vt[:10].T) ** 2
    assert captured >= 0.99 * np.sum(s_ref**2)


@pytest.mark.parametrize("shape", [(300, 2000), (2000, 300)])
def test_sparse_gram_branch_matches_dense_svd(shape):
    X = scipy.sparse.random(*shape, density=0.02, random_state=1, format="csr")
    U, S, Vt = subspace_basis(X, 40)
    _, S_exact, Vt_exact = np.linalg.svd(X.toarray(), full_matrices=False)
    np.testing.assert_allclose(S, S_exact[:40], rtol=1e-9)
    np.testing.assert_allclose(Vt.T @ Vt, Vt_exact[:40].T @ Vt_exact[:40], atol=1e-8)
    np.testing.assert_allclose(Vt @ Vt.T, np.eye(40), atol=1e-12)
    np.testing.assert_allclose((U * S) @ Vt, X.toarray() @ Vt.T @ Vt, atol=1e-10)


def test_trainable_A_switch():
    iv = SubspaceInducingPoints.from_data(_data("dense"), M, R, trainable_A=False)
    assert iv.A.trainable is False
    assert len(iv.trainable_variables) == 0
    iv = SubspaceInducingPoints.from_data(_data("dense"), M, R)
    assert [v.shape for v in iv.trainable_variables] == [tf.TensorShape([M, R])]


# ---------------------------------------------------------------------------------------------
# bad input
# ---------------------------------------------------------------------------------------------


def test_from_data_rejects_bad_input():
    X = _data("dense")
    with pytest.raises(ValueError, match="rank"):
        SubspaceInducingPoints.from_data(X, M, rank=D + 1)
    with pytest.raises(ValueError, match="rank"):
        SubspaceInducingPoints.from_data(X[:10], 5, rank=11)
    with pytest.raises(ValueError, match="num_inducing"):
        SubspaceInducingPoints.from_data(X, N + 1, R)
    with pytest.raises(ValueError, match="num_inducing"):
        SubspaceInducingPoints.from_data(X, 0, R)
    bad = X.copy()
    bad[3, 4] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        SubspaceInducingPoints.from_data(bad, M, R)
    sp = _data("sparse")
    sp.data[0] = np.inf
    with pytest.raises(ValueError, match="NaN or inf"):
        SubspaceInducingPoints.from_data(sp, M, R)
    with pytest.raises(ValueError, match="2-D"):
        SubspaceInducingPoints.from_data(X[0], 1, 1)
    with pytest.raises(ValueError, match="non-empty"):
        SubspaceInducingPoints.from_data(np.zeros((0, 5)), 1, 1)
    with pytest.raises(TypeError, match="rank"):
        SubspaceInducingPoints.from_data(X, M, rank=2.5)
    with pytest.raises(ValueError, match="one column per basis vector"):
        SubspaceInducingPoints(np.eye(3, 5), np.ones((4, 2)))


def test_kuf_rejects_wrong_input_dimension():
    iv = SubspaceInducingPoints.from_data(_data("dense"), M, R)
    kernel = gpflow.kernels.Linear()
    with pytest.raises(ValueError, match="D = 60"):
        Kuf(iv, kernel, np.ones((4, D + 1)))
    with pytest.raises(ValueError, match="D = 60"):
        Kuf(iv, kernel, to_input_tensor(scipy.sparse.random(4, D - 1, density=0.5, format="csr")))


def test_unsupported_kernel_settings_raise():
    iv = SubspaceInducingPoints.from_data(_data("dense"), M, R)
    X = _data("dense")[:5]
    with pytest.raises(ValueError, match="lengthscales"):
        Kuu(iv, gpflow.kernels.SquaredExponential(lengthscales=np.ones(D)))
    with pytest.raises(ValueError, match="variance"):
        Kuf(iv, gpflow.kernels.Linear(variance=np.ones(D)), X)
    with pytest.raises(ValueError, match="active_dims"):
        Kuu(iv, gpflow.kernels.SquaredExponential(active_dims=[0, 1]))
    with pytest.raises(NotImplementedError, match="Periodic"):
        Kuu(iv, gpflow.kernels.Periodic(gpflow.kernels.SquaredExponential()))
    with pytest.raises(NotImplementedError, match="Cosine"):
        Kuf(iv, gpflow.kernels.Linear() + gpflow.kernels.Cosine(), X)


# ---------------------------------------------------------------------------------------------
# the basis from streamed row blocks (randomized subspace iteration on XᵀX) vs the in-memory SVD
# ---------------------------------------------------------------------------------------------
def _blocks(X, size=37):
    return lambda: (X[i : i + size] for i in range(0, X.shape[0], size))


def _decaying(seed=0, n=400, d=90):
    rng = np.random.default_rng(seed)
    rotation = np.linalg.qr(rng.normal(size=(d, d)))[0]
    return scipy.sparse.csr_matrix((rng.normal(size=(n, d)) * 0.7 ** np.arange(d)) @ rotation)


def test_streamed_basis_is_exact_for_exact_rank_data():
    from gpflow_ext.inducing_variables.subspace_stream import streamed_subspace_basis

    rng = np.random.default_rng(0)
    X = scipy.sparse.csr_matrix(rng.normal(size=(150, 12)) @ rng.normal(size=(12, 70)))  # rank 12
    _, S, Vt = subspace_basis(X, 12)
    streamed = streamed_subspace_basis(_blocks(X), 12, 70, passes=2, oversample=0)
    assert np.max(scipy.linalg.subspace_angles(streamed.Vt.T, Vt.T)) < 1e-10  # principal angles ~ 0
    np.testing.assert_allclose(streamed.S, S, rtol=1e-10)
    np.testing.assert_allclose(streamed.Vt, Vt, atol=1e-10)  # same sign convention
    np.testing.assert_allclose(streamed.coords, X @ Vt.T, atol=1e-10)  # all rows sampled, in order


@pytest.mark.parametrize("passes, tolerance", [(2, 1e-3), (3, 1e-6), (4, 1e-9)])
def test_streamed_basis_converges_with_passes(passes, tolerance):
    from gpflow_ext.inducing_variables.subspace_stream import streamed_subspace_basis

    X = _decaying()
    _, S, Vt = subspace_basis(X, 10)
    streamed = streamed_subspace_basis(_blocks(X), 10, 90, passes=passes)
    assert np.max(scipy.linalg.subspace_angles(streamed.Vt.T, Vt.T)) < tolerance
    np.testing.assert_allclose(streamed.S, S, rtol=tolerance)


def test_from_stream_equals_from_data():
    """Exact-rank data, all rows in the k-means sample: the same X̃ and the same A as from_data."""
    rng = np.random.default_rng(1)
    X = scipy.sparse.csr_matrix(rng.normal(size=(120, 9)) @ rng.normal(size=(9, 50)))
    reference = SubspaceInducingPoints.from_data(X, 15, 9, seed=2)
    for blocks in (_blocks(X), [X[:50], X[50:]], tf.data.Dataset.from_tensor_slices(X.toarray()).batch(32)):
        streamed = SubspaceInducingPoints.from_stream(blocks, 15, 9, 50, seed=2, passes=2)
        np.testing.assert_allclose(streamed.basis.numpy(), reference.basis.numpy(), atol=1e-9)
        np.testing.assert_allclose(streamed.A.numpy(), reference.A.numpy(), atol=1e-8)
        assert streamed.orthonormal_basis


def test_from_stream_float32_work_arrays():
    X = _decaying(seed=3)
    _, _, Vt = subspace_basis(X, 8)
    iv = SubspaceInducingPoints.from_stream(_blocks(X), 10, 8, 90, passes=4, work_dtype=np.float32)
    assert np.max(scipy.linalg.subspace_angles(iv.basis.numpy().T, Vt.T)) < 1e-3
    basis = iv.basis.numpy()
    np.testing.assert_allclose(basis @ basis.T, np.eye(8), atol=1e-13)  # re-orthonormalized in float64


def test_from_stream_bad_input():
    X = _decaying()
    with pytest.raises(TypeError, match="one-shot iterator"):
        SubspaceInducingPoints.from_stream(iter([X]), 5, 4, 90)
    with pytest.raises(ValueError, match="passes"):
        SubspaceInducingPoints.from_stream(_blocks(X), 5, 4, 90, passes=1)
    with pytest.raises(ValueError, match="rank"):
        SubspaceInducingPoints.from_stream(_blocks(X), 5, 91, 90)
    with pytest.raises(ValueError, match="D=80 columns"):
        SubspaceInducingPoints.from_stream(_blocks(X), 5, 4, 80)
    calls = iter(range(10))
    shrinking = lambda: [X[: 400 - 10 * next(calls)]]  # noqa: E731
    with pytest.raises(ValueError, match="same rows every time"):
        SubspaceInducingPoints.from_stream(shrinking, 5, 4, 90)


def test_declared_orthonormal_basis_skips_the_gram_and_is_checked():
    X = _decaying(seed=4)
    reference = SubspaceInducingPoints.from_data(X, 6, 5)
    declared = SubspaceInducingPoints(reference.basis.numpy(), reference.A.numpy(), orthonormal=True)
    assert declared.orthonormal_basis
    np.testing.assert_array_equal(declared.basis_gram.numpy(), np.eye(5))
    kernel = gpflow.kernels.Linear(variance=0.5)
    np.testing.assert_allclose(Kuu(declared, kernel).numpy(), Kuu(reference, kernel).numpy(), atol=1e-12)
    with pytest.raises(ValueError, match="not orthonormal"):
        SubspaceInducingPoints(2.0 * reference.basis.numpy(), reference.A.numpy(), orthonormal=True)


@pytest.mark.parametrize("orthonormal", [None, True])
def test_a_float32_basis_builds_the_same_inducing_variable_as_its_float64_copy(orthonormal):
    rng = np.random.default_rng(3)
    basis32 = np.linalg.qr(rng.normal(size=(40, 6)))[0].T.astype(np.float32)  # [R, D], rows orthonormal in float32
    A = rng.normal(size=(5, 6))
    iv32 = SubspaceInducingPoints(basis32, A, orthonormal=orthonormal)
    iv64 = SubspaceInducingPoints(basis32.astype(np.float64), A, orthonormal=orthonormal)
    assert iv32.basis_t.dtype == iv64.basis_t.dtype == gpflow.default_float()
    np.testing.assert_array_equal(iv32.basis_t.numpy(), iv64.basis_t.numpy())
    np.testing.assert_array_equal(iv32.basis_gram.numpy(), iv64.basis_gram.numpy())
    assert iv32.orthonormal_basis == iv64.orthonormal_basis
