"""How non-Gaussian does a flow make each row's q(x_n)?

GPLVF's q(x_n) is a base Gaussian N(μ_n, diag s_n) pushed through a flow g shared by all rows
(paper Section 3, eq. 4). An *affine* image of a Gaussian is again Gaussian, so what a flow adds
over the Gaussian q(X) for row n is only the part of g that is not affine over that row's
base samples. :func:`flow_local_nonlinearity` measures it by Monte Carlo: for each row it draws
S base samples x0, pushes them through g, fits x ≈ x0 Bᵀ + c by least squares over the S draws,
and reports the residual beside the row's own spread.
"""

import numpy as np
import tensorflow as tf
import tensorflow_probability as tfp

from .planar import flow_forward_and_log_det

__all__ = ["flow_local_nonlinearity"]


def flow_local_nonlinearity(
    flow: tfp.bijectors.Bijector | None,
    x_mean: np.ndarray,
    x_var: np.ndarray,
    *,
    scale: np.ndarray | None = None,
    num_samples: int = 100,
    seed: int = 0,
) -> dict[str, float]:
    """Monte Carlo summary of g over each row's base Gaussian N(x_mean[n], diag x_var[n]).

    Distances are measured in units of ``scale`` [Q] (e.g. the SE kernel's lengthscales, so that
    they are on the scale the GP sees; default 1). Returns

    * ``mean_log_det``: mean of log|det ∂g/∂x0| over rows and draws (0: volume kept);
    * ``median_displacement``: median ‖(g(x0) − x0) / scale‖ over rows and draws;
    * ``median_spread``: median over rows of the base spread ‖sqrt(s_n) / scale‖;
    * ``median_nonaffine``: median over rows of the RMS norm of the residual of the per-row affine
      least-squares fit of g(x0) on x0 (0 for any affine g, i.e. a Gaussian q(x_n));
    * ``nonaffine_fraction``: median over rows of non-affine residual / spread.

    ``num_samples`` must exceed Q + 1 (the affine fit's unknowns per output).
    """
    x_mean = np.asarray(x_mean, dtype=np.float64)
    x_var = np.asarray(x_var, dtype=np.float64)
    if x_mean.ndim != 2 or x_mean.shape[0] == 0:
        raise ValueError(f"x_mean must be a non-empty [N, Q] array, got shape {x_mean.shape}")
    if x_var.shape != x_mean.shape:
        raise ValueError(f"x_var must have the shape of x_mean {x_mean.shape}, got {x_var.shape}")
    if not (np.all(np.isfinite(x_mean)) and np.all(np.isfinite(x_var))) or np.any(x_var <= 0):
        raise ValueError("x_mean must be finite and x_var finite and > 0")
    num_rows, latent_dim = x_mean.shape
    if isinstance(num_samples, bool) or not isinstance(num_samples, (int, np.integer)) or num_samples <= latent_dim + 1:
        raise ValueError(f"num_samples must be an integer > Q + 1 = {latent_dim + 1}, got {num_samples!r}")
    scale = (
        np.ones(latent_dim) if scale is None else np.broadcast_to(np.asarray(scale, dtype=np.float64), (latent_dim,))
    )
    if not np.all(np.isfinite(scale)) or np.any(scale <= 0):
        raise ValueError(f"scale must be finite and > 0, got {scale}")

    noise = np.random.default_rng(seed).standard_normal((num_samples, num_rows, latent_dim))
    x0 = x_mean + np.sqrt(x_var) * noise  # [S, N, Q]
    x, log_det = flow_forward_and_log_det(flow, tf.constant(x0))
    x, log_det = x.numpy() / scale, log_det.numpy()  # [S, N, Q], [S, N]
    x0 = x0 / scale
    design = np.concatenate([x0, np.ones((num_samples, num_rows, 1))], axis=-1).transpose(1, 0, 2)  # [N, S, Q+1]
    targets = x.transpose(1, 0, 2)  # [N, S, Q]
    coefficients = np.linalg.pinv(design) @ targets  # [N, Q+1, Q]
    residual = targets - design @ coefficients  # [N, S, Q]
    nonaffine = np.sqrt(np.mean(np.sum(residual**2, axis=-1), axis=1))  # [N]
    spread = np.linalg.norm(np.sqrt(x_var) / scale, axis=-1)  # [N]
    return {
        "mean_log_det": float(np.mean(log_det)),
        "median_displacement": float(np.median(np.linalg.norm(x - x0, axis=-1))),
        "median_spread": float(np.median(spread)),
        "median_nonaffine": float(np.median(nonaffine)),
        "nonaffine_fraction": float(np.median(nonaffine / spread)),
    }
