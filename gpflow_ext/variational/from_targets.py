"""q(u) of J latent GPs set to the GP-regression posterior of given targets: a GP layer that starts as a map.

For GP j with inputs ``H`` (scaled features) and targets ``t_j`` (e.g. the network's own feature values, so that
the GP layer starts as the identity map of the network's features), the GP outputs are linear in q(u)'s mean μ_j,
``E[f_j(H)] = Φ_j μ_j`` (grid: ``Φ_j = W_j R_j`` whitened, ``W_j`` otherwise; points: ``K_fu K_uu⁻¹`` or its
whitened form). With the prior ``μ_j ~ N(0, P_j⁻¹)`` (``P = I`` whitened, ``K_uu⁻¹`` otherwise) and Gaussian noise of
variance σ_j², the posterior is

    Λ_j = Φ_jᵀ Φ_j / σ_j² + P_j,   μ_j = Λ_j⁻¹ Φ_jᵀ t_j / σ_j²,   S_j = Λ_j⁻¹,

the exact GP-regression posterior of the targets on the inducing variables. q(u_j) is set to N(μ_j, S_j) (a
Kronecker q on a grid of D > 1 dimensions keeps the mean and takes an isotropic covariance of S_j's mean
variance). Φ_j is read off the layer itself, column by column (``f(e_k) − f(0)`` under one stateless seed), so any
:class:`~gpflow_ext.variational.LatentGPs` (Toeplitz or circulant grid, free inducing points) works unchanged.
"""

import gpflow
import numpy as np
import tensorflow as tf
from check_shapes import check_shapes
from gpflow.covariances import Kuu

from ..utilities import dense_kron
from .grid_priors import toeplitz_prior_factors
from .latent_gps import FreeInducingPoints, KISSGPGrid, LatentGPs

__all__ = [
    "latent_design_matrices",
    "set_posterior_of_targets",
    "set_shrunk_prior",
    "match_kernel_variances",
    "check_shrink_scale",
]


def _mean_parameter(gps: LatentGPs) -> gpflow.Parameter:
    return gps.q.q_mu if isinstance(gps, KISSGPGrid) else gps.q_mu


def _columns_first(gps: LatentGPs, value: np.ndarray) -> np.ndarray:
    """q_mu as ``[J, n]`` (grids store ``[J, n]``, free points ``[n, J]``)."""
    return value if isinstance(gps, KISSGPGrid) else value.T


@check_shapes("H: [B, Q]", "return: [J, B, n]")
def latent_design_matrices(gps: LatentGPs, H: tf.Tensor) -> tf.Tensor:
    """Φ_j with ``E[f_j(H)] = Φ_j μ_j`` for every GP j, ``[J, B, n]`` (n: q(u)'s mean size per GP)."""
    q_mu = _mean_parameter(gps)
    saved = q_mu.numpy()
    seed = tf.constant([0, 0], tf.int64)
    n = _columns_first(gps, saved).shape[1]
    mean = tf.function(lambda: gps.latent_samples(H, 1, seed=seed)[0])  # [B, J], reads q_mu's current value
    columns = []
    try:
        q_mu.assign(np.zeros_like(saved))
        base = mean()  # [B, J]
        for k in range(n):
            unit = np.zeros_like(_columns_first(gps, saved))
            unit[:, k] = 1.0
            q_mu.assign(_columns_first(gps, unit))
            columns.append(mean() - base)  # [B, J]
    finally:
        q_mu.assign(saved)
    return tf.transpose(tf.stack(columns, axis=-1), [1, 0, 2])  # [J, B, n]


def _prior_covariances(gps: LatentGPs) -> np.ndarray:
    """The prior covariance of q's mean coordinates, ``[J, n, n]``: I when whitened, else K_uu."""
    n = _columns_first(gps, _mean_parameter(gps).numpy()).shape[1]
    if gps.whiten:
        return np.tile(np.eye(n)[None], [gps.num_gps, 1, 1])
    if isinstance(gps, KISSGPGrid):
        K = dense_kron(toeplitz_prior_factors(gps.inducing_variable, gps.kernel.kernels, gps.jitter))
    elif isinstance(gps, FreeInducingPoints):
        K = Kuu(gps.inducing_variable, gps.kernel, jitter=gps.jitter)  # [J, M, M]
    else:
        raise TypeError(f"no prior covariance for an unwhitened {type(gps).__name__}")
    return np.asarray(K, dtype=np.float64)


def _prior_precisions(gps: LatentGPs) -> np.ndarray:
    """P_j of q's mean coordinates, ``[J, n, n]``: I when whitened, else K_uu⁻¹."""
    return _prior_covariances(gps) if gps.whiten else np.linalg.inv(_prior_covariances(gps))


def match_kernel_variances(gps: LatentGPs, targets: np.ndarray) -> np.ndarray:
    """Set each GP's base kernel variance to its targets' variance (at least 1e-6); returns the variances [J]."""
    variances = np.maximum(np.asarray(targets, dtype=np.float64).var(axis=0), 1e-6)  # [J]
    for kernel, variance in zip(gps.kernel.kernels, variances):
        kernel.variance.assign(variance)
    return variances


def set_posterior_of_targets(
    gps: LatentGPs, H: tf.Tensor, targets: np.ndarray, noise_fraction: float = 1e-3, match_variance: bool = True
) -> np.ndarray:
    """Set q(u) of ``gps`` to the GP-regression posterior of ``targets`` [B, J] at scaled features ``H`` [B, Q].

    :param noise_fraction: σ_j² as a fraction of the targets' variance (small: the layer reproduces the targets).
    :param match_variance: first set each base kernel's variance to its targets' variance (at least 1e-6), so the
        prior has the targets' scale.
    :returns: the fitted means at ``H``, ``[B, J]`` (Φ_j μ_j), for checking how closely the targets are met.
    """
    targets = np.asarray(targets, dtype=np.float64)
    if targets.ndim != 2 or targets.shape[1] != gps.num_gps or targets.shape[0] != H.shape[0]:
        raise ValueError(
            f"targets must have shape [{H.shape[0]}, {gps.num_gps}] (one column per GP), got {targets.shape}"
        )
    if not np.isfinite(targets).all():
        raise ValueError("targets must be finite")
    if not 0.0 < noise_fraction < 1.0:
        raise ValueError(f"noise_fraction must be in (0, 1), got {noise_fraction!r}")
    variances = match_kernel_variances(gps, targets) if match_variance else np.maximum(targets.var(axis=0), 1e-6)
    Phi = np.asarray(latent_design_matrices(gps, H), dtype=np.float64)  # [J, B, n]
    noise = noise_fraction * variances  # [J]
    precision = np.einsum("jbn,jbm->jnm", Phi, Phi) / noise[:, None, None] + _prior_precisions(gps)  # [J, n, n]
    chol = np.linalg.cholesky(precision)  # [J, n, n]
    rhs = np.einsum("jbn,bj->jn", Phi, targets) / noise[:, None]  # [J, n]
    mean = _cho_solve(chol, rhs)  # [J, n]
    n = mean.shape[1]
    covariance = _cho_solve(chol, np.tile(np.eye(n)[None], [len(chol), 1, 1]))  # [J, n, n]
    covariance = 0.5 * (covariance + np.transpose(covariance, [0, 2, 1]))
    _assign_q(gps, mean, covariance)
    return np.einsum("jbn,jn->bj", Phi, mean)


def set_shrunk_prior(gps: LatentGPs, scale: float) -> None:
    """Set q(u) of ``gps`` to ``N(0, scale² K_uu)``: the prior shrunk by ``scale`` in standard deviation (``N(0, scale² I)``
    for whitened GPs), so every GP's outputs are zero in the mean with standard deviation ``scale`` times the prior's.
    """
    check_shrink_scale(scale, "scale")
    covariance = _prior_covariances(gps)  # [J, n, n]: I when whitened, else K_uu
    _assign_q(gps, np.zeros(covariance.shape[:2]), scale**2 * covariance)


def check_shrink_scale(scale: float, name: str) -> None:
    """``scale`` checked to be a number in (0, 1] (``name``: the argument, for the error)."""
    if isinstance(scale, bool) or not (isinstance(scale, (int, float)) and 0.0 < scale <= 1.0):
        raise ValueError(f"{name} must be a number in (0, 1], got {scale!r}")


def _cho_solve(chol: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """Λ⁻¹ rhs for Λ = L Lᵀ, batched over the first axis (``rhs`` [J, n] or [J, n, r])."""
    vector = rhs.ndim == 2
    b = rhs[..., None] if vector else rhs
    x = np.linalg.solve(np.transpose(chol, [0, 2, 1]), np.linalg.solve(chol, b))
    return x[..., 0] if vector else x


def _assign_q(gps: LatentGPs, mean: np.ndarray, covariance: np.ndarray) -> None:
    mean_parameter = _mean_parameter(gps)
    mean_parameter.assign(_columns_first(gps, mean).astype(mean_parameter.numpy().dtype))
    chol = np.linalg.cholesky(covariance + 1e-12 * np.eye(covariance.shape[-1]))  # [J, n, n]
    if isinstance(gps, KISSGPGrid):
        factors = gps.q.q_sqrt_factors
        if len(factors) == 1:
            factors[0].assign(chol.astype(factors[0].numpy().dtype))
        else:  # a Kronecker q cannot hold S_j: isotropic with S_j's mean variance
            scale = np.mean(np.diagonal(covariance, axis1=1, axis2=2), axis=1) ** (0.5 / len(factors))  # [J]
            for factor, size in zip(factors, gps.q.grid_sizes):
                factor.assign((scale[:, None, None] * np.eye(size)[None]).astype(factor.numpy().dtype))
    else:
        gps.q_sqrt.assign(chol.astype(gps.q_sqrt.numpy().dtype))
