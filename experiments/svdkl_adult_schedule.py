"""Choose the SV-DKL schedule for Adult on a validation split of adult.data (the test file is never used).

    python -m experiments.svdkl_adult_schedule --data-dir $GPFLOW_EXT_DATA --output results/adult_schedules.json

Each candidate (network / GP / joint epochs, learning rates, batch size, dropout, the network stage's
optimizer) trains DNN -> DNN+GP -> SV-DKL on a stratified 80 % of adult.data and is scored on the
other 20 %; the output JSON holds one record per candidate under ``rows``. ``--folds 5`` scores each candidate by stratified 5-fold
cross-validation inside adult.data instead (fold k: network and training seed ``--seed`` + k, the
same for every candidate, so candidates are compared fold by fold on the same pre-trained DNN);
the record then holds every fold and the means.
"""
import json  # noqa: E402

import experiments.quiet  # noqa: E402,F401  (first: TensorFlow's log lines off before it is imported)

import numpy as np  # noqa: E402

from experiments.common import arguments_record, base_parser, write_results  # noqa: E402
from gpflow_ext.recipes.svdkl import ThreeWayConfig, run_three_way  # noqa: E402
from gpflow_ext.recipes.svdkl_data import validation_splits  # noqa: E402
from gpflow_ext.recipes.svdkl_networks import build_mlp  # noqa: E402
from gpflow_ext.recipes.svdkl_preprocessing import ADULT_HEAVY_TAILED, log1p_features, standardise  # noqa: E402

#: ``--smoke``: rows of adult.data kept
SMOKE_ROWS = 300

CANDIDATES = [
    dict(network_epochs=3, gp_epochs=5, joint_epochs=3, joint_learning_rate=1e-4, batch_size=256),
    dict(network_epochs=2, gp_epochs=5, joint_epochs=3, joint_learning_rate=1e-4, batch_size=256),
    dict(network_epochs=3, gp_epochs=5, joint_epochs=6, joint_learning_rate=1e-4, batch_size=256),
    dict(network_epochs=3, gp_epochs=5, joint_epochs=3, joint_learning_rate=3e-4, batch_size=256),
    dict(network_epochs=3, gp_epochs=10, joint_epochs=3, joint_learning_rate=1e-4, batch_size=256),
    dict(network_epochs=3, gp_epochs=5, joint_epochs=3, joint_learning_rate=1e-4, batch_size=1024),
    # the same schedules with log(1 + x) on capital-gain / capital-loss before standardising
    dict(network_epochs=3, gp_epochs=5, joint_epochs=3, joint_learning_rate=1e-4, batch_size=256, log1p=True),
    dict(network_epochs=2, gp_epochs=5, joint_epochs=3, joint_learning_rate=1e-4, batch_size=256, log1p=True),
    dict(network_epochs=3, gp_epochs=5, joint_epochs=3, joint_learning_rate=3e-4, batch_size=256, log1p=True),
    # regularised networks: dropout after each hidden ReLU (all stages), a slower or decayed network stage
    dict(network_epochs=3, gp_epochs=5, joint_epochs=3, joint_learning_rate=1e-4, batch_size=256, dropout=0.5),
    dict(network_epochs=3, gp_epochs=5, joint_epochs=3, joint_learning_rate=1e-4, batch_size=256, dropout=0.2),
    dict(network_epochs=6, gp_epochs=5, joint_epochs=3, joint_learning_rate=1e-4, batch_size=256, dropout=0.5),
    dict(network_epochs=6, gp_epochs=5, joint_epochs=3, joint_learning_rate=1e-4, batch_size=256,
         network_learning_rate=3e-4),
    dict(network_epochs=5, gp_epochs=5, joint_epochs=3, joint_learning_rate=1e-4, batch_size=256,
         network_optimizer="sgd", network_learning_rate=1e-2, network_weight_decay=5e-3),
    dict(network_epochs=5, gp_epochs=5, joint_epochs=3, joint_learning_rate=1e-4, batch_size=256,
         network_lr_decay="cosine"),
    # the joint stage on large minibatches, as the paper does (Section 5)
    dict(network_epochs=3, gp_epochs=5, joint_epochs=6, joint_learning_rate=3e-4, batch_size=256,
         joint_batch_size=2048),
    dict(network_epochs=3, gp_epochs=5, joint_epochs=10, joint_learning_rate=1e-3, batch_size=256,
         joint_batch_size=5000),
    # the joint stage with its own Adam for the GP layer (the network keeps 1e-4); chosen with --folds 5
    dict(network_epochs=3, gp_epochs=5, joint_epochs=3, joint_learning_rate=1e-4, batch_size=256,
         joint_gp_learning_rate=1e-2),
    dict(network_epochs=3, gp_epochs=5, joint_epochs=3, joint_learning_rate=1e-4, batch_size=256,
         joint_gp_learning_rate=1e-3),
    # the paper's circulant approximation of the grid prior (better than Toeplitz on digits in the tour)
    dict(network_epochs=3, gp_epochs=5, joint_epochs=3, joint_learning_rate=1e-4, batch_size=256,
         grid_prior="circulant"),
    dict(network_epochs=3, gp_epochs=5, joint_epochs=3, joint_learning_rate=1e-4, batch_size=256,
         grid_prior="circulant", joint_gp_learning_rate=1e-3),
    # T = 8 draws of u per step in the GP and joint stages (the paper uses T = 1)
    dict(network_epochs=3, gp_epochs=5, joint_epochs=3, joint_learning_rate=1e-4, batch_size=256, num_samples=8),
    # 22: the one-hot columns left at 0/1, only the six continuous ones standardised (svdkl_uci --indicators keep)
    dict(network_epochs=3, gp_epochs=5, joint_epochs=3, joint_learning_rate=1e-4, batch_size=256, indicators="keep"),
]

# Every candidate's final model is also scored with this many predictive draws (beside the default 16), so the
# Monte Carlo error of the predictive probabilities is measured on the same trained model.
MANY_PREDICT_SAMPLES = 256


def main(argv=None):
    from gpflow_ext import data as gdata

    parser = base_parser(__doc__.splitlines()[0], epochs=False, logdir=False,
                         smoke=f"the first {SMOKE_ROWS} rows of adult.data")
    parser.add_argument("--validation-fraction", type=float, default=0.2, help="held-out share of adult.data")
    parser.add_argument("--folds", type=int, default=1,
                        help="1: one validation split (--validation-fraction); k > 1: k-fold CV inside adult.data")
    parser.add_argument("--candidates", type=str, default=None,
                        help="comma-separated candidate indices to try (default: all)")
    args = parser.parse_args(argv)
    if args.folds < 1:
        parser.error(f"--folds must be >= 1, got {args.folds}")
    train, _ = gdata.load_adult(args.data_dir, download=False)
    rows = slice(SMOKE_ROWS if args.smoke else None)
    X, y = train.X[rows], train.y[rows]
    picked = range(len(CANDIDATES)) if args.candidates is None else [int(i) for i in args.candidates.split(",")]
    rows = []
    for index in picked:
        candidate = CANDIDATES[index]
        options = dict(candidate)
        batch_size = options.pop("batch_size")
        dropout = options.pop("dropout", 0.0)
        log1p = options.pop("log1p", False)
        indicators = options.pop("indicators", "standardise")
        folds = []
        for fold, tr, va in validation_splits(y, args.folds, args.validation_fraction, args.seed):
            if log1p:
                logged = (log1p_features(A, train.feature_names, ADULT_HEAVY_TAILED) for A in (X[tr], X[va]))
                Xtr, Xva = standardise(*logged, indicators=indicators)
            else:
                Xtr, Xva = standardise(X[tr], X[va], indicators=indicators)
            config = ThreeWayConfig(batch_size=batch_size, seed=args.seed + fold, **options)
            model, out, seconds, _ = run_three_way(
                build_mlp(Xtr.shape[1], 2, seed=args.seed + fold, dropout=dropout), 2, (Xtr, y[tr]), (Xva, y[va]),
                config, progress=False,
            )
            many = model.evaluate(Xva, y[va], num_samples=MANY_PREDICT_SAMPLES)
            folds.append({"dnn": out["dnn"], "dnn_gp": out["dnn_gp"], "svdkl": out["svdkl"],
                          f"svdkl_predict{MANY_PREDICT_SAMPLES}": many, "seconds": seconds})
        row = {"config": candidate, "candidate": index, "folds": args.folds, "seed": args.seed}
        for key in ("dnn", "dnn_gp", "svdkl", f"svdkl_predict{MANY_PREDICT_SAMPLES}"):
            row[key] = {metric: float(np.mean([f[key][metric] for f in folds])) for metric in ("accuracy", "nlp")}
        row["seconds"] = float(np.sum([f["seconds"] for f in folds]))
        if args.folds > 1:
            row["per_fold"] = folds
        rows.append(row)
        print(json.dumps(row), flush=True)
    write_results({"rows": rows, "arguments": arguments_record(args)}, args.output,
                  seeds=[args.seed + k for k in range(args.folds)])
    return rows


if __name__ == "__main__":
    main()
