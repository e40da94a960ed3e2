"""The rows' transform chosen with σ² by the inner cross-validation (``input_transform_choices``)."""

import dataclasses

import numpy as np
import pytest
import scipy.sparse as sp

from gpflow_ext.data.transforms import (
    ROW_TRANSFORMS,
    L2Rows,
    RowsAsGiven,
    TfidfRows,
    l2_normalise_rows,
    row_transform_names,
)
from gpflow_ext.recipes import mlgpf_config as configs
from gpflow_ext.recipes.mlgpf import run_mlgpf, synthetic_multilabel
from gpflow_ext.recipes.mlgpf_auto import resolve_config, resolved_config, tune_kernel_variance
from gpflow_ext.recipes.mlgpf_candidates import candidate_config, candidate_name, parse_candidate
from gpflow_ext.recipes.mlgpf_select import kfold_splits, select


def _problem(seed=0, rows=150):
    return synthetic_multilabel(num_rows=rows, num_features=30, num_labels=6, seed=seed)


def _auto(**fields):
    config = configs.RECIPES["label-gps-auto"]("s-linear", "bibtex", rank=20, epochs=2, batch_size=50)
    return dataclasses.replace(config, kernel_variance_grid=(0.5, 4.0, 32.0), float32=False, **fields)


def test_l2_rows_normalise_each_row_and_learn_nothing():
    X = sp.random(7, 5, density=0.6, format="csr", random_state=0)
    X[3] = 0.0  # an empty row stays empty
    transform = L2Rows()
    assert transform.fit(X) is transform
    for rows in (X, X.toarray()):
        out = transform(rows)
        dense = out.toarray() if sp.issparse(out) else out
        np.testing.assert_allclose(dense, l2_normalise_rows(X).toarray(), rtol=1e-14)
        norms = np.linalg.norm(dense, axis=1)
        np.testing.assert_allclose(norms[norms > 0], 1.0, rtol=1e-14)
    assert ROW_TRANSFORMS == {"tfidf": TfidfRows, "l2": L2Rows, "none": RowsAsGiven}


def test_rows_as_given_keep_every_value_and_learn_nothing():
    X = sp.random(7, 5, density=0.6, format="csr", random_state=0) * 3.0
    transform = RowsAsGiven()
    assert transform.fit(X) is transform
    out = transform(X)
    assert sp.issparse(out) and out.dtype == np.float64
    np.testing.assert_array_equal(out.toarray(), X.toarray())
    dense = transform(X.toarray())
    assert isinstance(dense, np.ndarray)
    np.testing.assert_array_equal(dense, X.toarray())
    with pytest.raises(ValueError, match="X"):
        transform(np.full((2, 3), np.nan))


@pytest.mark.parametrize(
    "names, error, match",
    [
        ("tfidf", TypeError, "sequence of names"),
        ((), ValueError, "distinct names"),
        (("tfidf", "bm25"), ValueError, "distinct names"),
        (("l2", "l2"), ValueError, "distinct names"),
    ],
)
def test_bad_transform_names_are_named(names, error, match):
    with pytest.raises(error, match=match):
        row_transform_names(names)
    with pytest.raises(error, match="input_transform_choices"):
        _auto(input_transform_choices=names)


def test_choices_need_a_variance_grid_and_read_from_text():
    with pytest.raises(ValueError, match="kernel_variance or on kernel_variance_grid"):
        configs.paper_config("s-linear", input_transform_choices=("tfidf", "l2"))
    assert _auto(input_transform_choices=["l2", "tfidf"]).input_transform_choices == ("l2", "tfidf")
    overrides = parse_candidate("recipe=best,input_transform_choices=tfidf;l2")
    assert overrides == {"recipe": "best", "input_transform_choices": ("tfidf", "l2")}
    assert candidate_name(overrides) == "recipe=best,input_transform_choices=tfidf;l2"
    config = candidate_config("paper", "s-linear", "medical", overrides)
    assert config.input_transform_choices == ("tfidf", "l2") == config.as_dict()["input_transform_choices"]


@pytest.mark.parametrize("names", [("tfidf", "l2"), ("tfidf", "l2", "none"), ("none", "tfidf")])
def test_the_transform_whose_chosen_variance_scores_best_is_chosen_and_trained_with(names):
    (X, Y), _ = _problem()
    config = _auto(input_transform_choices=names)
    resolved, record = resolve_config(config, X, Y)
    # brute force: each transform's own tuning, as the plain rule runs it
    singles = {}
    for name in names:
        singles[name] = tune_kernel_variance(
            X, Y, config.kernel_variance_grid, folds=3, seed=0, rank=20, transform=ROW_TRANSFORMS[name]()
        )
    p1 = {
        name: next(e["P@1 mean"] for e in r["scores"] if e["kernel_variance"] == r["chosen"])
        for name, r in singles.items()
    }
    expected = max(names, key=lambda name: (p1[name], -names.index(name)))  # the first listed of equal means
    assert record["input_transform"] == expected
    assert [e["input_transform"] for e in record["input_transform_scores"]] == list(names)
    for entry in record["input_transform_scores"]:
        assert entry["kernel_variance"] == singles[entry["input_transform"]]["chosen"]
        assert entry["P@1 mean"] == p1[entry["input_transform"]]
    assert record["scores"] == singles[expected]["scores"] and record["chosen"] == singles[expected]["chosen"]
    assert isinstance(resolved.input_transform, ROW_TRANSFORMS[expected]) and resolved.input_transform_choices is None
    assert resolved.kernel_variance == record["chosen"] and resolved.kernel_variance_grid is None
    assert "highest mean held-out P@1" in record["input_transform_rule"]
    with pytest.raises(ValueError, match="chose none"):
        resolved_config(config, singles["tfidf"])  # a record of the plain rule names no transform


def test_l2_alone_is_chosen_where_the_informative_features_are_common():
    """Rows whose informative features are in almost every row: IDF down-weights them, and the inner
    cross-validation scores L2 alone higher and chooses it."""
    rng = np.random.default_rng(0)
    num_rows, num_labels = 240, 4
    labels = rng.integers(0, num_labels, num_rows)
    Y = sp.csr_matrix(np.eye(num_labels)[labels])
    common = (rng.random((num_rows, 8)) < 0.9).astype(float)  # in almost every row
    common[np.arange(num_rows), labels] = 3.0  # the label's own common word is counted three times
    noise = (rng.random((num_rows, 60)) < 0.05).astype(float) * rng.integers(1, 4, (num_rows, 60))  # rare words
    X = sp.csr_matrix(np.hstack([common, noise]))
    config = _auto(input_transform_choices=("tfidf", "l2"))
    _, record = resolve_config(config, X, Y)
    scores = {e["input_transform"]: e["P@1 mean"] for e in record["input_transform_scores"]}
    assert record["input_transform"] == ("l2" if scores["l2"] > scores["tfidf"] else "tfidf")
    assert scores["l2"] > scores["tfidf"] and record["input_transform"] == "l2"


def test_run_trains_with_the_chosen_transform_and_select_keys_keep_candidates_apart(monkeypatch):
    (X, Y), (X_test, Y_test) = _problem(rows=200)
    config = _auto(input_transform_choices=("l2", "tfidf"))
    result = run_mlgpf(config, (X, Y), (X_test, Y_test), progress=False)
    chosen = result["tuning"]["input_transform"]
    assert result["config"]["input_transform"] == ROW_TRANSFORMS[chosen]().__name__
    assert result["config"]["input_transform_choices"] is None

    calls = []

    def fake_run(config, train, held_out, progress=False):
        calls.append(getattr(config.input_transform, "__name__", None))
        return {"P@1": config.kernel_variance, "P@3": 0.0, "P@5": 0.0}

    plain = {
        "recipe": "label-gps-auto",
        "kernel_variance_grid": (0.5, 4.0),
        "rank": 20,
        "batch_size": 50,
        "epochs": 2,
        "float32": False,
    }
    choosing = {**plain, "input_transform_choices": ("tfidf", "l2")}
    out = select(X, Y, [plain, choosing], kfold_splits(X.shape[0], 2), run=fake_run)
    first, second = out["candidates"]
    for a, b in zip(first["splits"], second["splits"]):
        assert "input_transform" not in a["tuning"] and b["tuning"]["input_transform"] in ("tfidf", "l2")
        assert len(b["tuning"]["input_transform_scores"]) == 2
        if b["tuning"]["input_transform"] == "tfidf":  # the same resolved config as the plain candidate's: reused
            assert a["P@1"] == b["P@1"] and b["tuning"]["chosen"] == a["tuning"]["chosen"]
    assert len(calls) == 2 + sum(s["tuning"]["input_transform"] == "l2" for s in second["splits"])


def test_best_chooses_the_transform_and_the_shared_recipe_keeps_tf_idf():
    best = configs.best_config("s-linear", "medical")
    assert best.input_transform_choices == configs.BEST_INPUT_TRANSFORMS == ("tfidf", "l2")
    assert configs.best_config("s-linear", "medical", input_transform_choices=("tfidf",)).input_transform_choices == (
        "tfidf",
    )
    assert configs.label_gps_shared_config("s-linear", "medical").input_transform_choices == ("tfidf",)


def test_at_a_fixed_variance_the_transform_alone_is_chosen():
    (X, Y), _ = _problem()
    config = dataclasses.replace(_auto(input_transform_choices=("l2", "tfidf")), kernel_variance_grid=None)
    config = dataclasses.replace(config, kernel_variance=4.0)
    resolved, record = resolve_config(config, X, Y)
    assert record["grid"] == [4.0] and resolved.kernel_variance == 4.0 and resolved.kernel_variance_grid is None
    assert isinstance(resolved.input_transform, ROW_TRANSFORMS[record["input_transform"]])
    singles = {
        name: tune_kernel_variance(X, Y, (4.0,), folds=3, seed=0, rank=20, transform=cls())["scores"][0]["P@1 mean"]
        for name, cls in ROW_TRANSFORMS.items()
    }
    assert record["input_transform"] == ("tfidf" if singles["tfidf"] > singles["l2"] else "l2")
