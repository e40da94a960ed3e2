"""q(f) of the K label utilities of MLGPF, at every (row, label) pair or only at gathered ones.

*Fully scalable Gaussian processes using subspace inducing inputs*, Section 3 and Appendix A.2.
The P latent GPs have independent marginals q(h_ip) = N(m_ip, s_ip) (eq. 18-19); the utilities
f_ik = Σ_p φ_kp h_ip + b_k (eq. 12) are therefore univariate Gaussians

    q(f_ik) = N(Σ_p φ_kp m_ip + b_k,  Σ_p φ_kp² s_ip)                         (eq. 21)

:func:`utility_moments` gives them for all N × K pairs, :func:`gathered_utility_moments` only at
the (row, label) pairs asked for (the positives and the sampled negatives of eq. 23), in O(T·P)
without an N × K tensor.

``loadings=None`` stands for Φ = I (P = K): one independent latent GP per label, f_ik = h_ik + b_k,
without a K × K matrix.
"""

import tensorflow as tf
from check_shapes import check_shapes
from gpflow.base import TensorType

__all__ = ["utility_moments", "gathered_utility_moments"]


@check_shapes(
    "h_mean: [N, P]",
    "h_var: [N, P]",
    "loadings: [K, P]",
    "bias: [K]",
    "return[0]: [N, K]",
    "return[1]: [N, K]",
)
def utility_moments(
    h_mean: TensorType, h_var: TensorType, loadings: TensorType | None, bias: TensorType
) -> tuple[tf.Tensor, tf.Tensor]:
    """Means and variances of q(f_ik) for every label (eq. 21): ``m Φᵀ + b`` and ``s (Φ²)ᵀ``
    (``m + b`` and ``s`` when ``loadings`` is None: Φ = I)."""
    if loadings is None:
        return h_mean + bias, tf.convert_to_tensor(h_var)  # [N, K] each
    f_mean = tf.matmul(h_mean, loadings, transpose_b=True) + bias  # [N, K]
    f_var = tf.matmul(h_var, tf.square(loadings), transpose_b=True)  # [N, K]
    return f_mean, f_var


@check_shapes(
    "h_mean: [N, P]",
    "h_var: [N, P]",
    "loadings: [K, P]",
    "bias: [K]",
    "label_ids: [batch...]",
    "row_ids: [batch...]",
    "return[0]: [batch...]",
    "return[1]: [batch...]",
)
def gathered_utility_moments(
    h_mean: TensorType,
    h_var: TensorType,
    loadings: TensorType | None,
    bias: TensorType,
    label_ids: TensorType,
    row_ids: TensorType,
) -> tuple[tf.Tensor, tf.Tensor]:
    """Moments of q(f_ik) (eq. 21) only at the (row, label) pairs asked for: O(T·P), no N×K
    (O(T) when ``loadings`` is None: Φ = I)."""
    if loadings is None:
        pairs = tf.stack([tf.cast(row_ids, tf.int64), tf.cast(label_ids, tf.int64)], axis=-1)  # [batch..., 2]
        f_mean = tf.gather_nd(h_mean, pairs) + tf.gather(bias, label_ids)  # [batch...]
        return f_mean, tf.gather_nd(h_var, pairs)
    phi = tf.gather(loadings, label_ids)  # [batch..., P]
    m = tf.gather(h_mean, row_ids)  # [batch..., P]
    s = tf.gather(h_var, row_ids)  # [batch..., P]
    f_mean = tf.reduce_sum(phi * m, axis=-1) + tf.gather(bias, label_ids)  # [batch...]
    f_var = tf.reduce_sum(tf.square(phi) * s, axis=-1)  # [batch...]
    return f_mean, f_var
