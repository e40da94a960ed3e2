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
    assert h2.last_checkpoint.endswith("ckpt-2")
    # a fresh process would rebuild the model from scratch: do the same
    resumed = th.svgp(X)
    h_rest = fit(resumed, (X, Y), epochs=4, checkpoint_dir=tmp_path / "resumed", **kwargs)

    assert h_rest.start_epoch == 2 and h_rest.epochs == [3, 4] and h_rest.resumed_from.endswith("ckpt-2")
    assert h_rest.steps == [12, 16]  # global step counter restored
    assert th.max_abs_diff(th.values(straight), th.values(resumed)) <= 1e-10
    np.testing.assert_allclose(h2.objective + h_rest.objective, h4.objective, rtol=0, atol=1e-10)

    # re-running the finished command trains nothing and keeps the parameters
    again = th.svgp(X)
    h_none = fit(again, (X, Y), epochs=4, checkpoint_dir=tmp_path / "resumed", **kwargs)
    assert h_none.epochs == [] and th.max_abs_diff(th.values(again), th.values(straight)) <= 1e-10


class NoisySVGP(gpflow.models.SVGP):
    """SVGP with a random term in the loss: resume must also replay the random numbers."""

    def maximum_log_likelihood_objective(self, data):
        noise = tf.random.normal([], dtype=gpflow.default_float())
        return super().maximum_log_likelihood_objective(data) + 10.0 * noise * self.kernel.variance


def test_resume_replays_random_ops_per_epoch(th, tmp_path):
    X, Y = th.regression_data(n=30)

    def build():
        return NoisySVGP(
            gpflow.kernels.SquaredExponential(), gpflow.likelihoods.Gaussian(), X[:4].copy(), num_data=30
        )

    kwargs = dict(batch_size=10, learning_rate=0.05, seed=1, progress=False)
    straight = build()
    h4 = fit(straight, (X, Y), epochs=4, **kwargs)
    first = build()
    fit(first, (X, Y), epochs=2, checkpoint_dir=tmp_path, **kwargs)
    resumed = build()
    h_rest = fit(resumed, (X, Y), epochs=4, checkpoint_dir=tmp_path, **kwargs)
    np.testing.assert_allclose(h_rest.objective, h4.objective[2:], rtol=0, atol=1e-10)
    assert th.max_abs_diff(th.values(straight), th.values(resumed)) <= 1e-10
    # and a different seed gives a different run (the randomness is real)
    other = build()
    h_other = fit(other, (X, Y), epochs=1, batch_size=10, learning_rate=0.05, seed=2, progress=False)
    assert abs(h_other.objective[0] - h4.objective[0]) > 1e-6
