"""The preconditioned q(u)'s KL and marginals q(f(x)), dispatched on (inducing variable, kernel).

*Fully scalable Gaussian processes using subspace inducing inputs*, eq. 8-10 and 17-19. The generic
implementation forms K_ZZ, K_ZX, k(x, x) and factorises K + Σ_p (O(P M³),
:mod:`gpflow_ext.variational.preconditioned`). For :class:`~gpflow_ext.inducing_variables.BasisInducingPoints`
(Z = X̃ orthonormal) under a ``Linear`` kernel K_ZZ = σ² I, so with c = X X̃ᵀ [B, R] and
d_p = 1 / (σ² + Σ_p) [R]:

    mean_p = σ² c μ_p,     var_p = σ² ‖x‖² − σ⁴ (c ∘ c) d_p,
    KL_p = ½ σ² ‖μ_p‖² − ½ σ² Σ_r d_pr + ½ Σ_r log(σ² + Σ_pr) − ½ Σ_r log Σ_pr,

exactly eq. 9-10 with a diagonal K: O(B·R·P) per step and no factorisation at all.

``prior_kl`` and ``kl_and_marginals`` take ``inverse_and_logdet`` (the q(u)'s
:attr:`~gpflow_ext.variational.PreconditionedGaussian.inverse_and_logdet`): how the generic path factorises
K + Σ_p and differentiates that factorisation (``None``: ``kl_and_marginals`` takes the closed-form gradient of
:func:`~gpflow_ext.variational.preconditioned_inverse_terms` and ``prior_kl`` differentiates
:func:`~gpflow_ext.utilities.cholesky_inverse_and_logdet`). The diagonal path has nothing to factorise and
ignores it.
"""

from typing import Any

import tensorflow as tf
from gpflow.covariances import Kuu
from gpflow.inducing_variables import InducingVariables
from gpflow.kernels import Kernel, Linear, Polynomial
from gpflow.utilities import Dispatcher

from ..covariances.subspace import Kff, inducing_covariances, project_inputs
from ..inducing_variables.basis import BasisInducingPoints
from ..variational.preconditioned import (
    InverseAndLogdet,
    preconditioned_conditional,
    preconditioned_kl,
    preconditioned_kl_and_marginals,
)

__all__ = ["prior_kl", "kl_and_marginals", "marginals"]

# Each dispatches on (inducing variable, kernel); the other arguments are keywords.
#: ``prior_kl(inducing_variable, kernel, *, q_mu, q_sigma[, inverse_and_logdet]) -> Σ_p KL[q(u_p) ‖ p(u_p)]``
#: (eq. 10).
prior_kl = Dispatcher("preconditioned_prior_kl")
#: ``kl_and_marginals(inducing_variable, kernel, *, X, q_mu, q_sigma[, inverse_and_logdet])
#: -> (KL, mean [B, P], var [B, P])``.
kl_and_marginals = Dispatcher("preconditioned_kl_and_marginals")
#: ``marginals(inducing_variable, kernel, *, X, q_mu, q_sigma, full_cov) -> (mean [N, P], var)`` (eq. 9).
marginals = Dispatcher("preconditioned_marginals")


# -- any inducing variable and kernel: dense K_ZZ and one batched Cholesky of K + Σ_p --------------
@prior_kl.register(InducingVariables, Kernel)
def _prior_kl_dense(
    inducing_variable: Any,
    kernel: Kernel,
    *,
    q_mu: tf.Tensor,
    q_sigma: tf.Tensor,
    inverse_and_logdet: InverseAndLogdet | None = None,
) -> tf.Tensor:
    return preconditioned_kl(Kuu(inducing_variable, kernel), q_mu, q_sigma, inverse_and_logdet=inverse_and_logdet)


@kl_and_marginals.register(InducingVariables, Kernel)
def _kl_and_marginals_dense(
    inducing_variable: Any,
    kernel: Kernel,
    *,
    X: Any,
    q_mu: tf.Tensor,
    q_sigma: tf.Tensor,
    inverse_and_logdet: InverseAndLogdet | None = None,
) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
    Kmm, Kmn, Knn = inducing_covariances(inducing_variable, kernel, X)
    return preconditioned_kl_and_marginals(Kmn, Kmm, Knn, q_mu, q_sigma, inverse_and_logdet=inverse_and_logdet)


@marginals.register(InducingVariables, Kernel)
def _marginals_dense(
    inducing_variable: Any, kernel: Kernel, *, X: Any, q_mu: tf.Tensor, q_sigma: tf.Tensor, full_cov: bool = False
) -> tuple[tf.Tensor, tf.Tensor]:
    Kmm, Kmn, Knn = inducing_covariances(inducing_variable, kernel, X, full_cov=full_cov)
    return preconditioned_conditional(Kmn, Kmm, Knn, q_mu, q_sigma, full_cov=full_cov)


# -- Z = X̃ orthonormal and a linear kernel: K_ZZ = σ² I, everything diagonal ---------------------
def _diagonal_kl(variance: tf.Tensor, q_mu: tf.Tensor, q_sigma: tf.Tensor) -> tf.Tensor:
    K_plus_sigma = variance + q_sigma  # [R, P]
    return 0.5 * (
        variance * tf.reduce_sum(tf.square(q_mu))
        - tf.reduce_sum(variance / K_plus_sigma)
        + tf.reduce_sum(tf.math.log(K_plus_sigma))
        - tf.reduce_sum(tf.math.log(q_sigma))
    )


def _diagonal_marginals(
    inducing_variable: BasisInducingPoints, kernel: Linear, *, X: Any, q_mu: tf.Tensor, q_sigma: tf.Tensor
) -> tuple[tf.Tensor, tf.Tensor]:
    coords, sq_norms = project_inputs(inducing_variable, X)  # [B, R], [B]
    variance = tf.convert_to_tensor(kernel.variance)
    mean = variance * tf.matmul(coords, q_mu)  # [B, P]
    explained = tf.matmul(tf.square(coords), 1.0 / (variance + q_sigma))  # [B, P]
    var = variance * sq_norms[:, None] - tf.square(variance) * explained  # [B, P]
    return mean, var


@prior_kl.register(BasisInducingPoints, Linear)
def _prior_kl_basis_linear(
    inducing_variable: BasisInducingPoints,
    kernel: Linear,
    *,
    q_mu: tf.Tensor,
    q_sigma: tf.Tensor,
    inverse_and_logdet: InverseAndLogdet | None = None,
) -> tf.Tensor:
    return _diagonal_kl(tf.convert_to_tensor(kernel.variance), q_mu, q_sigma)


@kl_and_marginals.register(BasisInducingPoints, Linear)
def _kl_and_marginals_basis_linear(
    inducing_variable: BasisInducingPoints,
    kernel: Linear,
    *,
    X: Any,
    q_mu: tf.Tensor,
    q_sigma: tf.Tensor,
    inverse_and_logdet: InverseAndLogdet | None = None,
) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
    mean, var = _diagonal_marginals(inducing_variable, kernel, X=X, q_mu=q_mu, q_sigma=q_sigma)
    return _diagonal_kl(tf.convert_to_tensor(kernel.variance), q_mu, q_sigma), mean, var


@marginals.register(BasisInducingPoints, Linear)
def _marginals_basis_linear(
    inducing_variable: BasisInducingPoints,
    kernel: Linear,
    *,
    X: Any,
    q_mu: tf.Tensor,
    q_sigma: tf.Tensor,
    full_cov: bool = False,
) -> tuple[tf.Tensor, tf.Tensor]:
    if not full_cov:
        return _diagonal_marginals(inducing_variable, kernel, X=X, q_mu=q_mu, q_sigma=q_sigma)
    coords, _ = project_inputs(inducing_variable, X)  # [N, R]
    variance = tf.convert_to_tensor(kernel.variance)
    mean = variance * tf.matmul(coords, q_mu)  # [N, P]
    weighted = coords[None, :, :] * tf.transpose(1.0 / (variance + q_sigma))[:, None, :]  # [P, N, R]
    cov = Kff(kernel, X, full_cov=True)[None] - tf.square(variance) * tf.matmul(
        weighted, coords, transpose_b=True
    )  # [P, N, N]
    return mean, cov


# Polynomial subclasses Linear but is not diagonal on an orthonormal basis: the generic path.
prior_kl.register(BasisInducingPoints, Polynomial)(_prior_kl_dense)
kl_and_marginals.register(BasisInducingPoints, Polynomial)(_kl_and_marginals_dense)
marginals.register(BasisInducingPoints, Polynomial)(_marginals_dense)
