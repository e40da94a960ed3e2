"""gpflow_ext.conditionals.grid: f = W u for J GPs on one KISS-GP grid against the dense interpolation matrix."""
import gpflow
import numpy as np
import tensorflow as tf

from gpflow_ext.conditionals.grid import grid_conditional_samples
from gpflow_ext.inducing_variables import GridInducingPoints
from gpflow_ext.inducing_variables.grid import interpolation_matrix

F64 = gpflow.default_float()


def test_grid_conditional_samples_equal_dense_interpolation():
    rng = np.random.default_rng(0)
    grid = GridInducingPoints([6, 7], input_dim=2)
    J, B, T = 3, 5, 4
    X = rng.uniform(-1, 1, size=(B, J, 2))  # GP j reads X[:, j]
    u = rng.normal(size=(J, len(grid), T))
    f = grid_conditional_samples(tf.constant(X), grid, tf.constant(u)).numpy()  # [T, B, J]
    assert f.shape == (T, B, J)
    for j in range(J):
        W = tf.sparse.to_dense(interpolation_matrix(grid, X[:, j])).numpy()  # [B, m]
        np.testing.assert_allclose(f[:, :, j], (W @ u[j]).T, rtol=1e-13, atol=1e-13)
