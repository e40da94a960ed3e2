"""Bad arguments to fit raise clear Python errors before any tf.function runs."""
import gpflow
import numpy as np
import pytest
import scipy.sparse as sp
import tensorflow as tf

from gpflow_ext.training import fit


@pytest.fixture
def problem(th):
    X, Y = th.regression_data(n=20)
    return th.svgp(X), X, Y


@pytest.mark.parametrize(
    "data, error, message",
    [
        (lambda X, Y: (X, Y[:-1]), ValueError, r"data\[1\] \(Y\) has 19 rows but data\[0\] \(X\) has 20"),
        (lambda X, Y: (X, Y[:, 0]), ValueError, r"data\[1\] \(Y\) must be a 2-D array \[N, P\], got shape \(20,\); pass y\[:, None\]"),
        (lambda X, Y: (X[:0], Y[:0]), ValueError, r"data\[0\] \(X\) must be non-empty, got shape \(0, 2\)"),
        (lambda X, Y: X, TypeError, r"data must be a tuple \(X, Y\) for SVGP, got a single ndarray; write data=\(X, Y\)"),
        (lambda X, Y: (), ValueError, r"data must be a tuple \(X, Y\) for SVGP, got 0 array\(s\)"),
        (lambda X, Y: (X, None), TypeError, r"data\[1\] \(Y\) is None"),
        (lambda X, Y: (X, np.array(["a"] * 20)[:, None]), TypeError, r"data\[1\] \(Y\) must hold numbers"),
        (lambda X, Y: (np.float64(1.0), Y), ValueError, r"data\[0\] \(X\) must be a 2-D array \[N, D\], got shape \(\)"),
        (lambda X, Y: (sp.csr_matrix(X), Y), TypeError, r"data\[0\] \(X\) is a scipy.sparse matrix but this model needs a dense array"),
        (lambda X, Y: None, ValueError, r"SVGP needs training data"),
    ],
)
def test_bad_data(problem, data, error, message):
    model, X, Y = problem
    with pytest.raises(error, match=message):
        fit(model, data(X, Y), epochs=1, progress=False)


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        (dict(batch_size=0), ValueError, r"batch_size must be >= 1, got 0"),
        (dict(batch_size=-5), ValueError, r"batch_size must be >= 1"),
        (dict(batch_size=2.5), TypeError, r"batch_size must be an integer"),
        (dict(epochs=-1), ValueError, r"epochs must be >= 0, got -1"),
        (dict(epochs=1.0), TypeError, r"epochs must be an integer"),
        (dict(checkpoint_every=0), ValueError, r"checkpoint_every must be >= 1"),
        (dict(learning_rate=-0.1), ValueError, r"learning_rate must be a positive number"),
        (dict(seed=-1), ValueError, r"seed must be a non-negative integer"),
        (dict(dtype=tf.int32), ValueError, r"dtype must be a floating type"),
        (dict(callbacks=[42]), TypeError, r"callbacks\[0\] is not callable"),
        (dict(metrics=[lambda: 1.0]), TypeError, r"metrics must be a mapping"),
        (dict(optimizer=object()), TypeError, r"optimizer must have apply_gradients"),
        (dict(variables=["kernel"]), TypeError, r"variables\[0\] must be a gpflow.Parameter"),
        (dict(variables=[]), ValueError, r"no trainable variables"),
        (dict(strategy="mirrored"), TypeError, r"strategy must be a tf.distribute.Strategy"),
    ],
)
def test_bad_arguments(problem, kwargs, error, message):
    model, X, Y = problem
    with pytest.raises(error, match=message):
        fit(model, (X, Y), **{"epochs": 1, "progress": False, **kwargs})


def test_model_without_training_loss_and_not_a_module(th):
    X, Y = th.regression_data(n=10)
    with pytest.raises(TypeError, match=r"has no training_loss method"):
        fit(gpflow.kernels.SquaredExponential(), (X, Y), epochs=1)
    with pytest.raises(TypeError, match=r"model must be a GPflow model"):
        fit(lambda data: 0.0, (X, Y), epochs=1)


def test_internal_data_model_rejects_data_and_batch_size(th):
    X, Y = th.regression_data(n=10)
    gpr = gpflow.models.GPR((X, Y), gpflow.kernels.SquaredExponential())
    with pytest.raises(ValueError, match=r"GPR holds its own data .* data=None"):
        fit(gpr, (X, Y), epochs=1)
    with pytest.raises(ValueError, match=r"GPR trains full batch; batch_size must be None"):
        fit(gpr, epochs=1, batch_size=5)


def test_minibatching_a_model_without_num_data_is_refused(th):
    X, Y = th.regression_data(n=20)
    model = gpflow.models.SVGP(gpflow.kernels.SquaredExponential(), gpflow.likelihoods.Gaussian(), X[:3].copy())
    with pytest.raises(ValueError, match=r"num_data is None.*num_data=20"):
        fit(model, (X, Y), epochs=1, batch_size=5, progress=False)


def test_wrong_feature_dimension_is_reported_with_shapes(th):
    X, Y = th.regression_data(n=20, d=2)
    model = th.svgp(np.zeros((20, 3)))  # inducing points in 3-D, data in 2-D
    with pytest.raises(ValueError, match=r"data\[0\] \(X\) has 2 features but the model's inducing inputs have D=3"):
        fit(model, (X, Y), epochs=1, progress=False)


def test_checkpoint_of_another_model_is_refused(th, tmp_path):
    X, Y = th.regression_data(n=20)
    fit(th.svgp(X, num_inducing=6), (X, Y), epochs=1, checkpoint_dir=tmp_path, progress=False)
    with pytest.raises(ValueError, match=r"checkpoint .*ckpt-1 was written by a different run: "
                                         r"variables.inducing_variable.Z: saved \[\[6, 2\], 'float64'\], now \[\[4, 2\]"):
        fit(th.svgp(X, num_inducing=4), (X, Y), epochs=2, checkpoint_dir=tmp_path, progress=False)
