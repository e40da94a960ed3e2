"""Bad arguments to fit raise clear Python errors before any tf.function runs."""
import gpflow
import numpy as np
import pytest
import scipy.sparse as sp

from gpflow_ext.training import Checkpointing, Metrics, fit


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
        (dict(learning_rate=-0.1), ValueError, r"learning_rate must be a positive number"),
        (dict(seed=-1), ValueError, r"seed must be a non-negative integer"),
        (dict(callbacks=[42]), TypeError, r"callbacks\[0\] is not callable"),
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


@pytest.mark.parametrize(
    "make, error, message",
    [
        (lambda d: Checkpointing(d, every_epochs=0), ValueError, r"every_epochs must be >= 1"),
        (lambda d: Checkpointing(d, every_steps=0), ValueError, r"every_steps must be >= 1"),
        (lambda d: Checkpointing(d, max_checkpoints=0), ValueError, r"max_checkpoints must be >= 1"),
        (lambda d: Checkpointing(d, resume="yes"), ValueError, r"resume must be 'auto', True or False, got 'yes'"),
        (lambda d: Checkpointing(None), ValueError, r"checkpoint_dir must be a folder path"),
        (lambda d: Metrics([lambda: 1.0]), TypeError, r"metrics must be a mapping"),
    ],
)
def test_bad_callback_arguments(tmp_path, make, error, message):
    with pytest.raises(error, match=message):
        make(tmp_path)


def test_checkpoint_dir_that_is_a_file_is_refused_by_name_before_training(problem, tmp_path):
    model, X, Y = problem
    before = [v.numpy().copy() for v in model.trainable_variables]
    a_file = tmp_path / "ckpt"
    a_file.write_text("not a folder")
    for where in (a_file, a_file / "inner"):
        message = rf"checkpoint_dir='{where}' (is|lies under '{a_file}', which is) an existing file, not a folder"
        with pytest.raises(ValueError, match=message):
            fit(model, (X, Y), epochs=1, checkpoint_dir=where, progress=False)
        with pytest.raises(ValueError, match=message):
            Checkpointing(where)
    with pytest.raises(ValueError, match=rf"logdir='{a_file}' is an existing file"):
        fit(model, (X, Y), epochs=1, logdir=a_file, progress=False)
    folder = tmp_path / "later"
    saver = Checkpointing(folder)
    folder.write_text("replaced by a file")  # after the callback was made
    with pytest.raises(ValueError, match=r"checkpoint_dir='.*later' is an existing file"):
        fit(model, (X, Y), epochs=1, callbacks=[saver], progress=False)
    assert all(np.array_equal(b, v.numpy()) for b, v in zip(before, model.trainable_variables))  # nothing trained
    assert a_file.read_text() == "not a folder"


def test_one_checkpoint_folder_per_run(problem, tmp_path):
    model, X, Y = problem
    with pytest.raises(ValueError, match=r"checkpoint_dir= or a Checkpointing callback, not both"):
        fit(model, (X, Y), epochs=1, checkpoint_dir=tmp_path / "a", callbacks=[Checkpointing(tmp_path / "b")],
            progress=False)
    with pytest.raises(ValueError, match=r"2 Checkpointing callbacks"):
        fit(model, (X, Y), epochs=1, callbacks=[Checkpointing(tmp_path / "a"), Checkpointing(tmp_path / "b")],
            progress=False)
