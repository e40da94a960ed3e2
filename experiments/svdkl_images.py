"""SV-DKL on MNIST (Table 3 / Table 6): CNN vs CNN+GP vs SV-DKL with a LeNet-style network.

    python -m experiments.svdkl_images --data-dir ../shared/data --dataset mnist --output results/svdkl_mnist.json \\
        --logdir runs/svdkl_mnist

Standard 60 000 / 10 000 split, Caffe's LeNet (conv20-pool-conv50-pool-fc500-fc10) whose 10
outputs feed 10 GPs on 64-point KISS-GP grids, A = I initially. ``--epochs E`` sets E network
epochs, max(1, E//2) GP epochs and E joint epochs.

``tour(quick=True)`` is the README's SV-DKL stop: the same pipeline on scikit-learn's 8×8
digits (no download) with a small fully connected network.
"""
if not __package__:  # `python -m experiments.svdkl_images`: the repository root on the path (prefer `python -m`)
    import pathlib
    import sys

    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from experiments import quiet  # noqa: E402,F401  (first: TensorFlow's log lines off before it is imported)

import time  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Optional  # noqa: E402

import numpy as np  # noqa: E402

from experiments.common import arguments_record, base_parser, print_table, write_results  # noqa: E402
from experiments.paper_values import SVDKL as PAPER  # noqa: E402
from experiments.svdkl_common import (  # noqa: E402
    add_stage_arguments,
    build_lenet,
    build_mlp,
    figure3,
    image_to_tensorboard,
    result_rows,
    run_three_way,
    stage_options,
)

DATASETS = ("mnist", "mnist_binary")
#: ``--smoke``: training / test images kept (random subsets) and the epochs unless ``--epochs`` is given
SMOKE = dict(max_train=300, max_test=100, epochs=1)


def load(dataset: str, data_dir, max_train=None, max_test=None, seed: int = 0):
    """MNIST train/test as float [N, 28, 28, 1] in [0, 1] (subsampled before the float copy)."""
    from gpflow_ext.data import load_mnist

    rng = np.random.default_rng(seed)
    parts = []
    for subset, limit in (("train", max_train), ("test", max_test)):
        X, y = load_mnist(data_dir, subset, download=False)  # uint8 [N, 28, 28], labels [N]
        if limit and limit < len(X):
            keep = rng.permutation(len(X))[:limit]
            X, y = X[keep], y[keep]
        y = y.astype(np.int64)
        if dataset == "mnist_binary":  # odd vs even (Table 3's MNIST-Binary)
            y = y % 2
        parts.append(((X.astype(np.float64) / 255.0)[..., None], y))
    return parts[0], parts[1], int(parts[0][1].max()) + 1


def main(argv=None):
    parser = base_parser(__doc__.split("\n\n")[0], figure_dir=True,
                         smoke="{max_train} training / {max_test} test images, {epochs} epoch(s)".format(**SMOKE))
    parser.add_argument("--dataset", choices=DATASETS, default="mnist")
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--grid-size", type=int, default=64, help="points per KISS-GP grid")
    add_stage_arguments(parser)  # the DNN -> GP -> joint schedule's options and --no-progress
    args = parser.parse_args(argv)
    epochs = args.epochs if args.epochs is not None else (SMOKE["epochs"] if args.smoke else 10)
    limits = (SMOKE["max_train"], SMOKE["max_test"]) if args.smoke else (None, None)
    train, test, C = load(args.dataset, args.data_dir, *limits, args.seed)
    print(f"{args.dataset}: train {train[0].shape}, test {test[0].shape}, {C} classes")
    model, out, seconds, timing = run_three_way(
        build_lenet(C, seed=args.seed), C, train, test,
        batch_size=args.batch_size, grid_size=args.grid_size, logdir=args.logdir, seed=args.seed,
        **stage_options(args, epochs),
    )
    rows = result_rows(args.dataset, out, PAPER["table3_accuracy"][args.dataset], PAPER["table6_nlp"][args.dataset],
                       dnn_name="CNN")
    print_table(rows, ["dataset", "model", "accuracy", "paper_accuracy", "nlp", "paper_nlp"],
                title="SV-DKL Table 3 / Table 6 (standard MNIST split)")
    if args.figure_dir or args.logdir:
        png = figure3(model, test[0], test[1], (args.figure_dir or args.logdir) / f"svdkl_{args.dataset}_figure3.png",
                      per_class=30)
        if args.logdir:
            image_to_tensorboard(png, args.logdir, f"figure3/{args.dataset}")
    results = {"dataset": args.dataset, "epochs": epochs, "rows": rows, "seconds": seconds,
               "median_seconds_per_epoch": timing, "batch_size": args.batch_size, "grid_size": args.grid_size,
               "arguments": arguments_record(args)}
    write_results(results, args.output)
    return results


def tour(quick: bool = True, grid_prior: str = "toeplitz", *, logdir: Optional[Path] = None, seed: int = 0,
         epochs: Optional[int] = None, progress: bool = False) -> dict:
    """SV-DKL on scikit-learn's digits (1797 8×8 images, no download): DNN, DNN+GP, SV-DKL.

    ``quick`` trains for a few epochs (about a minute on 2 CPU cores); ``epochs`` E replaces that by E network,
    max(1, E//2) GP and E joint epochs. ``logdir`` gets each stage's TensorBoard logs. Prints and returns the
    test accuracy and NLP of the three models.
    """
    from gpflow_ext.data import load_digits

    split = load_digits(test_fraction=0.25, seed=seed)
    if epochs is not None:
        stages = (epochs, max(1, epochs // 2), epochs)
    else:
        stages = (12, 6, 8) if quick else (40, 15, 30)
    t0 = time.perf_counter()
    model, out, seconds, _ = run_three_way(
        build_mlp(64, 10, hidden=(128, 64), seed=seed), 10,
        (split.X_train, split.y_train), (split.X_test, split.y_test),
        network_epochs=stages[0], gp_epochs=stages[1], joint_epochs=stages[2],
        batch_size=128, grid_size=32, joint_learning_rate=1e-3, progress=progress, grid_prior=grid_prior,
        logdir=logdir, seed=seed,
    )
    result = {
        "dataset": "sklearn digits",
        "grid_prior": grid_prior,
        "dnn_accuracy": out["dnn"]["accuracy"],
        "dnn_gp_accuracy": out["dnn_gp"]["accuracy"],
        "svdkl_accuracy": out["svdkl"]["accuracy"],
        "svdkl_nlp": out["svdkl"]["nlp"],
        "seconds": time.perf_counter() - t0,
    }
    print(
        f"SV-DKL tour (digits, {len(split.X_train)} train / {len(split.X_test)} test): "
        f"DNN acc {result['dnn_accuracy']:.4f}, DNN+GP acc {result['dnn_gp_accuracy']:.4f}, "
        f"SV-DKL acc {result['svdkl_accuracy']:.4f} (NLP {result['svdkl_nlp']:.4f}) in {result['seconds']:.0f} s"
    )
    return result


if __name__ == "__main__":
    main()
