"""q(u_d) = N(m_d, L_d L_dᵀ) for D outputs whose lower factors are stored packed, as GPflow's ``triangular()``
transform (tfp ``FillTriangular``) stores them: each L_d as the vector of its M(M+1)/2 lower-triangle entries.

Two parts of a bound on such a parameter, each with its gradient written out:

* :func:`fill_lower`: tfp's ``fill_triangular`` forward. The map only places each packed entry at one position of
  the lower triangle, so its adjoint reads those positions back: one gather, where autodiff goes back through
  tfp's slice, reverse, concatenation and band.
* :func:`whitened_gauss_kl_packed`: Σ_d KL(N(m_d, L_d L_dᵀ) ‖ N(0, I)) = ½ Σ_d (‖m_d‖² + ‖L_d‖²_F - M - log|L_d L_dᵀ|)
  from the packed entries themselves: ‖L_d‖²_F is the sum of squares of its packed vector and log|L_d L_dᵀ| needs only
  its M diagonal entries; nothing is filled, and the gradient is m_d and P - 1/P on the diagonal entries.

Both equal GPflow's (``tf.convert_to_tensor`` of the parameter, ``gpflow.kullback_leiblers.gauss_kl``) to rounding.
"""

from functools import cache

import gpflow
import numpy as np
import tensorflow as tf
import tensorflow_probability as tfp
from check_shapes import check_shapes

__all__ = [
    "packed_layout",
    "fill_lower",
    "whitened_gauss_kl_packed",
    "lower_factors",
    "whitened_gauss_kl",
]


@cache
def packed_layout(num_inducing: int) -> tuple[np.ndarray, np.ndarray]:
    """For tfp's packing of an M x M lower triangle (``fill_triangular(x)``, x of length M(M+1)/2): the flat position
    in the M x M matrix of each packed entry [M(M+1)/2], and the packed index of each diagonal entry [M] (together,
    the packed indices 0, M+1, 2(M+1), ... and M, 2M+1, ... below M(M+1)/2)."""
    m = num_inducing
    size = m * (m + 1) // 2
    entries = np.arange(size)
    # tfp.math.fill_triangular's lower layout: the tail x[m:] then x reversed, read row by row, lower triangle kept
    layout = np.concatenate([entries[m:], entries[::-1]]).reshape(m, m)
    rows, cols = np.tril_indices(m)
    flat_position = np.empty(size, dtype=np.int64)
    flat_position[layout[rows, cols]] = rows * m + cols
    return flat_position, layout[np.arange(m), np.arange(m)].astype(np.int64)


def _num_inducing(packed) -> int:
    size = packed.shape[-1]
    if size is None:
        raise ValueError(f"packed: the last dimension M(M+1)/2 must be static, got shape {packed.shape}")
    m = int(round((np.sqrt(8 * size + 1) - 1) / 2))
    if m * (m + 1) // 2 != size:
        raise ValueError(f"packed: the last dimension must be M(M+1)/2 for an integer M, got {size}")
    return m


def _current_scope() -> str:
    """The current name scope as an absolute scope for ``tf.name_scope`` (a gradient function runs outside it)."""
    scope = tf.get_current_name_scope()
    return scope + "/" if scope else ""


@check_shapes(
    "packed: [batch..., K]",
)
def fill_lower(packed) -> tf.Tensor:
    """The lower-triangular matrices [..., M, M] of packed entries [..., M(M+1)/2] (``tfp.math.fill_triangular``),
    with the gradient written out as the gather of the packed entries' positions."""
    num_inducing = _num_inducing(packed)
    flat_position, _ = packed_layout(num_inducing)

    @tf.custom_gradient
    def fill(x):
        scope = _current_scope()

        def gradient(upstream):  # [..., M, M]
            with tf.name_scope(scope):  # the forward pass's scope, where a profiler trace looks for it
                flat = tf.reshape(upstream, [-1, num_inducing * num_inducing])  # [B, M*M]
                # rows of the transposed matrix are contiguous: a gather along axis 0 is the fast one
                read = tf.transpose(tf.gather(tf.transpose(flat), flat_position))  # [B, K]
                return tf.reshape(read, tf.shape(x))

        return tfp.math.fill_triangular(x), gradient

    return fill(packed)


@check_shapes(
    "q_mu: [M, D]",
    "packed: [D, K]",
    "return: []",
)
def whitened_gauss_kl_packed(q_mu, packed) -> tf.Tensor:
    """Σ_d KL(N(m_d, L_d L_dᵀ) ‖ N(0, I_M)) from the means q_mu [M, D] and the packed lower factors [D, M(M+1)/2];
    equals ``gpflow.kullback_leiblers.gauss_kl(q_mu, fill_lower(packed))``."""
    num_inducing = _num_inducing(packed)
    if q_mu.shape[0] is not None and q_mu.shape[0] != num_inducing:
        raise ValueError(f"q_mu has {q_mu.shape[0]} rows but packed holds {num_inducing} x {num_inducing} factors")
    stride = num_inducing + 1  # tfp's packing puts the diagonal entries at 0, M+1, ... and at M, 2M+1, ...
    is_diagonal = np.zeros(num_inducing * (num_inducing + 1) // 2)  # [K]
    is_diagonal[::stride] = is_diagonal[num_inducing::stride] = 1.0

    @tf.custom_gradient
    def kl(mean, x):
        diag = tf.concat([x[:, ::stride], x[:, num_inducing::stride]], axis=1)  # [D, M], in another order
        size = tf.cast(tf.size(mean), mean.dtype)
        twice_kl = tf.reduce_sum(tf.square(mean)) + tf.reduce_sum(tf.square(x)) - size
        twice_kl -= tf.reduce_sum(tf.math.log(tf.square(diag)))
        scope = _current_scope()

        def gradient(upstream):
            with tf.name_scope(scope):
                on_diagonal = tf.constant(is_diagonal, dtype=x.dtype)  # [K]
                inverse_diagonal = tf.math.divide_no_nan(on_diagonal, x)  # [D, K]: 1/x on the diagonal, 0 elsewhere
                return upstream * mean, upstream * (x - inverse_diagonal)

        return 0.5 * twice_kl, gradient

    return kl(tf.convert_to_tensor(q_mu), tf.convert_to_tensor(packed))


def _packed(q_sqrt) -> tf.Tensor | None:
    """The packed entries of a ``gpflow.Parameter`` under tfp's ``FillTriangular`` transform, else None."""
    if isinstance(q_sqrt, gpflow.Parameter) and isinstance(q_sqrt.transform, tfp.bijectors.FillTriangular):
        return tf.convert_to_tensor(q_sqrt.unconstrained_variable)
    return None


def lower_factors(q_sqrt) -> tf.Tensor:
    """The value [..., M, M] of a q_sqrt: by :func:`fill_lower` for a parameter stored packed (GPflow's
    ``triangular()``), else ``tf.convert_to_tensor``."""
    packed = _packed(q_sqrt)
    return tf.convert_to_tensor(q_sqrt) if packed is None else fill_lower(packed)


def whitened_gauss_kl(q_mu, q_sqrt) -> tf.Tensor:
    """Σ_d KL(q(u_d) ‖ N(0, I)): :func:`whitened_gauss_kl_packed` for a parameter stored packed, else GPflow's
    ``gauss_kl``."""
    packed = _packed(q_sqrt)
    if packed is None:
        return gpflow.kullback_leiblers.gauss_kl(q_mu, q_sqrt)
    return whitened_gauss_kl_packed(q_mu, packed)
