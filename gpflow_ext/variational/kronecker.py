"""Kronecker-structured q(u) for grid inducing variables (SV-DKL Section 4, Appendix B).

For J independent GPs on the same grid of m = ∏_d m_d points,
``q(u_j) = N(μ_j, S_j)`` with ``S_j = L_j L_jᵀ`` and ``L_j = ⊗_d L_{j,d}`` (eq. 11); for a 1-D
grid this is a full lower-triangular L. Samples are reparameterised, ``u = μ + L ε``, with a
Kronecker mat-vec (O(m^{1+1/D}) instead of O(m²)), and the KL to ``p(u_j) = N(0, ⊗_d K_{j,d})``
has the closed form of eq. 10 evaluated with the Kronecker identities of eq. 11:

* ``log|K| = Σ_d (m/m_d) log|K_d|``, ``log|S| = Σ_d (m/m_d) log|S_d|``,
* ``tr(K⁻¹S) = ∏_d tr(K_d⁻¹ S_d)``,
* ``μᵀK⁻¹μ = ‖(⊗_d R_d⁻¹) μ‖²`` with ``K_d = R_d R_dᵀ``.

The factors are stored batched over GPs: ``[J, m_d, m_d]`` per dimension. Grid points are in
row-major order (dimension 0 slowest), matching :class:`GridInducingPoints`.
"""

from collections.abc import Callable, Sequence
from functools import partial

import gpflow
import numpy as np
import tensorflow as tf
from check_shapes import check_shapes
from gpflow import Parameter
from gpflow.utilities import triangular

from ..utilities import dense_kron
from ..validation import check_positive_int

__all__ = ["kron_apply", "kron_matmul", "kron_triangular_solve", "gauss_kl_kronecker", "KroneckerGaussian"]


def kron_apply(grid_sizes: Sequence[int], x: tf.Tensor, fns: Sequence[Callable[[tf.Tensor], tf.Tensor]]) -> tf.Tensor:
    """Apply ``⊗_d A_d`` to ``x`` [J, m, T] where ``fns[d]`` maps [J, m_d, n] -> [J, m'_d, n].

    The factors may be rectangular (m'_d ≠ m_d, e.g. a circulant square root restricted to the
    grid); the result is ``[J, ∏ m'_d, T]``."""
    J, T = tf.shape(x)[0], tf.shape(x)[-1]
    D = len(grid_sizes)
    t = tf.reshape(x, tf.concat([[J], list(grid_sizes), [T]], axis=0))  # [J, m_1, ..., m_D, T]
    for d in range(D):
        # bring axis d+1 next to the batch axis, flatten the rest, apply, restore
        perm = [0, d + 1] + [a for a in range(1, D + 2) if a != d + 1]
        inv = np.argsort(perm).tolist()
        moved = tf.transpose(t, perm)  # [J, m_d, ...]
        shape = tf.shape(moved)
        flat = tf.reshape(moved, [J, grid_sizes[d], -1])  # [J, m_d, n]
        flat = fns[d](flat)  # [J, m'_d, n]
        shape = tf.concat([shape[:1], tf.shape(flat)[1:2], shape[2:]], axis=0)
        t = tf.transpose(tf.reshape(flat, shape), inv)
    return tf.reshape(t, [J, -1, T])  # [J, m, T]


def kron_matmul(factors: Sequence[tf.Tensor], x: tf.Tensor) -> tf.Tensor:
    """``(⊗_d A_d) x`` for batched factors ``A_d`` [J, m_d, m_d] and ``x`` [J, m, T]."""
    sizes = [int(f.shape[-1]) for f in factors]
    return kron_apply(sizes, x, [partial(tf.linalg.matmul, A) for A in factors])


def kron_triangular_solve(chol_factors: Sequence[tf.Tensor], x: tf.Tensor) -> tf.Tensor:
    """``(⊗_d R_d)⁻¹ x`` for lower-triangular ``R_d`` [J, m_d, m_d] and ``x`` [J, m, T]."""
    sizes = [int(f.shape[-1]) for f in chol_factors]
    return kron_apply(sizes, x, [partial(tf.linalg.triangular_solve, R, lower=True) for R in chol_factors])


@check_shapes(
    "q_mu: [J, M]",
    "return: []",
)
def gauss_kl_kronecker(
    q_mu: tf.Tensor,
    q_sqrt_factors: Sequence[tf.Tensor],
    K_factors: Sequence[tf.Tensor] | None = None,
) -> tf.Tensor:
    """Σ_j KL[N(μ_j, ⊗_d L_{j,d}L_{j,d}ᵀ) ‖ N(0, ⊗_d K_{j,d})] (eq. 10 with eq. 11).

    :param q_mu: [J, m] means.
    :param q_sqrt_factors: D lower-triangular factors, [J, m_d, m_d] each.
    :param K_factors: D prior factors (jitter included), [J, m_d, m_d] each; ``None`` for the
        whitened prior N(0, I).
    """
    sizes = [int(f.shape[-1]) for f in q_sqrt_factors]
    m = float(np.prod(sizes))
    log_det_K = 0.0
    log_det_S = 0.0
    trace = 1.0
    chols = None if K_factors is None else [tf.linalg.cholesky(K) for K in K_factors]  # R_d
    for d, (L, m_d) in enumerate(zip(q_sqrt_factors, sizes)):
        log_det_S += (m / m_d) * 2.0 * tf.reduce_sum(tf.math.log(tf.abs(tf.linalg.diag_part(L))), axis=-1)  # [J]
        if chols is None:
            trace = trace * tf.reduce_sum(tf.square(L), axis=[-2, -1])  # [J]
        else:
            R = chols[d]
            log_det_K += (m / m_d) * 2.0 * tf.reduce_sum(tf.math.log(tf.linalg.diag_part(R)), axis=-1)  # [J]
            RinvL = tf.linalg.triangular_solve(R, L, lower=True)  # [J, m_d, m_d]
            trace = trace * tf.reduce_sum(tf.square(RinvL), axis=[-2, -1])  # [J]
    if chols is None:
        maha = tf.reduce_sum(tf.square(q_mu), axis=-1)  # [J]
    else:
        alpha = kron_triangular_solve(chols, q_mu[..., None])  # [J, m, 1]
        maha = tf.reduce_sum(tf.square(alpha), axis=[-2, -1])  # [J]
    kl = 0.5 * (log_det_K - log_det_S - m + trace + maha)  # [J]
    return tf.reduce_sum(kl)


class KroneckerGaussian(gpflow.Module):
    """q(u_j) = N(μ_j, ⊗_d L_{j,d} L_{j,d}ᵀ) for J GPs on one grid (Section 4, eq. 11).

    :param num_gps: J.
    :param grid_sizes: (m_1, ..., m_D).
    """

    def __init__(self, num_gps: int, grid_sizes: Sequence[int], name=None):
        super().__init__(name=name)
        self.num_gps = check_positive_int(num_gps, "num_gps")
        self.grid_sizes = tuple(check_positive_int(s, f"grid_sizes[{d}]") for d, s in enumerate(grid_sizes))
        dtype = gpflow.default_float()
        m = int(np.prod(self.grid_sizes))
        self.q_mu = Parameter(np.zeros((self.num_gps, m)), dtype=dtype, name="q_mu")  # [J, m]
        self.q_sqrt_factors = [
            Parameter(
                np.tile(np.eye(s)[None], [self.num_gps, 1, 1]),
                transform=triangular(),
                dtype=dtype,
                name=f"q_sqrt_{d}",
            )  # [J, m_d, m_d]
            for d, s in enumerate(self.grid_sizes)
        ]

    @property
    def num_inducing(self) -> int:
        return int(np.prod(self.grid_sizes))

    def init_from_prior(self, K_factors: Sequence[tf.Tensor] | None = None) -> None:
        """Set q(u) = p(u): μ = 0, L_d = chol(K_d) (identity when whitened): the KL starts at zero."""
        self.q_mu.assign(tf.zeros_like(self.q_mu))
        for d, L in enumerate(self.q_sqrt_factors):
            if K_factors is None:
                L.assign(tf.eye(self.grid_sizes[d], batch_shape=[self.num_gps], dtype=L.dtype))
            else:
                L.assign(tf.linalg.cholesky(K_factors[d]))

    @check_shapes("return: [J, M, T]")
    def sample(self, num_samples: int = 1, seed=None, eps: tf.Tensor | None = None) -> tf.Tensor:
        """Reparameterised samples u^(t) = μ + L ε^(t) (Appendix B), ``[J, m, T]``.

        ``seed``: None draws from TF's global generator; a shape-[2] integer tensor draws ε with
        ``tf.random.stateless_normal`` (the same seed gives the same samples, in or out of a graph).
        ``eps``: the standard-normal draws ε ``[J, m, T]`` themselves (``seed`` is then unused)."""
        shape = [self.num_gps, self.num_inducing, num_samples]
        if eps is not None:
            eps = tf.reshape(tf.cast(eps, self.q_mu.dtype), shape)  # [J, m, T]
        elif seed is None:
            eps = tf.random.normal(shape, dtype=self.q_mu.dtype)  # [J, m, T]
        else:
            eps = tf.random.stateless_normal(shape, seed=seed, dtype=self.q_mu.dtype)  # [J, m, T]
        return self.q_mu[..., None] + kron_matmul(list(self.q_sqrt_factors), eps)

    def covariance(self) -> tf.Tensor:
        """Dense S_j = ⊗_d L_d L_dᵀ, ``[J, m, m]`` (for checks; O(m²) memory)."""
        return dense_kron([tf.linalg.matmul(L, L, transpose_b=True) for L in self.q_sqrt_factors])

    def kl(self, K_factors: Sequence[tf.Tensor] | None = None) -> tf.Tensor:
        """Σ_j KL[q(u_j) ‖ N(0, ⊗_d K_{j,d})] (``None``: whitened prior N(0, I))."""
        return gauss_kl_kronecker(self.q_mu, list(self.q_sqrt_factors), K_factors)
