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
>>> model = gpflow_ext.models.MLGPF.from_method("s-linear", X, Y, num_inducing=8,
...                                             num_latent_gps=3, rank=10)
>>> float(model.elbo(model.prepare_data(X, Y))) < 0.0
True
"""
from typing import Any, Optional, Sequence, Tuple, Union

import gpflow
import numpy as np
import scipy.sparse
import tensorflow as tf
from check_shapes import check_shapes
from gpflow.base import InputData, MeanAndVariance, RegressionData, TensorType
from gpflow.covariances import Kuu
from gpflow.inducing_variables import InducingPoints, InducingVariables
from gpflow.models import GPModel
from gpflow.models.training_mixins import ExternalDataTrainingLossMixin

from ..covariances.subspace import inducing_covariances, to_input_tensor
from ..inducing_variables.subspace import SubspaceInducingPoints
from ..likelihoods.multilabel import DEFAULT_NUM_GAUSS_HERMITE_POINTS, MultiLabelBernoulli
from ..randomness import noise_seed_and_rows, row_uniform
from ..validation import (
    check_input_matrix,
    check_multilabel_labels,
    check_positive_int,
    check_training_data,
    check_data_tuple,
    inducing_input_dim,
)
from ..variational.preconditioned import (
    PreconditionedGaussian,
    preconditioned_conditional,
    preconditioned_kl,
    preconditioned_kl_and_marginals,
)

__all__ = ["MLGPF", "METHODS", "parse_method", "check_multilabel_data", "labels_to_csr"]

#: The paper's variants (Tables 2 and 4): prefix ``s`` = subspace inducing inputs Z = A X̃,
#: ``f`` = inducing inputs kept fixed; kernel ``linear`` or ``se`` (squared exponential).
METHODS = ("s-linear", "linear", "s-se", "se", "sf-linear", "f-linear", "sf-se", "f-se")


def parse_method(method: str) -> Tuple[bool, bool, str]:
    """``"sf-linear"`` -> (subspace=True, trainable=False, kernel="linear")."""
    if not isinstance(method, str) or method.lower() not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)}; got {method!r}")
    method = method.lower()
    prefix, _, kernel = method.rpartition("-")
    return "s" in prefix, "f" not in prefix, kernel


# -----------------------------------------------------------------------------------------
# input checks (at the API boundary, before any tf.function)
# -----------------------------------------------------------------------------------------
def labels_to_csr(Y: Any, num_labels: Optional[int] = None, num_rows: Optional[int] = None) -> scipy.sparse.csr_matrix:
    """Labels as a 0/1 CSR matrix [N, K] from a sparse/dense 0/1 matrix or a list of label-id lists
    (:func:`gpflow_ext.validation.check_multilabel_labels`).

    :raises ValueError: label index < 0 or ≥ ``num_labels``, values other than 0/1, NaN, wrong
        number of rows.
    """
    return check_multilabel_labels(Y, num_labels=num_labels, num_rows=num_rows, name="Y")


def check_multilabel_data(
    X: Any,
    Y: Any,
    num_labels: Optional[int] = None,
    input_dim: Optional[int] = None,
    names: Tuple[str, str] = ("X", "Y"),
) -> Tuple[Union[np.ndarray, scipy.sparse.csr_matrix], scipy.sparse.csr_matrix]:
    """Validate and normalise ``(X, Y)``: X dense array or CSR [N, D] (finite, non-empty,
    ``D == input_dim``; returned as float64), Y 0/1 CSR [N, K] (label ids < ``num_labels``).
    ``names`` name the two arrays in the messages. Raises ValueError/TypeError."""
    if isinstance(X, (tf.Tensor, tf.SparseTensor)):
        raise TypeError(f"{names[0]} must be a numpy array or scipy.sparse matrix (convert tensors with .numpy())")
    X = check_input_matrix(X, names[0], input_dim=input_dim, allow_sparse=True, integer="cast")
    if scipy.sparse.issparse(X):
        X = scipy.sparse.csr_matrix(X, dtype=np.float64)
    else:
        X = X.astype(np.float64, copy=False)
    Y = check_multilabel_labels(Y, num_labels=num_labels, num_rows=X.shape[0], name=names[1])
    return X, Y


def _sparse_labels(Y: Any, num_labels: int, dtype: tf.DType) -> tf.SparseTensor:
    """Labels in a step: tf.SparseTensor passes through; a dense 0/1 tensor becomes sparse."""
    if isinstance(Y, tf.SparseTensor):
        return Y
    if scipy.sparse.issparse(Y):
        return to_input_tensor(Y, dtype)
    Y = tf.convert_to_tensor(Y, dtype=dtype)
    return tf.sparse.from_dense(Y)


# -----------------------------------------------------------------------------------------
# the model
# -----------------------------------------------------------------------------------------
class MLGPF(GPModel, ExternalDataTrainingLossMixin):
    """Multi-label GP factor model (eq. 11-13) trained by the stochastic bound of eq. 23.

    :param kernel: kernel shared by the P latent GPs (``Linear`` or ``SquaredExponential`` in
        the paper; any kernel the inducing variable supports).
    :param inducing_variable: ``SubspaceInducingPoints`` (Z = A X̃) or ``InducingPoints`` (free Z),
        shared by the P latent GPs.
    :param num_labels: K.
    :param num_latent_gps: P.
    :param num_data: N, the training-set size (the minibatch term is scaled by N/|B|).
    :param num_negative_samples: |L_i|, negative labels drawn per instance (uniformly, with
        replacement, from its negatives N_i) and re-weighted by |N_i|/|L_i|; ``None`` or ``≥ K``
        uses every label exactly.
    :param loadings: initial Φ [K, P] (default N(0, 1/P)); ``bias``: initial b [K] (default 0).
    :param q_mu, q_sigma: initial μ, Σ-diagonals [M, P] of the preconditioned q(u_p).
    :param sigma_floor: lower bound on Σ entries (the paper's 1e-6).
    :param num_gauss_hermite_points: quadrature points for the 1-D expectations (eq. 21).
    :param seed: seeds Φ's initialisation and, outside ``fit``, the negative-label sampler (under ``fit``
        the draws are keyed by fit's seed, the step and the row index: :mod:`gpflow_ext.randomness`).

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
        num_negative_samples: Optional[int] = None,
        loadings: Optional[TensorType] = None,
        bias: Optional[TensorType] = None,
        q_mu: Optional[TensorType] = None,
        q_sigma: Optional[TensorType] = None,
        sigma_floor: float = 1e-6,
        num_gauss_hermite_points: int = DEFAULT_NUM_GAUSS_HERMITE_POINTS,
        seed: int = 0,
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
            num_labels, num_latent_gps, loadings, bias, num_gauss_hermite_points, seed=seed
        )
        super().__init__(kernel, likelihood, mean_function=None, num_latent_gps=num_latent_gps)
        self.inducing_variable = inducing_variable
        self.q = PreconditionedGaussian(
            int(inducing_variable.num_inducing), num_latent_gps, sigma_floor, q_mu=q_mu, q_sigma=q_sigma
        )
        self.num_data = int(num_data)
        self.num_labels = int(num_labels)
        if num_negative_samples is not None and num_negative_samples >= num_labels:
            num_negative_samples = None
        self.num_negative_samples = None if num_negative_samples is None else int(num_negative_samples)
        self.input_dim = inducing_input_dim(inducing_variable)
        self._label_sampler = tf.random.Generator.from_seed(seed)

    # -- parameters ----------------------------------------------------------------------
    @property
    def loadings(self) -> gpflow.Parameter:
        """Φ [K, P]."""
        return self.likelihood.loadings

    @property
    def bias(self) -> gpflow.Parameter:
        """b [K]."""
        return self.likelihood.bias

    @property
    def q_mu(self) -> gpflow.Parameter:
        return self.q.q_mu

    @property
    def q_sigma(self) -> gpflow.Parameter:
        return self.q.q_sigma

    # -- data ----------------------------------------------------------------------------
    def prepare_data(self, X: Any, Y: Any) -> Tuple[Any, scipy.sparse.csr_matrix]:
        """Check ``(X, Y)`` against this model (D, K, NaN, 0/1 labels) and normalise them:
        X as float64 numpy or CSR, Y as 0/1 CSR. Pass the result to ``fit``/``elbo``."""
        return check_multilabel_data(X, Y, num_labels=self.num_labels, input_dim=self.input_dim)

    def _inputs(self, X: Any) -> Union[tf.Tensor, tf.SparseTensor]:
        X = to_input_tensor(X, gpflow.default_float())
        if isinstance(X, tf.SparseTensor) and not isinstance(self.inducing_variable, SubspaceInducingPoints):
            # free Z: K(Z, X_b) needs the dense minibatch (B x D per step, never the whole X)
            X = tf.sparse.to_dense(X)
        return X

    # -- the maths -----------------------------------------------------------------------
    def prior_kl(self) -> tf.Tensor:
        """Σ_p KL[q(u_p) ‖ p(u_p)] (eq. 22), Cholesky of K + Σ_p only."""
        Kmm = Kuu(self.inducing_variable, self.kernel)  # [M, M]
        return preconditioned_kl(Kmm, self.q_mu, self.q_sigma)

    def predict_latent(self, Xnew: Any, full_cov: bool = False) -> MeanAndVariance:
        """Marginals of q(h_p(x)) (eq. 18-19): mean k(x,Z) μ_p, variance k(x,x) − k(x,Z)(K+Σ_p)⁻¹k(Z,x)."""
        X = self._inputs(Xnew)
        Kmm, Kmn, Knn = inducing_covariances(self.inducing_variable, self.kernel, X, full_cov=full_cov)
        mean, var = preconditioned_conditional(
            Kmn, Kmm, Knn, self.q_mu, self.q_sigma, full_cov=full_cov
        )  # [N, P], [N, P] or [P, N, N]
        if not full_cov:
            var = tf.maximum(var, 0.0)
        return mean, var

    def predict_f(
        self, Xnew: InputData, full_cov: bool = False, full_output_cov: bool = False
    ) -> MeanAndVariance:
        """The P latent GPs at Xnew (mean [N, P], variance [N, P]); see :meth:`predict_utilities`
        for the K label scores."""
        if full_output_cov:
            raise NotImplementedError("the latent GPs are independent a posteriori: full_output_cov is not available")
        return self.predict_latent(Xnew, full_cov=full_cov)

    def predict_utilities(self, Xnew: Any) -> tf.Tensor:
        """Mean utilities f̄ = Φ m* + b [N, K] (Appendix A.3), the scores ranked by P@k."""
        mean, _ = self.predict_latent(Xnew)
        return self.likelihood.mean_utilities(mean)

    def predict_probabilities(self, Xnew: Any) -> tf.Tensor:
        """p(y_k = 1 | x) = E_{q(f_k)}[σ(f_k)] [N, K] by Gauss-Hermite quadrature."""
        mean, var = self.predict_latent(Xnew)
        probabilities, _ = self.likelihood.predict_mean_and_var(None, mean, var)
        return probabilities

    def predict_top_k(self, Xnew: Any, k: int = 5, batch_size: int = 1000) -> np.ndarray:
        """Label ids of the k highest mean utilities per row [N, k] (best first).

        Works in row batches, so only ``batch_size × K`` scores exist at a time."""
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= k <= self.num_labels:
            raise ValueError(f"k must be an integer in [1, num_labels={self.num_labels}], got {k!r}")
        batch_size = check_positive_int(batch_size, "batch_size")
        X, _ = check_multilabel_data(Xnew, scipy.sparse.csr_matrix((_num_rows(Xnew), self.num_labels)),
                                     self.num_labels, self.input_dim, names=("Xnew", "Y"))
        out = []
        for start in range(0, X.shape[0], batch_size):
            scores = self._scores(X[start : start + batch_size])
            out.append(tf.math.top_k(scores, k=k).indices.numpy())
        return np.concatenate(out, axis=0)

    @tf.function(reduce_retracing=True)
    def _scores_compiled(self, X: Any) -> tf.Tensor:
        return self.predict_utilities(X)

    def _scores(self, X: Any) -> tf.Tensor:
        return self._scores_compiled(to_input_tensor(X, gpflow.default_float()))

    def evaluate(self, X: Any, Y: Any, ks: Sequence[int] = (1, 3, 5), batch_size: int = 1000) -> dict:
        """P@k and nDCG@k (in %, as the paper reports) of the mean-utility ranking on (X, Y)."""
        X, Y = self.prepare_data(X, Y)
        top = self.predict_top_k(X, k=max(ks), batch_size=batch_size)
        return ranking_metrics(top, Y, ks)

    # -- the bound -----------------------------------------------------------------------
    def elbo(self, data: RegressionData) -> tf.Tensor:
        """The stochastic lower bound of eq. 23 on a minibatch ``(X_b, Y_b)`` (eq. 20 when every
        negative label is used): ``N/|B| Σ_i [Σ_{k∈P_i} E log σ(f_ik) + |N_i|/|L_i| Σ_{ℓ∈L_i}
        E log σ(−f_iℓ)] − Σ_p KL[q(u_p) ‖ p(u_p)]``."""
        X, Y = data
        if tf.executing_eagerly() and (isinstance(X, np.ndarray) or scipy.sparse.issparse(X)):
            X, Y = self.prepare_data(X, Y)
        X = self._inputs(X)
        labels = _sparse_labels(Y, self.num_labels, gpflow.default_float())
        Kmm, Kmn, Knn = inducing_covariances(self.inducing_variable, self.kernel, X)  # [M, M], [M, B], [B]
        kl, h_mean, h_var = preconditioned_kl_and_marginals(
            Kmn, Kmm, Knn, self.q_mu, self.q_sigma
        )  # [], [B, P], [B, P]: one Cholesky and one L⁻¹ per step
        h_var = tf.maximum(h_var, 0.0)
        uniform = None
        if self.num_negative_samples is not None:  # per-row draws keyed by (seed, step, row index): see
            # gpflow_ext.randomness (fit's seed and step; outside fit a fresh seed from the model's generator)
            seed, rows = noise_seed_and_rows(self._label_sampler, tf.shape(h_mean)[0])
            uniform = row_uniform(seed, rows, self.num_negative_samples, h_mean.dtype)  # [B, S]
        per_row = self.likelihood.sparse_variational_expectations(
            h_mean, h_var, labels, self.num_negative_samples, uniform
        )  # [B]
        scale = tf.cast(self.num_data, kl.dtype) / tf.cast(tf.shape(h_mean)[0], kl.dtype)
        return scale * tf.reduce_sum(per_row) - kl

    def maximum_log_likelihood_objective(self, data: RegressionData) -> tf.Tensor:
        return self.elbo(data)

    # -- the paper's variants --------------------------------------------------------------
    @classmethod
    def from_method(
        cls,
        method: str,
        X: Any,
        Y: Any,
        num_inducing: int = 500,
        num_latent_gps: int = 30,
        rank: int = 1000,
        num_negative_samples: Optional[int] = None,
        kmeans_max_iter: int = 10,
        seed: int = 0,
        **kwargs: Any,
    ) -> "MLGPF":
        """Build one of the paper's eight variants (Tables 2 and 4) from the training data.

        ``s-linear``/``s-se``: subspace inducing inputs Z = A X̃ (X̃: ``rank`` leading right-singular
        vectors of X; A: k-means on U·S), A optimised; ``linear``/``se``: free Z initialised by a
        few k-means iterations on X, Z optimised; ``sf-*``/``f-*``: the same with A / Z kept fixed.

        Initialisation (not given in the paper, chosen here): the linear kernel's variance is
        1/mean‖x‖² so that k(x, x) ≈ 1; the SE lengthscale is the median distance between 1 000
        random training rows; b_k = logit of label k's training frequency; Φ ~ N(0, 1/P).
        """
        subspace, trainable, kernel_name = parse_method(method)
        X, Y = check_multilabel_data(X, Y)
        N, D = X.shape
        K = Y.shape[1]
        rng = np.random.default_rng(seed)
        sq_norms = np.asarray(X.multiply(X).sum(axis=1)).ravel() if scipy.sparse.issparse(X) else np.sum(X**2, axis=1)
        if kernel_name == "linear":
            kernel = gpflow.kernels.Linear(variance=1.0 / max(float(np.mean(sq_norms)), 1e-12))
        else:
            kernel = gpflow.kernels.SquaredExponential(
                variance=1.0, lengthscales=_median_distance(X, sq_norms, rng)
            )
        if subspace:
            inducing_variable = SubspaceInducingPoints.from_data(
                X,
                num_inducing=num_inducing,
                rank=min(rank, min(N, D)),
                seed=seed,
                trainable_A=trainable,
                kmeans_max_iter=kmeans_max_iter,
            )
        else:
            from sklearn.cluster import KMeans

            centres = KMeans(
                n_clusters=num_inducing, n_init=1, max_iter=kmeans_max_iter, random_state=seed
            ).fit(X).cluster_centers_
            inducing_variable = InducingPoints(centres)
            gpflow.set_trainable(inducing_variable, trainable)
        frequency = np.clip(np.asarray(Y.sum(axis=0)).ravel() / N, 0.5 / N, 1.0 - 0.5 / N)
        kwargs.setdefault("bias", np.log(frequency) - np.log1p(-frequency))
        return cls(
            kernel,
            inducing_variable,
            num_labels=K,
            num_latent_gps=num_latent_gps,
            num_data=N,
            num_negative_samples=num_negative_samples,
            seed=seed,
            **kwargs,
        )


def _num_rows(X: Any) -> int:
    return X.shape[0] if hasattr(X, "shape") else len(X)


def _median_distance(X: Any, sq_norms: np.ndarray, rng: np.random.Generator, sample: int = 1000) -> float:
    rows = rng.choice(X.shape[0], size=min(sample, X.shape[0]), replace=False)
    sub = X[rows]
    inner = sub @ sub.T
    inner = inner.toarray() if scipy.sparse.issparse(inner) else inner
    sq = sq_norms[rows]
    dist2 = np.maximum(sq[:, None] + sq[None, :] - 2.0 * inner, 0.0)
    upper = dist2[np.triu_indices(len(rows), k=1)]
    median = float(np.sqrt(np.median(upper))) if upper.size else 1.0
    return median if median > 0 else 1.0


def ranking_metrics(top: np.ndarray, Y: scipy.sparse.csr_matrix, ks: Sequence[int] = (1, 3, 5)) -> dict:
    """P@k and nDCG@k in % (as the paper reports) from top-k label ids [N, ≥max(ks)] (best first)
    and 0/1 CSR labels, through :mod:`gpflow_ext.metrics`."""
    from .. import metrics

    top = np.asarray(top, dtype=np.int64)
    out = {}
    for k in ks:
        out[f"P@{k}"] = 100.0 * metrics.precision_at_k(Y, top, k, y_pred_is_indices=True)
        out[f"nDCG@{k}"] = 100.0 * metrics.ndcg_at_k(Y, top, k, y_pred_is_indices=True)
    return out


@check_training_data.register(MLGPF)
def _check_mlgpf_data(model: MLGPF, data: Any) -> Tuple[Any, ...]:
    """``(X, Y)`` for :class:`MLGPF`, normalised by :meth:`MLGPF.prepare_data`'s rules: X float64 dense or CSR
    with the inducing inputs' D; Y a 0/1 CSR matrix [N, K] (from a dense or sparse 0/1 matrix, or lists of
    label ids). Values other than 0/1 (e.g. 0.5) are refused, never read as positives."""
    X, Y = check_data_tuple(data, ("X", "Y"), type(model).__name__)
    return check_multilabel_data(
        X, Y, num_labels=model.num_labels, input_dim=model.input_dim, names=("data[0] (X)", "data[1] (Y)")
    )
