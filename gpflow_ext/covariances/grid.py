"""Kuu and Kuf for KISS-GP grid inducing variables (SV-DKL Sections 3–4, Appendix B).

On a regular 1-D grid a stationary kernel's K_ZZ is symmetric Toeplitz (its first column
determines it, O(m) kernel evaluations); on a D-dimensional grid a kernel that factorises over
dimensions (the squared exponential / RBF used in the paper) gives ``K_ZZ = ⊗_d K_d``.
:func:`grid_kuu_operator` returns that structure as ``tf.linalg.LinearOperatorKronecker`` of
``LinearOperatorToeplitz`` factors; :func:`grid_kuu_factors` the dense (small) factors that
Cholesky-based code (the Kronecker KL) needs. Jitter is added per factor,
``K_ZZ = ⊗_d (K_d + jitter I)``, so the Kronecker structure survives.

**Circulant embedding** (the paper's "Toeplitz ... approximated by circulant matrices"): a 1-D
grid of m points with spacing h embeds in a ring of n >= 2(m - 1) points (period P = n h; by
default n ≈ 3(m − 1), :func:`circulant_embedding_size`). The
kernel *periodised* with period P, k_P(τ) = Σ_r k(τ + rP), gives a circulant n × n matrix C whose
eigenvalues are the aliased spectral density (Poisson summation),

    λ_q = (1/h) Σ_r S((q + r n) / (n h)),   S(ξ) = σ² √(2π) ℓ exp(−2π² ℓ² ξ²)  (squared exponential),

all >= 0, so ``R = [C^{1/2} Fᵀ]_{:m}`` (F the real orthonormal Fourier basis, the first m rows)
is an exact square root of the grid's covariance K_P = R Rᵀ under the periodised kernel, applied
to a vector in O(n log n) by an inverse real FFT (:func:`circulant_sqrt_apply`) — no Cholesky. K_P differs from
the squared exponential K_ZZ by Σ_{r≠0} k(τ + rP), at most about k(P − span) (2e-4 for ℓ = 0.5 with
P = 2·span; 1.2e-8 for ℓ = 0.7 with the default P = 3·span).

``Kuu``/``Kuf`` are also registered with GPflow's dispatchers so stock GPflow code works with a
:class:`GridInducingPoints` (as a dense matrix; the KISS-GP cross-covariance is
``K_ZX ≈ K_ZZ Wᵀ``).
"""

from collections.abc import Sequence

import gpflow
import numpy as np
import scipy.fft
import tensorflow as tf
from check_shapes import check_shapes
from gpflow.base import TensorType
from gpflow.covariances import Kuf, Kuu
from gpflow.kernels import IsotropicStationary, Kernel, SquaredExponential

from ..inducing_variables.grid import GridInducingPoints, interpolation_indices_and_weights
from ..utilities import dense_kron

__all__ = [
    "grid_kuu_columns",
    "grid_kuu_factors",
    "grid_kuu_operator",
    "circulant_embedding_size",
    "grid_circulant_spectra",
    "circulant_sqrt_apply",
    "periodised_grid_kuu",
    "Kuu_grid",
    "Kuf_grid",
]


def _check_kernel(grid: GridInducingPoints, kernel: Kernel) -> None:
    if not isinstance(kernel, IsotropicStationary):
        raise TypeError(
            f"grid inducing points need a stationary kernel (IsotropicStationary), got {type(kernel).__name__}"
        )
    if kernel.active_dims != slice(None, None, None):
        raise ValueError("grid kernels must act on all their inputs (no active_dims)")
    if grid.input_dim > 1 and not isinstance(kernel, SquaredExponential):
        raise TypeError(
            "a D>1 grid needs a kernel that factorises over dimensions (SquaredExponential) "
            f"for K_ZZ = ⊗ K_d, got {type(kernel).__name__}"
        )
    ls_shape = tuple(kernel.lengthscales.shape)
    if ls_shape not in ((), (grid.input_dim,)):
        raise ValueError(f"kernel lengthscales must be scalar or [{grid.input_dim}], got shape {ls_shape}")


def _lengthscale_per_dimension(grid: GridInducingPoints, kernel: Kernel) -> tf.Tensor:
    """The kernel's lengthscale(s) broadcast to one per grid dimension, ``[D]``."""
    return kernel.lengthscales * tf.ones([grid.input_dim], dtype=gpflow.default_float())


def grid_kuu_columns(grid: GridInducingPoints, kernel: Kernel) -> list[tf.Tensor]:
    """First columns of the Toeplitz factors K_d (without jitter), ``[m_d]`` each."""
    _check_kernel(grid, kernel)
    cols = []
    if grid.input_dim == 1:
        z = grid.axis(0)[:, None]  # [m, 1]
        return [kernel.K(z[:1], z)[0]]  # [m]
    lengthscales = _lengthscale_per_dimension(grid, kernel)
    for d in range(grid.input_dim):
        z = grid.axis(d)  # [m_d]
        r = (z - z[0]) / lengthscales[d]  # [m_d]
        col = tf.exp(-0.5 * tf.square(r))
        if d == 0:
            col = kernel.variance * col
        cols.append(col)
    return cols


def _toeplitz_dense(col: tf.Tensor) -> tf.Tensor:
    m = col.shape[0]
    i = tf.range(m)
    return tf.gather(col, tf.abs(i[:, None] - i[None, :]))  # [m, m]


def grid_kuu_factors(grid: GridInducingPoints, kernel: Kernel, jitter: float = 0.0) -> list[tf.Tensor]:
    """Dense factors ``K_d + jitter I`` ``[m_d, m_d]`` with ``K_ZZ = ⊗_d (K_d + jitter I)``."""
    factors = []
    for col in grid_kuu_columns(grid, kernel):
        K = _toeplitz_dense(col)
        factors.append(K + jitter * tf.eye(col.shape[0], dtype=K.dtype))
    return factors


def grid_kuu_operator(grid: GridInducingPoints, kernel: Kernel, jitter: float = 0.0) -> tf.linalg.LinearOperator:
    """K_ZZ as a LinearOperator: Toeplitz (1-D) or Kronecker of Toeplitz factors (D-D)."""
    ops = []
    for col in grid_kuu_columns(grid, kernel):
        col = col + tf.one_hot(0, col.shape[0], on_value=tf.cast(jitter, col.dtype), dtype=col.dtype)
        ops.append(
            tf.linalg.LinearOperatorToeplitz(
                col, row=col, is_self_adjoint=True, is_positive_definite=True if jitter > 0 else None
            )
        )
    if len(ops) == 1:
        return ops[0]
    return tf.linalg.LinearOperatorKronecker(ops, is_square=True)


def circulant_embedding_size(num_grid_points: int, period_factor: float = 3.0) -> int:
    """Ring size n for a 1-D grid of m points: the smallest even FFT-friendly n >= period_factor·(m − 1).

    ``period_factor`` >= 2 keeps the m grid points a contiguous block of the ring (so the block of
    the circulant is the periodised kernel's Toeplitz matrix); larger values push the period P and
    so the periodisation error k(P − span) further out, at O(n log n) cost.
    """
    if not period_factor >= 2.0:
        raise ValueError(f"period_factor must be >= 2 (the grid must fit in half the ring), got {period_factor}")
    if int(num_grid_points) < 2:
        raise ValueError(f"num_grid_points must be >= 2, got {num_grid_points}")
    half = int(np.ceil(period_factor * (int(num_grid_points) - 1) / 2))
    return 2 * int(scipy.fft.next_fast_len(half))


def grid_circulant_spectra(
    grid: GridInducingPoints,
    kernel: Kernel,
    ring_sizes: Sequence[int],
    jitter: float = 0.0,
    num_aliases: int = 3,
) -> list[tf.Tensor]:
    """Eigenvalues of the circulant embeddings, one ``[n_d // 2 + 1]`` (rfft order) per dimension.

    The squared exponential periodised on a ring of ``n_d`` points (spacing ``h_d``):
    ``λ_q = (1/h) Σ_{|r|<=num_aliases} S((q + r n)/(n h)) + jitter`` with the kernel variance
    on dimension 0, so that ``⊗_d C_d`` is the covariance of the D-dimensional ring. The alias
    sum is exact to double precision for lengthscales down to about h/3 (a kernel shorter than
    the grid spacing is not resolved by the grid anyway).
    """
    if not isinstance(kernel, SquaredExponential):
        raise TypeError(
            f"the circulant grid prior needs a SquaredExponential kernel (closed-form spectral density), "
            f"got {type(kernel).__name__}"
        )
    _check_kernel(grid, kernel)
    if len(ring_sizes) != grid.input_dim:
        raise ValueError(f"ring_sizes needs {grid.input_dim} entries, got {list(ring_sizes)}")
    dtype = gpflow.default_float()
    lengthscales = _lengthscale_per_dimension(grid, kernel)
    spectra = []
    for d, n in enumerate(ring_sizes):
        m, h = grid.grid_sizes[d], grid.spacings[d]
        if n < 2 * (m - 1):
            raise ValueError(f"ring size {n} must be >= 2(m - 1) = {2 * (m - 1)} for dimension {d}")
        q = np.arange(n // 2 + 1)[None, :] + n * np.arange(-num_aliases, num_aliases + 1)[:, None]
        xi = tf.constant(q / (n * h), dtype=dtype)  # [2A+1, n//2+1] frequencies
        ell = lengthscales[d]
        density = np.sqrt(2.0 * np.pi) * ell * tf.exp(-2.0 * np.pi**2 * tf.square(ell * xi))
        lam = tf.reduce_sum(density, axis=0) / h  # [n//2+1]
        if d == 0:
            lam = kernel.variance * lam
        spectra.append(lam + tf.cast(jitter, dtype))
    return spectra


@check_shapes("spectrum: [J, F]", "v: [J, n, R]", "return: [J, m, R]")
def circulant_sqrt_apply(spectrum: tf.Tensor, v: tf.Tensor, m: int) -> tf.Tensor:
    """``R v`` with ``R = [C^{1/2} Fᵀ]_{:m}``: C the circulant with rfft eigenvalues ``spectrum``,
    F the orthonormal real Fourier basis of the ring, ordered by frequency.

    ``v`` holds real Fourier coordinates (n even): ``v_0`` the constant, ``(v_{2q−1}, v_{2q})`` the
    cosine/sine pair of frequency q, ``v_{n−1}`` the Nyquist term, so that the rfft coefficients of
    the ring vector ``Fᵀv`` are ``X_0 = √n v_0``, ``X_q = √(n/2)(v_{2q−1} + i v_{2q})``,
    ``X_{n/2} = √n v_{n−1}``; then ``C^{1/2} Fᵀ v = irfft(√λ ⊙ X)`` and the first m entries are the
    grid values. F is orthonormal, so ``v ~ N(0, I)`` gives ``u ~ N(0, [C]_{:m,:m})`` exactly;
    O(n log n) per column, batched over J GPs. The coordinates of low index are the smooth ones.
    """
    n = int(v.shape[1])
    if n % 2:
        raise ValueError(f"the ring size must be even, got {n}")
    cols = tf.transpose(v, [0, 2, 1])  # [J, R, n]
    dc, pairs, nyq = cols[..., :1], cols[..., 1:-1], cols[..., -1:]
    re = tf.concat([np.sqrt(n) * dc, np.sqrt(n / 2) * pairs[..., 0::2], np.sqrt(n) * nyq], axis=-1)  # [J, R, n/2+1]
    zero = tf.zeros_like(dc)
    im = tf.concat([zero, np.sqrt(n / 2) * pairs[..., 1::2], zero], axis=-1)  # [J, R, n/2+1]
    sqrt_lam = tf.sqrt(tf.maximum(spectrum, 0.0))[:, None, :]  # [J, 1, n/2+1]
    X = tf.complex(re * sqrt_lam, im * sqrt_lam)
    out = tf.signal.irfft(X, fft_length=[n])  # [J, R, n]
    return tf.transpose(out[:, :, :m], [0, 2, 1])  # [J, m, R]


def periodised_grid_kuu(
    grid: GridInducingPoints, kernel: Kernel, ring_sizes: Sequence[int], jitter: float = 0.0, num_periods: int = 30
) -> tf.Tensor:
    """Brute-force ``[m, m]`` covariance of the grid under the kernel periodised on the ring
    (``Σ_{|r|<=num_periods} k(z_i − z_j + r P)`` per dimension; for checks, O(m²) memory)."""
    lengthscales = _lengthscale_per_dimension(grid, kernel)
    factors = []
    for d, n in enumerate(ring_sizes):
        z = grid.axis(d)
        P = n * grid.spacings[d]
        diff = z[:, None] - z[None, :]  # [m_d, m_d]
        shifts = tf.constant(P * np.arange(-num_periods, num_periods + 1), dtype=z.dtype)
        r = (diff[None] + shifts[:, None, None]) / lengthscales[d]
        K_d = tf.reduce_sum(tf.exp(-0.5 * tf.square(r)), axis=0)
        if d == 0:
            K_d = kernel.variance * K_d
        factors.append(K_d + jitter * tf.eye(grid.grid_sizes[d], dtype=K_d.dtype))
    return dense_kron([K_d[None] for K_d in factors])[0]  # [m, m]


@Kuu.register(GridInducingPoints, Kernel)
@check_shapes("return: [M, M]")
def Kuu_grid(inducing_variable: GridInducingPoints, kernel: Kernel, *, jitter: float = 0.0) -> tf.Tensor:
    """Dense K_ZZ on the grid (built from the Toeplitz/Kronecker factors)."""
    op = grid_kuu_operator(inducing_variable, kernel, jitter=0.0)
    Kzz = op.to_dense()
    return Kzz + jitter * tf.eye(len(inducing_variable), dtype=Kzz.dtype)


@Kuf.register(GridInducingPoints, Kernel, object)
@check_shapes("Xnew: [N, D]", "return: [M, N]")
def Kuf_grid(inducing_variable: GridInducingPoints, kernel: Kernel, Xnew: TensorType) -> tf.Tensor:
    """KISS-GP cross-covariance ``K_ZX ≈ K_ZZ Wᵀ`` (W the sparse cubic interpolation)."""
    indices, weights = interpolation_indices_and_weights(inducing_variable, Xnew)  # [N, K]
    Kzz = grid_kuu_operator(inducing_variable, kernel).to_dense()  # [M, M]
    rows = tf.gather(Kzz, indices)  # [N, K, M]
    return tf.transpose(tf.reduce_sum(weights[..., None] * rows, axis=-2))  # [M, N]
