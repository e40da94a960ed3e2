"""Kuu and Kuf for KISS-GP grid inducing variables (SV-DKL Sections 3–4, Appendix B).

On a regular 1-D grid a stationary kernel's K_ZZ is symmetric Toeplitz (its first column
determines it, O(m) kernel evaluations); on a D-dimensional grid a kernel that factorises over
dimensions (the squared exponential / RBF used in the paper) gives ``K_ZZ = ⊗_d K_d``.
:func:`grid_kuu_operator` returns that structure as ``tf.linalg.LinearOperatorKronecker`` of
``LinearOperatorToeplitz`` factors; :func:`grid_kuu_factors` the dense (small) factors that
Cholesky-based code (the Kronecker KL) needs. Jitter is added per factor,
``K_ZZ = ⊗_d (K_d + jitter I)``, so the Kronecker structure survives.

``Kuu``/``Kuf`` are also registered with GPflow's dispatchers so stock GPflow code works with a
:class:`GridInducingPoints` (as a dense matrix; the KISS-GP cross-covariance is
``K_ZX ≈ K_ZZ Wᵀ``).
"""
from typing import List

import tensorflow as tf
from check_shapes import check_shapes

import gpflow
from gpflow.base import TensorType
from gpflow.covariances import Kuf, Kuu
from gpflow.kernels import IsotropicStationary, Kernel, SquaredExponential

from ..inducing_variables.grid import GridInducingPoints, interpolation_indices_and_weights

__all__ = ["grid_kuu_columns", "grid_kuu_factors", "grid_kuu_operator", "Kuu_grid", "Kuf_grid"]


def _check_kernel(grid: GridInducingPoints, kernel: Kernel) -> None:
    if not isinstance(kernel, IsotropicStationary):
        raise TypeError(
            "grid inducing points need a stationary kernel (IsotropicStationary), "
            f"got {type(kernel).__name__}"
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
        raise ValueError(
            f"kernel lengthscales must be scalar or [{grid.input_dim}], got shape {ls_shape}"
        )


def grid_kuu_columns(grid: GridInducingPoints, kernel: Kernel) -> List[tf.Tensor]:
    """First columns of the Toeplitz factors K_d (without jitter), ``[m_d]`` each."""
    _check_kernel(grid, kernel)
    cols = []
    if grid.input_dim == 1:
        z = grid.axis(0)[:, None]  # [m, 1]
        return [kernel.K(z[:1], z)[0]]  # [m]
    lengthscales = kernel.lengthscales * tf.ones([grid.input_dim], dtype=gpflow.default_float())
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


def grid_kuu_factors(
    grid: GridInducingPoints, kernel: Kernel, jitter: float = 0.0
) -> List[tf.Tensor]:
    """Dense factors ``K_d + jitter I`` ``[m_d, m_d]`` with ``K_ZZ = ⊗_d (K_d + jitter I)``."""
    factors = []
    for col in grid_kuu_columns(grid, kernel):
        K = _toeplitz_dense(col)
        factors.append(K + jitter * tf.eye(col.shape[0], dtype=K.dtype))
    return factors


def grid_kuu_operator(
    grid: GridInducingPoints, kernel: Kernel, jitter: float = 0.0
) -> tf.linalg.LinearOperator:
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


@Kuu.register(GridInducingPoints, Kernel)
@check_shapes("return: [M, M]")
def Kuu_grid(
    inducing_variable: GridInducingPoints, kernel: Kernel, *, jitter: float = 0.0
) -> tf.Tensor:
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
