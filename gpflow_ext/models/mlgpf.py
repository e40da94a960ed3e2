"""MLGPF: the multi-label GP factor model (Section 3; Appendix A.1-A.3).

*Fully scalable Gaussian processes using subspace inducing inputs.* ``P`` latent GPs
``h_p ~ GP(0, k)`` (eq. 11) share one kernel and one inducing variable (subspace
``Z = A X̃`` or free ``Z``); the ``K`` label utilities are ``f_i = Φ h_i + b`` (eq. 12) and
each label is Bernoulli-logit (eq. 13). Every ``q(u_p)`` is the preconditioned 2M-parameter
Gaussian ``m_p = K μ_p``, ``S_p = (K⁻¹ + Σ_p⁻¹)⁻¹`` (eq. 17), so the bound (eq. 20/23) needs
only the Cholesky factors of ``K + Σ_p``.

Example
-------
>>> import numpy as np, scipy.sparse as sp, gpflow, gpflow_ext
>>> rng = np.random.default_rng(0)
>>> X = sp.random(60, 40, density=0.2, format="csr", random_state=0)
>>> Y = sp.random(60, 12, density=0.15, format="csr", random_state=1); Y.data[:] = 1.0
>>> iv = gpflow_ext.inducing_variables.SubspaceInducingPoints.from_data(X, num_inducing=8, rank=10)
>>> model = gpflow_ext.models.MLGPF(gpflow.kernels.Linear(), iv, num_labels=12, num_latent_gps=3,
...                                 num_data=60)
>>> float(model.elbo(model.prepare_data(X, Y))) < 0.0
True
>>> mean, var = model.predict_f(X[:5])               # the P latent GPs, GPflow's contract
>>> mean.shape, model.predict_utilities(X[:5]).shape  # the K label scores
(TensorShape([5, 3]), TensorShape([5, 12]))

The paper's eight variants (Tables 2 and 4) and their initialisation are in
:mod:`gpflow_ext.recipes.mlgpf` (``build_mlgpf(paper_config("s-linear"), X, Y)``).
"""

from collections.abc import Sequence
from typing import Any

import gpflow
import numpy as np
import scipy.sparse
import tensorflow as tf
from check_shapes import check_shapes, inherit_check_shapes
from gpflow.base import RegressionData, TensorType
from gpflow.inducing_variables import InducingVariables

from ..likelihoods.multilabel import DEFAULT_NUM_GAUSS_HERMITE_POINTS, MultiLabelBernoulli
from ..likelihoods.multilabel_dense import dense_multilabel_expected_log_likelihood
from ..metrics import ranking_metrics
from ..randomness import noise_seed_and_rows, row_uniform
from ..utilities import to_input_tensor
from ..validation import (
    check_data_tuple,
    check_multilabel_data,
    check_positive_int,
    check_training_data,
    inducing_input_dim,
)
from ..variational.preconditioned import InverseAndLogdet
from .preconditioned_svgp import PreconditionedSVGP

__all__ = ["MLGPF"]


@check_shapes(
    "Y: [B, K]",
)
def _sparse_labels(Y: Any, num_labels: int, dtype: tf.DType) -> tf.SparseTensor:
    """Labels in a step: tf.SparseTensor passes through; a dense 0/1 tensor becomes sparse."""
    if isinstance(Y, tf.SparseTensor):
        return Y
    if scipy.sparse.issparse(Y):
        return to_input_tensor(Y, dtype)
    Y = tf.convert_to_tensor(Y, dtype=dtype)
    return tf.sparse.from_dense(Y)


class MLGPF(PreconditionedSVGP):
    """Multi-label GP factor model (eq. 11-13) trained by the stochastic bound of eq. 23.

    A :class:`~gpflow_ext.models.PreconditionedSVGP` with P latent GPs (the preconditioned q(u_p), its KL
    and the marginals q(h_p(x)) of eq. 17-19 come from there) whose likelihood is the multi-label
    Bernoulli of :class:`~gpflow_ext.likelihoods.MultiLabelBernoulli`; this class adds the label-sparse
    data term of eq. 23, label ranking and the multi-label data checks.

    :param kernel: kernel shared by the P latent GPs (``Linear`` or ``SquaredExponential`` in
        the paper; any kernel the inducing variable supports).
    :param inducing_variable: ``SubspaceInducingPoints`` (Z = A X̃) or ``InducingPoints`` (free Z),
        shared by the P latent GPs.
    :param num_labels: K.
    :param num_latent_gps: P.
    :param num_data: N, the training-set size (the minibatch term is scaled by ``N/|B|``).
    :param num_negative_samples: ``|L_i|``, negative labels drawn per instance (uniformly, with
        replacement, from its negatives N_i) and re-weighted by ``|N_i|/|L_i|``; ``None`` or ``≥ K``
        uses every label exactly.
    :param loadings: initial Φ [K, P] (default N(0, 1/P)); ``bias``: initial b [K] (default 0).
    :param independent_labels: Φ = I, not trained (requires P = K and no ``loadings``): one latent GP per
        label, f_ik = h_ik + b_k; with a linear kernel this is Bayesian one-vs-rest logistic regression.
    :param q_mu: initial μ [M, P] of the preconditioned q(u_p).
    :param q_sigma: initial Σ-diagonals [M, P] of the preconditioned q(u_p).
    :param sigma_floor: lower bound on Σ entries (the paper's 1e-6).
    :param inverse_and_logdet: how K + Σ_p is factorised and differentiated (see
        :class:`~gpflow_ext.models.PreconditionedSVGP`).
    :param num_gauss_hermite_points: quadrature points for the 1-D expectations (eq. 21).
    :param latent_scales: fixed output scales s [P] (not trained; default none): latent GP p is s_p g_p with
        g_p ~ GP(0, k), so its prior covariance is s_p² k. With ``independent_labels`` these are label-wise prior
        variances σ_k² = s_k² σ² of a linear kernel with variance σ². q(u_p) is that of g_p, so the KL is
        unchanged and the moments of h_p are s_p m_p, s_p² v_p.
    :param seed: seeds Φ's initialisation and, outside ``fit``, the negative-label sampler (under ``fit``
        the draws are keyed by fit's seed, the step and the row index: :mod:`gpflow_ext.randomness`).

    Predictions follow GPflow's contracts: :meth:`predict_f` is q(h) of the **P latent GPs** (the
    function values the likelihood consumes, as in every GPflow model: ``predict_y`` =
    ``likelihood.predict_mean_and_var(predict_f)``), and :meth:`predict_y` the K label probabilities
    E[σ(f_k)] with their Bernoulli variances. The K label scores f̄ = Φ m + b that P@k ranks are
    :meth:`predict_utilities`.

    Data for :meth:`elbo` / ``training_loss`` is ``(X, Y)``: X dense ``[B, D]`` or a
    ``tf.SparseTensor`` (what ``gpflow_ext.training.fit`` makes of CSR rows), Y a
    ``tf.SparseTensor`` ``[B, K]`` of positive labels (or a dense 0/1 tensor for small K).
    """

    def __init__(
        self,
        kernel: gpflow.kernels.Kernel,
        inducing_variable: InducingVariables,
        num_labels: int,
        num_latent_gps: int,
        num_data: int,
        num_negative_samples: int | None = None,
        loadings: TensorType | None = None,
        bias: TensorType | None = None,
        q_mu: TensorType | None = None,
        q_sigma: TensorType | None = None,
        sigma_floor: float = 1e-6,
        num_gauss_hermite_points: int = DEFAULT_NUM_GAUSS_HERMITE_POINTS,
        seed: int = 0,
        independent_labels: bool = False,
        inverse_and_logdet: InverseAndLogdet | None = None,
        latent_scales: TensorType | None = None,
    ) -> None:
        if not isinstance(kernel, gpflow.kernels.Kernel):
            raise TypeError(f"kernel must be a gpflow.kernels.Kernel, got {type(kernel).__name__}")
        if not isinstance(inducing_variable, InducingVariables):
            raise TypeError(
                "inducing_variable must be a gpflow InducingVariables (SubspaceInducingPoints or "
                f"InducingPoints), got {type(inducing_variable).__name__}"
            )
        num_data = check_positive_int(num_data, "num_data")
        num_negative_samples = check_positive_int(num_negative_samples, "num_negative_samples", allow_none=True)
        likelihood = MultiLabelBernoulli(
            num_labels,
            num_latent_gps,
            loadings,
            bias,
            num_gauss_hermite_points,
            seed=seed,
            independent_labels=independent_labels,
        )
        super().__init__(
            kernel,
            likelihood,
            inducing_variable,
            num_data=num_data,
            num_latent_gps=num_latent_gps,
            sigma_floor=sigma_floor,
            q_mu=q_mu,
            q_sigma=q_sigma,
            inverse_and_logdet=inverse_and_logdet,
        )
        self.num_labels = int(num_labels)
        if num_negative_samples is not None and num_negative_samples >= num_labels:
            num_negative_samples = None
        self.num_negative_samples = None if num_negative_samples is None else int(num_negative_samples)
        self.input_dim = inducing_input_dim(inducing_variable)
        self.latent_scales = (
            None
            if latent_scales is None
            else gpflow.Parameter(_checked_scales(latent_scales, num_latent_gps), trainable=False, name="latent_scales")
        )  # s [P]
        self._label_sampler = tf.random.Generator.from_seed(seed)

    # -- parameters ----------------------------------------------------------------------
    @property
    def loadings(self) -> gpflow.Parameter | None:
        """Φ [K, P] (None with ``independent_labels``: Φ = I)."""
        return self.likelihood.loadings

    @property
    def bias(self) -> gpflow.Parameter:
        """b [K]."""
        return self.likelihood.bias

    # -- data ----------------------------------------------------------------------------
    @check_shapes(
        "return[0]: [N, D]",
        "return[1]: [N, K]",
    )
    def prepare_data(self, X: Any, Y: Any) -> tuple[Any, scipy.sparse.csr_matrix]:
        """Check ``(X, Y)`` against this model (D, K, NaN, 0/1 labels) and normalise them:
        X as float64 numpy or CSR [N, D], Y as 0/1 CSR [N, K]. The arguments' shapes are not declared:
        they are what is being checked (Y may be lists of label ids), with ValueErrors that name them.
        Pass the result to ``fit``/``elbo``."""
        return check_multilabel_data(X, Y, num_labels=self.num_labels, input_dim=self.input_dim)

    # -- predictions ---------------------------------------------------------------------
    @inherit_check_shapes
    def predict_f(
        self, Xnew: Any, full_cov: bool = False, full_output_cov: bool = False
    ) -> tuple[tf.Tensor, tf.Tensor]:
        """q(h) of the P latent GPs at Xnew: :meth:`PreconditionedSVGP.predict_f`'s moments, times ``latent_scales``
        (s m, s² v) when they are set."""
        mean, var = super().predict_f(Xnew, full_cov=full_cov, full_output_cov=full_output_cov)
        if self.latent_scales is None:
            return mean, var
        scales = tf.convert_to_tensor(self.latent_scales)  # [P]
        return mean * scales, var * (scales[:, None, None] ** 2 if full_cov else scales**2)

    @check_shapes(  # Xnew [N, D], dense or sparse: checked by _as_inputs, as in predict_f
        "return: [N, K]",
    )
    def predict_utilities(self, Xnew: Any) -> tf.Tensor:
        """Mean utilities f̄ = Φ m* + b [N, K] (Appendix A.3), the scores ranked by P@k."""
        mean, _ = self.predict_f(Xnew)  # [N, P]
        return self.likelihood.mean_utilities(mean)  # [N, K]

    @check_shapes(
        "return: [N, K]",
    )
    def predict_probabilities(self, Xnew: Any) -> tf.Tensor:
        """p(y_k = 1 | x) = E_{q(f_k)}[σ(f_k)] [N, K] by Gauss-Hermite quadrature (the mean of :meth:`predict_y`)."""
        mean, _ = self.predict_y(Xnew)  # [N, K]
        return mean

    @check_shapes(
        "return: [N, k]",
    )
    def predict_top_k(self, Xnew: Any, k: int = 5, batch_size: int = 1000, by_probability: bool = False) -> np.ndarray:
        """Label ids of the k highest mean utilities per row [N, k] (best first); with ``by_probability``, of the k
        highest p(y_k = 1 | x) (:meth:`predict_probabilities`: the order that maximises the expected P@k under
        the model, where f_k's variance moves the order as well as its mean).

        Works in row batches, so only ``batch_size × K`` scores exist at a time."""
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= k <= self.num_labels:
            raise ValueError(f"k must be an integer in [1, num_labels={self.num_labels}], got {k!r}")
        batch_size = check_positive_int(batch_size, "batch_size")
        X, _ = check_multilabel_data(
            Xnew,
            scipy.sparse.csr_matrix((_num_rows(Xnew), self.num_labels)),
            self.num_labels,
            self.input_dim,
            names=("Xnew", "Y"),
        )
        out = []
        for start in range(0, X.shape[0], batch_size):
            scores = self._scores(X[start : start + batch_size], by_probability)  # [b, K]
            out.append(tf.math.top_k(scores, k=k).indices.numpy())  # [b, k]
        return np.concatenate(out, axis=0)

    @check_shapes(
        "return: [N, K]",
    )
    def ranking_scores(self, Xnew: Any, by_probability: bool = False) -> tf.Tensor:
        """The scores labels are ranked by [N, K]: :meth:`predict_utilities`, or with ``by_probability``
        :meth:`predict_probabilities`."""
        return self.predict_probabilities(Xnew) if by_probability else self.predict_utilities(Xnew)

    @tf.function(reduce_retracing=True)
    def _scores_compiled(self, X: Any, by_probability: bool) -> tf.Tensor:  # one trace per value of the flag
        return self.ranking_scores(X, by_probability)

    def _scores(self, X: Any, by_probability: bool = False) -> tf.Tensor:
        return self._scores_compiled(to_input_tensor(X, gpflow.default_float()), by_probability)

    def evaluate(
        self, X: Any, Y: Any, ks: Sequence[int] = (1, 3, 5), batch_size: int = 1000, by_probability: bool = False
    ) -> dict:
        """P@k and nDCG@k (in %, as the paper reports) of the mean-utility ranking (with ``by_probability``, the
        ranking by p(y_k = 1 | x)) on X [N, D] and Y [N, K] (0/1 labels or lists of label ids). No
        ``check_shapes``: the result is a dict and the arguments are checked by :meth:`prepare_data`, with
        messages that name them."""
        X, Y = self.prepare_data(X, Y)
        top = self.predict_top_k(X, k=max(ks), batch_size=batch_size, by_probability=by_probability)
        return ranking_metrics(top, Y, ks)

    # -- the bound -----------------------------------------------------------------------
    @check_shapes("return: []")
    def elbo(self, data: RegressionData) -> tf.Tensor:
        """The stochastic lower bound of eq. 23 on a minibatch ``(X_b, Y_b)`` (eq. 20 when every
        negative label is used): ``N/|B| Σ_i [Σ_{k∈P_i} E log σ(f_ik) + |N_i|/|L_i| Σ_{ℓ∈L_i}
        E log σ(−f_iℓ)] − Σ_p KL[q(u_p) ‖ p(u_p)]``; the KL and q(h) are
        :meth:`PreconditionedSVGP.elbo`'s, the data term :meth:`_expected_log_likelihood`."""
        X, Y = data
        if tf.executing_eagerly() and (isinstance(X, np.ndarray) or scipy.sparse.issparse(X)):
            X, Y = self.prepare_data(X, Y)
        return super().elbo((X, Y))

    @inherit_check_shapes
    def _expected_log_likelihood(self, X: Any, f_mean: tf.Tensor, f_var: tf.Tensor, Y: Any) -> tf.Tensor:
        """Per row: Σ_{k∈P_i} E log σ(f_ik) + |N_i|/|L_i| Σ_{ℓ∈L_i} E log σ(−f_iℓ) over the sparse labels (a dense
        0/1 tensor Y [B, K], e.g. in a ``jit_compile`` step, takes the same numbers' fixed-shape formulation)."""
        h_var = tf.maximum(f_var, 0.0)  # [B, P]
        if self.latent_scales is not None:  # h_p = s_p g_p: the bound's marginals are those of g_p
            scales = tf.convert_to_tensor(self.latent_scales)  # [P]
            f_mean, h_var = f_mean * scales, h_var * tf.square(scales)  # [B, P] each
        uniform = None
        if self.num_negative_samples is not None:  # per-row draws keyed by (seed, step, row index): see
            # gpflow_ext.randomness (fit's seed and step; outside fit a fresh seed from the model's generator)
            seed, rows = noise_seed_and_rows(self._label_sampler, tf.shape(f_mean)[0])
            uniform = row_uniform(seed, rows, self.num_negative_samples, f_mean.dtype)  # [B, S]
        if isinstance(Y, tf.Tensor):
            likelihood = self.likelihood
            return dense_multilabel_expected_log_likelihood(
                f_mean,
                h_var,
                likelihood.loadings,
                likelihood.bias,
                Y,
                self.num_negative_samples,
                likelihood.num_gauss_hermite_points,
                uniform,
            )  # [B]
        labels = _sparse_labels(Y, self.num_labels, gpflow.default_float())
        return self.likelihood.sparse_variational_expectations(
            f_mean, h_var, labels, self.num_negative_samples, uniform
        )  # [B]


def _checked_scales(scales: TensorType, num_latent_gps: int) -> np.ndarray:
    """``latent_scales`` as a float array [P] of positive finite values, or a ValueError naming it."""
    values = np.asarray(scales, dtype=gpflow.default_float())
    if values.shape != (num_latent_gps,):
        raise ValueError(f"latent_scales must have shape [num_latent_gps] = [{num_latent_gps}], got {values.shape}")
    if not np.all(np.isfinite(values)) or np.any(values <= 0):
        raise ValueError("latent_scales must be positive and finite")
    return values


def _num_rows(X: Any) -> int:
    return X.shape[0] if hasattr(X, "shape") else len(X)


@check_training_data.register(MLGPF)
def _check_mlgpf_data(model: MLGPF, data: Any) -> tuple[Any, ...]:
    """``(X, Y)`` for :class:`MLGPF`, normalised by :meth:`MLGPF.prepare_data`'s rules: X float64 dense or CSR
    with the inducing inputs' D; Y a 0/1 CSR matrix [N, K] (from a dense or sparse 0/1 matrix, or lists of
    label ids). Values other than 0/1 (e.g. 0.5) are refused, never read as positives."""
    X, Y = check_data_tuple(data, ("X", "Y"), type(model).__name__)
    return check_multilabel_data(
        X, Y, num_labels=model.num_labels, input_dim=model.input_dim, names=("data[0] (X)", "data[1] (Y)")
    )
