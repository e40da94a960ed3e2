"""The ``label-gps-auto`` recipe's prior variance, chosen from the training rows alone.

``label-gps`` is one linear GP per label on the span of the leading right-singular vectors X̃ of the (TF-IDF,
L2-normalised) rows, with the basis itself as inducing inputs: f_k(x) = x X̃ᵀ u_k + b_k, u_k ~ N(0, σ² I_R),
a Bernoulli-logit likelihood per label. :func:`resolve_config` chooses σ² for a config whose
``kernel_variance_grid`` is set by an inner K-fold cross-validation on the training rows it is given:

* each inner fold fits the rows' transform (e.g. the IDF) and the basis X̃
  (:func:`~gpflow_ext.inducing_variables.subspace.subspace_basis`) on its fit rows, and for every σ² of the
  grid the maximum a posteriori (MAP) weights of the same model: the same features Φ = X X̃ᵀ, prior, likelihood
  and per-label bias, by full-batch L-BFGS over all labels at once (:func:`~gpflow_ext.recipes.mlgpf_map.map_weights`,
  warm-started along the grid), instead of the variational posterior trained by Adam;
* the held-out rows are ranked by the MAP scores f and scored by P@1/3/5;
* the σ² with the highest mean held-out P@1 is chosen (the first of equal means, the grid in ascending order);
* while the choice is an end of the grid, the grid is extended past that end by one more step of the grid's own
  ratio there (doubling past 256 on the default grid), at most ``tuning_extensions`` times (default 0), and the
  choice is made again; the record says whether the final choice is an end (``"at_end"``: ``"lowest"``,
  ``"highest"`` or None), where a wider grid might have chosen beyond it.

The MAP twin costs a few full-batch passes per σ², not the recipe's 100 epochs, so the whole grid costs less
than one fit of the model. The returned config has ``kernel_variance`` set and ``kernel_variance_grid`` cleared;
the record (rule, grid, folds, every σ²'s scores, the choice) goes into the run's results.

Two per-label forms reuse the same MAP scores: given σ², the labels' MAP weights are independent, so label k's
held-out scores at any grid value are already computed. ``label_wise_variance`` chooses a σ²_k per label by its
held-out log-likelihood (:data:`LABEL_WISE_RULE`); ``frequency_exponent_grid`` chooses (σ², γ) of the prior
σ²_k = σ² (n_k / n̄)^γ by held-out P@1 (:data:`FREQUENCY_RULE`, ``"chosen"`` is then that pair's σ²). Both give
``label_kernel_variances``, which the model takes as ``latent_scales``.
"""

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..data.transforms import ROW_TRANSFORMS
from ..metrics import ranking_metrics
from ..validation import check_input_matrix, check_positive_int
from .mlgpf_config import MLGPFConfig
from .mlgpf_data import tuning_subsample
from .mlgpf_ensemble import member_variances
from .mlgpf_label_priors import (
    FREQUENCY_RULE,
    LABEL_WISE_RULE,
    exponent_order,
    frequency_choice,
    label_log_likelihoods,
    label_wise_choice,
    relative_label_frequencies,
    snapped_indices,
)
from .mlgpf_map import map_scores

__all__ = [
    "TUNING_RULE",
    "LABEL_WISE_RULE",
    "FREQUENCY_RULE",
    "relative_label_frequencies",
    "snapped_indices",
    "label_log_likelihoods",
    "resolved_config",
    "tune_kernel_variance",
    "grid_end",
    "TRANSFORM_RULE",
    "resolve_config",
]

TUNING_RULE = (
    "inner {folds}-fold cross-validation on the training rows (KFold, shuffled, random_state = the config's seed): "
    "per fold, the transform and the rank-{rank} basis fitted on the fold's fit rows, the MAP weights of the "
    "model (same features, prior N(0, σ² I), Bernoulli-logit likelihood, per-label bias) for each σ² of the "
    "grid, the held-out rows ranked by the MAP scores; σ² with the highest mean held-out P@1 is chosen (the "
    "smallest of equal means); while the choice is an end of the grid, one more step of the grid's ratio is "
    "added past that end and the choice made again, at most {extensions} times"
)


def tune_kernel_variance(
    X: Any,
    Y: Any,
    grid: tuple[float, ...],
    *,
    folds: int = 3,
    seed: int = 0,
    rank: int = 2000,
    transform: Any = None,
    max_iter: int = 50,
    extensions: int = 0,
    label_wise: bool = False,
    frequency_exponents: tuple[float, ...] | None = None,
    max_labels: int | None = None,
    budget: float | None = None,
) -> dict[str, Any]:
    """The record of :data:`TUNING_RULE` on the training rows ``(X, Y)``: ``{"rule", "grid", "initial_grid",
    "folds", "seed", "rank", "scores": [{"kernel_variance", "P@1 mean", "P@3 mean", "P@5 mean", "P@1 per fold"}],
    "chosen", "at_end"}``. ``transform`` (as ``MLGPFConfig.input_transform``) is fitted on each inner fold's fit
    rows. ``extensions``: how many values may be added past an end of ``grid`` that is chosen (``grid`` then lists
    them too; ``initial_grid`` is the grid given). ``label_wise``: also choose a σ²_k per label from the scored grid
    (:data:`LABEL_WISE_RULE`), recorded as ``"label_variances"`` [K] and ``"label_variance_counts"`` ([σ², number of labels] per σ²).
    ``frequency_exponents``: also choose γ of a label-frequency prior jointly with σ² (:data:`FREQUENCY_RULE`);
    the record then has ``"frequency_scores"`` (every (σ², γ) pair), ``"chosen_exponent"`` and, unless γ = 0,
    ``"label_variances"`` for the rows given. ``max_labels`` / ``budget``: the inner folds see the rows and labels
    of :func:`~gpflow_ext.recipes.mlgpf_data.tuning_subsample` (recorded as ``"subsample"`` where it cuts); with
    ``label_wise`` or ``frequency_exponents`` every label is kept (``max_labels`` unused)."""
    from sklearn.model_selection import KFold

    initial = tuple(sorted({float(v) for v in grid}))
    if label_wise or frequency_exponents is not None:
        max_labels = None  # a σ²_k is chosen for every label: only the rows are cut
    all_rows_labels, (X, Y, subsample) = (
        Y,
        tuning_subsample(X, Y, max_labels, budget, rank=rank, folds=folds, seed=seed),
    )
    num_rows = X.shape[0]
    if folds < 2 or folds > num_rows:
        raise ValueError(f"tuning_folds must be in [2, {num_rows}] (the training rows), got {folds}")
    extensions = check_positive_int(extensions, "tuning_extensions", minimum=0)
    if frequency_exponents is not None and (extensions or label_wise):
        raise ValueError("frequency_exponents are chosen on the grid as given: no tuning_extensions or label_wise")
    exponents = None if frequency_exponents is None else exponent_order(frequency_exponents)
    pair_scores: dict[tuple[float, float], list[dict[str, float]]] = {}  # (σ², γ) -> per-fold P@k
    k = min(5, Y.shape[1])
    splits = list(KFold(n_splits=folds, shuffle=True, random_state=seed).split(np.arange(num_rows)))
    label_log_lik: dict[float, np.ndarray] = {}  # σ² -> [K] held-out log-likelihood summed over the inner folds

    def score(variances: list[float]) -> dict[float, dict[str, Any]]:
        # one inner fold's basis and features at a time (memory of one fold), σ² warm-started in the order given
        per_fold: dict[float, list[dict[str, float]]] = {v: [] for v in variances}
        for fit, held in splits:
            X_fit, X_held = X[fit], X[held]
            if transform is not None:
                fitted = transform.fit(X_fit) if hasattr(transform, "fit") else transform
                X_fit, X_held = fitted(X_fit), fitted(X_held)
            fold_scores = map_scores(X_fit, Y[fit], X_held, variances, rank, seed, max_iter)  # V × [N_held, K]
            for variance, scores in zip(variances, fold_scores):
                top = np.argsort(-scores, axis=1, kind="stable")[:, :k]  # [N_held, k]
                metrics = ranking_metrics(top, Y[held], ks=[j for j in (1, 3, 5) if j <= k])
                per_fold[variance].append({m: v for m, v in metrics.items() if m.startswith("P@")})
                if label_wise:
                    label_log_lik[variance] = label_log_lik.get(variance, 0.0) + label_log_likelihoods(scores, Y[held])
            if exponents is not None:  # labels are independent given their σ²_k: columns of the grid's scores
                stacked = np.stack(fold_scores)  # [V, N_held, K]
                for exponent in exponents:
                    for variance in variances:
                        index = snapped_indices(variances, variance, exponent, Y[fit])  # [K]
                        scores = np.take_along_axis(stacked, index[None, None, :], axis=0)[0]  # [N_held, K]
                        top = np.argsort(-scores, axis=1, kind="stable")[:, :k]  # [N_held, k]
                        metrics = ranking_metrics(top, Y[held], ks=[j for j in (1, 3, 5) if j <= k])
                        pair_scores.setdefault((variance, exponent), []).append(
                            {m: v for m, v in metrics.items() if m.startswith("P@")}
                        )
        table = {}
        for variance, rows in per_fold.items():
            entry: dict[str, Any] = {"kernel_variance": variance, "P@1 per fold": [r["P@1"] for r in rows]}
            for metric in rows[0]:
                entry[f"{metric} mean"] = float(np.mean([r[metric] for r in rows]))
            table[variance] = entry
        return table

    table = score(list(initial))  # ascending: each σ² warm-starts the next
    for _ in range(extensions):
        values = sorted(table)
        chosen = _best(table)
        end = grid_end(chosen, values)
        if end is None:
            break
        step = values[-1] / values[-2] if end == "highest" else values[0] / values[1]
        table.update(score([chosen * step]))
    values = sorted(table)
    chosen = _best(table)
    record = {
        "rule": TUNING_RULE.format(folds=folds, rank=rank, extensions=extensions),
        "grid": values,
        "initial_grid": list(initial),
        "folds": folds,
        "seed": seed,
        "rank": rank,
        "scores": [table[v] for v in values],
        "chosen": chosen,
        **(label_wise_choice(label_log_lik, chosen) if label_wise else {}),
        **(frequency_choice(pair_scores, exponents, values, all_rows_labels) if exponents is not None else {}),
        **({"subsample": subsample} if subsample is not None else {}),
    }  # a frequency prior's "chosen" is the σ² of its chosen pair, the one trained with
    return {**record, "at_end": grid_end(record["chosen"], values)}


def _best(table: dict[float, dict[str, Any]]) -> float:
    """The σ² with the highest mean held-out P@1, the smallest of equal means."""
    values = sorted(table)
    return values[int(np.argmax([table[v]["P@1 mean"] for v in values]))]


def grid_end(chosen: float, grid: Sequence[float]) -> str | None:
    """``"lowest"`` / ``"highest"`` when ``chosen`` is that end of ``grid`` (two or more values), else None."""
    values = sorted(float(v) for v in grid)
    if len(values) < 2:
        return None
    return "lowest" if chosen == values[0] else "highest" if chosen == values[-1] else None


TRANSFORM_RULE = (
    "each of the input_transform_choices in turn: σ² chosen by the rule above on the rows through that transform "
    "(fitted on each inner fold's fit rows); the transform whose chosen σ² has the highest mean held-out P@1 is "
    "chosen (the first listed of equal means)"
)


def resolve_config(
    config: MLGPFConfig, X: Any, Y: Any, *, name: str = "X"
) -> tuple[MLGPFConfig, dict[str, Any] | None]:
    """The config as trained on the training rows ``(X, Y)``: ``min_steps`` turned into epochs
    (:meth:`~gpflow_ext.recipes.mlgpf_config.MLGPFConfig.with_min_steps`) and, when ``config.kernel_variance_grid``
    is set, σ² chosen by :func:`tune_kernel_variance` on those rows (as read: the config's ``rows_transform()`` is
    fitted inside each inner fold). With ``input_transform_choices`` the rows' transform is chosen too
    (:data:`TRANSFORM_RULE`; the record then has ``"input_transform"``, the chosen name, and
    ``"input_transform_scores"``; without a grid, at the config's σ²). Returns ``(config with kernel_variance = σ²
    and no grid, record)``, or ``(config, None)`` when there is nothing to choose. ``name``: what errors call X."""
    if not isinstance(config, MLGPFConfig):
        raise TypeError(f"config must be an MLGPFConfig, got {type(config).__name__}")
    check_input_matrix(X, name, allow_sparse=True, integer="cast", what="inputs")  # rows as given, before any fold
    config = config.with_min_steps(X.shape[0])
    if config.kernel_variance_grid is None and config.input_transform_choices is None:
        return config, None
    if config.input_transform_choices is None:
        record = _tune(config, X, Y)
        return resolved_config(config, record), record
    tuned = []  # (name, its tuning record), in the order listed
    for name in config.input_transform_choices:
        candidate = dataclasses.replace(
            config,
            input_transform=ROW_TRANSFORMS[name](),
            input_transform_choices=None,
            kernel_variance_grid=_grid(config),
        )
        tuned.append((name, _tune(candidate, X, Y)))
    scores = [{"input_transform": name, **_chosen_scores(record)} for name, record in tuned]
    name, record = tuned[int(np.argmax([entry["P@1 mean"] for entry in scores]))]  # the first of equal means
    record = {
        **record,
        "input_transform": name,
        "input_transform_rule": TRANSFORM_RULE,
        "input_transform_scores": scores,
    }
    return resolved_config(config, record), record


def _tune(config: MLGPFConfig, X: Any, Y: Any) -> dict[str, Any]:
    """:func:`tune_kernel_variance` with the config's settings."""
    return tune_kernel_variance(
        X,
        Y,
        _grid(config),
        folds=config.tuning_folds,
        seed=config.seed,
        rank=config.rank,
        transform=config.rows_transform(),
        extensions=config.tuning_extensions,
        label_wise=config.label_wise_variance,
        frequency_exponents=config.frequency_exponent_grid,
        max_labels=config.tuning_max_labels,
        budget=config.tuning_budget,
    )


def _grid(config: MLGPFConfig) -> tuple[float, ...]:
    """The σ² values to choose from: ``kernel_variance_grid``, else the fixed ``kernel_variance`` alone."""
    if config.kernel_variance_grid is not None:
        return config.kernel_variance_grid
    if config.kernel_variance is None:
        raise ValueError("a choice on the training rows needs kernel_variance_grid or kernel_variance")
    return (config.kernel_variance,)


def _chosen_scores(record: dict[str, Any]) -> dict[str, Any]:
    """The chosen σ² of a tuning record and its mean held-out P@k."""
    entry = next(e for e in record["scores"] if e["kernel_variance"] == record["chosen"])
    return {"kernel_variance": record["chosen"], **{k: v for k, v in entry.items() if k.endswith(" mean")}}


def resolved_config(config: MLGPFConfig, record: dict[str, Any]) -> MLGPFConfig:
    """``config`` with the choices of a tuning ``record`` (:func:`tune_kernel_variance`) in place of its rules:
    ``kernel_variance`` = the chosen σ²; with ``label_wise_variance`` or ``frequency_exponent_grid`` the
    ``label_kernel_variances`` (None when the chosen γ is 0: every label at σ², the plain rule's model); the grids
    cleared; with ``input_transform_choices`` the record's ``input_transform``; with ``ensemble_across_variances``
    the members' σ² (:func:`~gpflow_ext.recipes.mlgpf_ensemble.member_variances`)."""
    if config.input_transform_choices is not None:
        if record.get("input_transform") not in config.input_transform_choices:
            raise ValueError("config.input_transform_choices is set but the tuning record chose none of them")
        transform = ROW_TRANSFORMS[record["input_transform"]]()
        config = dataclasses.replace(config, input_transform=transform, input_transform_choices=None)
    if config.ensemble_across_variances:
        members = member_variances(record, config.ensemble_size)
        config = dataclasses.replace(config, ensemble_across_variances=False, member_kernel_variances=members)
    if not (config.label_wise_variance or config.frequency_exponent_grid is not None):
        return dataclasses.replace(config, kernel_variance=record["chosen"], kernel_variance_grid=None)
    if config.label_wise_variance and "label_variances" not in record:
        raise ValueError("config.label_wise_variance is set but the tuning record has no label_variances")
    if config.frequency_exponent_grid is not None and "chosen_exponent" not in record:
        raise ValueError("config.frequency_exponent_grid is set but the tuning record has no chosen_exponent")
    variances = record.get("label_variances")
    return dataclasses.replace(
        config,
        kernel_variance=record["chosen"],
        kernel_variance_grid=None,
        label_wise_variance=False,
        frequency_exponent_grid=None,
        label_kernel_variances=None if variances is None else tuple(variances),
    )
