"""Grid-interpolation conditionals for KISS-GP inducing variables (SV-DKL eq. 2 with K̃ = 0, eq. 8).

With local cubic interpolation on a :class:`~gpflow_ext.inducing_variables.GridInducingPoints` grid,
f | u is deterministic: ``f(x) = W(x) u``, W the row-sparse interpolation matrix of
:func:`~gpflow_ext.inducing_variables.grid.interpolation_indices_and_weights` (the one implementation of the
interpolation). :func:`grid_conditional_samples` pushes samples of u for J GPs through their own W.
"""

import tensorflow as tf
from check_shapes import check_shapes

from ..inducing_variables.grid import GridInducingPoints, interpolate_samples, interpolation_indices_and_weights

__all__ = ["grid_conditional_samples"]


@check_shapes(
    "Xnew: [B, J, D]",
    "u: [J, M, T]",
    "return: [T, B, J]",
)
def grid_conditional_samples(Xnew: tf.Tensor, grid: GridInducingPoints, u: tf.Tensor) -> tf.Tensor:
    """Samples f_j^(t)(x_b) = W_j(x_b) u_j^(t) of J GPs on one grid (eq. 8).

    :param Xnew: the inputs of each GP, ``[B, J, D]`` (GP j reads ``Xnew[:, j]``).
    :param grid: the shared grid (m points).
    :param u: T samples of the grid values of each GP, ``[J, m, T]``.
    """
    indices, weights = interpolation_indices_and_weights(grid, Xnew)  # [B, J, K]
    return interpolate_samples(indices, weights, u)
