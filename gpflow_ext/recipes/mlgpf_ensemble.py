"""Ensembles of MLGPF models (``MLGPFConfig.ensemble_size``): the members rank labels by their mean utilities
f̄ = Φ m* + b averaged over the members, (1/E) Σ_e f̄_e, the score each member ranks by on its own (or, with
``by_probability``, by their averaged p(y_k = 1 | x))."""

from collections.abc import Sequence
from typing import Any

import gpflow
import numpy as np
import tensorflow as tf

from ..models import MLGPF
from ..utilities import to_input_tensor
from ..validation import check_positive_int

__all__ = ["ensemble_top_k"]


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
