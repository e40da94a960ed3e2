"""MLGPF on extreme multi-label data sets: the paper's Tables 2 and 4 (and Table 5's timing).

    python -m experiments.mlgpf_xmc --data-dir DIR --dataset bibtex --method s-linear \\
        [--recipe paper] [--epochs E] [--output results.json] [--logdir runs/bibtex-s-linear]

``--data-dir`` is a folder laid out like shared/data: ``NAME/NAME-train.arff(.gz)`` +
``NAME-test.arff`` + ``NAME.xml`` (Mulan), or the Extreme Classification Repository text files
(``NAME_train.txt``/``NAME_test.txt``, ``train.txt``/``test.txt``, or ``NAME_data.txt`` with its split
files); see ``gpflow_ext.recipes.mlgpf.load_xmc``. ``--recipe`` picks the settings
(``gpflow_ext.recipes.mlgpf_config.RECIPES``; ``paper``: the paper's per dataset and method, Section 4:
P, M, R, batch size, epochs); explicit flags override them. Prints P@1/3/5 beside the paper's numbers
and writes results JSON (P@k, nDCG@k, seconds per epoch, final bound, the process's peak resident memory
``peak_rss_gb``, which covers loading, any inner cross-validation and training; with ``--save-rows`` the top 5 label
ids of every test row, for ``experiments.xmc_paired``); TensorBoard gets the bound per
step (Figure 1) and P@k per evaluation (``metrics/P@k``).
"""
from typing import Any

import experiments.quiet  # noqa: F401  (first: TensorFlow's log lines off before it is imported)

from benchmarks.amazoncat_scale import peak_rss_gb
from experiments.common import base_parser, print_table, write_results
from experiments.paper_values import MLGPF as PAPER
from gpflow_ext.recipes.mlgpf import load_xmc, run_mlgpf
from gpflow_ext.recipes.mlgpf_config import DATASET_SETTINGS, METHODS, RECIPES

#: ``--smoke``: rows kept per split and the settings used unless given on the command line
SMOKE: dict[str, int] = dict(max_rows=400, epochs=2, num_latent_gps=4, num_inducing=20, rank=30, batch_size=200,
                             num_negative_samples=20)
#: command-line flags that override fields of the recipe's config
OVERRIDES = ("epochs", "seed", "float32", "learning_rate", "num_negative_samples", "num_latent_gps", "num_inducing",
             "rank", "batch_size", "eval_every", "ensemble_size", "rank_by_probability", "input_transform_choices",
             "ensemble_across_variances", "label_score_weight")


def paper_row(dataset: str, method: str) -> dict[str, float | None]:
    """The paper's P@1/3/5 for (dataset, method) from Table 2 (optimised) or Table 4 (fixed)."""
    table = PAPER["table4" if method.startswith(("sf-", "f-")) else "table2"]
    row = table.get(dataset, {}).get(method, {})
    minutes = PAPER["table5_minutes_per_epoch"].get(dataset, {}).get(method)
    return {"P@1": row.get("P@1"), "P@3": row.get("P@3"), "P@5": row.get("P@5"),
            "seconds_per_epoch": None if minutes is None else 60.0 * minutes}


def print_comparison(results) -> str:
    rows = []
    for r in results:
        paper = r["paper"]
        rows.append({
            "dataset": r["dataset"], "method": r["method"], "epochs": r["epochs_trained"],
            "P@1": r.get("P@1"), "paper P@1": paper.get("P@1"), "P@3": r.get("P@3"), "paper P@3": paper.get("P@3"),
            "P@5": r.get("P@5"), "paper P@5": paper.get("P@5"), "s/epoch": r.get("seconds_per_epoch"),
            "paper s/epoch": paper["seconds_per_epoch"],
        })
    return print_table(rows, ["dataset", "method", "epochs", "P@1", "paper P@1", "P@3", "paper P@3", "P@5",
                              "paper P@5", "s/epoch", "paper s/epoch"], title="MLGPF: ours vs the paper (Tables 2, 4, 5)")


def main(argv=None) -> dict[str, Any]:
    parser = base_parser(__doc__.splitlines()[0], float32=True, progress=True,
                         smoke=f"the first {SMOKE['max_rows']} rows of each split, small P, M, R (explicit flags win)")
    parser.add_argument("--dataset", default="bibtex",
                        help="a multi-label dataset under --data-dir in a Mulan or XMC layout "
                             "(gpflow_ext.data.load_multilabel); the paper's settings exist for "
                             f"{', '.join(sorted(DATASET_SETTINGS))}, other names get Bibtex's")
    parser.add_argument("--method", default="s-linear", choices=METHODS)
    parser.add_argument("--recipe", default="paper", choices=sorted(RECIPES),
                        help="named settings (gpflow_ext.recipes.mlgpf_config.RECIPES); paper: the paper's per --method")
    parser.add_argument("--learning-rate", type=float, default=None, help="Adam's step (default: the recipe's)")
    parser.add_argument("--num-negative-samples", type=int, default=None,
                        help="negative labels sampled per instance (default: the recipe's; paper: all labels)")
    parser.add_argument("--num-latent-gps", type=int, default=None, help="P (default: the recipe's)")
    parser.add_argument("--num-inducing", type=int, default=None, help="M (default: the recipe's)")
    parser.add_argument("--rank", type=int, default=None, help="R (default: the recipe's)")
    parser.add_argument("--batch-size", type=int, default=None, help="|X_b| (default: the recipe's)")
    parser.add_argument("--eval-every", type=int, default=None, help="test P@k every this many epochs (default 1)")
    parser.add_argument("--ensemble-size", type=int, default=None,
                        help="train this many models (seeds --seed, --seed + 1, ...) and rank by their averaged mean "
                             "utilities (default: the recipe's: 3 for best, else 1)")
    parser.add_argument("--rank-by-probability", action="store_true", default=None,
                        help="rank labels by p(y_k = 1 | x) instead of the mean utilities (default: the recipe's)")
    parser.add_argument("--input-transform-choices", type=lambda text: tuple(text.split(",")), default=None,
                        help="the rows' transforms the recipe's inner cross-validation chooses from with σ², e.g. "
                             "tfidf,l2 (names of gpflow_ext.data.transforms.ROW_TRANSFORMS; default: the recipe's; "
                             "needs a recipe that chooses σ², such as label-gps-auto or best)")
    parser.add_argument("--ensemble-across-variances", action="store_true", default=None,
                        help="member e of the ensemble trains at the e-th best σ² of the recipe's inner "
                             "cross-validation instead of all at the chosen one (needs a recipe that chooses σ² and "
                             "--ensemble-size of at least 2; default: the recipe's)")
    parser.add_argument("--label-score-weight", type=float, default=None,
                        help="α > 0 joins the rows with α times a first stage's out-of-fold label probabilities "
                             "(gpflow_ext.recipes.mlgpf_stacking; 0: none; default: the recipe's)")
    parser.add_argument("--save-rows", action="store_true",
                        help="store the top 5 label ids of every test row in the results JSON (key 'top', in the "
                             "compact form of gpflow_ext.recipes.xmc_baselines.encode_rows), for paired comparisons "
                             "(experiments.xmc_paired)")
    args = parser.parse_args(argv)
    if args.data_dir is None:
        parser.error("--data-dir (or $GPFLOW_EXT_DATA) is required")
    if args.smoke:
        for name, value in SMOKE.items():
            if name != "max_rows" and getattr(args, name) is None:
                setattr(args, name, value)
    overrides = {name: getattr(args, name) for name in OVERRIDES}
    overrides["float32"] = args.float32 or None
    try:
        config = RECIPES[args.recipe](args.method, args.dataset, **overrides)
    except (TypeError, ValueError) as error:
        parser.error(f"--recipe {args.recipe} with the flags given: {error}")
    try:
        train, test = load_xmc(args.dataset, args.data_dir, SMOKE["max_rows"] if args.smoke else None)
    except FileNotFoundError as error:
        parser.error(f"--dataset {args.dataset!r}: {error}")
    result = run_mlgpf(config, train, test, logdir=args.logdir, progress=not args.no_progress,
                       save_rows=args.save_rows)
    result = {"dataset": args.dataset, "recipe": args.recipe, **result, "peak_rss_gb": peak_rss_gb(),
              "paper": paper_row(args.dataset, config.method)}
    print_comparison([result])
    write_results(result, args.output)
    return result


if __name__ == "__main__":
    main()
