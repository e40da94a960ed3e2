"""Choose SV-DKL's joint stage for MNIST on a validation split of the training images (the test set is never used).

    python -m experiments.svdkl_mnist_schedule --data-dir $GPFLOW_EXT_DATA --output results/mnist_schedules.json

The LeNet is pre-trained for ``--network-epochs`` epochs and the GP layer fitted for ``--gp-epochs``
on 50 000 training images (as ``svdkl_images.py`` does on 60 000). Then, from that same
starting point, the joint stage runs ``--joint-epochs`` epochs for each joint learning rate in
``--joint-lrs``, and the accuracy and NLP on the 10 000 held-out training images are recorded
after every joint epoch. Pick the (learning rate, epochs) with the best validation accuracy
and pass them to ``svdkl_images.py --joint-lr LR --joint-epochs E``.
"""
import json  # noqa: E402

import experiments.quiet  # noqa: E402,F401  (first: TensorFlow's log lines off before it is imported)

import numpy as np  # noqa: E402

from experiments.common import base_parser, write_results  # noqa: E402
from experiments.svdkl_common import add_network_arguments, add_size_arguments, network_options  # noqa: E402
from gpflow_ext.recipes.svdkl import SVDKLSchedule, ThreeWayConfig, run_schedule, run_three_way  # noqa: E402
from gpflow_ext.recipes.svdkl_data import mnist_split, validation_rows  # noqa: E402
from gpflow_ext.recipes.svdkl_networks import build_lenet  # noqa: E402

#: ``--smoke``: training images kept (a random subset) and the validation size unless given
SMOKE = dict(max_train=400, validation_size=100)


def main(argv=None):
    parser = base_parser(__doc__.splitlines()[0], epochs=False, logdir=False, progress=True,
                         smoke="{max_train} training images, {validation_size} of them for validation".format(**SMOKE))
    parser.add_argument("--validation-size", type=int, default=None,
                        help="held-out training images (None: 10000, or the --smoke setting)")
    parser.add_argument("--network-epochs", type=int, default=10)
    parser.add_argument("--gp-epochs", type=int, default=2)
    parser.add_argument("--joint-epochs", type=int, default=8)
    parser.add_argument("--joint-lrs", type=str, default="1e-4,3e-4", help="comma-separated Adam learning rates")
    add_size_arguments(parser, ["batch_size"])
    parser.add_argument("--joint-batch-sizes", type=str, default=None,
                        help="comma-separated minibatch sizes of the joint stage (default: --batch-size)")
    add_size_arguments(parser, ["grid_size"])
    add_network_arguments(parser)
    args = parser.parse_args(argv)
    if args.validation_size is None:
        args.validation_size = SMOKE["validation_size"] if args.smoke else 10_000
    learning_rates = [float(v) for v in args.joint_lrs.split(",")]
    joint_batch_sizes = ([args.batch_size] if args.joint_batch_sizes is None
                         else [int(v) for v in args.joint_batch_sizes.split(",")])
    (X, y), _, C = mnist_split("mnist", args.data_dir, max_train=SMOKE["max_train"] if args.smoke else None, max_test=1, seed=args.seed)
    if not 0 < args.validation_size < len(X):
        raise ValueError(f"--validation-size must be in (0, {len(X)}), got {args.validation_size}")
    train, valid = validation_rows(len(X), args.validation_size, args.seed)
    train_data, valid_data = (X[train], y[train]), (X[valid], y[valid])
    print(f"mnist: train {len(train)}, validation {len(valid)}")

    # pre-train the network and fit the GP layer once (no joint epochs)
    config = ThreeWayConfig(network_epochs=args.network_epochs, gp_epochs=args.gp_epochs, joint_epochs=0,
                            batch_size=args.batch_size, grid_size=args.grid_size, seed=args.seed,
                            **network_options(args))
    model, out, seconds, timing = run_three_way(build_lenet(C, seed=args.seed), C, train_data, valid_data, config,
                                                progress=not args.no_progress)
    start = [v.numpy() for v in model.trainable_variables]
    results = {"network_epochs": args.network_epochs, "network_lr_decay": args.network_lr_decay,
               "network_optimizer": args.network_optimizer, "network_lr": args.network_lr,
               "network_weight_decay": args.network_weight_decay, "gp_epochs": args.gp_epochs,
               "batch_size": args.batch_size,
               "grid_size": args.grid_size, "validation_size": len(valid), "dnn": out["dnn"],
               "dnn_gp": out["dnn_gp"], "pretrain_seconds": seconds, "joint": []}
    print(json.dumps({"dnn": out["dnn"], "dnn_gp": out["dnn_gp"]}), flush=True)

    for joint_batch_size, lr in [(b, lr) for b in joint_batch_sizes for lr in learning_rates]:
        for variable, value in zip(model.trainable_variables, start):
            variable.assign(value)
        schedule = SVDKLSchedule(network_epochs=0, gp_epochs=0, joint_epochs=args.joint_epochs,
                                 batch_size=args.batch_size, joint_batch_size=joint_batch_size,
                                 joint_learning_rate=lr, seed=args.seed)
        curve = run_schedule(
            model, train_data, schedule, validation_data=valid_data, progress=not args.no_progress,
            fit_kwargs={"callbacks": [lambda: model.evaluate(*valid_data)]},  # {"accuracy", "nlp"} per epoch
        )["joint_history"]
        per_epoch = [{"epoch": e, "accuracy": a, "nlp": n} for e, a, n in
                     zip(curve.metric_epochs, curve.metrics["accuracy"], curve.metrics["nlp"])]
        row = {"joint_learning_rate": lr, "joint_batch_size": joint_batch_size, "per_epoch": per_epoch,
               "median_seconds_per_epoch": float(np.median(curve.seconds_per_epoch))}
        results["joint"].append(row)
        print(json.dumps(row), flush=True)
    best = max(((r, p) for r in results["joint"] for p in r["per_epoch"]),
               key=lambda t: (t[1]["accuracy"], -t[1]["nlp"]))
    results["best"] = {"joint_learning_rate": best[0]["joint_learning_rate"],
                       "joint_batch_size": best[0]["joint_batch_size"], "joint_epochs": best[1]["epoch"],
                       "accuracy": best[1]["accuracy"], "nlp": best[1]["nlp"]}
    print("best on validation:", json.dumps(results["best"]))
    write_results(results, args.output)
    return results


if __name__ == "__main__":
    main()
