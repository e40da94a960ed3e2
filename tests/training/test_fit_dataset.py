"""fit on a tf.data.Dataset (one pass per epoch, or a function of the epoch): equal to the array path,
sparse batches, exact resume, and clear errors for datasets fit cannot train on."""
import numpy as np
import pytest
import scipy.sparse as sp
import tensorflow as tf

from gpflow_ext.training import Checkpointing, fit

KW = dict(learning_rate=0.05, seed=1, progress=False)


def test_a_dataset_trains_like_the_same_arrays_unshuffled(th):
    X, Y = th.regression_data(n=45)
    by_arrays, by_dataset = th.svgp(X), th.svgp(X)
    h1 = fit(by_arrays, (X, Y), epochs=3, batch_size=10, shuffle=False, **KW)
    dataset = tf.data.Dataset.from_tensor_slices((X, Y)).batch(10)
    h2 = fit(by_dataset, dataset, epochs=3, **KW)
    np.testing.assert_allclose(h2.objective, h1.objective, rtol=0, atol=1e-12)
    assert th.max_abs_diff(th.values(by_arrays), th.values(by_dataset)) <= 1e-12
    assert h2.steps == [5, 10, 15] and h2.steps_per_epoch == 5


def test_a_function_of_the_epoch_equals_the_shuffled_array_path_and_float32_data_are_cast(th):
    X, Y = th.regression_data(n=45)
    from gpflow_ext.training.data import epoch_order

    def epoch_dataset(epoch):  # the rows fit's array path uses in epoch e, batched the same way
        rows = epoch_order(45, 1, epoch, True).numpy()
        return tf.data.Dataset.from_tensor_slices((X[rows].astype(np.float32), Y[rows])).batch(10)

    by_arrays, by_function = th.svgp(X), th.svgp(X)
    fit(by_arrays, (X.astype(np.float32).astype(np.float64), Y), epochs=2, batch_size=10, **KW)
    fit(by_function, epoch_dataset, epochs=2, **KW)
    assert th.max_abs_diff(th.values(by_arrays), th.values(by_function)) <= 1e-12


def test_a_dataset_run_resumes_mid_epoch_exactly(th, tmp_path):
    X, Y = th.regression_data(n=40)
    dataset = tf.data.Dataset.from_tensor_slices((X, Y)).shuffle(40, seed=3, reshuffle_each_iteration=False).batch(8)
    straight = th.svgp(X)
    fit(straight, dataset, epochs=2, **KW)
    with pytest.raises(KeyboardInterrupt):
        fit(th.svgp(X), dataset, epochs=2, callbacks=[th.StopAtStep(7), Checkpointing(tmp_path, every_steps=2)], **KW)
    resumed = th.svgp(X)
    history = fit(resumed, dataset, epochs=2, callbacks=[Checkpointing(tmp_path, every_steps=2)], **KW)
    assert history.start_epoch == 1 and th.max_abs_diff(th.values(resumed), th.values(straight)) == 0.0


def test_sparse_batches_from_a_dataset(th):
    from gpflow_ext.validation import check_data, check_training_data

    X = sp.random(30, 6, density=0.4, format="csr", random_state=0)
    _, Y = th.regression_data(n=30)

    class SparseSVGP(type(th.svgp(np.zeros((4, 6))))):
        def elbo(self, data):
            return super().elbo((tf.sparse.to_dense(data[0]), data[1]))

    check_training_data.register(SparseSVGP)(lambda model, data: check_data(data))
    import gpflow

    def build():
        return SparseSVGP(gpflow.kernels.SquaredExponential(lengthscales=np.ones(6)),
                          gpflow.likelihoods.Gaussian(variance=0.5), X[:4].toarray(), num_data=30)

    coo = X.tocoo()
    sparse = tf.SparseTensor(np.stack([coo.row, coo.col], 1).astype(np.int64), coo.data, coo.shape)
    dataset = tf.data.Dataset.from_tensor_slices((sparse, Y)).batch(10)
    a, b = build(), build()
    fit(a, (X, Y), epochs=2, batch_size=10, shuffle=False, **KW)
    fit(b, dataset, epochs=2, **KW)
    assert th.max_abs_diff(th.values(a), th.values(b)) <= 1e-12


def test_datasets_fit_cannot_train_on_are_refused_before_tracing(th):
    X, Y = th.regression_data(n=20)
    model = th.svgp(X)
    slices = tf.data.Dataset.from_tensor_slices((X, Y))
    cases = [
        (slices.batch(5).repeat(), {}, ValueError, r"infinite \(e.g. .repeat\(\)\)"),
        (tf.data.Dataset.from_tensor_slices(X).batch(5), {}, TypeError, r"must yield tuples of tensors such as \(X, Y\)"),
        (slices, {}, ValueError, r"different leading \(batch\) dimensions \[1, 2\].*Call .batch\(B\)"),
        (slices.batch(5), dict(batch_size=5), ValueError, r"batch_size must be None with a tf.data.Dataset"),
        (lambda epoch: X, {}, TypeError, r"a function of the epoch must return a tf.data.Dataset, got ndarray"),
    ]
    for data, extra, error, message in cases:
        with pytest.raises(error, match=message):
            fit(model, data, epochs=1, **{**KW, **extra})
