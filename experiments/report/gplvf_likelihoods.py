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
