"""Ordinal regression (ordered probit) with learnt bin edges and closed-form predictions.

p(y = k | f) = Φ((a_k - f) / σ) - Φ((a_{k-1} - f) / σ) for k = 0..K-1, with a_{-1} = -∞ and a_{K-1} = +∞; the K-1
finite edges a_0 < ... < a_{K-2} are a ``gpflow.Parameter`` under an ascending transform. Under q(f) = N(μ, v) the
predictive is again ordered probit with σ² replaced by σ² + v, so ``predict_log_density`` and
``predict_mean_and_var`` are exact; ``variational_expectations`` is GPflow's Gauss-Hermite quadrature.

``gpflow.likelihoods.Ordinal`` (GPflow 2.11) evaluates Φ at ±∞ through a probit with jitter and returns NaN for the
first and last bins; this subclass computes every bin from log Φ of finite arguments.
"""

import gpflow
import numpy as np
import tensorflow as tf
import tensorflow_probability as tfp
from check_shapes import check_shapes, inherit_check_shapes
from gpflow.base import Parameter
from gpflow.utilities import positive

__all__ = ["Ordinal", "ordinal_log_probabilities"]


# log Φ(-40) ≈ -804.6: an open end this far out changes log p by less than exp(-800) relative
_OPEN_END = 40.0


# below this, log Φ(x) from its asymptotic series (erfc(-x/√2) would underflow or lose digits)
_SERIES_BELOW = {tf.float64: -20.0, tf.float32: -10.0, tf.float16: -5.0}


def _log_ndtr(x) -> tf.Tensor:
    """log Φ(x), accurate in both tails: log(erfc(-x/√2) / 2) (one special function) above
    ``_SERIES_BELOW`` and the asymptotic series -x²/2 - log(-x√(2π)) + log(1 - 1/x² + 3/x⁴ - 15/x⁶) below it (as
    TFP's ``log_ndtr``, with one erfc per point instead of its two ``ndtr`` branches)."""
    cut = tf.constant(_SERIES_BELOW.get(x.dtype, -10.0), dtype=x.dtype)
    inside = tf.maximum(x, cut)  # [...]
    direct = tf.math.log(0.5 * tf.math.erfc(-inside * np.sqrt(0.5)))
    tail = tf.minimum(x, cut)  # [...] <= cut < 0
    inverse_square = 1.0 / tf.square(tail)
    series = 1.0 - inverse_square * (1.0 - inverse_square * (3.0 - 15.0 * inverse_square))
    asymptotic = -0.5 * tf.square(tail) - tf.math.log(-tail) - 0.5 * np.log(2.0 * np.pi) + tf.math.log(series)
    return tf.where(x > cut, direct, asymptotic)


def _log_ndtr_difference(upper, lower) -> tf.Tensor:
    """log(Φ(upper) - Φ(lower)) for upper > lower, from the tail where both are small (no cancellation)."""
    flip = lower > 0.0  # both in the upper tail: Φ(u) - Φ(l) = Φ(-l) - Φ(-u)
    hi = tf.where(flip, -lower, upper)
    lo = tf.where(flip, -upper, lower)
    return tfp.math.log_sub_exp(_log_ndtr(hi), _log_ndtr(lo))


@check_shapes(
    "bin_edges: [num_edges]",
    "F: [batch...]",
    "scale: [broadcast batch...]",
    "return: [batch..., num_bins]",
)
def ordinal_log_probabilities(bin_edges, F, scale) -> tf.Tensor:
    """log p(y = k) [..., K] of every bin k of an ordered probit with edges a [K-1] at latent F and noise scale
    ``scale`` (σ, or √(σ² + v) for the predictive under q(f) = N(F, v)). The open end bins use log Φ directly."""
    z = (bin_edges - F[..., None]) / scale[..., None]  # [..., K-1]
    first = _log_ndtr(z[..., :1])  # [..., 1]
    last = _log_ndtr(-z[..., -1:])  # [..., 1]
    middle = _log_ndtr_difference(z[..., 1:], z[..., :-1])  # [..., K-2]
    return tf.concat([first, middle, last], axis=-1)


class Ordinal(gpflow.likelihoods.Ordinal):
    """``gpflow.likelihoods.Ordinal`` with learnt ascending bin edges, finite end bins and exact predictions.

    :param bin_edges: the K-1 initial edges a_0 < ... < a_{K-2}; y takes the integer values 0..K-1.
    :param sigma: initial noise scale σ (learnt, positive).
    :param learn_bin_edges: False keeps the edges fixed (as GPflow's ``Ordinal``).
    """

    def __init__(self, bin_edges, sigma: float = 1.0, learn_bin_edges: bool = True, **kwargs):
        edges = np.asarray(bin_edges, dtype=np.float64)
        if edges.ndim != 1 or edges.size < 1 or not np.all(np.isfinite(edges)):
            raise ValueError(f"bin_edges must be a 1-D array of at least one finite edge, got {bin_edges!r}")
        if edges.size > 1 and not np.all(np.diff(edges) > 0):
            raise ValueError(f"bin_edges must be strictly increasing, got {edges}")
        if not (np.isfinite(sigma) and sigma > 0):
            raise ValueError(f"sigma must be a positive number, got {sigma!r}")
        super().__init__(edges, **kwargs)
        transform = tfp.bijectors.Ascending() if edges.size > 1 else tfp.bijectors.Identity()
        self.bin_edges = Parameter(edges, transform=transform, trainable=learn_bin_edges, name="bin_edges")
        self.sigma = Parameter(sigma, transform=positive(), name="sigma")

    @check_shapes(
        "Fmu: [batch...]",
        "Fvar: [batch...]",
        "return: [batch..., num_bins]",
    )
    def predictive_log_probabilities(self, Fmu, Fvar) -> tf.Tensor:
        """log ∫ p(y = k | f) N(f; μ, v) df [..., K] for every bin k (closed form)."""
        return ordinal_log_probabilities(self.bin_edges, Fmu, tf.sqrt(tf.square(self.sigma) + Fvar))

    def _pick(self, log_p, Y) -> tf.Tensor:
        """log p [..., K] at the class y [...] (broadcast): a one-hot sum, so Y may broadcast against F."""
        one_hot = tf.one_hot(tf.cast(tf.round(Y), tf.int32), self.num_bins, dtype=log_p.dtype)  # [..., K]
        return tf.reduce_sum(log_p * one_hot, axis=-1)

    @inherit_check_shapes
    def _scalar_log_prob(self, X, F, Y) -> tf.Tensor:
        """log p(y | f) from y's own two edges only (the quadrature's hot path): log(Φ(u) - Φ(l)), the open end of
        the first and last bins placed ``_OPEN_END`` standard deviations beyond both 0 and the bin's other edge;
        two log Φ per point at finite, valid arguments (finite gradients)."""
        pad = tf.zeros([1], dtype=F.dtype)  # stands for ∓∞, replaced below
        edges = tf.concat([pad, tf.convert_to_tensor(self.bin_edges, dtype=F.dtype), pad], axis=0)  # [K+1]
        k = tf.cast(tf.round(Y), tf.int32)
        open_end = tf.constant(_OPEN_END, dtype=F.dtype)
        upper = (tf.gather(edges, k + 1) - F) / self.sigma  # [...]
        lower = (tf.gather(edges, k) - F) / self.sigma  # [...]
        # an open end _OPEN_END standard deviations past the other edge and past 0: Φ there is Φ(∓∞) to a relative
        # error below exp(-800) whatever f is
        upper = tf.where(tf.equal(k, self.num_bins - 1), tf.maximum(open_end, lower + open_end), upper)
        lower = tf.where(tf.equal(k, 0), tf.minimum(-open_end, upper - open_end), lower)
        return _log_ndtr_difference(upper, lower)

    @inherit_check_shapes
    def _predict_log_density(self, X, Fmu, Fvar, Y) -> tf.Tensor:
        return tf.reduce_sum(self._pick(self.predictive_log_probabilities(Fmu, Fvar), Y), axis=-1)  # [...]

    def _moments(self, log_p) -> tuple[tf.Tensor, tf.Tensor]:
        p = tf.exp(log_p)  # [..., K]
        k = tf.range(self.num_bins, dtype=p.dtype)  # [K]
        mean = tf.reduce_sum(p * k, axis=-1)
        return mean, tf.maximum(tf.reduce_sum(p * k**2, axis=-1) - mean**2, 0.0)

    @inherit_check_shapes
    def _predict_mean_and_var(self, X, Fmu, Fvar):
        return self._moments(self.predictive_log_probabilities(Fmu, Fvar))

    @inherit_check_shapes
    def _conditional_mean(self, X, F) -> tf.Tensor:
        return self._moments(self.predictive_log_probabilities(F, tf.zeros_like(F)))[0]

    @inherit_check_shapes
    def _conditional_variance(self, X, F) -> tf.Tensor:
        return self._moments(self.predictive_log_probabilities(F, tf.zeros_like(F)))[1]
