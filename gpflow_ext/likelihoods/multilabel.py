"""Multi-label Bernoulli-logit likelihood of the MLGPF factor model.

Paper: *Fully scalable Gaussian processes using subspace inducing inputs*, Section 3 and
Appendix A.1-A.3. Each instance ``i`` has ``P`` latent GP values ``h_i`` (eq. 11); the
``K`` label utilities are ``f_i = Φ h_i + b`` (eq. 12) and each label is an independent
Bernoulli with a logistic link, ``p(y_ik | h_i) = σ(y_ik f_ik)`` with ``y_ik ∈ {-1, +1}``
(eq. 13). Under the variational posterior every utility is a univariate Gaussian

    q(f_ik) = N(Σ_p φ_kp m_ip + b_k,  Σ_p φ_kp² s_ip)                         (eq. 21)

so every expected log-likelihood term is a one-dimensional integral, computed here by
Gauss-Hermite quadrature with the stable ``log σ(f) = -softplus(-f)``.

Two identities keep the bound cheap and exact:

* ``log σ(-f) = log σ(f) - f``, so ``E[log σ(-f)] = E[log σ(f)] - E[f]`` (one quadrature
  serves positive and negative labels);
* therefore the full-label bound of instance ``i`` is
  ``Σ_k (E[log σ(f_ik)] - m_ik) + Σ_{k ∈ P_i} m_ik``: the positives only add their means.

Labels are 0/1 (absent/present). In this module they are either a dense ``[N, K]`` tensor
(GPflow's ``Likelihood`` interface, for small ``K``) or a ``tf.SparseTensor`` ``[B, K]``
holding the positive labels only (the large-``K`` path of eq. 23, which never builds a
``B × K`` tensor when negative labels are sub-sampled).
"""

import gpflow
import numpy as np
import tensorflow as tf
from check_shapes import check_shapes, inherit_check_shapes
from gpflow.base import TensorType

from ..conditionals.multilabel import gathered_utility_moments, utility_moments
from ..validation import check_positive_int

__all__ = [
    "DEFAULT_NUM_GAUSS_HERMITE_POINTS",
    "gauss_hermite_normal",
    "expected_log_sigmoid",
    "expected_sigmoid",
    "utility_moments",
    "gathered_utility_moments",
    "sample_negative_labels",
    "multilabel_expected_log_likelihood",
    "MultiLabelBernoulli",
]

DEFAULT_NUM_GAUSS_HERMITE_POINTS = 20


def gauss_hermite_normal(num_points: int, dtype=None) -> tuple[tf.Tensor, tf.Tensor]:
    """Nodes and weights with ``E_{N(0,1)}[g(ε)] ≈ Σ_h w_h g(ε_h)`` (physicists' rule rescaled)."""
    num_points = check_positive_int(num_points, "num_points")
    dtype = dtype or gpflow.default_float()
    nodes, weights = np.polynomial.hermite.hermgauss(int(num_points))
    return (
        tf.constant(nodes * np.sqrt(2.0), dtype=dtype),  # [H]
        tf.constant(weights / np.sqrt(np.pi), dtype=dtype),  # [H]
    )


def _safe_std(variance: TensorType) -> tf.Tensor:
    """sqrt(max(variance, 1e-30)): finite value *and gradient* at variance 0 (e.g. an instance with
    no features under a linear kernel has k(x, x) = 0); below the floor the gradient is 0."""
    return tf.sqrt(tf.maximum(variance, tf.cast(1e-30, variance.dtype)))


@check_shapes(
    "mean: [batch...]",
    "variance: [batch...]",
    "return: [batch...]",
)
def expected_log_sigmoid(
    mean: TensorType, variance: TensorType, num_points: int = DEFAULT_NUM_GAUSS_HERMITE_POINTS
) -> tf.Tensor:
    """``E_{N(f | mean, variance)}[log σ(f)]`` by Gauss-Hermite quadrature (eq. 20-21).

    ``log σ`` is evaluated as ``tf.math.log_sigmoid`` (``-softplus(-f)``), which is finite for
    any finite ``f``; ``E[log σ(-f)]`` is ``expected_log_sigmoid(mean, variance) - mean``.
    """
    nodes, weights = gauss_hermite_normal(num_points, mean.dtype)
    std = _safe_std(variance)
    f = mean[..., None] + std[..., None] * nodes  # [batch..., H]
    return tf.reduce_sum(tf.math.log_sigmoid(f) * weights, axis=-1)  # [batch...]


@check_shapes(
    "mean: [batch...]",
    "variance: [batch...]",
    "return: [batch...]",
)
def expected_sigmoid(
    mean: TensorType, variance: TensorType, num_points: int = DEFAULT_NUM_GAUSS_HERMITE_POINTS
) -> tf.Tensor:
    """Predictive probability ``E_{N(f | mean, variance)}[σ(f)]`` by Gauss-Hermite quadrature."""
    nodes, weights = gauss_hermite_normal(num_points, mean.dtype)
    std = _safe_std(variance)
    f = mean[..., None] + std[..., None] * nodes  # [batch..., H]
    return tf.reduce_sum(tf.math.sigmoid(f) * weights, axis=-1)  # [batch...]


def _positives_by_row(labels: tf.SparseTensor) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
    """Row ids [T], label ids [T] (sorted within rows) and positives per row [B]."""
    labels = tf.sparse.reorder(labels)
    row_ids = labels.indices[:, 0]  # [T]
    label_ids = labels.indices[:, 1]  # [T]
    num_rows = labels.dense_shape[0]
    num_positive = tf.math.bincount(
        tf.cast(row_ids, tf.int32), minlength=tf.cast(num_rows, tf.int32), dtype=tf.int64
    )  # [B]
    return row_ids, label_ids, num_positive


def _negative_ranks(uniform: TensorType, num_negative: tf.Tensor) -> tf.Tensor:
    """Uniform draws [B, S] as 0-based ranks among each row's |N_i| [B] negatives, clamped to ``[0, |N_i| − 1]``."""
    scaled = tf.floor(uniform * tf.cast(num_negative, uniform.dtype)[:, None])  # [B, S]
    return tf.maximum(tf.minimum(tf.cast(scaled, tf.int64), tf.maximum(num_negative - 1, 0)[:, None]), 0)  # [B, S]


def _where_any_negative(negatives: tf.Tensor, num_negative: tf.Tensor) -> tf.Tensor:
    """Label ids [B, S], with the dummy id 0 in rows that have no negative (``|N_i| = 0``, weight zero)."""
    return tf.where(num_negative[:, None] > 0, negatives, tf.zeros_like(negatives))  # [B, S]


def _weighted_negative_sum(
    h_mean: TensorType,
    h_var: TensorType,
    loadings: TensorType | None,
    bias: TensorType,
    negatives: tf.Tensor,
    num_negative: tf.Tensor,
    num_negative_samples: int,
    num_points: int,
) -> tf.Tensor:
    """``|N_i|/S Σ_{ℓ∈L_i} E[log σ(−f_iℓ)]`` [B] over the sampled negative label ids ``negatives`` [B, S] (rows with
    ``|N_i| = 0`` get zero; ``S = num_negative_samples``), by Gauss-Hermite quadrature and
    ``E[log σ(−f)] = E[log σ(f)] − E[f]``."""
    neg_rows = tf.broadcast_to(tf.range(tf.shape(negatives, out_type=tf.int64)[0])[:, None], tf.shape(negatives))
    neg_mean, neg_var = gathered_utility_moments(h_mean, h_var, loadings, bias, negatives, neg_rows)  # [B, S] each
    negative_sum = tf.reduce_sum(expected_log_sigmoid(neg_mean, neg_var, num_points) - neg_mean, axis=-1)  # [B]
    weight = tf.cast(num_negative, h_mean.dtype) / tf.cast(num_negative_samples, h_mean.dtype)  # [B]
    return weight * negative_sum  # [B]


def sample_negative_labels(
    labels: tf.SparseTensor,
    num_samples: int,
    uniform: TensorType,
) -> tuple[tf.Tensor, tf.Tensor]:
    """Draw ``num_samples`` negative labels per row, uniformly from N_i, with replacement.

    :param labels: ``tf.SparseTensor`` [B, K] whose stored entries are the positive labels.
    :param num_samples: S, the number of negative draws per row.
    :param uniform: ``[B, S]`` independent U[0, 1) numbers (the randomness, passed in so the
        caller owns the seed).
    :return: label ids ``[B, S]`` (each a negative label of its row) and ``|N_i|`` ``[B]``.

    The j-th negative label of a row with sorted positives ``p_0 < p_1 < ...`` is
    ``j + #{t : p_t - t ≤ j}``, so one ``searchsorted`` over the padded keys ``p_t - t``
    maps uniform ranks to labels in O(B·S·log|P_i|) without a B × K mask.
    Rows whose labels are all positive get weight zero (``|N_i| = 0``) and a dummy id 0.
    """
    num_labels = labels.dense_shape[1]
    row_ids, label_ids, num_positive = _positives_by_row(labels)
    num_rows = tf.shape(num_positive, out_type=tf.int64)[0]
    row_starts = tf.cumsum(num_positive, exclusive=True)  # [B]
    rank_in_row = tf.range(tf.shape(row_ids, out_type=tf.int64)[0]) - tf.gather(row_starts, row_ids)  # [T]
    keys = tf.RaggedTensor.from_value_rowids(label_ids - rank_in_row, row_ids, nrows=num_rows).to_tensor(
        default_value=num_labels
    )  # [B, max |P_i|], padding never counts
    keys = tf.concat([keys, tf.fill([num_rows, 1], num_labels)], axis=1)  # [B, max|P_i|+1]
    num_negative = num_labels - num_positive  # [B]
    ranks = _negative_ranks(uniform, num_negative)  # [B, S]
    shift = tf.searchsorted(keys, ranks, side="right", out_type=tf.int64)  # [B, S]
    return _where_any_negative(ranks + shift, num_negative), num_negative  # [B, S], [B]


@check_shapes(
    "h_mean: [B, P]",
    "h_var: [B, P]",
    "loadings: [K, P]",
    "bias: [K]",
    "return: [B]",
)
def multilabel_expected_log_likelihood(
    h_mean: TensorType,
    h_var: TensorType,
    loadings: TensorType | None,
    bias: TensorType,
    labels: tf.SparseTensor,
    num_negative_samples: int | None = None,
    num_points: int = DEFAULT_NUM_GAUSS_HERMITE_POINTS,
    uniform: TensorType | None = None,
) -> tf.Tensor:
    """Per-instance data term of the MLGPF bound, exact (eq. 20) or label-sub-sampled (eq. 23).

    Returns, for each row ``i`` of the minibatch,

        Σ_{k∈P_i} E[log σ(f_ik)] + |N_i|/|L_i| Σ_{ℓ∈L_i} E[log σ(-f_iℓ)]

    where the positives ``P_i`` are the stored entries of ``labels`` and ``L_i`` holds
    ``num_negative_samples`` uniform draws from the negatives ``N_i``; with
    ``num_negative_samples=None`` (or ``≥ K``) ``L_i = N_i`` and the sum is exact, evaluated as
    ``Σ_k (E[log σ(f_ik)] - E[f_ik]) + Σ_{k∈P_i} E[f_ik]`` (a ``B × K`` computation).
    The sampled estimate is unbiased for the exact one and costs O(B·(|P_i| + S)·P).

    :param loadings: Φ [K, P], or None for Φ = I (P = K independent label GPs).
    :param labels: ``tf.SparseTensor`` ``[B, K]``, stored entries = positive labels.
    :param uniform: ``[B, S]`` U[0,1) draws for the negative sampling (required when sampling).
    """
    num_rows = tf.shape(h_mean, out_type=tf.int64)[0]
    row_ids, label_ids, _ = _positives_by_row(labels)
    pos_mean, pos_var = gathered_utility_moments(h_mean, h_var, loadings, bias, label_ids, row_ids)  # [T], [T]

    if num_negative_samples is None or num_negative_samples >= bias.shape[0]:
        f_mean, f_var = utility_moments(h_mean, h_var, loadings, bias)  # [B, K]
        all_negative = tf.reduce_sum(expected_log_sigmoid(f_mean, f_var, num_points) - f_mean, axis=-1)  # [B]
        positive_correction = tf.math.unsorted_segment_sum(pos_mean, row_ids, num_rows)  # [B]
        return all_negative + positive_correction

    if uniform is None:
        raise ValueError("uniform [B, num_negative_samples] draws are required when sampling")
    positive_term = tf.math.unsorted_segment_sum(
        expected_log_sigmoid(pos_mean, pos_var, num_points), row_ids, num_rows
    )  # [B]
    negatives, num_negative = sample_negative_labels(labels, num_negative_samples, uniform)  # [B, S], [B]
    return positive_term + _weighted_negative_sum(
        h_mean, h_var, loadings, bias, negatives, num_negative, num_negative_samples, num_points
    )  # [B]


class MultiLabelBernoulli(gpflow.likelihoods.Likelihood):
    """Bernoulli-logit likelihood over K labels driven by P latent GPs through Φ, b (eq. 12-13).

    Holds the factor loadings ``loadings`` (Φ, [K, P]) and the bias ``bias`` (b, [K]).
    With ``independent_labels=True`` Φ is the identity (P = K, not a parameter; ``loadings`` is None):
    one latent GP per label, f_ik = h_ik + b_k, at O(K) cost per row instead of O(K·P).
    Observations ``Y`` are 0/1 label indicators: dense ``[N, K]`` through GPflow's
    ``Likelihood`` API, or a ``tf.SparseTensor`` of positives through
    :meth:`sparse_variational_expectations` (the path :class:`~gpflow_ext.models.MLGPF`
    trains with).
    """

    def __init__(
        self,
        num_labels: int,
        num_latent_gps: int,
        loadings: TensorType | None = None,
        bias: TensorType | None = None,
        num_gauss_hermite_points: int = DEFAULT_NUM_GAUSS_HERMITE_POINTS,
        seed: int = 0,
        independent_labels: bool = False,
    ) -> None:
        num_labels = check_positive_int(num_labels, "num_labels")
        num_latent_gps = check_positive_int(num_latent_gps, "num_latent_gps")
        num_gauss_hermite_points = check_positive_int(num_gauss_hermite_points, "num_gauss_hermite_points")
        if independent_labels and (num_latent_gps != num_labels or loadings is not None):
            raise ValueError(
                "independent_labels=True means Φ = I: num_latent_gps must equal num_labels "
                f"({num_labels}, got {num_latent_gps}) and loadings must be None"
            )
        super().__init__(input_dim=None, latent_dim=num_latent_gps, observation_dim=num_labels)
        if not independent_labels:
            loadings = self._initial_loadings(loadings, num_labels, num_latent_gps, seed)
        bias = np.zeros(num_labels) if bias is None else np.asarray(bias, gpflow.default_float())
        if bias.shape != (num_labels,):
            raise ValueError(f"bias must have shape [num_labels] = [{num_labels}], got {bias.shape}")
        if not np.all(np.isfinite(bias)):
            raise ValueError("bias contains NaN or inf")
        self.num_labels = int(num_labels)
        self.num_gauss_hermite_points = int(num_gauss_hermite_points)
        self.independent_labels = bool(independent_labels)
        self.loadings = None if independent_labels else gpflow.Parameter(loadings, name="loadings")  # Φ [K, P]
        self.bias = gpflow.Parameter(bias, name="bias")  # b [K]

    @staticmethod
    def _initial_loadings(loadings: TensorType | None, num_labels: int, num_latent_gps: int, seed: int) -> np.ndarray:
        """Φ as given (checked) or N(0, 1/P) draws."""
        if loadings is None:
            rng = np.random.default_rng(seed)
            loadings = rng.normal(size=(num_labels, num_latent_gps)) / np.sqrt(num_latent_gps)
        loadings = np.asarray(loadings, dtype=gpflow.default_float())
        if loadings.shape != (num_labels, num_latent_gps):
            raise ValueError(
                f"loadings must have shape [num_labels, num_latent_gps] = "
                f"[{num_labels}, {num_latent_gps}], got {loadings.shape}"
            )
        if not np.all(np.isfinite(loadings)):
            raise ValueError("loadings contains NaN or inf")
        return loadings

    # -- the large-K path (eq. 23) --------------------------------------------------------
    def sparse_variational_expectations(
        self,
        h_mean: TensorType,
        h_var: TensorType,
        labels: tf.SparseTensor,
        num_negative_samples: int | None = None,
        uniform: TensorType | None = None,
    ) -> tf.Tensor:
        """Per-row data term of eq. 20 (exact) or eq. 23 (sub-sampled negatives); see
        :func:`multilabel_expected_log_likelihood`."""
        return multilabel_expected_log_likelihood(
            h_mean,
            h_var,
            self.loadings,
            self.bias,
            labels,
            num_negative_samples=num_negative_samples,
            num_points=self.num_gauss_hermite_points,
            uniform=uniform,
        )

    @check_shapes("h_mean: [N, P]", "return: [N, K]")
    def mean_utilities(self, h_mean: TensorType) -> tf.Tensor:
        """f̄ = Φ m + b, the scores used for ranking (Appendix A.3)."""
        return self._utilities(h_mean)  # [N, K]

    # -- GPflow's Likelihood interface (dense 0/1 Y [N, K]) -------------------------------
    def _utilities(self, F: TensorType) -> tf.Tensor:
        if self.loadings is None:
            return F + self.bias  # [..., K]
        return tf.einsum("...p,kp->...k", F, self.loadings) + self.bias  # [..., K]

    @inherit_check_shapes
    def _log_prob(self, X: TensorType, F: TensorType, Y: TensorType) -> tf.Tensor:
        f = self._utilities(F)  # [..., K]
        y = tf.cast(Y, f.dtype)
        return tf.reduce_sum(y * f + tf.math.log_sigmoid(-f), axis=-1)  # log σ(±f)

    @inherit_check_shapes
    def _conditional_mean(self, X: TensorType, F: TensorType) -> tf.Tensor:
        return tf.sigmoid(self._utilities(F))

    @inherit_check_shapes
    def _conditional_variance(self, X: TensorType, F: TensorType) -> tf.Tensor:
        p = tf.sigmoid(self._utilities(F))
        return p - tf.square(p)

    def _moments(self, Fmu: TensorType, Fvar: TensorType) -> tuple[tf.Tensor, tf.Tensor]:
        if self.loadings is None:
            return Fmu + self.bias, tf.convert_to_tensor(Fvar)  # [..., K] each
        f_mean = tf.einsum("...p,kp->...k", Fmu, self.loadings) + self.bias  # [..., K] (eq. 21)
        f_var = tf.einsum("...p,kp->...k", Fvar, tf.square(self.loadings))  # [..., K]
        return f_mean, f_var

    @inherit_check_shapes
    def _predict_mean_and_var(self, X: TensorType, Fmu: TensorType, Fvar: TensorType) -> tuple[tf.Tensor, tf.Tensor]:
        f_mean, f_var = self._moments(Fmu, Fvar)
        p = expected_sigmoid(f_mean, f_var, self.num_gauss_hermite_points)  # [..., K]
        return p, p - tf.square(p)

    @inherit_check_shapes
    def _predict_log_density(self, X: TensorType, Fmu: TensorType, Fvar: TensorType, Y: TensorType) -> tf.Tensor:
        p, _ = self._predict_mean_and_var(X, Fmu, Fvar)
        y = tf.cast(Y, p.dtype)
        return tf.reduce_sum(tf.math.log(y * p + (1.0 - y) * (1.0 - p)), axis=-1)

    @inherit_check_shapes
    def _variational_expectations(self, X: TensorType, Fmu: TensorType, Fvar: TensorType, Y: TensorType) -> tf.Tensor:
        f_mean, f_var = self._moments(Fmu, Fvar)  # [..., K]
        y = tf.cast(Y, f_mean.dtype)
        els = expected_log_sigmoid(f_mean, f_var, self.num_gauss_hermite_points)
        # y=1: E log σ(f); y=0: E log σ(-f) = E log σ(f) - E f
        return tf.reduce_sum(els - (1.0 - y) * f_mean, axis=-1)  # [...]
