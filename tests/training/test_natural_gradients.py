"""NaturalGradientUpdate through fit equals GPflow's own natural-gradient loop on SVGP."""
import gpflow
import numpy as np
import pytest
import tensorflow as tf
from gpflow.keras import tf_keras

from gpflow_ext.training import NaturalGradientUpdate, fit


def _svgp(X, likelihood=None):
    return gpflow.models.SVGP(gpflow.kernels.SquaredExponential(lengthscales=[1.0, 1.0]),
                              likelihood or gpflow.likelihoods.Gaussian(variance=0.3), X[:7].copy(), num_data=len(X))


def test_natural_gradients_alone_equal_gpflows_natgrad_and_gamma_one_is_optimal(th):
    X, Y = th.regression_data(n=50)
    ours = _svgp(X)
    fit(ours, (X, Y), epochs=3, optimizer=NaturalGradientUpdate(gamma=0.7),
        variables=[ours.q_mu, ours.q_sqrt], progress=False)

    reference = _svgp(X)  # GPflow's own loop: NaturalGradient's natgrad steps on the full batch
    natgrad = gpflow.optimizers.NaturalGradient(gamma=0.7)
    data = (tf.constant(X), tf.constant(Y))
    for _ in range(3):
        natgrad._natgrad_steps(lambda: reference.training_loss(data), [(reference.q_mu, reference.q_sqrt, None)])
    assert th.max_abs_diff(th.values(ours), th.values(reference)) <= 1e-10

    # gamma = 1 with a Gaussian likelihood on the full data: one step reaches the optimal q(u) (= SGPR's bound)
    once = _svgp(X)
    fit(once, (X, Y), epochs=1, optimizer=NaturalGradientUpdate(gamma=1.0), variables=[once.q_mu, once.q_sqrt],
        progress=False)
    sgpr = gpflow.models.SGPR((X, Y), once.kernel, X[:7].copy(), noise_variance=0.3)
    np.testing.assert_allclose(once.elbo(data).numpy(), sgpr.elbo().numpy(), rtol=1e-9)


def test_natural_gradients_then_adam_equal_gpflows_two_optimizer_loop(th):
    X, Y = th.regression_data(n=50)
    ours = _svgp(X)
    fit(ours, (X, Y), epochs=4, optimizer=NaturalGradientUpdate(0.5, tf_keras.optimizers.Adam(0.03)), progress=False)

    reference = _svgp(X)  # the schedule of GPflow's natural-gradient notebook: natgrad on q(u), then Adam on the rest
    natgrad, adam = gpflow.optimizers.NaturalGradient(gamma=0.5), tf_keras.optimizers.Adam(0.03)
    data = (tf.constant(X), tf.constant(Y))
    others = [v for v in reference.trainable_variables
              if v.ref() not in {reference.q_mu.unconstrained_variable.ref(), reference.q_sqrt.unconstrained_variable.ref()}]
    for _ in range(4):
        natgrad._natgrad_steps(lambda: reference.training_loss(data), [(reference.q_mu, reference.q_sqrt, None)])
        with tf.GradientTape() as tape:
            loss = reference.training_loss(data)
        adam.apply_gradients(zip(tape.gradient(loss, others), others))  # reference loop (GPflow's pattern)
    assert th.max_abs_diff(th.values(ours), th.values(reference)) <= 1e-10


def test_natural_gradients_train_a_minibatched_classifier_and_resume(th, tmp_path):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(60, 2))
    Y = (X[:, :1] > 0).astype(float)
    kwargs = dict(batch_size=20, seed=2, progress=False)
    straight = _svgp(X, gpflow.likelihoods.Bernoulli())
    h = fit(straight, (X, Y), epochs=4, optimizer=NaturalGradientUpdate(0.1, tf_keras.optimizers.Adam(0.01)), **kwargs)
    assert h.objective[-1] < h.objective[0]
    first = _svgp(X, gpflow.likelihoods.Bernoulli())
    fit(first, (X, Y), epochs=2, checkpoint_dir=tmp_path,
        optimizer=NaturalGradientUpdate(0.1, tf_keras.optimizers.Adam(0.01)), **kwargs)
    resumed = _svgp(X, gpflow.likelihoods.Bernoulli())
    fit(resumed, (X, Y), epochs=4, checkpoint_dir=tmp_path,
        optimizer=NaturalGradientUpdate(0.1, tf_keras.optimizers.Adam(0.01)), **kwargs)
    assert th.max_abs_diff(th.values(straight), th.values(resumed)) <= 1e-10


def test_natural_gradient_arguments_are_checked_before_training(th):
    X, Y = th.regression_data(n=20)
    with pytest.raises(ValueError, match=r"gamma must be a number in \(0, 1\], got 1.5"):
        NaturalGradientUpdate(gamma=1.5)
    with pytest.raises(TypeError, match=r"optimizer must have apply_gradients"):
        NaturalGradientUpdate(0.5, optimizer="adam")
    diag = gpflow.models.SVGP(gpflow.kernels.SquaredExponential(), gpflow.likelihoods.Gaussian(), X[:3].copy(),
                              q_diag=True, num_data=20)
    with pytest.raises(ValueError, match=r"natural gradients need a full-covariance q_sqrt"):
        fit(diag, (X, Y), epochs=1, optimizer=NaturalGradientUpdate(0.5), progress=False)
    model = _svgp(X)
    gpflow.set_trainable(model.q_mu, False)
    with pytest.raises(ValueError, match=r"variational parameters .* are not among the trained variables"):
        fit(model, (X, Y), epochs=1, optimizer=NaturalGradientUpdate(0.5), progress=False)
