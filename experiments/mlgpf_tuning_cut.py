"""The choice of σ² on a cut of the training file against the choice on all of it (``tuning_subsample``).

    python -m experiments.mlgpf_tuning_cut --dataset medical enron tmc2007-500 bibtex [--seeds 0 1 2] --output FILE

``best`` chooses σ² by an inner 3-fold cross-validation of its MAP twin. On large data that cross-validation sees
the most frequent ``tuning_max_labels`` labels and the random rows within ``tuning_budget`` multiply-adds per fold
product (``gpflow_ext.recipes.mlgpf_data.tuning_subsample``); the four shared training files are below both caps.
Here each training file is tuned whole (caps off), then with caps that cut it: half and a quarter of its labels,
a quarter and a sixteenth of its whole cost, and both together, each with every ``--seed`` (the inner folds and the
rows drawn). For each cut: the σ² it chooses, its seconds, and its regret, the whole file's mean held-out P@1 at the
whole choice minus at the cut's choice (0 when they agree; the whole rule's table scores every σ² of the grid).
Only the training files are read.
"""
import dataclasses
import time
from typing import Any

import experiments.quiet  # noqa: F401  (first: TensorFlow's log lines off before it is imported)

from experiments.common import base_parser, print_table
from gpflow_ext.recipes.mlgpf_auto import resolve_config
from gpflow_ext.recipes.mlgpf_config import best_config
from gpflow_ext.recipes.mlgpf_data import fold_multiply_adds, load_training_file
from gpflow_ext.results import write_results

#: (name, fraction of the labels kept, fraction of the whole file's cost allowed); None: that cap off
CUTS: tuple[tuple[str, float | None, float | None], ...] = (
    ("labels 1/2", 0.5, None),
    ("labels 1/4", 0.25, None),
    ("cost 1/4", None, 0.25),
    ("cost 1/16", None, 1 / 16),
    ("labels 1/2, cost 1/16", 0.5, 1 / 16),
)


def tune(config, X, Y) -> tuple[dict[str, Any], float]:
    start = time.perf_counter()
    _, record = resolve_config(config, X, Y)
    assert record is not None
    return record, time.perf_counter() - start


def run_dataset(name: str, data_dir, seeds: list[int], max_rows: int | None = None) -> dict[str, Any]:
    X, Y = load_training_file(name, data_dir, max_rows=max_rows)
    whole_config = dataclasses.replace(best_config(dataset=name), tuning_max_labels=None, tuning_budget=None)
    num_labels = Y.shape[1]
    cost = fold_multiply_adds(*X.shape, num_labels, rank=whole_config.rank, folds=whole_config.tuning_folds)
    wholes = {}  # seed -> the whole file's record and seconds
    for seed in seeds:
        wholes[seed] = tune(dataclasses.replace(whole_config, seed=seed), X, Y)
    out: dict[str, Any] = {
        "rows": int(X.shape[0]),
        "labels": int(num_labels),
        "multiply_adds": cost,
        "whole": {
            str(seed): {"chosen": record["chosen"], "seconds": seconds, "scores": record["scores"]}
            for seed, (record, seconds) in wholes.items()
        },
        "cuts": [],
    }
    for cut_name, label_fraction, cost_fraction in CUTS:  # the same seed's whole record is the reference
        for seed in seeds:
            labels = None if label_fraction is None else max(1, round(label_fraction * num_labels))
            budget = None if cost_fraction is None else cost_fraction * cost
            config = dataclasses.replace(
                whole_config, tuning_max_labels=labels, tuning_budget=budget, seed=seed
            )
            record, seconds = tune(config, X, Y)
            reference = wholes[seed][0]
            table = {row["kernel_variance"]: row["P@1 mean"] for row in reference["scores"]}
            cut = record["subsample"]
            out["cuts"].append({
                "cut": cut_name,
                "seed": seed,
                "max_labels": labels,
                "budget": budget,
                "rows": cut["rows"],
                "labels": cut["labels"],
                "chosen": record["chosen"],
                "whole_chosen": reference["chosen"],
                "regret_P@1": table[reference["chosen"]] - table[record["chosen"]],
                "seconds": seconds,
            })
    return out


def main(argv=None) -> dict[str, Any]:
    parser = base_parser(__doc__.splitlines()[0], float32=False, logdir=False, epochs=False, seed=False,
                         smoke="the first 300 training rows, one seed")
    parser.add_argument("--dataset", nargs="+", default=["medical", "enron", "tmc2007-500", "bibtex"])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2],
                        help="seeds of the inner folds and of the rows drawn")
    args = parser.parse_args(argv)
    seeds = [args.seeds[0]] if args.smoke else list(args.seeds)
    result: dict[str, Any] = {"datasets": {}, "cuts": [list(c) for c in CUTS], "seeds": seeds}
    rows = []
    for name in args.dataset:
        data = run_dataset(name, args.data_dir, seeds, max_rows=300 if args.smoke else None)
        result["datasets"][name] = data
        for cut in data["cuts"]:
            rows.append({"dataset": name, "cut": cut["cut"], "seed": cut["seed"],
                         "rows": f"{cut['rows']}/{data['rows']}", "labels": f"{cut['labels']}/{data['labels']}",
                         "σ² whole": f"{cut['whole_chosen']:g}", "σ² cut": f"{cut['chosen']:g}",
                         "regret P@1": f"{cut['regret_P@1']:.2f}", "s": f"{cut['seconds']:.0f}"})
    print_table(rows, ["dataset", "cut", "seed", "rows", "labels", "σ² whole", "σ² cut", "regret P@1", "s"])
    write_results(result, args.output, seeds=seeds)
    return result


if __name__ == "__main__":
    main()
