"""SV-DKL on MNIST (Table 3 / Table 6): CNN vs CNN+GP vs SV-DKL with a LeNet-style network.

    python -m experiments.svdkl_images --data-dir ../shared/data --dataset mnist --output results/svdkl_mnist.json \\
        --logdir runs/svdkl_mnist

Standard 60 000 / 10 000 split (``gpflow_ext.recipes.svdkl_data.mnist_split``), Caffe's LeNet
(conv20-pool-conv50-pool-fc500-fc10) whose 10 outputs feed 10 GPs on 64-point KISS-GP grids, A = I initially.
``--epochs E`` sets E network epochs, max(1, E//2) GP epochs and E joint epochs.
"""
import experiments.quiet  # noqa: E402,F401  (first: TensorFlow's log lines off before it is imported)

from experiments.common import arguments_record, base_parser, print_table, write_results  # noqa: E402
from experiments.paper_values import SVDKL as PAPER  # noqa: E402
from experiments.svdkl_common import add_size_arguments, add_stage_arguments, result_rows, stage_options  # noqa: E402
from experiments.svdkl_figures import figure3, image_to_tensorboard  # noqa: E402
from gpflow_ext.recipes.svdkl import ThreeWayConfig, run_three_way  # noqa: E402
from gpflow_ext.recipes.svdkl_data import IMAGE_DATASETS, mnist_split  # noqa: E402
from gpflow_ext.recipes.svdkl_networks import build_lenet  # noqa: E402

#: ``--smoke``: training / test images kept (random subsets) and the epochs unless ``--epochs`` is given
SMOKE = dict(max_train=300, max_test=100, epochs=1)


def main(argv=None):
    parser = base_parser(__doc__.split("\n\n")[0], figure_dir=True,
                         smoke="{max_train} training / {max_test} test images, {epochs} epoch(s)".format(**SMOKE))
    parser.add_argument("--dataset", choices=IMAGE_DATASETS, default="mnist")
    add_size_arguments(parser)
    parser.add_argument("--max-train", type=int, default=None,
                        help="train on a stratified random subset of this many training images (try small first)")
    add_stage_arguments(parser)  # the DNN -> GP -> joint schedule's options and --no-progress
    args = parser.parse_args(argv)
    if args.max_train is not None and args.max_train < 10:
        parser.error(f"--max-train must be at least 10 (one image per digit), got {args.max_train}")
    epochs = args.epochs if args.epochs is not None else (SMOKE["epochs"] if args.smoke else 10)
    limits = (args.max_train or SMOKE["max_train"], SMOKE["max_test"]) if args.smoke else (args.max_train, None)
    train, test, C = mnist_split(args.dataset, args.data_dir, *limits, args.seed)
    print(f"{args.dataset}: train {train[0].shape}, test {test[0].shape}, {C} classes")
    config = ThreeWayConfig(batch_size=args.batch_size, grid_size=args.grid_size, seed=args.seed,
                            **stage_options(args, epochs))
    model, out, seconds, timing = run_three_way(build_lenet(C, seed=args.seed), C, train, test, config,
                                                logdir=args.logdir, progress=not args.no_progress)
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
               "train_images": len(train[0]), "chosen_epoch": out["chosen_epoch"],
               "median_seconds_per_epoch": timing, "batch_size": args.batch_size, "grid_size": args.grid_size,
               "arguments": arguments_record(args)}
    write_results(results, args.output)
    return results


if __name__ == "__main__":
    main()
