"""SV-DKL on the UCI tasks of Table 2 / Table 5: DNN vs DNN+GP vs SV-DKL in one run.

    python -m experiments.svdkl_uci --data-dir ../shared/data --dataset adult --output results/svdkl_adult.json \\
        --logdir runs/svdkl_adult

Network d-1000-1000-500-50-c (ReLU), one GP per top feature on a 64-point KISS-GP grid, A = I
initially. Splits: ``adult`` uses UCI's own train/test files (32 561 / 16 281); ``connect4``
and ``covtype`` a stratified 80/20 split with ``--seed`` (``--folds 5`` runs the paper's 5-fold
cross-validation instead; slow on a CPU). The Diabetes tasks run in ``experiments.svdkl_diabetes``
(both targets, the majority-class rate beside every table). Features are standardised with
training statistics, all but the 0/1 indicator columns (``--indicators standardise``: those too).
The splits: ``gpflow_ext.recipes.svdkl_data.uci_splits``.
``--epochs E`` sets E network epochs, max(1, E//2) GP epochs, E joint epochs.
"""
import experiments.quiet  # noqa: E402,F401  (first: TensorFlow's log lines off before it is imported)

import numpy as np  # noqa: E402

from experiments.common import arguments_record, base_parser, print_table, write_results  # noqa: E402
from experiments.paper_values import SVDKL as PAPER  # noqa: E402
from experiments.svdkl_common import add_size_arguments, add_stage_arguments, result_rows, stage_options  # noqa: E402
from experiments.svdkl_figures import figure3, image_to_tensorboard  # noqa: E402
from gpflow_ext.recipes.svdkl import ThreeWayConfig, run_three_way  # noqa: E402
from gpflow_ext.recipes.svdkl_data import UCI_DATASETS, uci_splits  # noqa: E402
from gpflow_ext.recipes.svdkl_networks import build_mlp  # noqa: E402
from gpflow_ext.recipes.svdkl_preprocessing import INDICATOR_SCALINGS  # noqa: E402


def main(argv=None):
    parser = base_parser(__doc__.splitlines()[0], figure_dir=True,
                         smoke="400 training and 200 test rows of the chosen split")
    parser.add_argument("--dataset", choices=UCI_DATASETS, required=True)
    parser.add_argument("--folds", type=int, default=1, help="1: the stated split; 5: the paper's 5-fold CV")
    add_size_arguments(parser)
    parser.add_argument("--hidden", type=str, default="1000,1000,500,50", help="hidden layer sizes")
    add_stage_arguments(parser)
    parser.add_argument("--indicators", choices=INDICATOR_SCALINGS, default="keep",
                        help="0/1 indicator (one-hot) columns: kept at 0/1 (default) or standardised like every "
                             "column (results recorded before 2026-11-25)")
    parser.add_argument("--dropout", type=float, default=0.0,
                        help="dropout rate after each hidden ReLU of the network (0: none, as the paper)")
    args = parser.parse_args(argv)
    epochs = 10 if args.epochs is None else args.epochs
    hidden = tuple(int(h) for h in args.hidden.split(",") if h)
    rng = np.random.default_rng(args.seed)

    all_rows, folds = [], []
    splits = uci_splits(args.dataset, args.data_dir, args.seed, args.folds, args.indicators)
    for fold, (train, test, C, split) in enumerate(splits):
        max_train, max_test = (400, 200) if args.smoke else (None, None)
        if max_train and len(train[0]) > max_train:
            keep = rng.permutation(len(train[0]))[:max_train]
            train = (train[0][keep], train[1][keep])
        if max_test and len(test[0]) > max_test:
            keep = rng.permutation(len(test[0]))[:max_test]
            test = (test[0][keep], test[1][keep])
        print(f"{args.dataset}: {split}; train {train[0].shape}, test {test[0].shape}, {C} classes")
        network = build_mlp(train[0].shape[1], C, hidden, seed=args.seed + fold, dropout=args.dropout)
        logdir = None if args.logdir is None else args.logdir / f"fold{fold}"
        config = ThreeWayConfig(batch_size=args.batch_size, grid_size=args.grid_size, seed=args.seed,
                                **stage_options(args, epochs))
        model, out, seconds, timing = run_three_way(network, C, train, test, config, logdir=logdir,
                                                    progress=not args.no_progress)
        rows = result_rows(args.dataset, out, PAPER["table2_accuracy"][args.dataset], PAPER["table5_nlp"][args.dataset])
        all_rows += rows
        folds.append({"split": split, "rows": rows, "seconds": seconds, "median_seconds_per_epoch": timing})
        if fold == 0 and (args.figure_dir or args.logdir):
            png = figure3(model, test[0], test[1], (args.figure_dir or args.logdir) / f"svdkl_{args.dataset}_figure3.png")
            if args.logdir:
                image_to_tensorboard(png, args.logdir, f"figure3/{args.dataset}")

    summary = []
    for name in ("DNN", "DNN+GP", "SV-DKL"):
        picked = [r for r in all_rows if r["model"] == name]
        summary.append({
            "dataset": args.dataset, "model": name,
            "accuracy": float(np.mean([r["accuracy"] for r in picked])),
            "acc_std": float(np.std([r["accuracy"] for r in picked])),
            "paper_accuracy": picked[0]["paper_accuracy"],
            "nlp": float(np.mean([r["nlp"] for r in picked])),
            "paper_nlp": picked[0]["paper_nlp"],
        })
    print_table(summary, ["dataset", "model", "accuracy", "acc_std", "paper_accuracy", "nlp", "paper_nlp"],
                title=f"SV-DKL Table 2 / Table 5 ({folds[0]['split'] if len(folds) == 1 else f'{len(folds)} folds'})")
    results = {"dataset": args.dataset, "epochs": epochs, "summary": summary, "folds": folds,
               "batch_size": args.batch_size, "grid_size": args.grid_size, "hidden": hidden,
               "arguments": arguments_record(args)}
    write_results(results, args.output)
    return results


if __name__ == "__main__":
    main()
