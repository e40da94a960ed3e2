"""Ensembles whose members train at their own σ² (``ensemble_across_variances``, ``member_kernel_variances``): the
members' σ² against a brute-force ranking of the inner cross-validation's table, each member equal to the single
model at its σ² and seed, the choice made inside the recipe, the selection keys, and bad settings refused."""

import dataclasses

import numpy as np
import pytest

from gpflow_ext.recipes import mlgpf_config as configs
from gpflow_ext.recipes.mlgpf import run_mlgpf, synthetic_multilabel
from gpflow_ext.recipes.mlgpf_auto import resolve_config, resolved_config
from gpflow_ext.recipes.mlgpf_ensemble import member_variances
from gpflow_ext.recipes.mlgpf_select import _key

METRICS = ("P@1", "P@3", "P@5")


def _config(**fields):
    config = configs.label_gps_config("s-linear", "bibtex", rank=20, epochs=3, batch_size=60, float32=False)
    return dataclasses.replace(config, **fields)


def _record(means: dict[float, float]) -> dict:
    scores = [{"kernel_variance": v, "P@1 mean": p, "P@3 mean": 0.0} for v, p in means.items()]
    chosen = max(sorted(means), key=lambda v: means[v])  # the smallest of equal means (max keeps the first)
    return {"scores": scores, "chosen": chosen, "grid": sorted(means)}


@pytest.mark.parametrize("seed", range(5))
def test_members_are_the_best_variances_of_the_inner_table_best_first(seed):
    rng = np.random.default_rng(seed)
    grid = [2.0**e for e in range(-1, 9)]
    means = {v: float(rng.choice([70.0, 71.5, 72.0, 73.25])) for v in rng.permutation(grid)}  # ties on purpose
    record = _record(means)
    for size in (1, 2, 3, 5):
        brute = sorted(grid, key=lambda v: (-means[v], v))[:size]
        assert member_variances(record, size) == tuple(brute)
        assert member_variances(record, size)[0] == record["chosen"]


def test_resolved_config_gives_each_member_its_variance_and_the_first_is_the_chosen():
    config = _config(kernel_variance_grid=(1.0, 4.0, 16.0, 64.0), ensemble_size=3, ensemble_across_variances=True)
    record = _record({1.0: 60.0, 4.0: 65.0, 16.0: 64.0, 64.0: 61.0})
    resolved = resolved_config(config, record)
    assert resolved.member_kernel_variances == (4.0, 16.0, 64.0) and resolved.kernel_variance == 4.0
    assert not resolved.ensemble_across_variances and resolved.kernel_variance_grid is None
    plain = resolved_config(dataclasses.replace(config, ensemble_across_variances=False), record)
    assert plain.member_kernel_variances is None and plain.kernel_variance == 4.0


def test_each_member_is_the_single_model_at_its_variance_and_seed():
    (X, Y), (X_test, Y_test) = synthetic_multilabel(num_rows=200, num_features=30, num_labels=9, seed=3)
    variances = (100.0, 0.01)
    pair = run_mlgpf(
        _config(seed=4, ensemble_size=2, kernel_variance=100.0, member_kernel_variances=variances),
        (X, Y),
        (X_test, Y_test),
        progress=False,
    )
    singles = [
        run_mlgpf(_config(seed=4 + e, kernel_variance=v), (X, Y), (X_test, Y_test), progress=False)
        for e, v in enumerate(variances)
    ]
    for member, single in zip(pair["member_metrics"], singles):
        assert member == {k: single[k] for k in METRICS}
    assert pair["final_bound"] == singles[0]["final_bound"]
    other = run_mlgpf(_config(seed=5, kernel_variance=100.0), (X, Y), (X_test, Y_test), progress=False)
    assert {k: other[k] for k in METRICS} != pair["member_metrics"][1]  # the second member's σ² matters here
    assert tuple(pair["config"]["member_kernel_variances"]) == variances


def test_the_recipe_chooses_the_members_variances_on_its_training_rows():
    (X, Y), _ = synthetic_multilabel(num_rows=240, num_features=30, num_labels=9, seed=2)
    config = _config(kernel_variance_grid=(0.25, 1.0, 4.0, 16.0), ensemble_size=3, ensemble_across_variances=True)
    resolved, record = resolve_config(config, X, Y)
    assert resolved.member_kernel_variances == member_variances(record, 3)
    assert resolved.member_kernel_variances[0] == record["chosen"] == resolved.kernel_variance
    assert len(set(resolved.member_kernel_variances)) == 3
    same, same_record = resolve_config(dataclasses.replace(config, ensemble_across_variances=False), X, Y)
    assert same_record["scores"] == record["scores"]  # the same inner cross-validation, whatever the members


def test_selection_keys_treat_unset_fields_as_files_without_them():
    config = _config(kernel_variance=4.0, ensemble_size=3).as_dict()
    old = {k: v for k, v in config.items() if k not in ("ensemble_across_variances", "member_kernel_variances")}
    assert _key(old) == _key(config)
    across = _config(kernel_variance=4.0, ensemble_size=3, member_kernel_variances=(4.0, 8.0, 2.0)).as_dict()
    assert _key(across) != _key(config)


@pytest.mark.parametrize(
    "fields, words",
    [
        (dict(ensemble_across_variances=True, kernel_variance_grid=(1.0, 2.0, 4.0)), "ensemble_size >= 2"),
        (dict(ensemble_across_variances=True, ensemble_size=3, kernel_variance=4.0), "set a grid of at least"),
        (dict(ensemble_across_variances=True, ensemble_size=4, kernel_variance_grid=(1.0, 2.0)), "at least ensemble"),
        (dict(member_kernel_variances=(1.0, 2.0), ensemble_size=3, kernel_variance=1.0), "one σ² per member"),
        (dict(member_kernel_variances=(1.0, -2.0), ensemble_size=2, kernel_variance=1.0), "member_kernel_variances"),
        (dict(member_kernel_variances=(1.0, 2.0), kernel_variance=1.0), "ensemble_size >= 2"),
        (
            dict(
                ensemble_across_variances=True,
                ensemble_size=2,
                kernel_variance_grid=(1.0, 2.0),
                label_wise_variance=True,
            ),
            "no label-wise",
        ),
    ],
)
def test_bad_member_settings_are_refused_naming_the_field(fields, words):
    with pytest.raises(ValueError, match=words):
        _config(**fields)
