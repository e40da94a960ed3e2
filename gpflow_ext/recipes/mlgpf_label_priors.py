"""Per-label prior variances chosen by the inner cross-validation of
:func:`~gpflow_ext.recipes.mlgpf_auto.tune_kernel_variance`, from the MAP scores it already computes: one σ²_k per
label by held-out log-likelihood (:data:`LABEL_WISE_RULE`), or a label-frequency prior σ²_k = σ² (n_k / n̄)^γ
(:data:`FREQUENCY_RULE`)."""

from collections.abc import Sequence
from typing import Any

import numpy as np
import scipy.sparse

__all__ = [
    "FREQUENCY_RULE",
    "LABEL_WISE_RULE",
    "exponent_order",
    "frequency_choice",
    "label_log_likelihoods",
    "label_wise_choice",
    "relative_label_frequencies",
    "snapped_indices",
]

#: The label-frequency rule (``MLGPFConfig.frequency_exponent_grid``), on the same inner folds and MAP scores as
#: :data:`~gpflow_ext.recipes.mlgpf_auto.TUNING_RULE`: no MAP fit beyond the grid's, since label k's scores at a
#: grid value are already computed.
FREQUENCY_RULE = (
    "label k's prior variance is σ² (n_k / n̄)^γ (n_k: its positives in the rows + 1, n̄ their geometric mean over "
    "labels), taken to the nearest value of the grid in log scale; label k's held-out MAP scores are those at that "
    "value; the pair (σ², γ) with the highest mean held-out P@1 is chosen (ties: γ = 0 first, then by |γ|, then the "
    "smaller σ²)"
)

#: The label-wise rule (``MLGPFConfig.label_wise_variance``), on the same inner folds and MAP scores as
#: :data:`~gpflow_ext.recipes.mlgpf_auto.TUNING_RULE`. The MAP weights of the K labels are independent given σ²,
#: so label k's held-out scores at σ² are those of a model in which only label k has that prior variance.
LABEL_WISE_RULE = (
    "per label k, the σ² of the scored grid with the highest held-out Bernoulli log-likelihood of label k under "
    "the MAP scores, summed over the inner folds (the smallest of equal values); the model is trained with prior "
    "variance σ²_k for label k"
)


def exponent_order(exponents: Sequence[float]) -> list[float]:
    """γ values without repeats, 0 first and then by the magnitude of γ (negative first): the order in which ties are broken."""
    values = sorted({float(g) for g in exponents}, key=lambda g: (abs(g), g))
    if not values or not all(np.isfinite(values)):
        raise ValueError(f"frequency_exponents must be a non-empty sequence of finite floats, got {exponents!r}")
    return values


def relative_label_frequencies(Y: Any) -> np.ndarray:
    """(n_k + 1) / geometric mean of (n + 1) [K]: each label's positive count in ``Y`` [N, K], plus one, relative
    to the geometric mean over labels."""
    counts = np.asarray(Y.sum(axis=0), dtype=np.float64).ravel() + 1.0  # [K]
    return counts / np.exp(np.mean(np.log(counts)))


def snapped_indices(grid: Sequence[float], variance: float, exponent: float, Y: Any) -> np.ndarray:
    """Per label, the index into ``grid`` nearest (in log scale) to σ² (n_k / n̄)^γ (:func:`relative_label_frequencies`
    of ``Y``; the first of equal distances), so clipped to the grid's ends [K]."""
    logs = np.log(np.asarray(grid, dtype=np.float64))  # [V]
    target = np.log(variance) + exponent * np.log(relative_label_frequencies(Y))  # [K]
    return np.argmin(np.abs(logs[:, None] - target[None, :]), axis=0)  # [K]


def frequency_choice(
    pair_scores: dict[tuple[float, float], list[dict[str, float]]], exponents: list[float], grid: list[float], Y: Any
) -> dict[str, Any]:
    """The (σ², γ) pair with the highest mean held-out P@1 (ties: γ in :func:`exponent_order`, then the smaller σ²),
    and the label variances it gives on all the rows ``Y``."""
    rows = []
    for exponent in exponents:
        for variance in grid:
            folds = pair_scores[(variance, exponent)]
            entry: dict[str, Any] = {"kernel_variance": variance, "frequency_exponent": exponent}
            entry.update({f"{m} mean": float(np.mean([f[m] for f in folds])) for m in folds[0]})
            rows.append(entry)
    best = rows[int(np.argmax([r["P@1 mean"] for r in rows]))]
    variance, exponent = best["kernel_variance"], best["frequency_exponent"]
    out: dict[str, Any] = {
        "frequency_rule": FREQUENCY_RULE,
        "frequency_scores": rows,
        "chosen": variance,
        "chosen_exponent": exponent,
    }
    if exponent != 0.0:
        out["label_variances"] = [float(grid[i]) for i in snapped_indices(grid, variance, exponent, Y)]
    return out


def label_log_likelihoods(scores: np.ndarray, Y: Any) -> np.ndarray:
    """Σ_i log p(y_ik | f_ik) [K] of 0/1 labels ``Y`` [N, K] (dense or CSR) under Bernoulli-logit scores
    ``scores`` [N, K]: Σ_i (y_ik f_ik − softplus(f_ik))."""
    F = np.asarray(scores, dtype=np.float64)  # [N, K]
    positive = np.asarray(Y.multiply(F).sum(axis=0)).ravel() if scipy.sparse.issparse(Y) else np.sum(Y * F, axis=0)
    return positive - np.sum(np.logaddexp(0.0, F), axis=0)  # [K]


def label_wise_choice(label_log_lik: dict[float, np.ndarray], chosen: float) -> dict[str, Any]:
    """Per label, the σ² of the scored grid with the highest held-out log-likelihood summed over the inner folds
    (the smallest of equal values)."""
    values = sorted(label_log_lik)
    table = np.stack([label_log_lik[v] for v in values])  # [V, K]
    label_variances = np.asarray(values)[np.argmax(table, axis=0)]  # [K]
    counts = [[float(v), int(np.sum(label_variances == v))] for v in values]  # [σ², labels choosing it], ascending
    return {
        "label_rule": LABEL_WISE_RULE,
        "label_variances": [float(v) for v in label_variances],
        "label_variance_counts": counts,
        "label_log_likelihood_gain": float(np.sum(np.max(table, axis=0)) - np.sum(label_log_lik[chosen])),
    }
