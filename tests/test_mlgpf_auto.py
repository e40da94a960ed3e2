"""label-gps-auto: σ² chosen on the training rows by an inner cross-validation of the model's MAP twin."""
import dataclasses

import numpy as np
import pytest
import scipy.sparse as sp

from gpflow_ext.recipes import mlgpf_config as configs
from gpflow_ext.recipes.mlgpf import build_mlgpf, run_mlgpf, synthetic_multilabel
from gpflow_ext.recipes.mlgpf_auto import grid_end, resolve_config, tune_kernel_variance
from gpflow_ext.recipes.mlgpf_map import map_weights
from gpflow_ext.recipes.mlgpf_select import kfold_splits, rank_across, select


def _problem(seed=0, rows=120):
    return synthetic_multilabel(num_rows=rows, num_features=30, num_labels=6, seed=seed)


def test_map_weights_match_scikit_learn_logistic_regression_per_label():
    """The joint L-BFGS over all labels equals one L2 logistic regression per label (C = σ², free intercept)."""
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(0)
    Phi = rng.normal(size=(80, 5))
    Y = (Phi @ rng.normal(size=(5, 3)) + rng.normal(size=(80, 3)) > 0.5).astype(float)
    U, b = map_weights(Phi, Y, variance=2.5, max_iter=2000, tolerance=1e-14)
    for k in range(3):
        twin = LogisticRegression(C=2.5, tol=1e-12, max_iter=10000).fit(Phi, Y[:, k])
        np.testing.assert_allclose(U[:, k], twin.coef_[0], atol=2e-5)
        np.testing.assert_allclose(b[k], twin.intercept_[0], atol=2e-5)
    with pytest.raises(ValueError, match="variance"):
        map_weights(Phi, Y, variance=0.0)


def test_map_weights_gradient_is_zero_at_the_optimum():
    """Autodiff-free check: the finite-difference slope of the negative log posterior vanishes at the MAP."""
    rng = np.random.default_rng(1)
    Phi = rng.normal(size=(50, 4))
    Y = (rng.random((50, 2)) < 0.3).astype(float)
    U, b = map_weights(Phi, Y, variance=0.7, max_iter=2000, tolerance=1e-14)

    def loss(U, b):
        F = Phi @ U + b
        return np.sum(np.logaddexp(0.0, F) - Y * F) + 0.5 * np.sum(U**2) / 0.7

    eps = 1e-6
    for i in range(4):
        step = np.zeros_like(U)
        step[i, 1] = eps
        assert abs(loss(U + step, b) - loss(U - step, b)) / (2 * eps) < 1e-4


def test_tuning_record_and_choice_use_only_the_given_rows():
    (X, Y), _ = _problem()
    record = tune_kernel_variance(X, Y, (8.0, 0.5, 2.0), folds=3, seed=0, rank=20)
    assert record["grid"] == [0.5, 2.0, 8.0] and record["folds"] == 3 and "inner 3-fold" in record["rule"]
    means = [row["P@1 mean"] for row in record["scores"]]
    assert record["chosen"] == record["grid"][int(np.argmax(means))]
    assert record["at_end"] == {0.5: "lowest", 8.0: "highest"}.get(record["chosen"])
    assert all(len(row["P@1 per fold"]) == 3 for row in record["scores"])
    again = tune_kernel_variance(X, Y, (8.0, 0.5, 2.0), folds=3, seed=0, rank=20)
    assert again["scores"] == record["scores"]  # deterministic given the rows and the seed
    with pytest.raises(ValueError, match="tuning_folds"):
        tune_kernel_variance(X[:2], Y[:2], (1.0,), folds=3)


def test_a_chosen_end_of_the_grid_is_extended_past_and_chosen_again():
    """On this problem held-out P@1 rises with σ² from 1/4 to 32 and is flat below 1/8. Each extension adds one step
    of the grid's ratio past the chosen end; the given values' scores are those of the fixed grid and an added
    value's scores those of a run at that value alone."""
    (X, Y), _ = _problem()
    fixed = tune_kernel_variance(X, Y, (0.25, 0.5), folds=3, seed=0, rank=20)
    assert fixed["chosen"] == 0.5 and fixed["at_end"] == "highest" and fixed["grid"] == fixed["initial_grid"]
    grown = tune_kernel_variance(X, Y, (0.5, 0.25, 0.5), folds=3, seed=0, rank=20, extensions=2)
    assert grown["initial_grid"] == [0.25, 0.5] and grown["grid"] == [0.25, 0.5, 1.0, 2.0]
    assert grown["scores"][:2] == fixed["scores"]
    for row in grown["scores"][2:]:
        assert tune_kernel_variance(X, Y, (row["kernel_variance"],), folds=3, seed=0, rank=20)["scores"] == [row]
    means = [row["P@1 mean"] for row in grown["scores"]]
    assert means == sorted(means) and means[-1] > means[1]
    assert grown["chosen"] == 2.0 and grown["at_end"] == "highest" and "at most 2 times" in grown["rule"]
    # equal means below 1/8: the smallest is chosen, so the grid is extended downwards, halving
    flat = tune_kernel_variance(X, Y, (1e-3, 2e-3), folds=3, seed=0, rank=20, extensions=1)
    assert flat["grid"] == [5e-4, 1e-3, 2e-3] and flat["chosen"] == 5e-4 and flat["at_end"] == "lowest"
    with pytest.raises(ValueError, match="tuning_extensions"):
        tune_kernel_variance(X, Y, (1.0, 2.0), folds=3, extensions=-1)


def test_resolve_config_sets_the_chosen_variance_and_clears_the_grid():
    (X, Y), _ = _problem()
    plain = configs.RECIPES["label-gps"]("s-linear", "bibtex", rank=20)
    assert resolve_config(plain, X, Y) == (plain, None)
    auto = configs.RECIPES["label-gps-auto"]("s-linear", "bibtex", rank=20)
    assert auto.kernel_variance_grid == configs.AUTO_GRID and auto.tuning_folds == 3 and auto.independent_labels
    assert auto.tuning_extensions == 0
    with pytest.raises(ValueError, match="resolve_config"):
        build_mlgpf(auto, X, Y)
    resolved, record = resolve_config(auto, X, Y)
    assert resolved.kernel_variance_grid is None and resolved.kernel_variance == record["chosen"]
    assert record["chosen"] in record["grid"] and set(configs.AUTO_GRID) <= set(record["grid"])
    assert dataclasses.replace(resolved, kernel_variance=auto.kernel_variance, kernel_variance_grid=auto.kernel_variance_grid) == auto


@pytest.mark.parametrize(
    "bad, match",
    [
        (dict(kernel_variance_grid=()), "kernel_variance_grid"),
        (dict(kernel_variance_grid=(1.0, -2.0)), "kernel_variance_grid"),
        (dict(kernel_variance_grid="12"), "kernel_variance_grid"),
        (dict(tuning_folds=1), "tuning_folds"),
        (dict(tuning_extensions=-1), "tuning_extensions"),
    ],
)
def test_config_rejects_bad_tuning_fields(bad, match):
    with pytest.raises(ValueError, match=match):
        configs.paper_config("s-linear", **bad)


def test_run_records_the_tuning_and_never_uses_the_test_rows():
    (X, Y), (X_test, Y_test) = _problem(rows=200)
    auto = configs.RECIPES["label-gps-auto"]("s-linear", "bibtex", rank=20, epochs=2, batch_size=80)
    auto = dataclasses.replace(auto, kernel_variance_grid=(0.5, 4.0), float32=False)
    first = run_mlgpf(auto, (X, Y), (X_test, Y_test), progress=False)
    noise = sp.random(X_test.shape[0], X_test.shape[1], density=0.5, format="csr", random_state=5)
    second = run_mlgpf(auto, (X, Y), (noise, Y_test[::-1]), progress=False)
    for key in ("grid", "scores", "chosen", "rule"):
        assert first["tuning"][key] == second["tuning"][key]
    assert first["config"]["kernel_variance"] == first["tuning"]["chosen"]
    assert first["config"]["kernel_variance_grid"] is None and first["tuning"]["initial_grid"] == [0.5, 4.0]
    assert first["tuning"]["grid"][:2] == [0.5, 4.0]  # and the values added past a chosen end


def test_select_resolves_per_split_and_reuses_an_identical_fit(monkeypatch):
    (X, Y), _ = _problem()
    fits = []

    def fake_run(config, train, held_out, progress=False):
        fits.append(config.kernel_variance)
        assert config.kernel_variance_grid is None
        return {"P@1": config.kernel_variance, "P@3": 0.0, "P@5": 0.0}

    auto = {"recipe": "label-gps-auto", "kernel_variance_grid": (2.0,), "rank": 20}
    out = select(X, Y, [{"kernel_variance": 2.0, "rank": 20}, auto], kfold_splits(X.shape[0], 2), run=fake_run)
    assert fits == [2.0, 2.0]  # the tuned candidate chose σ² = 2 on both splits: the fixed fits were reused
    tuned = out["candidates"][1]
    assert [s["tuning"]["chosen"] for s in tuned["splits"]] == [2.0, 2.0] and tuned["P@1 mean"] == 2.0
    # resumed from its own outcome: nothing is tuned or fitted again
    import gpflow_ext.recipes.mlgpf_select as selection

    def no_tuning(config, X, Y):
        assert config.kernel_variance_grid is None, "tuned again"
        return config, None

    monkeypatch.setattr(selection, "resolve_config", no_tuning)
    fits.clear()
    again = select(X, Y, [{"kernel_variance": 2.0, "rank": 20}, auto], kfold_splits(X.shape[0], 2), run=fake_run,
                   previous=out)
    assert fits == [] and again["candidates"] == out["candidates"]
    # a file written before tuning_extensions existed (no such field): the same computation as 0 extensions, under
    # any candidate name; a candidate that extends the grid is another computation and is tuned again
    older = {"candidates": [{**row, "name": "renamed", "config": {k: v for k, v in row["config"].items()
                                                                  if k != "tuning_extensions"}}
                            for row in out["candidates"]]}
    again = select(X, Y, [auto, {**auto, "tuning_extensions": 0}], kfold_splits(X.shape[0], 2), run=fake_run,
                   previous=older)
    assert fits == [] and [c["splits"] for c in again["candidates"]] == [out["candidates"][1]["splits"]] * 2
    with pytest.raises(AssertionError, match="tuned again"):
        select(X, Y, [{**auto, "tuning_extensions": 2}], kfold_splits(X.shape[0], 2), run=fake_run, previous=older)


def test_min_steps_raises_epochs_by_the_rows_and_resolved_fits_are_reused():
    """``min_steps`` is a rule in N: epochs = max(epochs, ceil(min_steps / ceil(N / B))). A candidate whose rule
    leaves the epochs as they are is the same computation as the candidate without it (reused, also from a file);
    one that adds epochs is trained for them and scored once, after the last."""
    config = configs.RECIPES["label-gps"]("s-linear", "bibtex", epochs=100, batch_size=500, min_steps=1000)
    assert config.with_min_steps(645).epochs == 500 and config.with_min_steps(645).min_steps is None
    assert config.with_min_steps(4880).epochs == 100  # 10 steps per epoch: already 1000 steps
    assert config.with_min_steps(5001).epochs == 100 and config.with_min_steps(4999).epochs == 100
    assert configs.epochs_for_min_steps(3, 10, 7, 2) == 3 and configs.epochs_for_min_steps(2, 10, 7, 2) == 3
    assert dataclasses.replace(config, min_steps=None).with_min_steps(645).epochs == 100
    with pytest.raises(ValueError, match="min_steps"):
        configs.RECIPES["label-gps"]("s-linear", "bibtex", min_steps=0)
    with pytest.raises(ValueError, match="num_rows"):
        config.with_min_steps(0)
    (X, Y), _ = _problem(rows=120)
    resolved, _ = resolve_config(dataclasses.replace(config, batch_size=50), X, Y)
    steps_per_epoch = -(-X.shape[0] // 50)
    assert resolved.epochs == -(-1000 // steps_per_epoch) and resolved.min_steps is None

    fits = []

    def fake_run(config, train, held_out, progress=False):
        fits.append((config.epochs, config.eval_every, config.min_steps))
        return {"P@1": float(config.epochs), "P@3": 0.0, "P@5": 0.0}

    base = {"kernel_variance": 2.0, "rank": 20, "batch_size": 30, "epochs": 4}  # 60 fit rows: 2 steps per epoch
    splits = kfold_splits(X.shape[0], 2)
    out = select(X, Y, [base, {**base, "min_steps": 8}, {**base, "min_steps": 20}], splits, run=fake_run)
    assert fits == [(4, 4, None), (10, 10, None)] * 2  # min_steps 8 = 4 epochs: reused; 20 steps = 10 epochs
    assert [c["P@1 mean"] for c in out["candidates"]] == [4.0, 4.0, 10.0]
    assert out["candidates"][2]["config"]["min_steps"] == 20  # the file records the rule, not its epochs
    fits.clear()
    renamed = {"candidates": [{**row, "name": "x"} for row in out["candidates"]]}
    again = select(X, Y, [{**base, "min_steps": 20}, base], splits, run=fake_run, previous=renamed)
    assert fits == [] and [c["P@1 mean"] for c in again["candidates"]] == [10.0, 4.0]


def test_select_tunes_once_per_split_for_candidates_that_differ_only_in_training(monkeypatch):
    """Two self-tuning candidates with the same grid, folds, seed, rank and transform share one inner
    cross-validation per split (in the run and from a file); another grid is tuned on its own."""
    import gpflow_ext.recipes.mlgpf_select as selection

    (X, Y), _ = _problem()
    tuned = []

    def counting_resolve(config, X, Y):
        if config.kernel_variance_grid is not None:
            tuned.append(config.kernel_variance_grid)
        return resolve_config(config, X, Y)

    def fake_run(config, train, held_out, progress=False):
        return {"P@1": config.kernel_variance + config.epochs, "P@3": 0.0, "P@5": 0.0}

    monkeypatch.setattr(selection, "resolve_config", counting_resolve)
    auto = {"recipe": "label-gps-auto", "kernel_variance_grid": (0.5, 4.0), "rank": 20, "batch_size": 50,
            "epochs": 2, "float32": False}
    splits = kfold_splits(X.shape[0], 2)
    out = select(X, Y, [auto, {**auto, "min_steps": 20}], splits, run=fake_run)
    assert tuned == [(0.5, 4.0)] * 2  # once per split
    first, second = out["candidates"]
    for a, b in zip(first["splits"], second["splits"]):
        epochs = configs.epochs_for_min_steps(2, 20, a["n_fit"], 50)
        assert a["tuning"] == b["tuning"] and b["P@1"] - a["P@1"] == epochs - 2 > 0  # same σ², more epochs
    tuned.clear()
    again = select(X, Y, [{**auto, "epochs": 3}, {**auto, "kernel_variance_grid": (1.0, 8.0)}], splits,
                   run=fake_run, previous=out)
    assert tuned == [(1.0, 8.0)] * 2  # the first reuses the file's tuning; the other grid is tuned
    assert [s["tuning"]["chosen"] for s in again["candidates"][0]["splits"]] == [
        s["tuning"]["chosen"] for s in first["splits"]]


def test_rank_across_datasets_averages_ranks_and_breaks_ties_by_order():
    def outcome(p1, p3):
        return {"complete": True, "candidates": [
            {"name": n, "P@1 mean": a, "P@3 mean": b, "P@5 mean": 0.0} for n, a, b in zip("ab", p1, p3)]}

    ranking = rank_across({"x": outcome((2.0, 1.0), (1.0, 1.0)), "y": outcome((1.0, 2.0), (1.0, 3.0))})
    assert ranking["ranks"]["x"]["P@3"] == {"a": 1.5, "b": 1.5}
    assert ranking["mean_rank"] == {"a": pytest.approx((1 + 1.5 + 1.5 + 2 + 2 + 1.5) / 6),
                                    "b": pytest.approx((2 + 1.5 + 1.5 + 1 + 1 + 1.5) / 6)}
    assert ranking["chosen"] == "b" and ranking["complete"]
    assert rank_across({"x": outcome((1.0, 1.0), (1.0, 1.0))})["chosen"] == "a"  # equal: the first listed
    with pytest.raises(ValueError):
        rank_across({})
    # a set with fewer than 5 labels has no P@5: its ranks are over P@1 and P@3 only
    few = {"complete": True, "candidates": [
        {"name": n, "P@1 mean": a, "P@3 mean": a, "splits": [{"P@1": a, "P@3": a}]} for n, a in zip("ab", (1.0, 2.0))]}
    ranking = rank_across({"x": outcome((2.0, 1.0), (1.0, 1.0)), "few": few})
    assert set(ranking["ranks"]["few"]) == {"P@1", "P@3"}
    assert ranking["mean_rank"]["a"] == pytest.approx((1 + 1.5 + 1.5 + 2 + 2) / 5)
    unscored = {"complete": False, "candidates": [{"name": "a", "splits": []}, {"name": "b", "splits": []}]}
    with pytest.raises(ValueError, match="no P@1 mean yet"):
        rank_across({"unscored": unscored})


def test_best_recipe_runs_on_a_set_with_fewer_labels_than_the_largest_cut_off():
    """--recipe best on two labels: P@1 (and nDCG@1) are scored, P@3 and P@5 are not, the run does not fail."""
    import scipy.sparse as sp

    from gpflow_ext.recipes.mlgpf import run_mlgpf

    rng = np.random.default_rng(3)
    X = sp.csr_matrix(rng.random((120, 12)) * (rng.random((120, 12)) < 0.4))
    Y = sp.csr_matrix(np.eye(2)[(X[:, 0].toarray()[:, 0] > 0.1).astype(int)])
    config = configs.best_config("s-linear", "two-labels", epochs=2, kernel_variance_grid=(1.0, 4.0))
    result = run_mlgpf(config, (X[:90], Y[:90]), (X[90:], Y[90:]), progress=False, save_rows=True)
    assert {"P@1", "nDCG@1"} <= set(result) and not {"P@3", "P@5"} & set(result)
    assert 0.0 <= result["P@1"] <= 100.0 and result["tuning"]["chosen"] in (1.0, 4.0)


def test_auto_grid_is_geometric_around_the_fixed_variance_and_ends_are_flagged():
    """Doubling steps from 1/2 to 256, so the fixed σ² = 12 and the earlier grid's ends (2, 64) are interior."""
    grid = np.array(configs.AUTO_GRID)
    np.testing.assert_allclose(grid[1:] / grid[:-1], 2.0, rtol=0, atol=0)
    assert grid[0] == 0.5 and grid[-1] == 256.0 and grid[0] < 2.0 and grid[-1] > 64.0
    assert [grid_end(v, (4.0, 0.5, 2.0)) for v in (0.5, 2.0, 4.0)] == ["lowest", None, "highest"]
    assert grid_end(3.0, (3.0,)) is None  # one value: no end to widen past
