"""Generated parts of docs/gplvf/likelihoods.md: GPLVF with a likelihood per column (experiments.gplvf_movielens
``--likelihood``, experiments.gplvf_mnist ``--likelihood bernoulli``)."""

import numpy as np

from experiments.report import fmt, generator, load, markdown_table

#: (label, result file) of the MovieLens u1 runs, one per likelihood / centring, in the order shown
MOVIELENS_RUNS = (
    ("Gaussian, ratings centred by user and item biases", "docs/gplvf/results/movielens_b_u1_gaussian_seed0.json"),
    ("Gaussian, raw ratings", "docs/gplvf/results/movielens_b_u1_gaussian_center_none_seed0.json"),
    ("Ordinal (learnt bin edges), raw ratings", "docs/gplvf/results/movielens_b_u1_ordinal_seed0.json"),
)
MNIST_FILE = "docs/gplvf/results/mnist_binary_bernoulli_e15.json"
#: (label, result file pattern with ``{seed}``) of the u1-u5 runs (protocol (b)), one file per likelihood and seed
MOVIELENS_SPLIT_RUNS = (
    ("Gaussian, bias-centred", "docs/gplvf/results/movielens_b_u15_gaussian_seed{seed}.json"),
    ("Ordinal", "docs/gplvf/results/movielens_b_u15_ordinal_seed{seed}.json"),
)
#: the seeds looked for; a seed is shown when every likelihood has its file
SPLIT_SEEDS = (0, 1, 2, 3, 4)
#: (label, result file pattern) of the same likelihoods on u1-u5 with a Planar 20 q(X) (``--flows-b 20``)
MOVIELENS_SPLIT_FLOW_RUNS = (
    ("Gaussian, bias-centred", "docs/gplvf/results/movielens_b_u15_gaussian_planar20_seed{seed}.json"),
    ("Ordinal", "docs/gplvf/results/movielens_b_u15_ordinal_planar20_seed{seed}.json"),
)
#: (label, result file pattern) of protocol (a) (held-out users), each file a Gaussian q(X) and Planar 20
PROTOCOL_A_RUNS = (
    ("Gaussian, bias-centred", "docs/gplvf/results/movielens_a_gaussian_seed{seed}.json"),
    ("Ordinal", "docs/gplvf/results/movielens_a_ordinal_seed{seed}.json"),
)
#: (key in a result, label) of the q(X) families of the protocol (a) runs
PROTOCOL_A_LATENTS = (("gaussian", "Gaussian"), ("planar_20", "Planar 20"))


@generator("gplvf-likelihoods-movielens")
def movielens_table() -> str:
    rows = []
    for label, path in MOVIELENS_RUNS:
        result = load(path)
        run = result["b"]["u1"]
        rows.append([
            label,
            fmt(run["gaussian_rmse"], 4),
            fmt(run["gaussian_test_logprob_discrete"], 4),
            f"{fmt(run['gaussian_coverage_50'], 3)} ({fmt(run['gaussian_width_50'], 2)})",
            f"{fmt(run['gaussian_coverage_90'], 3)} ({fmt(run['gaussian_width_90'], 2)})",
            result["config"]["epochs"],
            ", ".join(str(s) for s in result["provenance"]["seeds"]),
            fmt(run["gaussian_seconds_per_epoch"], 1),
        ])
    return markdown_table(
        ["model (q(X) Gaussian)", "RMSE", "log-prob of the discrete rating", "50 % interval coverage (mean width, rating values)",
         "90 % interval coverage (mean width)", "epochs", "seeds", "s/epoch (shared machine)"], rows)


@generator("gplvf-likelihoods-mnist")
def mnist_table() -> str:
    result = load(MNIST_FILE)
    rows = [["mean imputation (pixel's observed mean)", fmt(result["mean_imputation_accuracy"], 4),
             fmt(result["mean_imputation_loglik"], 4), "-"]]
    for label, key in (("GPLVF, Gaussian likelihood", "gaussian"), ("GPLVF, Bernoulli likelihood", "bernoulli")):
        rows.append([label, fmt(result[f"{key}_accuracy"], 4), fmt(result[f"{key}_loglik"], 4),
                     fmt(result[f"{key}_seconds_per_epoch"], 1)])
    return markdown_table(["method", "accuracy on the missing pixels", "log-likelihood per missing pixel",
                           "s/epoch (shared machine)"], rows)


def _split_seeds(runs=MOVIELENS_SPLIT_RUNS) -> list[int]:
    """The seeds of :data:`SPLIT_SEEDS` whose file exists for every (label, pattern) of ``runs``."""
    from experiments.report import REPO

    return [seed for seed in SPLIT_SEEDS if all((REPO / pattern.format(seed=seed)).is_file() for _, pattern in runs)]


def _mean_and_sd(values: list[float], digits: int) -> str:
    """``mean`` for one value, ``mean ± sd`` (sample standard deviation over seeds) for several."""
    if len(values) == 1:
        return fmt(values[0], digits)
    return f"{fmt(float(np.mean(values)), digits)} ± {fmt(float(np.std(values, ddof=1)), digits)}"


def _signed_mean_and_sd(values: list[float], digits: int) -> str:
    """:func:`_mean_and_sd` of differences, the mean with its sign."""
    mean = f"{float(np.mean(values)):+.{digits}f}"
    return mean if len(values) == 1 else f"{mean} ± {fmt(float(np.std(values, ddof=1)), digits)}"


@generator("gplvf-likelihoods-movielens-splits")
def movielens_splits_table() -> str:
    """Gaussian (bias-centred) and ordinal GPLVF on each of u1-u5 and their mean: RMSE, discrete log-probability,
    50 % / 90 % coverage, s/epoch; each a mean ± sd over the seeds run (every likelihood's files for a seed)."""
    seeds = _split_seeds()
    runs = [(label, [load(pattern.format(seed=seed)) for seed in seeds]) for label, pattern in MOVIELENS_SPLIT_RUNS]
    splits = list(runs[0][1][0]["b"])
    rows = []
    for split in [*splits, "mean"]:
        for label, results in runs:
            def per_seed(key, results=results, split=split):
                if split != "mean":
                    return [r["b"][split][key] for r in results]
                return [sum(r["b"][s][key] for s in splits) / len(splits) for r in results]

            rows.append([split if split != "mean" else f"mean of {len(splits)}", label,
                         _mean_and_sd(per_seed("gaussian_rmse"), 4),
                         _mean_and_sd(per_seed("gaussian_test_logprob_discrete"), 4),
                         _mean_and_sd(per_seed("gaussian_coverage_50"), 3),
                         _mean_and_sd(per_seed("gaussian_coverage_90"), 3),
                         fmt(float(np.median(per_seed("gaussian_seconds_per_epoch"))), 1)])
    return markdown_table(["split", "likelihood", f"RMSE (seeds {', '.join(map(str, seeds))})",
                           "log-prob of the discrete rating", "50 % coverage", "90 % coverage",
                           "s/epoch, median over seeds (shared machine)"], rows)


@generator("gplvf-likelihoods-movielens-splits-verdict")
def movielens_splits_verdict() -> str:
    """On how many splits (means over the seeds run) the first likelihood of :data:`MOVIELENS_SPLIT_RUNS` has the
    lower RMSE and the higher discrete log-probability, and in how many (split, seed) runs."""
    seeds = _split_seeds()
    (first, first_pattern), (second, second_pattern) = MOVIELENS_SPLIT_RUNS
    a = [load(first_pattern.format(seed=seed))["b"] for seed in seeds]
    b = [load(second_pattern.format(seed=seed))["b"] for seed in seeds]
    splits = list(a[0])

    def better(x, y):  # lower RMSE and higher log-probability
        return (x["gaussian_rmse"] < y["gaussian_rmse"]
                and x["gaussian_test_logprob_discrete"] > y["gaussian_test_logprob_discrete"])

    def mean(runs, split, key):
        return float(np.mean([r[split][key] for r in runs]))

    keys = ("gaussian_rmse", "gaussian_test_logprob_discrete")
    on_means = sum(better({k: mean(a, s, k) for k in keys}, {k: mean(b, s, k) for k in keys}) for s in splits)
    on_runs = sum(better(x[s], y[s]) for x, y in zip(a, b) for s in splits)
    return (f"the {first} model has both the lower RMSE and the higher log-probability of the discrete rating on "
            f"{on_means} of the {len(splits)} splits (means over seeds {', '.join(map(str, seeds))}) and in "
            f"{on_runs} of the {len(splits) * len(seeds)} (split, seed) runs")


def _mean_over_splits(result: dict, key: str) -> float:
    """A protocol (b) result's ``key`` averaged over its splits."""
    return float(np.mean([row[key] for row in result["b"].values()]))


@generator("gplvf-likelihoods-movielens-splits-flows")
def movielens_splits_flows_table() -> str:
    """Per likelihood, the mean over u1-u5 of a Gaussian q(X) (the seeds of the table above) and of a Planar 20
    q(X) (the seeds that likelihood was run with ``--flows-b 20``), and Planar 20 - Gaussian paired by seed."""
    plain_seeds = _split_seeds()
    keys = (("rmse", 4), ("test_logprob_discrete", 4), ("coverage_50", 3), ("coverage_90", 3))
    rows = []
    for (label, plain), (_, flowed) in zip(MOVIELENS_SPLIT_RUNS, MOVIELENS_SPLIT_FLOW_RUNS):
        flow_seeds = _split_seeds(((label, flowed),))  # each likelihood's own Planar 20 seeds
        plain_runs = {seed: load(plain.format(seed=seed)) for seed in plain_seeds}
        flow_runs = {seed: load(flowed.format(seed=seed)) for seed in flow_seeds}
        for name, runs, seeds in (("Gaussian", plain_runs, plain_seeds), ("Planar 20", flow_runs, flow_seeds)):
            prefix = "gaussian" if name == "Gaussian" else "planar_20"
            rows.append([label, name, ", ".join(map(str, seeds)) or "-",
                         *[_mean_and_sd([_mean_over_splits(runs[s], f"{prefix}_{k}") for s in seeds], d)
                           if seeds else "-" for k, d in keys],
                         fmt(float(np.median([_mean_over_splits(runs[s], f"{prefix}_seconds_per_epoch")
                                              for s in seeds])), 1) if seeds else "-"])
        paired = [s for s in flow_seeds if s in plain_runs]
        rows.append([label, "Planar 20 − Gaussian, same seed", ", ".join(map(str, paired)) or "-",
                     *[_signed_mean_and_sd([_mean_over_splits(flow_runs[s], f"planar_20_{k}")
                                     - _mean_over_splits(plain_runs[s], f"gaussian_{k}") for s in paired], d)
                       if paired else "-" for k, d in keys], ""])
    return markdown_table(["likelihood", "q(X)", "seeds", "RMSE, mean of u1-u5", "log-prob of the discrete rating",
                           "50 % coverage", "90 % coverage", "s/epoch, median over seeds (shared machine)"], rows)


@generator("gplvf-likelihoods-movielens-a")
def movielens_protocol_a_table() -> str:
    """Protocol (a), held-out users: per likelihood and q(X), mean ± sd over the seeds every likelihood has."""
    seeds = _split_seeds(PROTOCOL_A_RUNS)
    rows = []
    for label, pattern in PROTOCOL_A_RUNS:
        results = [load(pattern.format(seed=seed))["a"] for seed in seeds]
        for key, name in PROTOCOL_A_LATENTS:
            runs = [r[key] for r in results]
            rows.append([label, name, _mean_and_sd([r["rmse"] for r in runs], 4),
                         _mean_and_sd([r["test_logprob_discrete"] for r in runs], 4),
                         f"{_mean_and_sd([r['coverage_50'] for r in runs], 3)} "
                         f"({fmt(float(np.mean([r['width_50'] for r in runs])), 2)})",
                         f"{_mean_and_sd([r['coverage_90'] for r in runs], 3)} "
                         f"({fmt(float(np.mean([r['width_90'] for r in runs])), 2)})",
                         fmt(float(np.median([r["seconds_per_epoch"] for r in runs])), 2),
                         fmt(float(np.median([r["infer_seconds"] for r in runs])), 0)])
    baseline = [load(PROTOCOL_A_RUNS[0][1].format(seed=seed))["a"]["bias_baseline"]["rmse"] for seed in seeds]
    rows.append(["user and item biases (regularised least squares)", "-", _mean_and_sd(baseline, 4), "-", "-", "-",
                 "-", "-"])
    return markdown_table(["likelihood", "q(X)", f"RMSE (seeds {', '.join(map(str, seeds))})",
                           "log-prob of the discrete rating", "50 % coverage (mean width)", "90 % coverage (mean width)",
                           "s/epoch, median (shared machine)", "q(x*) fit s, median"], rows)


@generator("gplvf-likelihoods-movielens-a-verdict")
def movielens_protocol_a_verdict() -> str:
    """Seed by seed in protocol (a): which likelihood has the lower RMSE and the higher discrete log-probability,
    and whether Planar 20 beats the Gaussian q(X) on both for each likelihood."""
    seeds = _split_seeds(PROTOCOL_A_RUNS)
    (first, first_pattern), (second, second_pattern) = PROTOCOL_A_RUNS
    a = [load(first_pattern.format(seed=seed))["a"] for seed in seeds]
    b = [load(second_pattern.format(seed=seed))["a"] for seed in seeds]
    parts = []
    for key, name in PROTOCOL_A_LATENTS:
        lower = sum(x[key]["rmse"] < y[key]["rmse"] for x, y in zip(a, b))
        higher = sum(x[key]["test_logprob_discrete"] > y[key]["test_logprob_discrete"] for x, y in zip(a, b))
        parts.append(f"with a {name} q(X) the {first} model has the lower RMSE in {lower} and the higher "
                     f"log-probability of the discrete rating in {higher} of the {len(seeds)} seeds")
    for label, results in ((first, a), (second, b)):
        both = sum(r["planar_20"]["rmse"] < r["gaussian"]["rmse"]
                   and r["planar_20"]["test_logprob_discrete"] > r["gaussian"]["test_logprob_discrete"] for r in results)
        d_rmse = np.mean([r["planar_20"]["rmse"] - r["gaussian"]["rmse"] for r in results])
        d_logprob = np.mean([r["planar_20"]["test_logprob_discrete"] - r["gaussian"]["test_logprob_discrete"]
                             for r in results])
        parts.append(f"Planar 20 improves both on the Gaussian q(X) of the {label} model in {both} of the "
                     f"{len(seeds)} seeds (mean paired change: RMSE {d_rmse:+.4f}, log-probability {d_logprob:+.4f})")
    return "; ".join(parts)


#: (label, result file) of the candidates scored on the validation part of each uK.base (``--validation-fraction``)
VALIDATION_RUNS = (
    ("Gaussian, bias-centred (the defaults)", "docs/gplvf/results/validation/b_u15_defaults.json"),
    ("Gaussian, bias-centred, Q = 20", "docs/gplvf/results/validation/b_u15_q20.json"),
    ("Gaussian, bias-centred, shared linear mean", "docs/gplvf/results/validation/b_u15_shared_linear_mean.json"),
    ("Ordinal", "docs/gplvf/results/validation/b_u15_ordinal.json"),
    ("Ordinal, shared linear mean", "docs/gplvf/results/validation/b_u15_ordinal_shared_linear_mean.json"),
    ("Gaussian, bias-centred, 400 epochs", "docs/gplvf/results/validation/b_u15_epochs400.json"),
    ("Gaussian, bias-centred, M = 50 inducing inputs", "docs/gplvf/results/validation/b_u15_m50.json"),
    ("Ordinal, shared linear mean, 400 epochs",
     "docs/gplvf/results/validation/b_u15_ordinal_shared_linear_mean_epochs400.json"),
)


def _validation_means() -> dict[str, dict[str, float]]:
    """Per candidate whose file exists: its means over the splits' validation parts (the files must say so)."""
    from experiments.report import REPO

    means = {}
    for label, path in VALIDATION_RUNS:
        if not (REPO / path).is_file():
            continue
        runs = list(load(path)["b"].values())
        if any(r["scored"] != "validation" for r in runs):
            raise ValueError(f"{path} scores a test split, not the validation part of uK.base")
        keys = ("gaussian_rmse", "gaussian_test_logprob_discrete", "gaussian_coverage_90", "bias_rmse")
        means[label] = {key: float(np.mean([r[key] for r in runs])) for key in keys}
        means[label].update(splits=len(runs), min_rmse=min(r["gaussian_rmse"] for r in runs),
                            max_rmse=max(r["gaussian_rmse"] for r in runs),
                            seconds=float(np.median([r["gaussian_seconds_per_epoch"] for r in runs])))
    return means


@generator("gplvf-movielens-b-validation")
def movielens_validation_table() -> str:
    """Each candidate on the validation part of u1-u5's uK.base (one seed): means over the splits."""
    rows = [[label, m["splits"], fmt(m["gaussian_rmse"], 4), f"{fmt(m['min_rmse'], 4)} to {fmt(m['max_rmse'], 4)}",
             fmt(m["gaussian_test_logprob_discrete"], 4), fmt(m["gaussian_coverage_90"], 3), fmt(m["bias_rmse"], 4),
             fmt(m["seconds"], 1)] for label, m in _validation_means().items()]
    return markdown_table(["candidate (q(X) Gaussian)", "splits", "validation RMSE, mean", "range over splits",
                           "log-prob of the discrete rating, mean", "90 % coverage", "bias baseline RMSE",
                           "s/epoch (shared machine)"], rows)


@generator("gplvf-movielens-b-validation-choice")
def movielens_validation_choice() -> str:
    """The candidates with the lowest mean validation RMSE and the highest mean discrete log-probability, and
    which candidates are better than the defaults on both (the rule: only those would replace the defaults)."""
    means = _validation_means()
    by_rmse = min(means, key=lambda label: means[label]["gaussian_rmse"])
    by_logprob = max(means, key=lambda label: means[label]["gaussian_test_logprob_discrete"])
    default = means[VALIDATION_RUNS[0][0]]
    both = [label for label, m in means.items() if m["gaussian_rmse"] < default["gaussian_rmse"]
            and m["gaussian_test_logprob_discrete"] > default["gaussian_test_logprob_discrete"]]
    verdict = (f"better than the defaults on both: {', '.join(both)}" if both
               else "no candidate is better than the defaults on both, so the defaults stay")
    return (f"of the {len(means)} candidates scored, the lowest mean validation RMSE is that of {by_rmse} "
            f"({fmt(means[by_rmse]['gaussian_rmse'], 4)}; the defaults {fmt(default['gaussian_rmse'], 4)}) and the "
            f"highest mean log-probability of the discrete rating that of {by_logprob} "
            f"({fmt(means[by_logprob]['gaussian_test_logprob_discrete'], 4)}; the defaults "
            f"{fmt(default['gaussian_test_logprob_discrete'], 4)}); {verdict}")


#: (label, result file) of a validation candidate run on u1-u5's test splits, one seed
CANDIDATE_TEST_RUNS = (
    ("Ordinal, shared linear mean", "docs/gplvf/results/movielens_b_u15_ordinal_shared_linear_mean_seed0.json"),
)


@generator("gplvf-likelihoods-movielens-candidate-test")
def movielens_candidate_test_table() -> str:
    """Per split and as the mean of u1-u5: the candidate's test run beside the seed-0 runs of the two likelihoods."""
    return _per_split_table([*[(label, pattern.format(seed=0)) for label, pattern in MOVIELENS_SPLIT_RUNS],
                             *CANDIDATE_TEST_RUNS])


#: the defaults and the setting the validation parts chose over them, on u1-u5's test splits (pattern with ``{seed}``)
EPOCHS_SEED_RUNS = (
    MOVIELENS_SPLIT_RUNS[0],
    ("Gaussian, bias-centred, 400 epochs", "docs/gplvf/results/movielens_b_u15_gaussian_epochs400_seed{seed}.json"),
)


@generator("gplvf-likelihoods-movielens-epochs-test")
def movielens_epochs_test_table() -> str:
    """Per split and as the mean of u1-u5: 400 epochs beside the defaults' seed-0 run on the test splits."""
    return _per_split_table([(label, pattern.format(seed=0)) for label, pattern in EPOCHS_SEED_RUNS])


@generator("gplvf-likelihoods-movielens-epochs-seeds")
def movielens_epochs_seeds_table() -> str:
    """Means over u1-u5 of the defaults and of 400 epochs for every seed both were run with (mean ± sd over those
    seeds), the paired difference, and in how many (split, seed) runs 400 epochs is ahead on each measure."""
    seeds = _split_seeds(EPOCHS_SEED_RUNS)
    (label, plain), (epochs_label, longer) = [
        (label, {seed: load(pattern.format(seed=seed)) for seed in seeds}) for label, pattern in EPOCHS_SEED_RUNS
    ]
    # (key, digits, +1 where higher is better / -1 where lower is better / 0: not counted)
    keys = (("gaussian_rmse", 4, -1), ("gaussian_test_logprob_discrete", 4, 1), ("gaussian_coverage_50", 3, 0),
            ("gaussian_coverage_90", 3, 0))
    rows = [[name, ", ".join(map(str, seeds)),
             *[_mean_and_sd([_mean_over_splits(runs[s], key) for s in seeds], d) for key, d, _ in keys]]
            for name, runs in ((label, plain), (epochs_label, longer))]
    rows.append([f"{epochs_label} − {label}, same seed", ", ".join(map(str, seeds)),
                 *[_signed_mean_and_sd([_mean_over_splits(longer[s], key) - _mean_over_splits(plain[s], key)
                                        for s in seeds], d) for key, d, _ in keys]])
    splits = list(plain[seeds[0]]["b"])
    ahead = [f"{sum(sign * (longer[s]['b'][split][key] - plain[s]['b'][split][key]) > 0 for s in seeds for split in splits)}"
             f" of {len(seeds) * len(splits)}" if sign else "" for key, _, sign in keys]
    rows.append(["(split, seed) runs where 400 epochs is ahead", ", ".join(map(str, seeds)), *ahead])
    return markdown_table(["model (q(X) Gaussian)", "seeds", "RMSE, mean of u1-u5", "log-prob of the discrete rating",
                           "50 % coverage", "90 % coverage"], rows)


def _per_split_table(models: list[tuple[str, str]]) -> str:
    """Each (label, result file) of protocol (b) on every split and as the mean of the splits."""
    runs = [(label, load(path)) for label, path in models]
    splits = list(runs[0][1]["b"])
    rows = []
    for split in [*splits, "mean"]:
        for label, result in runs:
            def value(key, result=result, split=split):
                if split != "mean":
                    return result["b"][split][key]
                return float(np.mean([result["b"][s][key] for s in splits]))

            rows.append([split if split != "mean" else f"mean of {len(splits)}", label, fmt(value("gaussian_rmse"), 4),
                         fmt(value("gaussian_test_logprob_discrete"), 4), fmt(value("gaussian_coverage_50"), 3),
                         fmt(value("gaussian_coverage_90"), 3), fmt(value("gaussian_seconds_per_epoch"), 1)])
    return markdown_table(["split", "model (q(X) Gaussian, seed 0)", "RMSE", "log-prob of the discrete rating",
                           "50 % coverage", "90 % coverage", "s/epoch (shared machine)"], rows)


#: (label, result file pattern with ``{seed}``) of the same candidate on u1-u5's test splits over seeds
CANDIDATE_SEED_RUNS = (
    ("Ordinal, shared linear mean", "docs/gplvf/results/movielens_b_u15_ordinal_shared_linear_mean_seed{seed}.json"),
)


def _candidate_seed_runs() -> tuple[list[int], list[tuple[str, dict[int, dict]]]]:
    """The seeds with a file for the candidate and both likelihoods of :data:`MOVIELENS_SPLIT_RUNS`, and per model
    its results by seed (the two likelihoods first)."""
    seeds = _split_seeds((*MOVIELENS_SPLIT_RUNS, *CANDIDATE_SEED_RUNS))
    models = [*MOVIELENS_SPLIT_RUNS, *CANDIDATE_SEED_RUNS]
    return seeds, [(label, {seed: load(pattern.format(seed=seed)) for seed in seeds}) for label, pattern in models]


@generator("gplvf-likelihoods-movielens-candidate-seeds")
def movielens_candidate_seeds_table() -> str:
    """Means over u1-u5 of each model for every seed the candidate was run with (mean ± sd over those seeds), and
    the candidate minus the bias-centred Gaussian model, paired by seed."""
    seeds, models = _candidate_seed_runs()
    keys = (("gaussian_rmse", 4), ("gaussian_test_logprob_discrete", 4), ("gaussian_coverage_50", 3),
            ("gaussian_coverage_90", 3))
    rows = [[label, ", ".join(map(str, seeds)),
             *[_mean_and_sd([_mean_over_splits(runs[s], key) for s in seeds], d) for key, d in keys]]
            for label, runs in models]
    (gaussian, plain), (candidate, runs) = models[0], models[-1]
    rows.append([f"{candidate} − {gaussian}, same seed", ", ".join(map(str, seeds)),
                 *[_signed_mean_and_sd([_mean_over_splits(runs[s], key) - _mean_over_splits(plain[s], key)
                                        for s in seeds], d) for key, d in keys]])
    return markdown_table(["model (q(X) Gaussian)", "seeds", "RMSE, mean of u1-u5", "log-prob of the discrete rating",
                           "50 % coverage", "90 % coverage"], rows)


@generator("gplvf-likelihoods-movielens-candidate-seeds-verdict")
def movielens_candidate_seeds_verdict() -> str:
    """In how many (split, seed) runs the candidate has the highest discrete log-probability and the lowest RMSE
    of the models in :func:`movielens_candidate_seeds_table`."""
    seeds, models = _candidate_seed_runs()
    candidate, runs = models[-1]
    splits = list(runs[seeds[0]]["b"])
    total = len(splits) * len(seeds)

    def count(key, best):
        return sum(runs[s]["b"][split][key] == best(m[s]["b"][split][key] for _, m in models)
                   for s in seeds for split in splits)

    return (f"over seeds {', '.join(map(str, seeds))}, the {candidate} model has the highest log-probability of the "
            f"discrete rating in {count('gaussian_test_logprob_discrete', max)} of the {total} (split, seed) runs "
            f"and the lowest RMSE in {count('gaussian_rmse', min)} of them")


@generator("gplvf-readme-likelihoods")
def readme_likelihoods_sentence() -> str:
    """README: the candidate's and the bias-centred Gaussian model's means over u1-u5 and seeds."""
    seeds, models = _candidate_seed_runs()
    plain, runs = models[0][1], models[-1][1]

    def mean(results, key):
        return float(np.mean([_mean_over_splits(results[s], key) for s in seeds]))

    return (f"on MovieLens u1-u5 (seeds {', '.join(map(str, seeds))}), the log-probability of the held-out discrete "
            f"rating is {fmt(mean(runs, 'gaussian_test_logprob_discrete'), 4)} with the ordinal likelihood and a "
            f"shared linear mean against {fmt(mean(plain, 'gaussian_test_logprob_discrete'), 4)} with the bias-centred "
            f"Gaussian model, at RMSE {fmt(mean(runs, 'gaussian_rmse'), 4)} against "
            f"{fmt(mean(plain, 'gaussian_rmse'), 4)}")
