"""Checkpoints: 2 epochs + resume to 4 == 4 uninterrupted epochs (same seed)."""
import gpflow
import numpy as np
import tensorflow as tf

from gpflow_ext.training import fit


def test_resume_two_plus_two_equals_four(th, tmp_path):
    X, Y = th.regression_data(n=50)
    kwargs = dict(batch_size=16, learning_rate=0.05, seed=7, progress=False)

    straight = th.svgp(X)
    h4 = fit(straight, (X, Y), epochs=4, checkpoint_dir=tmp_path / "straight", **kwargs)

    first = th.svgp(X)
    h2 = fit(first, (X, Y), epochs=2, checkpoint_dir=tmp_path / "resumed", **kwargs)
    assert h2.last_checkpoint.endswith("ckpt-8")  # numbered by global step: 4 per epoch
    # a fresh process would rebuild the model from scratch: do the same
    resumed = th.svgp(X)
    h_rest = fit(resumed, (X, Y), epochs=4, checkpoint_dir=tmp_path / "resumed", **kwargs)

    assert h_rest.start_epoch == 2 and h_rest.trained_epochs == [3, 4] and h_rest.resumed_from.endswith("ckpt-8")
    assert h_rest.epochs == [1, 2, 3, 4] and h_rest.steps == [4, 8, 12, 16]  # the run's history, restored
    assert th.max_abs_diff(th.values(straight), th.values(resumed)) <= 1e-10
    np.testing.assert_allclose(h_rest.objective, h4.objective, rtol=0, atol=1e-10)

    # re-running the finished command trains nothing and keeps the parameters
    again = th.svgp(X)
    h_none = fit(again, (X, Y), epochs=4, checkpoint_dir=tmp_path / "resumed", **kwargs)
    assert h_none.trained_epochs == [] and h_none.objective[-1] == h4.objective[-1]
    assert th.max_abs_diff(th.values(again), th.values(straight)) <= 1e-10


class NoisyLinearModel(gpflow.models.BayesianModel, gpflow.models.ExternalDataTrainingLossMixin):
    """Linear regression whose objective has a Monte Carlo term (tf.random.normal inside the step):
    a resume must also replay the random numbers. Small on purpose: it is retraced every epoch."""

    def __init__(self, input_dim, num_data):
        super().__init__()
        self.weights = gpflow.Parameter(np.zeros((input_dim, 1)))
        self.num_data = num_data

    def maximum_log_likelihood_objective(self, data):
        X, Y = data
        noise = tf.random.normal([X.shape[1], 1], dtype=gpflow.default_float())  # [D, 1]
        residual = Y - X @ (self.weights + 0.3 * noise)  # [B, 1]
        scale = tf.cast(self.num_data, residual.dtype) / tf.cast(tf.shape(X)[0], residual.dtype)
        return -scale * tf.reduce_sum(residual**2)


def test_resume_replays_random_ops_per_epoch(th, tmp_path):
    X, Y = th.regression_data(n=30)
    kwargs = dict(batch_size=10, learning_rate=0.05, seed=1, progress=False)
    straight = NoisyLinearModel(2, 30)
    h3 = fit(straight, (X, Y), epochs=3, **kwargs)
    first = NoisyLinearModel(2, 30)
    fit(first, (X, Y), epochs=1, checkpoint_dir=tmp_path, **kwargs)
    resumed = NoisyLinearModel(2, 30)
    h_rest = fit(resumed, (X, Y), epochs=3, checkpoint_dir=tmp_path, **kwargs)
    np.testing.assert_allclose(h_rest.objective, h3.objective, rtol=0, atol=1e-10)
    assert th.max_abs_diff(th.values(straight), th.values(resumed)) <= 1e-10
    # the randomness is real: another seed gives other numbers
    other = NoisyLinearModel(2, 30)
    h_other = fit(other, (X, Y), epochs=1, **{**kwargs, "seed": 2})
    assert abs(h_other.objective[0] - h3.objective[0]) > 1e-6


def test_interrupted_run_resumes_when_the_same_command_is_rerun(th, tmp_path, capsys):
    import pytest

    X, Y = th.regression_data(n=20)

    def interrupt(epoch):
        if epoch == 2:
            raise KeyboardInterrupt

    def command(callbacks=()):
        return fit(th.svgp(X), (X, Y), epochs=3, batch_size=10, logdir=tmp_path, callbacks=callbacks, progress=False)

    with pytest.raises(KeyboardInterrupt):
        command([interrupt])
    assert "interrupted in epoch 2 at step 4; re-run the same command to resume from" in capsys.readouterr().out
    history = command()
    assert history.start_epoch == 2 and history.trained_epochs == [3] and history.steps == [2, 4, 6]
