"""Evaluation metrics: precision@k and nDCG@k for sparse multi-label targets, accuracy,
mean negative log predictive probability / density, and RMSE.

Multi-label metrics never build a dense N x K matrix: the true labels are a ``scipy.sparse``
matrix [N, K] (K up to 1e5 and more) and the predictions arrive either as a dense score array
[N, K] (moderate K; reduced to the top k in row chunks by ``top_k``) or directly as the top-k
label indices [N, k'] (k' >= k, best first). Definitions follow the Extreme Classification
Repository (and napkinXC's ``precision_at_k`` / ``ndcg_at_k``)::

    P@k    = 1/N sum_i 1/k sum_{r<k} y_i[pi_i(r)]
    DCG@k  = sum_{r<k} y_i[pi_i(r)] / log2(r + 2),   nDCG@k = DCG@k / sum_{r<min(k, |y_i|)} 1/log2(r + 2)

where pi_i ranks the labels of point i by decreasing score. A point with no true label
contributes 0 to both means (it still counts in N).
"""

from collections.abc import Sequence
from typing import TypeAlias

import numpy as np
import scipy.sparse as sp
from check_shapes import check_shapes

from .validation import check_positive_int

__all__ = [
    "top_k",
    "precision_at_k",
    "ndcg_at_k",
    "ranking_metrics",
    "accuracy",
    "mean_negative_log_predictive",
    "gaussian_negative_log_predictive",
    "rmse",
    "classification_metrics",
]

ArrayLike: TypeAlias = np.ndarray | sp.spmatrix
_CHUNK_ELEMENTS = 1 << 24  # scores per chunk in top_k (128 MiB of float64)


def _check_k(k) -> int:
    return check_positive_int(k, "k")


def _finite_dense(array, name: str) -> np.ndarray:
    array = np.asarray(array)
    if array.dtype == object or not (np.issubdtype(array.dtype, np.number) or array.dtype == bool):
        raise TypeError(f"{name} must be a numeric array, got dtype {array.dtype}")
    if np.issubdtype(array.dtype, np.floating) and not np.all(np.isfinite(array)):
        bad = np.argwhere(~np.isfinite(array))[0]
        raise ValueError(f"{name} contains NaN or inf (first at index {tuple(int(i) for i in bad)})")
    return array


def top_k(scores: np.ndarray, k: int, chunk_size: int | None = None) -> np.ndarray:
    """Indices [N, k] of the k largest scores of each row of ``scores`` [N, K], best first.

    Uses ``np.argpartition`` on row chunks (``chunk_size`` rows at a time, by default about
    16M scores per chunk), then sorts only the k selected entries: O(N K + N k log k).
    Exact ties are broken by the lower label index among the selected entries.
    """
    k = _check_k(k)
    scores = _finite_dense(scores, "scores")
    if scores.ndim != 2:
        raise ValueError(f"scores must be a 2-D array [N, K], got shape {scores.shape}")
    num_data, num_labels = scores.shape
    if k > num_labels:
        raise ValueError(f"k={k} exceeds the number of labels K={num_labels}")
    if chunk_size is None:
        chunk_size = max(1, _CHUNK_ELEMENTS // max(num_labels, 1))
    result = np.empty((num_data, k), dtype=np.int64)
    for start in range(0, num_data, chunk_size):
        block = scores[start : start + chunk_size]  # [B, K]
        if k < num_labels:
            candidates = np.argpartition(block, num_labels - k, axis=1)[:, num_labels - k :]  # [B, k], unordered
        else:
            candidates = np.broadcast_to(np.arange(num_labels), block.shape).copy()
        candidates.sort(axis=1)  # lower index first, so the stable sort below breaks ties by index
        candidate_scores = np.take_along_axis(block, candidates, axis=1)  # [B, k]
        order = np.argsort(-candidate_scores, axis=1, kind="stable")
        result[start : start + len(block)] = np.take_along_axis(candidates, order, axis=1)
    return result


def _as_label_matrix(y_true, name: str = "y_true") -> sp.csr_matrix:
    if sp.issparse(y_true):
        matrix = sp.csr_matrix(y_true)
    else:
        dense = _finite_dense(y_true, name)
        if dense.ndim != 2:
            raise ValueError(f"{name} must be a 2-D [N, K] label matrix, got shape {dense.shape}")
        matrix = sp.csr_matrix(dense)
    if matrix.nnz and not np.all(np.isfinite(matrix.data)):
        raise ValueError(f"{name} contains NaN or inf")
    if matrix.nnz and matrix.data.min() < 0:
        position = int(np.argmax(matrix.data < 0))
        row = int(np.searchsorted(matrix.indptr, position, side="right") - 1)
        raise ValueError(
            f"{name} holds negative entries ({matrix.data[position]:g} at row {row}, column "
            f"{int(matrix.indices[position])}): label matrices are 0/1 with non-zero = relevant, so a ±1 encoding "
            f"would count every label as relevant; pass ({name} > 0)"
        )
    matrix = matrix.copy()
    matrix.eliminate_zeros()
    matrix.sum_duplicates()  # also sorts the column indices of every row
    return matrix


def _ranked_labels(y_true: sp.csr_matrix, y_pred, k: int, y_pred_is_indices: bool | None) -> np.ndarray:
    """Top-k label indices [N, k] from either dense scores [N, K] or precomputed indices [N, k']."""
    y_pred = _finite_dense(y_pred, "y_pred")
    num_data, num_labels = y_true.shape
    if y_pred.ndim != 2 or y_pred.shape[0] != num_data:
        raise ValueError(
            f"y_pred must be 2-D with N={num_data} rows (like y_true {y_true.shape}), got shape {y_pred.shape}"
        )
    if y_pred_is_indices is None:
        y_pred_is_indices = np.issubdtype(y_pred.dtype, np.integer)
    if y_pred_is_indices:
        if not np.issubdtype(y_pred.dtype, np.integer):
            raise TypeError(f"top-k label indices must be integers, got dtype {y_pred.dtype}")
        if y_pred.shape[1] < k:
            raise ValueError(f"y_pred holds the top {y_pred.shape[1]} labels per row, fewer than k={k}")
        indices = y_pred[:, :k].astype(np.int64)
        if indices.size and (indices.min() < 0 or indices.max() >= num_labels):
            raise ValueError(
                f"label index {indices.max() if indices.max() >= num_labels else indices.min()} in y_pred "
                f"is out of range for K={num_labels} labels"
            )
        return indices
    if y_pred.shape[1] != num_labels:
        raise ValueError(
            f"scores y_pred must have shape [N, K] = {y_true.shape}, got {y_pred.shape} "
            "(pass integer top-k indices for large K)"
        )
    return top_k(y_pred, k)


def _hits(y_true: sp.csr_matrix, ranked: np.ndarray) -> np.ndarray:
    """hits[i, r] = 1 if label ranked[i, r] is a true label of point i; [N, k] bool, no dense N x K."""
    num_data, num_labels = y_true.shape
    row_of_entry = np.repeat(np.arange(num_data, dtype=np.int64), np.diff(y_true.indptr))
    true_keys = row_of_entry * num_labels + y_true.indices.astype(np.int64)  # sorted: CSR rows in order, sorted cols
    query_keys = np.arange(num_data, dtype=np.int64)[:, None] * num_labels + ranked  # [N, k]
    if true_keys.size == 0:
        return np.zeros(ranked.shape, dtype=bool)
    positions = np.minimum(np.searchsorted(true_keys, query_keys), true_keys.size - 1)
    return true_keys[positions] == query_keys


def _checked_hits(y_true: ArrayLike, y_pred: np.ndarray, k: int, y_pred_is_indices: bool | None):
    """(k, y_true as CSR, hits [N, k]) after checking k against K and that there are points."""
    k = _check_k(k)
    y_true = _as_label_matrix(y_true)
    if k > y_true.shape[1]:
        raise ValueError(f"k={k} exceeds the number of labels K={y_true.shape[1]}")
    if y_true.shape[0] == 0:
        raise ValueError("y_true is empty (N=0)")
    return k, y_true, _hits(y_true, _ranked_labels(y_true, y_pred, k, y_pred_is_indices))


def precision_at_k(y_true: ArrayLike, y_pred: np.ndarray, k: int = 1, y_pred_is_indices: bool | None = None) -> float:
    """Mean precision@k over the N points.

    :param y_true: true labels [N, K], scipy.sparse (any format) or a dense 0/1 array; non-zero = relevant
        (negative entries, e.g. a ±1 encoding, raise ValueError).
    :param y_pred: dense scores [N, K] (float), or the top-k' label indices [N, k'] (integer, best first, k' >= k).
    :param k: cut-off, 1 <= k <= K.
    :param y_pred_is_indices: force the interpretation of ``y_pred`` (default: integer dtype means indices).
    """
    k, y_true, hits = _checked_hits(y_true, y_pred, k, y_pred_is_indices)  # hits [N, k]
    return float(hits.sum(axis=1).mean() / k)


def ndcg_at_k(y_true: ArrayLike, y_pred: np.ndarray, k: int = 1, y_pred_is_indices: bool | None = None) -> float:
    """Mean nDCG@k over the N points (binary relevance; points without labels contribute 0). Arguments as
    :func:`precision_at_k`."""
    k, y_true, hits = _checked_hits(y_true, y_pred, k, y_pred_is_indices)  # hits [N, k]
    discounts = 1.0 / np.log2(np.arange(2, k + 2))  # [k]
    dcg = hits @ discounts  # [N]
    ideal_cumulative = np.concatenate([[0.0], np.cumsum(discounts)])  # [k + 1]
    idcg = ideal_cumulative[np.minimum(np.diff(y_true.indptr), k)]  # [N]
    ndcg = np.divide(dcg, idcg, out=np.zeros_like(dcg), where=idcg > 0)
    return float(ndcg.mean())


@check_shapes(
    "top: [N, k]",
    "y_true: [N, K]",
)
def ranking_metrics(top: np.ndarray, y_true: ArrayLike, ks: Sequence[int] = (1, 3, 5)) -> dict[str, float]:
    """``{"P@k": ..., "nDCG@k": ...}`` in % (as the XMC papers report) for every k in ``ks``, from the top label
    ids ``top`` [N, >= max(ks)] (best first) and the true 0/1 labels ``y_true`` [N, K]."""
    top = np.asarray(top, dtype=np.int64)
    out = {}
    for k in ks:
        out[f"P@{k}"] = 100.0 * precision_at_k(y_true, top, k, y_pred_is_indices=True)
        out[f"nDCG@{k}"] = 100.0 * ndcg_at_k(y_true, top, k, y_pred_is_indices=True)
    return out


def _class_targets(y_true, num_data: int | None = None, num_classes: int | None = None) -> np.ndarray:
    y_true = _finite_dense(y_true, "y_true")
    if y_true.ndim != 1:
        raise ValueError(f"y_true must be a 1-D array of class indices, got shape {y_true.shape}")
    if num_data is not None and len(y_true) != num_data:
        raise ValueError(f"y_true has {len(y_true)} entries but the predictions have {num_data} rows")
    if y_true.size == 0:
        raise ValueError("y_true is empty")
    if not np.issubdtype(y_true.dtype, np.integer):
        if not np.all(y_true == np.round(y_true)):
            raise ValueError("y_true must hold integer class indices")
        y_true = y_true.astype(np.int64)
    if y_true.min() < 0 or (num_classes is not None and y_true.max() >= num_classes):
        raise ValueError(
            f"class index {y_true.max() if y_true.min() >= 0 else y_true.min()} in y_true out of range "
            f"[0, {num_classes})"
        )
    return y_true


def accuracy(y_true: np.ndarray, y_pred: np.ndarray) -> float:
    """Share of correct predictions; ``y_pred`` is class indices [N] or class probabilities/scores [N, C] (argmax)."""
    y_pred = _finite_dense(y_pred, "y_pred")
    if y_pred.ndim == 2:
        y_true = _class_targets(y_true, y_pred.shape[0], y_pred.shape[1])
        y_pred = np.argmax(y_pred, axis=1)
    elif y_pred.ndim == 1:
        y_true = _class_targets(y_true, y_pred.shape[0])
    else:
        raise ValueError(f"y_pred must be class indices [N] or scores [N, C], got shape {y_pred.shape}")
    return float(np.mean(y_true == y_pred))


def mean_negative_log_predictive(y_true: np.ndarray, probabilities: np.ndarray, log: bool = False) -> float:
    """Mean negative log predictive probability -1/N sum_i log p_i(y_i) of the true classes.

    :param probabilities: predictive class probabilities [N, C] (rows sum to 1), or log-probabilities if ``log``.
        A zero probability on a true class gives ``inf``.
    """
    probabilities = (
        _finite_dense(probabilities, "probabilities") if log else np.asarray(probabilities, dtype=np.float64)
    )
    if probabilities.ndim != 2:
        raise ValueError(f"probabilities must have shape [N, C], got {probabilities.shape}")
    if not log:
        if np.isnan(probabilities).any():
            raise ValueError("probabilities contain NaN")
        if probabilities.min() < 0 or probabilities.max() > 1:
            raise ValueError("probabilities must lie in [0, 1]")
        if not np.allclose(probabilities.sum(axis=1), 1.0, atol=1e-6):
            raise ValueError("each row of probabilities must sum to 1")
    y_true = _class_targets(y_true, probabilities.shape[0], probabilities.shape[1])
    picked = probabilities[np.arange(len(y_true)), y_true]  # [N]
    with np.errstate(divide="ignore"):
        log_p = picked if log else np.log(picked)
    return float(-np.mean(log_p))


def gaussian_negative_log_predictive(y_true: np.ndarray, mean: np.ndarray, variance: np.ndarray) -> float:
    """Mean negative log predictive density of y under N(mean, variance), elementwise, averaged over all entries."""
    y_true = _finite_dense(y_true, "y_true").astype(np.float64)
    mean = _finite_dense(mean, "mean").astype(np.float64)
    variance = _finite_dense(variance, "variance").astype(np.float64)
    if not (y_true.shape == mean.shape == variance.shape):
        raise ValueError(
            f"y_true, mean and variance must have the same shape, got {y_true.shape}, {mean.shape}, {variance.shape}"
        )
    if y_true.size == 0:
        raise ValueError("y_true is empty")
    if variance.min() <= 0:
        raise ValueError("variance must be positive")
    return float(np.mean(0.5 * np.log(2 * np.pi * variance) + 0.5 * (y_true - mean) ** 2 / variance))


def rmse(y_true: np.ndarray, y_pred: np.ndarray) -> float:
    """Root mean squared error over all entries of equally shaped arrays."""
    y_true = _finite_dense(y_true, "y_true").astype(np.float64)
    y_pred = _finite_dense(y_pred, "y_pred").astype(np.float64)
    if y_true.shape != y_pred.shape:
        raise ValueError(f"y_true and y_pred must have the same shape, got {y_true.shape} and {y_pred.shape}")
    if y_true.size == 0:
        raise ValueError("y_true is empty")
    return float(np.sqrt(np.mean((y_true - y_pred) ** 2)))


def true_class_nlp(P: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """Per row, the negative log probability of the true class [N] for class probabilities ``P`` [N, C] and
    class indices ``Y`` [N] or [N, 1] (probabilities floored at 1e-300)."""
    P = np.asarray(P, dtype=np.float64)
    Y = np.asarray(Y).reshape(-1).astype(np.int64)
    return -np.log(np.clip(P[np.arange(len(Y)), Y], 1e-300, 1.0))  # [N]


def classification_metrics(P: np.ndarray, Y: np.ndarray) -> dict:
    """Accuracy and mean negative log probability of the true class (``{"accuracy", "nlp"}``) for class
    probabilities ``P`` [N, C] and class indices ``Y`` [N] or [N, 1]."""
    P = np.asarray(P, dtype=np.float64)
    Y = np.asarray(Y).reshape(-1).astype(np.int64)
    return {"accuracy": float(np.mean(P.argmax(axis=1) == Y)), "nlp": float(np.mean(true_class_nlp(P, Y)))}
