"""A quick screen of ``best``'s variants by their MAP twins on the outer folds of a stored cross-validation.

    python -m experiments.mlgpf_map_screen --dataset medical enron tmc2007-500 bibtex \
        --tuning docs/mlgpf/results/selection/four-sets-cv-5fold-transform.json [--candidate-index 1] \
        [--label-score-weights 0.25,0.5,1] --output FILE

A variant of the recipe costs minutes to hours per cross-validation (three Adam-trained ensembles per fold); its MAP
twin (``gpflow_ext.recipes.mlgpf_map``, the model the inner cross-validation of σ² already fits) costs seconds. For
each training file, the rows are split as ``experiments.mlgpf_select`` splits them (``KFold(--folds, shuffle=True,
random_state=--seed)``), and on each fold the stored tuning record of ``--tuning``'s candidate ``--candidate-index``
(the rows' transform and σ² chosen on that fold's fit rows, and each transform's own σ²) gives the settings. The
held-out rows are then ranked by the MAP scores of:

* ``chosen``: the chosen transform at its σ² (the twin of the recipe's model);
* ``transforms averaged``: every transform of the record at its own σ², their probabilities averaged;
* ``label scores α=…``: the chosen transform's rows joined with α times the out-of-fold label probabilities of a
  first stage (``gpflow_ext.recipes.mlgpf_stacking.LabelScoreFeatures``, ``MLGPFConfig.label_score_weight``), one
  value of α per ``--label-score-weights``.

Only the training files are read. A screen picks which variants are worth the recipe's own cross-validation; it does
not choose the recipe.
"""

import time
from typing import Any

import experiments.quiet  # noqa: F401  (first: TensorFlow's log lines off before it is imported)

import numpy as np
import scipy.special

from experiments.common import base_parser, print_table
from gpflow_ext.data.transforms import ROW_TRANSFORMS
from gpflow_ext.metrics import ranking_metrics
from gpflow_ext.recipes.mlgpf_data import load_training_file
from gpflow_ext.recipes.mlgpf_map import map_scores
from gpflow_ext.recipes.mlgpf_select import kfold_splits
from gpflow_ext.recipes.mlgpf_stacking import LabelScoreFeatures
from gpflow_ext.results import write_results

KS = (1, 3, 5)


def precision(scores: np.ndarray, Y: Any) -> dict[str, float]:
    """P@1/3/5 (up to the number of labels) of the rows ranked by ``scores`` [N, K]."""
    ks = [k for k in KS if k <= Y.shape[1]]
    top = np.argsort(-scores, axis=1, kind="stable")[:, : max(ks)]  # [N, k]
    return {name: float(value) for name, value in ranking_metrics(top, Y, ks=ks).items() if name.startswith("P@")}


def screen_fold(X, Y, fit, held, tuning: dict[str, Any], weights: list[float], rank: int, seed: int):
    """The variants' held-out P@k on one outer fold, with the stored ``tuning`` record's choices."""
    variances = {e["input_transform"]: float(e["kernel_variance"]) for e in tuning["input_transform_scores"]}
    chosen, variance = tuning["input_transform"], float(tuning["chosen"])
    rows, scores = {}, {}
    for name in variances:
        transform = ROW_TRANSFORMS[name]().fit(X[fit])
        rows[name] = X_fit, X_held = transform(X[fit]), transform(X[held])
        scores[name] = map_scores(X_fit, Y[fit], X_held, [variances[name]], rank, seed)[0]  # [N_held, K]
    out = {"chosen": precision(scores[chosen], Y[held])}
    averaged = np.mean([scipy.special.expit(s) for s in scores.values()], axis=0)  # [N_held, K]
    out["transforms averaged"] = precision(averaged, Y[held])
    X_fit, X_held = rows[chosen]
    for weight in weights:
        features = LabelScoreFeatures(weight, variance, folds=3, rank=rank, seed=seed).fit(X_fit, Y[fit])
        stacked = map_scores(features.training_rows, Y[fit], features(X_held), [variance], rank, seed)[0]
        out[f"label scores α={weight:g}"] = precision(stacked, Y[held])
    return out


def main(argv=None) -> dict[str, Any]:
    parser = base_parser(
        __doc__.splitlines()[0], float32=False, logdir=False, epochs=False, smoke="the first two folds, one weight"
    )
    parser.add_argument("--dataset", nargs="+", default=["medical", "enron", "tmc2007-500", "bibtex"])
    parser.add_argument("--tuning", required=True, help="a selection file of experiments.mlgpf_select")
    parser.add_argument(
        "--candidate-index",
        type=int,
        default=1,
        help="its candidate whose tuning records (with input_transform_choices) give the settings",
    )
    parser.add_argument("--label-score-weights", default="0.25,0.5,1", help="comma-separated α values")
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--rank", type=int, default=2000)
    args = parser.parse_args(argv)
    from experiments.report import load

    stored = load(args.tuning)
    weights = [float(w) for w in args.label_score_weights.split(",")][: 1 if args.smoke else None]
    result: dict[str, Any] = {
        "tuning": args.tuning,
        "candidate_index": args.candidate_index,
        "folds": args.folds,
        "seed": args.seed,
        "label_score_weights": weights,
        "datasets": {},
    }
    table = []
    for name in args.dataset:
        X, Y = load_training_file(name, args.data_dir)
        candidate = stored["datasets"][name]["candidates"][args.candidate_index]
        records = {s["split"]: s["tuning"] for s in candidate["splits"]}
        per_fold = []
        for index, (fit, held) in enumerate(kfold_splits(X.shape[0], args.folds, args.seed)):
            if args.smoke and index >= 2:
                break
            start = time.perf_counter()
            scores = screen_fold(X, Y, fit, held, records[index], weights, args.rank, args.seed)
            per_fold.append({"split": index, "seconds": time.perf_counter() - start, "variants": scores})
        means = {
            variant: {
                f"{k} mean": float(np.mean([f["variants"][variant][k] for f in per_fold])) for k in scores[variant]
            }
            for variant in per_fold[0]["variants"]
        }
        result["datasets"][name] = {"candidate": candidate["name"], "folds": per_fold, "means": means}
        for variant, mean in means.items():
            table.append({"dataset": name, "variant": variant, **{k: f"{v:.2f}" for k, v in mean.items()}})
    print_table(table, ["dataset", "variant", "P@1 mean", "P@3 mean", "P@5 mean"])
    write_results(result, args.output, seeds=[args.seed])
    return result


if __name__ == "__main__":
    main()
