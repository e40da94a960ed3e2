"""NaN/inf: rejected in the data before training; mid-training they stop fit with epoch and step."""
import gpflow
import numpy as np
import pytest
import scipy.sparse as sp
import tensorflow as tf

from gpflow_ext.training import NonFiniteObjectiveError, fit


def test_nan_in_dense_data_is_reported_with_location(th):
    X, Y = th.regression_data(n=20)
    X[7, 1] = np.nan
    with pytest.raises(ValueError, match=r"data\[0\] \(X\) contains NaN at index \(7, 1\)"):
        fit(th.svgp(X[8:]), (X, Y), epochs=1, progress=False)
    X[7, 1] = 0.0
    Y[3, 0] = np.inf
    with pytest.raises(ValueError, match=r"data\[1\] \(Y\) contains inf at index \(3, 0\)"):
        fit(th.svgp(X), (X, Y), epochs=1, progress=False)


def test_nan_in_sparse_data_is_reported_with_location(th):
    X = sp.random(10, 5, density=0.5, format="csr", random_state=0)
    row, col = 6, X[6].indices[0]
    X[row, col] = np.nan
    _, Y = th.regression_data(n=10)

    class SparseLinear(gpflow.models.BayesianModel, gpflow.models.ExternalDataTrainingLossMixin):
        def __init__(self):
            super().__init__()
            self.w = gpflow.Parameter(np.zeros((5, 1)))

        def maximum_log_likelihood_objective(self, data):
            return -tf.reduce_sum((tf.sparse.sparse_dense_matmul(data[0], self.w) - data[1]) ** 2)

    with pytest.raises(ValueError, match=rf"data\[0\] \(sparse\) contains NaN at index \({row}, {col}\)"):
        fit(SparseLinear(), (X, Y), epochs=1, progress=False)


class NaNAfterSteps(gpflow.models.SVGP):
    """Objective becomes NaN from the ``bad_step``-th call on (1-based)."""

    def __init__(self, *args, bad_step, **kwargs):
        super().__init__(*args, **kwargs)
        self.calls = tf.Variable(0, dtype=tf.int64, trainable=False)
        self.bad_step = bad_step

    def maximum_log_likelihood_objective(self, data):
        self.calls.assign_add(1)
        elbo = super().maximum_log_likelihood_objective(data)
        poison = tf.where(self.calls >= self.bad_step, tf.constant(np.nan, elbo.dtype), tf.zeros((), elbo.dtype))
        return elbo + poison


def test_nan_mid_training_stops_with_step_and_keeps_last_good_checkpoint(th, tmp_path):
    X, Y = th.regression_data(n=40)
    model = NaNAfterSteps(
        gpflow.kernels.SquaredExponential(), gpflow.likelihoods.Gaussian(), X[:5].copy(), num_data=40, bad_step=10
    )
    snapshots = {}

    def snapshot(epoch, model):
        snapshots[epoch] = th.values(model)

    # 4 steps per epoch: step 10 is in epoch 3
    with pytest.raises(NonFiniteObjectiveError, match=r"epoch 3, step 10: objective") as info:
        fit(model, (X, Y), epochs=5, batch_size=10, checkpoint_dir=tmp_path, callbacks=[snapshot], progress=False)
    err = info.value
    assert isinstance(err, FloatingPointError)
    assert (err.epoch, err.step) == (3, 10) and err.last_checkpoint.endswith("ckpt-8")  # numbered by step: 4 per epoch
    assert sorted(snapshots) == [1, 2]
    # the bad update was not applied: all parameters finite
    assert all(np.all(np.isfinite(v)) for v in th.values(model).values())

    # the checkpoint on disk is the state after epoch 2, finite and untouched
    fresh = NaNAfterSteps(
        gpflow.kernels.SquaredExponential(), gpflow.likelihoods.Gaussian(), X[:5].copy(), num_data=40, bad_step=10**9
    )
    manager = tf.train.CheckpointManager(tf.train.Checkpoint(model=fresh), str(tmp_path), max_to_keep=3)
    assert manager.latest_checkpoint.endswith("ckpt-8")
    tf.train.Checkpoint(model=fresh).restore(manager.latest_checkpoint).expect_partial()
    restored = th.values(fresh)
    assert th.max_abs_diff(restored, snapshots[2]) == 0.0

    # re-running with the problem fixed resumes from epoch 2
    history = fit(fresh, (X, Y), epochs=3, batch_size=10, checkpoint_dir=tmp_path, progress=False)
    assert history.start_epoch == 2 and history.trained_epochs == [3] and history.epochs == [1, 2, 3]


def test_nan_gradient_is_named(th):
    X, Y = th.regression_data(n=20)

    class NaNGradient(gpflow.models.SVGP):
        def maximum_log_likelihood_objective(self, data):
            # sqrt'(0) = inf -> inf * 0 = NaN in the gradient of the kernel variance, finite objective
            return super().maximum_log_likelihood_objective(data) + tf.sqrt(self.kernel.variance - self.kernel.variance)

    model = NaNGradient(gpflow.kernels.SquaredExponential(), gpflow.likelihoods.Gaussian(), X[:3].copy(), num_data=20)
    with pytest.raises(NonFiniteObjectiveError, match=r"epoch 1, step 1: gradient of .*variance"):
        fit(model, (X, Y), epochs=1, progress=False)


def test_only_the_culprit_gradient_is_named_not_every_gradient(th):
    X, Y = th.regression_data(n=20)

    class NaNLengthscaleGradient(gpflow.models.SVGP):
        def maximum_log_likelihood_objective(self, data):
            ell = self.kernel.lengthscales
            return super().maximum_log_likelihood_objective(data) + tf.reduce_sum(tf.sqrt(ell - ell))

    model = NaNLengthscaleGradient(gpflow.kernels.SquaredExponential(lengthscales=[1.0, 1.0]),
                                   gpflow.likelihoods.Gaussian(), X[:3].copy(), num_data=20)
    with pytest.raises(NonFiniteObjectiveError) as info:
        fit(model, (X, Y), epochs=1, progress=False)
    assert info.value.what == ["gradient of .kernel.lengthscales"]


def test_keras_weights_are_named_by_layer_and_weight(th):
    from gpflow.keras import tf_keras

    X, Y = th.regression_data(n=20)

    class Net(gpflow.models.BayesianModel, gpflow.models.ExternalDataTrainingLossMixin):
        def __init__(self):
            super().__init__()
            self.feature_extractor = tf_keras.Sequential([
                tf_keras.layers.Dense(4, activation="tanh", dtype=gpflow.default_float(), name="hidden"),
                tf_keras.layers.Dense(1, dtype=gpflow.default_float(), name="out"),
            ])
            self.feature_extractor.build((None, 2))

        def maximum_log_likelihood_objective(self, data):
            x, y = data
            bias = self.feature_extractor.layers[1].bias  # sqrt'(0) = inf: NaN gradient for this weight only
            return -tf.reduce_sum((self.feature_extractor(x) - y) ** 2) + tf.reduce_sum(tf.sqrt(bias - bias))

    with pytest.raises(NonFiniteObjectiveError) as info:
        fit(Net(), (X, Y), epochs=1, progress=False)
    assert info.value.what == ["gradient of .feature_extractor/out/bias"]


def test_a_failed_cholesky_names_the_matrix(th):
    X, Y = th.regression_data(n=20)
    Z = np.repeat(X[:2], 3, axis=0)  # duplicate inducing inputs: singular Kuu, no jitter
    model = gpflow.models.SVGP(gpflow.kernels.SquaredExponential(), gpflow.likelihoods.Gaussian(), Z, num_data=20)
    with gpflow.config.as_context(gpflow.config.Config(jitter=0.0)):
        with pytest.raises(NonFiniteObjectiveError, match=r"First non-finite operation: Cholesky of Kmm \(6, 6\) at "
                                                          r"gpflow/conditionals/util.py:\d+ \(Lm = tf.linalg.cholesky\(Kmm\)\)"):
            fit(model, (X, Y), epochs=1, progress=False)


def test_a_value_that_overflows_is_named_before_the_gradients(th):
    X, Y = th.regression_data(n=20)
    model = th.svgp(X)
    model.kernel.variance.unconstrained_variable.assign(1e308)  # softplus(1e308) is finite; exp would not be
    model.kernel.variance.unconstrained_variable.assign(np.inf)
    with pytest.raises(NonFiniteObjectiveError) as info:
        fit(model, (X, Y), epochs=1, progress=False)
    assert info.value.what[0] == "value of .kernel.variance"


class FailsAtCall(gpflow.models.SVGP):
    """A TensorFlow error (a failed assertion) from the ``bad_call``-th training step on."""

    def __init__(self, *args, bad_call, **kwargs):
        super().__init__(*args, **kwargs)
        self.calls = tf.Variable(0, dtype=tf.int64, trainable=False)
        self.bad_call = bad_call

    def maximum_log_likelihood_objective(self, data):
        self.calls.assign_add(1)
        check = tf.debugging.assert_less(self.calls, tf.constant(self.bad_call, tf.int64),
                                         message="label index out of range in this minibatch")
        with tf.control_dependencies([check]):
            return super().maximum_log_likelihood_objective(data)


def test_an_error_in_a_later_step_is_raised_with_epoch_and_step_cause_first(th):
    from gpflow_ext.training import TrainingStepError

    X, Y = th.regression_data(n=40)
    model = FailsAtCall(gpflow.kernels.SquaredExponential(), gpflow.likelihoods.Gaussian(), X[:4].copy(),
                        num_data=40, bad_call=6)
    with pytest.raises(TrainingStepError, match=r"^InvalidArgumentError: .*label index out of range in this minibatch.* "
                                               r"raised by FailsAtCall.training_loss in epoch 2, step 6") as info:
        fit(model, (X, Y), epochs=3, batch_size=10, progress=False)
    assert isinstance(info.value, ValueError) and isinstance(info.value.cause, tf.errors.InvalidArgumentError)
    assert len(str(info.value)) < 600  # the head of the TensorFlow message, not its graph dump
