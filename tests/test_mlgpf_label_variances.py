"""Label-wise prior variances of the ``label-gps`` model: ``MLGPF(latent_scales=...)`` against K single-label
models with their own kernel variance, the label-wise held-out log-likelihood against a loop, and the choice of
σ²_k inside the recipe's inner cross-validation (``label_wise_variance``)."""
import dataclasses

import gpflow
import numpy as np
import pytest
import scipy.sparse as sp
import tensorflow as tf

from gpflow_ext.inducing_variables import BasisInducingPoints
from gpflow_ext.models import MLGPF
from gpflow_ext.recipes import mlgpf_config as configs
from gpflow_ext.recipes.mlgpf import build_mlgpf, run_mlgpf, synthetic_multilabel
from gpflow_ext.recipes.mlgpf_auto import (
    label_log_likelihoods,
    map_scores,
    resolve_config,
    tune_kernel_variance,
)
from gpflow_ext.recipes.mlgpf_select import kfold_splits, select

K, RANK = 3, 10


def _rows(seed=0, rows=50, cols=20):
    X = sp.random(rows, cols, density=0.3, format="csr", random_state=seed)
    Y = sp.random(rows, K, density=0.3, format="csr", random_state=seed + 1)
    Y.data[:] = 1.0
    return X, Y


def _scaled_and_single_label_models(X, scales, variance=1.7, seed=0):
    """The scaled K-label model and, for each label k, a one-label model with kernel variance σ² s_k² and the
    same q(u) in its own parametrisation (μ / s_k, s_k² Σ)."""
    rng = np.random.default_rng(seed)
    iv = BasisInducingPoints.from_data(X, rank=RANK)
    q_mu, q_sigma, bias = rng.normal(size=(RANK, K)), rng.uniform(0.2, 2.0, size=(RANK, K)), rng.normal(size=K)
    scaled = MLGPF(gpflow.kernels.Linear(variance=variance), iv, K, K, X.shape[0], independent_labels=True,
                   q_mu=q_mu, q_sigma=q_sigma, bias=bias, latent_scales=scales)
    singles = [
        MLGPF(gpflow.kernels.Linear(variance=variance * s**2), BasisInducingPoints.from_data(X, rank=RANK), 1, 1,
              X.shape[0], independent_labels=True, q_mu=q_mu[:, k:k + 1] / s, q_sigma=q_sigma[:, k:k + 1] * s**2,
              bias=bias[k:k + 1])
        for k, s in enumerate(scales)
    ]
    return scaled, singles


def test_latent_scales_are_label_wise_prior_variances():
    """Latent GP k scaled by s_k is the model whose label k has prior variance σ² s_k²: the bound is the sum of the
    one-label models' bounds and the predictions are theirs, with finite gradients."""
    X, Y = _rows()
    scales = np.array([0.5, 1.0, 3.0])
    scaled, singles = _scaled_and_single_label_models(X, scales)
    with tf.GradientTape() as tape:
        bound = scaled.elbo(scaled.prepare_data(X, Y))
    twin = sum(float(m.elbo(m.prepare_data(X, Y[:, k]))) for k, m in enumerate(singles))
    np.testing.assert_allclose(float(bound), twin, rtol=1e-10)
    assert all(np.all(np.isfinite(tf.convert_to_tensor(g).numpy()))
               for g in tape.gradient(bound, scaled.trainable_variables))
    mean, var = scaled.predict_f(X[:6])
    np.testing.assert_allclose(mean.numpy(), np.hstack([m.predict_f(X[:6])[0].numpy() for m in singles]), rtol=1e-10)
    np.testing.assert_allclose(var.numpy(), np.hstack([m.predict_f(X[:6])[1].numpy() for m in singles]), rtol=1e-10)
    _, full = scaled.predict_f(X[:4], full_cov=True)
    np.testing.assert_allclose(full.numpy(), np.concatenate([m.predict_f(X[:4], full_cov=True)[1].numpy()
                                                             for m in singles]), rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(scaled.predict_utilities(X[:6]).numpy(),
                               np.hstack([m.predict_utilities(X[:6]).numpy() for m in singles]), rtol=1e-10)
    assert "latent_scales" not in [p.name for p in scaled.trainable_parameters]
    copy = gpflow.utilities.deepcopy(scaled)
    np.testing.assert_allclose(copy.latent_scales.numpy(), scales)


@pytest.mark.parametrize("bad, match", [(np.ones(K + 1), "shape"), (np.array([1.0, -1.0, 1.0]), "positive"),
                                        (np.array([1.0, np.nan, 1.0]), "positive")])
def test_bad_latent_scales_are_refused_by_name(bad, match):
    X, _ = _rows()
    with pytest.raises(ValueError, match=f"latent_scales.*{match}|{match}.*latent_scales|latent_scales"):
        MLGPF(gpflow.kernels.Linear(), BasisInducingPoints.from_data(X, rank=RANK), K, K, X.shape[0],
              independent_labels=True, latent_scales=bad)


@pytest.mark.parametrize("sparse", [False, True])
def test_label_log_likelihoods_equal_a_loop(sparse):
    rng = np.random.default_rng(3)
    F = rng.normal(scale=3.0, size=(30, 4))
    Y = (rng.random((30, 4)) < 0.3).astype(float)
    expected = [sum(np.log(1 / (1 + np.exp(-F[i, k]))) if Y[i, k] else np.log(1 / (1 + np.exp(F[i, k])))
                    for i in range(30)) for k in range(4)]
    np.testing.assert_allclose(label_log_likelihoods(F, sp.csr_matrix(Y) if sparse else Y), expected, rtol=1e-12)


def test_label_wise_choice_is_each_labels_best_held_out_log_likelihood():
    """The record's σ²_k equals the argmax over the grid of label k's held-out log-likelihood under the MAP scores,
    summed over the same inner folds (recomputed here), and the global choice is unchanged."""
    from sklearn.model_selection import KFold

    (X, Y), _ = synthetic_multilabel(num_rows=150, num_features=30, num_labels=6, seed=2)
    grid = (0.5, 2.0, 8.0, 32.0)
    record = tune_kernel_variance(X, Y, grid, folds=3, seed=0, rank=20, label_wise=True)
    plain = tune_kernel_variance(X, Y, grid, folds=3, seed=0, rank=20)
    assert record["chosen"] == plain["chosen"] and record["scores"] == plain["scores"] and "label_variances" not in plain
    total = np.zeros((len(grid), Y.shape[1]))
    for fit, held in KFold(3, shuffle=True, random_state=0).split(np.arange(X.shape[0])):
        for j, scores in enumerate(map_scores(X[fit], Y[fit], X[held], list(grid), 20, 0)):
            total[j] += label_log_likelihoods(scores, Y[held])
    np.testing.assert_allclose(record["label_variances"], np.asarray(grid)[np.argmax(total, axis=0)])
    assert sum(count for _, count in record["label_variance_counts"]) == Y.shape[1]
    assert [v for v, _ in record["label_variance_counts"]] == list(grid)
    assert record["label_log_likelihood_gain"] >= 0.0


def test_resolved_label_wise_config_builds_the_scaled_model_and_trains():
    (X, Y), (X_test, Y_test) = synthetic_multilabel(num_rows=160, num_features=30, num_labels=6, seed=1)
    config = configs.RECIPES["best"]("s-linear", "bibtex", rank=20, epochs=2, batch_size=80, label_wise_variance=True)
    config = dataclasses.replace(config, kernel_variance_grid=(0.5, 4.0, 32.0), float32=False, min_steps=None)
    resolved, record = resolve_config(config, X, Y)
    assert not resolved.label_wise_variance and resolved.kernel_variance_grid is None
    assert resolved.label_kernel_variances == tuple(record["label_variances"]) and len(record["label_variances"]) == 6
    model = build_mlgpf(resolved, X, Y)
    np.testing.assert_allclose(model.latent_scales.numpy(),
                               np.sqrt(np.asarray(record["label_variances"]) / record["chosen"]))
    result = run_mlgpf(config, (X, Y), (X_test, Y_test), progress=False)
    assert list(result["config"]["label_kernel_variances"]) == record["label_variances"] and np.isfinite(result["P@1"])
    with pytest.raises(ValueError, match="label_kernel_variances has 5 values; Y has 6"):
        build_mlgpf(dataclasses.replace(resolved, label_kernel_variances=(1.0,) * 5), X, Y)


@pytest.mark.parametrize(
    "bad, match",
    [
        (dict(label_wise_variance=True), "kernel_variance_grid"),
        (dict(label_wise_variance=True, kernel_variance_grid=(1.0,), independent_labels=False), "independent_labels"),
        (dict(label_kernel_variances=(1.0, -2.0), kernel_variance=1.0, independent_labels=True), "positive"),
        (dict(label_kernel_variances=(1.0, 2.0), independent_labels=True), "kernel_variance"),
        (dict(label_kernel_variances=(), kernel_variance=1.0, independent_labels=True), "non-empty"),
    ],
)
def test_config_rejects_bad_label_wise_fields(bad, match):
    with pytest.raises(ValueError, match=match):
        configs.paper_config("s-linear", **bad)


def test_select_passes_the_label_variances_and_reuses_their_tuning(monkeypatch):
    (X, Y), _ = synthetic_multilabel(num_rows=120, num_features=30, num_labels=6, seed=0)
    seen = []

    def fake_run(config, train, held_out, progress=False):
        seen.append(config.label_kernel_variances)
        return {"P@1": 1.0, "P@3": 0.0, "P@5": 0.0}

    auto = {"recipe": "label-gps-auto", "kernel_variance_grid": (0.5, 8.0), "rank": 20}
    candidates = [auto, {**auto, "label_wise_variance": True}]
    out = select(X, Y, candidates, kfold_splits(X.shape[0], 2), run=fake_run)
    assert seen[0] is None and seen[1] is not None and len(seen[1]) == 6 and len(seen) == 4
    wise = out["candidates"][1]
    assert [list(s["tuning"]["label_variances"]) for s in wise["splits"]] == [list(seen[1]), list(seen[3])]
    import gpflow_ext.recipes.mlgpf_select as selection

    def no_tuning(config, X, Y):
        raise AssertionError("tuned again")

    monkeypatch.setattr(selection, "resolve_config", no_tuning)
    seen.clear()
    again = select(X, Y, candidates, kfold_splits(X.shape[0], 2), run=fake_run, previous=out)
    assert seen == [] and again["candidates"] == out["candidates"]


def test_snapped_indices_are_the_nearest_grid_value_in_log_scale():
    from gpflow_ext.recipes.mlgpf_auto import relative_label_frequencies, snapped_indices

    Y = sp.csr_matrix(np.array([[1, 0, 1, 0], [1, 0, 0, 0], [1, 1, 0, 0], [1, 0, 0, 0]], dtype=float))
    rel = relative_label_frequencies(Y)
    np.testing.assert_allclose(rel, np.array([5, 2, 2, 1]) / np.prod([5, 2, 2, 1]) ** 0.25)
    grid = [0.5, 1.0, 2.0, 4.0, 8.0]
    for gamma in (-1.0, 0.0, 0.5, 3.0):
        expected = [min(range(len(grid)), key=lambda i: abs(np.log(grid[i]) - np.log(2.0 * r**gamma))) for r in rel]
        np.testing.assert_array_equal(snapped_indices(grid, 2.0, gamma, Y), expected)
    assert list(snapped_indices(grid, 2.0, 0.0, Y)) == [2] * 4


def test_frequency_rule_scores_pairs_from_the_grids_map_scores_and_resolves():
    """Every (σ², γ) pair's P@1 is the P@1 of the grid's MAP scores taken label by label at the snapped σ²_k
    (recomputed here); γ = 0 reproduces the plain rule; the resolved config holds the chosen pair's σ²_k."""
    from sklearn.model_selection import KFold

    from gpflow_ext.metrics import ranking_metrics
    from gpflow_ext.recipes.mlgpf_auto import grid_end, resolved_config, snapped_indices

    (X, Y), _ = synthetic_multilabel(num_rows=150, num_features=30, num_labels=6, seed=4)
    grid, exponents = (0.5, 2.0, 8.0, 32.0), (0.5, 0.0, -1.0)
    record = tune_kernel_variance(X, Y, grid, folds=3, seed=0, rank=20, frequency_exponents=exponents)
    plain = tune_kernel_variance(X, Y, grid, folds=3, seed=0, rank=20)
    pairs = {(r["kernel_variance"], r["frequency_exponent"]): r for r in record["frequency_scores"]}
    assert [g for _, g in list(pairs)[:: len(grid)]] == [0.0, 0.5, -1.0]  # 0 first, then by |γ|
    for row in plain["scores"]:
        assert pairs[(row["kernel_variance"], 0.0)]["P@1 mean"] == row["P@1 mean"]
    per_fold = []
    for fit, held in KFold(3, shuffle=True, random_state=0).split(np.arange(X.shape[0])):
        stacked = np.stack(map_scores(X[fit], Y[fit], X[held], list(grid), 20, 0))  # [V, N, K]
        index = snapped_indices(grid, 8.0, -1.0, Y[fit])
        scores = stacked[index, :, np.arange(Y.shape[1])].T  # [N, K]
        per_fold.append(ranking_metrics(np.argsort(-scores, axis=1, kind="stable")[:, :5], Y[held], [1])["P@1"])
    assert pairs[(8.0, -1.0)]["P@1 mean"] == pytest.approx(np.mean(per_fold), abs=1e-12)
    best = max(pairs.values(), key=lambda r: r["P@1 mean"])
    assert record["frequency_scores"][0]["P@1 mean"] <= best["P@1 mean"]
    assert (record["chosen"], record["chosen_exponent"]) == next(
        key for key, r in pairs.items() if r["P@1 mean"] == best["P@1 mean"])
    assert record["at_end"] == grid_end(record["chosen"], record["grid"])  # of the σ² trained with
    config = configs.RECIPES["label-gps-auto"]("s-linear", "bibtex", rank=20, kernel_variance_grid=grid,
                                               frequency_exponent_grid=exponents)
    for exponent in (0.0, -1.0):
        forced = {**record, "chosen": 8.0, "chosen_exponent": exponent}
        forced.pop("label_variances", None)
        if exponent:
            forced["label_variances"] = [grid[i] for i in snapped_indices(grid, 8.0, exponent, Y)]
        resolved = resolved_config(config, forced)
        assert resolved.frequency_exponent_grid is None and resolved.kernel_variance == 8.0
        assert resolved.label_kernel_variances == (tuple(forced["label_variances"]) if exponent else None)
    with pytest.raises(ValueError, match="tuning_extensions"):
        tune_kernel_variance(X, Y, grid, frequency_exponents=exponents, extensions=1)


@pytest.mark.parametrize(
    "bad, match",
    [
        (dict(frequency_exponent_grid=(0.5,), independent_labels=True), "kernel_variance_grid"),
        (dict(frequency_exponent_grid=(0.5,), kernel_variance_grid=(1.0,), independent_labels=True,
              tuning_extensions=2), "tuning_extensions"),
        (dict(frequency_exponent_grid=(float("nan"),), kernel_variance_grid=(1.0,), independent_labels=True),
         "finite"),
        (dict(frequency_exponent_grid=(0.5,), kernel_variance_grid=(1.0,)), "independent_labels"),
        (dict(frequency_exponent_grid="0.5", kernel_variance_grid=(1.0,), independent_labels=True), "sequence"),
    ],
)
def test_config_rejects_bad_frequency_fields(bad, match):
    with pytest.raises(ValueError, match=match):
        configs.paper_config("s-linear", **bad)


def test_a_tuple_field_is_read_from_a_candidate_and_named_as_it_is_read():
    from gpflow_ext.recipes.mlgpf_candidates import candidate_name, parse_candidate

    spec = "recipe=label-gps-auto,frequency_exponent_grid=-1;0;0.5,kernel_variance_grid=1;4"
    parsed = parse_candidate(spec)
    assert parsed == {"recipe": "label-gps-auto", "frequency_exponent_grid": (-1.0, 0.0, 0.5),
                      "kernel_variance_grid": (1.0, 4.0)}
    assert candidate_name(parsed) == spec and parse_candidate(candidate_name(parsed)) == parsed
