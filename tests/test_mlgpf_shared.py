"""MLGPF with shared factors started from per-label MAP weights (``init_from_map``, ``--recipe label-gps-shared``).

The factors against a rank-P projection computed another way (eigenvectors of U Uᵀ); the built model's mean
utilities against the MAP scores of the per-label model, fitted here directly; a training run; bad settings."""
import dataclasses

import numpy as np
import pytest
import scipy.sparse as sp
import tensorflow as tf

from gpflow_ext.inducing_variables import BasisInducingPoints, SubspaceInducingPoints
from gpflow_ext.recipes import mlgpf as recipe
from gpflow_ext.recipes import mlgpf_config as configs
from gpflow_ext.recipes.mlgpf_map import map_weights
from gpflow_ext.recipes.mlgpf_select import _key
from gpflow_ext.recipes.mlgpf_shared import map_initialisation, shared_factors_from_weights

K = 8


def _problem(seed=0, rows=80, cols=30):
    X = sp.random(rows, cols, density=0.3, format="csr", random_state=seed)
    Y = sp.random(rows, K, density=0.25, format="csr", random_state=seed + 1)
    Y.data[:] = 1.0
    return X, Y


def _rank_p_by_eigenvectors(U, P):
    """The closest rank-P matrix to U: U projected on the P leading eigenvectors of U Uᵀ."""
    values, vectors = np.linalg.eigh(U @ U.T)  # ascending
    top = vectors[:, np.argsort(values)[::-1][:P]]  # [R, P]
    return top @ (top.T @ U)


@pytest.mark.parametrize("P", [1, 3, 5])
@pytest.mark.parametrize("variance", [0.5, 12.0])
def test_factors_are_the_rank_p_truncation(P, variance):
    U = np.random.default_rng(P).normal(size=(7, 5)) * np.array([5.0, 3.0, 2.0, 1.0, 0.5])  # [R, K]
    q_mu, loadings = shared_factors_from_weights(U, variance, P)
    assert q_mu.shape == (7, P) and loadings.shape == (5, P)
    np.testing.assert_allclose(variance * q_mu @ loadings.T, _rank_p_by_eigenvectors(U, P), rtol=1e-10, atol=1e-10)
    # the split is even: each factor's weight and loading have the same norm
    np.testing.assert_allclose(np.linalg.norm(variance * q_mu, axis=0), np.linalg.norm(loadings, axis=0), rtol=1e-10)
    if P == 5:  # every factor: U itself
        np.testing.assert_allclose(variance * q_mu @ loadings.T, U, rtol=1e-10, atol=1e-10)


def test_factors_reject_bad_arguments():
    U = np.ones((4, 3))
    with pytest.raises(ValueError, match="num_latent_gps must be at most min"):
        shared_factors_from_weights(U, 1.0, 4)
    with pytest.raises(ValueError, match="num_latent_gps"):
        shared_factors_from_weights(U, 1.0, 0)
    with pytest.raises(ValueError, match="kernel_variance"):
        shared_factors_from_weights(U, -1.0, 2)
    X, Y = _problem()
    subspace = SubspaceInducingPoints.from_data(X, num_inducing=5, rank=6)
    with pytest.raises(TypeError, match="BasisInducingPoints"):
        map_initialisation(X, Y, subspace, 1.0, 2)


def _config(P, **overrides):
    settings = dict(rank=12, epochs=1, batch_size=40, kernel_variance=4.0, num_latent_gps=P, float32=False)
    settings.update(overrides)
    config = configs.label_gps_shared_config("s-linear", "toy", **settings)
    return dataclasses.replace(config, kernel_variance_grid=None, min_steps=None)  # σ² fixed at 4


@pytest.mark.parametrize("P", [3, K])
def test_built_model_starts_at_the_map_scores(P):
    """The model's mean utilities Σ_p Φ_kp E[g_p(x)] + b_k equal x X̃ᵀ U_P + b, with U and b the per-label MAP
    weights fitted here on the same features (U_P their rank-P truncation; all of U when P = K)."""
    X, Y = _problem()
    config = _config(P)
    model = recipe.build_mlgpf(config, X, Y)
    assert model.num_latent_gps == P and model.loadings is not None
    basis = BasisInducingPoints.from_data(X, rank=12, seed=config.seed).basis_t.numpy()  # [D, R]
    Phi = (X @ basis).astype(np.float32)  # [N, R]
    U, b = map_weights(Phi, Y.toarray().astype(np.float32), 4.0)
    expected = (X @ basis) @ _rank_p_by_eigenvectors(U, P) + b  # [N, K]
    np.testing.assert_allclose(model.predict_utilities(X).numpy(), expected, rtol=1e-8, atol=1e-8)
    np.testing.assert_allclose(model.bias.numpy(), b, rtol=1e-12)


def test_p_is_capped_at_the_labels_and_trains():
    X, Y = _problem()
    model = recipe.build_mlgpf(_config(50), X, Y)
    assert model.num_latent_gps == K  # min(P, K, R)
    data = model.prepare_data(X, Y)
    with tf.GradientTape() as tape:
        loss = -model.elbo(data)
    grads = tape.gradient(loss, model.trainable_variables)
    assert all(np.all(np.isfinite(tf.convert_to_tensor(g).numpy())) for g in grads if g is not None)
    result = recipe.run_mlgpf(_config(3, epochs=2), (X, Y), (X, Y), progress=False)
    assert np.isfinite(result["final_bound"]) and 0.0 <= result["P@1"] <= 100.0
    assert result["settings"]["num_latent_gps"] == 3


def test_recipe_and_checks():
    config = configs.RECIPES["label-gps-shared"]("s-linear", "bibtex")
    best = configs.best_config("s-linear", "bibtex", ensemble_size=1, rank_by_probability=False)
    best = dataclasses.replace(best, input_transform_choices=("tfidf",), label_score_weight=0.0)  # as compared by CV
    assert config.init_from_map and not config.independent_labels and config.ensemble_size == 1
    assert not config.rank_by_probability  # as compared by cross-validation
    assert config.num_latent_gps == 30
    assert dataclasses.replace(config, init_from_map=False, independent_labels=True).as_dict() == best.as_dict()
    assert configs.RECIPES["label-gps-shared"]("s-linear", "bibtex", ensemble_size=None).ensemble_size == 1
    with pytest.raises(ValueError, match="init_from_map=True needs"):
        dataclasses.replace(best, init_from_map=True)  # independent labels
    with pytest.raises(ValueError, match="init_from_map=True needs"):
        configs.MLGPFConfig(kernel="se", basis_inducing=True, init_from_map=True)


def test_selection_key_of_a_config_without_the_field_is_unchanged():
    config = configs.best_config("s-linear", "bibtex", ensemble_size=1).as_dict()
    stored = {k: v for k, v in config.items() if k != "init_from_map"}  # a file written before the field
    assert _key(dict(config)) == _key(stored)
