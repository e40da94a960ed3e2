"""GPLVF: Bayesian GPLVM trained by stochastic variational inference with a flow q(X).

Paper: "Gaussian process latent variable flows" (Sections 2-4, Appendix A). p(x_n) = N(0, I_Q); f_d ~ GP(m_d, k)
with one kernel shared by the D outputs, u_d = f_d(Z); y_nd ~ p(y | f_d(x_n)) (Gaussian, or any scalar likelihood,
one per column); q(u_d) = N(m_d, S_d); q(x_n) = a base Gaussian (:mod:`gpflow_ext.latents`) through a flow (eq. 2, 4).
The bound (eq. 3, A.3 eq. 16-23) is a sum over rows, so minibatches of rows give unbiased estimates:

    L = Σ_n { Σ_{d ∈ o(n)} E_{q(x_n)} E_{q(f_d(x_n))} log p(y_nd | f_d(x_n)) - KL(q(x_n) ‖ p(x_n)) }
        - Σ_d KL(q(u_d) ‖ p(u_d)),

with q(f) at the observed pairs from :mod:`gpflow_ext.conditionals.pairs`, the inner expectation from the (column's)
likelihood's ``variational_expectations`` (eq. 20-21), x_n by reparameterised Monte Carlo, KL(q(x_n) ‖ p(x_n)) from an
estimator of :mod:`gpflow_ext.kullback_leiblers`; missing entries are marginalised out (eq. 5).
"""

import gpflow
import numpy as np
import tensorflow as tf
import tensorflow_probability as tfp
from check_shapes import check_shapes
from gpflow.base import Parameter
from gpflow.config import default_float, default_jitter
from gpflow.keras import tf_keras
from gpflow.models.model import BayesianModel
from gpflow.models.training_mixins import ExternalDataTrainingLossMixin
from gpflow.utilities import triangular

from ..bijectors.planar import flow_forward_and_log_det
from ..conditionals.pairs import PairVariance, RowSums, as_pair_variance, gaussian_with_one_variance, pair_variance_for
from ..kullback_leiblers import LatentKL, as_latent_kl
from ..latents import (
    BaseCovariance,
    EncoderLatents,
    PerRowLatents,
    as_base_covariance,
    distinct_rows,
    draw_row_keyed_base_noise,
    pca_latents,
)
from ..likelihoods.columns import columnwise_predict_mean_and_var
from ..likelihoods.masked import likelihood_and_mean_for, masked_predict_log_density
from ..likelihoods.rows import row_expected_log_likelihood
from ..likelihoods.support import check_values_in_support
from ..validation import (
    check_latents,
    check_observations,
    check_positive_int,
    check_positive_values,
    check_rows_with_missing_data,
    check_training_data,
)
from ..variational.packed_lower import lower_factors, whitened_gauss_kl

__all__ = ["GPLVF"]


class GPLVF(BayesianModel, ExternalDataTrainingLossMixin):
    """Bayesian GPLVM with a flow q(X), trained by SVI over minibatches of rows.

    ``GPLVF(Y, latent_dim=Q, num_inducing=M, flow=planar_flow(K, Q))``; ``Y`` [N, D] with NaN for missing
    entries (or ``mask=``, or a scipy.sparse matrix of observed entries). ``kernel``: a gpflow Kernel (default
    SE-ARD with unit lengthscales, the paper's). ``likelihood``: any ``gpflow.likelihoods.ScalarLikelihood`` (None:
    Gaussian), or ``SwitchedLikelihood([l_0, ...])`` with ``likelihood_columns`` [D] (ints): column d's likelihood
    is l_{likelihood_columns[d]}. Train with ``gpflow_ext.training.fit(model, model.training_data(), batch_size=...)``:
    the data tuple is (values [N, D], mask [N, D], row index [N]).

    * ``encoder``: a tf_keras network [B, 2D] -> [B, 2Q] amortising q(x_n) (:class:`~gpflow_ext.latents.EncoderLatents`);
      None: free per-row (μ_n, s_n) (:class:`~gpflow_ext.latents.PerRowLatents`); either is ``model.latents``.
    * ``base_covariance``: :class:`~gpflow_ext.latents.Diagonal` (default) or :class:`~gpflow_ext.latents.Isotropic`.
    * ``kl_x``: a :class:`~gpflow_ext.kullback_leiblers.LatentKL` (None: closed form; split Monte Carlo with a flow).
    * ``variance_by``: a :class:`~gpflow_ext.conditionals.pairs.PairVariance` (None: ``RowSums()`` for a Gaussian
      likelihood of one variance, else chosen from the observed fraction); every choice gives the same bound.
    """

    def __init__(
        self,
        data,
        latent_dim: int,
        num_inducing: int,
        flow: tfp.bijectors.Bijector | None = None,
        *,
        mask=None,
        kernel: gpflow.kernels.Kernel | None = None,
        mean_function: gpflow.mean_functions.MeanFunction | None = None,
        noise_variance: float | None = None,
        likelihood: gpflow.likelihoods.ScalarLikelihood | None = None,
        likelihood_columns: np.ndarray | None = None,
        num_samples: int = 1,
        whiten: bool = True,
        encoder: tf_keras.Model | None = None,
        X_mean: np.ndarray | None = None,
        X_var: np.ndarray | None = None,
        Z: np.ndarray | None = None,
        kl_x: LatentKL | None = None,
        base_covariance: BaseCovariance | None = None,
        variance_by: PairVariance | None = None,
        seed: int = 0,
    ):
        values, observed = check_observations(data, mask, name="data")
        base_covariance = as_base_covariance(base_covariance)
        variance_by = None if variance_by is None else as_pair_variance(variance_by)
        num_data, output_dim = values.shape
        latent_dim = check_positive_int(latent_dim, "latent_dim")
        num_inducing = check_positive_int(num_inducing, "num_inducing")
        num_samples = check_positive_int(num_samples, "num_samples")
        check_positive_values(noise_variance, "noise_variance", allow_none=True)
        if flow is not None and not isinstance(flow, tfp.bijectors.Bijector):
            raise TypeError(f"flow must be a tfp.bijectors.Bijector (e.g. planar_flow(K, Q)) or None, got {type(flow)}")
        kl_x = as_latent_kl(kl_x, flow)
        super().__init__()
        rng = np.random.default_rng(seed)
        self.num_data, self.output_dim, self.latent_dim = int(num_data), int(output_dim), int(latent_dim)
        self.num_samples, self.whiten, self.kl_x = int(num_samples), bool(whiten), kl_x
        self._values, self._mask = values, observed

        X_mean = pca_latents(values, observed, latent_dim, rng) if X_mean is None else X_mean
        X_var = np.full((num_data, latent_dim), 0.1) if X_var is None else X_var
        X_mean, X_var = check_latents(X_mean, X_var, latent_dim, num_data)
        Z = distinct_rows(X_mean, num_inducing, rng) if Z is None else np.asarray(Z, dtype=np.float64)
        if Z.shape != (num_inducing, latent_dim) or not np.all(np.isfinite(Z)):
            raise ValueError(f"Z must be finite, of shape [num_inducing={num_inducing}, Q={latent_dim}], got {Z.shape}")
        self.inducing_variable = gpflow.inducing_variables.InducingPoints(Z)

        if kernel is None:
            kernel = gpflow.kernels.SquaredExponential(lengthscales=np.ones(latent_dim))  # SE-ARD
        if not isinstance(kernel, gpflow.kernels.Kernel):
            raise TypeError(f"kernel must be a gpflow Kernel or None, got {type(kernel)}")
        self.kernel = kernel
        self.likelihood, self.mean_function, self.likelihood_columns = likelihood_and_mean_for(
            values, observed, likelihood, noise_variance, mean_function, likelihood_columns
        )
        if variance_by is None:
            variance_by = pair_variance_for(observed.mean(), self.likelihood, self.likelihood_columns)
        elif isinstance(variance_by, RowSums) and not gaussian_with_one_variance(
            self.likelihood, self.likelihood_columns
        ):
            raise ValueError(
                "variance_by=RowSums() needs a gpflow.likelihoods.Gaussian likelihood with one constant variance "
                f"for every column; use PerPair() or PerOutput() with {type(self.likelihood).__name__}"
            )
        self.variance_by = variance_by

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
        if encoder is None:
            self.latents = PerRowLatents(X_mean, X_var, base_covariance)
        else:
            self.latents = EncoderLatents(encoder, output_dim, latent_dim, base_covariance)

    # ------------------------------------------------------------------ parameters
    @property
    def encoder(self) -> tf_keras.Model | None:
        return self.latents.network if isinstance(self.latents, EncoderLatents) else None

    def _per_row(self, name: str) -> Parameter:
        if not isinstance(self.latents, PerRowLatents):
            raise AttributeError(f"this GPLVF amortises q(x_n) with an encoder: it has no per-row {name}")
        return getattr(self.latents, name)

    X_mean = property(lambda self: self._per_row("X_mean"), doc="Per-row base means μ_n [N, Q] (``latents.X_mean``).")
    X_var = property(lambda self: self._per_row("X_var"), doc="Per-row base variances s_n [N, Q] or [N, 1].")

    @property
    def base_covariance(self) -> BaseCovariance:
        return self.latents.base_covariance

    def training_data(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(values [N, D] with 0 at missing entries, mask [N, D] float, row index [N]) for ``fit``."""
        return self._values, self._mask.astype(np.float64), np.arange(self.num_data, dtype=np.int64)

    def parameter_groups(self) -> dict[str, list[tf.Variable]]:
        """The trainable variables in three disjoint named groups, for per-group learning rates
        (``gpflow_ext.training.adam_by_group(model.parameter_groups(), {"flow": 1e-3}, 0.01)``): ``"flow"`` (λ,
        shared by every row), ``"local"`` (the per-row (μ_n, s_n) or the encoder's weights), ``"global"`` (the
        rest)."""
        trainable = self.trainable_variables
        flow_refs = {v.ref() for v in (self.flow.trainable_variables if self.flow is not None else [])}
        local_refs = {v.ref() for v in self.latents.local_variables}
        groups = {
            "flow": [v for v in trainable if v.ref() in flow_refs],
            "local": [v for v in trainable if v.ref() in local_refs],
            "global": [v for v in trainable if v.ref() not in flow_refs | local_refs],
        }
        if sum(len(g) for g in groups.values()) != len(trainable):  # a variable in two groups
            raise RuntimeError("parameter_groups: the flow, local and global groups overlap")
        return groups

    # ------------------------------------------------------------------ q(x_n), q(f), bound
    def local_parameters(self, values, mask, row_index) -> tuple[tf.Tensor, tf.Tensor]:
        """(μ_n [B, Q], s_n [B, Q]) of the base Gaussians of a batch (``model.latents``)."""
        return self.latents(values, mask, row_index)

    def training_latents(self) -> tuple[np.ndarray, np.ndarray]:
        """(μ [N, Q], s [N, Q]) of the training rows' base Gaussians, ready for :meth:`predict_y_marginal`."""
        return self.latents.training_latents(self._values, self._mask)

    def latent_samples_and_kl(self, x_mean, x_var, base_noise) -> tuple[tf.Tensor, tf.Tensor]:
        """x ~ q(x_n) [S, B, Q] and KL(q(x_n) ‖ p(x_n)) [B] by the model's ``kl_x`` estimator."""
        return self.kl_x(self.flow, x_mean, x_var, base_noise)

    @check_shapes(
        "Xnew: [batch..., Q]",
        "return[0]: [batch..., D]",
        "return[1]: [batch..., D]",
    )
    def predict_f(self, Xnew, full_cov: bool = False, full_output_cov: bool = False) -> tuple[tf.Tensor, tf.Tensor]:
        """q(f_d(x)) = ∫ p(f_d | u_d, x) q(u_d) du_d at latent points ``Xnew`` [..., Q]: mean, var [..., D]."""
        if full_cov or full_output_cov:
            raise NotImplementedError("GPLVF.predict_f gives marginal variances only (full_cov=full_output_cov=False)")
        x = tf.convert_to_tensor(Xnew, dtype=default_float())
        if x.shape[-1] is not None and x.shape[-1] != self.latent_dim:
            raise ValueError(f"Xnew must have {self.latent_dim} columns (the latent dimension), got shape {x.shape}")
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
        out_shape = tf.concat([tf.shape(x)[:-1], [self.output_dim]], axis=0)
        return tf.reshape(f_mean, out_shape), tf.reshape(f_var, out_shape)

    def predict_y(self, Xnew, full_cov: bool = False, full_output_cov: bool = False) -> tuple[tf.Tensor, tf.Tensor]:
        """Mean and variance [..., D] of y at latent points ``Xnew`` [..., Q] (σ² included), as GPflow's; through
        q(x*) of new rows it is :meth:`predict_y_marginal`."""
        f_mean, f_var = self.predict_f(Xnew, full_cov=full_cov, full_output_cov=full_output_cov)
        return columnwise_predict_mean_and_var(self.likelihood, self.likelihood_columns, Xnew, f_mean, f_var)

    def prior_kl(self, q_sqrt=None) -> tf.Tensor:
        """Σ_d KL(q(u_d) ‖ p(u_d)), closed form (``q_sqrt``: ``self.q_sqrt``'s value, if computed, when not whitened)."""
        if self.whiten:
            return whitened_gauss_kl(self.q_mu, self.q_sqrt)
        q_sqrt = lower_factors(self.q_sqrt) if q_sqrt is None else q_sqrt
        return gpflow.kullback_leiblers.prior_kl(self.inducing_variable, self.kernel, self.q_mu, q_sqrt, whiten=False)

    @check_shapes(
        "values: [B, D]",
        "mask: [B, D]",
        "x_mean: [B, Q]",
        "x_var: [B, Q]",
        "base_noise: [S, B, Q]",
        "return[0]: [B]",
        "return[1]: [B]",
    )
    def row_terms(self, values, mask, x_mean, x_var, base_noise, q_sqrt=None) -> tuple[tf.Tensor, tf.Tensor]:
        """Per-row (E_q log p(y_o | x, u) [B], KL(q(x_n)‖p(x_n)) [B]) from base noise [S, B, Q], with f at the
        observed (row, output) pairs only (eq. 5, 17-21); ``q_sqrt`` as in :meth:`prior_kl`."""
        x, kl_x = self.latent_samples_and_kl(x_mean, x_var, base_noise)  # [S, B, Q], [B]
        q_sqrt = self.q_sqrt if q_sqrt is None else q_sqrt
        gp = (self.inducing_variable, self.kernel, self.q_mu, q_sqrt, self.mean_function, self.whiten)
        expected_log_lik = row_expected_log_likelihood(
            self.variance_by, x, values, mask, gp, self.likelihood, self.likelihood_columns
        )  # [B]
        return expected_log_lik, kl_x

    def elbo_given_base_noise(self, data, base_noise) -> tf.Tensor:
        """The bound (eq. 22-23) for a minibatch of rows with fixed base noise ε [S, B, Q]."""
        values, mask, row_index = data
        values = tf.convert_to_tensor(values, dtype=default_float())
        with tf.name_scope("local_parameters"):  # name scopes: where a profiler trace puts each part's ops
            x_mean, x_var = self.local_parameters(values, mask, row_index)
        with tf.name_scope("q_sqrt"):
            q_sqrt = lower_factors(self.q_sqrt)  # [D, M, M]: its transform once, for both terms
        with tf.name_scope("row_terms"):
            expected_log_lik, kl_x = self.row_terms(values, mask, x_mean, x_var, base_noise, q_sqrt=q_sqrt)
        with tf.name_scope("prior_kl"):
            kl_u = self.prior_kl(q_sqrt)
        scale = tf.cast(self.num_data, default_float()) / tf.cast(tf.shape(values)[0], default_float())
        return scale * tf.reduce_sum(expected_log_lik - kl_x) - kl_u

    def elbo(self, data) -> tf.Tensor:
        """Unbiased minibatch estimate of the bound; ``data`` = (values [B, D], mask [B, D], row index [B])."""
        base_noise = draw_row_keyed_base_noise(
            self.noise_generator, self.num_samples, tf.shape(data[0])[0], self.latent_dim
        )  # [S, B, Q]
        return self.elbo_given_base_noise(data, base_noise)

    def maximum_log_likelihood_objective(self, data) -> tf.Tensor:
        return self.elbo(data)

    # ------------------------------------------------------------------ new rows and prediction through q(x*)
    def encode(self, Y, mask=None) -> tuple[np.ndarray, np.ndarray]:
        """Amortised q(x*) for new partially observed rows: (μ*, s*) from the encoder, no optimisation."""
        if self.encoder is None:
            raise ValueError("no encoder in this GPLVF: fit new rows' q(x*) with gpflow_ext.recipes.gplvf.infer_latent")
        values, observed = check_observations(Y, mask, name="Y_new", num_outputs=self.output_dim)
        return self.latents.training_latents(values, observed)

    def base_noise(self, num_rows: int, num_samples: int = 100, seed: int = 0) -> np.ndarray:
        """The standard-normal base draws ε [J, N*, Q] behind :meth:`predict_y_marginal` and
        :meth:`predict_log_density_marginal` with the same ``num_samples`` and ``seed`` (numpy's
        ``default_rng(seed)``), e.g. to feed an exported ``predict_y_marginal`` (``gpflow_ext.serving``)."""
        num_rows = check_positive_int(num_rows, "num_rows")
        num_samples = check_positive_int(num_samples, "num_samples")
        return np.random.default_rng(seed).standard_normal((num_samples, num_rows, self.latent_dim))

    def latent_draws(self, x_mean, x_var, base_noise) -> tf.Tensor:
        """x* = g(μ* + √s* ε) [J, N*, Q] for base draws ε [J, N*, Q] (in the model's float type)."""
        dtype = default_float()
        x0 = tf.cast(x_mean, dtype) + tf.sqrt(tf.cast(x_var, dtype)) * tf.cast(base_noise, dtype)
        return flow_forward_and_log_det(self.flow, x0)[0]  # [J, N*, Q]

    @check_shapes(
        "x_mean: [N, Q]",
        "x_var: [N, Q]",
        "base_noise: [J, N, Q]",
        "return[0]: [N, D]",
        "return[1]: [N, D]",
    )
    def predict_y_marginal_given_base_noise(self, x_mean, x_var, base_noise) -> tuple[tf.Tensor, tf.Tensor]:
        """Monte Carlo moments of y* over x* = g(μ* + √s* ε) for given base draws ε [J, N*, Q]: mean [N*, D] and
        variance [N*, D] (the likelihood's noise included; total variance over the draws of the likelihood's own
        predictive moments). The graph-friendly core of :meth:`predict_y_marginal`."""
        x = self.latent_draws(x_mean, x_var, base_noise)  # [J, N*, Q]
        y_mean, y_var = self.predict_y(x)  # [J, N*, D] each
        mean = tf.reduce_mean(y_mean, axis=0)
        return mean, tf.reduce_mean(y_var + tf.square(y_mean), axis=0) - tf.square(mean)

    def _row_chunks(self, num_rows: int, num_samples: int):
        """Row ranges small enough that GPflow's conditional ([D, M, J·rows] tiles) stays ~2e7 numbers."""
        size = max(1, int(2e7 // max(1, num_samples * self.output_dim * int(self.inducing_variable.num_inducing))))
        return [(start, min(start + size, num_rows)) for start in range(0, num_rows, size)]

    def predict_y_marginal(
        self, x_mean, x_var, *, num_samples: int = 100, seed: int = 0
    ) -> tuple[tf.Tensor, tf.Tensor]:
        """Moments of p(y* | q(x*)) = ∫ p(y* | x*) q(x*) dx* for every entry of rows with base Gaussians
        (μ* [N*, Q], s* [N*, Q]) pushed through the flow (eq. 33's integrand), by Monte Carlo over
        :meth:`base_noise`: mean [N*, D], var [N*, D] (σ² included). Rows go in chunks to bound memory."""
        x_mean, x_var = check_latents(x_mean, x_var, self.latent_dim)
        noise = self.base_noise(x_mean.shape[0], num_samples, seed)  # [J, N*, Q]
        parts = [
            self.predict_y_marginal_given_base_noise(x_mean[start:stop], x_var[start:stop], noise[:, start:stop])
            for start, stop in self._row_chunks(x_mean.shape[0], num_samples)
        ]  # [n, D] each
        return tf.concat([m for m, _ in parts], axis=0), tf.concat([v for _, v in parts], axis=0)

    def predict_log_density(self, data, full_cov: bool = False, full_output_cov: bool = False) -> tf.Tensor:
        """log p(y_o | x) [N] at latent points: ``data = (X [N, Q], Y [N, D])`` with NaN at unobserved entries;
        through q(x*) of new rows it is :meth:`predict_log_density_marginal`."""
        X, Y = data
        f_mean, f_var = self.predict_f(X, full_cov=full_cov, full_output_cov=full_output_cov)  # [N, D] each
        Y = tf.convert_to_tensor(Y, dtype=f_mean.dtype)
        observed, cols = tf.logical_not(tf.math.is_nan(Y)), self.likelihood_columns
        return masked_predict_log_density(self.likelihood, X, Y, observed, f_mean, f_var, cols)

    def predict_log_density_marginal(
        self, Y_test, x_mean, x_var, *, mask=None, num_samples: int = 100, seed: int = 0
    ) -> tf.Tensor:
        """log p(y*_test | Y) per row [N*] by eq. 33: log 1/J Σ_j Π_{d ∈ test} p(y*_d | x*_j), x*_j ~ q(x*),
        p(y*_d | x) the likelihood's predictive at q(f_d(x)); ``Y_test`` [N*, D]: test entries (NaN elsewhere, or
        ``mask``)."""
        values, observed = self._test_entries(Y_test, mask)
        x_mean, x_var = check_latents(x_mean, x_var, self.latent_dim)
        if x_mean.shape[0] != values.shape[0]:
            raise ValueError(f"x_mean has {x_mean.shape[0]} rows but Y_test has {values.shape[0]}")
        x_all = self.latent_draws(x_mean, x_var, self.base_noise(x_mean.shape[0], num_samples, seed))  # [J, N*, Q]
        out, lik, cols = [], self.likelihood, self.likelihood_columns
        for start, stop in self._row_chunks(values.shape[0], num_samples):
            x = x_all[:, start:stop]  # [J, n, Q]
            f_mean, f_var = self.predict_f(x)  # [J, n, D]
            y = tf.constant(values[None, start:stop], dtype=f_mean.dtype)  # [1, n, D]
            log_dens = masked_predict_log_density(lik, x, y, observed[None, start:stop], f_mean, f_var, cols)
            out.append(tf.reduce_logsumexp(log_dens, axis=0) - float(np.log(num_samples)))  # [n]
        return tf.concat(out, axis=0)  # [N*]

    def _test_entries(self, Y_test, mask):
        entries = check_observations(Y_test, mask, name="Y_test", num_outputs=self.output_dim, allow_empty_rows=True)
        return check_values_in_support(self.likelihood, self.likelihood_columns, *entries, name="Y_test")

    def test_log_likelihood(self, Y_test, x_mean, x_var, *, mask=None, num_samples: int = 100, seed: int = 0) -> float:
        """Eq. 33 summed over rows and divided by the number of test entries (A.6 footnote: averaged)."""
        values, observed = self._test_entries(Y_test, mask)
        per_row = self.predict_log_density_marginal(
            values, x_mean, x_var, mask=observed, num_samples=num_samples, seed=seed
        )
        return float(per_row.numpy().sum() / observed.sum())


@check_training_data.register(GPLVF)
def _check_gplvf_data(model: GPLVF, data) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(values [N, D], mask [N, D], row index [N])`` for :class:`GPLVF`, each observed value in its likelihood's."""
    values, mask, rows = check_rows_with_missing_data(
        data, num_data=model.num_data, output_dim=model.output_dim, model_name=type(model).__name__
    )
    return (*check_values_in_support(model.likelihood, model.likelihood_columns, values, mask, name="data"), rows)
