"""Old SV-DKL names and arguments keep working for one release, with a DeprecationWarning and the same behaviour."""
import warnings

import numpy as np
import pytest
import tensorflow as tf

import gpflow
import gpflow_ext
from gpflow.keras import tf_keras
from gpflow_ext.models import SVDKL
from gpflow_ext.variational import CirculantGridPrior, FreeInducingPoints, KISSGPGrid, ToeplitzGridPrior

F64 = gpflow.default_float()


def _net(seed=0):
    tf_keras.utils.set_random_seed(seed)
    return tf_keras.Sequential([tf_keras.Input((5,), dtype=F64), tf_keras.layers.Dense(3, dtype=F64)])


def _numbers(model, X, Y):
    """ELBO under a fixed global seed, KL, and seeded predictive probabilities."""
    rng = np.random.default_rng(1)
    for v in model.gps.trainable_variables:
        v.assign(v + 0.05 * rng.normal(size=v.shape))
    tf.random.set_seed(5)
    elbo = model.elbo((tf.constant(X), tf.constant(Y[:, None].astype(float)))).numpy()
    return elbo, model.prior_kl().numpy(), model.predict_proba(X, num_samples=4, seed=3)


OLD_AND_NEW = [
    (dict(inducing="grid", grid_size=8), dict(inducing=KISSGPGrid(8))),
    (dict(grid_size=8, grid_prior="toeplitz"), dict(inducing=KISSGPGrid(8, prior=ToeplitzGridPrior()))),
    (dict(grid_size=8, grid_prior="circulant", circulant_variational_size=5, circulant_period_factor=2.5),
     dict(inducing=KISSGPGrid(8, prior=CirculantGridPrior(period_factor=2.5, variational_size=5)))),
    (dict(inducing="points", num_inducing=6), dict(inducing=FreeInducingPoints(6))),
    (dict(inducing="points", grid_size=6, whiten=False), dict(inducing=FreeInducingPoints(6), whiten=False)),
]


@pytest.mark.parametrize("old, new", OLD_AND_NEW)
def test_string_arguments_warn_and_build_the_same_model(rng, old, new):
    X, Y = rng.normal(size=(12, 5)), rng.integers(0, 3, size=12)
    with pytest.warns(DeprecationWarning, match=r"SVDKL\(.*\) is deprecated .* use .*gpflow_ext\.variational\."):
        old_model = SVDKL(_net(), 3, num_data=12, **old)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        new_model = SVDKL(_net(), 3, num_data=12, **new)
    assert type(old_model.gps) is type(new_model.gps)
    for a, b in zip(_numbers(old_model, X, Y), _numbers(new_model, X, Y)):
        np.testing.assert_array_equal(a, b)


def test_defaults_do_not_warn_and_objects_refuse_extra_settings():
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        model = SVDKL(_net(), 3, num_data=12, grid_size=8, grid_prior=CirculantGridPrior())
    assert isinstance(model.gps, KISSGPGrid) and isinstance(model.gps.prior, CirculantGridPrior)
    with pytest.raises(ValueError, match=r"carries its own settings; do not also pass \['grid_size'\]"):
        SVDKL(_net(), 3, num_data=12, inducing=KISSGPGrid(8), grid_size=8)
    gps = KISSGPGrid(8)
    SVDKL(_net(), 3, num_data=12, inducing=gps)
    with pytest.raises(ValueError, match="already belongs to a model"):
        SVDKL(_net(), 3, num_data=12, inducing=gps)


@pytest.mark.parametrize("name, new", [
    ("SoftmaxNetwork", lambda: gpflow_ext.models.SoftmaxNetwork),
    ("classification_metrics", lambda: gpflow_ext.metrics.classification_metrics),
    ("validate_classification_data", lambda: gpflow_ext.validation.validate_classification_data),
    ("check_network_dtype", lambda: gpflow_ext.validation.check_network_dtype),
])
def test_moved_names_warn_and_are_the_new_objects(name, new):
    import gpflow_ext.models.svdkl as old_module

    with pytest.warns(DeprecationWarning, match=f"gpflow_ext.models.svdkl.{name} is deprecated"):
        assert getattr(old_module, name) is new()
    with pytest.raises(AttributeError):
        old_module.no_such_name


@pytest.mark.parametrize("where", ["gpflow_ext.models.svdkl", "gpflow_ext.models"])
def test_pretrain_and_fit_old_paths_warn_and_run_the_recipe(rng, where):
    import importlib

    from gpflow_ext.recipes.svdkl import pretrain_and_fit

    old = importlib.import_module(where).pretrain_and_fit
    X, Y = rng.normal(size=(30, 5)), rng.integers(0, 3, size=30)
    kwargs = dict(network_epochs=1, gp_epochs=1, joint_epochs=0, batch_size=10, validation_data=(X, Y))
    with pytest.warns(DeprecationWarning, match=r"gpflow_ext.models.svdkl.pretrain_and_fit is deprecated .* "
                                                r"gpflow_ext.recipes.svdkl.pretrain_and_fit"):
        out_old = old(SVDKL(_net(), 3, num_data=30, grid_size=8), (X, Y), **kwargs)
    out_new = pretrain_and_fit(SVDKL(_net(), 3, num_data=30, grid_size=8), (X, Y), **kwargs)
    assert out_old["dnn"] == out_new["dnn"]
    np.testing.assert_allclose(out_old["gp_history"].objective, out_new["gp_history"].objective, rtol=1e-12)


def test_svdkl_models_never_import_training_or_recipes():
    """models sit below training and recipes: no import of them in the SV-DKL model files, not even lazily."""
    import ast
    from pathlib import Path

    root = Path(gpflow_ext.__file__).parent / "models"
    for path in (root / "svdkl.py", root / "svdkl_arguments.py", root / "softmax_network.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                names = [("." * node.level) + (node.module or "")]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                continue
            for name in names:
                assert not any(part in ("training", "recipes") for part in name.replace(".", " ").split()), (path, name)


def test_moved_model_attributes_warn_and_forward():
    from gpflow_ext.variational.grid_priors import toeplitz_prior_factors

    grid = SVDKL(_net(), 3, num_data=12, inducing=KISSGPGrid(8, prior=CirculantGridPrior(variational_size=5)))
    points = SVDKL(_net(), 3, num_data=12, inducing=FreeInducingPoints(6))
    H = grid.features(tf.constant(np.random.default_rng(0).normal(size=(4, 5))))
    expected = {
        (grid, "inducing"): "grid", (points, "inducing"): "points",
        (grid, "grid_prior"): "circulant", (points, "grid_prior"): None,
        (grid, "ring_sizes"): grid.gps.prior.latent_sizes(grid.inducing_variable),
        (grid, "variational_sizes"): (5,),
    }
    for (model, name), value in expected.items():
        with pytest.warns(DeprecationWarning, match=f"SVDKL.{name} is deprecated"):
            assert getattr(model, name) == value
    with pytest.warns(DeprecationWarning, match="SVDKL.prior_factors is deprecated"):
        old = grid.prior_factors()
    new = toeplitz_prior_factors(grid.inducing_variable, grid.kernel.kernels, grid.jitter)
    np.testing.assert_array_equal(old[0].numpy(), new[0].numpy())
    n = grid.gps.prior.latent_sizes(grid.inducing_variable)[0]
    v = tf.random.stateless_normal([3, n, 2], seed=[0, 1], dtype=F64)
    with pytest.warns(DeprecationWarning, match="SVDKL.grid_values is deprecated"):
        np.testing.assert_array_equal(grid.grid_values(v).numpy(), grid.gps.grid_values(v).numpy())
    with pytest.warns(DeprecationWarning, match="SVDKL.prior_sqrt_factors is deprecated"):
        assert len(grid.prior_sqrt_factors()) == 1
    with pytest.warns(DeprecationWarning, match="SVDKL.points_conditional is deprecated"):
        old_mean, old_var = points.points_conditional(H)
    new_mean, new_var = points.gps.marginals(H)
    np.testing.assert_array_equal(old_mean.numpy(), new_mean.numpy())
    np.testing.assert_array_equal(old_var.numpy(), new_var.numpy())
