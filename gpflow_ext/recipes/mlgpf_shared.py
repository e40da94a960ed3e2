"""MLGPF with shared factors (the paper's model, P latent GPs mixed by the loadings Φ [K, P]) started from one
linear GP per label (``MLGPFConfig.init_from_map``).

On Z = X̃ (orthonormal rows, :class:`~gpflow_ext.inducing_variables.BasisInducingPoints`) with a linear kernel of
variance σ², q(u_p) has mean K μ_p, so latent GP p has mean k(x, Z) μ_p = σ² x X̃ᵀ μ_p, and label k's mean
utility is f̄_k(x) = Σ_p Φ_kp σ² x X̃ᵀ μ_p + b_k: a linear score with weights σ² μ Φᵀ [R, K] of rank P. The
per-label model (``label-gps``) has weights U [R, K] of full rank. Its MAP twin gives them cheaply
(:func:`~gpflow_ext.recipes.mlgpf_map.map_weights`, L-BFGS), and the rank-P truncation U ≈ A_P S_P B_Pᵀ
(SVD) is the closest rank-P weight matrix in Frobenius norm (Eckart-Young). :func:`shared_factors_from_weights`
splits it evenly, σ² μ = A_P S_P^½ and Φ = B_P S_P^½, and the shared model starts there, with the MAP biases.
"""

from typing import Any

import numpy as np
from check_shapes import check_shapes

from ..inducing_variables import BasisInducingPoints
from ..validation import check_positive_int, check_positive_number
from .mlgpf_map import dense_rows, map_weights

__all__ = ["shared_factors_from_weights", "map_initialisation"]


@check_shapes("weights: [R, K]", "return[0]: [R, P]", "return[1]: [K, P]")
def shared_factors_from_weights(
    weights: np.ndarray, kernel_variance: float, num_latent_gps: int
) -> tuple[np.ndarray, np.ndarray]:
    """``(q_mu, loadings)``: μ [R, P] of the preconditioned q(u_p) and Φ [K, P] whose mixed mean weights
    σ² μ Φᵀ equal the rank-P truncated SVD of the per-label ``weights`` U [R, K]: with U = A S Bᵀ,
    σ² μ = A_P S_P^½ and Φ = B_P S_P^½ (the P largest singular values).

    :raises ValueError: ``num_latent_gps`` is not a positive int at most min(R, K), or σ² is not positive.
    """
    weights = np.asarray(weights, dtype=np.float64)
    kernel_variance = check_positive_number(kernel_variance, "kernel_variance", "a positive finite float")
    num_latent_gps = check_positive_int(num_latent_gps, "num_latent_gps")
    if num_latent_gps > min(weights.shape):
        raise ValueError(
            f"num_latent_gps must be at most min(R, K) = {min(weights.shape)} for weights of shape {weights.shape}, "
            f"got {num_latent_gps}"
        )
    A, s, Bt = np.linalg.svd(weights, full_matrices=False)  # [R, r], [r], [r, K]
    root = np.sqrt(s[:num_latent_gps])  # [P]
    q_mu = A[:, :num_latent_gps] * root / kernel_variance  # [R, P]
    loadings = Bt[:num_latent_gps].T * root  # [K, P]
    return q_mu, loadings


def map_initialisation(
    X: Any, Y: Any, inducing_variable: BasisInducingPoints, kernel_variance: float, num_latent_gps: int
) -> dict[str, np.ndarray]:
    """The MLGPF keyword arguments ``q_mu``, ``loadings`` and ``bias`` that start P = min(``num_latent_gps``, K,
    R) shared latent GPs on Z = X̃ from the MAP weights of one linear GP per label at σ² = ``kernel_variance``
    (prior N(0, σ² I) on each label's weights, Bernoulli-logit likelihood, a free bias per label) on the
    training rows ``X`` [N, D] (as the model reads them) and labels ``Y`` [N, K]. Φ = X X̃ᵀ [N, R] is formed
    dense, in float32, as in the inner cross-validation of σ².
    """
    if not isinstance(inducing_variable, BasisInducingPoints):
        raise TypeError(
            f"inducing_variable must be BasisInducingPoints (Z = X̃), got {type(inducing_variable).__name__}"
        )
    Phi = dense_rows(X @ inducing_variable.basis_t.numpy()).astype(np.float32)  # [N, R]
    labels = dense_rows(Y).astype(np.float32)  # [N, K]
    U, b = map_weights(Phi, labels, kernel_variance)  # [R, K], [K]
    q_mu, loadings = shared_factors_from_weights(U, kernel_variance, min(num_latent_gps, *U.shape))
    return {"q_mu": q_mu, "loadings": loadings, "bias": b}
