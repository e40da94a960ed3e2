"""Label-score features (``MLGPFConfig.label_score_weight``, ``recipes.mlgpf_stacking``): the training rows' scores
out-of-fold (against a brute-force refit per fold, and blind to their own labels), new rows scored by the first stage
fitted on every training row, the labels kept, dense and sparse rows alike, the recipe trained on the joined rows,
selection keys, and bad settings refused."""

import dataclasses

import numpy as np
import pytest
import scipy.sparse
import scipy.special
from sklearn.model_selection import KFold

from gpflow_ext.inducing_variables.subspace import subspace_basis
from gpflow_ext.recipes import mlgpf_config as configs
from gpflow_ext.recipes.mlgpf import run_mlgpf, synthetic_multilabel
from gpflow_ext.recipes.mlgpf_map import FoldedMapPredictor, MapPredictor, map_predictor, map_scores, map_weights
from gpflow_ext.recipes.mlgpf_select import _key
from gpflow_ext.recipes.mlgpf_stacking import LabelScoreFeatures

METRICS = ("P@1", "P@3", "P@5")
N = 120  # training rows of the fixture


@pytest.fixture(scope="module")
def data():
    (X, Y), (X_test, Y_test) = synthetic_multilabel(num_rows=150, num_features=25, num_labels=8, seed=1)
    assert X.shape == (N, 25)
    return scipy.sparse.csr_matrix(X), scipy.sparse.csr_matrix(Y), scipy.sparse.csr_matrix(X_test), Y_test


def _features(weight=0.5, variance=4.0, **kwargs):
    return LabelScoreFeatures(weight, variance, folds=3, rank=20, seed=2, **kwargs)


def test_training_rows_are_scored_by_a_first_stage_fitted_without_their_fold(data):
    X, Y, _, _ = data
    features = _features().fit(X, Y)
    joined = features.training_rows
    assert scipy.sparse.issparse(joined) and joined.shape == (N, 25 + 8)
    np.testing.assert_array_equal(joined[:, :25].toarray(), X.toarray())
    labels = Y[:, features.labels]
    for fit, held in KFold(n_splits=3, shuffle=True, random_state=2).split(np.arange(N)):
        brute = map_predictor(X[fit], labels[fit], 4.0, 20, seed=2).scores(X[held])  # [N_held, L]
        np.testing.assert_allclose(joined[held, 25:].toarray(), 0.5 * scipy.special.expit(brute), rtol=0, atol=1e-12)


def test_a_rows_own_labels_do_not_reach_its_training_features(data):
    X, Y, _, _ = data
    held = next(KFold(n_splits=3, shuffle=True, random_state=2).split(np.arange(N)))[1]
    flipped = Y.toarray()
    flipped[held] = 1.0 - flipped[held]  # every label of one fold's rows changed

    def by_label(features):  # the probabilities' columns in label-id order (the first stage orders them by frequency)
        rows = features.training_rows.toarray()
        return rows[:, 25:][:, np.argsort(features.labels)]

    before, after = _features().fit(X, Y), _features().fit(X, scipy.sparse.csr_matrix(flipped))
    np.testing.assert_allclose(by_label(after)[held], by_label(before)[held], rtol=0, atol=1e-12)  # order: rounding
    others = np.setdiff1d(np.arange(N), held)
    assert not np.allclose(by_label(after)[others], by_label(before)[others])


def test_new_rows_are_scored_by_the_first_stage_fitted_on_every_training_row(data):
    X, Y, X_test, _ = data
    features = _features().fit(X, Y)
    full = map_predictor(X, Y[:, features.labels], 4.0, 20, seed=2)
    joined = features(X_test)
    np.testing.assert_allclose(joined[:, 25:].toarray(), 0.5 * scipy.special.expit(full.scores(X_test)), atol=1e-12)
    # the same MAP fit as the inner cross-validation's (map_scores) at that σ²
    np.testing.assert_allclose(full.scores(X_test), map_scores(X, Y[:, features.labels], X_test, [4.0], 20, 2)[0])


def test_the_predictor_folds_its_weights_only_when_that_stores_fewer_numbers(data):
    X, Y, X_test, _ = data
    folded = map_predictor(X, Y, 4.0, 20, seed=2)  # K = 8 labels, R = 20: D·K = 200 < R·(D + K) = 660
    assert isinstance(folded, FoldedMapPredictor) and folded.weights.shape == (25, 8) and folded.num_features == 25
    wide = scipy.sparse.hstack([Y] * 4, format="csr")  # K = 32 > R = 3: D·K = 800 > R·(D + K) = 171
    factored = map_predictor(X, wide, 4.0, 3, seed=2)
    assert isinstance(factored, MapPredictor) and factored.basis.shape == (3, 25) and factored.num_features == 25
    # the brute-force twin: the same fit by hand, scored as (X X̃ᵀ) U + b with its basis
    Vt = subspace_basis(X, 20, seed=2)[2]  # [R, D]
    U, b = map_weights((X @ Vt.T).astype(np.float32), Y.toarray().astype(np.float32), 4.0, max_iter=50, tolerance=1e-6)
    twin = MapPredictor(Vt, U, b)
    np.testing.assert_allclose(folded.scores(X_test), twin.scores(X_test), rtol=0, atol=1e-12)
    np.testing.assert_allclose(folded.scores(X_test.toarray()), folded.scores(X_test), rtol=0, atol=1e-12)


def test_the_most_frequent_labels_are_scored_ties_by_label_id():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((60, 6))
    counts = [5, 9, 9, 2, 30, 9]  # label 4 first, then 1, 2, 5 (tied), then 0, then 3
    Y = np.zeros((60, 6))
    for k, c in enumerate(counts):
        Y[rng.choice(60, c, replace=False), k] = 1.0
    features = LabelScoreFeatures(1.0, 2.0, folds=3, rank=6, max_labels=4).fit(X, Y)
    assert features.labels.tolist() == [4, 1, 2, 5]
    assert isinstance(features.training_rows, np.ndarray) and features.training_rows.shape == (60, 10)
    assert features(X[:7]).shape == (7, 10)


def test_dense_and_sparse_rows_give_the_same_features(data):
    X, Y, X_test, _ = data
    sparse, dense = _features().fit(X, Y), _features().fit(X.toarray(), Y)
    np.testing.assert_allclose(sparse.training_rows.toarray(), dense.training_rows, atol=1e-10)
    np.testing.assert_allclose(sparse(X_test).toarray(), dense(X_test.toarray()), atol=1e-10)


def _config(**fields):
    config = configs.label_gps_config("s-linear", "bibtex", rank=20, epochs=3, batch_size=60, float32=False)
    fields = {"input_transform": None, "kernel_variance": 4.0, "seed": 2, "tuning_folds": 3, **fields}
    return dataclasses.replace(config, **fields)


def test_the_recipe_trains_on_the_joined_rows(data):
    X, Y, X_test, Y_test = data
    stacked = run_mlgpf(_config(label_score_weight=0.5), (X, Y), (X_test, Y_test), progress=False)
    features = _features().fit(X, Y)
    by_hand = run_mlgpf(_config(), (features.training_rows, Y), (features(X_test), Y_test), progress=False)
    assert {k: stacked[k] for k in METRICS} == {k: by_hand[k] for k in METRICS}
    assert stacked["final_bound"] == by_hand["final_bound"]
    plain = run_mlgpf(_config(), (X, Y), (X_test, Y_test), progress=False)
    assert plain["final_bound"] != stacked["final_bound"]  # the features change the model
    assert stacked["config"]["label_score_weight"] == 0.5 and plain["config"]["label_score_weight"] == 0.0


def test_selection_keys_are_unchanged_without_label_scores():
    stored = _config().as_dict()
    older = {k: v for k, v in stored.items() if k != "label_score_weight"}  # a file written before the field
    assert _key(dict(stored)) == _key(older)
    assert _key(_config(label_score_weight=0.25).as_dict()) != _key(dict(stored))


@pytest.mark.parametrize(
    "fields, match",
    [
        ({"label_score_weight": -0.5}, "label_score_weight must be a non-negative"),
        ({"label_score_weight": float("nan")}, "label_score_weight must be a non-negative"),
        ({"label_score_weight": True}, "label_score_weight must be a non-negative"),
        ({"label_score_weight": 0.5, "kernel_variance": None}, "label_score_weight > 0 fits its first stage"),
    ],
)
def test_bad_settings_are_refused(fields, match):
    with pytest.raises((TypeError, ValueError), match=match):
        _config(**fields)


def test_bad_first_stage_arguments_are_refused(data):
    X, Y, X_test, _ = data
    with pytest.raises(ValueError, match="weight must be a positive"):
        LabelScoreFeatures(0.0, 4.0)
    with pytest.raises(ValueError, match="kernel_variance must be"):
        LabelScoreFeatures(0.5, -1.0)
    with pytest.raises(ValueError, match="folds must be"):
        LabelScoreFeatures(0.5, 4.0, folds=1)
    with pytest.raises(ValueError, match="not fitted"):
        _features()(X_test)
    with pytest.raises(ValueError, match="needs at least that many training rows"):
        LabelScoreFeatures(0.5, 4.0, folds=5).fit(X[:4], Y[:4])
    with pytest.raises(ValueError, match="X has 24 columns"):
        _features().fit(X, Y)(X_test[:, :24])


def test_map_screen_command_on_a_training_file_only(run_python, dataset_path, tmp_path):
    """``experiments.mlgpf_map_screen --smoke`` on Medical's training file beside a garbage test file: the ``chosen``
    variant's P@k equal the MAP twin refitted by hand with the stored fold's transform and σ²."""
    import json
    import shutil

    from gpflow_ext.data.transforms import ROW_TRANSFORMS
    from gpflow_ext.metrics import ranking_metrics
    from gpflow_ext.recipes.mlgpf_data import load_training_file
    from gpflow_ext.recipes.mlgpf_select import kfold_splits

    folder = tmp_path / "data" / "medical"
    folder.mkdir(parents=True)
    for name in ("medical-train.arff.gz", "medical.xml"):
        shutil.copy(dataset_path("medical", name), folder / name)
    (folder / "medical-test.arff").write_text("not an ARFF file\n")
    output, stored = tmp_path / "screen.json", "docs/mlgpf/results/selection/four-sets-cv-5fold-transform.json"
    run_python(
        "-m",
        "experiments.mlgpf_map_screen",
        "--data-dir",
        folder.parent,
        "--dataset",
        "medical",
        "--smoke",
        "--tuning",
        stored,
        "--output",
        output,
    )
    result = json.loads(output.read_text())["datasets"]["medical"]
    assert [f["split"] for f in result["folds"]] == [0, 1]
    assert set(result["folds"][0]["variants"]) == {"chosen", "transforms averaged", "label scores α=0.25"}
    X, Y = load_training_file("medical", folder.parent)
    fit, held = kfold_splits(X.shape[0], 5, 0)[1]
    record = next(
        s["tuning"]
        for s in json.loads(open(stored).read())["datasets"]["medical"]["candidates"][1]["splits"]
        if s["split"] == 1
    )
    transform = ROW_TRANSFORMS[record["input_transform"]]().fit(X[fit])
    scores = map_scores(transform(X[fit]), Y[fit], transform(X[held]), [record["chosen"]], 2000, 0)[0]
    top = np.argsort(-scores, axis=1, kind="stable")[:, :5]
    brute = {k: v for k, v in ranking_metrics(top, Y[held], ks=[1, 3, 5]).items() if k.startswith("P@")}
    assert result["folds"][1]["variants"]["chosen"] == pytest.approx(brute, abs=1e-12)


def test_best_joins_label_scores_and_the_shared_recipe_does_not():
    assert configs.best_config("s-linear", "medical").label_score_weight == configs.BEST_LABEL_SCORE_WEIGHT == 0.25
    assert configs.best_config("s-linear", "medical", label_score_weight=0.0).label_score_weight == 0.0
    assert configs.RECIPES["label-gps-shared"]("s-linear", "medical").label_score_weight == 0.0  # as in its CV


def test_a_budget_cuts_the_rows_each_first_stage_is_fitted_on_and_every_row_is_still_scored(data):
    X, Y, X_test, _ = data
    whole = _features().fit(X, Y)
    assert whole.rows_fitted == [80, 80, 80, N]  # 3 folds of 120 rows, then every row
    per_row = 20 * 8  # R × L multiply-adds
    cut = _features(budget=50 * per_row).fit(X, Y)  # 50 rows' worth, at least 2R = 40
    assert cut.rows_fitted == [50, 50, 50, 50]
    assert cut.training_rows.shape == whole.training_rows.shape and cut(X_test).shape == whole(X_test).shape
    assert not np.allclose(cut.training_rows.toarray(), whole.training_rows.toarray())
    assert _features(budget=1.0).fit(X, Y).rows_fitted == [40, 40, 40, 40]  # never fewer than 2R rows
    assert _features(budget=1e12).fit(X, Y).rows_fitted == whole.rows_fitted
    with pytest.raises(ValueError, match="budget must be a positive number or None"):
        _features(budget=0.0)
