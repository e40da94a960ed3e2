"""Stock gpflow.models.SVGP with SubspaceInducingPoints on sparse inputs (scipy CSR and
tf.SparseTensor) against two twins: the same model on the dense X, and the brute-force
SVGP with InducingPoints(A @ X̃) on the dense X."""
import gpflow
import numpy as np
import pytest
import scipy.sparse
import tensorflow as tf

import gpflow_ext  # noqa: F401  (registers the dispatchers)
from gpflow_ext.covariances import Kff
from gpflow_ext.inducing_variables import SubspaceInducingPoints
from gpflow_ext.posteriors import SubspacePosterior
from gpflow_ext.utilities import to_input_tensor

N, D, M, R = 50, 80, 6, 9
RTOL = 1e-10


def _sparse_data(seed=0):
    rng = np.random.default_rng(seed)
    X = scipy.sparse.random(N, D, density=0.08, random_state=seed, format="csr")
    X.data = rng.normal(size=X.nnz)
    X = X.tolil()
    X[3, :] = 0.0  # an empty row
    X = X.tocsr()
    X.eliminate_zeros()
    Y = rng.normal(size=(N, 1))
    return X, Y


def _kernel(name):
    if name == "linear":
        return gpflow.kernels.Linear(variance=0.7)
    return gpflow.kernels.SquaredExponential(variance=1.3, lengthscales=2.5)


def _models(kernel_name, whiten=True, mean_function=None, seed=1):
    """(SVGP with SubspaceInducingPoints, the brute-force SVGP with InducingPoints(A X̃))."""
    rng = np.random.default_rng(seed)
    basis = rng.normal(size=(R, D)) / np.sqrt(D)  # not orthonormal: the general formulas
    iv = SubspaceInducingPoints(basis, rng.normal(size=(M, R)))
    q_mu = rng.normal(size=(M, 1))
    q_sqrt = np.tril(rng.normal(size=(1, M, M))) * 0.3 + 0.5 * np.eye(M)[None]
    models = []
    for inducing in (iv, gpflow.inducing_variables.InducingPoints(iv.Z.numpy())):
        models.append(
            gpflow.models.SVGP(
                _kernel(kernel_name),
                gpflow.likelihoods.Gaussian(variance=0.3),
                inducing,
                mean_function=gpflow.utilities.deepcopy(mean_function) if mean_function else None,
                q_mu=q_mu.copy(),
                q_sqrt=q_sqrt.copy(),
                whiten=whiten,
                num_data=4 * N,
            )
        )
    return models


def _close(a, b, rtol=RTOL):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=rtol * np.max(np.abs(b)))


@pytest.fixture(scope="module")
def data():
    return _sparse_data()


@pytest.mark.parametrize("kernel_name", ["linear", "se"])
@pytest.mark.parametrize("whiten", [True, False])
def test_elbo_sparse_equals_dense_and_brute_force(data, kernel_name, whiten):
    X, Y = data
    model, twin = _models(kernel_name, whiten)
    expected = twin.elbo((X.toarray(), Y))
    _close(model.elbo((X.toarray(), Y)), expected)
    _close(model.elbo((to_input_tensor(X), Y)), expected)
    # what fit() runs: the compiled loss on tf.SparseTensor minibatches
    compiled = tf.function(model.training_loss)
    _close(compiled((to_input_tensor(X[:20]), Y[:20])), twin.training_loss((X[:20].toarray(), Y[:20])))


@pytest.mark.parametrize("kernel_name", ["linear", "se"])
@pytest.mark.parametrize("full_cov", [False, True])
def test_predict_f_and_predict_y_on_csr_and_sparse_tensor(data, kernel_name, full_cov):
    X, _ = data
    model, twin = _models(kernel_name)
    mean, var = twin.predict_f(X.toarray(), full_cov=full_cov)
    for Xnew in (X, to_input_tensor(X)):
        got_mean, got_var = model.predict_f(Xnew, full_cov=full_cov)
        _close(got_mean, mean)
        _close(got_var, var)
        # gpflow.conditionals.conditional builds the same posterior
        f_mean, f_var = gpflow.conditionals.conditional(
            Xnew, model.inducing_variable, model.kernel, model.q_mu, q_sqrt=model.q_sqrt,
            white=model.whiten, full_cov=full_cov,
        )
        _close(f_mean, mean)
        _close(f_var, var)
    y_mean, y_var = twin.predict_y(X.toarray())
    for Xnew in (X, to_input_tensor(X)):
        got_mean, got_var = model.predict_y(Xnew)
        _close(got_mean, y_mean)
        _close(got_var, y_var)


def test_cached_posterior_predicts_sparse_inputs(data):
    X, _ = data
    model, twin = _models("se")
    posterior = model.posterior()  # precomputed cache: the _conditional_with_precompute path
    assert isinstance(posterior, SubspacePosterior)
    mean, var = twin.posterior().predict_f(X.toarray(), full_cov=True)
    for Xnew in (X, to_input_tensor(X)):
        got_mean, got_var = posterior.predict_f(Xnew, full_cov=True)
        _close(got_mean, mean)
        _close(got_var, var)


@pytest.mark.parametrize("kernel_name", ["linear", "se"])
def test_gradients_finite_and_equal_to_dense(data, kernel_name):
    X, Y = data
    model, _ = _models(kernel_name)
    variables = model.trainable_variables
    assert any(v is model.inducing_variable.A.unconstrained_variable for v in variables)

    def grads(Xin):
        with tf.GradientTape() as tape:
            loss = model.training_loss((Xin, Y))
        return tape.gradient(loss, variables)

    sparse = grads(to_input_tensor(X))
    dense = grads(X.toarray())
    for g_sparse, g_dense in zip(sparse, dense):
        assert np.all(np.isfinite(g_sparse.numpy()))
        _close(g_sparse, g_dense, rtol=1e-9)


@pytest.mark.parametrize(
    "mean_function",
    [
        gpflow.mean_functions.Constant(np.array([0.7])),
        gpflow.mean_functions.Linear(
            A=np.random.default_rng(3).normal(size=(D, 1)), b=np.array([0.2])
        ),
    ],
    ids=["constant", "linear"],
)
def test_mean_functions_on_sparse_inputs(data, mean_function):
    X, Y = data
    model, twin = _models("se", mean_function=mean_function)
    mean, var = twin.predict_f(X.toarray())
    for Xnew in (X, to_input_tensor(X)):
        got_mean, got_var = model.predict_f(Xnew)
        _close(got_mean, mean)
        _close(got_var, var)
    _close(model.elbo((to_input_tensor(X), Y)), twin.elbo((X.toarray(), Y)))


def test_unsupported_mean_function_on_sparse_input_is_refused(data):
    X, _ = data
    model, _ = _models("se", mean_function=gpflow.mean_functions.Polynomial(degree=2, input_dim=D))
    with pytest.raises(NotImplementedError, match="Polynomial cannot take sparse inputs"):
        model.predict_f(X)


@pytest.mark.parametrize("kernel_name", ["linear", "se"])
def test_kff_full_covariance_on_sparse_input(data, kernel_name):
    X, _ = data
    kernel = _kernel(kernel_name)
    dense = kernel(X.toarray(), full_cov=True)
    _close(Kff(kernel, to_input_tensor(X), full_cov=True), dense)
    _close(Kff(kernel, X, full_cov=False), np.diag(dense.numpy()))
