"""Choose the SV-DKL schedule for Adult on a validation split of adult.data (the test file is never used).

    python experiments/svdkl_adult_schedule.py --data-dir $GPFLOW_EXT_DATA --output results/adult_schedules.jsonl

Each candidate (network / GP / joint epochs, learning rates, batch size, dropout, the network stage's
optimizer) trains DNN -> DNN+GP -> SV-DKL on a stratified 80 % of adult.data and is scored on the
other 20 %; one JSON line per candidate.
"""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from experiments.common import base_parser  # noqa: E402
from experiments.svdkl_common import ADULT_HEAVY_TAILED, build_mlp, log1p_features, run_three_way, standardise  # noqa: E402

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
         network_optimizer_name="sgd", network_learning_rate=1e-2, network_weight_decay=5e-3),
    dict(network_epochs=5, gp_epochs=5, joint_epochs=3, joint_learning_rate=1e-4, batch_size=256,
         network_lr_decay="cosine"),
    # the joint stage on large minibatches, as the paper does (Section 5)
    dict(network_epochs=3, gp_epochs=5, joint_epochs=6, joint_learning_rate=3e-4, batch_size=256,
         joint_batch_size=2048),
    dict(network_epochs=3, gp_epochs=5, joint_epochs=10, joint_learning_rate=1e-3, batch_size=256,
         joint_batch_size=5000),
]


def main(argv=None):
    from sklearn.model_selection import train_test_split

    from gpflow_ext import data as gdata

    parser = base_parser(__doc__.splitlines()[0])
    parser.add_argument("--validation-fraction", type=float, default=0.2)
    parser.add_argument("--candidates", type=str, default=None,
                        help="comma-separated candidate indices to try (default: all)")
    parser.add_argument("--max-train", type=int, default=None, help="use only the first rows (smoke runs)")
    args = parser.parse_args(argv)
    train, _ = gdata.load_adult(args.data_dir, download=False)
    X, y = train.X[: args.max_train], train.y[: args.max_train]
    Xtr_raw, Xva_raw, ytr, yva = train_test_split(
        X, y, test_size=args.validation_fraction, stratify=y, random_state=args.seed
    )
    picked = range(len(CANDIDATES)) if args.candidates is None else [int(i) for i in args.candidates.split(",")]
    rows = []
    for index in picked:
        candidate = CANDIDATES[index]
        options = dict(candidate)
        batch_size = options.pop("batch_size")
        dropout = options.pop("dropout", 0.0)
        if options.pop("log1p", False):
            Xtr, Xva = standardise(*(log1p_features(A, train.feature_names, ADULT_HEAVY_TAILED)
                                     for A in (Xtr_raw, Xva_raw)))
        else:
            Xtr, Xva = standardise(Xtr_raw, Xva_raw)
        _, out, seconds, _ = run_three_way(
            build_mlp(Xtr.shape[1], 2, seed=args.seed, dropout=dropout), 2, (Xtr, ytr), (Xva, yva),
            batch_size=batch_size, progress=False, seed=args.seed, **options,
        )
        row = {"config": candidate, "dnn": out["dnn"], "dnn_gp": out["dnn_gp"], "svdkl": out["svdkl"],
               "seconds": seconds}
        rows.append(row)
        print(json.dumps(row), flush=True)
    if args.output:
        Path(args.output).parent.mkdir(parents=True, exist_ok=True)
        Path(args.output).write_text("".join(json.dumps(r) + "\n" for r in rows))
    return rows


if __name__ == "__main__":
    main()
