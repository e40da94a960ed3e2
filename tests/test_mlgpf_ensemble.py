"""Seed ensembles of MLGPF (``MLGPFConfig.ensemble_size``, ``ensemble_top_k``): the averaged mean utilities
against brute force, one member equal to the single model, and the recipe's run."""
import dataclasses

import numpy as np
import pytest

from gpflow_ext.recipes import mlgpf_config as configs
from gpflow_ext.recipes.mlgpf import build_mlgpf, run_mlgpf, synthetic_multilabel
from gpflow_ext.recipes.mlgpf_ensemble import ensemble_top_k
from gpflow_ext.recipes.mlgpf_select import _key
from gpflow_ext.recipes.xmc_baselines import decode_rows


def _config(**fields):
    config = configs.label_gps_config("s-linear", "bibtex", rank=20, epochs=2, batch_size=60, float32=False)
    return dataclasses.replace(config, **fields)


def _models(count=3):
    (X, Y), (X_test, _) = synthetic_multilabel(num_rows=150, num_features=30, num_labels=9, seed=1)
    models = []
    for seed in range(count):
        model = build_mlgpf(_config(seed=seed), X, Y)
        rng = np.random.default_rng(seed)
        model.q_mu.assign(rng.normal(size=model.q_mu.shape))  # members that rank differently
        models.append(model)
    return models, X_test


def test_ensemble_ranks_by_the_averaged_mean_utilities():
    models, X = _models()
    utilities = np.mean([m.predict_utilities(X.toarray()).numpy() for m in models], axis=0)  # [N, K]
    expected = np.argsort(-utilities, axis=1, kind="stable")[:, :4]
    np.testing.assert_array_equal(ensemble_top_k(models, X, k=4, batch_size=7), expected)
    singles = [m.predict_top_k(X, k=4) for m in models]
    assert not all((s == expected).all() for s in singles)  # the average is not any one member's ranking


def test_one_member_or_copies_of_one_model_rank_as_the_model():
    models, X = _models(1)
    single = models[0].predict_top_k(X, k=5)
    np.testing.assert_array_equal(ensemble_top_k(models, X, k=5), single)
    np.testing.assert_array_equal(ensemble_top_k(models * 3, X, k=5, batch_size=11), single)


def test_bad_members_and_k_are_named():
    models, X = _models(2)
    with pytest.raises(ValueError, match="non-empty"):
        ensemble_top_k([], X)
    with pytest.raises(ValueError, match="non-empty"):
        ensemble_top_k([models[0], "model"], X)
    (X2, Y2), _ = synthetic_multilabel(num_rows=100, num_features=30, num_labels=7, seed=2)
    other = build_mlgpf(_config(), X2, Y2)
    with pytest.raises(ValueError, match="num_labels and input_dim"):
        ensemble_top_k([models[0], other], X)
    with pytest.raises(ValueError, match="k must be"):
        ensemble_top_k(models, X, k=10)
    with pytest.raises(ValueError, match="ensemble_size"):
        _config(ensemble_size=0)


def test_run_of_an_ensemble_reports_members_and_its_first_member_is_the_single_run():
    (X, Y), (X_test, Y_test) = synthetic_multilabel(num_rows=200, num_features=30, num_labels=9, seed=3)
    single = run_mlgpf(_config(seed=4), (X, Y), (X_test, Y_test), progress=False, save_rows=True)
    pair = run_mlgpf(_config(seed=4, ensemble_size=2), (X, Y), (X_test, Y_test), progress=False, save_rows=True)
    assert "member_metrics" not in single and len(pair["member_metrics"]) == 2
    assert pair["member_metrics"][0] == {k: v for k, v in single.items() if k in ("P@1", "P@3", "P@5")}
    assert pair["final_bound"] == single["final_bound"]  # the first member's bound, as the single model's
    second = run_mlgpf(_config(seed=5), (X, Y), (X_test, Y_test), progress=False)
    assert pair["member_metrics"][1] == {k: v for k, v in second.items() if k in ("P@1", "P@3", "P@5")}
    assert pair["config"]["ensemble_size"] == 2 and decode_rows(pair["top"]).shape == (X_test.shape[0], 5)


def test_selection_keys_treat_one_member_as_files_without_the_field():
    config = _config().as_dict()
    old = {k: v for k, v in config.items() if k != "ensemble_size"}
    assert _key(old) == _key(config)
    assert _key(_config(ensemble_size=3).as_dict()) != _key(config)
