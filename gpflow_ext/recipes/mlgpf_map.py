"""The MAP twin of ``label-gps``: K independent Bernoulli-logit labels with scores f = Φ U + b on the rows'
features Φ = X X̃ᵀ (X̃: the leading right-singular vectors of the fit rows) and a prior u_k ~ N(0, σ² I), fitted by
full-batch L-BFGS. :func:`map_weights` fits the weights; :func:`map_scores` scores held-out rows along a grid of σ²
(the inner cross-validation of :mod:`gpflow_ext.recipes.mlgpf_auto`); :func:`map_predictor` keeps the weights
(with their basis, or folded into the rows' features) for scoring any rows later (:mod:`gpflow_ext.recipes.mlgpf_stacking`).
"""

from typing import Any, NamedTuple

import numpy as np
import scipy.optimize
import scipy.sparse
from check_shapes import check_shapes

from ..inducing_variables.subspace import subspace_basis

__all__ = ["map_weights", "map_scores", "MapPredictor", "FoldedMapPredictor", "map_predictor", "dense_rows"]


def _objective(
    params: np.ndarray, Phi: np.ndarray, Y: np.ndarray, variance: float, scale: np.ndarray
) -> tuple[float, np.ndarray]:
    R, K = Phi.shape[1], Y.shape[1]
    U = params[: R * K].reshape(R, K) * scale  # [R, K]: the weights, optimised as U / scale (preconditioning)
    b = params[R * K :].astype(Phi.dtype)  # [K]
    F = Phi @ U.astype(Phi.dtype) + b  # [N, K]
    # -log Bernoulli-logit likelihood: softplus(f) - y f, summed; plus the Gaussian prior's ‖u‖² / 2σ²
    loss = float(np.sum(np.logaddexp(0.0, F) - Y * F, dtype=np.float64) + 0.5 * np.sum(U * U) / variance)
    residual = 0.5 * (1.0 + np.tanh(0.5 * F)) - Y  # sigmoid(F) - Y  [N, K]
    grad_U = (Phi.T @ residual).astype(np.float64) + U / variance  # [R, K]
    return loss, np.concatenate([(grad_U * scale).ravel(), residual.sum(axis=0, dtype=np.float64)])


@check_shapes("Phi: [N, R]", "Y: [N, K]", "return[0]: [R, K]", "return[1]: [K]")
def map_weights(
    Phi: np.ndarray,
    Y: np.ndarray,
    variance: float,
    init: tuple[np.ndarray, np.ndarray] | None = None,
    max_iter: int = 200,
    tolerance: float = 1e-9,
) -> tuple[np.ndarray, np.ndarray]:
    """The MAP weights (U [R, K], b [K]) of K independent Bernoulli-logit labels with scores f = Φ U + b and
    prior u_k ~ N(0, ``variance`` I) (b unpenalised, started at the logit of each label's frequency), by
    L-BFGS on the summed negative log posterior. The products run in Φ's dtype (float32 is faster; the sums
    and the optimiser's state are float64). The weights are optimised divided by the square root of the
    inverse diagonal curvature at the prior mean, 1 / (c_k ‖Φ_r‖² + 1/σ²) with c_k = p_k (1 - p_k), which
    changes the path, not the optimum.

    :param init: a starting point (e.g. the solution at the previous σ² of a grid).
    :param tolerance: L-BFGS-B's relative tolerance on the objective (``ftol``).
    """
    if not np.isfinite(variance) or variance <= 0:
        raise ValueError(f"variance must be a positive finite float, got {variance!r}")
    Phi = np.asarray(Phi)
    Phi = Phi if Phi.dtype in (np.float32, np.float64) else Phi.astype(np.float64)
    Y = np.asarray(Y, dtype=Phi.dtype)
    N, R = Phi.shape
    K = Y.shape[1]
    frequency = np.clip(Y.mean(axis=0, dtype=np.float64), 0.5 / N, 1.0 - 0.5 / N)  # [K]
    curvature = frequency * (1.0 - frequency)  # [K]
    column_sq = np.sum(np.square(Phi, dtype=np.float64), axis=0)  # [R]
    scale = 1.0 / np.sqrt(column_sq[:, None] * curvature[None, :] + 1.0 / variance)  # [R, K]
    if init is None:
        init = (np.zeros((R, K)), np.log(frequency) - np.log1p(-frequency))
    start = np.concatenate([(np.asarray(init[0], dtype=np.float64) / scale).ravel(), np.asarray(init[1], float)])
    out = scipy.optimize.minimize(
        _objective,
        start,
        args=(Phi, Y, float(variance), scale),
        jac=True,
        method="L-BFGS-B",
        options={"maxiter": max_iter, "ftol": tolerance},
    )
    return out.x[: R * K].reshape(R, K) * scale, out.x[R * K :]


def dense_rows(X: Any) -> np.ndarray:
    """X as a dense array (CSR rows made dense)."""
    return X.toarray() if scipy.sparse.issparse(X) else np.asarray(X)


def map_scores(
    X_fit: Any, Y_fit: Any, X_held: Any, variances: list[float], rank: int, seed: int = 0, max_iter: int = 50
) -> list[np.ndarray]:
    """For each σ² in ``variances`` (warm-started in the order given), the held-out scores f [N_held, K] of the
    MAP weights fitted on (``X_fit``, ``Y_fit``) in the basis of the ``rank`` leading right-singular vectors of
    ``X_fit`` (rows already transformed); float32 products, L-BFGS stopped at a relative change of 1e-6 or
    ``max_iter`` iterations."""
    rank = min(int(rank), *X_fit.shape)
    _, _, Vt = subspace_basis(X_fit, rank, seed=seed)  # [R, D]
    Phi = dense_rows(X_fit @ Vt.T).astype(np.float32)  # [N_fit, R]
    Phi_held = dense_rows(X_held @ Vt.T)  # [N_held, R]
    Y = dense_rows(Y_fit).astype(np.float32)  # [N_fit, K]
    scores, weights = [], None
    for variance in variances:
        weights = map_weights(Phi, Y, variance, init=weights, max_iter=max_iter, tolerance=1e-6)
        scores.append(Phi_held @ weights[0] + weights[1])  # [N_held, K]
    return scores


class MapPredictor(NamedTuple):
    """MAP weights with the basis they were fitted in: scores f = (X X̃ᵀ) U + b of any rows X [N, D]."""

    basis: np.ndarray  # X̃ [R, D]
    weights: np.ndarray  # U [R, K]
    bias: np.ndarray  # b [K]

    @property
    def num_features(self) -> int:
        """D, the columns of the rows it scores."""
        return int(self.basis.shape[1])

    def scores(self, X: Any) -> np.ndarray:
        """f [N, K] of rows X [N, D] (dense or CSR, through the same transform as the fit rows)."""
        return dense_rows(X @ self.basis.T) @ self.weights + self.bias  # [N, K]


class FoldedMapPredictor(NamedTuple):
    """MAP weights carried back to the rows' own features, W = X̃ᵀ U: scores f = X W + b, the same numbers as
    :class:`MapPredictor`'s to rounding, with D·K weights in place of R·(D + K) and nnz(X)·K multiply-adds per
    scoring in place of nnz(X)·R + N·R·K."""

    weights: np.ndarray  # W [D, K]
    bias: np.ndarray  # b [K]

    @property
    def num_features(self) -> int:
        """D, the columns of the rows it scores."""
        return int(self.weights.shape[0])

    def scores(self, X: Any) -> np.ndarray:
        """f [N, K] of rows X [N, D] (dense or CSR, through the same transform as the fit rows)."""
        return dense_rows(X @ self.weights) + self.bias  # [N, K]


def map_predictor(
    X_fit: Any, Y_fit: Any, variance: float, rank: int, seed: int = 0, max_iter: int = 50
) -> MapPredictor | FoldedMapPredictor:
    """The MAP weights at σ² = ``variance`` fitted on (``X_fit``, ``Y_fit``) in the basis of the ``rank`` leading
    right-singular vectors of ``X_fit``, as :func:`map_scores` fits them (float32 products, L-BFGS stopped at a
    relative change of 1e-6 or ``max_iter`` iterations), kept for scoring other rows: folded into the rows' own
    features (:class:`FoldedMapPredictor`) when that stores fewer numbers, D·K < R·(D + K) (fewer labels than the
    rank, the label-score features' case), else with its basis (:class:`MapPredictor`)."""
    rank = min(int(rank), *X_fit.shape)
    _, _, Vt = subspace_basis(X_fit, rank, seed=seed)  # [R, D]
    Phi = dense_rows(X_fit @ Vt.T).astype(np.float32)  # [N_fit, R]
    weights, bias = map_weights(Phi, dense_rows(Y_fit).astype(np.float32), variance, max_iter=max_iter, tolerance=1e-6)
    (R, D), K = Vt.shape, weights.shape[1]
    if D * K < R * (D + K):
        return FoldedMapPredictor(Vt.T @ weights, bias)  # [D, K]
    return MapPredictor(Vt, weights, bias)
