"""GPLVF: Bayesian GPLVM trained by stochastic variational inference with a flow q(X).

Paper: "Gaussian process latent variable flows" (Sections 2-4, Appendix A).

Model (Section 2): p(x_n) = N(0, I_Q); f_d ~ GP(m_d, k) with one SE-ARD kernel shared by the
D outputs; y_nd ~ N(f_d(x_n), σ²). Inducing variables u_d = f_d(Z) share Z ∈ R^{M×Q}.

Variational family (eq. 2, 4): q(u_d) = N(m_d, S_d) kept explicit (uncollapsed), and
q(x_n) = the base Gaussian N(μ_n, diag s_n) pushed through a flow g_K ∘ … ∘ g_1 whose
parameters λ are shared by all rows (``flow=None``: the Gaussian Bayesian GPLVM baseline).
``base_covariance="isotropic"`` gives the paper's own base, N(μ_n, s_n I_Q) with one variance
per row (eq. 2, 4): the flow is then the only source of a non-spherical q(x_n).

Bound (eq. 3, A.3 eq. 16-23), a sum over rows n so minibatches of rows give unbiased
estimates:

    L = Σ_n { Σ_{d ∈ o(n)} E_{q(x_n)} E_{q(u_d)} E_{p(f_d|u_d,x_n)} log N(y_nd | f_d(x_n), σ²)
              - KL(q(x_n) ‖ p(x_n)) }  -  Σ_d KL(q(u_d) ‖ p(u_d)).

The inner two expectations are analytic for each x (eq. 17-21):
log N(y | μ_d(x), σ²) - v_d(x)/(2σ²) with μ_d, v_d the SVGP predictive mean and variance
(v_d(x) = q_nn + Λ_nn). The outer expectation over x_n uses reparameterised Monte Carlo:
x_n = g(μ_n + √s_n ε), ε ~ N(0, I). Missing entries are marginalised out (eq. 5): o(n) is
the set of observed outputs of row n, nothing is imputed. KL(q(x_n)‖p(x_n)) is estimated on
the same samples with the flow's log-det:
log q(x) = log N(x⁰; μ, s) - Σ_k log|det ∂g_k/∂x^{(k-1)}|  (eq. 4), never the base-Gaussian KL.
KL(q(u_d)‖p(u_d)) is closed form (``gpflow.kullback_leiblers.prior_kl``).
"""
from typing import Callable, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np
import scipy.sparse
import tensorflow as tf
import tensorflow_probability as tfp
import gpflow
from check_shapes import check_shapes
from gpflow.base import Parameter
from gpflow.config import default_float, default_jitter
from gpflow.keras import tf_keras
from gpflow.models.model import BayesianModel
from gpflow.models.training_mixins import ExternalDataTrainingLossMixin, InternalDataTrainingLossMixin
from gpflow.utilities import positive, triangular

from ..bijectors.planar import flow_forward_and_log_det
from ..randomness import noise_seed_and_rows, row_normal
from ..training.schedules import decayed_learning_rate
from ..validation import (
    check_data_tuple,
    check_observations,
    check_positive_int,
    check_positive_values,
    check_row_index,
    check_training_data,
)

__all__ = [
    "GPLVF",
    "NewRowsLatents",
    "validate_observations",
    "masked_gaussian_expected_log_likelihood",
    "conditional_at_pairs",
    "gaussian_kl_to_standard_normal",
    "flow_kl_to_standard_normal",
    "build_encoder",
    "KERNEL_NAMES",
    "make_kernel",
    "BASE_COVARIANCES",
    "VARIANCE_BY",
]

BASE_COVARIANCES = ("diagonal", "isotropic")
VARIANCE_BY = ("auto", "pairs", "outputs")
# variance_by="auto": "outputs" when at least this fraction of the training entries is observed
DENSE_VARIANCE_MIN_OBSERVED_FRACTION = 0.25

LOG_2PI = float(np.log(2.0 * np.pi))


# ----------------------------------------------------------------------------------------
# input checks (API boundary, before any tf.function)
# ----------------------------------------------------------------------------------------
def validate_observations(
    Y, mask=None, *, name: str = "data", num_outputs: Optional[int] = None, allow_empty_rows: bool = False
) -> Tuple[np.ndarray, np.ndarray]:
    """Turn observations into (values [N, D] float64 with 0 where missing, mask [N, D] bool).

    ``Y`` is a 2-D array with NaN for missing entries (the paper's convention, Section 4.2
    footnote 3), or a 2-D array plus a boolean/0-1 ``mask`` (True = observed), or a
    ``scipy.sparse`` matrix whose stored entries are the observed ones. The rules are
    :func:`gpflow_ext.validation.check_observations`: ValueError naming the argument for wrong rank
    or width, empty data, NaN at an entry the mask says is observed, ±inf, a mask of the wrong shape
    or values, and rows with nothing observed (unless ``allow_empty_rows``).
    """
    return check_observations(Y, mask, name=name, num_outputs=num_outputs, allow_empty_rows=allow_empty_rows)


def _check_latents(x_mean, x_var, latent_dim: int, num_rows: Optional[int] = None):
    x_mean = np.asarray(x_mean, dtype=np.float64)
    x_var = np.asarray(x_var, dtype=np.float64)
    for arg, value in (("x_mean", x_mean), ("x_var", x_var)):
        if value.ndim != 2 or value.shape[1] != latent_dim:
            raise ValueError(f"{arg} must have shape [N, {latent_dim}], got {value.shape}")
        if not np.all(np.isfinite(value)):
            raise ValueError(f"{arg} must be finite")
        if num_rows is not None and value.shape[0] != num_rows:
            raise ValueError(f"{arg} must have {num_rows} rows (one per data row), got {value.shape[0]}")
    if x_mean.shape != x_var.shape:
        raise ValueError(f"x_mean {x_mean.shape} and x_var {x_var.shape} must have the same shape")
    if np.any(x_var <= 0):
        raise ValueError("x_var must be strictly positive")
    return x_mean, x_var


def _isotropic_variances(x_var: np.ndarray, name: str) -> np.ndarray:
    """[N, Q] variances that are equal along each row -> [N, 1] (the s_n of N(μ_n, s_n I_Q))."""
    if not np.allclose(x_var, x_var[:, :1], rtol=1e-12, atol=0.0):
        raise ValueError(
            f"{name} must have equal variances along each row for base_covariance='isotropic' "
            "(q(x_n) = N(mu_n, s_n I)); pass one value repeated over the latent dimensions"
        )
    return x_var[:, :1].copy()


# ----------------------------------------------------------------------------------------
# maths as free functions
# ----------------------------------------------------------------------------------------
@check_shapes(
    "Y: [batch..., D]",
    "mask: [batch..., D]",
    "f_mean: [batch..., D]",
    "f_var: [batch..., D]",
    "return: [batch...]",
)
def masked_gaussian_expected_log_likelihood(Y, mask, f_mean, f_var, noise_variance) -> tf.Tensor:
    """Σ_{d observed} E_{N(f; μ, v)} log N(y_d | f, σ²) = Σ_d [log N(y_d | μ_d, σ²) - v_d / (2σ²)] (eq. 20-21).

    Missing entries (mask False) contribute exactly zero, whatever ``Y`` holds there (eq. 5).
    The dense form of what the model computes at observed pairs only (:func:`conditional_at_pairs`).
    """
    mask = tf.cast(mask, tf.bool)
    Y = tf.where(mask, Y, tf.zeros_like(Y))  # [..., D] values at missing entries never reach the maths
    per_entry = _gaussian_expected_log_density(Y, f_mean, f_var, noise_variance)  # [..., D]
    return tf.reduce_sum(tf.where(mask, per_entry, tf.zeros_like(per_entry)), axis=-1)  # [...]


def _gaussian_expected_log_density(y, f_mean, f_var, noise_variance) -> tf.Tensor:
    """E_{N(f; μ, v)} log N(y | f, σ²) = log N(y | μ, σ²) - v / (2σ²), elementwise (eq. 20-21)."""
    return -0.5 * (LOG_2PI + tf.math.log(noise_variance)) - 0.5 * (tf.square(y - f_mean) + f_var) / noise_variance


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
    x, row_index, output_index, inducing_variable, kernel, q_mu, q_sqrt, *, white: bool, variance_by: str = "pairs"
) -> Tuple[tf.Tensor, tf.Tensor]:
    """Mean and variance of q(f_d(x_n)) = ∫ p(f_d(x_n) | u_d) q(u_d) du_d (A.3 eq. 17-19) at the observed
    pairs (n, d) = (``row_index[p]``, ``output_index[p]``) only, for every sample x[s] of the rows.

    Equals ``gpflow.conditionals.conditional(x, Z, k, q_mu, q_sqrt=q_sqrt, full_cov=False, white=white)``
    gathered at the pairs, without forming the [D, M, S·N] products for the outputs nobody observed:
    with A = L⁻¹ K_{Z,x} (and A ← L⁻ᵀ A without whitening), μ = aᵀ m_d and
    v = k(x, x) - ‖L⁻¹ K_{Z,x}‖² + ‖L_dᵀ a‖², so a step costs O(S·P·M²) for P observed entries
    instead of O(S·N·D·M²) (MovieLens: P ≈ 0.06·N·D).

    ``variance_by`` chooses how ‖L_dᵀ a‖² is formed. ``"pairs"`` gathers each pair's L_d, a [P, M, M] tensor:
    the least arithmetic, but its memory traffic (and the scatter in the gradient) dominates a step once many
    entries are observed. ``"outputs"`` forms the mean and L_dᵀ a for every (row, output) of the batch, with one
    [S·N, M] x [M, D] and one [S·N, M] x [M, D·M] matmul, and then gathers the pairs: more arithmetic (the
    dense O(S·N·D·M²)), no [P, M, M] tensor. On 14x14 MNIST with 40 % missing (P ≈ 0.6·N·D) it is 6.7x (M = 30)
    and 8.3x (M = 50) faster per training step (``benchmarks/gplvf_variance_by.py``).
    """
    if variance_by not in ("pairs", "outputs"):
        raise ValueError(f"variance_by must be 'pairs' or 'outputs', got {variance_by!r}")
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
    if variance_by == "pairs":
        A = tf.reshape(tf.transpose(A), [num_samples, num_rows, -1])  # [S, N, M]
        A_pairs = tf.gather(A, row_index, axis=1)  # [S, P, M]
        mean = tf.einsum("spm,pm->sp", A_pairs, tf.gather(tf.transpose(q_mu), output_index))  # [S, P]
        LTA = tf.einsum("pmk,spm->spk", tf.gather(L, output_index), A_pairs)  # [S, P, M]: L_dᵀ a
        lta_var = tf.reduce_sum(tf.square(LTA), axis=-1)  # [S, P]
    else:
        num_outputs, num_inducing = tf.shape(L)[0], tf.shape(L)[1]
        A_rows = tf.transpose(A)  # [S*N, M]
        L_columns = tf.reshape(tf.transpose(L, [1, 0, 2]), [num_inducing, -1])  # [M, D*M]: column (d, k) = L_d[:, k]
        LTA = tf.reshape(tf.matmul(A_rows, L_columns), [-1, num_outputs, num_inducing])  # [S*N, D, M]
        flat_index = row_index * tf.cast(num_outputs, row_index.dtype) + output_index  # [P] into N*D
        by_sample = [num_samples, num_rows * num_outputs]
        mean = tf.gather(tf.reshape(tf.matmul(A_rows, q_mu), by_sample), flat_index, axis=1)  # [S, P]
        lta_var = tf.gather(
            tf.reshape(tf.reduce_sum(tf.square(LTA), axis=-1), by_sample), flat_index, axis=1
        )  # [S, P]
    prior_var = tf.gather(tf.reshape(prior_var, [num_samples, num_rows]), row_index, axis=1)  # [S, P]
    return mean, prior_var + lta_var  # [S, P] each


@check_shapes(
    "x_mean: [N, Q]",
    "x_var: [N, Q]",
    "return: [N]",
)
def gaussian_kl_to_standard_normal(x_mean, x_var) -> tf.Tensor:
    """Closed-form KL(N(μ, diag s) ‖ N(0, I)) per row (A.5)."""
    return 0.5 * tf.reduce_sum(x_var + tf.square(x_mean) - 1.0 - tf.math.log(x_var), axis=-1)


@check_shapes(
    "x_mean: [N, Q]",
    "x_var: [N, Q]",
    "base_noise: [S, N, Q]",
    "return[0]: [S, N, Q]",
    "return[1]: [N]",
)
def flow_kl_to_standard_normal(
    flow, x_mean, x_var, base_noise, base_in_closed_form: bool = True
) -> Tuple[tf.Tensor, tf.Tensor]:
    """Samples x = g(μ + √s ε) of q(x_n) (eq. 4) and a Monte Carlo estimate of KL(q(x_n) ‖ N(0, I)).

    ``base_in_closed_form=False``, the plain estimator:
    KL ≈ 1/S Σ_s [log N(x⁰_s; μ, s) - log|det ∂g/∂x⁰|(x⁰_s) - log N(g(x⁰_s); 0, I)].

    ``base_in_closed_form=True`` (default) splits the same expectation as
    KL = KL(N(μ, s) ‖ N(0, I)) + E_{x⁰}[½‖g(x⁰)‖² - ½‖x⁰‖² - log|det ∂g/∂x⁰|(x⁰)],
    with the base Gaussian's KL (A.5) in closed form and only the flow's correction by Monte Carlo.
    Both are unbiased for the KL of the *flowed* density (not of the base Gaussian). The split one is
    exact for the identity flow and has a small variance near it (the correction vanishes with the
    flow), where the plain one carries the full noise of log N(x⁰; μ, s) - log N(x⁰; 0, I).
    """
    x0 = x_mean + tf.sqrt(x_var) * base_noise  # [S, N, Q]
    x, log_det = flow_forward_and_log_det(flow, x0)  # [S, N, Q], [S, N]
    if base_in_closed_form:
        correction = 0.5 * tf.reduce_sum(tf.square(x) - tf.square(x0), axis=-1) - log_det  # [S, N]
        return x, gaussian_kl_to_standard_normal(x_mean, x_var) + tf.reduce_mean(correction, axis=0)
    log_q0 = -0.5 * tf.reduce_sum(
        LOG_2PI + tf.math.log(x_var) + tf.square(base_noise), axis=-1
    )  # [S, N]
    log_q = log_q0 - log_det  # [S, N]
    log_prior = -0.5 * tf.reduce_sum(LOG_2PI + tf.square(x), axis=-1)  # [S, N]
    return x, tf.reduce_mean(log_q - log_prior, axis=0)  # [S, N, Q], [N]


KL_X_ESTIMATORS = ("auto", "analytic", "monte_carlo", "monte_carlo_plain")

KERNEL_NAMES = ("se", "linear", "se+linear")


def make_kernel(name: str, latent_dim: int, num_inducing: Optional[int] = None) -> gpflow.kernels.Kernel:
    """The GP prior's covariance on R^Q by name (one kernel shared by the D outputs):

    * ``"se"``: SE-ARD, variance 1, unit lengthscales (the paper's kernel);
    * ``"linear"``: ARD linear k(x, x') = Σ_q v_q x_q x'_q, v_q = 1/Q (a Bayesian matrix
      factorisation). Its Kuu has rank <= Q, so it needs ``num_inducing <= latent_dim``;
    * ``"se+linear"``: SE-ARD (variance 0.5) + ARD linear (v_q = 0.5/Q): the SE part can use a
      short lengthscale for non-linear structure while the linear part carries the linear trend.

    Initial prior variances are about 1 at unit-variance latents (the PCA initialisation) in
    each case. Any kernel works in the bound: E over x is Monte Carlo and f | x goes through
    GPflow's ``conditional``, so no kernel-specific Ψ statistics are needed.
    """
    latent_dim = check_positive_int(latent_dim, "latent_dim")
    num_inducing = check_positive_int(num_inducing, "num_inducing", allow_none=True)
    if name not in KERNEL_NAMES:
        raise ValueError(f"kernel must be one of {KERNEL_NAMES}, got {name!r}")
    if name == "linear" and num_inducing is not None and num_inducing > latent_dim:
        raise ValueError(
            f"kernel='linear' has a rank-{latent_dim} Kuu: num_inducing={num_inducing} must be <= "
            f"latent_dim={latent_dim} (or use kernel='se+linear')"
        )
    if name == "se":
        return gpflow.kernels.SquaredExponential(lengthscales=np.ones(latent_dim))
    if name == "linear":
        return gpflow.kernels.Linear(variance=np.full(latent_dim, 1.0 / latent_dim))
    return gpflow.kernels.SquaredExponential(variance=0.5, lengthscales=np.ones(latent_dim)) + gpflow.kernels.Linear(
        variance=np.full(latent_dim, 0.5 / latent_dim)
    )


def build_encoder(output_dim: int, latent_dim: int, hidden_units: Sequence[int] = (128, 64)) -> tf_keras.Model:
    """Back-constraint network (Table 1, Lawrence and Quiñonero Candela 2006): a masked row
    [y ⊙ m, m] ∈ R^{2D} -> (μ_n, log s_n) ∈ R^{2Q}. Built, float64."""
    dtype = default_float()
    inputs = tf_keras.Input(shape=(2 * output_dim,), dtype=dtype)
    hidden = inputs
    for width in hidden_units:
        hidden = tf_keras.layers.Dense(width, activation="tanh", dtype=dtype)(hidden)
    outputs = tf_keras.layers.Dense(
        2 * latent_dim,
        dtype=dtype,
        kernel_initializer=tf_keras.initializers.RandomNormal(stddev=1e-2),
        bias_initializer=tf_keras.initializers.Constant(np.r_[np.zeros(latent_dim), np.full(latent_dim, -2.0)]),
    )(hidden)
    return tf_keras.Model(inputs, outputs, name="gplvf_encoder")


# ----------------------------------------------------------------------------------------
# the model
# ----------------------------------------------------------------------------------------
class GPLVF(BayesianModel, ExternalDataTrainingLossMixin):
    """Bayesian GPLVM with a flow q(X), trained by SVI over minibatches of rows.

    ``GPLVF(Y, latent_dim=Q, num_inducing=M, flow=planar_flow(K, Q))``; ``Y`` [N, D] with NaN
    for missing entries (or ``mask=``, or a scipy.sparse matrix of observed entries).
    ``kernel``: a gpflow Kernel or a name of :func:`make_kernel` (default ``"se"``, SE-ARD).
    Train with ``gpflow_ext.training.fit(model, model.training_data(), batch_size=...)``: the
    data tuple is (values [N, D], mask [N, D], row index [N]); the row index selects the
    local parameters (μ_n, s_n) of q(x_n). With ``encoder=...`` the local parameters come
    from a tf_keras network applied to the masked row instead (amortised inference).
    ``base_covariance``: ``"diagonal"`` (default, N(μ_n, diag s_n)) or ``"isotropic"`` (the paper's
    N(μ_n, s_n I_Q), eq. 2 and 4: one variance per row, ``X_var`` of shape [N, 1]).
    ``kl_x``: how KL(q(x_n) ‖ p(x_n)) is computed (:func:`flow_kl_to_standard_normal`): ``"auto"`` (closed
    form without a flow, else ``"monte_carlo"``), ``"analytic"`` (flow=None only), ``"monte_carlo"`` (the base
    Gaussian's KL in closed form plus a Monte Carlo flow correction) or ``"monte_carlo_plain"`` (every term by
    Monte Carlo; flow results recorded before 2026-11-25 used it).
    ``variance_by``: how the bound forms q(f)'s variance at the observed pairs (:func:`conditional_at_pairs`):
    ``"pairs"`` (sparse data), ``"outputs"`` (dense-ish data) or ``"auto"`` (default: ``"outputs"`` when at least
    a quarter of the training entries is observed). Both give the same bound.
    """

    def __init__(
        self,
        data,
        latent_dim: int,
        num_inducing: int,
        flow: Optional[tfp.bijectors.Bijector] = None,
        *,
        mask=None,
        kernel: Union[None, str, gpflow.kernels.Kernel] = None,
        mean_function: Optional[gpflow.mean_functions.MeanFunction] = None,
        noise_variance: Optional[float] = None,
        num_samples: int = 1,
        whiten: bool = True,
        encoder: Union[None, bool, tf_keras.Model] = None,
        X_mean: Optional[np.ndarray] = None,
        X_var: Optional[np.ndarray] = None,
        Z: Optional[np.ndarray] = None,
        kl_x: str = "auto",
        base_covariance: str = "diagonal",
        variance_by: str = "auto",
        seed: int = 0,
    ):
        values, observed = validate_observations(data, mask, name="data")
        if base_covariance not in BASE_COVARIANCES:
            raise ValueError(f"base_covariance must be one of {BASE_COVARIANCES}, got {base_covariance!r}")
        if variance_by not in VARIANCE_BY:
            raise ValueError(f"variance_by must be one of {VARIANCE_BY}, got {variance_by!r}")
        num_data, output_dim = values.shape
        latent_dim = check_positive_int(latent_dim, "latent_dim")
        num_inducing = check_positive_int(num_inducing, "num_inducing")
        num_samples = check_positive_int(num_samples, "num_samples")
        check_positive_values(noise_variance, "noise_variance", allow_none=True)
        if kl_x not in KL_X_ESTIMATORS:
            raise ValueError(f"kl_x must be one of {KL_X_ESTIMATORS}, got {kl_x!r}")
        if kl_x == "analytic" and flow is not None:
            raise ValueError("kl_x='analytic' needs flow=None: with a flow KL(q(x)||p(x)) has no closed form")
        if flow is not None and not isinstance(flow, tfp.bijectors.Bijector):
            raise TypeError(f"flow must be a tfp.bijectors.Bijector (e.g. planar_flow(K, Q)) or None, got {type(flow)}")
        super().__init__()
        rng = np.random.default_rng(seed)
        self.num_data = int(num_data)
        self.output_dim = int(output_dim)
        self.latent_dim = int(latent_dim)
        self.num_samples = int(num_samples)
        self.whiten = bool(whiten)
        self.kl_x = "analytic" if (kl_x == "auto" and flow is None) else ("monte_carlo" if kl_x == "auto" else kl_x)
        self.base_covariance = base_covariance
        if variance_by == "auto":
            dense = observed.mean() >= DENSE_VARIANCE_MIN_OBSERVED_FRACTION
            variance_by = "outputs" if dense else "pairs"
        self.variance_by = variance_by
        self._values = values
        self._mask = observed

        if X_mean is None:
            X_mean = self._pca_init(values, observed, latent_dim, rng)
        if X_var is None:
            X_var = np.full((num_data, latent_dim), 0.1)
        X_mean, X_var = _check_latents(X_mean, X_var, latent_dim, num_data)
        if base_covariance == "isotropic":
            X_var = _isotropic_variances(X_var, "X_var")  # [N, 1]
        self.X_mean = Parameter(X_mean, name="X_mean")  # [N, Q] base-Gaussian means μ_n
        self.X_var = Parameter(X_var, transform=positive(), name="X_var")  # [N, Q] (or [N, 1]) base variances s_n

        if Z is None:  # distinct rows of X_mean in random order: repeated rows (duplicate data rows) would make
            # K_ZZ singular, and float32 Cholesky returns NaN without raising
            order = rng.permutation(num_data)
            _, first = np.unique(X_mean[order], axis=0, return_index=True)
            Z = X_mean[order[np.sort(first)][:num_inducing]]
            if Z.shape[0] < num_inducing:  # fewer distinct rows than inducing points
                Z = np.concatenate([Z, rng.standard_normal((num_inducing - Z.shape[0], latent_dim))])
        Z = np.asarray(Z, dtype=np.float64)
        if Z.shape != (num_inducing, latent_dim):
            raise ValueError(f"Z must have shape [num_inducing={num_inducing}, latent_dim={latent_dim}], got {Z.shape}")
        self.inducing_variable = gpflow.inducing_variables.InducingPoints(Z)

        if kernel is None:
            kernel = "se"  # SE-ARD
        if isinstance(kernel, str):
            kernel = make_kernel(kernel, latent_dim, num_inducing)
        if not isinstance(kernel, gpflow.kernels.Kernel):
            raise TypeError(f"kernel must be a gpflow Kernel, one of {KERNEL_NAMES} or None, got {type(kernel)}")
        self.kernel = kernel
        if mean_function is None:
            column_sum = values.sum(0)
            column_count = observed.sum(0)
            global_mean = column_sum.sum() / column_count.sum()
            # column means shrunk to the global mean (5 pseudo-observations): a per-output bias
            mean_function = gpflow.mean_functions.Constant(
                (column_sum + 5.0 * global_mean) / (column_count + 5.0)
            )
        self.mean_function = mean_function
        if noise_variance is None:
            noise_variance = max(0.1 * float(np.var(values[observed])), 1e-3)
        self.likelihood = gpflow.likelihoods.Gaussian(variance=noise_variance)

        self.q_mu = Parameter(np.zeros((num_inducing, output_dim)), name="q_mu")  # [M, D]
        q_sqrt = np.tile(np.eye(num_inducing)[None], (output_dim, 1, 1))  # [D, M, M]
        if not self.whiten:
            Kmm = gpflow.covariances.Kuu(self.inducing_variable, self.kernel, jitter=default_jitter()).numpy()
            q_sqrt = q_sqrt * np.linalg.cholesky(Kmm)[None]
        self.q_sqrt = Parameter(q_sqrt, transform=triangular(), name="q_sqrt")  # [D, M, M]

        self.flow = flow
        # Monte Carlo noise from a generator whose state is a variable: reproducible, checkpointed
        # with the model, and no seed-at-trace ops (fit then traces the step once).
        self.noise_generator = tf.random.Generator.from_seed(seed)
        if encoder is True:
            encoder = build_encoder(output_dim, latent_dim)
        if encoder is not None and encoder is not False:
            if not isinstance(encoder, tf_keras.Model):
                raise TypeError("encoder must be True, None or a built tf_keras.Model mapping [B, 2D] -> [B, 2Q]")
            if not encoder.built:
                encoder.build((None, 2 * output_dim))
            self.encoder = encoder
            # q(x_n) comes from the encoder, so the per-row (μ_n, s_n) are unused: keep them out of training
            gpflow.utilities.set_trainable(self.X_mean, False)
            gpflow.utilities.set_trainable(self.X_var, False)
        else:
            self.encoder = None

    # ------------------------------------------------------------------ setup helpers
    @staticmethod
    def _pca_init(values, observed, latent_dim, rng) -> np.ndarray:
        """PCA of the observed entries (a sparse matrix of centred observed values) via
        randomized SVD, scaled to unit variance; nothing is imputed."""
        from sklearn.utils.extmath import randomized_svd

        column_mean = values.sum(0) / np.maximum(observed.sum(0), 1)
        centred = scipy.sparse.csr_matrix(np.where(observed, values - column_mean, 0.0))
        k = min(latent_dim, min(centred.shape) - 1)
        if k < 1:
            return 0.1 * rng.standard_normal((values.shape[0], latent_dim))
        U, s, _ = randomized_svd(centred, k, random_state=int(rng.integers(2**31)))
        X = U * s
        X = X / (X.std(0, keepdims=True) + 1e-12)
        if k < latent_dim:
            X = np.concatenate([X, 0.1 * rng.standard_normal((X.shape[0], latent_dim - k))], axis=1)
        return X + 1e-3 * rng.standard_normal(X.shape)

    def training_data(self) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(values [N, D] with 0 at missing entries, mask [N, D] float, row index [N]) for ``fit``."""
        return (
            self._values,
            self._mask.astype(np.float64),
            np.arange(self.num_data, dtype=np.int64),
        )

    def parameter_groups(self) -> Dict[str, List[tf.Variable]]:
        """The trainable variables split into three disjoint named groups, for per-group learning rates
        (``gpflow_ext.training.adam_by_group(model.parameter_groups(), {"flow": 1e-3}, 0.01)``):

        * ``"flow"``: the flow's parameters λ, shared by every row (empty without a flow);
        * ``"local"``: the per-row base Gaussians (μ_n, s_n), or the encoder's weights when q(x_n) is amortised;
          each row's own parameters move only when its row is in the minibatch;
        * ``"global"``: everything else (Z, kernel, noise, mean function, q(u)).

        Together they hold each trainable variable exactly once (checked).
        """
        trainable = self.trainable_variables
        flow = list(self.flow.trainable_variables) if self.flow is not None else []
        local = list(self.X_mean.variables) + list(self.X_var.variables)
        if self.encoder is not None:
            local += list(self.encoder.trainable_variables)
        flow_refs, local_refs = {v.ref() for v in flow}, {v.ref() for v in local}
        named_refs = flow_refs | local_refs
        groups = {
            "flow": [v for v in trainable if v.ref() in flow_refs],
            "local": [v for v in trainable if v.ref() in local_refs],
            "global": [v for v in trainable if v.ref() not in named_refs],
        }
        if sum(len(g) for g in groups.values()) != len(trainable):  # a variable in two groups
            raise RuntimeError("parameter_groups: the flow, local and global groups overlap")
        return groups

    # ------------------------------------------------------------------ q(x_n)
    def local_parameters(self, values, mask, row_index) -> Tuple[tf.Tensor, tf.Tensor]:
        """(μ_n, s_n) of the base Gaussian for a batch: gathered by row index, or from the encoder."""
        if self.encoder is not None:
            mask = tf.cast(mask, default_float())
            out = self.encoder(tf.concat([values * mask, mask], axis=-1))  # [B, 2Q]
            x_mean = out[:, : self.latent_dim]  # [B, Q]
            log_var = tf.clip_by_value(out[:, self.latent_dim:], -20.0, 5.0)  # [B, Q]
            if self.base_covariance == "isotropic":
                log_var = tf.reduce_mean(log_var, axis=-1, keepdims=True)  # [B, 1]
            return x_mean, self._full_variances(x_mean, tf.exp(log_var))
        row_index = tf.cast(row_index, tf.int64)
        x_mean = tf.gather(self.X_mean, row_index)  # [B, Q]
        return x_mean, self._full_variances(x_mean, tf.gather(self.X_var, row_index))  # [B, Q] each

    def training_latents(self) -> Tuple[np.ndarray, np.ndarray]:
        """(μ [N, Q], s [N, Q]) of the training rows' base Gaussians (isotropic s_n repeated over Q),
        ready for ``predict_y`` / ``predict_log_density``; with an encoder, its output on the training rows."""
        if self.encoder is not None:
            return self.encode(self._values, self._mask)
        x_mean = self.X_mean.numpy()
        return x_mean, np.broadcast_to(self.X_var.numpy(), x_mean.shape).copy()

    def _full_variances(self, x_mean, x_var) -> tf.Tensor:
        """Base variances [B, Q] from [B, Q] (diagonal) or [B, 1] (isotropic: s_n I_Q)."""
        return tf.broadcast_to(x_var, tf.shape(x_mean))

    def latent_samples_and_kl(self, x_mean, x_var, base_noise) -> Tuple[tf.Tensor, tf.Tensor]:
        """x ~ q(x_n) [S, B, Q] and KL(q(x_n) ‖ p(x_n)) [B]. For a Gaussian q (kl_x='analytic') the split
        estimator is the closed form: its flow correction is exactly 0 without a flow."""
        return flow_kl_to_standard_normal(
            self.flow, x_mean, x_var, base_noise, base_in_closed_form=self.kl_x != "monte_carlo_plain"
        )

    # ------------------------------------------------------------------ f | x
    def predict_f_at(self, x: tf.Tensor) -> Tuple[tf.Tensor, tf.Tensor]:
        """q(f_d(x)) = ∫ p(f_d | u_d, x) q(u_d) du_d for points x [..., Q]: mean, var [..., D]."""
        batch_shape = tf.shape(x)[:-1]
        x_flat = tf.reshape(x, [-1, self.latent_dim])  # [S*B, Q]
        f_mean, f_var = gpflow.conditionals.conditional(
            x_flat,
            self.inducing_variable,
            self.kernel,
            self.q_mu,
            q_sqrt=self.q_sqrt,
            full_cov=False,
            white=self.whiten,
        )  # [S*B, D] each
        f_mean = f_mean + self.mean_function(x_flat)
        out_shape = tf.concat([batch_shape, [self.output_dim]], axis=0)
        return tf.reshape(f_mean, out_shape), tf.reshape(f_var, out_shape)

    def prior_kl(self) -> tf.Tensor:
        """Σ_d KL(q(u_d) ‖ p(u_d)), closed form."""
        return gpflow.kullback_leiblers.prior_kl(
            self.inducing_variable, self.kernel, self.q_mu, self.q_sqrt, whiten=self.whiten
        )

    # ------------------------------------------------------------------ bound
    def mean_at_pairs(self, x, row_index, output_index) -> tf.Tensor:
        """m_d(x_n) [S, P] at the pairs (n, d); a per-output Constant (the default) or Zero is only gathered."""
        mean_function = self.mean_function
        if isinstance(mean_function, gpflow.mean_functions.Zero):
            return tf.zeros([tf.shape(x)[0], tf.shape(row_index)[0]], dtype=x.dtype)
        if isinstance(mean_function, gpflow.mean_functions.Constant):
            c = tf.broadcast_to(tf.reshape(mean_function.c, [-1]), [self.output_dim])  # [D]
            return tf.broadcast_to(tf.gather(c, output_index)[None], [tf.shape(x)[0], tf.shape(row_index)[0]])
        full = tf.reshape(mean_function(tf.reshape(x, [-1, self.latent_dim])), tf.concat([tf.shape(x)[:2], [-1]], 0))
        pairs = tf.stack([row_index, output_index], axis=-1)  # [P, 2]
        return tf.transpose(tf.gather_nd(tf.transpose(full, [1, 2, 0]), pairs))  # [S, P]

    def row_terms(self, values, mask, x_mean, x_var, base_noise) -> Tuple[tf.Tensor, tf.Tensor]:
        """Per-row (E_q log p(y_o | x, u) [B], KL(q(x_n)‖p(x_n)) [B]) from base noise [S, B, Q].

        f is evaluated at the observed (row, output) pairs only (:func:`conditional_at_pairs`); the dense
        twin is ``masked_gaussian_expected_log_likelihood`` on :meth:`predict_f_at` (tests compare them).
        """
        x, kl_x = self.latent_samples_and_kl(x_mean, x_var, base_noise)  # [S, B, Q], [B]
        pairs = tf.where(tf.cast(mask, tf.bool))  # [P, 2] observed (row, output), int64
        row_index, output_index = pairs[:, 0], pairs[:, 1]  # [P] each
        f_mean, f_var = conditional_at_pairs(
            x, row_index, output_index, self.inducing_variable, self.kernel, self.q_mu, self.q_sqrt,
            white=self.whiten, variance_by=self.variance_by,
        )  # [S, P] each
        f_mean = f_mean + self.mean_at_pairs(x, row_index, output_index)
        y = tf.gather_nd(tf.cast(values, f_mean.dtype), pairs)  # [P]
        per_pair = tf.reduce_mean(
            _gaussian_expected_log_density(y[None], f_mean, f_var, self.likelihood.variance), axis=0
        )  # [P]
        expected_log_lik = tf.math.unsorted_segment_sum(per_pair, row_index, tf.shape(x_mean)[0])  # [B]
        return expected_log_lik, kl_x

    def elbo_given_base_noise(self, data, base_noise) -> tf.Tensor:
        """The bound (eq. 22-23) for a minibatch of rows with fixed base noise ε [S, B, Q]."""
        values, mask, row_index = data
        values = tf.convert_to_tensor(values, dtype=default_float())
        x_mean, x_var = self.local_parameters(values, mask, row_index)
        expected_log_lik, kl_x = self.row_terms(values, mask, x_mean, x_var, base_noise)
        batch_size = tf.cast(tf.shape(values)[0], default_float())
        scale = tf.cast(self.num_data, default_float()) / batch_size
        return scale * tf.reduce_sum(expected_log_lik - kl_x) - self.prior_kl()

    def elbo(self, data) -> tf.Tensor:
        """Unbiased minibatch estimate of the bound; ``data`` = (values [B, D], mask [B, D], row index [B])."""
        # per-row draws keyed by (seed, step, row index): see gpflow_ext.randomness (fit's seed and step;
        # outside fit a fresh seed from the model's generator)
        seed, rows = noise_seed_and_rows(self.noise_generator, tf.shape(data[0])[0])
        noise = row_normal(seed, rows, self.num_samples * self.latent_dim, default_float())  # [B, S*Q]
        base_noise = tf.transpose(tf.reshape(noise, [-1, self.num_samples, self.latent_dim]), [1, 0, 2])  # [S, B, Q]
        return self.elbo_given_base_noise(data, base_noise)

    def maximum_log_likelihood_objective(self, data) -> tf.Tensor:
        return self.elbo(data)

    # ------------------------------------------------------------------ new rows
    def _check_new_rows(self, Y, mask, name="Y_new"):
        return validate_observations(Y, mask, name=name, num_outputs=self.output_dim)

    def encode(self, Y, mask=None) -> Tuple[np.ndarray, np.ndarray]:
        """Amortised q(x*) for new partially observed rows: (μ*, s*) from the encoder, no optimisation."""
        if self.encoder is None:
            raise ValueError("this GPLVF has no encoder; use infer_latent() for new rows")
        values, observed = self._check_new_rows(Y, mask)
        x_mean, x_var = self.local_parameters(
            tf.constant(values, dtype=default_float()), tf.constant(observed, dtype=default_float()), None
        )
        return x_mean.numpy(), x_var.numpy()

    def _best_training_latents(self, values, observed) -> np.ndarray:
        """Initial μ* for new rows: the training-row mean μ_n whose predicted row best fits the observed entries."""
        f_mean, _ = self.predict_f_at(tf.convert_to_tensor(self.X_mean))  # [N, D]
        f_mean = f_mean.numpy()
        m = observed.astype(np.float64)
        err = (m * values**2).sum(1)[:, None] - 2 * (m * values) @ f_mean.T + m @ (f_mean**2).T  # [N*, N]
        return self.X_mean.numpy()[np.argmin(err, axis=1)]

    def infer_latent(
        self,
        Y,
        mask=None,
        *,
        num_steps: int = 300,
        learning_rate: float = 0.05,
        num_samples: Optional[int] = None,
        seed: int = 0,
        decay: str = "constant",
    ) -> Tuple[np.ndarray, np.ndarray]:
        """Non-amortised q(x*) for new rows: maximise Σ_n [E log p(y*_o | x*) - KL(q(x*_n)‖p)] over
        (μ*_n, s*_n) only; kernel, Z, q(u), noise and flow stay fixed. Returns (μ* [N*, Q], s* [N*, Q]).
        With an encoder, starts from its output.

        The fit is ``num_steps`` full-batch Adam steps of ``gpflow_ext.training.fit`` on a
        :class:`NewRowsLatents` problem (one step per epoch), with Monte Carlo draws from a
        ``tf.random.Generator`` seeded by ``seed``.

        :param decay: ``"constant"`` keeps Adam's ``learning_rate``; ``"cosine"`` decays it to 0 over
            ``num_steps`` (``tf_keras`` ``CosineDecay``), so the returned (μ*, s*) is not one noisy
            Monte Carlo step away from the optimum but settles as the step shrinks.
        """
        from ..training import fit  # models never import training at module level

        values, observed = self._check_new_rows(Y, mask)
        num_steps = check_positive_int(num_steps, "num_steps", minimum=0)
        learning_rate = decayed_learning_rate(learning_rate, decay, int(num_steps))  # checks decay
        num_samples = self.num_samples if num_samples is None else check_positive_int(num_samples, "num_samples")
        if self.encoder is not None:
            init_mean, init_var = self.encode(values, observed)
        else:
            init_mean = self._best_training_latents(values, observed)
            init_var = np.full_like(init_mean, 0.1)
        init_log_var = np.log(init_var)  # [N*, Q]
        if self.base_covariance == "isotropic":
            init_log_var = init_log_var.mean(axis=1, keepdims=True)  # [N*, 1]
        problem = NewRowsLatents(self, values, observed, init_mean, init_log_var, num_samples, seed)
        fit(
            problem, None, epochs=num_steps, optimizer=tf_keras.optimizers.Adam(learning_rate),
            variables=[problem.x_mean, problem.x_log_var], progress=False, seed=seed,
        )
        return problem.x_mean.numpy(), np.broadcast_to(np.exp(problem.x_log_var.numpy()), init_mean.shape).copy()

    # ------------------------------------------------------------------ prediction
    def base_noise(self, num_rows: int, num_samples: int = 100, seed: int = 0) -> np.ndarray:
        """The standard-normal base draws ε [J, N*, Q] behind :meth:`predict_y` and :meth:`predict_log_density`
        with the same ``num_samples`` and ``seed`` (numpy's ``default_rng(seed)``), e.g. to feed an exported
        ``predict_y`` (``gpflow_ext.serving``)."""
        num_rows = check_positive_int(num_rows, "num_rows")
        num_samples = check_positive_int(num_samples, "num_samples")
        rng = np.random.default_rng(seed)
        return rng.standard_normal((num_samples, num_rows, self.latent_dim))

    def latent_draws(self, x_mean, x_var, base_noise) -> tf.Tensor:
        """x* = g(μ* + √s* ε) [J, N*, Q] for base draws ε [J, N*, Q] (in the model's float type)."""
        dtype = default_float()
        x0 = tf.cast(x_mean, dtype) + tf.sqrt(tf.cast(x_var, dtype)) * tf.cast(base_noise, dtype)
        x, _ = flow_forward_and_log_det(self.flow, x0)
        return x  # [J, N*, Q]

    def predict_y_given_base_noise(self, x_mean, x_var, base_noise) -> Tuple[tf.Tensor, tf.Tensor]:
        """Monte Carlo moments of y* over x* = g(μ* + √s* ε) for given base draws ε [J, N*, Q]:
        mean [N*, D] and variance [N*, D] (σ² included). A graph-friendly core of :meth:`predict_y`."""
        f_mean, f_var = self.predict_f_at(self.latent_draws(x_mean, x_var, base_noise))  # [J, N*, D]
        mean = tf.reduce_mean(f_mean, axis=0)
        var = tf.reduce_mean(f_var + tf.square(f_mean), axis=0) - tf.square(mean) + self.likelihood.variance
        return mean, var

    def _latent_draws(self, x_mean, x_var, num_samples, seed) -> tf.Tensor:
        x_mean, x_var = _check_latents(x_mean, x_var, self.latent_dim)
        return self.latent_draws(x_mean, x_var, self.base_noise(x_mean.shape[0], num_samples, seed))

    def _row_chunks(self, num_rows: int, num_samples: int):
        """Row ranges small enough that GPflow's conditional ([D, M, J·rows] tiles) stays ~2e7 numbers."""
        num_inducing = int(self.inducing_variable.num_inducing)
        size = max(1, int(2e7 // max(1, num_samples * self.output_dim * num_inducing)))
        return [(start, min(start + size, num_rows)) for start in range(0, num_rows, size)]

    def predict_y(self, x_mean, x_var, *, num_samples: int = 100, seed: int = 0) -> Tuple[np.ndarray, np.ndarray]:
        """Predictive mean and variance of every entry of rows with q(x*) (eq. 33's integrand
        moments), by Monte Carlo over x* ~ q(x*): mean [N*, D], var [N*, D] (includes σ²).
        Rows are processed in chunks to bound memory."""
        x_mean, x_var = _check_latents(x_mean, x_var, self.latent_dim)
        noise = self.base_noise(x_mean.shape[0], num_samples, seed)  # [J, N*, Q]
        means, variances = [], []
        for start, stop in self._row_chunks(x_mean.shape[0], num_samples):
            mean, var = self.predict_y_given_base_noise(
                x_mean[start:stop], x_var[start:stop], noise[:, start:stop]
            )  # [n, D] each
            means.append(mean.numpy())
            variances.append(var.numpy())
        return np.concatenate(means), np.concatenate(variances)

    def predict_log_density(
        self, Y_test, x_mean, x_var, *, mask=None, num_samples: int = 100, seed: int = 0
    ) -> np.ndarray:
        """log p(y*_test | Y) per row by eq. 33: log 1/J Σ_j Π_{d ∈ test} N(y*_d | μ_d(x*_j), v_d(x*_j) + σ²)
        with x*_j ~ q(x*). ``Y_test`` [N*, D] holds the test entries (NaN elsewhere or ``mask``)."""
        values, observed = validate_observations(
            Y_test, mask, name="Y_test", num_outputs=self.output_dim, allow_empty_rows=True
        )
        x_all = self._latent_draws(x_mean, x_var, num_samples, seed)  # [J, N*, Q]
        if x_all.shape[1] != values.shape[0]:
            raise ValueError(f"x_mean has {x_all.shape[1]} rows but Y_test has {values.shape[0]}")
        out = []
        for start, stop in self._row_chunks(values.shape[0], num_samples):
            f_mean, f_var = self.predict_f_at(x_all[:, start:stop])  # [J, n, D]
            total_var = f_var + self.likelihood.variance
            y = tf.constant(values[None, start:stop], dtype=f_mean.dtype)  # [1, n, D]
            log_dens = -0.5 * (LOG_2PI + tf.math.log(total_var) + tf.square(y - f_mean) / total_var)
            log_dens = tf.reduce_sum(
                tf.where(observed[None, start:stop], log_dens, tf.zeros_like(log_dens)), axis=-1
            )  # [J, n]
            out.append((tf.reduce_logsumexp(log_dens, axis=0) - float(np.log(num_samples))).numpy())
        return np.concatenate(out)  # [N*]

    def test_log_likelihood(self, Y_test, x_mean, x_var, *, mask=None, num_samples: int = 100, seed: int = 0) -> float:
        """Eq. 33 summed over rows and divided by the number of test entries (A.6 footnote: averaged)."""
        values, observed = validate_observations(
            Y_test, mask, name="Y_test", num_outputs=self.output_dim, allow_empty_rows=True
        )
        per_row = self.predict_log_density(values, x_mean, x_var, mask=observed, num_samples=num_samples, seed=seed)
        return float(per_row.sum() / observed.sum())


class NewRowsLatents(BayesianModel, InternalDataTrainingLossMixin):
    """q(x*) = base N(μ*_n, s*_n) (then the flow) of new rows under a fixed :class:`GPLVF`, as a GPflow model.

    Its variables are ``x_mean`` [N*, Q] and ``x_log_var`` [N*, Q] (isotropic base: [N*, 1]); its objective
    is Σ_n [E_q log p(y*_o,n | x*_n) - KL(q(x*_n) ‖ p(x*_n))] of the observed entries, with the GPLVF's
    kernel, Z, q(u), noise and flow held fixed. Monte Carlo base noise [S, N*, Q] comes from its own
    ``tf.random.Generator`` seeded with ``seed``, one draw per evaluation. :meth:`GPLVF.infer_latent`
    trains it with ``gpflow_ext.training.fit``. The GPLVF is referred to, not tracked: its variables are
    not this model's (``trainable_variables`` holds x_mean and x_log_var only).
    """

    _TF_MODULE_IGNORED_PROPERTIES = BayesianModel._TF_MODULE_IGNORED_PROPERTIES | {"gplvf"}

    def __init__(self, gplvf: "GPLVF", values, observed, init_mean, init_log_var, num_samples: int, seed: int):
        super().__init__()
        self.gplvf = gplvf
        self.num_samples = int(num_samples)
        self.x_mean = tf.Variable(init_mean, dtype=default_float(), name="x_mean")  # [N*, Q]
        self.x_log_var = tf.Variable(init_log_var, dtype=default_float(), name="x_log_var")  # [N*, Q or 1]
        self.values = tf.constant(values)  # [N*, D]
        self.mask = tf.constant(observed)  # [N*, D] bool
        self.noise_generator = tf.random.Generator.from_seed(seed)

    def maximum_log_likelihood_objective(self) -> tf.Tensor:
        gplvf = self.gplvf
        noise = self.noise_generator.normal(
            [self.num_samples, self.values.shape[0], gplvf.latent_dim], dtype=default_float()
        )  # [S, N*, Q]
        x_var = gplvf._full_variances(self.x_mean, tf.exp(self.x_log_var))  # [N*, Q]
        expected_log_lik, kl_x = gplvf.row_terms(self.values, self.mask, self.x_mean, x_var, noise)
        return tf.reduce_sum(expected_log_lik - kl_x)


@check_training_data.register(GPLVF)
def _check_gplvf_data(model: GPLVF, data) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(values [N, D], mask [N, D], row index [N])`` for :class:`GPLVF` (the layout of
    :meth:`GPLVF.training_data`), returned as (float64 values with 0 at missing entries, float64 0/1 mask,
    int64 row index).

    The values must have all D outputs of the model (NaN is allowed where the mask is 0); the mask the
    shape of the values; the row index integers in [0, num_data) that select each row's q(x_n). ``(Y,)``
    and ``(Y, mask)`` (NaN = missing without a mask) are accepted when Y holds the model's num_data rows in
    order: the row index is then 0..N-1.
    """
    parts = check_data_tuple(data, ("values", "mask", "row_index"), type(model).__name__, optional_tail=2)
    values = parts[0]
    mask = parts[1] if len(parts) > 1 else None
    values, observed = check_observations(
        values, mask, name="data[0] (values)", num_outputs=model.output_dim, mask_name="data[1] (mask)"
    )
    if len(parts) == 3:
        rows = check_row_index(parts[2], model.num_data, name="data[2] (row_index)", num_rows=values.shape[0])
    elif values.shape[0] == model.num_data:
        rows = np.arange(model.num_data, dtype=np.int64)
    else:
        raise ValueError(
            f"data[0] (values) has {values.shape[0]} rows but the model has num_data={model.num_data}; "
            "pass the row index of each row as data[2] (values, mask, row_index)"
        )
    return values, observed.astype(np.float64), rows
