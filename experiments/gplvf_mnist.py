"""GPLVF on MNIST with 40 % of the pixels missing (paper Section 4.1, Figures 1-3).

5 000 MNIST training digits (the ``5k`` subset: 500 per class) average-pooled to 14x14, each pixel missing at
random with probability 0.4, a 2-D latent space. A Gaussian q(X) and a planar-flow q(X) are trained on the same
data (``gpflow_ext.recipes.gplvf_images.run_imputation``); the script writes Figure 1 (the latent density q(x_n)
of one digit under both), Figure 2 (digits decoded from samples of both) and Figure 3 (true digit, its input
with missing pixels, decoded samples) as PNG (``--figure-dir``) and TensorBoard images (``--logdir``), and prints
the imputation RMSE of the missing pixels beside mean imputation.

    python -m experiments.gplvf_mnist --figure-dir figures --output results/gplvf_mnist.json

``--likelihood bernoulli``: the pixels binarised at 1/2 instead; a Gaussian GPLVF, a Bernoulli GPLVF (both with a
Gaussian q(X)) and mean imputation, judged by the accuracy and the mean log-likelihood of the missing pixels
(``gpflow_ext.recipes.gplvf_images.run_binary_imputation``; no flow, no figures), e.g. with half the pixels
missing: ``--likelihood bernoulli --missing-fraction 0.5``.
"""
import experiments.quiet  # noqa: F401  (first: TensorFlow's log lines off before it is imported)

from experiments.common import (
    add_dataclass_arguments,
    add_planar_constraint_argument,
    arguments_record,
    as_builtin,
    base_parser,
    config_from_args,
    planar_identity_at_zero,
    print_table,
    write_results,
)
from gpflow_ext.recipes.gplvf_images import ImputationConfig, run_binary_imputation, run_imputation

#: ``{ImputationConfig field: flag}`` (defaults: the dataclass's)
FLAGS = {name: "--" + name.replace("_", "-") for name in (
    "flow_length", "num_inducing", "batch_size", "learning_rate", "flow_learning_rate", "missing_fraction",
    "likelihood")}
FLAG_HELP = {"likelihood": "gaussian: the paper's imputation of grey levels; bernoulli: binarised pixels, Gaussian vs "
                           "Bernoulli GPLVF vs mean imputation (accuracy and log-likelihood of the missing pixels)",
             "flow_learning_rate": "Adam learning rate of the flow's shared parameters (pass the --learning-rate "
                                   "value to share one rate, as before 2026-11-25)"}
#: ``--smoke``: digits kept and epochs unless ``--epochs`` is given
SMOKE = dict(num_digits=200, epochs=2)


def main(argv=None):
    parser = base_parser(__doc__.split("\n")[0], progress=True, figure_dir=True,
                         smoke=f"{SMOKE['num_digits']} digits, {SMOKE['epochs']} epochs")
    parser.add_argument("--num-digits", type=int, default=5000)
    add_dataclass_arguments(parser, ImputationConfig, FLAGS, help=FLAG_HELP,
                            choices={"likelihood": ("gaussian", "bernoulli")})
    add_planar_constraint_argument(parser)
    args = parser.parse_args(argv)
    from gpflow_ext.data import load_mnist

    images, labels = load_mnist(args.data_dir, subset="5k", size=14, download=False)
    images = images.reshape(images.shape[0], -1) / 255.0  # [N, 196] in [0, 1]
    num = min(SMOKE["num_digits"] if args.smoke else args.num_digits, images.shape[0])
    images = images[:num]
    epochs = args.epochs if args.epochs is not None else (SMOKE["epochs"] if args.smoke else 200)
    config = ImputationConfig(**config_from_args(
        ImputationConfig, args, FLAGS, side=14, latent_dim=2, epochs=epochs,
        identity_at_zero=planar_identity_at_zero(args), seed=args.seed, figure_dir=args.figure_dir,
        logdir=args.logdir, progress=not args.no_progress,
    ))
    if config.likelihood == "bernoulli":
        results = run_binary_imputation(images, config)
        results.update(epochs=epochs, config=arguments_record(args))
        print_table(
            [{"method": label, "accuracy": results[f"{key}_accuracy"], "log-likelihood": results[f"{key}_loglik"]}
             for key, label in (("mean_imputation", "mean imputation"), ("gaussian", "GPLVF Gaussian likelihood"),
                                ("bernoulli", "GPLVF Bernoulli likelihood"))],
            ["method", "accuracy", "log-likelihood"],
            title=f"binarised MNIST 14x14, {num} digits, {results['missing_fraction']:.0%} pixels missing, Q=2: "
                  "missing pixels",
        )
        write_results(as_builtin(results), args.output, seeds=[args.seed])
        return results
    results = run_imputation(images, config)
    results["epochs"] = epochs
    results["config"] = arguments_record(args)
    print_table(
        [{"method": "mean imputation", "RMSE": results["mean_imputation_rmse"]},
         {"method": "GPLVF Gaussian q(X)", "RMSE": results["gaussian_imputation_rmse"]},
         {"method": f"GPLVF planar-{args.flow_length} q(X)", "RMSE": results["flow_imputation_rmse"]}],
        ["method", "RMSE"],
        title=f"MNIST 14x14, {num} digits, {results['missing_fraction']:.0%} pixels missing, Q=2: imputation RMSE",
    )
    write_results(as_builtin(results), args.output, seeds=[args.seed])
    return results


if __name__ == "__main__":
    main()
