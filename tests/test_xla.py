"""fit(..., jit_compile=True): the XLA-compiled step equals the tf.function step (float64) for every model.

Each case builds the same model twice (same seeds, same initial variables), trains two full-batch steps with and
without XLA under the same fit seed and compares the objectives and the trained variables. The Monte Carlo
noise of SVDKL and GPLVF and MLGPF's negative labels come from gpflow_ext.randomness' Philox streams keyed by
(fit seed, step, row): integer arithmetic that XLA evaluates bit for bit (TF's own stateless normals differ under
XLA, checked below), so both modes draw the same numbers.
"""

import gpflow
import numpy as np
import pytest
import scipy.sparse as sp
import tensorflow as tf
from gpflow.keras import tf_keras

from gpflow_ext.bijectors import planar_flow
from gpflow_ext.inducing_variables import SubspaceInducingPoints
from gpflow_ext.likelihoods.multilabel import multilabel_expected_log_likelihood, sample_negative_labels
from gpflow_ext.likelihoods.multilabel_dense import dense_multilabel_expected_log_likelihood, dense_negative_labels
from gpflow_ext.models import GPLVF, MLGPF, SVDKL, PreconditionedSVGP
from gpflow_ext.randomness import row_normal, shared_normal
from gpflow_ext.training import fit
from gpflow_ext.utilities import to_input_tensor
from gpflow_ext.variational import FreeInducingPoints, KISSGPGrid
from gpflow_ext.variational.grid_priors import CirculantGridPrior

N = 24


def _regression():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(N, 2))
    return X, np.sin(X[:, :1]) + 0.1 * rng.normal(size=(N, 1))


def _multilabel():
    X = sp.random(N, 15, density=0.3, format="csr", random_state=0)
    Y = sp.random(N, 9, density=0.25, format="csr", random_state=1)
    Y.data[:] = 1.0
    return X, Y


def _subspace(X):
    return SubspaceInducingPoints.from_data(X, num_inducing=4, rank=5)


def _net():
    tf_keras.utils.set_random_seed(0)
    return tf_keras.Sequential(
        [
            tf_keras.Input((4,), dtype="float64"),
            tf_keras.layers.Dense(6, activation="tanh", dtype="float64"),
            tf_keras.layers.Dense(2, dtype="float64"),
        ]
    )


def _classes():
    rng = np.random.default_rng(1)
    return rng.normal(size=(N, 4)), rng.integers(0, 3, size=N)


def _gplvf_data():
    rng = np.random.default_rng(2)
    Y = rng.normal(size=(N, 4))
    Y[rng.random(Y.shape) < 0.2] = np.nan
    Y[:, 0] = np.where(np.isnan(Y[:, 0]), 0.5, Y[:, 0])  # every row observed somewhere
    return Y


def _case(name):
    """(model, data) for one configuration; a fresh model with the same initial variables on every call."""
    if name == "svgp":
        X, Y = _regression()
        kernel = gpflow.kernels.SquaredExponential()
        return gpflow.models.SVGP(kernel, gpflow.likelihoods.Gaussian(), X[:5].copy(), num_data=N), (X, Y)
    if name.startswith("preconditioned"):
        X, _ = _multilabel()
        Y = np.sin(X.toarray()[:, :1])
        kernel = gpflow.kernels.SquaredExponential(lengthscales=2.0)
        model = PreconditionedSVGP(kernel, gpflow.likelihoods.Gaussian(), _subspace(X), num_data=N)
        return model, (X if name.endswith("sparse") else X.toarray(), Y)
    if name.startswith("mlgpf"):
        X, Y = _multilabel()
        sampled = name.endswith("sampled")
        kernel = gpflow.kernels.Linear() if "dense" in name else gpflow.kernels.SquaredExponential(lengthscales=2.0)
        model = MLGPF(kernel, _subspace(X), 9, 3, N, num_negative_samples=4 if sampled else None)
        return model, (X.toarray() if "dense" in name else X, Y)
    if name.startswith("svdkl"):
        inducing = {
            "svdkl-toeplitz": lambda: KISSGPGrid(8),
            "svdkl-circulant": lambda: KISSGPGrid(8, prior=CirculantGridPrior(variational_size=4)),
            "svdkl-points": lambda: FreeInducingPoints(5),
        }[name]()
        return SVDKL(_net(), 3, num_data=N, inducing=inducing, num_samples=2), _classes()
    flow = planar_flow(2, 2, init_scale=0.5, seed=0) if name == "gplvf-flow" else None
    model = GPLVF(_gplvf_data(), 2, 4, flow=flow, num_samples=2, seed=1)
    return model, model.training_data()


CASES = [
    "svgp",
    "preconditioned-dense",
    "preconditioned-sparse",
    "mlgpf-dense-exact",
    "mlgpf-sparse-sampled",
    "svdkl-toeplitz",
    "svdkl-circulant",
    "svdkl-points",
    "gplvf",
    "gplvf-flow",
]


def _train(name, jit_compile):
    model, data = _case(name)
    history = fit(model, data, epochs=2, learning_rate=0.05, seed=3, progress=False, jit_compile=jit_compile)
    return np.array(history.objective), [v.numpy() for v in model.trainable_variables]


@pytest.mark.parametrize("name", CASES)
def test_xla_step_equals_the_tf_function_step(name):
    objective, variables = _train(name, False)
    objective_xla, variables_xla = _train(name, True)
    np.testing.assert_allclose(objective_xla, objective, rtol=0, atol=1e-8 * max(1.0, np.abs(objective).max()))
    assert len(variables_xla) == len(variables)
    for v, v_xla in zip(variables, variables_xla):
        np.testing.assert_allclose(v_xla, v, rtol=0, atol=1e-8)


def test_the_steps_move_the_variables_and_the_noise_is_seeded():
    """The comparison is not vacuous: two steps change the variables, and another fit seed changes SVDKL's
    Monte Carlo objective (its noise really comes from fit's seed)."""
    model, data = _case("svdkl-toeplitz")
    before = [v.numpy().copy() for v in model.trainable_variables]
    h3 = fit(model, data, epochs=1, learning_rate=0.05, seed=3, progress=False, jit_compile=True)
    assert max(np.abs(b - v.numpy()).max() for b, v in zip(before, model.trainable_variables)) > 1e-3
    other, _ = _case("svdkl-toeplitz")
    h4 = fit(other, data, epochs=1, learning_rate=0.05, seed=4, progress=False, jit_compile=True)
    assert abs(h3.objective[0] - h4.objective[0]) > 1e-6


def test_keyed_draws_are_identical_under_xla_and_tf_stateless_normals_are_not():
    seed = tf.constant([3, 7], tf.int64)
    rows = tf.constant([0, 5, 2**33 + 1], tf.int64)

    def draws():
        stateless = tf.random.stateless_normal([8], seed, dtype=tf.float64)
        return row_normal(seed, rows, 5), shared_normal(seed, 2, 6), stateless

    plain, xla = tf.function(draws)(), tf.function(draws, jit_compile=True)()
    np.testing.assert_allclose(xla[0].numpy(), plain[0].numpy(), rtol=0, atol=1e-14)
    np.testing.assert_allclose(xla[1].numpy(), plain[1].numpy(), rtol=0, atol=1e-14)
    assert np.abs(xla[2].numpy() - plain[2].numpy()).max() > 1e-3  # why fit keys the noise through Philox
    # shared streams are not any row's stream
    assert np.abs(shared_normal(seed, 1, 5).numpy() - row_normal(seed, tf.constant([0], tf.int64), 5).numpy()).min() > 0


@pytest.mark.parametrize("num_negative_samples", [None, 5])
def test_dense_label_term_equals_the_sparse_one(num_negative_samples):
    """The fixed-shape formulation of eq. 20/23 for dense 0/1 labels against the sparse one (same draws)."""
    rng = np.random.default_rng(4)
    B, K, P = 7, 11, 3
    labels = (rng.random((B, K)) < 0.3).astype(float)
    labels[0] = 1.0  # a row without negatives
    labels[1] = 0.0  # a row without positives
    h_mean, h_var = tf.constant(rng.normal(size=(B, P))), tf.constant(rng.random((B, P)))
    loadings, bias = tf.constant(rng.normal(size=(K, P))), tf.constant(rng.normal(size=K))
    uniform = tf.constant(rng.random((B, 5)))
    sparse = to_input_tensor(sp.csr_matrix(labels), tf.float64)
    expected = multilabel_expected_log_likelihood(
        h_mean, h_var, loadings, bias, sparse, num_negative_samples, 20, uniform
    )
    dense = dense_multilabel_expected_log_likelihood(
        h_mean, h_var, loadings, bias, tf.constant(labels), num_negative_samples, 20, uniform
    )
    np.testing.assert_allclose(dense.numpy(), expected.numpy(), rtol=1e-12, atol=1e-12)
    ids, counts = dense_negative_labels(tf.constant(labels), uniform)
    ids_sparse, counts_sparse = sample_negative_labels(sparse, 5, uniform)
    np.testing.assert_array_equal(ids.numpy(), ids_sparse.numpy())
    np.testing.assert_array_equal(counts.numpy(), counts_sparse.numpy())
    for b in range(2, B):  # brute force: the r-th zero of the row
        zeros = np.flatnonzero(labels[b] == 0)
        ranks = np.minimum(np.floor(uniform.numpy()[b] * zeros.size).astype(int), zeros.size - 1)
        np.testing.assert_array_equal(ids.numpy()[b], zeros[ranks])


def test_bad_jit_compile_is_a_type_error_before_anything_is_traced():
    model, data = _case("svgp")
    for bad in ("yes", 1, None):
        with pytest.raises(TypeError, match="jit_compile must be a bool"):
            fit(model, data, epochs=1, progress=False, jit_compile=bad)


def test_a_strategy_ignores_jit_compile_with_a_warning():
    strategy = tf.distribute.OneDeviceStrategy("/cpu:0")
    X, Y = _regression()
    with strategy.scope():
        kernel = gpflow.kernels.SquaredExponential()
        model = gpflow.models.SVGP(kernel, gpflow.likelihoods.Gaussian(), X[:5], num_data=N)
    with pytest.warns(UserWarning, match="jit_compile=True is ignored under a tf.distribute strategy"):
        fit(model, (X, Y), epochs=1, batch_size=12, progress=False, strategy=strategy, jit_compile=True)
