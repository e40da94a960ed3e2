"""Baselines for extreme multi-label problems that run in gpflow_ext's own environment.

* :func:`one_vs_rest_logistic`: scikit-learn one-vs-rest L2 logistic regression (liblinear), labels ranked
  by decision value, scored by :func:`gpflow_ext.metrics.ranking_metrics` like MLGPF.
* :func:`summarise_runs`: the median and range of each score over repeated runs of a peer.
* :func:`encode_rows` / :func:`decode_rows`: a run's top-k label ids per test row as one compact string
  (``"zlib:<N>x<k>:<dtype>:<base64>"``, the ids as the smallest signed integers that hold them, zlib-compressed),
  the form in which result files keep them; :func:`decode_rows` also reads the earlier text form
  (``"3,7,1;0,2,9;..."``).
* :func:`row_hits`: the number of true labels among each row's top k; :func:`paired_comparison`: two
  methods' runs compared over the same test rows (each pair of runs: P@k difference, win / tie / loss; all
  runs: the mean paired difference with a seeded bootstrap interval over test rows).

(Peers that need their own interpreter, napkinXC and omikuji, stay with the experiment scripts.)
"""

import base64
import time
import zlib
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..metrics import ranking_metrics

__all__ = [
    "one_vs_rest_logistic",
    "summarise_runs",
    "encode_rows",
    "decode_rows",
    "row_hits",
    "paired_comparison",
    "bootstrap_interval",
]


def one_vs_rest_logistic(
    train: tuple[Any, Any],
    test: tuple[Any, Any],
    C: float = 10.0,
    seed: int = 0,
    top_k: int = 5,
    save_rows: bool = False,
) -> dict[str, Any]:
    """Fit on ``train = (X, Y)`` (CSR), rank the labels of ``test``'s rows; returns the method name,
    ``fit_seconds``, ``predict_seconds`` and P@k / nDCG@k (%) for k = 1, 3, 5 (with ``save_rows``, also
    ``"top"``: :func:`encode_rows` of the top-k label ids per test row). Labels never seen in training are
    never predicted (they cannot be fit)."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.multiclass import OneVsRestClassifier

    (X_train, Y_train), (X_test, Y_test) = train, test
    start = time.perf_counter()
    present = np.flatnonzero(np.asarray(Y_train.sum(axis=0)).ravel() > 0)  # [K_present]
    model = OneVsRestClassifier(LogisticRegression(C=C, solver="liblinear", random_state=seed), n_jobs=1)
    model.fit(X_train, Y_train[:, present].toarray() if Y_train.shape[1] <= 5000 else Y_train[:, present])
    fit_seconds = time.perf_counter() - start
    start = time.perf_counter()
    top = []
    for begin in range(0, X_test.shape[0], 2000):
        decision = model.decision_function(X_test[begin : begin + 2000])  # [b, K_present]
        best = np.argsort(-decision, axis=1)[:, :top_k]  # [b, top_k]
        top.append(present[best])
    predict_seconds = time.perf_counter() - start
    top = np.concatenate(top)
    out = {
        "method": f"sklearn-ovr-logreg(C={C:g})",
        "fit_seconds": fit_seconds,
        "predict_seconds": predict_seconds,
        **ranking_metrics(top, Y_test, (1, 3, 5)),
    }
    if save_rows:
        out["top"] = encode_rows(top)
    return out


def summarise_runs(
    rows: list[dict[str, Any]], keys: Sequence[str] = ("P@1", "P@3", "P@5", "nDCG@3", "nDCG@5", "fit_seconds")
) -> list[dict[str, Any]]:
    """One row per method with more than one run: the median of each score in ``keys`` and its
    ``"<key> min"`` / ``"<key> max"`` over the runs (``runs``: how many)."""
    summary = []
    for name in dict.fromkeys(r["method"] for r in rows):
        runs = [r for r in rows if r["method"] == name]
        if len(runs) < 2:
            continue
        row: dict[str, Any] = {"method": f"{name} (median of {len(runs)} runs)", "runs": len(runs)}
        for key in keys:
            values = np.array([r[key] for r in runs if key in r], dtype=float)
            if values.size:
                row[key] = float(np.median(values))
                row[f"{key} min"], row[f"{key} max"] = float(values.min()), float(values.max())
        summary.append(row)
    return summary


#: The prefix of the compact form of :func:`encode_rows` (the earlier text form starts with a digit or ``-``).
_COMPACT = "zlib"
_DTYPES = ("<i1", "<i2", "<i4", "<i8")


def encode_rows(top: np.ndarray) -> str:
    """Top-k label ids [N, k] (int; -1 = no prediction) as one ASCII string ``"zlib:<N>x<k>:<dtype>:<data>"``:
    the ids as little-endian signed integers of the smallest of 1, 2, 4, 8 bytes that holds them all (``dtype``:
    ``i1`` … ``i8``), row-major, zlib-compressed (level 9) and base64-encoded. :func:`decode_rows` inverts it."""
    top = np.asarray(top)
    if top.ndim != 2 or not np.issubdtype(top.dtype, np.integer):
        raise ValueError(f"top must be a 2-D integer array [N, k], got shape {top.shape} dtype {top.dtype}")
    low, high = (int(top.min()), int(top.max())) if top.size else (0, 0)
    dtype = next(np.dtype(d) for d in _DTYPES if np.iinfo(d).min <= low and high <= np.iinfo(d).max)
    data = base64.b64encode(zlib.compress(top.astype(dtype).tobytes(), 9)).decode("ascii")
    return f"{_COMPACT}:{top.shape[0]}x{top.shape[1]}:{dtype.str[1:]}:{data}"


def decode_rows(text: str) -> np.ndarray:
    """The inverse of :func:`encode_rows`: an int64 array [N, k]. Also reads the earlier text form, rows joined
    by ``;`` and ids by ``,`` (``"3,7,1;0,2,9"``), which result files written before the compact form hold."""
    if text.startswith(f"{_COMPACT}:"):
        _, shape, dtype, data = text.split(":", 3)
        rows, k = (int(n) for n in shape.split("x"))
        flat = np.frombuffer(zlib.decompress(base64.b64decode(data, validate=True)), dtype=np.dtype(f"<{dtype}"))
        if flat.size != rows * k:
            raise ValueError(f"an encoded top-k string holds {flat.size} ids, its shape {rows}x{k} needs {rows * k}")
        return flat.astype(np.int64).reshape(rows, k)
    rows_list = [[int(v) for v in row.split(",")] for row in text.split(";")] if text else []
    if len({len(r) for r in rows_list}) > 1:
        raise ValueError("rows of different lengths in an encoded top-k string")
    return np.array(rows_list, dtype=np.int64).reshape(len(rows_list), -1)


def row_hits(top: np.ndarray, Y: Any, k: int) -> np.ndarray:
    """How many of each row's first ``k`` label ids ``top`` [N, >= k] are true labels in ``Y`` [N, K] (CSR or
    dense 0/1); ids < 0 (no prediction) are misses. Returns int [N]; P@k = 100 · mean / k."""
    import scipy.sparse as sp

    top = np.asarray(top, dtype=np.int64)[:, :k]
    Y = sp.csr_matrix(Y)
    if top.shape[0] != Y.shape[0] or top.shape[1] < k:
        raise ValueError(f"top {top.shape} must have N={Y.shape[0]} rows and at least k={k} columns")
    hits = np.zeros(top.shape[0], dtype=np.int64)
    for i in range(top.shape[0]):
        labels = Y.indices[Y.indptr[i] : Y.indptr[i + 1]]
        hits[i] = int(np.isin(top[i][top[i] >= 0], labels).sum())
    return hits


def bootstrap_interval(
    differences: np.ndarray, resamples: int = 2000, seed: int = 0, level: float = 0.95
) -> tuple[float, float]:
    """Percentile interval of the mean of ``differences`` [N] (one value per test row) over ``resamples``
    resamplings of the rows with replacement (``numpy.random.default_rng(seed)``)."""
    differences = np.asarray(differences, dtype=float)
    rng = np.random.default_rng(seed)
    means = np.empty(resamples)
    for start in range(0, resamples, 200):
        stop = min(resamples, start + 200)
        index = rng.integers(0, differences.size, size=(stop - start, differences.size))
        means[start:stop] = differences[index].mean(axis=1)
    alpha = (1.0 - level) / 2.0
    low, high = np.quantile(means, [alpha, 1.0 - alpha])
    return float(low), float(high)


def paired_comparison(
    hits_a: Sequence[np.ndarray],
    hits_b: Sequence[np.ndarray],
    k: int = 1,
    resamples: int = 2000,
    seed: int = 0,
    level: float = 0.95,
) -> dict[str, Any]:
    """Runs of method A (``hits_a``: one :func:`row_hits` array [N] per run) against runs of method B on the
    same N test rows, at P@k (points, %).

    Returns ``pairs`` (every run of A against every run of B: ``a``, ``b`` run indices, ``difference`` = P@k(A)
    − P@k(B), ``outcome`` ``win``/``tie``/``loss`` for A: strictly above, equal, strictly below), the counts
    ``wins``/``ties``/``losses``, and ``mean_difference``: the mean over rows of (A's mean hit rate over its
    runs − B's), which equals the mean of the pairs' differences, with a percentile bootstrap ``interval`` over
    test rows (:func:`bootstrap_interval`); ``interval_covers_zero`` says when it is no difference."""
    a = np.stack([np.asarray(h, dtype=float) for h in hits_a]) * (100.0 / k)  # [runs_a, N]
    b = np.stack([np.asarray(h, dtype=float) for h in hits_b]) * (100.0 / k)  # [runs_b, N]
    if a.shape[1] != b.shape[1]:
        raise ValueError(f"the runs cover different test rows: {a.shape[1]} vs {b.shape[1]}")
    pairs, counts = [], {"win": 0, "tie": 0, "loss": 0}
    for i, run_a in enumerate(a.mean(axis=1)):
        for j, run_b in enumerate(b.mean(axis=1)):
            # compare the rounded means: the same hits in another order must not be a win by rounding error
            diff = round(float(run_a - run_b), 9)
            outcome = "win" if diff > 0 else "loss" if diff < 0 else "tie"
            counts[outcome] += 1
            pairs.append({"a": i, "b": j, "difference": diff, "outcome": outcome})
    per_row = a.mean(axis=0) - b.mean(axis=0)  # [N]
    low, high = bootstrap_interval(per_row, resamples, seed, level)
    return {
        "k": k,
        "runs_a": int(a.shape[0]),
        "runs_b": int(b.shape[0]),
        "n_rows": int(a.shape[1]),
        "mean_difference": float(per_row.mean()),
        "interval": [low, high],
        "level": level,
        "resamples": resamples,
        "bootstrap_seed": seed,
        "interval_covers_zero": bool(low <= 0.0 <= high),
        "wins": counts["win"],
        "ties": counts["tie"],
        "losses": counts["loss"],
        "pairs": pairs,
    }
