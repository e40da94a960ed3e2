"""KISS-GP grid inducing variables with local cubic interpolation (SV-DKL, Section 3).

A :class:`GridInducingPoints` is a regular grid of ``m_d`` points along each of the ``D``
input dimensions of a base kernel; the grid in ``D`` dimensions is the Cartesian product of
the 1-D grids, flattened in row-major order (first dimension slowest), so that a kernel that
factorises over dimensions gives ``K_ZZ = K_1 ⊗ ... ⊗ K_D``.

Local interpolation (Wilson & Nickisch's KISS-GP, the paper's eq. 2 with K̃ = 0) writes
``f(x) = Σ_k w_k(x) u_{i_k(x)}``: Keys' cubic convolution puts 4 non-zero weights on the
neighbours of ``x`` along each dimension, 4^D per point in D dimensions. The interpolation
matrix ``W`` [N, m] is never formed densely: :func:`interpolation_indices_and_weights`
returns the ``[N, 4^D]`` column indices and weights (a row-sparse matrix), and
:func:`interpolate` applies it with a gather.

Range policy. Keys' kernel needs one grid point left of ``x`` and two to the right, so the
grid is laid out with one spare point beyond each end of the *interpolation range*
``[lower, upper]``: ``z_0 = lower - h``, ``z_{m-1} = upper + h`` with ``h = (upper-lower)/(m-3)``.
Inputs inside ``[lower, upper]`` are interpolated exactly as Keys prescribes. For inputs
outside, ``out_of_range`` decides: ``"clamp"`` (default) moves them to the nearest end of the
range (so f(x) = f(clamp(x)), a constant extrapolation), ``"error"`` raises. Map features into
the range with :class:`BoundedScaling` (a tanh layer) and no input is ever outside.
"""

import numbers
from collections.abc import Sequence
from typing import Any

import gpflow
import numpy as np
import tensorflow as tf
from check_shapes import check_shapes
from gpflow.base import TensorType
from gpflow.inducing_variables import InducingVariables
from gpflow.keras import tf_keras

from ..validation import check_choice, check_positive_int

__all__ = [
    "GridInducingPoints",
    "BoundedScaling",
    "keys_cubic_weights",
    "interpolation_indices_and_weights",
    "interpolate",
    "interpolate_samples",
    "interpolation_matrix",
]

KEYS_A = -0.5  # Keys (1981): a = -1/2 gives third-order accurate interpolation


def keys_cubic_weights(t: tf.Tensor) -> tf.Tensor:
    """Keys' cubic convolution weights for offsets ``t`` in [0, 1] -> ``[..., 4]``.

    Returned for the grid points at relative positions -1, 0, 1, 2 around ``x``
    (``x = z_k + t h``). The four weights sum to one for every ``t``.
    """
    a = KEYS_A

    def near(s):  # |s| <= 1
        return ((a + 2.0) * s - (a + 3.0)) * s * s + 1.0

    def far(s):  # 1 < |s| < 2
        return ((a * s - 5.0 * a) * s + 8.0 * a) * s - 4.0 * a

    return tf.stack([far(t + 1.0), near(t), near(1.0 - t), far(2.0 - t)], axis=-1)


class GridInducingPoints(InducingVariables):
    """A regular grid of inducing inputs for KISS-GP (SV-DKL Section 3, eq. 2 with K̃ = 0).

    :param num_grid_points: points per dimension, an int (same for all D) or one int per dimension;
        at least 4 (Keys' interpolation needs 4 neighbours).
    :param input_dim: D, the input dimension of the base kernel (1 by default).
    :param lower: the lower end of the interpolation range of every dimension (inputs are expected in
        ``[lower, upper]``); the grid extends one spacing beyond each end.
    :param upper: the upper end of that range.
    :param out_of_range: ``"clamp"`` (default) or ``"error"`` for inputs outside ``[lower, upper]``.
    """

    def __init__(
        self,
        num_grid_points: int | Sequence[int] = 64,
        input_dim: int = 1,
        lower: float = -1.0,
        upper: float = 1.0,
        out_of_range: str = "clamp",
        name: str | None = None,
    ):
        super().__init__(name=name)
        input_dim = check_positive_int(input_dim, "input_dim")
        if not isinstance(num_grid_points, (numbers.Number, str)) and hasattr(num_grid_points, "__iter__"):
            sizes = [check_positive_int(s, f"num_grid_points[{d}]", minimum=4) for d, s in enumerate(num_grid_points)]
            if len(sizes) != input_dim:
                raise ValueError(f"num_grid_points has {len(sizes)} entries but input_dim={input_dim}")
        else:
            sizes = [check_positive_int(num_grid_points, "num_grid_points", minimum=4)] * input_dim
        for arg, value in (("lower", lower), ("upper", upper)):
            if isinstance(value, bool) or not isinstance(value, numbers.Real) or not np.isfinite(value):
                raise ValueError(f"{arg} must be a finite number, got {value!r}")
        lower, upper = float(lower), float(upper)
        if not lower < upper:
            raise ValueError(f"need finite lower < upper, got lower={lower}, upper={upper}")
        check_choice(out_of_range, "out_of_range", ("clamp", "error"))
        self.grid_sizes: tuple[int, ...] = tuple(sizes)
        self.input_dim = int(input_dim)
        self.lower, self.upper = lower, upper
        self.out_of_range = out_of_range
        self.spacings = tuple((upper - lower) / (s - 3) for s in sizes)

    # -- GPflow InducingVariables interface ------------------------------------------------
    @property
    def num_inducing(self) -> tf.Tensor:
        return tf.constant(int(np.prod(self.grid_sizes)))

    @property
    def shape(self):
        return (int(np.prod(self.grid_sizes)), self.input_dim, 1)

    def __len__(self) -> int:
        return int(np.prod(self.grid_sizes))

    # -- the grid ----------------------------------------------------------------------------
    def axis(self, d: int) -> tf.Tensor:
        """The 1-D grid of dimension ``d``: ``[m_d]``."""
        m, h = self.grid_sizes[d], self.spacings[d]
        return tf.constant(self.lower - h + h * np.arange(m), dtype=gpflow.default_float())

    @property
    def Z(self) -> tf.Tensor:
        """All grid points in row-major order, ``[m, D]`` (for brute-force checks)."""
        axes = np.meshgrid(*[self.axis(d).numpy() for d in range(self.input_dim)], indexing="ij")
        return tf.constant(np.stack([a.ravel() for a in axes], axis=-1), gpflow.default_float())


@check_shapes(
    "X: [batch..., D]",
    "return[0]: [batch..., K]",
    "return[1]: [batch..., K]",
)
def interpolation_indices_and_weights(grid: GridInducingPoints, X: TensorType) -> tuple[tf.Tensor, tf.Tensor]:
    """Rows of the sparse interpolation matrix W: column indices and weights, K = 4^D each.

    ``f(X) ≈ Σ_k weights[..., k] · u[indices[..., k]]`` (KISS-GP local cubic interpolation).
    """
    X = tf.convert_to_tensor(X)
    X = tf.cast(X, gpflow.default_float())
    if X.shape.rank is not None and X.shape[-1] is not None and X.shape[-1] != grid.input_dim:
        raise ValueError(f"X has {X.shape[-1]} columns but the grid has input_dim={grid.input_dim}")
    if grid.out_of_range == "error" and tf.executing_eagerly():
        x = X.numpy()
        if not np.all(np.isfinite(x)):
            raise ValueError("X contains NaN or inf")
        if x.size and (x.min() < grid.lower or x.max() > grid.upper):
            raise ValueError(
                f"X has values in [{x.min():.4g}, {x.max():.4g}], outside the grid range "
                f"[{grid.lower}, {grid.upper}] (out_of_range='error'; use BoundedScaling or 'clamp')"
            )
    elif grid.out_of_range == "error":
        tf.debugging.assert_greater_equal(
            X, tf.cast(grid.lower, X.dtype), message="features below the grid's lower bound"
        )
        tf.debugging.assert_less_equal(X, tf.cast(grid.upper, X.dtype), message="features above the grid's upper bound")
    X = tf.clip_by_value(X, grid.lower, grid.upper)
    batch_shape = tf.shape(X)[:-1]
    idx_all: Any = None
    w_all: Any = None
    for d in range(grid.input_dim):
        m, h = grid.grid_sizes[d], grid.spacings[d]
        pos = (X[..., d] - (grid.lower - h)) / h  # [...] position in grid units, in [1, m-2]
        k = tf.clip_by_value(tf.floor(pos), 1.0, float(m - 3))  # left neighbour index
        t = pos - k  # [...] in [0, 1]
        w = keys_cubic_weights(t)  # [..., 4]
        idx = tf.cast(k, tf.int32)[..., None] + tf.constant([-1, 0, 1, 2], tf.int32)  # [..., 4]
        if idx_all is None:
            idx_all, w_all = idx, w
        else:  # row-major flattening: previous dims slower
            idx_all = idx_all[..., :, None] * m + idx[..., None, :]
            w_all = w_all[..., :, None] * w[..., None, :]
            new_shape = tf.concat([batch_shape, [-1]], axis=0)
            idx_all = tf.reshape(idx_all, new_shape)
            w_all = tf.reshape(w_all, new_shape)
    return idx_all, w_all


@check_shapes(
    "indices: [batch..., K]",
    "weights: [batch..., K]",
    "u: [M, T]",
    "return: [batch..., T]",
)
def interpolate(indices: tf.Tensor, weights: tf.Tensor, u: tf.Tensor) -> tf.Tensor:
    """``W u`` for a row-sparse W given by ``indices``/``weights`` (eq. 8: f = M u)."""
    gathered = tf.gather(u, indices)  # [..., K, T]
    return tf.reduce_sum(weights[..., None] * gathered, axis=-2)


@check_shapes(
    "indices: [B, J, K]",
    "weights: [B, J, K]",
    "u: [J, M, T]",
    "return: [T, B, J]",
)
def interpolate_samples(indices: tf.Tensor, weights: tf.Tensor, u: tf.Tensor) -> tf.Tensor:
    """``W_j u_j`` for J GPs given the rows of their interpolation matrices (``[B, J, K]`` each)."""
    idx = tf.transpose(indices, [1, 0, 2])  # [J, B, K]
    gathered = tf.gather(u, idx, axis=1, batch_dims=1)  # [J, B, K, T]
    w = tf.transpose(weights, [1, 0, 2])[..., None]  # [J, B, K, 1]
    f = tf.reduce_sum(w * gathered, axis=2)  # [J, B, T]
    return tf.transpose(f, [2, 1, 0])  # [T, B, J]


def interpolation_matrix(grid: GridInducingPoints, X: TensorType) -> tf.SparseTensor:
    """The interpolation matrix W [N, m] as a ``tf.SparseTensor`` (N·4^D stored entries)."""
    X = tf.convert_to_tensor(X)
    indices, weights = interpolation_indices_and_weights(grid, X)  # [N, K]
    n, k = tf.shape(indices)[0], tf.shape(indices)[1]
    rows = tf.repeat(tf.range(n), k)
    coords = tf.cast(tf.stack([rows, tf.reshape(indices, [-1])], axis=1), tf.int64)
    sp = tf.SparseTensor(coords, tf.reshape(weights, [-1]), [tf.cast(n, tf.int64), len(grid)])
    return tf.sparse.reorder(sp)


class BoundedScaling(tf_keras.layers.Layer):
    """Maps unbounded features into a grid's interpolation range with a scaled tanh.

    ``z = c + r · tanh(x / s)`` with ``c, r`` the centre and half-width of ``[lower, upper]``
    (shrunk by ``margin`` so the extremes stay strictly inside) and a positive per-feature
    input scale ``s`` (trainable; :meth:`adapt` sets it from data so typical features are not
    saturated). A smooth bijection onto the open range: no feature is ever outside the grid.
    """

    def __init__(self, lower: float = -1.0, upper: float = 1.0, margin: float = 0.0, **kwargs):
        kwargs.setdefault("dtype", gpflow.default_float())
        super().__init__(**kwargs)
        if not lower < upper:
            raise ValueError(f"need lower < upper, got {lower}, {upper}")
        if not 0.0 <= margin < 1.0:
            raise ValueError(f"margin must be in [0, 1), got {margin}")
        self.lower, self.upper, self.margin = float(lower), float(upper), float(margin)

    def build(self, input_shape):
        self.log_scale = self.add_weight(
            name="log_scale", shape=(int(input_shape[-1]),), initializer="zeros", trainable=True
        )
        super().build(input_shape)

    def call(self, x):
        x = tf.cast(x, self.dtype)
        centre = 0.5 * (self.lower + self.upper)
        half = 0.5 * (self.upper - self.lower) * (1.0 - self.margin)
        return centre + half * tf.tanh(x * tf.exp(-self.log_scale))

    def adapt(self, features: np.ndarray, quantile_scale: float = 2.0, saturation: float | None = None) -> None:
        """Set the input scale to ``quantile_scale`` × per-feature std of ``features`` [N, Q].

        :param saturation: if given, the scale is at least ``max |x| / saturation`` per feature, so no feature of
            ``features`` enters the tanh beyond ``saturation`` (heavy-tailed features, e.g. ReLU outputs, are then
            not squeezed against the grid's ends, where a map of the feature would need a steep inverse tanh).
        """
        features = np.asarray(features, dtype=np.float64)
        if features.ndim != 2 or features.shape[0] == 0:
            raise ValueError(f"features must be a non-empty [N, Q] array, got {features.shape}")
        if saturation is not None and not (isinstance(saturation, (int, float)) and saturation > 0):
            raise ValueError(f"saturation must be a positive number or None, got {saturation!r}")
        if not self.built:
            self.build(features.shape)
        scale = quantile_scale * features.std(axis=0)  # [Q]
        if saturation is not None:
            scale = np.maximum(scale, np.abs(features).max(axis=0) / saturation)  # [Q]
        self.log_scale.assign(np.log(scale + 1e-6))
