"""Generated parts of docs/gplvf/likelihoods.md on the mixture across likelihoods: the four models of the two
``--rows users,items`` runs (bias-centred Gaussian; ordinal with the shared linear mean), mixed with equal weights
by experiments.gplvf_mixture, against each likelihood's own two-model mixture, on the validation parts of uK.base
and on the test splits.

The mixing script re-reads each model's saved predictions; its members' metrics must equal those stored by the
runs named here, which is checked, so the four members are those runs' models."""

import numpy as np

from experiments.report import REPO, fmt, generator, load, markdown_table
from experiments.report.gplvf_rows import MEASURES, seed_cells

#: (label, ``--rows users,items`` result file on the validation parts, pattern of its test runs)
PAIRS = (
    (
        "Gaussian, bias-centred",
        "docs/gplvf/results/validation/b_u15_rows_users_items.json",
        "docs/gplvf/results/movielens_b_u15_gaussian_rows_users_items_seed{seed}.json",
    ),
    (
        "Ordinal, shared linear mean",
        "docs/gplvf/results/validation/b_u15_ordinal_shared_linear_mean_rows_users_items.json",
        "docs/gplvf/results/movielens_b_u15_ordinal_shared_linear_mean_rows_users_items_seed{seed}.json",
    ),
)
INCUMBENT = 1  # the ordinal pair's mixture: the lowest validation RMSE and highest log-probability before
VALIDATION = "docs/gplvf/results/validation/b_u15_likelihoods_mixture.json"
TEST = "docs/gplvf/results/movielens_b_u15_likelihoods_mixture_seed{seed}.json"
#: the mixing file's member labels, per pair: (users as rows, items as rows)
MEMBERS = (("gaussian_users", "gaussian_items"), ("ordinal_users", "ordinal_items"))
SEEDS = (0, 1, 2, 3, 4)
LABEL = "mixture of the four (both likelihoods, both ways round)"


def _checked(runs, mixed: dict, path: str) -> dict:
    """``mixed`` after checking that its members' metrics are those of the runs, split by split; ``runs``: pairs
    of a ``--rows users,items`` result and its two models' member labels (users as rows, items as rows)."""
    for run, (users, items) in runs:
        for split, row in run["b"].items():
            for label, prefix in ((users, "gaussian"), (items, "items_gaussian")):
                for key, _ in MEASURES:
                    if mixed["b"][split][f"{label}_{key}"] != row[f"{prefix}_{key}"]:
                        raise ValueError(f"{path}: {label}'s {key} on {split} is not that of its run")
    return mixed


def _rule(label: str, incumbent: dict, candidate: dict) -> str:
    """The rule, fixed before scoring: the candidate replaces the incumbent only when better on both validation
    means (RMSE, log-probability of the discrete rating)."""
    better = (candidate["rmse"] < incumbent["rmse"]
              and candidate["test_logprob_discrete"] > incumbent["test_logprob_discrete"])
    verdict = "it replaces the incumbent" if better else "it is not better on both, so the incumbent stays"
    return (f"the {label} has validation RMSE {fmt(candidate['rmse'], 4)} against {fmt(incumbent['rmse'], 4)} and "
            f"log-probability {fmt(candidate['test_logprob_discrete'], 4)} against "
            f"{fmt(incumbent['test_logprob_discrete'], 4)}: {verdict}")


def _models(pair_paths: list[str], mixed_path: str) -> list[tuple[str, dict, str]]:
    """(label, result, key prefix) of each pair's mixture and the four-model mixture."""
    pairs = [load(path) for path in pair_paths]
    mixed = _checked(zip(pairs, MEMBERS), load(mixed_path), mixed_path)
    return [*[(f"{name}, mixture of both ways round", pair, "mixture_gaussian")
              for (name, _, _), pair in zip(PAIRS, pairs)], (LABEL, mixed, "mixture")]


def _means(result: dict, prefix: str) -> dict[str, float]:
    return {key: float(np.mean([r[f"{prefix}_{key}"] for r in result["b"].values()])) for key, _ in MEASURES}


def _validation() -> list[tuple[str, dict, str]]:
    return _models([validation for _, validation, _ in PAIRS], VALIDATION)


@generator("gplvf-movielens-likelihood-mixture-validation")
def validation_table() -> str:
    """Means over u1-u5's validation parts (seed 0) of each likelihood's two-model mixture and the four-model one."""
    rows = []
    for position, (label, result, prefix) in enumerate(_validation()):
        name = label + (" (the incumbent)" if position == INCUMBENT else "")
        rows.append([name, *[fmt(_means(result, prefix)[key], digits) for key, digits in MEASURES]])
    return markdown_table(["model (150 epochs)", "validation RMSE, mean", "log-prob of the discrete rating",
                           "50 % coverage", "90 % coverage"], rows)


@generator("gplvf-movielens-likelihood-mixture-choice")
def choice() -> str:
    """The rule: the four-model mixture replaces the incumbent only when better on both validation means."""
    models = _validation()
    return _rule(LABEL, *(_means(result, prefix) for _, result, prefix in (models[INCUMBENT], models[-1])))


def _test_seeds() -> list[int]:
    paths = [test for _, _, test in PAIRS] + [TEST]
    return [seed for seed in SEEDS if all((REPO / path.format(seed=seed)).is_file() for path in paths)]


def _test_models() -> tuple[list[int], list[list[tuple[str, dict, str]]]]:
    """(the seeds with all three test files, :func:`_models` of each of those seeds)."""
    seeds = _test_seeds()
    if not seeds:
        raise FileNotFoundError(f"no test run {TEST} with its two pairs for seeds {SEEDS}")
    return seeds, [_models([test.format(seed=seed) for _, _, test in PAIRS], TEST.format(seed=seed)) for seed in seeds]


@generator("gplvf-movielens-likelihood-mixture-test")
def test_table() -> str:
    """Means over u1-u5's test splits for every seed with all three files (mean ± sd over seeds), and in how many
    (split, seed) runs the four-model mixture is ahead of the incumbent on each measure."""
    seeds, by_seed = _test_models()
    rows = []
    for position, (label, _, prefix) in enumerate(by_seed[0]):
        cells = seed_cells([_means(models[position][1], prefix) for models in by_seed])
        name = label + (" (the incumbent)" if position == INCUMBENT else "")
        rows.append([name, ", ".join(map(str, seeds)), *cells])
    pairs = [(models[INCUMBENT][1]["b"][split], models[-1][1]["b"][split]) for models in by_seed
             for split in models[-1][1]["b"]]
    ahead_rmse = sum(b["mixture_rmse"] < a["mixture_gaussian_rmse"] for a, b in pairs)
    ahead_logprob = sum(b["mixture_test_logprob_discrete"] > a["mixture_gaussian_test_logprob_discrete"]
                        for a, b in pairs)
    rows.append(["(split, seed) runs where the four-model mixture is ahead of the incumbent",
                 ", ".join(map(str, seeds)), f"{ahead_rmse} of {len(pairs)}", f"{ahead_logprob} of {len(pairs)}", "",
                 ""])
    return markdown_table(["model (150 epochs)", "seeds", "RMSE, mean of u1-u5", "log-prob of the discrete rating",
                           "50 % coverage", "90 % coverage"], rows)


@generator("gplvf-readme-likelihood-mixture")
def readme_sentence() -> str:
    """README: the four-model mixture's and the incumbent's means over u1-u5 and the seeds run."""
    seeds, by_seed = _test_models()

    def mean(position: int, key: str) -> str:
        _, _, prefix = by_seed[0][position]
        return fmt(float(np.mean([_means(models[position][1], prefix)[key] for models in by_seed])), 4)

    return (f"RMSE {mean(-1, 'rmse')} and log-probability {mean(-1, 'test_logprob_discrete')} on u1-u5 against "
            f"{mean(INCUMBENT, 'rmse')} and {mean(INCUMBENT, 'test_logprob_discrete')} for the ordinal model's "
            f"mixture ({'seeds' if len(seeds) > 1 else 'seed'} {', '.join(map(str, seeds))})")


# ---------------------------------------------------------------------------------------------------------
# the four models at two training seeds: the eight-model mixture against the four-model one
# ---------------------------------------------------------------------------------------------------------
#: (training seed, the two ``--rows users,items`` validation runs at that seed), the validation parts drawn with
#: seed 0 for both (``--seed 0 --train-seed S``)
SEED_PAIRS = (
    (0, [validation for _, validation, _ in PAIRS]),
    (1, ["docs/gplvf/results/validation/b_u15_rows_users_items_train_seed1.json",
         "docs/gplvf/results/validation/b_u15_ordinal_shared_linear_mean_rows_users_items_train_seed1.json"]),
)
#: the four-model mixture of each training seed's validation runs
SEED_VALIDATION = {0: VALIDATION, 1: "docs/gplvf/results/validation/b_u15_likelihoods_mixture_train_seed1.json"}
EIGHT_VALIDATION = "docs/gplvf/results/validation/b_u15_likelihoods_mixture_train_seeds01.json"
EIGHT_TEST = "docs/gplvf/results/movielens_b_u15_likelihoods_mixture_seeds01.json"
EIGHT_LABEL = "mixture of the eight (the four at seeds 0 and 1)"


def _seed_labelled(seed: int) -> tuple[tuple[str, str], ...]:
    return tuple((f"{users}_seed{seed}", f"{items}_seed{seed}") for users, items in MEMBERS)


def _eight(pair_paths: dict[int, list[str]], mixed_path: str) -> dict:
    """The eight-model mixing file after checking that its members are the runs' models, split by split."""
    runs = [(load(path), labels) for seed, paths in pair_paths.items()
            for path, labels in zip(paths, _seed_labelled(seed))]
    return _checked(runs, load(mixed_path), mixed_path)


def _seed_validation() -> list[tuple[str, dict]]:
    """(label, result) of each training seed's four-model mixture and of the eight-model mixture."""
    fours = [(f"{LABEL}, seed {seed}", _models(paths, SEED_VALIDATION[seed])[-1][1]) for seed, paths in SEED_PAIRS]
    return [*fours, (EIGHT_LABEL, _eight(dict(SEED_PAIRS), EIGHT_VALIDATION))]


@generator("gplvf-movielens-seed-mixture-validation")
def seed_validation_table() -> str:
    """Means over u1-u5's validation parts of the four-model mixture at each training seed and of the eight."""
    rows = [[label + (" (the incumbent)" if position == 0 else ""),
             *[fmt(_means(result, "mixture")[key], digits) for key, digits in MEASURES]]
            for position, (label, result) in enumerate(_seed_validation())]
    return markdown_table(["model (150 epochs)", "validation RMSE, mean", "log-prob of the discrete rating",
                           "50 % coverage", "90 % coverage"], rows)


@generator("gplvf-movielens-seed-mixture-choice")
def seed_choice() -> str:
    """The same rule: the eight-model mixture replaces the seed-0 four-model one only when better on both means."""
    models = _seed_validation()
    return _rule(EIGHT_LABEL, *(_means(result, "mixture") for _, result in (models[0], models[-1])))


def _splits_ahead(candidate: dict, reference: dict) -> list[str]:
    """On how many of the candidate's splits its mixture is ahead of the reference's mixture: ["k of n" for RMSE
    (lower), "k of n" for the discrete rating's log-probability (higher)]."""
    splits = list(candidate["b"])
    pairs = [(candidate["b"][s], reference["b"][s]) for s in splits]
    ahead_rmse = sum(c["mixture_rmse"] < r["mixture_rmse"] for c, r in pairs)
    ahead_logprob = sum(c["mixture_test_logprob_discrete"] > r["mixture_test_logprob_discrete"] for c, r in pairs)
    return [f"{ahead_rmse} of {len(splits)}", f"{ahead_logprob} of {len(splits)}"]


@generator("gplvf-movielens-seed-mixture-test")
def seed_test_table() -> str:
    """Means over u1-u5's test splits of the four-model mixture of seeds 0 and 1 and of the eight-model mixture,
    and on how many splits the eight are ahead of each seed's four on each measure."""
    pair_paths = {seed: [test.format(seed=seed) for _, _, test in PAIRS] for seed in (0, 1)}
    fours = {seed: _models(paths, TEST.format(seed=seed))[-1][1] for seed, paths in pair_paths.items()}
    eight = _eight(pair_paths, EIGHT_TEST)
    rows = [[f"{LABEL}, seed {seed}", *[fmt(_means(result, "mixture")[key], digits) for key, digits in MEASURES]]
            for seed, result in fours.items()]
    rows.append([EIGHT_LABEL, *[fmt(_means(eight, "mixture")[key], digits) for key, digits in MEASURES]])
    for seed, four in fours.items():
        rows.append([f"splits where the eight are ahead of the four of seed {seed}", *_splits_ahead(eight, four), "", ""])
    return markdown_table(["model (150 epochs)", "RMSE, mean of u1-u5", "log-prob of the discrete rating",
                           "50 % coverage", "90 % coverage"], rows)
