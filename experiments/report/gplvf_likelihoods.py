"""Generated parts of docs/gplvf/likelihoods.md: GPLVF with a likelihood per column (experiments.gplvf_movielens
``--likelihood``, experiments.gplvf_mnist ``--likelihood bernoulli``)."""

from experiments.report import fmt, generator, load, markdown_table

#: (label, result file) of the MovieLens u1 runs, one per likelihood / centring, in the order shown
MOVIELENS_RUNS = (
    ("Gaussian, ratings centred by user and item biases", "docs/gplvf/results/movielens_b_u1_gaussian_seed0.json"),
    ("Gaussian, raw ratings", "docs/gplvf/results/movielens_b_u1_gaussian_center_none_seed0.json"),
    ("Ordinal (learnt bin edges), raw ratings", "docs/gplvf/results/movielens_b_u1_ordinal_seed0.json"),
)
MNIST_FILE = "docs/gplvf/results/mnist_binary_bernoulli_e15.json"
#: (label, result file) of the u1-u5 runs (protocol (b), seed 0), one file per likelihood
MOVIELENS_SPLIT_RUNS = (
    ("Gaussian, bias-centred", "docs/gplvf/results/movielens_b_u15_gaussian_seed0.json"),
    ("Ordinal", "docs/gplvf/results/movielens_b_u15_ordinal_seed0.json"),
)
SPLIT_METRICS = ("gaussian_rmse", "gaussian_test_logprob_discrete", "gaussian_coverage_50", "gaussian_coverage_90")


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


@generator("gplvf-likelihoods-movielens-splits")
def movielens_splits_table() -> str:
    """Gaussian (bias-centred) and ordinal GPLVF on each of u1-u5 and their mean: RMSE, discrete log-probability,
    50 % / 90 % coverage, s/epoch."""
    runs = [(label, load(path)) for label, path in MOVIELENS_SPLIT_RUNS]
    splits = list(runs[0][1]["b"])
    rows = []
    for split in [*splits, "mean"]:
        for label, result in runs:
            per_split = result["b"]
            values = {key: (per_split[split][key] if split != "mean" else
                            sum(per_split[s][key] for s in splits) / len(splits))
                      for key in (*SPLIT_METRICS, "gaussian_seconds_per_epoch")}
            rows.append([split if split != "mean" else f"mean of {len(splits)}", label, fmt(values["gaussian_rmse"], 4),
                         fmt(values["gaussian_test_logprob_discrete"], 4), fmt(values["gaussian_coverage_50"], 3),
                         fmt(values["gaussian_coverage_90"], 3), fmt(values["gaussian_seconds_per_epoch"], 1)])
    return markdown_table(["split", "likelihood", "RMSE", "log-prob of the discrete rating", "50 % coverage",
                           "90 % coverage", "s/epoch (shared machine)"], rows)
