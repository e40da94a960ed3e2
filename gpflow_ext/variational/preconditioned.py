"""The preconditioned 2M-parameter q(u) (Section 2.3, eq. 8–10; Appendix A.1, eq. 17–19, 22).

For each latent GP p, q(u_p) = N(m_p, S_p) with

    m_p = K μ_p,        S_p = (K⁻¹ + Σ_p⁻¹)⁻¹ = K − K (K + Σ_p)⁻¹ K          (eq. 8)

where μ_p ∈ R^M is free and Σ_p = diag(σ_p) is a positive diagonal with a floor.  K = K_ZZ is shared
by the P latent GPs (one kernel, one Z) while Σ_p differs, so every computation factorises the
P matrices K + Σ_p in one batched Cholesky ([P, M, M]) and never factorises K itself: this is what
keeps float32 stable at M = 500.

Example
-------
>>> import numpy as np, gpflow
>>> from gpflow_ext.variational import PreconditionedGaussian, preconditioned_kl
>>> Z = np.linspace(0, 1, 10)[:, None]
>>> Kmm = gpflow.kernels.SquaredExponential()(Z)
>>> q = PreconditionedGaussian(num_inducing=10, num_latent_gps=2)
>>> float(preconditioned_kl(Kmm, q.q_mu, q.q_sigma)) >= 0.0
True
"""

from __future__ import annotations

from collections.abc import Callable

import gpflow
import numpy as np
import tensorflow as tf
from check_shapes import check_shapes
from gpflow.base import Parameter, TensorType
from gpflow.utilities import positive

from ..utilities import cholesky_inverse_and_logdet
from ..validation import check_positive_int, check_positive_number

#: ``inverse_and_logdet(A [..., M, M]) -> (L⁻¹ [..., M, M], log|A| [...])`` with L = chol(A).
InverseAndLogdet = Callable[[tf.Tensor], tuple[tf.Tensor, tf.Tensor]]

__all__ = [
    "PreconditionedGaussian",
    "preconditioned_kl",
    "preconditioned_conditional",
    "preconditioned_inverse_terms",
    "preconditioned_kl_and_marginals",
    "preconditioned_mean_and_covariance",
]


class PreconditionedGaussian(gpflow.Module):
    """Holds μ (``q_mu`` [M, P], free) and the diagonals of Σ (``q_sigma`` [M, P], positive with a
    floor ``sigma_floor``) of the preconditioned q(u) (eq. 8): 2·M·P parameters in total.

    :param num_inducing: M.
    :param num_latent_gps: P.
    :param sigma_floor: lower bound of every Σ entry (softplus + shift), keeps K + Σ invertible.
    :param q_mu: initial μ [M, P] (default zeros: m = 0).
    :param q_sigma: initial Σ diagonals [M, P] (default ones); must exceed ``sigma_floor``.
    :param inverse_and_logdet: ``None`` (default): the KL and the marginals take their terms in K + Σ_p from
        :func:`preconditioned_inverse_terms`, whose gradient is closed-form, and the KL alone differentiates
        :func:`gpflow_ext.utilities.cholesky_inverse_and_logdet`; or a function mapping K + Σ_p ``[P, M, M]`` to
        (L_p⁻¹, log|K + Σ_p|), differentiated through everywhere (e.g. one TensorFlow differentiates itself).
    """

    def __init__(
        self,
        num_inducing: int,
        num_latent_gps: int = 1,
        sigma_floor: float = 1e-6,
        q_mu: TensorType | None = None,
        q_sigma: TensorType | None = None,
        name: str | None = None,
        *,
        inverse_and_logdet: InverseAndLogdet | None = None,
    ):
        super().__init__(name=name)
        if inverse_and_logdet is not None and not callable(inverse_and_logdet):
            raise TypeError(
                "`inverse_and_logdet` must be None or a function A [..., M, M] -> (chol(A)⁻¹, log|A|), "
                f"got {type(inverse_and_logdet).__name__}"
            )
        num_inducing = check_positive_int(num_inducing, "num_inducing")
        num_latent_gps = check_positive_int(num_latent_gps, "num_latent_gps")
        check_positive_number(sigma_floor, "sigma_floor", "a positive finite float")
        shape = (int(num_inducing), int(num_latent_gps))
        q_mu = np.zeros(shape) if q_mu is None else np.asarray(q_mu, dtype=np.float64)
        q_sigma = np.ones(shape) if q_sigma is None else np.asarray(q_sigma, dtype=np.float64)
        for arg, value in (("q_mu", q_mu), ("q_sigma", q_sigma)):
            if value.shape != shape:
                raise ValueError(f"`{arg}` must have shape [num_inducing, num_latent_gps] = {shape}, got {value.shape}")
            if not np.all(np.isfinite(value)):
                raise ValueError(f"`{arg}` contains NaN or inf values")
        if np.any(q_sigma <= sigma_floor):
            raise ValueError(f"`q_sigma` entries must exceed sigma_floor={sigma_floor}, min is {q_sigma.min()}")
        self.num_inducing, self.num_latent_gps = shape
        self.sigma_floor = float(sigma_floor)
        self.inverse_and_logdet = inverse_and_logdet
        self.q_mu = Parameter(q_mu, dtype=gpflow.default_float(), name="q_mu")  # [M, P]
        self.q_sigma = Parameter(
            q_sigma, transform=positive(lower=sigma_floor), dtype=gpflow.default_float(), name="q_sigma"
        )  # [M, P]

    def kl(self, Kmm: TensorType) -> tf.Tensor:
        """KL[q(u) ‖ p(u)] summed over the P latent GPs (eq. 10)."""
        return preconditioned_kl(Kmm, self.q_mu, self.q_sigma, inverse_and_logdet=self.inverse_and_logdet)

    def conditional(
        self, Kmn: TensorType, Kmm: TensorType, Knn: TensorType, full_cov: bool = False
    ) -> tuple[tf.Tensor, tf.Tensor]:
        """Predictive mean and (co)variance of q(f) (eq. 9)."""
        return preconditioned_conditional(Kmn, Kmm, Knn, self.q_mu, self.q_sigma, full_cov=full_cov)


@check_shapes(
    "Kmm: [M, M]",
    "q_sigma: [M, P]",
    "return: [P, M, M]",
)
def _cholesky_K_plus_sigma(Kmm: TensorType, q_sigma: TensorType) -> tf.Tensor:
    """L_p = chol(K + diag(σ_p)) for all p at once (one batched Cholesky)."""
    return tf.linalg.cholesky(_K_plus_sigma(Kmm, q_sigma))  # [P, M, M]


def _K_plus_sigma(Kmm: TensorType, q_sigma: TensorType) -> tf.Tensor:
    """K + diag(σ_p) [P, M, M] for every latent GP p."""
    Kmm = tf.convert_to_tensor(Kmm)
    shape = tf.concat([tf.shape(q_sigma)[1:], tf.shape(Kmm)], 0)  # [P, M, M]
    diagonal = tf.linalg.diag_part(Kmm)[None, :] + tf.transpose(q_sigma)  # [P, M]
    return tf.linalg.set_diag(tf.broadcast_to(Kmm, shape), diagonal)  # [P, M, M]


@check_shapes(
    "Kmm: [M, M]",
    "q_mu: [M, P]",
    "q_sigma: [M, P]",
    "return: []",
)
def preconditioned_kl(
    Kmm: TensorType,
    q_mu: TensorType,
    q_sigma: TensorType,
    *,
    inverse_and_logdet: InverseAndLogdet | None = None,
) -> tf.Tensor:
    """KL[q(u) ‖ p(u)] = Σ_p ½ μ_pᵀKμ_p − ½ tr((K+Σ_p)⁻¹K) + ½ log|K+Σ_p| − ½ log|Σ_p|  (eq. 10).

    Only the Cholesky factors of K + Σ_p are needed (never of K).  The trace uses
    (K+Σ)⁻¹K = I − (K+Σ)⁻¹Σ, so tr = M − Σ_i σ_i [(K+Σ)⁻¹]_ii with the diagonal of the inverse read
    off L⁻¹.  Cost O(P M³).  ``inverse_and_logdet`` maps K + Σ_p to (L_p⁻¹, log|K + Σ_p|) and is
    differentiated through (``None``: :func:`gpflow_ext.utilities.cholesky_inverse_and_logdet`).
    """
    Kmm = tf.convert_to_tensor(Kmm)
    inverse_and_logdet = cholesky_inverse_and_logdet if inverse_and_logdet is None else inverse_and_logdet
    L_inv, logdet = inverse_and_logdet(_K_plus_sigma(Kmm, q_sigma))  # [P, M, M], [P]
    return _kl_from_factors(Kmm, q_mu, q_sigma, logdet, L_inv)


def _kl_from_factors(
    Kmm: tf.Tensor, q_mu: TensorType, q_sigma: TensorType, logdet_K_plus_sigma: tf.Tensor, L_inv: tf.Tensor
) -> tf.Tensor:
    """Eq. 10 given log|K + Σ_p| [P] and L_p⁻¹ [P, M, M]."""
    inv_diag = tf.reduce_sum(tf.square(L_inv), axis=-2)  # [P, M] = diag((K+Σ_p)⁻¹)
    return _kl_from_terms(Kmm, q_mu, q_sigma, logdet_K_plus_sigma, inv_diag)


def _kl_from_terms(
    Kmm: tf.Tensor, q_mu: TensorType, q_sigma: TensorType, logdet_K_plus_sigma: tf.Tensor, inv_diag: tf.Tensor
) -> tf.Tensor:
    """Eq. 10 given log|K + Σ_p| [P] and diag((K + Σ_p)⁻¹) [P, M]."""
    M = tf.shape(Kmm)[0]
    mahalanobis = tf.reduce_sum(q_mu * tf.matmul(Kmm, q_mu))  # Σ_p μ_pᵀ K μ_p
    sigma_t = tf.transpose(q_sigma)  # [P, M]
    num_latent = tf.cast(tf.shape(q_mu)[1], Kmm.dtype)
    trace = tf.cast(M, Kmm.dtype) * num_latent - tf.reduce_sum(sigma_t * inv_diag)  # Σ_p tr((K+Σ_p)⁻¹K)
    logdet_sigma = tf.reduce_sum(tf.math.log(q_sigma))  # Σ_p log|Σ_p|
    return 0.5 * (mahalanobis - trace + tf.reduce_sum(logdet_K_plus_sigma) - logdet_sigma)


@check_shapes(
    "Kmn: [M, N]",
    "Kmm: [M, M]",
    "Knn: [N, N] if full_cov",
    "Knn: [N] if not full_cov",
    "q_mu: [M, P]",
    "q_sigma: [M, P]",
    "return[0]: [N, P]",
    "return[1]: [P, N, N] if full_cov",
    "return[1]: [N, P] if not full_cov",
)
def preconditioned_conditional(
    Kmn: TensorType,
    Kmm: TensorType,
    Knn: TensorType,
    q_mu: TensorType,
    q_sigma: TensorType,
    full_cov: bool = False,
) -> tuple[tf.Tensor, tf.Tensor]:
    """Marginals of q(f) = ∫ p(f|u) q(u) du under the preconditioned q(u) (eq. 9, 18–19).

    mean_p = K_xz μ_p,   cov_p = K_xx − K_xz (K + Σ_p)⁻¹ K_zx.

    Cost O(P M³ + P M² N); the mean needs no factorisation at all.
    """
    Kmn = tf.convert_to_tensor(Kmn)
    mean = tf.matmul(Kmn, q_mu, transpose_a=True)  # [N, P]
    L = _cholesky_K_plus_sigma(Kmm, q_sigma)  # [P, M, M]
    num_latent = tf.shape(L)[0]
    Kmn_batched = tf.broadcast_to(Kmn[None], tf.concat([[num_latent], tf.shape(Kmn)], 0))  # [P, M, N]
    V = tf.linalg.triangular_solve(L, Kmn_batched, lower=True)  # [P, M, N] = L_p⁻¹ K_zx
    if full_cov:
        cov = Knn[None, :, :] - tf.matmul(V, V, transpose_a=True)  # [P, N, N]
        return mean, cov
    var = Knn[:, None] - tf.transpose(tf.reduce_sum(tf.square(V), axis=-2))  # [N, P]
    return mean, var


@check_shapes(
    "Kmm: [M, M]",
    "q_sigma: [M, P]",
    "Kmn: [M, N]",
    "return[0]: [P]",
    "return[1]: [P, M]",
    "return[2]: [P, N]",
)
def preconditioned_inverse_terms(
    Kmm: TensorType, q_sigma: TensorType, Kmn: TensorType
) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
    """(log|A_p| [P], diag(A_p⁻¹) [P, M], diag(K_xz A_p⁻¹ K_zx) [P, N]) with A_p = K + Σ_p, the terms of the
    KL (eq. 10, 22) and of the marginal variances (eq. 19) that need a factorisation, with a closed-form gradient.

    Value: L_p⁻¹ by :func:`gpflow_ext.utilities.cholesky_inverse_and_logdet`, diag(A_p⁻¹) its squared columns
    summed and V_p = L_p⁻¹ K_zx one product of the stacked L_p⁻¹ [P·M, M]. Gradient: each term is a function
    of A_p itself, so with upstream ḡ_p, d̄_p and ē_p

        Ā_p = ḡ_p A_p⁻¹ − A_p⁻¹ diag(d̄_p) A_p⁻¹ − U_p diag(ē_p) U_pᵀ,   U_p = A_p⁻¹ K_zx = L_p⁻ᵀ V_p,
        K̄ = Σ_p Ā_p,   σ̄_p = diag(Ā_p),   K̄_zx = 2 Σ_p U_p diag(ē_p),

    four products (A_p⁻¹ = L_p⁻ᵀ L_p⁻¹, U_p, and the two sums over p as single products of stacked
    matrices) instead of differentiating V_p, diag(A_p⁻¹) and then L_p⁻¹ back to A_p; the diagonals
    σ̄_p are elementwise.
    """
    return _inverse_terms(tf.convert_to_tensor(Kmm), tf.convert_to_tensor(q_sigma), tf.convert_to_tensor(Kmn))


@tf.custom_gradient
def _inverse_terms(Kmm: tf.Tensor, q_sigma: tf.Tensor, Kmn: tf.Tensor):
    L_inv, logdet = cholesky_inverse_and_logdet(_K_plus_sigma(Kmm, q_sigma))  # [P, M, M], [P]
    M = tf.shape(L_inv)[-1]
    inv_diag = tf.reduce_sum(tf.square(L_inv), axis=-2)  # [P, M] = diag(A_p⁻¹)
    V = _inverse_times(L_inv, Kmn)  # [P, M, N] = L_p⁻¹ K_zx
    explained = tf.reduce_sum(tf.square(V), axis=-2)  # [P, N]

    def grad(d_logdet, d_inv_diag, d_explained):
        d_logdet, d_inv_diag, d_explained = (
            tf.zeros_like(term) if upstream is None else upstream
            for term, upstream in zip((logdet, inv_diag, explained), (d_logdet, d_inv_diag, d_explained))
        )
        A_inv = tf.matmul(L_inv, L_inv, transpose_a=True)  # [P, M, M]
        U_t = tf.matmul(V, L_inv, transpose_a=True)  # [P, N, M] = U_pᵀ
        scaled_inv = A_inv * d_inv_diag[:, :, None]  # [P, M, M], row j of A_p⁻¹ times d̄_pj
        scaled_U_t = U_t * d_explained[:, :, None]  # [P, N, M], row n of U_pᵀ times ē_pn
        K_bar = (
            tf.reduce_sum(d_logdet[:, None, None] * A_inv, axis=0)
            - tf.matmul(tf.reshape(A_inv, [-1, M]), tf.reshape(scaled_inv, [-1, M]), transpose_a=True)
            - tf.matmul(tf.reshape(U_t, [-1, M]), tf.reshape(scaled_U_t, [-1, M]), transpose_a=True)
        )  # [M, M]
        sigma_bar = (
            d_logdet[:, None] * tf.linalg.diag_part(A_inv)
            - tf.reduce_sum(A_inv * scaled_inv, axis=-2)
            - tf.reduce_sum(U_t * scaled_U_t, axis=-2)
        )  # [P, M]
        Kmn_bar = 2.0 * tf.transpose(tf.reduce_sum(scaled_U_t, axis=0))  # [M, N]
        return K_bar, tf.transpose(sigma_bar), Kmn_bar

    return (logdet, inv_diag, explained), grad


@check_shapes(
    "Kmn: [M, N]",
    "Kmm: [M, M]",
    "Knn: [N]",
    "q_mu: [M, P]",
    "q_sigma: [M, P]",
    "return[0]: []",
    "return[1]: [N, P]",
    "return[2]: [N, P]",
)
def preconditioned_kl_and_marginals(
    Kmn: TensorType,
    Kmm: TensorType,
    Knn: TensorType,
    q_mu: TensorType,
    q_sigma: TensorType,
    *,
    inverse_and_logdet: InverseAndLogdet | None = None,
) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
    """:func:`preconditioned_kl` and the marginals of :func:`preconditioned_conditional` in one pass.

    Both need L_p = chol(K + Σ_p); the KL's trace term needs L_p⁻¹ anyway, so the marginal variances
    use V_p = L_p⁻¹ K_zx as a matrix product instead of a second batched triangular solve (the
    training step of MLGPF spends most of its time in these factorisations and their gradients).
    With ``inverse_and_logdet=None`` (default) the terms that need L_p⁻¹ are
    :func:`preconditioned_inverse_terms`, whose gradient is closed-form; a function mapping K + Σ_p
    [P, M, M] to (L_p⁻¹, log|K + Σ_p|) is differentiated through instead (e.g.
    :func:`gpflow_ext.utilities.cholesky_inverse_and_logdet`, or one TensorFlow differentiates itself).
    """
    Kmm = tf.convert_to_tensor(Kmm)
    Kmn = tf.convert_to_tensor(Kmn)
    mean = tf.matmul(Kmn, q_mu, transpose_a=True)  # [N, P]
    if inverse_and_logdet is None:
        logdet, inv_diag, explained = preconditioned_inverse_terms(Kmm, q_sigma, Kmn)  # [P], [P, M], [P, N]
        kl = _kl_from_terms(Kmm, q_mu, q_sigma, logdet, inv_diag)
        return kl, mean, Knn[:, None] - tf.transpose(explained)
    L_inv, logdet = inverse_and_logdet(_K_plus_sigma(Kmm, q_sigma))  # [P, M, M], [P]
    kl = _kl_from_factors(Kmm, q_mu, q_sigma, logdet, L_inv)
    V = _inverse_times(L_inv, Kmn)  # [P, M, N] = L_p⁻¹ K_zx
    var = Knn[:, None] - tf.transpose(tf.reduce_sum(tf.square(V), axis=-2))  # [N, P]
    return kl, mean, var


def _inverse_times(L_inv: tf.Tensor, Kmn: tf.Tensor) -> tf.Tensor:
    """V_p = L_p⁻¹ K_zx [P, M, N] for every p from L_p⁻¹ [P, M, M] and K_zx [M, N]: one product of the stacked
    L_p⁻¹ [P·M, M], not P products."""
    num_latent, M, N = tf.shape(L_inv)[0], tf.shape(L_inv)[-1], tf.shape(Kmn)[-1]
    return tf.reshape(tf.matmul(tf.reshape(L_inv, [-1, M]), Kmn), [num_latent, M, N])


@check_shapes(
    "Kmm: [M, M]",
    "q_mu: [M, P]",
    "q_sigma: [M, P]",
    "return[0]: [M, P]",
    "return[1]: [P, M, M]",
)
def preconditioned_mean_and_covariance(
    Kmm: TensorType, q_mu: TensorType, q_sigma: TensorType
) -> tuple[tf.Tensor, tf.Tensor]:
    """The equivalent Gaussian q(u) = N(m, S): m = Kμ [M, P], S_p = K − K(K+Σ_p)⁻¹K [P, M, M] (eq. 8).

    For tests and for handing the posterior to stock GPflow code (``q_sqrt = chol(S)``,
    ``white=False``).
    """
    Kmm = tf.convert_to_tensor(Kmm)
    m = tf.matmul(Kmm, q_mu)  # [M, P]
    L = _cholesky_K_plus_sigma(Kmm, q_sigma)  # [P, M, M]
    num_latent = tf.shape(L)[0]
    Kmm_batched = tf.broadcast_to(Kmm[None], tf.concat([[num_latent], tf.shape(Kmm)], 0))  # [P, M, M]
    V = tf.linalg.triangular_solve(L, Kmm_batched, lower=True)  # [P, M, M] = L_p⁻¹ K
    S = Kmm_batched - tf.matmul(V, V, transpose_a=True)  # [P, M, M]
    return m, S
