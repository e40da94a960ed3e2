"""Baselines for extreme multi-label problems that run in gpflow_ext's own environment.

* :func:`one_vs_rest_logistic`: scikit-learn one-vs-rest L2 logistic regression (liblinear), labels ranked
  by decision value, scored by :func:`gpflow_ext.metrics.ranking_metrics` like MLGPF.
* :func:`summarise_runs`: the median and range of each score over repeated runs of a peer.

(Peers that need their own interpreter, napkinXC and omikuji, stay with the experiment scripts.)
"""
import time
from typing import Any, Dict, List, Sequence, Tuple

import numpy as np

from ..metrics import ranking_metrics

__all__ = ["one_vs_rest_logistic", "summarise_runs"]


def one_vs_rest_logistic(train: Tuple[Any, Any], test: Tuple[Any, Any], C: float = 10.0, seed: int = 0,
                         top_k: int = 5) -> Dict[str, Any]:
    """Fit on ``train = (X, Y)`` (CSR), rank the labels of ``test``'s rows; returns the method name,
    ``fit_seconds``, ``predict_seconds`` and P@k / nDCG@k (%) for k = 1, 3, 5. Labels never seen in
    training are never predicted (they cannot be fit)."""
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
    return {"method": f"sklearn-ovr-logreg(C={C:g})", "fit_seconds": fit_seconds,
            "predict_seconds": predict_seconds, **ranking_metrics(np.concatenate(top), Y_test, (1, 3, 5))}


def summarise_runs(rows: List[Dict[str, Any]],
                   keys: Sequence[str] = ("P@1", "P@3", "P@5", "nDCG@3", "nDCG@5", "fit_seconds")
                   ) -> List[Dict[str, Any]]:
    """One row per method with more than one run: the median of each score in ``keys`` and its
    ``"<key> min"`` / ``"<key> max"`` over the runs (``runs``: how many)."""
    summary = []
    for name in dict.fromkeys(r["method"] for r in rows):
        runs = [r for r in rows if r["method"] == name]
        if len(runs) < 2:
            continue
        row: Dict[str, Any] = {"method": f"{name} (median of {len(runs)} runs)", "runs": len(runs)}
        for key in keys:
            values = np.array([r[key] for r in runs if key in r], dtype=float)
            if values.size:
                row[key] = float(np.median(values))
                row[f"{key} min"], row[f"{key} max"] = float(values.min()), float(values.max())
        summary.append(row)
    return summary
