"""Generated parts of docs/gplvf/likelihoods.md on the four models with an SE + linear kernel (``--kernel
se+linear``): each model beside its SE twin, and two candidate mixtures against the incumbent (the four SE models at
training seeds 0 and 1): the four SE + linear models, and the eight of both kernels at training seed 0. On the
validation parts of uK.base, then on the test splits; every mixing file's members are checked to be the runs'
models."""

import numpy as np

from experiments.report import fmt, generator, load, markdown_table
from experiments.report.gplvf_likelihood_mixture import (
    EIGHT_LABEL,
    EIGHT_TEST,
    EIGHT_VALIDATION,
    MEMBERS,
    PAIRS,
    SEED_PAIRS,
    _checked,
    _eight,
    _means,
    _splits_ahead,
)
from experiments.report.gplvf_rows import MEASURES

#: the two ``--rows users,items`` runs with ``--kernel se+linear`` (Gaussian, ordinal), in the order of ``PAIRS``
SE_LINEAR_RUNS = {
    "validation": [
        "docs/gplvf/results/validation/b_u15_rows_users_items_se_linear.json",
        "docs/gplvf/results/validation/b_u15_ordinal_shared_linear_mean_rows_users_items_se_linear.json",
    ],
    "test": [
        "docs/gplvf/results/movielens_b_u15_gaussian_rows_users_items_se_linear_seed0.json",
        "docs/gplvf/results/movielens_b_u15_ordinal_shared_linear_mean_rows_users_items_se_linear_seed0.json",
    ],
}
#: the SE runs of the same seed (0), in the order of ``PAIRS``
SE_RUNS = {
    "validation": [validation for _, validation, _ in PAIRS],
    "test": [test.format(seed=0) for _, _, test in PAIRS],
}
FOUR_MIXTURE = {
    "validation": "docs/gplvf/results/validation/b_u15_likelihoods_mixture_se_linear.json",
    "test": "docs/gplvf/results/movielens_b_u15_likelihoods_mixture_se_linear_seed0.json",
}
BOTH_MIXTURE = {
    "validation": "docs/gplvf/results/validation/b_u15_likelihoods_mixture_se_and_se_linear.json",
    "test": "docs/gplvf/results/movielens_b_u15_likelihoods_mixture_se_and_se_linear_seed0.json",
}
INCUMBENT = {"validation": EIGHT_VALIDATION, "test": EIGHT_TEST}
FOUR_LABEL = "mixture of the four with an SE + linear kernel"
BOTH_LABEL = "mixture of the eight (the four with each kernel, seed 0)"
#: the models of a ``--rows users,items`` run: (label, key prefix)
RUN_MODELS = (("users as rows", "gaussian"), ("items as rows", "items_gaussian"), ("mixture of both ways round",
                                                                                    "mixture_gaussian"))


def _labelled(suffix: str) -> tuple[tuple[str, str], ...]:
    return tuple((f"{users}_{suffix}", f"{items}_{suffix}") for users, items in MEMBERS)


def _candidates(part: str) -> list[tuple[str, dict]]:
    """(label, mixing result) of the two candidates on ``part`` ("validation" or "test"), members checked."""
    se_linear = [load(path) for path in SE_LINEAR_RUNS[part]]
    se = [load(path) for path in SE_RUNS[part]]
    four = _checked(zip(se_linear, MEMBERS), load(FOUR_MIXTURE[part]), FOUR_MIXTURE[part])
    both_runs = [*zip(se, _labelled("se")), *zip(se_linear, _labelled("se_linear"))]
    both = _checked(both_runs, load(BOTH_MIXTURE[part]), BOTH_MIXTURE[part])
    return [(FOUR_LABEL, four), (BOTH_LABEL, both)]


def _incumbent(part: str) -> dict:
    if part == "validation":
        return _eight(dict(SEED_PAIRS), INCUMBENT[part])
    return _eight({seed: [test.format(seed=seed) for _, _, test in PAIRS] for seed in (0, 1)}, INCUMBENT[part])


def _models_table(part: str) -> str:
    """Each model of the two ``--rows users,items`` runs on ``part`` (seed 0), SE beside SE + linear: mean RMSE and
    log-probability of the discrete rating, and the final training bound's difference."""
    se = [load(path) for path in SE_RUNS[part]]
    se_linear = [load(path) for path in SE_LINEAR_RUNS[part]]
    rows = []
    for (name, _, _), run_se, run_sl in zip(PAIRS, se, se_linear):
        for label, prefix in RUN_MODELS:
            cells = []
            for key, digits in MEASURES[:2]:
                cells += [fmt(_means(run, prefix)[key], digits) for run in (run_se, run_sl)]
            if prefix.startswith("mixture_"):  # a mixture has no training bound of its own
                cells.append("")
            else:
                gaps = [run_sl["b"][split][f"{prefix}_final_elbo"] - row[f"{prefix}_final_elbo"]
                        for split, row in run_se["b"].items()]
                cells.append(f"{fmt(float(np.mean(gaps)), 0)} (lower on {sum(g < 0 for g in gaps)} of {len(gaps)} splits)")
            rows.append([f"{name}, {label}", *cells])
    return markdown_table(["model (150 epochs, seed 0)", "RMSE, SE", "RMSE, SE + linear", "log-prob, SE",
                           "log-prob, SE + linear", "final training bound, SE + linear − SE (nats, mean of u1-u5)"],
                          rows)



@generator("gplvf-movielens-kernel-models-validation")
def models_validation_table() -> str:
    """:func:`_models_table` on the validation parts."""
    return _models_table("validation")

def _table(part: str, extra_rows: list[list[str]] | None = None) -> str:
    rows = [[f"{EIGHT_LABEL} (the incumbent)",
             *[fmt(_means(_incumbent(part), "mixture")[key], digits) for key, digits in MEASURES]]]
    rows += [[label, *[fmt(_means(result, "mixture")[key], digits) for key, digits in MEASURES]]
             for label, result in _candidates(part)]
    return markdown_table(["model (150 epochs)", f"{part} RMSE, mean of u1-u5", "log-prob of the discrete rating",
                           "50 % coverage", "90 % coverage"], [*rows, *(extra_rows or [])])


@generator("gplvf-movielens-kernel-mixture-validation")
def validation_table() -> str:
    """Means over u1-u5's validation parts of the incumbent and the two candidates."""
    return _table("validation")


def chosen() -> tuple[str | None, dict, dict]:
    """The rule, fixed before scoring: a candidate qualifies when better than the incumbent on both validation means
    (RMSE, log-probability of the discrete rating); of those that qualify, the lower validation RMSE is chosen.
    Returns (the chosen label or None, the incumbent's means, every candidate's means by label)."""
    incumbent = _means(_incumbent("validation"), "mixture")
    means = {label: _means(result, "mixture") for label, result in _candidates("validation")}
    qualified = [label for label, m in means.items() if m["rmse"] < incumbent["rmse"]
                 and m["test_logprob_discrete"] > incumbent["test_logprob_discrete"]]
    return min(qualified, key=lambda label: means[label]["rmse"], default=None), incumbent, means


@generator("gplvf-movielens-kernel-mixture-choice")
def choice() -> str:
    """The rule's verdict on the validation parts."""
    label, incumbent, means = chosen()
    scored = "; ".join(f"the {name}: {fmt(m['rmse'], 4)} and {fmt(m['test_logprob_discrete'], 4)}"
                       for name, m in means.items())
    verdict = (f"the {label} replaces the incumbent" if label is not None
               else "neither is better on both, so the incumbent stays")
    return (f"the incumbent has validation RMSE {fmt(incumbent['rmse'], 4)} and log-probability "
            f"{fmt(incumbent['test_logprob_discrete'], 4)}; {scored}: {verdict}")



@generator("gplvf-movielens-kernel-mixture-test")
def test_table() -> str:
    """Means over u1-u5's test splits of the incumbent and the two candidates, and on how many splits each
    candidate is ahead of the incumbent on each measure."""
    incumbent = _incumbent("test")
    ahead = []
    for label, result in _candidates("test"):
        ahead.append([f"splits where the {label} is ahead of the incumbent", *_splits_ahead(result, incumbent), "", ""])
    return _table("test", ahead)


@generator("gplvf-readme-kernel-mixture")
def readme_sentence() -> str:
    """README: the chosen mixture's and the incumbent's means over u1-u5's test splits."""
    label, _, _ = chosen()
    incumbent = _means(_incumbent("test"), "mixture")
    if label is None:
        return (f"RMSE {fmt(incumbent['rmse'], 4)} and log-probability {fmt(incumbent['test_logprob_discrete'], 4)} "
                f"on u1-u5 for the {EIGHT_LABEL}, which no kernel candidate replaced")
    result = _means(dict(_candidates("test"))[label], "mixture")
    return (f"RMSE {fmt(result['rmse'], 4)} and log-probability {fmt(result['test_logprob_discrete'], 4)} on u1-u5 "
            f"for the {label}, against {fmt(incumbent['rmse'], 4)} and "
            f"{fmt(incumbent['test_logprob_discrete'], 4)} for the {EIGHT_LABEL}")


@generator("gplvf-movielens-kernel-models-test")
def models_test_table() -> str:
    """:func:`_models_table` on the test splits."""
    return _models_table("test")
