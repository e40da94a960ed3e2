"""DNN vs DNN+GP vs SV-DKL over datasets x epoch budgets x seeds: does the GP layer ever end worse than its network?

    python -m experiments.svdkl_budgets --datasets digits,mnist5k,adult --budgets 2,6 --seeds 0,1,2 \\
        --output docs/svdkl/results/budgets.json

A budget E trains E network epochs, max(1, E // 2) GP epochs and E joint epochs; a budget ``N/G/J`` names the three
stages' epochs (``digits`` at ``12/6/8`` is the tour's SV-DKL section). Each stage keeps its epoch chosen on a
stratified validation split of the training rows; the test rows are scored once per stage. Datasets:
``digits`` (scikit-learn's 8x8 digits, the tour's MLP 128-64, no download), ``mnist5k`` (the LeNet on a stratified
5,000-image subset of MNIST's training images, scored on the 10,000 test images), ``mnist`` (the same LeNet on
all 60,000 training images), ``adult`` (UCI's train/test
files, the paper's MLP 1000-1000-500-50), ``connect4`` (a stratified 80/20 split, the same MLP). Per cell: test
accuracy and NLP of the three models, each stage's chosen epoch and median seconds per epoch.
"""
import dataclasses  # noqa: E402
import time  # noqa: E402

import experiments.quiet  # noqa: E402,F401  (first: TensorFlow's log lines off before it is imported)

import numpy as np  # noqa: E402

from experiments.common import base_parser, print_table, write_results  # noqa: E402
from experiments.svdkl_common import parse_seeds  # noqa: E402
from gpflow_ext.recipes.svdkl import PAPER_SETTINGS, ThreeWayConfig, run_three_way  # noqa: E402
from gpflow_ext.recipes.svdkl_data import mnist_split, uci_splits  # noqa: E402
from gpflow_ext.recipes.svdkl_networks import build_lenet, build_mlp  # noqa: E402

DATASETS = ("digits", "mnist5k", "mnist", "adult", "connect4")


def load(dataset: str, data_dir, seed: int, smoke: bool = False):
    """``(train, test, num_classes, network builder, batch size, grid size, joint learning rate)``."""
    from gpflow_ext import data as gdata

    if dataset == "digits":
        split = gdata.load_digits(test_fraction=0.25, seed=seed)
        setting = PAPER_SETTINGS["digits"]
        return ((split.X_train, split.y_train), (split.X_test, split.y_test), 10,
                lambda: setting.build_network(64, 10, seed=seed), 128, 32, setting.config.joint_learning_rate)
    if dataset in ("mnist5k", "mnist"):
        max_train = 300 if smoke else (5000 if dataset == "mnist5k" else None)
        train, test, C = mnist_split("mnist", data_dir, max_train, 200 if smoke else None, seed)
        return train, test, C, lambda: build_lenet(C, seed=seed), 256, 64, 1e-4
    train, test, C, _ = next(uci_splits(dataset, data_dir, seed))
    if smoke:
        train, test = (train[0][:400], train[1][:400]), (test[0][:200], test[1][:200])
    return (train, test, C, lambda: build_mlp(train[0].shape[1], C, (1000, 1000, 500, 50), seed=seed), 256, 64,
            1e-4)


def parse_budgets(text: str) -> list:
    """``"2,6,12/6/8"`` -> ``[2, 6, "12/6/8"]``: epoch budgets E, or ``N/G/J`` epochs of the three stages."""
    budgets: list = []
    for item in (part.strip() for part in str(text).split(",") if part.strip()):
        parts = item.split("/")
        if len(parts) not in (1, 3) or not all(p.strip().isdigit() for p in parts) or (
                len(parts) == 1 and int(parts[0]) < 1) or (len(parts) == 3 and int(parts[0]) + int(parts[2]) < 1):
            raise ValueError(f"--budgets must be positive epoch counts E or N/G/J stage epochs, got {text!r}")
        budgets.append(int(item) if len(parts) == 1 else "/".join(str(int(p)) for p in parts))
    if not budgets or len(set(budgets)) != len(budgets):
        raise ValueError(f"--budgets must name at least one budget, without repeats, got {text!r}")
    return budgets


def stage_epochs(budget) -> tuple[int, int, int]:
    """``(network, GP, joint)`` epochs of a budget: E -> ``(E, max(1, E // 2), E)``; ``"N/G/J"`` -> its three."""
    if isinstance(budget, str):
        network, gp, joint = (int(p) for p in budget.split("/"))
        return network, gp, joint
    return budget, max(1, budget // 2), budget


def run_cell(dataset: str, budget, seed: int, data_dir, smoke: bool, validation_fraction: float):
    train, test, C, network, batch_size, grid_size, joint_lr = load(dataset, data_dir, seed, smoke)
    network_epochs, gp_epochs, joint_epochs = stage_epochs(budget)
    config = ThreeWayConfig(network_epochs=network_epochs, gp_epochs=gp_epochs, joint_epochs=joint_epochs,
                            batch_size=batch_size, grid_size=16 if smoke else grid_size, joint_learning_rate=joint_lr,
                            validation_fraction=validation_fraction, seed=seed)
    started = time.perf_counter()
    _, out, seconds, timing = run_three_way(network(), C, train, test, config, progress=False)
    cell = {"dataset": dataset, "budget": budget, "seed": seed, "train_rows": len(train[0]),
            "test_rows": len(test[0]), "seconds": seconds, "median_seconds_per_epoch": timing,
            "chosen_epoch": out["chosen_epoch"], "config": dataclasses.asdict(config),
            "wall_seconds": time.perf_counter() - started}
    for key in ("dnn", "dnn_gp", "svdkl"):
        cell[key] = out[key]
        cell[f"validation_{key}"] = out["validation"][key]
    return cell


def summarise(cells):
    """Per (dataset, budget): the seeds' mean of each model's accuracy and NLP, and the worst seed's differences
    SV-DKL - DNN and DNN+GP - DNN (accuracy: the lowest; NLP: the highest)."""
    rows = []
    for dataset, budget in dict.fromkeys((c["dataset"], c["budget"]) for c in cells):
        picked = [c for c in cells if c["dataset"] == dataset and c["budget"] == budget]
        row = {"dataset": dataset, "budget": budget, "seeds": len(picked)}
        for key in ("dnn", "dnn_gp", "svdkl"):
            row[f"{key}_accuracy"] = float(np.mean([c[key]["accuracy"] for c in picked]))
            row[f"{key}_nlp"] = float(np.mean([c[key]["nlp"] for c in picked]))
        for key in ("dnn_gp", "svdkl"):
            row[f"{key}_worst_accuracy_gain"] = min(c[key]["accuracy"] - c["dnn"]["accuracy"] for c in picked)
            row[f"{key}_worst_nlp_gain"] = max(c[key]["nlp"] - c["dnn"]["nlp"] for c in picked)
        rows.append(row)
    return rows


def main(argv=None):
    parser = base_parser(__doc__.splitlines()[0], epochs=False, logdir=False, seed=False,
                         smoke="400 training / 200 test rows (300 / 200 images), grid 16")
    parser.add_argument("--datasets", default="digits", help=f"comma-separated, from {', '.join(DATASETS)}")
    parser.add_argument("--budgets", default="2,6",
                        help="comma-separated epoch budgets E, or N/G/J epochs of the three stages")
    parser.add_argument("--seeds", default="0,1,2", help="comma-separated seeds")
    parser.add_argument("--validation-fraction", type=float, default=0.1,
                        help="share of the training rows held out to choose each stage's epoch")
    args = parser.parse_args(argv)
    datasets = [d for d in args.datasets.split(",") if d]
    unknown = sorted(set(datasets) - set(DATASETS))
    if unknown or not datasets:
        parser.error(f"--datasets must name some of {', '.join(DATASETS)}, got {args.datasets!r}")
    try:
        budgets = parse_budgets(args.budgets)
        seeds = parse_seeds(args.seeds)
    except ValueError as err:
        parser.error(str(err))
    if not 0.0 < args.validation_fraction < 1.0:
        parser.error(f"--validation-fraction must be in (0, 1), got {args.validation_fraction}")
    cells = []
    for dataset in datasets:
        for budget in budgets:
            for seed in seeds:
                cell = run_cell(dataset, budget, seed, args.data_dir, args.smoke, args.validation_fraction)
                cells.append(cell)
                print(f"{dataset} E={budget} seed {seed}: " + ", ".join(
                    f"{k} {cell[k]['accuracy']:.4f}/{cell[k]['nlp']:.4f}" for k in ("dnn", "dnn_gp", "svdkl"))
                    + f"; chosen {cell['chosen_epoch']}", flush=True)
    summary = summarise(cells)
    print_table(summary, ["dataset", "budget", "seeds", "dnn_accuracy", "dnn_gp_accuracy", "svdkl_accuracy",
                          "dnn_nlp", "dnn_gp_nlp", "svdkl_nlp", "svdkl_worst_accuracy_gain", "svdkl_worst_nlp_gain"],
                title="DNN / DNN+GP / SV-DKL, test accuracy and NLP (mean over seeds)")
    results = {"cells": cells, "summary": summary, "datasets": datasets, "budgets": budgets}
    write_results(results, args.output, seeds=seeds)
    return results


if __name__ == "__main__":
    main()
