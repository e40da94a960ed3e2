"""Generated parts of docs/gplvf/likelihoods.md on GPLVF trained both ways round on MovieLens u1-u5: users as rows
(the paper's), items as rows (the transpose) and the equally weighted mixture of the two
(experiments.gplvf_movielens ``--rows users,items``), on the validation parts of uK.base and on the test splits."""

import dataclasses

import numpy as np

from experiments.report import REPO, fmt, generator, load, markdown_table


@dataclasses.dataclass(frozen=True)
class Comparison:
    """One likelihood's incumbent (users as rows) against the rows run's candidates (items as rows, the mixture):
    result files on the validation parts (seed 0) and patterns with ``{seed}`` on the test splits."""

    name: str
    incumbent: str  # the incumbent's label
    incumbent_validation: str
    rows_validation: str
    incumbent_test: str
    rows_test: str


COMPARISONS = (
    Comparison(
        "Gaussian, bias-centred",
        "users as rows, 400 epochs",
        "docs/gplvf/results/validation/b_u15_epochs400.json",
        "docs/gplvf/results/validation/b_u15_rows_users_items.json",
        "docs/gplvf/results/movielens_b_u15_gaussian_epochs400_seed{seed}.json",
        "docs/gplvf/results/movielens_b_u15_gaussian_rows_users_items_seed{seed}.json",
    ),
    Comparison(
        "Ordinal, shared linear mean",
        "users as rows",
        "docs/gplvf/results/validation/b_u15_ordinal_shared_linear_mean.json",
        "docs/gplvf/results/validation/b_u15_ordinal_shared_linear_mean_rows_users_items.json",
        "docs/gplvf/results/movielens_b_u15_ordinal_shared_linear_mean_seed{seed}.json",
        "docs/gplvf/results/movielens_b_u15_ordinal_shared_linear_mean_rows_users_items_seed{seed}.json",
    ),
)
#: the seeds looked for on the test splits
SEEDS = (0, 1, 2, 3, 4)
#: (result-key prefix, label) of the candidates in one ``--rows users,items`` file
CANDIDATES = (("items_gaussian", "items as rows"), ("mixture_gaussian", "mixture of both ways round"))
#: (key, digits) of the measures shown
MEASURES = (("rmse", 4), ("test_logprob_discrete", 4), ("coverage_50", 3), ("coverage_90", 3))


def _seconds(run: dict, prefix: str) -> float:
    """s/epoch of a model; a mixture's is the sum of its members'."""
    if prefix.startswith("mixture_"):
        return run["gaussian_seconds_per_epoch"] + run["items_gaussian_seconds_per_epoch"]
    return run[f"{prefix}_seconds_per_epoch"]


def _means(result: dict, prefix: str) -> dict[str, float]:
    runs = list(result["b"].values())
    means = {key: float(np.mean([r[f"{prefix}_{key}"] for r in runs])) for key, _ in MEASURES}
    means["seconds"] = float(np.median([_seconds(r, prefix) for r in runs]))
    return means


def _scored(path: str, result: dict, kind: str) -> dict:
    if any(r["scored"] != kind for r in result["b"].values()):
        raise ValueError(f"{path} must be scored on the {kind} part of every split")
    return result


def _models(comparison: Comparison, kind: str, seed: int = 0) -> list[tuple[str, dict, str]]:
    """(label, result, key prefix) of the incumbent, users as rows in the rows run, and the candidates, on the
    validation parts (``kind="validation"``) or the test splits."""
    incumbent_path, rows_path = (
        (comparison.incumbent_validation, comparison.rows_validation) if kind == "validation"
        else (comparison.incumbent_test.format(seed=seed), comparison.rows_test.format(seed=seed))
    )
    incumbent, rows = (_scored(path, load(path), kind) for path in (incumbent_path, rows_path))
    return [(f"{comparison.incumbent} (the incumbent)", incumbent, "gaussian"),
            ("users as rows, in the rows run", rows, "gaussian"),
            *[(label, rows, prefix) for prefix, label in CANDIDATES]]


def seed_cells(per_seed: list[dict[str, float]]) -> list[str]:
    """One cell per measure of :data:`MEASURES`: the mean over the seeds' values, ± their sd when there are several."""
    cells = []
    for key, digits in MEASURES:
        values = [m[key] for m in per_seed]
        spread = f" ± {np.std(values, ddof=1):.{digits}f}" if len(values) > 1 else ""
        cells.append(f"{np.mean(values):.{digits}f}{spread}")
    return cells


@generator("gplvf-movielens-rows-validation")
def rows_validation_table() -> str:
    """Means over u1-u5's validation parts (seed 0) of each likelihood's incumbent, users as rows in the rows run,
    and the candidates."""
    rows = [[comparison.name, label, *[fmt(m[key], d) for key, d in MEASURES], fmt(m["seconds"], 1)]
            for comparison in COMPARISONS
            for label, result, prefix in _models(comparison, "validation")
            for m in [_means(result, prefix)]]
    return markdown_table(["likelihood", "model (150 epochs unless named)", "validation RMSE, mean",
                           "log-prob of the discrete rating", "50 % coverage", "90 % coverage",
                           "s/epoch (shared machine)"], rows)


@generator("gplvf-movielens-rows-choice")
def rows_choice() -> str:
    """Per likelihood, which candidates are better than the incumbent on both validation measures (the rule) and
    the chosen one: of those, the lowest mean validation RMSE."""
    parts = []
    for comparison in COMPARISONS:
        (_, incumbent_result, _), _, *candidates = _models(comparison, "validation")
        incumbent = _means(incumbent_result, "gaussian")
        scored = [(label, _means(result, prefix)) for label, result, prefix in candidates]
        better = [(label, m) for label, m in scored if m["rmse"] < incumbent["rmse"]
                  and m["test_logprob_discrete"] > incumbent["test_logprob_discrete"]]
        if not better:
            parts.append(f"for the {comparison.name} model no candidate is better than the incumbent on both "
                         "measures, so users as rows stays")
            continue
        label, m = min(better, key=lambda item: item[1]["rmse"])
        parts.append(f"for the {comparison.name} model the {label} is chosen (validation RMSE {fmt(m['rmse'], 4)} "
                     f"against {fmt(incumbent['rmse'], 4)}, log-probability {fmt(m['test_logprob_discrete'], 4)} "
                     f"against {fmt(incumbent['test_logprob_discrete'], 4)})")
    return "; ".join(parts)


def _test_seeds(comparison: Comparison) -> list[int]:
    return [seed for seed in SEEDS if (REPO / comparison.rows_test.format(seed=seed)).is_file()
            and (REPO / comparison.incumbent_test.format(seed=seed)).is_file()]


@generator("gplvf-movielens-rows-test")
def rows_test_table() -> str:
    """Per likelihood, means over u1-u5's test splits of the incumbent, users as rows in the rows run and the
    candidates, for every seed whose rows run is stored (mean ± sd over the seeds), and in how many (split, seed)
    runs the mixture is ahead of the incumbent on each measure."""
    rows = []
    for comparison in COMPARISONS:
        seeds = _test_seeds(comparison)
        if not seeds:
            raise FileNotFoundError(f"no test run {comparison.rows_test} with its incumbent for seeds {SEEDS}")
        by_seed = [_models(comparison, "test", seed) for seed in seeds]
        for position, (label, _, prefix) in enumerate(by_seed[0]):
            per_seed = [_means(models[position][1], prefix) for models in by_seed]
            rows.append([comparison.name, label, ", ".join(map(str, seeds)), *seed_cells(per_seed)])
        pairs = [(models[0][1]["b"][split], models[-1][1]["b"][split]) for models in by_seed
                 for split in models[0][1]["b"]]
        ahead_rmse = sum(b["mixture_gaussian_rmse"] < a["gaussian_rmse"] for a, b in pairs)
        ahead_logprob = sum(b["mixture_gaussian_test_logprob_discrete"] > a["gaussian_test_logprob_discrete"]
                            for a, b in pairs)
        rows.append([comparison.name, "(split, seed) runs where the mixture is ahead of the incumbent",
                     ", ".join(map(str, seeds)), f"{ahead_rmse} of {len(pairs)}", f"{ahead_logprob} of {len(pairs)}",
                     "", ""])
    return markdown_table(["likelihood", "model (150 epochs unless named)", "seeds", "RMSE, mean of u1-u5",
                           "log-prob of the discrete rating", "50 % coverage", "90 % coverage"], rows)


@generator("gplvf-readme-rows")
def readme_rows_sentence() -> str:
    """README: per likelihood, the mixture's and the incumbent's means over u1-u5 and the seeds run."""
    parts = []
    for comparison in COMPARISONS:
        seeds = _test_seeds(comparison)
        by_seed = [_models(comparison, "test", seed) for seed in seeds]

        def mean(position, key, by_seed=by_seed):
            label, _, prefix = by_seed[0][position]
            return float(np.mean([_means(models[position][1], prefix)[key] for models in by_seed]))

        parts.append(f"the {comparison.name} model's mixture has RMSE {fmt(mean(-1, 'rmse'), 4)} and log-probability "
                     f"{fmt(mean(-1, 'test_logprob_discrete'), 4)} against {fmt(mean(0, 'rmse'), 4)} and "
                     f"{fmt(mean(0, 'test_logprob_discrete'), 4)} for its incumbent, {comparison.incumbent} "
                     f"({'seeds' if len(seeds) > 1 else 'seed'} {', '.join(map(str, seeds))})")
    return "on MovieLens u1-u5, " + "; ".join(parts)
