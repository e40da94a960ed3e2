"""The bounded inner cross-validation of σ² (``tuning_subsample``, ``MLGPFConfig.tuning_max_labels`` and
``tuning_budget``): the labels and rows it keeps against brute force, the tuning on them, and the defaults of
``label-gps-auto`` / ``best``, which leave the four shared training files whole."""
import dataclasses

import numpy as np
import pytest
import scipy.sparse as sp

from gpflow_ext.recipes import mlgpf_config as configs
from gpflow_ext.recipes.mlgpf import synthetic_multilabel
from gpflow_ext.recipes.mlgpf_auto import resolve_config, tune_kernel_variance
from gpflow_ext.recipes.mlgpf_data import fold_multiply_adds, load_training_file, tuning_subsample
from gpflow_ext.recipes.mlgpf_select import kfold_splits, select


def _labels(rows=90, labels=12, seed=0):
    rng = np.random.default_rng(seed)
    Y = (rng.random((rows, labels)) < rng.uniform(0.02, 0.5, size=labels)).astype(float)
    Y[:, 3] = Y[:, 7]  # equal counts: the lower index is kept first
    X = sp.random(rows, 40, density=0.2, format="csr", random_state=seed)
    return X, sp.csr_matrix(Y)


def _cost(n, folds, rank, num_features, num_labels):
    n_fit = n - n // folds
    return n_fit * min(rank, n_fit, num_features) * num_labels


def test_nothing_cut_returns_the_inputs_and_no_record():
    X, Y = _labels()
    assert tuning_subsample(X, Y) == (X, Y, None)
    assert tuning_subsample(X, Y, 12, _cost(90, 3, 2000, 40, 12))[2] is None  # exactly at the bounds


@pytest.mark.parametrize("num_rows", [5, 90, 151, 1000])
@pytest.mark.parametrize("folds", [2, 3, 5])
def test_fold_multiply_adds_is_the_largest_inner_fold_product(num_rows, folds):
    from sklearn.model_selection import KFold

    n_fit = max(len(fit) for fit, _ in KFold(folds).split(np.arange(num_rows)))  # the largest fit rows of a fold
    for rank, num_features in ((2000, 40), (10, 40), (25, 7)):
        product = np.ones((n_fit, min(rank, n_fit, num_features))) @ np.ones((min(rank, n_fit, num_features), 3))
        expected = int(product.sum())  # one multiply-add per term of every entry of Φ U [n_fit, 3]
        assert fold_multiply_adds(num_rows, num_features, 3, rank=rank, folds=folds) == expected


def test_kept_labels_are_the_most_frequent_by_brute_force():
    X, Y = _labels()
    counts = np.asarray(Y.sum(axis=0)).ravel()
    order = sorted(range(12), key=lambda k: (-counts[k], k))  # most positives, lower index of equal counts
    for keep in (1, 5, 8, 11):
        X_cut, Y_cut, record = tuning_subsample(X, Y, max_labels=keep)
        expected = sorted(order[:keep])
        assert record["label_indices"] == expected and record["labels"] == keep and record["of_labels"] == 12
        np.testing.assert_array_equal(Y_cut.toarray(), Y.toarray()[:, expected])
        assert X_cut is X or (X_cut != X).nnz == 0  # every row kept
        assert record["rows"] == record["of_rows"] == 90


@pytest.mark.parametrize("folds,rank", [(3, 2000), (5, 10), (2, 25)])
def test_rows_are_the_most_within_the_budget(folds, rank):
    X, Y = _labels(rows=150)
    for budget in (1, 3_000, 12_345, 40_000):
        X_cut, Y_cut, record = tuning_subsample(X, Y, max_labels=6, budget=budget, rank=rank, folds=folds, seed=4)
        n = record["rows"]
        fits = [m for m in range(1, 151) if _cost(m, folds, rank, 40, 6) <= budget]
        assert n == (max(fits) if fits else 1)
        assert record["multiply_adds"] == _cost(n, folds, rank, 40, 6)
        kept = np.flatnonzero(np.isin(np.arange(150), _rows_of(X, X_cut)))
        assert len(kept) == n == X_cut.shape[0] == Y_cut.shape[0]
    half = _cost(75, folds, rank, 40, 6)  # cuts the rows to 75 at any folds and rank
    again = tuning_subsample(X, Y, 6, half, rank=rank, folds=folds, seed=4)
    other = tuning_subsample(X, Y, 6, half, rank=rank, folds=folds, seed=5)
    assert 75 <= again[2]["rows"] < 150
    assert (again[0] != tuning_subsample(X, Y, 6, half, rank=rank, folds=folds, seed=4)[0]).nnz == 0
    assert again[0].shape == other[0].shape and (again[0] != other[0]).nnz > 0


def _rows_of(X, X_cut):
    """Indices of ``X_cut``'s rows in ``X`` (rows are distinct here), checking they keep the file's order."""
    dense, cut = X.toarray(), X_cut.toarray()
    index = [int(np.flatnonzero((dense == row).all(axis=1))[0]) for row in cut]
    assert index == sorted(index) and len(set(index)) == len(index)
    return index


def test_tuning_on_a_cut_equals_tuning_on_the_cut_rows():
    (X, Y), _ = synthetic_multilabel(num_rows=240, num_features=30, num_labels=14, seed=1)
    X_cut, Y_cut, cut = tuning_subsample(X, Y, 8, 40_000, rank=20, folds=3, seed=2)
    record = tune_kernel_variance(X, Y, (0.5, 2.0, 8.0), folds=3, seed=2, rank=20, max_labels=8, budget=40_000)
    direct = tune_kernel_variance(X_cut, Y_cut, (0.5, 2.0, 8.0), folds=3, seed=2, rank=20)
    assert record["subsample"] == cut and 0 < cut["rows"] < 240 and cut["labels"] == 8
    assert record["scores"] == direct["scores"] and record["chosen"] == direct["chosen"]
    assert "subsample" not in tune_kernel_variance(X, Y, (1.0,), folds=3, rank=20, max_labels=14)


def test_label_wise_choices_see_every_label_and_the_cut_rows():
    (X, Y), _ = synthetic_multilabel(num_rows=120, num_features=30, num_labels=6, seed=0)
    capped = tune_kernel_variance(X, Y, (1.0, 2.0), folds=3, rank=20, label_wise=True, max_labels=3, budget=5_000)
    rows_only = tune_kernel_variance(X, Y, (1.0, 2.0), folds=3, rank=20, label_wise=True, budget=5_000)
    assert capped == rows_only and len(capped["label_variances"]) == 6
    assert capped["subsample"]["labels"] == 6 and capped["subsample"]["rows"] < 120
    frequency = tune_kernel_variance(X, Y, (1.0, 2.0), folds=3, rank=20, frequency_exponents=(0.0, 1.0), max_labels=2)
    assert "subsample" not in frequency
    config = configs.label_gps_auto_config(label_wise_variance=True, independent_labels=True)
    assert config.tuning_max_labels == configs.AUTO_TUNING_MAX_LABELS


@pytest.mark.parametrize(
    "field,value,error",
    [
        ("tuning_max_labels", 0, ValueError),
        ("tuning_max_labels", 2.5, TypeError),
        ("tuning_budget", -1.0, ValueError),
        ("tuning_budget", float("inf"), ValueError),
        ("tuning_budget", "big", ValueError),
    ],
)
def test_config_rejects_bad_caps(field, value, error):
    with pytest.raises(error, match=field):
        configs.label_gps_auto_config(**{field: value})
    with pytest.raises(error, match="max_labels|budget"):
        tuning_subsample(*_labels(), **{field.replace("tuning_", ""): value})


def test_best_has_the_caps_and_resolves_with_them():
    config = configs.best_config()
    assert (config.tuning_max_labels, config.tuning_budget) == (
        configs.AUTO_TUNING_MAX_LABELS,
        configs.AUTO_TUNING_BUDGET,
    )
    (X, Y), _ = synthetic_multilabel(num_rows=300, num_features=30, num_labels=20, seed=3)
    small = dataclasses.replace(config, kernel_variance_grid=(1.0, 4.0), rank=20, tuning_max_labels=5)
    resolved, record = resolve_config(dataclasses.replace(small, tuning_budget=50_000.0), X, Y)
    assert record["subsample"]["labels"] == 5 and record["subsample"]["rows"] < 300
    assert resolved.kernel_variance == record["chosen"] and resolved.kernel_variance_grid is None


def test_caps_that_cut_nothing_reuse_runs_stored_without_them():
    """A stored candidate from before the caps existed is the same computation as the capped one where the caps
    cut nothing, and is reused; where they cut, its tuning is not."""
    (X, Y), _ = synthetic_multilabel(num_rows=160, num_features=30, num_labels=8, seed=2)
    splits = kfold_splits(X.shape[0], 2, seed=0)
    calls = []

    def run(config, train, test, progress=False):
        calls.append(config)
        return {"P@1": 50.0, "P@3": 40.0, "P@5": 30.0}

    base = {"rank": 20, "epochs": 1, "kernel_variance_grid": (1.0, 4.0), "tuning_max_labels": None,
            "tuning_budget": None}
    old = select(X, Y, [{}], splits, recipe="label-gps-auto", base=base, run=run)
    for row in old["candidates"]:  # as written before the fields existed
        row["config"] = {k: v for k, v in row["config"].items() if k not in ("tuning_max_labels", "tuning_budget")}
    calls.clear()
    whole = select(X, Y, [{}], splits, recipe="label-gps-auto", base={**base, "tuning_max_labels": 8},
                   run=run, previous=old)
    assert calls == [] and whole["candidates"][0]["splits"] == old["candidates"][0]["splits"]
    cut = select(X, Y, [{}], splits, recipe="label-gps-auto", base={**base, "tuning_max_labels": 3},
                 run=run, previous=old)
    # tuned again on the cut; a fit is reused only where the cut chose the σ² of the stored fit
    assert all("subsample" in s["tuning"] for s in cut["candidates"][0]["splits"])


@pytest.mark.parametrize("dataset", ["medical", "enron", "bibtex", "tmc2007-500"])
def test_defaults_leave_the_shared_training_files_whole(dataset, data_dir):
    """``best`` chooses σ² on every row and label of the four shared training files (3 inner folds of the file,
    and of a 5-fold split's fit rows), so its numbers there are those of the rule without caps."""
    X, Y = load_training_file(dataset, data_dir)
    caps = (configs.AUTO_TUNING_MAX_LABELS, configs.AUTO_TUNING_BUDGET)
    assert tuning_subsample(X, Y, *caps, rank=2000, folds=3)[2] is None
    fit = kfold_splits(X.shape[0], 5, seed=0)[0][0]
    assert tuning_subsample(X[fit], Y[fit], *caps, rank=2000, folds=3)[2] is None


def test_tuning_cut_command_on_a_training_file_only(run_python, dataset_path, tmp_path):
    """``experiments.mlgpf_tuning_cut --smoke`` on Bibtex's training file beside a garbage test file: every cut is
    scored, the regrets are read from the whole file's table (so never negative) and the cuts keep what they say."""
    import json
    import shutil

    folder = tmp_path / "data" / "bibtex"
    folder.mkdir(parents=True)
    for name in ("bibtex-train.arff.gz", "bibtex.xml"):
        shutil.copy(dataset_path("bibtex", name), folder / name)
    (folder / "bibtex-test.arff").write_text("not an ARFF file\n")
    output = tmp_path / "cut.json"
    run_python("-m", "experiments.mlgpf_tuning_cut", "--data-dir", folder.parent, "--dataset", "bibtex", "--smoke",
               "--output", output)
    result = json.loads(output.read_text())
    data = result["datasets"]["bibtex"]
    assert data["rows"] == 300 and data["labels"] == 159 and list(data["whole"]) == ["0"]
    table = {row["kernel_variance"]: row["P@1 mean"] for row in data["whole"]["0"]["scores"]}
    assert len(data["cuts"]) == len(result["cuts"]) == 5
    for cut, (name, label_fraction, cost_fraction) in zip(data["cuts"], result["cuts"]):
        assert cut["cut"] == name and cut["whole_chosen"] == data["whole"]["0"]["chosen"]
        assert cut["regret_P@1"] == pytest.approx(table[cut["whole_chosen"]] - table[cut["chosen"]])
        assert cut["regret_P@1"] >= 0
        assert cut["labels"] == (159 if label_fraction is None else round(label_fraction * 159))
        assert (cut["rows"] < 300) == (cost_fraction is not None)
