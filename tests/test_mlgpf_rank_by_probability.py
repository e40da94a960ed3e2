"""Ranking labels by p(y_k = 1 | x) instead of the mean utilities (``by_probability``, ``rank_by_probability``):
the probabilities against a Monte Carlo twin, the rankings against brute-force sorts, the recipe's run."""
import dataclasses

import numpy as np
import pytest

from gpflow_ext.metrics import ranking_metrics
from gpflow_ext.recipes import mlgpf as recipe
from gpflow_ext.recipes import mlgpf_config as configs
from gpflow_ext.recipes.mlgpf import build_mlgpf, run_mlgpf, synthetic_multilabel
from gpflow_ext.recipes.mlgpf_ensemble import ensemble_top_k
from gpflow_ext.recipes.mlgpf_select import _key
from gpflow_ext.recipes.xmc_baselines import decode_rows


def _config(**fields):
    config = configs.label_gps_config("s-linear", "bibtex", rank=20, epochs=2, batch_size=60, float32=False)
    return dataclasses.replace(config, **fields)


def _models(count=2, **fields):
    (X, Y), (X_test, Y_test) = synthetic_multilabel(num_rows=150, num_features=30, num_labels=9, seed=1)
    models = []
    for seed in range(count):
        model = build_mlgpf(_config(seed=seed, **fields), X, Y)
        rng = np.random.default_rng(seed)
        model.q_mu.assign(rng.normal(size=model.q_mu.shape))
        model.q_sigma.assign(rng.uniform(0.01, 5.0, size=model.q_sigma.shape))  # q(u) wider than a point
        models.append(model)
    return models, X_test, Y_test


def _top(scores, k):
    return np.argsort(-scores, axis=1, kind="stable")[:, :k]


@pytest.mark.parametrize("shared", [False, True])
def test_probabilities_match_monte_carlo(shared):
    fields = dict(independent_labels=False, num_latent_gps=4) if shared else {}
    (model,), X, _ = _models(1, **fields)
    rows = X[:6].toarray()
    mean, var = model.predict_f(rows)  # [N, P]
    if shared:
        loadings = model.loadings.numpy()  # [K, P]
        f_mean, f_var = mean.numpy() @ loadings.T, var.numpy() @ (loadings**2).T
    else:
        f_mean, f_var = mean.numpy(), var.numpy()
    f_mean = f_mean + model.bias.numpy()  # [N, K]
    z = np.linspace(-12.0, 12.0, 48_001)[:, None, None]  # a fine grid over the standard normal: E by quadrature
    weights = np.exp(-0.5 * z**2) / np.sqrt(2 * np.pi) * (z[1, 0, 0] - z[0, 0, 0])
    integral = np.sum(weights / (1.0 + np.exp(-(f_mean + np.sqrt(f_var) * z))), axis=0)  # [N, K]
    draws = np.random.default_rng(0).standard_normal((100_000, 1, 1))
    monte_carlo = np.mean(1.0 / (1.0 + np.exp(-(f_mean + np.sqrt(f_var) * draws))), axis=0)  # [N, K]
    np.testing.assert_allclose(monte_carlo, integral, atol=6e-3)  # the twin itself, within Monte Carlo noise
    np.testing.assert_allclose(model.predict_probabilities(rows).numpy(), integral, atol=1e-3)


def test_top_k_by_probability_is_the_sort_of_the_probabilities_and_differs_from_the_utilities():
    (model,), X, _ = _models(1)
    narrow = np.arange(model.num_labels) % 2 == 0  # q(f_k) near a point for even labels, near the prior for odd
    model.q_sigma.assign(np.where(narrow, 1e-4, 1e3) * np.ones(model.q_sigma.shape))
    probabilities = model.predict_probabilities(X.toarray()).numpy()
    by_probability = model.predict_top_k(X, k=4, batch_size=7, by_probability=True)
    np.testing.assert_array_equal(
        np.take_along_axis(probabilities, by_probability, axis=1), -np.sort(-probabilities, axis=1)[:, :4]
    )
    assert (by_probability != model.predict_top_k(X, k=4)).any()  # the variances reorder some rows


def test_ensemble_by_probability_averages_the_members_probabilities():
    models, X, _ = _models(3)
    probabilities = np.mean([m.predict_probabilities(X.toarray()).numpy() for m in models], axis=0)  # [N, K]
    top = ensemble_top_k(models, X, k=4, batch_size=9, by_probability=True)
    np.testing.assert_array_equal(np.take_along_axis(probabilities, top, axis=1), -np.sort(-probabilities, 1)[:, :4])
    np.testing.assert_array_equal(top, _top(probabilities, 4))


def test_run_scores_the_ranking_by_probability(monkeypatch):
    (X, Y), (X_test, Y_test) = synthetic_multilabel(num_rows=150, num_features=30, num_labels=9, seed=1)
    calls = []

    def recording(models, Xnew, k=5, batch_size=1000, by_probability=False):
        calls.append(by_probability)
        return ensemble_top_k(models, Xnew, k=k, batch_size=batch_size, by_probability=by_probability)

    monkeypatch.setattr(recipe, "ensemble_top_k", recording)
    config = _config(rank_by_probability=True, ensemble_size=2)
    result = run_mlgpf(config, (X, Y), (X_test, Y_test), progress=False, save_rows=True)
    assert calls == [True, True] and result["config"]["rank_by_probability"] is True  # scores and saved rows
    top = np.asarray(decode_rows(result["top"]))
    _, Y_prepared = build_mlgpf(config, X, Y).prepare_data(X_test, Y_test)
    scores = ranking_metrics(top, Y_prepared, (1, 3, 5))
    for k in (1, 3, 5):
        assert result[f"P@{k}"] == pytest.approx(scores[f"P@{k}"], abs=1e-12)


def test_selection_key_and_flag():
    config = _config().as_dict()
    stored = {k: v for k, v in config.items() if k != "rank_by_probability"}  # a file written before the field
    assert _key(dict(config)) == _key(stored)
    assert _key(dict(config)) != _key({**config, "rank_by_probability": True})
