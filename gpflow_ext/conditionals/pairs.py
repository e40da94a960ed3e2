"""q(f) at gathered (row, output) pairs: GPLVF's observed entries only (paper A.3 eq. 17-19, eq. 5).

:func:`conditional_at_pairs` is ``gpflow.conditionals.conditional`` for D independent outputs sharing one kernel
and Z, evaluated only at the pairs (n, d) = (``row_index[p]``, ``output_index[p]``) that were observed. How
‖L_dᵀ a‖² is formed is an object: :class:`PerPair` (gather each pair's L_d) or :class:`PerOutput` (every output
of the batch, then gather); :func:`pair_variance_for` picks one from the observed fraction.
"""

import gpflow
import tensorflow as tf
from check_shapes import check_shapes
from gpflow.config import default_jitter

__all__ = [
    "PairVariance",
    "PerPair",
    "PerOutput",
    "pair_variance_for",
    "as_pair_variance",
    "conditional_at_pairs",
    "mean_at_pairs",
]

# pair_variance_for: PerOutput when at least this fraction of the training entries is observed
DENSE_VARIANCE_MIN_OBSERVED_FRACTION = 0.25


class PairVariance:
    """How the mean aᵀ m_d and ‖L_dᵀ a‖² are formed at the pairs, from A [S, N, M] (rows' projections)."""

    name = ""

    def mean_and_variance(self, A, row_index, output_index, q_mu, L) -> tuple[tf.Tensor, tf.Tensor]:
        """(aᵀ m_d [S, P], ‖L_dᵀ a‖² [S, P]) with A [S, N, M], q_mu [M, D] and L [D, M, M] lower."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class PerPair(PairVariance):
    """Gather each pair's L_d, a [P, M, M] tensor: the least arithmetic (sparse data), but its memory traffic
    (and the scatter in the gradient) dominates a step once many entries are observed."""

    name = "pairs"

    def mean_and_variance(self, A, row_index, output_index, q_mu, L):
        A_pairs = tf.gather(A, row_index, axis=1)  # [S, P, M]
        mean = tf.reduce_sum(A_pairs * tf.gather(tf.transpose(q_mu), output_index)[None], axis=-1)  # [S, P]
        # (L_dᵀ a)ᵀ = aᵀ L_d as one batched matmul over the pairs: faster than the equivalent einsum, forward and
        # backward (its per-pair outer products), on MovieLens minibatches
        aTL = tf.matmul(tf.transpose(A_pairs, [1, 0, 2]), tf.gather(L, output_index))  # [P, S, M]
        return mean, tf.transpose(tf.reduce_sum(tf.square(aTL), axis=-1))  # [S, P] each


class PerOutput(PairVariance):
    """The mean and L_dᵀ a for every (row, output) of the batch with one [S·N, M] x [M, D] and one
    [S·N, M] x [M, D·M] matmul, then gathered at the pairs: more arithmetic (the dense O(S·N·D·M²)), no
    [P, M, M] tensor. On 14x14 MNIST with 40 % missing (P ≈ 0.6·N·D) it is 6.7x (M = 30) and 8.3x (M = 50)
    faster per training step than :class:`PerPair` (``benchmarks/gplvf_variance_by.py``)."""

    name = "outputs"

    def mean_and_variance(self, A, row_index, output_index, q_mu, L):
        num_samples, num_rows = tf.shape(A)[0], tf.shape(A)[1]
        num_outputs, num_inducing = tf.shape(L)[0], tf.shape(L)[1]
        A_rows = tf.reshape(A, [-1, num_inducing])  # [S*N, M]
        L_columns = tf.reshape(tf.transpose(L, [1, 0, 2]), [num_inducing, -1])  # [M, D*M]: column (d, k) = L_d[:, k]
        LTA = tf.reshape(tf.matmul(A_rows, L_columns), [-1, num_outputs, num_inducing])  # [S*N, D, M]
        flat_index = row_index * tf.cast(num_outputs, row_index.dtype) + output_index  # [P] into N*D
        by_sample = [num_samples, num_rows * num_outputs]
        mean = tf.gather(tf.reshape(tf.matmul(A_rows, q_mu), by_sample), flat_index, axis=1)  # [S, P]
        lta_var = tf.gather(tf.reshape(tf.reduce_sum(tf.square(LTA), axis=-1), by_sample), flat_index, axis=1)  # [S, P]
        return mean, lta_var


def pair_variance_for(observed_fraction: float) -> PairVariance:
    """:class:`PerOutput` when at least a quarter of the entries is observed, else :class:`PerPair`."""
    return PerOutput() if observed_fraction >= DENSE_VARIANCE_MIN_OBSERVED_FRACTION else PerPair()


def as_pair_variance(value: PairVariance, name: str = "variance_by") -> PairVariance:
    """``value`` checked to be a :class:`PairVariance`."""
    if isinstance(value, PairVariance):
        return value
    raise TypeError(f"{name} must be a gpflow_ext.conditionals.pairs.PerPair() or PerOutput(), got {value!r}")


@check_shapes(
    "x: [S, N, Q]",
    "row_index: [P]",
    "output_index: [P]",
    "q_mu: [M, D]",
    "q_sqrt: [D, M, M]",
    "return[0]: [S, P]",
    "return[1]: [S, P]",
)
def conditional_at_pairs(
    x,
    row_index,
    output_index,
    inducing_variable,
    kernel,
    q_mu,
    q_sqrt,
    *,
    white: bool,
    variance_by: PairVariance = PerPair(),
) -> tuple[tf.Tensor, tf.Tensor]:
    """Mean and variance of q(f_d(x_n)) = ∫ p(f_d(x_n) | u_d) q(u_d) du_d (A.3 eq. 17-19) at the observed
    pairs (n, d) = (``row_index[p]``, ``output_index[p]``) only, for every sample x[s] of the rows.

    Equals ``gpflow.conditionals.conditional(x, Z, k, q_mu, q_sqrt=q_sqrt, full_cov=False, white=white)``
    gathered at the pairs, without forming the [D, M, S·N] products for the outputs nobody observed:
    with A = L⁻¹ K_{Z,x} (and A ← L⁻ᵀ A without whitening), μ = aᵀ m_d and
    v = k(x, x) - ‖L⁻¹ K_{Z,x}‖² + ‖L_dᵀ a‖², so a step costs O(S·P·M²) for P observed entries
    instead of O(S·N·D·M²) (MovieLens: P ≈ 0.06·N·D). ``variance_by`` (:class:`PerPair` or
    :class:`PerOutput`) chooses how ‖L_dᵀ a‖² is formed; both give the same numbers.
    """
    variance_by = as_pair_variance(variance_by)
    num_samples, num_rows, latent_dim = tf.unstack(tf.shape(x))
    x_flat = tf.reshape(x, [-1, latent_dim])  # [S*N, Q]
    Kmm = gpflow.covariances.Kuu(inducing_variable, kernel, jitter=default_jitter())  # [M, M]
    Lm = tf.linalg.cholesky(Kmm)  # [M, M]
    Kmn = gpflow.covariances.Kuf(inducing_variable, kernel, x_flat)  # [M, S*N]
    A = tf.linalg.triangular_solve(Lm, Kmn, lower=True)  # [M, S*N]
    prior_var = kernel(x_flat, full_cov=False) - tf.reduce_sum(tf.square(A), axis=0)  # [S*N]
    if not white:
        A = tf.linalg.triangular_solve(tf.linalg.adjoint(Lm), A, lower=False)  # [M, S*N]
    L = tf.linalg.band_part(q_sqrt, -1, 0)  # [D, M, M]
    A = tf.reshape(tf.transpose(A), [num_samples, num_rows, -1])  # [S, N, M]
    mean, lta_var = variance_by.mean_and_variance(A, row_index, output_index, q_mu, L)  # [S, P] each
    prior_var = tf.gather(tf.reshape(prior_var, [num_samples, num_rows]), row_index, axis=1)  # [S, P]
    return mean, prior_var + lta_var  # [S, P] each


@check_shapes(
    "x: [S, N, Q]",
    "row_index: [P]",
    "output_index: [P]",
    "return: [S, P]",
)
def mean_at_pairs(mean_function, x, row_index, output_index, num_outputs: int) -> tf.Tensor:
    """m_d(x_n) [S, P] at the pairs (n, d); a per-output Constant or Zero mean is only gathered."""
    if isinstance(mean_function, gpflow.mean_functions.Zero):
        return tf.zeros([tf.shape(x)[0], tf.shape(row_index)[0]], dtype=x.dtype)
    if isinstance(mean_function, gpflow.mean_functions.Constant):
        c = tf.broadcast_to(tf.reshape(mean_function.c, [-1]), [num_outputs])  # [D]
        return tf.broadcast_to(tf.gather(c, output_index)[None], [tf.shape(x)[0], tf.shape(row_index)[0]])
    full = tf.reshape(mean_function(tf.reshape(x, [-1, tf.shape(x)[-1]])), tf.concat([tf.shape(x)[:2], [-1]], 0))
    pairs = tf.stack([row_index, output_index], axis=-1)  # [P, 2]
    return tf.transpose(tf.gather_nd(tf.transpose(full, [1, 2, 0]), pairs))  # [S, P]
