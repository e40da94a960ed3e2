"""Planar normalising flow (Rezende and Mohamed, 2015) as a tfp Bijector.

GPLVF (Gaussian process latent variable flows, Section 3, eq. 4) pushes the base Gaussian
q(x_n^(0)) = N(mu_n, diag s_n) through a chain of planar maps

    g(x) = x + û h(wᵀx + b),        h = tanh,

whose parameters (û, w, b) are shared by all data points. The Jacobian determinant is
det(I + û h'(wᵀx + b) wᵀ) = 1 + h'(wᵀx + b) wᵀû (matrix determinant lemma), and g is
invertible when wᵀû >= -1 (Rezende and Mohamed, 2015, appendix A). The constraint is
kept for *any* raw parameter u by the reparameterisation

    û = u + (m(wᵀu) - wᵀu) w / ‖w‖²,      m(a) = -1 + softplus(a + log(e - 1)) + 1e-4,

so that wᵀû = m(wᵀu) > -1 (the 1e-4 margin survives float rounding). The shift log(e - 1) makes
m(0) = 0 (up to the margin): small raw (u, w) then give a map near the identity. Rezende and Mohamed's
unshifted m(a) = -1 + softplus(a) (``identity_at_zero=False``) has m(0) = log 2 - 1 ≈ -0.31, so every
layer with small raw parameters contracts by 0.69 along w: 50 such layers start with a mean log-det of
about -18 on N(0, I) in 10 dimensions, far from the Gaussian q(X) they are meant to refine.

Only the forward map and its log-det are needed by GPLVF (reparameterised sampling plus
log q(x) = log q0(x0) - log|det J|), so no inverse is provided; use
``experimental_sample_and_log_prob`` (not ``log_prob``) on a ``TransformedDistribution`` built
from this bijector.
"""

import gpflow
import numpy as np
import tensorflow as tf
import tensorflow_probability as tfp
from check_shapes import check_shapes

from ..validation import check_positive_int

INVERTIBILITY_MARGIN = 1e-4
IDENTITY_SHIFT = float(np.log(np.e - 1.0))  # softplus(IDENTITY_SHIFT) = 1, so m(0) = 0

__all__ = ["Planar", "planar_flow", "constrained_u", "flow_forward_and_log_det"]


@check_shapes(
    "u: [Q]",
    "w: [Q]",
    "return: [Q]",
)
def constrained_u(u: tf.Tensor, w: tf.Tensor, identity_at_zero: bool = True) -> tf.Tensor:
    """û = u + (m(wᵀu) - wᵀu) w/‖w‖² with m(a) = -1 + 1e-4 + softplus(a + log(e - 1)), so wᵀû > -1
    and m(0) ≈ 0; ``identity_at_zero=False``: Rezende and Mohamed's m(a) = -1 + 1e-4 + softplus(a)."""
    w_dot_u = tf.reduce_sum(w * u)  # []
    shift = IDENTITY_SHIFT if identity_at_zero else 0.0
    # a margin keeps 1 + h'·wᵀû > 0 strictly (finite log-det) despite rounding at wᵀu -> -inf
    m_of_w_dot_u = -1.0 + INVERTIBILITY_MARGIN + tf.math.softplus(w_dot_u + shift)  # []
    w_norm_sq = tf.reduce_sum(tf.square(w)) + tf.cast(1e-12, w.dtype)  # []
    return u + (m_of_w_dot_u - w_dot_u) * w / w_norm_sq  # [Q]


class Planar(tfp.bijectors.Bijector):
    """One planar map g(x) = x + û tanh(wᵀx + b) on vectors of length ``latent_dim``.

    The parameters u (raw), w and b are ``gpflow.Parameter``s, so a GPflow model that
    holds this bijector trains them with everything else. ``identity_at_zero`` (default) picks the
    shifted constraint m(0) ≈ 0, so the default small ``init_scale`` starts near the identity; False
    gives Rezende and Mohamed's m, whose small-parameter layers contract (see the module docstring).
    """

    def __init__(
        self,
        latent_dim: int,
        u: np.ndarray | None = None,
        w: np.ndarray | None = None,
        b: float | None = None,
        init_scale: float = 0.01,
        seed: int | None = None,
        name: str = "planar",
        identity_at_zero: bool = True,
    ):
        latent_dim = check_positive_int(latent_dim, "latent_dim")
        parameters = dict(locals())
        dtype = gpflow.default_float()
        rng = np.random.default_rng(seed)
        if u is None:
            u = init_scale * rng.standard_normal(latent_dim)
        if w is None:
            w = init_scale * rng.standard_normal(latent_dim)
        if b is None:
            b = 0.0
        u = np.asarray(u, dtype=dtype)
        w = np.asarray(w, dtype=dtype)
        for arg, value in (("u", u), ("w", w)):
            if value.shape != (latent_dim,):
                raise ValueError(f"{arg} must have shape [{latent_dim}], got {value.shape}")
            if not np.all(np.isfinite(value)):
                raise ValueError(f"{arg} must be finite")
        self.latent_dim = int(latent_dim)
        self.identity_at_zero = bool(identity_at_zero)
        self.u = gpflow.Parameter(u, name=f"{name}_u")  # [Q] raw, unconstrained
        self.w = gpflow.Parameter(w, name=f"{name}_w")  # [Q]
        self.b = gpflow.Parameter(np.asarray(b, dtype=dtype), name=f"{name}_b")  # []
        super().__init__(
            forward_min_event_ndims=1,
            is_constant_jacobian=False,
            validate_args=False,
            parameters=parameters,
            dtype=dtype,
            name=name,
        )

    @property
    def u_hat(self) -> tf.Tensor:
        """The constrained û (wᵀû > -1)."""
        return constrained_u(tf.convert_to_tensor(self.u), tf.convert_to_tensor(self.w), self.identity_at_zero)

    def forward_and_log_det(self, x: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        """(g(x), log|det ∂g/∂x|) in one pass: x [..., Q] -> ([..., Q], [...])."""
        w = tf.convert_to_tensor(self.w)  # [Q]
        u_hat = self.u_hat  # [Q]
        activation = tf.linalg.matvec(x, w) + self.b  # [...]
        tanh = tf.tanh(activation)  # [...]
        y = x + tanh[..., None] * u_hat  # [..., Q]
        psi_dot_u = (1.0 - tf.square(tanh)) * tf.reduce_sum(w * u_hat)  # [...]
        log_det = tf.math.log(tf.abs(1.0 + psi_dot_u))  # [...]
        return y, log_det

    def _forward(self, x):
        return self.forward_and_log_det(x)[0]

    def _forward_log_det_jacobian(self, x):
        return self.forward_and_log_det(x)[1]


def planar_flow(
    num_layers: int, latent_dim: int, init_scale: float = 0.01, seed: int = 0, identity_at_zero: bool = True
) -> tfp.bijectors.Chain:
    """A chain of ``num_layers`` planar maps on R^latent_dim (Section 3, eq. 4), near the identity at the
    default small ``init_scale`` (``identity_at_zero=False``: Rezende and Mohamed's constraint, which is not).

    The same chain (same parameters λ) transforms every data point's base Gaussian.
    ``num_layers=0`` gives the identity (an empty Chain).
    """
    num_layers = check_positive_int(num_layers, "num_layers", minimum=0)
    latent_dim = check_positive_int(latent_dim, "latent_dim")
    layers = [
        Planar(latent_dim, init_scale=init_scale, seed=seed + k, name=f"planar_{k}", identity_at_zero=identity_at_zero)
        for k in range(num_layers)
    ]
    # tfb.Chain applies its list right-to-left; the order is immaterial for i.i.d. init.
    return tfp.bijectors.Chain(layers, name=f"planar_flow_{num_layers}")


def _layers_in_application_order(bijector: tfp.bijectors.Bijector):
    if isinstance(bijector, tfp.bijectors.Chain):
        out = []
        for inner in reversed(bijector.bijectors):  # Chain([b1, b2]) computes b1(b2(x))
            out.extend(_layers_in_application_order(inner))
        return out
    return [bijector]


def flow_forward_and_log_det(flow: tfp.bijectors.Bijector | None, x0: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
    """Push x0 [..., Q] through ``flow``; returns (x_K [..., Q], Σ_k log|det ∂g_k| [...]).

    Planar layers compute both in one pass; any other tfp bijector with
    ``forward_min_event_ndims <= 1`` falls back to ``forward`` + ``forward_log_det_jacobian``.
    ``flow=None`` is the identity.
    """
    log_det = tf.zeros(tf.shape(x0)[:-1], dtype=x0.dtype)  # [...]
    if flow is None:
        return x0, log_det
    x = x0
    for layer in _layers_in_application_order(flow):
        if isinstance(layer, Planar):
            x, layer_log_det = layer.forward_and_log_det(x)
        else:
            layer_log_det = layer.forward_log_det_jacobian(x, event_ndims=1)
            x = layer.forward(x)
        log_det = log_det + layer_log_det
    return x, log_det
