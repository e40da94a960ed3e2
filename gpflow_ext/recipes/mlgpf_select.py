"""Choosing MLGPF settings on the training file alone: K-fold cross-validation or a validation split.

* candidates are overrides of a recipe's config (:mod:`gpflow_ext.recipes.mlgpf_candidates` reads them from text).
* :func:`kfold_splits` (scikit-learn ``KFold(shuffle=True, random_state=seed)``) and :func:`validation_splits`
  (one shuffled split): row indices of the training file only.
* :func:`select` trains every candidate on every split's fit rows, scores P@1/3/5 on its held-out rows and
  returns each candidate's per-split scores, their mean and standard deviation, and the choice by
  :func:`choose`: the highest mean P@1, with candidates within ``margin`` points of it counted as ties and the
  first of them in the candidates' order chosen (the order states the preference).

The test split is never an argument of these functions: a selection sees only ``(X, Y)`` of the training file.
"""

import dataclasses
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .mlgpf import run_mlgpf
from .mlgpf_auto import grid_end, resolve_config, resolved_config
from .mlgpf_candidates import candidate_config, candidate_name
from .mlgpf_config import epochs_for_min_steps
from .mlgpf_data import tuning_subsample

__all__ = [
    "kfold_splits",
    "validation_splits",
    "select",
    "choose",
    "summarise",
    "RULE",
    "RANK_RULE",
    "rank_across",
]

METRICS = ("P@1", "P@3", "P@5")
#: The parts of a self-tuning fit's record kept with its scores (enough to resolve the config again)
TUNING_KEPT = (
    "chosen",
    "grid",
    "folds",
    "scores",
    "label_variances",
    "label_variance_counts",
    "chosen_exponent",
    "frequency_scores",
    "subsample",
    "input_transform",
    "input_transform_scores",
)
RULE = (
    "the candidate with the highest mean {metric} over the held-out splits; candidates whose mean {metric} is "
    "within {margin:g} points of that highest mean are ties, and the first of them in the candidates' order is "
    "chosen"
)
RANK_RULE = (
    "per dataset, the candidates ranked by their cross-validated mean {metrics} (1 = highest; equal means share "
    "their average rank); the candidate with the lowest mean rank over every dataset and metric is chosen, the "
    "first of equal mean ranks in the candidates' order"
)


def kfold_splits(num_rows: int, folds: int = 5, seed: int = 0) -> list[tuple[np.ndarray, np.ndarray]]:
    """``[(fit_rows, held_out_rows), ...]`` of ``KFold(folds, shuffle=True, random_state=seed)`` over
    ``range(num_rows)`` (the training file's rows)."""
    from sklearn.model_selection import KFold

    if folds < 2 or folds > num_rows:
        raise ValueError(f"folds must be in [2, {num_rows}], got {folds}")
    return list(KFold(n_splits=folds, shuffle=True, random_state=seed).split(np.arange(num_rows)))


def validation_splits(num_rows: int, fraction: float = 0.2, seed: int = 0) -> list[tuple[np.ndarray, np.ndarray]]:
    """One split ``[(fit_rows, held_out_rows)]``: a seeded shuffle of ``range(num_rows)``, the last
    ``round(fraction * num_rows)`` rows held out."""
    if not 0.0 < fraction < 1.0:
        raise ValueError(f"fraction must be in (0, 1), got {fraction}")
    order = np.random.default_rng(seed).permutation(num_rows)
    held = max(1, int(round(fraction * num_rows)))
    return [(np.sort(order[:-held]), np.sort(order[-held:]))]


def summarise(scores: list[dict[str, float]], metrics: Sequence[str] = METRICS) -> dict[str, float]:
    """``{"P@1 mean": ..., "P@1 sd": ...}`` over the splits (sd with ddof 1; 0 for one split)."""
    out = {}
    for metric in metrics:
        if not all(metric in s for s in scores):  # e.g. P@5 of a set with fewer than 5 labels
            continue
        values = np.array([s[metric] for s in scores], dtype=float)
        out[f"{metric} mean"] = float(values.mean())
        out[f"{metric} sd"] = float(values.std(ddof=1)) if values.size > 1 else 0.0
    return out


def choose(candidates: list[dict[str, Any]], metric: str = "P@1", margin: float = 0.0) -> dict[str, Any]:
    """The rule (:data:`RULE`) applied to rows with ``"<metric> mean"``: returns ``{"rule", "metric", "margin",
    "best", "best_mean", "ties", "chosen", "chosen_mean", "gap_to_runner_up"}`` (candidate names; ``ties``:
    every candidate within ``margin`` of the best, in order; ``gap_to_runner_up``: best mean minus the second
    highest mean)."""
    if margin < 0:
        raise ValueError(f"margin must be >= 0, got {margin}")
    means = np.array([c[f"{metric} mean"] for c in candidates], dtype=float)
    best = int(np.argmax(means))  # first of equal maxima
    ties = [i for i, m in enumerate(means) if m >= means[best] - margin - 1e-12]
    chosen = ties[0]
    ordered = np.sort(means)[::-1]
    return {
        "rule": RULE.format(metric=metric, margin=margin),
        "metric": metric,
        "margin": margin,
        "best": candidates[best]["name"],
        "best_mean": float(means[best]),
        "ties": [candidates[i]["name"] for i in ties],
        "chosen": candidates[chosen]["name"],
        "chosen_overrides": candidates[chosen]["overrides"],
        "chosen_mean": float(means[chosen]),
        "gap_to_runner_up": float(ordered[0] - ordered[1]) if len(ordered) > 1 else None,
    }


def select(
    X: Any,
    Y: Any,
    candidates: Sequence[dict[str, Any]],
    splits: Sequence[tuple[np.ndarray, np.ndarray]],
    *,
    recipe: str = "label-gps",
    method: str = "s-linear",
    dataset: str = "bibtex",
    base: dict[str, Any] | None = None,
    metric: str = "P@1",
    margin: float = 0.0,
    run: Callable[..., dict[str, Any]] = run_mlgpf,
    log: Callable[[str], None] | None = None,
    previous: dict[str, Any] | None = None,
    progress: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """Score each candidate (overrides of ``recipe``'s config) on each split of the training file ``(X, Y)``
    (CSR): fit on the split's fit rows, P@1/3/5 on its held-out rows (evaluated once, after the last epoch).
    The work goes split by split (every candidate on split 0, then split 1, ...), so a run stopped early holds
    a like-for-like comparison on its first splits.

    :param previous: an earlier (possibly partial) return value of this function on the same rows and splits:
        a split of a candidate with the same config and split sizes is taken from it instead of refitted.
    :param progress: called with the partial outcome (as returned, ``complete`` False) after each fit.
    :returns: ``{"candidates": [{"name", "overrides", "config", "splits": [{"split", "n_fit", "n_held_out",
        "P@1", "P@3", "P@5", "seconds"}], "P@1 mean", "P@1 sd", ...}], "complete", "selection": choose(...)}``
        (``selection`` is None until every candidate has every split).
    """
    configs = []
    for overrides in candidates:
        config = candidate_config(recipe, method, dataset, overrides, base)
        configs.append(dataclasses.replace(config, eval_every=config.epochs))  # score held-out rows once, at the end
    rows: list[dict[str, Any]] = [
        {"name": candidate_name(o), "overrides": dict(o), "config": c.as_dict(), "splits": []}
        for o, c in zip(candidates, configs)
    ]
    reuse, fits, tunings, cuts = {}, {}, {}, {}

    def as_run(config: dict[str, Any], index: int) -> dict[str, Any]:
        # tuning caps that cut nothing from split ``index``'s fit rows are left out: the same tuning as without them
        every_label = config.get("label_wise_variance") or config.get("frequency_exponent_grid") is not None
        caps = (None if every_label else config.get("tuning_max_labels"), config.get("tuning_budget"))
        if config.get("kernel_variance_grid") is not None and caps != (None, None):
            shape = {"rank": config["rank"], "folds": config["tuning_folds"]}
            known = (index, caps, *shape.values())
            if known not in cuts:
                fit = splits[index][0]
                cuts[known] = tuning_subsample(X[fit], Y[fit], *caps, **shape)[2] is not None
            if cuts[known]:
                return config
        return {k: v for k, v in config.items() if k not in ("tuning_max_labels", "tuning_budget")}

    for row in (previous or {}).get("candidates", []):
        for score in row.get("splits", []):
            sizes = (score["split"], score["n_fit"], score["n_held_out"])
            reuse[(_key(as_run(row["config"], score["split"])), *sizes)] = score
            if "tuning" in score:
                tunings[(_tuning_key(as_run(row["config"], score["split"])), *sizes)] = score["tuning"]
            as_fit = _with_min_steps(row["config"], score["n_fit"])  # its config resolved on that split
            if "tuning" in score:  # a self-tuning candidate's fit
                as_fit = {**as_fit, "kernel_variance": score["tuning"]["chosen"], "kernel_variance_grid": None}
                if as_fit.get("label_wise_variance") or as_fit.get("frequency_exponent_grid"):
                    variances = score["tuning"].get("label_variances")  # none when the chosen γ is 0
                    as_fit.update(
                        label_wise_variance=False, frequency_exponent_grid=None, label_kernel_variances=variances
                    )
            fits[(_key(as_fit), *sizes)] = {k: v for k, v in score.items() if k != "tuning"}

    def outcome(complete: bool) -> dict[str, Any]:
        # a snapshot: later fits do not change an outcome already handed out
        table = [
            {**row, "splits": [dict(x) for x in row["splits"]], **(summarise(row["splits"]) if row["splits"] else {})}
            for row in rows
        ]
        return {
            "candidates": table,
            "complete": complete,
            "selection": choose(table, metric, margin) if complete else None,
        }

    for index, (fit_rows, held_rows) in enumerate(splits):
        for row, config in zip(rows, configs):
            # a self-tuning config is resolved on the split's fit rows first; a fit of the same resolved config
            # on the same split (by another candidate, or in ``previous``) is the same computation and is reused
            start = time.perf_counter()
            sizes = (index, int(len(fit_rows)), int(len(held_rows)))
            earlier = reuse.get((_key(as_run(row["config"], index)), *sizes))
            tuning: dict[str, Any] | None = None
            tuning_key = (_tuning_key(as_run(config.as_dict(), index)), *sizes)
            if config.kernel_variance_grid is not None:  # the same inner cross-validation on the same rows: reused
                tuning = tunings.get(tuning_key)
            if tuning is not None:
                resolved = resolved_config(config.with_min_steps(len(fit_rows)), tuning)
            else:
                resolved, tuning = resolve_config(config, X[fit_rows], Y[fit_rows])
                if tuning is not None:
                    tunings[tuning_key] = tuning
            resolved = dataclasses.replace(resolved, eval_every=resolved.epochs)  # min_steps may add epochs
            key = (_key(resolved.as_dict()), *sizes)
            score = earlier or fits.get(key)
            reused = score is not None
            if score is None:
                result = run(resolved, (X[fit_rows], Y[fit_rows]), (X[held_rows], Y[held_rows]), progress=False)
                score = {
                    "split": index,
                    "n_fit": int(len(fit_rows)),
                    "n_held_out": int(len(held_rows)),
                    **{m: float(result[m]) for m in METRICS if m in result},
                    "seconds": time.perf_counter() - start,
                }
            fits[key] = {k: v for k, v in score.items() if k != "tuning"}
            score = dict(fits[key])
            if tuning is not None:
                score["tuning"] = {k: tuning[k] for k in TUNING_KEPT if k in tuning}
                score["tuning"]["at_end"] = grid_end(tuning["chosen"], tuning["grid"])
            row["splits"].append(dict(score))
            if log is not None:
                log(
                    f"{row['name']} split {index}: "
                    + " ".join(f"{m} {score[m]:.2f}" for m in METRICS if m in score)
                    + (f" σ² {tuning['chosen']:g}" if tuning is not None else "")
                    + (
                        f" (the {score['tuning']['at_end']} end of the grid)"
                        if score.get("tuning", {}).get("at_end")
                        else ""
                    )
                    + (" (reused)" if reused else f" ({score['seconds']:.0f} s)")
                )
            if progress is not None:
                progress(outcome(False))
    return outcome(True)


def _with_min_steps(config: dict[str, Any], num_rows: int) -> dict[str, Any]:
    """A stored config (``as_dict``) as trained on ``num_rows`` rows: ``min_steps`` in its epochs, as in
    :meth:`~gpflow_ext.recipes.mlgpf_config.MLGPFConfig.with_min_steps`, and scored once after the last epoch."""
    if config.get("min_steps") is None:
        return config
    epochs = epochs_for_min_steps(config["epochs"], config["min_steps"], num_rows, config["batch_size"])
    return {**config, "epochs": epochs, "eval_every": epochs, "min_steps": None}


def _tuning_key(config: dict[str, Any]) -> str:
    """The fields of a stored config (``as_dict``) that its inner σ² cross-validation reads
    (:func:`~gpflow_ext.recipes.mlgpf_auto.resolve_config`), as text: equal texts on the same rows are the same
    tuning."""
    import json

    fields = (
        "kernel_variance_grid",
        "tuning_folds",
        "tuning_extensions",
        "seed",
        "rank",
        "input_transform",
        "label_wise_variance",
        "frequency_exponent_grid",
        "random_features",
        "tuning_max_labels",
        "tuning_budget",
        "input_transform_choices",
    )
    defaults = {
        "tuning_extensions": 0,
        "label_wise_variance": False,
        "frequency_exponent_grid": None,
        "random_features": 0,
        "tuning_max_labels": None,
        "tuning_budget": None,
        "input_transform_choices": None,
    }  # files written before these fields existed
    return json.dumps({**defaults, **{k: config.get(k) for k in fields if k in config}}, sort_keys=True)


def _key(config: dict[str, Any]) -> str:
    """The config as text, the same for the same computation: the tuning fields are left out when no σ² grid is
    set (as in files written before they existed), a grid's ``tuning_extensions`` is 0 when absent (files
    written before it existed extended nothing), and ``min_steps`` (a resolved config has it in its epochs) and the
    label-wise fields are left out when unset."""
    import json

    for field in (
        "min_steps",
        "label_wise_variance",
        "label_kernel_variances",
        "frequency_exponent_grid",
        "random_features",
        "init_from_map",
        "rank_by_probability",
        "input_transform_choices",
        "ensemble_across_variances",
        "member_kernel_variances",
        "label_score_weight",
    ):
        if not config.get(field):  # unset: as in files written before the field existed
            config = {k: v for k, v in config.items() if k != field}
    if config.get("ensemble_size") == 1:  # one model: as in files written before the field existed
        config = {k: v for k, v in config.items() if k != "ensemble_size"}
    if config.get("kernel_variance_grid") is None:
        tuning = ("kernel_variance_grid", "tuning_folds", "tuning_extensions", "tuning_max_labels", "tuning_budget")
        config = {k: v for k, v in config.items() if k not in tuning}
    else:
        config = {"tuning_extensions": 0, **config}
    return json.dumps(config, sort_keys=True)


def _unscorable(candidates: list[dict[str, Any]], metric: str) -> bool:
    """Splits were scored but none has ``metric`` (P@5 of a dataset with fewer than 5 labels)."""
    splits = [s for c in candidates for s in c.get("splits", [])]
    return bool(splits) and all(metric not in s for s in splits)


def rank_across(outcomes: dict[str, dict[str, Any]], metrics: Sequence[str] = METRICS) -> dict[str, Any]:
    """:data:`RANK_RULE` over ``{dataset: select(...) outcome}`` (every outcome listing the same candidates in
    the same order; a candidate's means over the splits it has; a metric no candidate could score on a dataset,
    such as P@5 with fewer than 5 labels, is left out of that dataset's ranks): ``{"rule", "metrics", "ranks": {dataset:
    {metric: {candidate: rank}}}, "mean_rank": {candidate: r}, "chosen", "complete"}``."""
    from scipy.stats import rankdata

    if not outcomes:
        raise ValueError("outcomes must hold at least one dataset's selection")
    names = [c["name"] for c in next(iter(outcomes.values()))["candidates"]]
    ranks: dict[str, dict[str, dict[str, float]]] = {}
    for dataset, outcome in outcomes.items():
        rows = outcome["candidates"]
        if [c["name"] for c in rows] != names:
            raise ValueError(f"dataset {dataset!r} lists other candidates than the first dataset: {names}")
        ranks[dataset] = {}
        for metric in metrics:
            means = np.array([c.get(f"{metric} mean", np.nan) for c in rows], dtype=float)
            if _unscorable(rows, metric):
                continue
            if np.isnan(means).any():
                raise ValueError(f"dataset {dataset!r}: a candidate has no {metric} mean yet (no split scored)")
            ranks[dataset][metric] = dict(zip(names, map(float, rankdata(-means, method="average"))))
    mean_rank = {n: float(np.mean([ranks[d][m][n] for d in ranks for m in ranks[d]])) for n in names}
    best = min(mean_rank.values())
    return {
        "rule": RANK_RULE.format(metrics="/".join(metrics)),
        "metrics": list(metrics),
        "ranks": ranks,
        "mean_rank": mean_rank,
        "chosen": next(n for n in names if mean_rank[n] <= best + 1e-12),
        "complete": all(o.get("complete", False) for o in outcomes.values()),
    }
