"""KISS-GP grid: interpolation, Toeplitz/Kronecker K_ZZ, Kuf — each against a brute-force twin."""
import gpflow
import numpy as np
import pytest
import tensorflow as tf

import gpflow_ext  # noqa: F401  (registers Kuu/Kuf)
from gpflow_ext.covariances.grid import grid_kuu_factors, grid_kuu_operator
from gpflow_ext.inducing_variables.grid import (
    BoundedScaling,
    GridInducingPoints,
    interpolate,
    interpolation_indices_and_weights,
    interpolation_matrix,
    keys_cubic_weights,
)

# Stated tolerances (Keys' cubic convolution is third-order accurate, error O(h^3)):
# m = 64 points on [-1, 1] (spacing h = 2/61 ≈ 0.033):
SMOOTH_FN_TOL = 1e-4  # max |f(x) - W f(Z)| for f = sin(3x) (1-D), sin(2x)cos(3y) (2-D)
KERNEL_TOL = 1e-4  # max |K_XX - W K_ZZ Wᵀ| for an RBF with lengthscale 0.5, variance 1


def test_keys_weights_partition_of_unity_and_exact_at_nodes():
    t = tf.constant(np.linspace(0, 1, 101))
    w = keys_cubic_weights(t).numpy()
    np.testing.assert_allclose(w.sum(-1), 1.0, atol=1e-14)
    np.testing.assert_allclose(w[0], [0, 1, 0, 0], atol=1e-14)
    np.testing.assert_allclose(w[-1], [0, 0, 1, 0], atol=1e-14)


def test_interpolation_is_sparse_rows_and_reproduces_smooth_1d(rng):
    grid = GridInducingPoints(64, lower=-1, upper=1)
    X = rng.uniform(-1, 1, size=(500, 1))
    idx, w = interpolation_indices_and_weights(grid, X)
    assert idx.shape == (500, 4) and w.shape == (500, 4)  # 4 weights per point, never dense N×m
    assert idx.numpy().min() >= 0 and idx.numpy().max() < len(grid)
    u = np.sin(3 * grid.Z.numpy())  # [m, 1]
    f = interpolate(idx, w, tf.constant(u)).numpy()
    err = np.max(np.abs(f - np.sin(3 * X)))
    assert err < SMOOTH_FN_TOL, err
    # cubic accuracy: halving h cuts the error by ~8
    fine = GridInducingPoints(125, lower=-1, upper=1)
    idx2, w2 = interpolation_indices_and_weights(fine, X)
    err2 = np.max(np.abs(interpolate(idx2, w2, tf.constant(np.sin(3 * fine.Z.numpy()))).numpy() - np.sin(3 * X)))
    assert err / err2 > 5.0


def test_interpolation_reproduces_smooth_2d(rng):
    grid = GridInducingPoints([64, 64], input_dim=2)
    X = rng.uniform(-1, 1, size=(300, 2))
    idx, w = interpolation_indices_and_weights(grid, X)
    assert idx.shape == (300, 16)
    Z = grid.Z.numpy()
    u = (np.sin(2 * Z[:, 0]) * np.cos(3 * Z[:, 1]))[:, None]
    f = interpolate(idx, w, tf.constant(u)).numpy()[:, 0]
    assert np.max(np.abs(f - np.sin(2 * X[:, 0]) * np.cos(3 * X[:, 1]))) < SMOOTH_FN_TOL


@pytest.mark.parametrize("input_dim", [1, 2])
def test_kiss_gp_reproduces_exact_kernel(rng, input_dim):
    """K_XX ≈ W K_ZZ Wᵀ (eq. 2 with K̃ = 0), W as a sparse matrix."""
    grid = GridInducingPoints(64, input_dim=input_dim)
    kernel = gpflow.kernels.SquaredExponential(lengthscales=[0.5] * input_dim)
    X = rng.uniform(-1, 1, size=(200, input_dim))
    W = interpolation_matrix(grid, X)
    assert W.values.shape[0] == 200 * 4**input_dim
    Kzz = grid_kuu_operator(grid, kernel).to_dense()
    WK = tf.sparse.sparse_dense_matmul(W, Kzz)
    approx = tf.sparse.sparse_dense_matmul(W, tf.transpose(WK)).numpy()
    err = np.max(np.abs(approx - kernel(X).numpy()))
    assert err < KERNEL_TOL, err


@pytest.mark.parametrize(
    "kernel, input_dim",
    [
        (gpflow.kernels.SquaredExponential(lengthscales=0.3, variance=1.7), 1),
        (gpflow.kernels.Matern32(lengthscales=0.4, variance=0.8), 1),
        (gpflow.kernels.SquaredExponential(lengthscales=[0.3, 0.7], variance=1.3), 2),
        (gpflow.kernels.SquaredExponential(lengthscales=[0.3, 0.7, 0.5]), 3),
    ],
)
def test_toeplitz_kronecker_operators_equal_dense_kzz(kernel, input_dim):
    grid = GridInducingPoints([9, 7, 6][:input_dim], input_dim=input_dim)
    op = grid_kuu_operator(grid, kernel)
    expected_type = tf.linalg.LinearOperatorToeplitz if input_dim == 1 else tf.linalg.LinearOperatorKronecker
    assert isinstance(op, expected_type)
    dense = kernel(grid.Z).numpy()
    np.testing.assert_allclose(op.to_dense().numpy(), dense, rtol=1e-12, atol=1e-12)
    v = np.random.default_rng(1).normal(size=(len(grid), 3))
    np.testing.assert_allclose(op.matmul(tf.constant(v)).numpy(), dense @ v, atol=1e-10)
    # dense factors: ⊗ (K_d + jitter I)
    factors = [f.numpy() for f in grid_kuu_factors(grid, kernel, jitter=1e-3)]
    kron = factors[0]
    for f in factors[1:]:
        kron = np.kron(kron, f)
    jittered = [f.numpy() - 1e-3 * np.eye(f.shape[0]) for f in grid_kuu_factors(grid, kernel, 1e-3)]
    kron0 = jittered[0]
    for f in jittered[1:]:
        kron0 = np.kron(kron0, f)
    np.testing.assert_allclose(kron0, dense, atol=1e-12)
    assert kron.shape == dense.shape


def test_dispatchers_kuu_kuf(rng):
    grid = GridInducingPoints(40)
    kernel = gpflow.kernels.SquaredExponential(lengthscales=0.5)
    X = rng.uniform(-1, 1, size=(30, 1))
    Kuu = gpflow.covariances.Kuu(grid, kernel, jitter=1e-6).numpy()
    np.testing.assert_allclose(Kuu, kernel(grid.Z).numpy() + 1e-6 * np.eye(40), atol=1e-12)
    Kuf = gpflow.covariances.Kuf(grid, kernel, X).numpy()
    W = tf.sparse.to_dense(interpolation_matrix(grid, X)).numpy()
    np.testing.assert_allclose(Kuf, kernel(grid.Z).numpy() @ W.T, atol=1e-12)  # K_ZZ Wᵀ
    np.testing.assert_allclose(Kuf, kernel(grid.Z, X).numpy(), atol=KERNEL_TOL)  # ≈ K_ZX


def test_range_policy_clamp_and_error():
    clamp = GridInducingPoints(16)
    idx_in, w_in = interpolation_indices_and_weights(clamp, np.array([[1.0]]))
    idx_out, w_out = interpolation_indices_and_weights(clamp, np.array([[3.5]]))
    np.testing.assert_array_equal(idx_in.numpy(), idx_out.numpy())
    np.testing.assert_allclose(w_in.numpy(), w_out.numpy())
    strict = GridInducingPoints(16, out_of_range="error")
    with pytest.raises(ValueError, match="outside the grid range"):
        interpolation_indices_and_weights(strict, np.array([[0.0], [1.2]]))
    with pytest.raises(ValueError, match="input_dim"):
        interpolation_indices_and_weights(strict, np.zeros((3, 2)))


def test_bounded_scaling_maps_inside_the_grid(rng):
    layer = BoundedScaling(-1.0, 1.0)
    H = rng.normal(scale=50.0, size=(1000, 3))
    layer.adapt(H)
    Z = layer(tf.constant(H)).numpy()
    assert Z.min() > -1.0 and Z.max() < 1.0
    assert np.mean(np.abs(Z) > 0.99) < 0.01  # adapted scale: features are not saturated
    with pytest.raises(ValueError):
        layer.adapt(np.zeros((0, 3)))


def test_bounded_scaling_saturation_bounds_the_heaviest_tail(rng):
    """With ``saturation=a`` no feature enters the tanh beyond a; light tails keep the std-based scale."""
    heavy = np.maximum(rng.standard_t(df=2, size=(5000, 1)), 0.0)  # ReLU-like, heavy-tailed
    light = rng.normal(size=(5000, 1))
    H = np.hstack([heavy, light])
    plain, bounded = BoundedScaling(-1.0, 1.0), BoundedScaling(-1.0, 1.0)
    plain.adapt(H)
    bounded.adapt(H, saturation=2.0)
    arguments = np.abs(H) * np.exp(-bounded.log_scale.numpy())  # [N, 2]: what enters the tanh
    np.testing.assert_allclose(arguments.max(axis=0)[0], 2.0, rtol=1e-6)
    assert arguments.max() <= 2.0 + 1e-6
    assert np.abs(H[:, 0]).max() / np.exp(plain.log_scale.numpy()[0]) > 2.0  # the std rule saturates this tail
    scale = np.exp(bounded.log_scale.numpy())
    np.testing.assert_allclose(scale[1], max(2.0 * H[:, 1].std(), np.abs(H[:, 1]).max() / 2.0) + 1e-6, rtol=1e-9)
    with pytest.raises(ValueError, match="saturation"):
        bounded.adapt(H, saturation=0.0)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(num_grid_points=3), ">= 4"),
        (dict(num_grid_points=[8, 8], input_dim=1), "entries"),
        (dict(lower=1.0, upper=-1.0), "lower < upper"),
        (dict(out_of_range="wrap"), "out_of_range"),
        (dict(input_dim=0), "input_dim"),
    ],
)
def test_grid_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        GridInducingPoints(**kwargs)


def test_grid_kernel_checks():
    with pytest.raises(TypeError, match="factorises"):
        grid_kuu_operator(GridInducingPoints(8, input_dim=2), gpflow.kernels.Matern32())
    with pytest.raises(TypeError, match="stationary"):
        grid_kuu_operator(GridInducingPoints(8), gpflow.kernels.Linear())
