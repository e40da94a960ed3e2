"""KL divergences of gpflow_ext's variational distributions.

GPLVF's KL(q(x_n) ‖ p(x_n)) with p(x_n) = N(0, I_Q) and q(x_n) = a base Gaussian N(μ_n, s_n) pushed through a
flow g (paper eq. 3-4, A.5):

* free functions :func:`gaussian_kl_to_standard_normal` (closed form, A.5) and
  :func:`flow_kl_to_standard_normal` (reparameterised samples and a Monte Carlo estimate for the flowed q);
* estimator objects a model holds: :class:`AnalyticGaussianKL` (no flow), :class:`MonteCarloFlowKL`
  (split or plain estimator), and :func:`latent_kl_for` (what ``kl_x=None`` picks: closed form without a
  flow, the split Monte Carlo estimator with one).

An estimator is called as ``estimator(flow, x_mean [B, Q], x_var [B, Q], base_noise [S, B, Q])`` and returns
``(x [S, B, Q], kl [B])``: the samples x = g(μ + √s ε) of q(x_n) and the KL estimate on the same draws.
"""

import numpy as np
import tensorflow as tf
import tensorflow_probability as tfp
from check_shapes import check_shapes, inherit_check_shapes

from .bijectors.planar import flow_forward_and_log_det

__all__ = [
    "gaussian_kl_to_standard_normal",
    "flow_kl_to_standard_normal",
    "LatentKL",
    "AnalyticGaussianKL",
    "MonteCarloFlowKL",
    "latent_kl_for",
    "as_latent_kl",
]

LOG_2PI = float(np.log(2.0 * np.pi))


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
) -> tuple[tf.Tensor, tf.Tensor]:
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
    log_q0 = -0.5 * tf.reduce_sum(LOG_2PI + tf.math.log(x_var) + tf.square(base_noise), axis=-1)  # [S, N]
    log_q = log_q0 - log_det  # [S, N]
    log_prior = -0.5 * tf.reduce_sum(LOG_2PI + tf.square(x), axis=-1)  # [S, N]
    return x, tf.reduce_mean(log_q - log_prior, axis=0)  # [S, N, Q], [N]


class LatentKL:
    """How KL(q(x_n) ‖ N(0, I)) is computed: ``(flow, x_mean, x_var, base_noise) -> (x [S, B, Q], kl [B])``."""

    name = ""

    def check_flow(self, flow: tfp.bijectors.Bijector | None) -> None:
        """Raise ValueError when this estimator cannot serve ``flow`` (called once, at model construction)."""

    @check_shapes(
        "x_mean: [B, Q]",
        "x_var: [B, Q]",
        "base_noise: [S, B, Q]",
        "return[0]: [S, B, Q]",
        "return[1]: [B]",
    )
    def __call__(self, flow, x_mean, x_var, base_noise) -> tuple[tf.Tensor, tf.Tensor]:
        """The samples x [S, B, Q] pushed through ``flow`` and each row's KL [B]."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class AnalyticGaussianKL(LatentKL):
    """The closed form (A.5) for a Gaussian q(x_n) (no flow); the samples are x = μ + √s ε."""

    name = "analytic"

    def check_flow(self, flow) -> None:
        if flow is not None:
            raise ValueError(
                "kl_x='analytic' needs flow=None (AnalyticGaussianKL is the Gaussian q(x)'s closed form): with a flow "
                "KL(q(x)||p(x)) has no closed form"
            )

    @inherit_check_shapes
    def __call__(self, flow, x_mean, x_var, base_noise) -> tuple[tf.Tensor, tf.Tensor]:
        x = x_mean + tf.sqrt(x_var) * base_noise  # [S, B, Q]
        return x, gaussian_kl_to_standard_normal(x_mean, x_var)  # [B]


class MonteCarloFlowKL(LatentKL):
    """:func:`flow_kl_to_standard_normal`: the base Gaussian's KL in closed form plus a Monte Carlo flow
    correction (default), or every term by Monte Carlo (``base_in_closed_form=False``, the plain estimator)."""

    def __init__(self, base_in_closed_form: bool = True):
        self.base_in_closed_form = bool(base_in_closed_form)

    @property  # the other estimators' class attribute, derived from the estimator's setting here
    def name(self) -> str:  # type: ignore[override]
        return "monte_carlo" if self.base_in_closed_form else "monte_carlo_plain"

    @inherit_check_shapes
    def __call__(self, flow, x_mean, x_var, base_noise) -> tuple[tf.Tensor, tf.Tensor]:
        return flow_kl_to_standard_normal(flow, x_mean, x_var, base_noise, base_in_closed_form=self.base_in_closed_form)

    def __repr__(self) -> str:
        return f"MonteCarloFlowKL(base_in_closed_form={self.base_in_closed_form})"


def latent_kl_for(flow: tfp.bijectors.Bijector | None) -> LatentKL:
    """The default estimator: closed form without a flow, :class:`MonteCarloFlowKL` with one."""
    return AnalyticGaussianKL() if flow is None else MonteCarloFlowKL()


def as_latent_kl(value: LatentKL | None, flow: tfp.bijectors.Bijector | None) -> LatentKL:
    """``value`` as a :class:`LatentKL` for ``flow`` (checked): ``None`` is :func:`latent_kl_for`."""
    if value is None:
        return latent_kl_for(flow)
    if not isinstance(value, LatentKL):
        raise TypeError(f"kl_x must be a gpflow_ext.kullback_leiblers.LatentKL or None, got {type(value)}")
    value.check_flow(flow)
    return value
