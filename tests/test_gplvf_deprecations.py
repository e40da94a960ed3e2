"""GPLVF's old names and contracts keep working for one release: each warns (DeprecationWarning) and gives the
same numbers as its replacement."""
import importlib

import numpy as np
import pytest
import tensorflow as tf

import gpflow_ext
from gpflow_ext.bijectors import planar_flow
from gpflow_ext.conditionals.pairs import PerOutput, PerPair, conditional_at_pairs
from gpflow_ext.kullback_leiblers import AnalyticGaussianKL, MonteCarloFlowKL
from gpflow_ext.latents import Diagonal, Isotropic
from gpflow_ext.models import GPLVF
from gpflow_ext.recipes.gplvf import build_encoder, infer_latent, make_kernel


def _rows(seed=0, n=14, d=4, q=2, missing=0.3):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, q))
    Y = np.sin(X) @ rng.standard_normal((q, d)) + 0.1 * rng.standard_normal((n, d))
    drop = rng.random(Y.shape) < missing
    drop[:, 0] = False
    Y[drop] = np.nan
    return Y


def _bound(model, seed=1):
    noise = tf.constant(np.random.default_rng(seed).standard_normal((3, model.num_data, model.latent_dim)))
    return float(model.elbo_given_base_noise(model.training_data(), noise))


@pytest.fixture(scope="module")
def model():
    return GPLVF(_rows(), 2, 4, flow=planar_flow(2, 2, init_scale=0.4, seed=1), seed=0)


MOVED = [
    ("validate_observations", "gpflow_ext.validation", "check_observations"),
    ("conditional_at_pairs", "gpflow_ext.conditionals.pairs", "conditional_at_pairs"),
    ("gaussian_kl_to_standard_normal", "gpflow_ext.kullback_leiblers", "gaussian_kl_to_standard_normal"),
    ("flow_kl_to_standard_normal", "gpflow_ext.kullback_leiblers", "flow_kl_to_standard_normal"),
    ("masked_gaussian_expected_log_likelihood", "gpflow_ext.likelihoods.masked", "masked_gaussian_expected_log_likelihood"),
    ("NewRowsLatents", "gpflow_ext.models.new_rows_latents", "NewRowsLatents"),
    ("make_kernel", "gpflow_ext.recipes.gplvf", "make_kernel"),
    ("build_encoder", "gpflow_ext.recipes.gplvf", "build_encoder"),
    ("KERNEL_NAMES", "gpflow_ext.recipes.gplvf", "KERNEL_NAMES"),
    ("BASE_COVARIANCES", "gpflow_ext.latents", "BASE_COVARIANCE_NAMES"),
    ("VARIANCE_BY", "gpflow_ext.conditionals.pairs", "VARIANCE_BY_NAMES"),
    ("KL_X_ESTIMATORS", "gpflow_ext.kullback_leiblers", "KL_X_NAMES"),
]


@pytest.mark.parametrize("old, module, new", MOVED)
def test_moved_names_warn_and_are_the_new_objects(old, module, new):
    from gpflow_ext.models import gplvf

    with pytest.warns(DeprecationWarning, match=f"gpflow_ext.models.gplvf.{old} is deprecated"):
        value = getattr(gplvf, old)
    assert value is getattr(importlib.import_module(module), new)
    with pytest.raises(AttributeError):
        gplvf.no_such_name


def test_masked_gaussian_expected_log_likelihood_keeps_its_numbers():
    """The moved function is now the Gaussian likelihood's own variational expectations: same values as the old
    explicit formula Σ_{d observed} [log N(y_d | μ_d, σ²) - v_d / (2σ²)]."""
    from gpflow_ext.likelihoods.masked import masked_gaussian_expected_log_likelihood

    rng = np.random.default_rng(3)
    Y, f_mean, f_var = rng.standard_normal((3, 5, 6)), rng.standard_normal((3, 5, 6)), rng.uniform(0.1, 1, (3, 5, 6))
    mask = rng.random((3, 5, 6)) < 0.6
    Y_nan = np.where(mask, Y, np.nan)
    old = np.where(mask, -0.5 * (np.log(2 * np.pi) + np.log(0.4)) - 0.5 * ((Y - f_mean) ** 2 + f_var) / 0.4, 0).sum(-1)
    new = masked_gaussian_expected_log_likelihood(Y_nan, mask, f_mean, f_var, 0.4).numpy()
    np.testing.assert_allclose(new, old, rtol=1e-13)


@pytest.mark.parametrize("argument, old, new", [
    ("base_covariance", "isotropic", Isotropic()),
    ("base_covariance", "diagonal", Diagonal()),
    ("kl_x", "monte_carlo", MonteCarloFlowKL()),
    ("kl_x", "monte_carlo_plain", MonteCarloFlowKL(base_in_closed_form=False)),
    ("kl_x", "auto", None),
    ("variance_by", "pairs", PerPair()),
    ("variance_by", "outputs", PerOutput()),
    ("variance_by", "auto", None),
    ("kernel", "se+linear", "make_kernel"),
])
def test_string_arguments_warn_and_build_the_same_model(argument, old, new):
    Y = _rows(1)
    if new == "make_kernel":
        new = make_kernel(old, 2, 4)
    with pytest.warns(DeprecationWarning, match=argument):
        legacy = GPLVF(Y, 2, 4, flow=planar_flow(1, 2, seed=2), seed=0, **{argument: old})
    current = GPLVF(Y, 2, 4, flow=planar_flow(1, 2, seed=2), seed=0, **{argument: new})
    assert _bound(legacy) == _bound(current)
    if argument != "kernel":
        assert type(getattr(legacy, argument)) is type(getattr(current, argument))


def test_analytic_name_and_encoder_true_warn_and_build_the_same_model():
    Y = _rows(2)
    with pytest.warns(DeprecationWarning, match="kl_x"):
        legacy = GPLVF(Y, 2, 4, kl_x="analytic")
    assert isinstance(legacy.kl_x, AnalyticGaussianKL) and _bound(legacy) == _bound(GPLVF(Y, 2, 4))
    tf.keras.utils.set_random_seed(5)
    with pytest.warns(DeprecationWarning, match="encoder=True"):
        legacy = GPLVF(Y, 2, 4, encoder=True)
    tf.keras.utils.set_random_seed(5)
    current = GPLVF(Y, 2, 4, encoder=build_encoder(4, 2))
    for a, b in zip(legacy.encoder.get_weights(), current.encoder.get_weights()):
        np.testing.assert_array_equal(a, b)
    assert _bound(legacy) == _bound(current)


def test_conditional_at_pairs_variance_by_strings_warn():
    m = GPLVF(_rows(3), 2, 4)
    x = tf.constant(np.random.default_rng(0).standard_normal((2, 14, 2)))
    rows, outputs = tf.constant([0, 3, 5]), tf.constant([1, 0, 3])
    args = (x, rows, outputs, m.inducing_variable, m.kernel, m.q_mu, m.q_sqrt)
    for name, strategy in (("pairs", PerPair()), ("outputs", PerOutput())):
        with pytest.warns(DeprecationWarning, match="variance_by"):
            old = conditional_at_pairs(*args, white=True, variance_by=name)
        new = conditional_at_pairs(*args, white=True, variance_by=strategy)
        for a, b in zip(old, new):
            np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_renamed_prediction_methods_warn_and_agree(model):
    x = np.random.default_rng(4).standard_normal((5, 2))
    with pytest.warns(DeprecationWarning, match="GPLVF.predict_f_at"):
        old = model.predict_f_at(tf.constant(x))
    for a, b in zip(old, model.predict_f(x)):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    x_var, noise = np.full_like(x, 0.2), model.base_noise(5, 4, seed=2)
    with pytest.warns(DeprecationWarning, match="GPLVF.predict_y_given_base_noise"):
        old = model.predict_y_given_base_noise(x, x_var, noise)
    for a, b in zip(old, model.predict_y_marginal_given_base_noise(x, x_var, noise)):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_old_predict_y_and_predict_log_density_contracts_warn_and_return_the_same_numpy(model):
    rng = np.random.default_rng(5)
    x_mean, x_var = rng.standard_normal((6, 2)), rng.uniform(0.1, 0.5, (6, 2))
    new_mean, new_var = model.predict_y_marginal(x_mean, x_var, num_samples=7, seed=3)
    for call in (lambda: model.predict_y(x_mean, x_var, num_samples=7, seed=3),
                 lambda: model.predict_y(x_mean, x_var=x_var, num_samples=7, seed=3)):
        with pytest.warns(DeprecationWarning, match="predict_y_marginal"):
            mean, var = call()
        assert isinstance(mean, np.ndarray) and isinstance(var, np.ndarray)
        np.testing.assert_array_equal(mean, new_mean.numpy())
        np.testing.assert_array_equal(var, new_var.numpy())
    with pytest.warns(DeprecationWarning, match="predict_y_marginal"):
        default_mean, _ = model.predict_y(x_mean, x_var)  # the old defaults: 100 draws, seed 0
    np.testing.assert_array_equal(default_mean, model.predict_y_marginal(x_mean, x_var)[0].numpy())
    Y_test = _rows(6, n=6)
    with pytest.warns(DeprecationWarning, match="predict_log_density_marginal"):
        old = model.predict_log_density(Y_test, x_mean, x_var, num_samples=9, seed=1)
    assert isinstance(old, np.ndarray)
    np.testing.assert_array_equal(old, model.predict_log_density_marginal(Y_test, x_mean, x_var, num_samples=9, seed=1))


def test_mean_at_pairs_method_warns_and_equals_the_free_function(model):
    from gpflow_ext.conditionals.pairs import mean_at_pairs

    x = tf.constant(np.random.default_rng(8).standard_normal((2, 14, 2)))
    rows, outputs = tf.constant([0, 2, 9], tf.int64), tf.constant([1, 3, 0], tf.int64)
    with pytest.warns(DeprecationWarning, match="GPLVF.mean_at_pairs"):
        old = model.mean_at_pairs(x, rows, outputs)
    np.testing.assert_array_equal(old.numpy(), mean_at_pairs(model.mean_function, x, rows, outputs, 4).numpy())


def test_infer_latent_method_warns_and_equals_the_recipe(model):
    Y_new = _rows(7, n=3)
    with pytest.warns(DeprecationWarning, match="gpflow_ext.recipes.gplvf.infer_latent"):
        old = model.infer_latent(Y_new, num_steps=5, num_samples=2, seed=4, decay="cosine")
    new = infer_latent(model, Y_new, num_steps=5, num_samples=2, seed=4, decay="cosine")
    np.testing.assert_array_equal(old[0], new[0])
    np.testing.assert_array_equal(old[1], new[1])


def test_gplvf_models_never_import_training_or_recipes():
    """GPLVF's model modules know neither the training loop nor the recipes, not even lazily: the deprecated
    ``GPLVF.infer_latent`` and the named kernels/encoder are installed from gpflow_ext.recipes.gplvf."""
    import pathlib
    import re

    upward = re.compile(r"^\s*(from|import)\s+(gpflow_ext\.|\.\.)(training|recipes)\b|import_module\(", re.M)
    models = pathlib.Path(gpflow_ext.__file__).parent / "models"
    for name in ("gplvf.py", "new_rows_latents.py"):
        assert not upward.search((models / name).read_text(encoding="utf-8")), name
