"""GPLVF's planar flows judged on held-out ratings: calibration, q(x) widths and variance sources per flow length.

For each seed, each protocol and each flow length (0 = Gaussian q(X)) one GPLVF is trained at the defaults of
``experiments/gplvf_movielens.py`` (``GPLVFTraining()``: Q = 10, M = 20, batch 64, 150 epochs of Adam 0.01
cosine-decayed, the flow at 1e-3, bias-centred ratings; q(x*) of held-out users by 1 000 cosine-decayed steps of
8 draws) and scored with ``gpflow_ext.recipes.gplvf_diagnosis``:

* ``a``: protocol (a) of gplvf_movielens (the last 100 user ids held out, q(x*) conditioned on half of each
  held-out user's ratings chosen with the seed, the other half predicted);
* ``b1`` (``bK``): the uK.base -> uK.test split (the rows' own q(x_n) predict their test ratings).

Per run: the training bound (the fit's last epoch, and its terms on all rows with 10 draws), held-out RMSE,
eq. 33 log-likelihood per rating (``test_loglik``) and the per-rating marginal log density, coverage of the
central 50 % and 90 % intervals of the predictive mixture (exact CDF of the 50-draw mixture; the moment-matched
Gaussian's beside it), the predictive variance split into noise, GP and latent parts, the learnt noise variance,
the widths of q(x_n) of the training rows and of the held-out rows (log det, raw and in lengthscale units), the
same calibration on the training entries of ``--train-rows`` training rows (in-sample), and s/epoch. The results
file is rewritten after every run; ``--figure-dir`` gets ``gplvf_flows_heldout.png`` (held-out log-likelihood and
bound against flow length, one line per seed; ``--plot-only`` draws it from ``--output`` without training).

``--resume`` keeps the runs already in ``--output`` and runs only the missing (protocol, seed, flow length)s.
``--smoke``: the 60 most active users x 80 most rated items, 1 epoch, small Q and M (for the tests).
"""
import argparse
import dataclasses
import time
from pathlib import Path

import experiments.quiet  # noqa: F401  (first: TensorFlow's log lines off before it is imported)

import numpy as np
import scipy.sparse as sp

from experiments.common import arguments_record, base_parser, print_table, write_results
from gpflow_ext.data import load_movielens
from gpflow_ext.data.movielens import ratings_matrix
from gpflow_ext.recipes.gplvf import GPLVFTraining, kernel_lengthscales
from gpflow_ext.recipes.gplvf_diagnosis import bound_terms, latent_widths, noise_variance, predictive_measures
from gpflow_ext.recipes.movielens import NewRowsSettings, evaluate_at, flow_name
from gpflow_ext.recipes.movielens_data import (
    SMALL_ITEMS,
    SMALL_USERS,
    centre,
    dense_with_nan,
    small_slice,
    split_rows,
    split_users,
    subtract_biases,
)
from gpflow_ext.results import read_results


def parse_ints(text: str, what: str, minimum: int = 0) -> list[int]:
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{what} must be comma-separated integers, got {text!r}") from None
    if not values or min(values) < minimum:
        raise argparse.ArgumentTypeError(f"{what} must be integers >= {minimum}, got {text!r}")
    return values


def parse_protocols(text: str) -> list[str]:
    names = [p.strip() for p in text.split(",") if p.strip()]
    bad = [p for p in names if p != "a" and not (p[:1] == "b" and p[1:] in ("1", "2", "3", "4", "5"))]
    if not names or bad:
        raise argparse.ArgumentTypeError(f"protocols must be 'a' and/or b1..b5 (split uK), got {text!r}")
    return names


def build_parser():
    parser = base_parser(__doc__.split("\n")[0], figure_dir=True,
                         smoke=f"the {SMALL_USERS} most active users x {SMALL_ITEMS} most rated items, 1 epoch")
    parser.add_argument("--flows", type=lambda t: parse_ints(t, "flow lengths"), default=[0, 5, 20, 50],
                        help="planar flow lengths, 0 = Gaussian q(X)")
    parser.add_argument("--seeds", type=lambda t: parse_ints(t, "seeds"), default=[0, 1, 2],
                        help="training seeds (in (a) also the conditioning halves)")
    parser.add_argument("--protocols", type=parse_protocols, default=["a", "b1"],
                        help="'a' (held-out users) and/or bK (uK.base -> uK.test)")
    parser.add_argument("--predict-samples", type=int, default=50, help="draws of x* ~ q(x*) per prediction")
    parser.add_argument("--infer-steps", type=int, default=1000, help="(a) steps of the q(x*) fit")
    parser.add_argument("--train-rows", type=int, default=100,
                        help="training rows (drawn with the seed) scored in-sample on their training entries")
    parser.add_argument("--resume", action="store_true",
                        help="keep every run already in --output (same settings) and run only the missing ones")
    parser.add_argument("--plot-only", action="store_true",
                        help="train nothing: draw the figure of the runs in --output into --figure-dir")
    parser.set_defaults(seed=None)
    return parser


def protocol_data(ratings, name: str, seed: int, args):
    """(GPLVF's training matrix, held-out rows' conditioning part or None, target, biases) of one protocol."""
    if name == "a":
        data = small_slice(ratings) if args.smoke else ratings
        train_users, heldout, rng = split_users(data.shape[0], 15 if args.smoke else 100, seed, test_users="last")
        observed, target = split_rows(data[heldout], 0.5, rng)
        model_train, model_observed, biases = centre(data[train_users], observed, "bias")
        return model_train, model_observed, target, biases
    split = load_movielens(args.data_dir, split=f"u{name[1:]}", download=False)
    train, test = ratings_matrix(split.train), ratings_matrix(split.test)
    if args.smoke:  # the slice of gplvf_movielens --smoke
        items = np.sort(np.argsort(-np.diff(ratings.tocsc().indptr))[:SMALL_ITEMS])
        users = np.sort(np.argsort(-np.diff(ratings[:, items].tocsr().indptr))[:SMALL_USERS])
        train, test = train[users][:, items], test[users][:, items]
    nonempty = np.diff(train.indptr) > 0
    model_train, _, biases = centre(sp.csr_matrix(train[nonempty]), None, "bias")
    return model_train, None, sp.csr_matrix(test[nonempty]), biases


def one_run(ratings, name: str, seed: int, flow_length: int, args) -> dict:
    model_train, model_observed, target, biases = protocol_data(ratings, name, seed, args)
    training = GPLVFTraining(seed=seed, epochs=args.epochs, **({"latent_dim": 3, "num_inducing": 10} if args.smoke
                                                                 else {}))
    settings = NewRowsSettings(training=training, seed=seed, infer_steps=args.infer_steps)
    start = time.time()
    model, history = training.train(model_train, flow_length)
    train_mean, train_var = model.training_latents()
    if model_observed is None:  # the rows' own q(x_n)
        x_mean, x_var = train_mean, train_var
    else:
        x_mean, x_var = settings.infer(model, model_observed)
    samples = args.predict_samples
    row = evaluate_at(model, x_mean, x_var, target, samples, seed, biases=biases)
    has_target = np.diff(sp.csr_matrix(target).indptr) > 0
    model_target = subtract_biases(target, *biases)[has_target]
    row["heldout"] = predictive_measures(model, dense_with_nan(model_target), x_mean[has_target],
                                         x_var[has_target], num_samples=samples, seed=seed)
    rows = np.sort(np.random.default_rng(seed).permutation(model_train.shape[0])[: args.train_rows])
    row["train"] = predictive_measures(model, dense_with_nan(model_train[rows]), train_mean[rows], train_var[rows],
                                       num_samples=samples, seed=seed)
    scale = kernel_lengthscales(model.kernel)
    row["widths_train"] = latent_widths(model.flow, train_mean, train_var, scale=scale, seed=seed)
    row["widths_heldout"] = latent_widths(model.flow, x_mean[has_target], x_var[has_target], scale=scale, seed=seed)
    row["bound"] = bound_terms(model, seed=seed)
    row.update(
        protocol=name, seed=seed, flow_length=flow_length, q=flow_name(flow_length),
        final_elbo=-history.final_objective, noise_variance=noise_variance(model),
        seconds_per_epoch=history.median_seconds_per_epoch(), epochs=len(history.epochs),
        kernel_variance=float(model.kernel.variance.numpy()) if hasattr(model.kernel, "variance") else None,
        lengthscales=None if scale is None else [float(v) for v in scale],
        num_train_rows=int(model_train.shape[0]), total_seconds=time.time() - start,
        training=dataclasses.asdict(training),
    )
    return row


def summary(runs: list[dict]) -> None:
    table = [{"protocol": r["protocol"], "seed": r["seed"], "q": r["q"], "elbo": r["final_elbo"],
              "test_ll": r["test_loglik"], "lpd": r["heldout"]["log_density"], "rmse": r["rmse"],
              "cov50": r["heldout"]["coverage_50"], "cov90": r["heldout"]["coverage_90"],
              "w_train": r["widths_train"]["entropy_log_det"], "w_heldout": r["widths_heldout"]["entropy_log_det"],
              "noise": r["noise_variance"], "s/epoch": r["seconds_per_epoch"]} for r in runs]
    print_table(table, list(table[0]), title="GPLVF flows on held-out ratings")


def figure(runs: list[dict], protocols, figure_dir: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, len(protocols), figsize=(4.2 * len(protocols), 6.0), squeeze=False)
    for col, name in enumerate(protocols):
        mine = [r for r in runs if r["protocol"] == name]
        for seed in sorted({r["seed"] for r in mine}):
            by_seed = sorted((r for r in mine if r["seed"] == seed), key=lambda r: r["flow_length"])
            lengths = [r["flow_length"] for r in by_seed]
            axes[0, col].plot(lengths, [r["test_loglik"] for r in by_seed], "o-", label=f"seed {seed}")
            axes[1, col].plot(lengths, [r["bound"]["elbo"] for r in by_seed], "o-", label=f"seed {seed}")
        axes[0, col].set_title("(a) held-out users" if name == "a" else f"u{name[1:]}.base -> u{name[1:]}.test")
        axes[0, col].set_ylabel("held-out log-likelihood per rating")
        axes[1, col].set_ylabel("training bound (all rows, 10 draws)")
        axes[1, col].set_xlabel("planar flow length (0 = Gaussian q(X))")
        axes[0, col].legend(fontsize=8)
    fig.tight_layout()
    figure_dir.mkdir(parents=True, exist_ok=True)
    path = figure_dir / "gplvf_flows_heldout.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.seed is not None:
        parser.error("pass --seeds (a comma-separated list), not --seed")
    if args.plot_only:
        if args.output is None or args.figure_dir is None:
            parser.error("--plot-only needs --output (the results to draw) and --figure-dir")
        runs = read_results(args.output)["runs"]
        print(f"figure written to {figure(runs, sorted({r['protocol'] for r in runs}), args.figure_dir)}")
        return None
    if args.epochs is None:
        args.epochs = 1 if args.smoke else 150
    if args.smoke:
        args.infer_steps, args.predict_samples = min(args.infer_steps, 5), min(args.predict_samples, 5)
        args.train_rows = min(args.train_rows, 10)
    for flag in ("epochs", "predict_samples", "infer_steps", "train_rows"):
        if getattr(args, flag) < 1:
            parser.error(f"--{flag.replace('_', '-')} must be >= 1, got {getattr(args, flag)}")
    ratings = ratings_matrix(load_movielens(args.data_dir, split=None, download=False).ratings)
    results = {"config": arguments_record(args), "runs": []}
    if args.resume and args.output is not None and Path(args.output).is_file():
        results["runs"] = read_results(args.output)["runs"]  # kept, whatever grid they came from
    done = {(r["protocol"], r["seed"], r["flow_length"]) for r in results["runs"]}
    for seed in args.seeds:
        for name in args.protocols:
            for flow_length in args.flows:
                if (name, seed, flow_length) in done:
                    continue
                row = one_run(ratings, name, seed, flow_length, args)
                results["runs"].append(row)
                print(name, seed, row["q"], {k: row[k] for k in ("final_elbo", "test_loglik", "rmse")},
                      row["heldout"], flush=True)
                write_results(results, args.output, seeds=sorted({r["seed"] for r in results["runs"]}))
    write_results(results, args.output, seeds=sorted({r["seed"] for r in results["runs"]}))  # a resume may run nothing
    summary(results["runs"])
    if args.figure_dir is not None:
        print(f"figure written to {figure(results['runs'], args.protocols, args.figure_dir)}")
    return results


if __name__ == "__main__":
    main()
