"""Ensembles of MLGPF models (``MLGPFConfig.ensemble_size``): the members rank labels by their mean utilities
f̄ = Φ m* + b averaged over the members, (1/E) Σ_e f̄_e, the score each member ranks by on its own (or, with
``by_probability``, by their averaged p(y_k = 1 | x)). The members differ by seed, and with
``ensemble_across_variances`` also by σ², the best few of the inner cross-validation (:func:`member_variances`)."""

from collections.abc import Sequence
from typing import Any

import gpflow
import numpy as np
import tensorflow as tf

from ..models import MLGPF
from ..utilities import to_input_tensor
from ..validation import check_float_tuple, check_positive_int

__all__ = ["ensemble_top_k", "check_member_variances", "MEMBER_VARIANCES_RULE", "member_variances"]


def ensemble_top_k(
    models: Sequence[MLGPF], Xnew: Any, k: int = 5, batch_size: int = 1000, by_probability: bool = False
) -> np.ndarray:
    """Label ids of the k highest mean utilities averaged over ``models`` per row of ``Xnew`` [N, D] (dense or
    CSR, as the members take it), best first [N, k]; with ``by_probability``, of the k highest p(y_k = 1 | x)
    averaged over the members (the predictive probability of their equal mixture). In row batches, so only
    ``batch_size × K`` scores exist at a time. One model gives its own
    :meth:`~gpflow_ext.models.MLGPF.predict_top_k`.

    :raises ValueError: no models, or members with different labels or inputs.
    """
    models = list(models)
    if not models or not all(isinstance(m, MLGPF) for m in models):
        raise ValueError(f"models must be a non-empty sequence of MLGPF models, got {models!r}")
    if len({(m.num_labels, m.input_dim) for m in models}) != 1:
        shapes = [(m.num_labels, m.input_dim) for m in models]
        raise ValueError(f"models must share num_labels and input_dim, got {shapes}")
    if len(models) == 1:
        return models[0].predict_top_k(Xnew, k=k, batch_size=batch_size, by_probability=by_probability)
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= k <= models[0].num_labels:
        raise ValueError(f"k must be an integer in [1, num_labels={models[0].num_labels}], got {k!r}")
    batch_size = check_positive_int(batch_size, "batch_size")
    out = []
    for start in range(0, Xnew.shape[0], batch_size):
        rows = to_input_tensor(Xnew[start : start + batch_size], gpflow.default_float())
        scores = tf.add_n([m.ranking_scores(rows, by_probability) for m in models]) / len(models)  # [b, K]
        out.append(tf.math.top_k(scores, k=k).indices.numpy())  # [b, k]
    return np.concatenate(out, axis=0)


def check_member_variances(config: Any, label_wise: bool) -> tuple[float, ...] | None:
    """An ``MLGPFConfig``'s ``member_kernel_variances`` as floats (or None), after checking it and
    ``ensemble_across_variances``: one σ² per member of an ensemble (``ensemble_size`` >= 2), no label-wise prior
    variances, and a grid with at least ``ensemble_size`` values to take the best of."""
    if config.ensemble_across_variances or config.member_kernel_variances is not None:
        if config.ensemble_size < 2 or label_wise:
            raise ValueError("members at their own σ² need ensemble_size >= 2 and no label-wise prior variances")
    if config.ensemble_across_variances:
        grid = config.kernel_variance_grid
        if grid is None or len(grid) + config.tuning_extensions < config.ensemble_size:
            raise ValueError(
                f"ensemble_across_variances=True takes the {config.ensemble_size} best σ² of kernel_variance_grid: "
                f"set a grid of at least ensemble_size values, got {grid}"
            )
    if config.member_kernel_variances is None:
        return None
    values = check_float_tuple(config.member_kernel_variances, "member_kernel_variances")
    if len(values) != config.ensemble_size:
        raise ValueError(
            f"member_kernel_variances must hold one σ² per member (ensemble_size={config.ensemble_size}), "
            f"got {len(values)}"
        )
    return values


MEMBER_VARIANCES_RULE = (
    "member e of an ensemble of E trains at the e-th σ² of the grid ranked by mean held-out P@1 of the inner "
    "cross-validation (the smaller of equal means first): the first member at the chosen σ²"
)


def member_variances(record: dict[str, Any], size: int) -> tuple[float, ...]:
    """The ``size`` σ² of a tuning ``record``'s grid with the highest mean held-out P@1, best first
    (:data:`MEMBER_VARIANCES_RULE`)."""
    table = {float(e["kernel_variance"]): e["P@1 mean"] for e in record["scores"]}
    ranked = sorted(sorted(table), key=lambda v: -table[v])  # stable: the smaller of equal means first
    return tuple(ranked[:size])
