"""A recipe's test runs against peers' runs, paired over the same test rows (P@1/3/5).

    python -m experiments.xmc_paired --dataset bibtex \\
        --runs RECIPE_SEED0.json RECIPE_SEED1.json ... --peers PEERS.json [--resamples 2000] [--output paired.json]

``--runs``: result files of ``experiments.mlgpf_xmc --save-rows`` (one run each, grouped by ``recipe``);
``--peers``: a result file of ``experiments.xmc_baselines --save-rows --repeats N`` (every run of every peer).
Both keep each run's top 5 label ids per test row. The test labels are read from ``--data-dir`` (same loader and
split as the scripts). The result file stores, for every run, its P@1/3/5 and per test row the number of true
labels among its top 1, 3 and 5 (``hits@k``, one digit per row), so any paired statistic can be recomputed; and
for the recipe against each peer at each k: every pair of runs (difference, win / tie / loss: strictly above,
equal, strictly below), the counts, the peer's median and range, and the mean paired difference with a
percentile bootstrap interval over test rows (``gpflow_ext.recipes.xmc_baselines.paired_comparison``, seeded
by ``--seed``). An interval that covers zero is no difference.
"""
import json
from pathlib import Path
from typing import Any

import experiments.quiet  # noqa: F401  (first: TensorFlow's log lines off before it is imported)

import numpy as np

from experiments.common import REPO, base_parser, print_table, write_results
from gpflow_ext.recipes.mlgpf import load_xmc
from gpflow_ext.recipes.xmc_baselines import decode_rows, paired_comparison, row_hits

KS = (1, 3, 5)


def _relative(path: Path) -> str:
    path = Path(path).resolve()
    try:
        return path.relative_to(REPO).as_posix()
    except ValueError:
        return path.name


def collect_runs(recipe_files: list[Path], peer_files: list[Path]) -> dict[str, list[dict[str, Any]]]:
    """``{group name: [{"source", "run", "seed", "top" (int [N, 5]), "stored": {P@k from the file}}]}``: recipe
    files grouped by their ``recipe`` (``"recipe <name>"``), peer runs by ``method``."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for path in recipe_files:
        record = json.loads(Path(path).read_text())
        if "top" not in record:
            raise SystemExit(f"{path}: no per-row predictions (run experiments.mlgpf_xmc with --save-rows)")
        name = f"recipe {record.get('recipe', record.get('method'))}"
        runs = groups.setdefault(name, [])
        runs.append({"source": _relative(path), "run": len(runs), "seed": record.get("config", {}).get("seed"),
                     "top": decode_rows(record["top"]), "stored": {f"P@{k}": record.get(f"P@{k}") for k in KS},
                     "dataset": record.get("dataset")})
    for path in peer_files:
        record = json.loads(Path(path).read_text())
        for row in record["results"]:
            if "top" not in row:
                raise SystemExit(f"{path}: {row['method']} has no per-row predictions (run with --save-rows)")
            runs = groups.setdefault(row["method"], [])
            runs.append({"source": _relative(path), "run": row.get("run", len(runs)), "seed": row.get("seed"),
                         "top": decode_rows(row["top"]), "stored": {f"P@{k}": row.get(f"P@{k}") for k in KS},
                         "dataset": record.get("dataset")})
    return groups


def main(argv=None) -> dict[str, Any]:
    parser = base_parser(__doc__.splitlines()[0], epochs=False, logdir=False)
    parser.add_argument("--dataset", default="bibtex", help="the dataset the runs were scored on (its test labels)")
    parser.add_argument("--runs", nargs="+", type=Path, required=True,
                        help="result files of experiments.mlgpf_xmc --save-rows (the recipe's runs)")
    parser.add_argument("--peers", nargs="+", type=Path, required=True,
                        help="result files of experiments.xmc_baselines --save-rows (the peers' runs)")
    parser.add_argument("--resamples", type=int, default=2000, help="bootstrap resamples of the test rows")
    parser.add_argument("--level", type=float, default=0.95, help="coverage of the bootstrap interval")
    parser.add_argument("--max-rows", type=int, default=None,
                        help="only the first rows of the test split (runs made on as many rows, e.g. with --smoke)")
    parser.add_argument("--min-peer-runs", type=int, default=10, help="refuse peers with fewer runs than this")
    args = parser.parse_args(argv)
    if args.data_dir is None:
        parser.error("--data-dir (or $GPFLOW_EXT_DATA) is required")
    try:
        _, (_, Y_test) = load_xmc(args.dataset, args.data_dir, args.max_rows)
    except FileNotFoundError as error:
        parser.error(f"--dataset {args.dataset!r}: {error}")
    groups = collect_runs(args.runs, args.peers)
    recipes = [name for name in groups if name.startswith("recipe ")]
    peers = [name for name in groups if not name.startswith("recipe ")]
    methods: dict[str, Any] = {}
    hits: dict[str, dict[int, list[np.ndarray]]] = {}
    for name, runs in groups.items():
        if name in peers and len(runs) < args.min_peer_runs:
            parser.error(f"{name}: {len(runs)} runs, fewer than --min-peer-runs {args.min_peer_runs}")
        stored_runs, hits[name] = [], {k: [] for k in KS}
        for run in runs:
            if run["dataset"] not in (None, args.dataset):
                parser.error(f"{run['source']}: dataset {run['dataset']!r}, not --dataset {args.dataset!r}")
            if run["top"].shape[0] != Y_test.shape[0]:
                parser.error(f"{run['source']}: {run['top'].shape[0]} test rows, the test split has {Y_test.shape[0]}")
            entry = {"source": run["source"], "run": run["run"], "seed": run["seed"]}
            for k in KS:
                h = row_hits(run["top"], Y_test, k)
                hits[name][k].append(h)
                entry[f"P@{k}"] = 100.0 * float(h.mean()) / k
                entry[f"hits@{k}"] = "".join(map(str, h.tolist()))
                stored = run["stored"][f"P@{k}"]
                if stored is not None and abs(stored - entry[f"P@{k}"]) > 1e-6:
                    print(f"note: {name} run {run['run']}: P@{k} {entry[f'P@{k}']:.4f} from the rows, "
                          f"{stored:.4f} stored (padding counted differently)")
            stored_runs.append(entry)
        summary = {}
        for k in KS:
            values = np.array([r[f"P@{k}"] for r in stored_runs])
            summary[f"P@{k}"] = {"median": float(np.median(values)), "min": float(values.min()),
                                 "max": float(values.max()), "mean": float(values.mean())}
        methods[name] = {"runs": stored_runs, "summary": summary}
    comparisons = []
    for recipe in recipes:
        for peer in peers:
            entry = {"a": recipe, "b": peer}
            for k in KS:
                entry[f"P@{k}"] = paired_comparison(hits[recipe][k], hits[peer][k], k=k, resamples=args.resamples,
                                                    seed=args.seed, level=args.level)
            comparisons.append(entry)
    rows = [{"method": name, "runs": len(m["runs"]),
             **{f"P@{k} {s}": m["summary"][f"P@{k}"][s] for k in KS for s in ("median", "min", "max")}}
            for name, m in methods.items()]
    print_table(rows, ["method", "runs", "P@1 median", "P@1 min", "P@1 max", "P@3 median", "P@5 median"],
                title=f"{args.dataset} test split: each method's runs")
    table = []
    for c in comparisons:
        for k in KS:
            p = c[f"P@{k}"]
            table.append({"pair": f"{c['a']} - {c['b']}", "k": k, "mean diff": p["mean_difference"],
                          "low": p["interval"][0], "high": p["interval"][1],
                          "W/T/L": f"{p['wins']}/{p['ties']}/{p['losses']}"})
    print_table(table, ["pair", "k", "mean diff", "low", "high", "W/T/L"],
                title=f"paired over the {Y_test.shape[0]} test rows (P@k points; {args.level:g} bootstrap interval)")
    result = {"dataset": args.dataset, "split": "test", "n_test": int(Y_test.shape[0]), "max_rows": args.max_rows,
              "ks": list(KS), "bootstrap": {"resamples": args.resamples, "seed": args.seed, "level": args.level,
                                            "over": "test rows"},
              "rule": "win / tie / loss: a run's P@k strictly above / equal to / strictly below the other run's; "
                      "a mean difference whose interval covers zero is no difference",
              "methods": methods, "comparisons": comparisons}
    write_results(result, args.output, seeds=[args.seed])
    return result


if __name__ == "__main__":
    main()
