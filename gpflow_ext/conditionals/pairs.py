"""q(f) at gathered (row, output) pairs: GPLVF's observed entries only (paper A.3 eq. 17-19, eq. 5).

:func:`conditional_at_pairs` is ``gpflow.conditionals.conditional`` for D independent outputs sharing one kernel
and Z, evaluated only at the pairs (n, d) = (``row_index[p]``, ``output_index[p]``) that were observed. How
‖L_dᵀ a‖² is formed is an object: :class:`PerPair` (gather each pair's L_d), :class:`PerOutput` (every output
of the batch, then gather) or, for a Gaussian likelihood, :class:`RowSums` (only its sum over each row's observed
outputs, in closed form); :func:`pair_variance_for` picks one from the likelihood and the observed fraction. The
bound's per-row expected log-likelihood that uses them is
:func:`gpflow_ext.likelihoods.rows.row_expected_log_likelihood`.
"""

import gpflow
import numpy as np
import tensorflow as tf
from check_shapes import check_shapes
from gpflow.config import default_jitter

__all__ = [
    "PairVariance",
    "PerPair",
    "PerOutput",
    "RowSums",
    "pair_variance_for",
    "as_pair_variance",
    "conditional_at_pairs",
    "mean_at_pairs",
    "masked_quadratic_forms",
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


def _pair_means(A_pairs, output_index, q_mu) -> tf.Tensor:
    """aᵀ m_d at the pairs [S, P], from the pairs' projections A_pairs [S, P, M] and q_mu [M, D]."""
    return tf.reduce_sum(A_pairs * tf.gather(tf.transpose(q_mu), output_index)[None], axis=-1)


class PerPair(PairVariance):
    """Gather each pair's L_d, a [P, M, M] tensor: the least arithmetic (sparse data), but its memory traffic
    (and the scatter in the gradient) dominates a step once many entries are observed."""

    name = "pairs"

    def mean_and_variance(self, A, row_index, output_index, q_mu, L):
        A_pairs = tf.gather(A, row_index, axis=1)  # [S, P, M]
        mean = _pair_means(A_pairs, output_index, q_mu)  # [S, P]
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


class RowSums(PerPair):
    """For a Gaussian likelihood of one constant variance σ² only the row sums of the variances enter the bound:

        Σ_{d ∈ O_n} E log N(y_nd | f, σ²) = -½ Σ_{d ∈ O_n} [log 2πσ² + ((y_nd - μ_nd)² + v_nd) / σ²],

    and with v_nd = k(x_n, x_n) - ‖L_m⁻¹ K_{Z,x_n}‖² + ‖L_dᵀ a_n‖², Σ_{d ∈ O_n} ‖L_dᵀ a_n‖² = a_nᵀ T_n a_n with
    T_n = Σ_{d ∈ O_n} S_d, S_d = L_d L_dᵀ: one [B, D] x [D, M(M+1)/2] product of the batch's mask with the lower
    triangles of the S_d (:func:`masked_quadratic_forms`, whose gradient is written out). The means μ_nd come
    from one [B, M] x [M, D] product for every output of the batch, masked. Nothing is gathered per pair and every
    shape is static, so the step also compiles with XLA; the numbers are the other forms' to rounding. Per-pair
    variances, where asked for, are :class:`PerPair`'s."""

    name = "rows"

    def row_sums(self, x, values, mask, gp) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
        """Per row n of the batch, averaged over the samples x [S, B, Q]: (Σ_{d ∈ O_n} (y_nd - μ_nd)² [B],
        Σ_{d ∈ O_n} v_nd [B], |O_n| [B]), with ``gp`` = (inducing_variable, kernel, q_mu [M, D], q_sqrt [D, M, M],
        mean_function, white) and ``values``, ``mask`` [B, D] (values at unobserved entries are ignored)."""
        inducing_variable, kernel, q_mu, q_sqrt, mean_function, white = gp
        A, prior_var = projections(x, inducing_variable, kernel, white=white)  # [S, B, M], [S, B]
        is_observed = tf.cast(mask, tf.bool)  # [B, D]
        observed = tf.cast(is_observed, A.dtype)  # [B, D]
        num_samples, num_rows, num_inducing = tf.unstack(tf.shape(A))
        x_flat = tf.reshape(x, [num_samples * num_rows, -1])  # [S*B, Q]
        mean = tf.matmul(tf.reshape(A, [-1, num_inducing]), q_mu) + mean_function(x_flat)  # [S*B, D]
        error = tf.cast(values, A.dtype)[None] - tf.reshape(mean, [num_samples, num_rows, -1])  # [S, B, D]
        error = tf.where(is_observed[None], error, tf.zeros_like(error))  # [S, B, D]
        squared_error = tf.reduce_mean(tf.reduce_sum(tf.square(error), axis=-1), axis=0)  # [B]
        quadratic = self.quadratic_forms(A, tf.linalg.band_part(q_sqrt, -1, 0), observed)  # [S, B]: a_nᵀ T_n a_n
        count = tf.reduce_sum(observed, axis=1)  # [B]
        variance_sum = tf.reduce_mean(count[None] * prior_var + quadratic, axis=0)  # [B]
        return squared_error, variance_sum, count

    def quadratic_forms(self, A, L, observed) -> tf.Tensor:
        """Σ_d observed[n, d] ‖L_dᵀ a_sn‖² [S, B] (:func:`masked_quadratic_forms`)."""
        return masked_quadratic_forms(A, L, observed)


@check_shapes(
    "A: [S, B, M]",
    "L: [D, M, M]",
    "observed: [B, D]",
    "return: [S, B]",
)
def masked_quadratic_forms(A, L, observed) -> tf.Tensor:
    """Σ_d observed[n, d] ‖L_dᵀ a_sn‖² for every sample s and row n: a_snᵀ T_n a_sn with T_n = Σ_d observed[n, d] L_d
    L_dᵀ, from one [B, D] x [D, M(M+1)/2] product of the mask with the lower triangles of S_d = L_d L_dᵀ. The gradient
    is written out: with G_d = Σ_{s,n} g_sn observed[n, d] a_sn a_snᵀ (its lower triangles from one [M(M+1)/2, B] x
    [B, D] product), ∂/∂L_d = 2 G_d L_d and ∂/∂a_sn = 2 g_sn T_n a_sn; ``observed`` (the mask) gets no gradient.
    Autodiff of the same forward pass goes back through both sides of L_d L_dᵀ and a scatter into the triangles.
    M must be static (``L.shape[-1]``)."""
    if L.shape[-1] is None:
        raise ValueError(f"masked_quadratic_forms: L's last dimension M must be static, got shape {L.shape}")
    return _masked_quadratic_forms(A, L, observed)


def _symmetric_storage(num_inducing: int) -> tuple[np.ndarray, np.ndarray]:
    """For M x M symmetric matrices stored flat (M² entries): the flat positions of the lower triangle (i >= k) [K],
    and each flat position's place in that list [M²] (the whole matrix back from its lower triangle)."""
    rows, cols = np.tril_indices(num_inducing)
    place = np.zeros((num_inducing, num_inducing), dtype=np.int64)
    place[rows, cols] = place[cols, rows] = np.arange(rows.size)
    return rows * num_inducing + cols, place.reshape(-1)


@tf.custom_gradient
def _masked_quadratic_forms(A, L, observed):
    num_outputs, num_inducing = tf.shape(L)[0], L.shape[-1]
    lower, whole = _symmetric_storage(num_inducing)  # [K], [M*M]; K = M(M+1)/2
    with tf.name_scope("output_factors"):  # the part that costs the same whatever the batch
        S = tf.transpose(tf.reshape(tf.matmul(L, L, transpose_b=True), [num_outputs, -1]))  # [M*M, D]: S_d = L_d L_dᵀ
    T_lower = tf.matmul(observed, tf.gather(S, lower), transpose_b=True)  # [B, K]: T_n's lower triangle
    T = tf.reshape(tf.gather(T_lower, whole, axis=1), [-1, num_inducing, num_inducing])  # [B, M, M]
    TA = tf.einsum("bij,sbj->sbi", T, A)  # [S, B, M]: T_n a_sn
    quadratic = tf.reduce_sum(A * TA, axis=-1)  # [S, B]

    def gradient(upstream):  # upstream [S, B]
        with tf.name_scope("row_terms"):  # the scopes of the forward pass (a gradient function runs outside them)
            outer = tf.einsum("sb,sbi,sbj->bij", upstream, A, A)  # [B, M, M]: Σ_s g_sn a_sn a_snᵀ
            outer_lower = tf.gather(tf.reshape(outer, [tf.shape(A)[1], -1]), lower, axis=1)  # [B, K]
            G_lower = tf.matmul(outer_lower, observed, transpose_a=True)  # [K, D]: G_d's lower triangles
            with tf.name_scope("output_factors"):
                G = tf.reshape(tf.transpose(tf.gather(G_lower, whole)), tf.shape(L))  # [D, M, M], symmetric
                L_gradient = 2.0 * tf.matmul(G, L)  # [D, M, M]
            return 2.0 * upstream[..., None] * TA, L_gradient, None

    return quadratic, gradient


def gaussian_with_one_variance(likelihood, likelihood_columns) -> bool:
    """Whether every column's likelihood is one ``gpflow.likelihoods.Gaussian`` of a constant scalar variance."""
    return (
        likelihood_columns is None
        and isinstance(likelihood, gpflow.likelihoods.Gaussian)
        and getattr(likelihood, "variance_function", None) is None
        and likelihood.variance.shape.num_elements() == 1
    )


def pair_variance_for(observed_fraction: float, likelihood=None, likelihood_columns=None) -> PairVariance:
    """:class:`RowSums` for a Gaussian likelihood of one constant variance; otherwise :class:`PerOutput` when at
    least a quarter of the entries is observed, else :class:`PerPair`."""
    if likelihood is not None and gaussian_with_one_variance(likelihood, likelihood_columns):
        return RowSums()
    return PerOutput() if observed_fraction >= DENSE_VARIANCE_MIN_OBSERVED_FRACTION else PerPair()


def as_pair_variance(value: PairVariance, name: str = "variance_by") -> PairVariance:
    """``value`` checked to be a :class:`PairVariance`."""
    if isinstance(value, PairVariance):
        return value
    raise TypeError(
        f"{name} must be a gpflow_ext.conditionals.pairs.PerPair(), PerOutput() or RowSums(), got {value!r}"
    )


@check_shapes(
    "x: [S, N, Q]",
    "return[0]: [S, N, M]",
    "return[1]: [S, N]",
)
def projections(x, inducing_variable, kernel, *, white: bool) -> tuple[tf.Tensor, tf.Tensor]:
    """(a = L_m⁻¹ K_{Z,x} (L_m⁻ᵀ a without whitening) [S, N, M], k(x, x) - ‖L_m⁻¹ K_{Z,x}‖² [S, N]) for every
    sample of every row: the parts of q(f_d(x)) shared by all outputs (A.3 eq. 17-19)."""
    num_samples, num_rows, latent_dim = tf.unstack(tf.shape(x))
    x_flat = tf.reshape(x, [-1, latent_dim])  # [S*N, Q]
    Kmm = gpflow.covariances.Kuu(inducing_variable, kernel, jitter=default_jitter())  # [M, M]
    Lm = tf.linalg.cholesky(Kmm)  # [M, M]
    Kmn = gpflow.covariances.Kuf(inducing_variable, kernel, x_flat)  # [M, S*N]
    A = tf.linalg.triangular_solve(Lm, Kmn, lower=True)  # [M, S*N]
    prior_var = kernel(x_flat, full_cov=False) - tf.reduce_sum(tf.square(A), axis=0)  # [S*N]
    if not white:
        A = tf.linalg.triangular_solve(tf.linalg.adjoint(Lm), A, lower=False)  # [M, S*N]
    A = tf.reshape(tf.transpose(A), [num_samples, num_rows, -1])  # [S, N, M]
    return A, tf.reshape(prior_var, [num_samples, num_rows])


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
    A, prior_var = projections(x, inducing_variable, kernel, white=white)  # [S, N, M], [S, N]
    L = tf.linalg.band_part(q_sqrt, -1, 0)  # [D, M, M]
    mean, lta_var = variance_by.mean_and_variance(A, row_index, output_index, q_mu, L)  # [S, P] each
    prior_var = tf.gather(prior_var, row_index, axis=1)  # [S, P]
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
