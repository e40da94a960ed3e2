"""fit against a hand-written twin loop, data pipelines (dense / CSR), GPR, float32, subsets, history."""
import gpflow
import numpy as np
import pytest
import scipy.sparse as sp
import tensorflow as tf
from gpflow.keras import tf_keras

from gpflow_ext.training import FunctionCallback, Metrics, fit
from gpflow_ext.training.data import ArrayData, epoch_order, minibatch_dataset, steps_per_epoch


def test_svgp_minibatch_matches_hand_written_adam_loop(th):
    regression_data, svgp, values, max_abs_diff = th.regression_data, th.svgp, th.values, th.max_abs_diff
    """fit == the obvious loop: epoch e visits rows in stateless_shuffle(range N, (seed, e)) batches."""
    X, Y = regression_data(n=50)
    seed, batch, epochs, lr = 3, 16, 3, 0.05
    model = svgp(X)
    history = fit(model, (X, Y), epochs=epochs, batch_size=batch, learning_rate=lr, seed=seed, progress=False)

    twin = svgp(X)
    optimizer = tf_keras.optimizers.Adam(learning_rate=lr)
    losses = []
    for epoch in range(1, epochs + 1):
        order = epoch_order(len(X), seed, epoch, shuffle=True).numpy()
        epoch_losses = []
        for start in range(0, len(X), batch):
            rows = order[start : start + batch]
            with tf.GradientTape() as tape:
                loss = twin.training_loss((tf.constant(X[rows]), tf.constant(Y[rows])))
            grads = tape.gradient(loss, twin.trainable_variables)
            optimizer.apply_gradients(zip(grads, twin.trainable_variables))
            epoch_losses.append(float(loss))
        losses.append(np.mean(epoch_losses))

    assert max_abs_diff(values(model), values(twin)) < 1e-10
    np.testing.assert_allclose(history.objective, losses, rtol=1e-12)
    assert history.epochs == [1, 2, 3]
    assert history.steps == [4, 8, 12] and history.steps_per_epoch == 4
    assert len(history.seconds_per_epoch) == 3 and all(s > 0 for s in history.seconds_per_epoch)
    assert history.objective[-1] < history.objective[0]


def test_epoch_order_is_a_permutation_and_differs_between_epochs(th):
    _regression_data, _svgp, _values, _max_abs_diff = th.regression_data, th.svgp, th.values, th.max_abs_diff
    a = epoch_order(40, 0, 1, True).numpy()
    b = epoch_order(40, 0, 2, True).numpy()
    assert sorted(a) == list(range(40)) and sorted(b) == list(range(40))
    assert not np.array_equal(a, b)
    np.testing.assert_array_equal(a, epoch_order(40, 0, 1, True).numpy())
    np.testing.assert_array_equal(epoch_order(5, 0, 1, False).numpy(), np.arange(5))
    assert steps_per_epoch(50, 16) == 4 and steps_per_epoch(50, None) == 1 and steps_per_epoch(48, 16) == 3


def test_sparse_csr_batches_are_sparse_tensors_with_the_right_rows(th):
    _regression_data, _svgp, _values, _max_abs_diff = th.regression_data, th.svgp, th.values, th.max_abs_diff
    rng = np.random.default_rng(1)
    X = sp.random(30, 12, density=0.2, format="csr", random_state=2)
    X = X[:, rng.permutation(12)]  # unsorted column indices inside rows
    labels = rng.integers(0, 3, size=30)
    data = ArrayData((X, labels, X.toarray()), tf.float64)
    dataset = minibatch_dataset(data, batch_size=7, first_epoch=1, last_epoch=3, seed=0, shuffle=True)
    seen = 0
    for sparse_batch, label_batch, dense_batch in dataset:
        assert isinstance(sparse_batch, tf.SparseTensor)
        assert sparse_batch.dtype == tf.float64 and label_batch.dtype == tf.int64
        np.testing.assert_array_equal(tf.sparse.to_dense(sparse_batch).numpy(), dense_batch.numpy())
        # canonical order: tf.sparse ops that need ordered indices work without reorder
        np.testing.assert_array_equal(
            tf.sparse.reorder(sparse_batch).indices.numpy(), sparse_batch.indices.numpy()
        )
        seen += int(dense_batch.shape[0])
    assert seen == 60  # two epochs of 30 rows, last batches short


class SparseInputSVGP(gpflow.models.SVGP):
    """SVGP on sparse inputs: densifies only the minibatch (test model)."""

    def elbo(self, data):
        X, Y = data
        return super().elbo((tf.sparse.to_dense(X), Y))


def test_sparse_training_equals_dense_training(th):
    # a model class states what data it takes by registering its own check (SVGP's refuses sparse X
    # unless the inducing inputs are subspace ones)
    from gpflow_ext.validation import check_data, check_training_data

    check_training_data.register(SparseInputSVGP)(lambda model, data: check_data(data))
    regression_data, svgp, values, max_abs_diff = th.regression_data, th.svgp, th.values, th.max_abs_diff
    X = sp.random(40, 8, density=0.3, format="csr", random_state=0)
    _, Y = regression_data(n=40)
    dense = X.toarray()
    m_dense, m_sparse = svgp(dense, num_inducing=4), SparseInputSVGP(
        gpflow.kernels.SquaredExponential(lengthscales=np.ones(8)),
        gpflow.likelihoods.Gaussian(variance=0.5),
        inducing_variable=dense[:4].copy(),
        num_data=40,
    )
    h1 = fit(m_dense, (dense, Y), epochs=2, batch_size=16, progress=False)
    h2 = fit(m_sparse, (X, Y), epochs=2, batch_size=16, progress=False)
    np.testing.assert_allclose(h1.objective, h2.objective, rtol=1e-12)
    assert max_abs_diff(values(m_dense), values(m_sparse)) < 1e-10


def test_gpr_internal_data_full_batch_matches_adam_twin(th):
    regression_data, _svgp, values, max_abs_diff = th.regression_data, th.svgp, th.values, th.max_abs_diff
    X, Y = regression_data(n=30)
    model = gpflow.models.GPR((X, Y), gpflow.kernels.SquaredExponential())
    twin = gpflow.models.GPR((X, Y), gpflow.kernels.SquaredExponential())
    history = fit(model, epochs=5, learning_rate=0.1, progress=False)
    optimizer = tf_keras.optimizers.Adam(0.1)
    expected = []
    for _ in range(5):
        with tf.GradientTape() as tape:
            loss = twin.training_loss()
        optimizer.apply_gradients(zip(tape.gradient(loss, twin.trainable_variables), twin.trainable_variables))
        expected.append(float(loss))
    np.testing.assert_allclose(history.objective, expected, rtol=1e-12)
    assert max_abs_diff(values(model), values(twin)) < 1e-10
    assert history.steps == [1, 2, 3, 4, 5]


def test_float32_model_and_data(th):
    regression_data, svgp, _values, _max_abs_diff = th.regression_data, th.svgp, th.values, th.max_abs_diff
    X, Y = regression_data(n=40)
    with gpflow.config.as_context(gpflow.config.Config(float=np.float32)):
        model = svgp(X.astype(np.float32))
        assert model.kernel.variance.dtype == tf.float32
        history = fit(model, (X, Y), epochs=3, batch_size=20, learning_rate=0.05, progress=False)
    assert np.all(np.isfinite(history.objective)) and history.objective[-1] < history.objective[0]
    # the data take the model's float type: float32 data train a float64 model in float64
    model = svgp(X)
    history = fit(model, (X.astype(np.float32), Y.astype(np.float32)), epochs=1, progress=False)
    assert model.kernel.variance.dtype == tf.float64 and np.isfinite(history.objective[-1])
    # a model whose trained parameters mix float types is refused, naming them
    with gpflow.config.as_context(gpflow.config.Config(float=np.float32)):
        mixed = svgp(X.astype(np.float32))
    mixed.likelihood.variance = gpflow.Parameter(0.5, transform=gpflow.utilities.positive(), dtype=np.float64)
    with pytest.raises(ValueError, match=r"mix float types \['float32', 'float64'\]"):
        fit(mixed, (X, Y), epochs=1, progress=False)


def test_variables_subset_trains_only_those(th):
    regression_data, svgp, values, _max_abs_diff = th.regression_data, th.svgp, th.values, th.max_abs_diff
    X, Y = regression_data(n=40)
    model = svgp(X)
    before = values(model)
    fit(model, (X, Y), epochs=2, batch_size=20, variables=[model.q_mu, model.q_sqrt], progress=False)
    after = values(model)
    changed = {k for k in before if np.max(np.abs(before[k] - after[k])) > 0}
    assert changed == {".q_mu", ".q_sqrt"}


def test_custom_optimizer_and_no_shuffle_and_zero_epochs(th):
    regression_data, svgp, values, max_abs_diff = th.regression_data, th.svgp, th.values, th.max_abs_diff
    X, Y = regression_data(n=40)
    model = svgp(X)
    history = fit(model, (X, Y), epochs=2, batch_size=40, optimizer=tf_keras.optimizers.SGD(1e-3), shuffle=False,
                  progress=False)
    assert history.steps == [1, 2]
    before = values(model)
    history = fit(model, (X, Y), epochs=0, progress=False)
    assert history.epochs == [] and max_abs_diff(before, values(model)) == 0.0


def test_callbacks_and_metrics_are_recorded(th):
    regression_data, svgp, _values, _max_abs_diff = th.regression_data, th.svgp, th.values, th.max_abs_diff
    X, Y = regression_data(n=40)
    model = svgp(X)
    seen = []

    def callback(epoch, model, **_):
        seen.append(epoch)
        return {"kernel_variance": float(model.kernel.variance.numpy())}

    history = fit(
        model, (X, Y), epochs=4, batch_size=20, progress=True,
        callbacks=[Metrics({"rmse": lambda: 0.5, "epoch_times_two": lambda epoch: 2.0 * epoch}, every=2),
                   FunctionCallback(callback, every=2)],
    )
    assert seen == [2, 4] and history.metric_epochs == [2, 4]
    assert history.metrics["epoch_times_two"] == [4.0, 8.0]
    assert history.metrics["rmse"] == [0.5, 0.5] and len(history.metrics["kernel_variance"]) == 2


def test_eager_mode_matches_compiled(th):
    regression_data, svgp, values, max_abs_diff = th.regression_data, th.svgp, th.values, th.max_abs_diff
    X, Y = regression_data(n=30)
    compiled, eager = svgp(X), svgp(X)
    h1 = fit(compiled, (X, Y), epochs=2, batch_size=15, progress=False)
    tf.config.run_functions_eagerly(True)  # the way to debug the step eagerly
    try:
        h2 = fit(eager, (X, Y), epochs=2, batch_size=15, progress=False)
    finally:
        tf.config.run_functions_eagerly(False)
    np.testing.assert_allclose(h1.objective, h2.objective, rtol=1e-12)
    assert max_abs_diff(values(compiled), values(eager)) < 1e-10


def test_integer_and_boolean_columns_keep_their_types():
    rows = np.arange(6)
    mask = np.array([[True, False]] * 6)
    X = np.ones((6, 2), dtype=np.float32)
    data = ArrayData((X, rows, mask), tf.float64)
    x, r, m = data.gather(tf.constant([4, 1]))
    assert x.dtype == tf.float64 and r.dtype == tf.int64 and m.dtype == tf.bool
    np.testing.assert_array_equal(r.numpy(), [4, 1])


class LocalParameters(gpflow.models.BayesianModel, gpflow.models.ExternalDataTrainingLossMixin):
    """Per-row local parameters gathered by a row-index column (as GPLVF's q(X)) plus one global one."""

    def __init__(self, num_data):
        super().__init__()
        self.local = gpflow.Parameter(np.zeros((num_data, 1)))
        self.offset = gpflow.Parameter(np.zeros(()))
        self.num_data = num_data

    def maximum_log_likelihood_objective(self, data):
        rows, Y = data
        fitted = tf.gather(self.local, rows) + self.offset  # [B, 1]  (gradient is IndexedSlices)
        scale = self.num_data / tf.cast(tf.shape(rows)[0], Y.dtype)
        return -scale * tf.reduce_sum((Y - fitted) ** 2)


def test_local_parameters_via_row_index_column_and_variable_subset(th):
    _, Y = th.regression_data(n=24)
    rows = np.arange(24)
    model = LocalParameters(24)
    history = fit(model, (rows, Y), epochs=60, batch_size=8, learning_rate=0.1, variables=[model.local], progress=False)
    assert model.offset.numpy() == 0.0  # held fixed
    np.testing.assert_allclose(model.local.numpy(), Y, atol=0.05)
    assert history.objective[-1] < 1e-2 * history.objective[0]
