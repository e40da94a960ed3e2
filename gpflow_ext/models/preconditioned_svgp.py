"""SVGP with the preconditioned 2M-parameter q(u) (Section 2.3, eq. 8–10; Appendix A.1).

Example (paste into a Python session)
-------------------------------------
>>> import numpy as np, gpflow, gpflow_ext
>>> rng = np.random.default_rng(0)
>>> X = rng.normal(size=(500, 50)); Y = np.sin(X[:, :1]) + 0.1 * rng.normal(size=(500, 1))
>>> iv = gpflow_ext.inducing_variables.SubspaceInducingPoints.from_data(X, num_inducing=50, rank=20)
>>> model = gpflow_ext.models.PreconditionedSVGP(
...     gpflow.kernels.SquaredExponential(lengthscales=5.0), gpflow.likelihoods.Gaussian(), iv,
...     num_data=500)
>>> history = gpflow_ext.training.fit(model, (X, Y), epochs=20, batch_size=100, learning_rate=0.05, progress=False)
>>> mean, var = model.predict_f(X[:5])
>>> mean.shape, var.shape
(TensorShape([5, 1]), TensorShape([5, 1]))
"""

from __future__ import annotations

from typing import Any

import gpflow
import numpy as np
import scipy.sparse
import tensorflow as tf
from check_shapes import check_shapes
from gpflow.base import MeanAndVariance
from gpflow.inducing_variables import InducingVariables
from gpflow.kernels import Kernel
from gpflow.likelihoods import Likelihood
from gpflow.mean_functions import MeanFunction, Zero
from gpflow.models import GPModel
from gpflow.models.training_mixins import ExternalDataTrainingLossMixin
from gpflow.models.util import inducingpoint_wrapper

from ..conditionals import preconditioned as preconditioned_moments
from ..inducing_variables.subspace import SubspaceInducingPoints
from ..utilities import to_input_tensor
from ..validation import (
    check_positive_int,
    check_positive_number,
    check_regression_data,
    check_training_data,
    inducing_input_dim,
)
from ..variational.preconditioned import InverseAndLogdet, PreconditionedGaussian

__all__ = ["PreconditionedSVGP"]


def _num_rows(X: Any) -> tf.Tensor:
    if isinstance(X, tf.SparseTensor):
        return X.dense_shape[0]
    return tf.shape(X)[0]


class PreconditionedSVGP(GPModel, ExternalDataTrainingLossMixin):
    """Sparse variational GP with q(u_p) = N(K μ_p, (K⁻¹ + Σ_p⁻¹)⁻¹) for each latent GP p.

    The ELBO (eq. 3 with the KL of eq. 10) is

        Σ_i E_{q(f_i)}[log p(y_i | f_i)] − Σ_p KL[q(u_p) ‖ p(u_p)],

    with the marginals q(f_i) from eq. 9, minibatch-scaled by ``num_data / batch size``.  Only
    K + Σ_p is ever factorised, never K, so float32 works at M in the hundreds.

    :param kernel: any GPflow kernel the inducing variable supports (one kernel shared by the P GPs).
    :param likelihood: any GPflow likelihood (``variational_expectations`` is used).
    :param inducing_variable: :class:`~gpflow_ext.inducing_variables.SubspaceInducingPoints`, plain
        ``InducingPoints`` or a Z array.
    :param num_data: N, the training-set size, for minibatch scaling (None: the batch is the data).
    :param num_latent_gps: P.
    :param sigma_floor: floor of the Σ diagonals.
    :param q_mu: optional initial μ [M, P].
    :param q_sigma: optional initial Σ diagonals [M, P].
    :param inverse_and_logdet: how K + Σ_p is factorised and differentiated
        (:class:`~gpflow_ext.variational.PreconditionedGaussian`; default ``None``: the bound takes the
        closed-form gradient of :func:`~gpflow_ext.variational.preconditioned_inverse_terms`).

    Inputs X may be dense ``[N, D]`` arrays/tensors or ``tf.SparseTensor`` / ``scipy.sparse``
    (with subspace inducing inputs and the kernels they support).
    """

    def __init__(
        self,
        kernel: Kernel,
        likelihood: Likelihood,
        inducing_variable: Any,
        *,
        num_data: int | None = None,
        num_latent_gps: int = 1,
        mean_function: MeanFunction | None = None,
        sigma_floor: float = 1e-6,
        q_mu: Any | None = None,
        q_sigma: Any | None = None,
        inverse_and_logdet: InverseAndLogdet | None = None,
    ):
        if not isinstance(kernel, Kernel):
            raise TypeError(f"`kernel` must be a gpflow.kernels.Kernel, got {type(kernel).__name__}")
        if not isinstance(likelihood, Likelihood):
            raise TypeError(f"`likelihood` must be a gpflow.likelihoods.Likelihood, got {type(likelihood).__name__}")
        num_data = check_positive_int(num_data, "num_data", allow_none=True)
        num_latent_gps = check_positive_int(num_latent_gps, "num_latent_gps")
        check_positive_number(sigma_floor, "sigma_floor", "a positive finite float")
        super().__init__(kernel, likelihood, mean_function, num_latent_gps)
        self.num_data = num_data
        self.inducing_variable: InducingVariables = inducingpoint_wrapper(inducing_variable)
        self.q = PreconditionedGaussian(
            int(self.inducing_variable.num_inducing),
            num_latent_gps,
            sigma_floor=sigma_floor,
            q_mu=q_mu,
            q_sigma=q_sigma,
            inverse_and_logdet=inverse_and_logdet,
        )

    @property
    def q_mu(self) -> gpflow.Parameter:
        """μ [M, P]."""
        return self.q.q_mu

    @property
    def q_sigma(self) -> gpflow.Parameter:
        """Σ diagonals [M, P]."""
        return self.q.q_sigma

    # -- input checks at the boundary (static shapes work inside tf.function too) ----------------
    def _as_inputs(self, X: Any, name: str) -> Any:
        """X as a ``tf.Tensor`` or ``tf.SparseTensor`` [N, D] (sparse only with subspace inducing inputs), after
        checking rank, D and (eagerly) finiteness."""
        if isinstance(X, (np.ndarray, list)) or scipy.sparse.issparse(X):
            if scipy.sparse.issparse(X):
                values = X.data
            else:
                X = np.asarray(X, dtype=np.float64)
                values = X
            if not np.all(np.isfinite(values)):
                raise ValueError(f"`{name}` contains NaN or inf values")
        X = to_input_tensor(X)
        if isinstance(X, tf.SparseTensor) and not isinstance(self.inducing_variable, SubspaceInducingPoints):
            X = tf.sparse.to_dense(X)  # free Z: K(Z, X_b) needs the dense minibatch (B × D, never the whole X)
        if X.shape.rank is not None and X.shape.rank != 2:
            raise ValueError(f"`{name}` must be a 2-D matrix [N, D], got shape {X.shape}")
        iv_shape = self.inducing_variable.shape
        if iv_shape is not None and X.shape[-1] is not None and iv_shape[1] is not None:
            if int(X.shape[-1]) != int(iv_shape[1]):
                raise ValueError(
                    f"`{name}` has {int(X.shape[-1])} columns but the inducing inputs have D = {int(iv_shape[1])}"
                )
        if tf.executing_eagerly():
            values = X.values if isinstance(X, tf.SparseTensor) else X
            if not bool(tf.reduce_all(tf.math.is_finite(values))):
                raise ValueError(f"`{name}` contains NaN or inf values")
        return X

    @check_shapes("return: []")
    def prior_kl(self) -> tf.Tensor:
        """Σ_p KL[q(u_p) ‖ p(u_p)] (eq. 10), from the Cholesky of K + Σ_p only."""
        return preconditioned_moments.prior_kl(
            self.inducing_variable,
            self.kernel,
            q_mu=self.q.q_mu,
            q_sigma=self.q.q_sigma,
            inverse_and_logdet=self.q.inverse_and_logdet,
        )

    @check_shapes("return: []")
    def maximum_log_likelihood_objective(self, data: tuple[Any, Any]) -> tf.Tensor:  # type: ignore[override]
        return self.elbo(data)

    @check_shapes("return: []")
    def elbo(self, data: tuple[Any, Any]) -> tf.Tensor:
        """The evidence lower bound, scaled by num_data / batch size when ``num_data`` is set."""
        X, Y = data
        X = self._as_inputs(X, "X")
        kl, f_mean, f_var = preconditioned_moments.kl_and_marginals(
            self.inducing_variable,
            self.kernel,
            X=X,
            q_mu=self.q.q_mu,
            q_sigma=self.q.q_sigma,
            inverse_and_logdet=self.q.inverse_and_logdet,
        )  # [], [B, P], [B, P]: one factorisation shared by the KL and the marginals
        f_mean = self._add_mean_function(X, f_mean)
        var_exp = self._expected_log_likelihood(X, f_mean, f_var, Y)  # [B]
        if self.num_data is not None:
            scale = tf.cast(self.num_data, kl.dtype) / tf.cast(_num_rows(X), kl.dtype)
        else:
            scale = tf.cast(1.0, kl.dtype)
        return tf.reduce_sum(var_exp) * scale - kl

    @check_shapes(
        "f_mean: [B, P]",
        "f_var: [B, P]",
        "return: [B]",
    )
    def _expected_log_likelihood(self, X: Any, f_mean: tf.Tensor, f_var: tf.Tensor, Y: Any) -> tf.Tensor:
        """Σ over outputs of E_{q(f_i)}[log p(y_i | f_i)] per row: the likelihood's ``variational_expectations``."""
        return self.likelihood.variational_expectations(X, f_mean, f_var, Y)  # [B]

    @check_shapes(  # Xnew: checked by _as_inputs (dense or sparse [N, D]; a ValueError naming it)
        "return[0]: [N, P]",
        "return[1]: [N, P] if not full_cov",
        "return[1]: [P, N, N] if full_cov",
    )
    def predict_f(self, Xnew: Any, full_cov: bool = False, full_output_cov: bool = False) -> MeanAndVariance:
        """q(f) of the P latent GPs at Xnew [N, D] (dense or sparse): mean K_xz μ [N, P] and variance
        k_xx − K_xz(K+Σ_p)⁻¹K_zx ([N, P], floored at 0 against round-off; or [P, N, N] with ``full_cov``)."""
        if full_output_cov:
            raise NotImplementedError(f"{type(self).__name__} has independent latent GPs: full_output_cov=False only")
        Xnew = self._as_inputs(Xnew, "Xnew")
        mean, var = preconditioned_moments.marginals(
            self.inducing_variable, self.kernel, X=Xnew, q_mu=self.q.q_mu, q_sigma=self.q.q_sigma, full_cov=full_cov
        )
        if not full_cov:
            var = tf.maximum(var, 0.0)  # [N, P]
        return self._add_mean_function(Xnew, mean), var

    def _add_mean_function(self, X: Any, mean: tf.Tensor) -> tf.Tensor:
        return mean if isinstance(self.mean_function, Zero) else mean + self.mean_function(X)


@check_training_data.register(PreconditionedSVGP)
def _check_preconditioned_svgp_data(model: PreconditionedSVGP, data: Any) -> tuple[Any, ...]:
    """``(X [N, D], Y [N, P])`` for :class:`PreconditionedSVGP` (what :meth:`~PreconditionedSVGP.elbo` takes):
    dense float X, or ``scipy.sparse`` X with subspace inducing inputs; D from the inducing variable
    (the basis' D for subspace inducing inputs); P = ``num_latent_gps`` for a scalar likelihood."""
    return check_regression_data(
        data,
        input_dim=inducing_input_dim(model.inducing_variable),
        num_latent_gps=int(model.num_latent_gps),
        likelihood=model.likelihood,
        allow_sparse=isinstance(model.inducing_variable, SubspaceInducingPoints),
        model_name=type(model).__name__,
    )
