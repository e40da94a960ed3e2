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
    with pytest.raises(ValueError, match=r"data\[0\] contains NaN at index \(7, 1\)"):
        fit(th.svgp(X[8:]), (X, Y), epochs=1, progress=False)
    X[7, 1] = 0.0
    Y[3, 0] = np.inf
    with pytest.raises(ValueError, match=r"data\[1\] contains inf at index \(3, 0\)"):
        fit(th.svgp(X), (X, Y), epochs=1, progress=False)


def test_nan_in_sparse_data_is_reported_with_location(th):
    X = sp.random(10, 5, density=0.5, format="csr", random_state=0)
    row, col = 6, X[6].indices[0]
    X[row, col] = np.nan
    _, Y = th.regression_data(n=10)
    with pytest.raises(ValueError, match=rf"data\[0\] \(sparse\) contains NaN at index \({row}, {col}\)"):
        fit(th.svgp(np.zeros((10, 5))), (X, Y), epochs=1, progress=False)


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
