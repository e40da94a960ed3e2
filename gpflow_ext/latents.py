"""q(X) for GPLVF: how each row's base Gaussian N(μ_n, s_n) is parameterised (paper Section 3, eq. 2 and 4).

GPLVF's q(x_n) is a base Gaussian pushed through a flow shared by all rows; this module holds the base:

* :class:`Diagonal` (N(μ_n, diag s_n)) and :class:`Isotropic` (the paper's N(μ_n, s_n I_Q), eq. 2 and 4):
  the base covariance, as objects;
* :class:`PerRowLatents`: free (μ_n, s_n) per training row, gathered by row index (the Bayesian GPLVM);
* :class:`EncoderLatents`: (μ_n, log s_n) from a tf_keras network applied to the masked row [y ⊙ m, m]
  (amortised inference, a back-constraint);
* :func:`draw_row_keyed_base_noise` (training minibatches) and :func:`draw_base_noise` (held rows): the Monte
  Carlo base noise ε [S, B, Q] of one evaluation of the bound;
* :func:`pca_latents` and :func:`distinct_rows`: the initial μ_n and inducing inputs Z.

Both latents map a batch ``(values [B, D], mask [B, D], row_index [B])`` to ``(μ [B, Q], s [B, Q])``.
"""

import numpy as np
import scipy.sparse
import tensorflow as tf
from check_shapes import check_shapes
from gpflow.base import Parameter
from gpflow.config import default_float
from gpflow.keras import tf_keras
from gpflow.utilities import positive

from .randomness import noise_seed_and_rows, row_normal
from .validation import check_equal_variances, check_latents

__all__ = [
    "BaseCovariance",
    "Diagonal",
    "Isotropic",
    "as_base_covariance",
    "PerRowLatents",
    "EncoderLatents",
    "draw_base_noise",
    "draw_row_keyed_base_noise",
    "pca_latents",
    "distinct_rows",
]


class BaseCovariance:
    """The covariance of a row's base Gaussian: how many variances a row has and how they are read."""

    name = ""

    def width(self, latent_dim: int) -> int:
        """Number of variance parameters per row."""
        raise NotImplementedError

    def initial_variances(self, x_var: np.ndarray, name: str) -> np.ndarray:
        """The stored variances [N, width] from full ones [N, Q] (checked)."""
        raise NotImplementedError

    def reduce_log_variances(self, log_var: tf.Tensor) -> tf.Tensor:
        """A network's log-variances [B, Q] -> the stored form [B, width]."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class Diagonal(BaseCovariance):
    """N(μ_n, diag s_n): Q variances per row."""

    name = "diagonal"

    def width(self, latent_dim: int) -> int:
        return latent_dim

    def initial_variances(self, x_var: np.ndarray, name: str) -> np.ndarray:
        return x_var

    def reduce_log_variances(self, log_var: tf.Tensor) -> tf.Tensor:
        return log_var  # [B, Q]


class Isotropic(BaseCovariance):
    """The paper's N(μ_n, s_n I_Q) (eq. 2, 4): one variance per row; the flow is then the only source of a
    non-spherical q(x_n)."""

    name = "isotropic"

    def width(self, latent_dim: int) -> int:
        return 1

    def initial_variances(self, x_var: np.ndarray, name: str) -> np.ndarray:
        return check_equal_variances(x_var, name)  # [N, 1]

    def reduce_log_variances(self, log_var: tf.Tensor) -> tf.Tensor:
        return tf.reduce_mean(log_var, axis=-1, keepdims=True)  # [B, 1]


BASE_COVARIANCE_NAMES = {"diagonal": Diagonal, "isotropic": Isotropic}


def as_base_covariance(value: BaseCovariance | None) -> BaseCovariance:
    """``value`` as a :class:`BaseCovariance` (checked); ``None`` is :class:`Diagonal`."""
    if value is None:
        return Diagonal()
    if isinstance(value, BaseCovariance):
        return value
    raise TypeError(f"base_covariance must be a gpflow_ext.latents.Diagonal() or Isotropic() (or None), got {value!r}")


@check_shapes("return: [S, B, Q]")
def draw_base_noise(generator: tf.random.Generator, num_samples: int, num_rows, latent_dim: int) -> tf.Tensor:
    """The standard-normal base draws ε [S, B, Q] of one Monte Carlo evaluation of a bound on held rows (the
    q(x*) fit of new rows), from ``generator``."""
    return generator.normal([num_samples, num_rows, latent_dim], dtype=default_float())  # [S, B, Q]


def draw_row_keyed_base_noise(generator: tf.random.Generator, num_samples: int, num_rows, latent_dim: int) -> tf.Tensor:
    """The base draws ε [S, B, Q] of one minibatch of the training bound, each row's a function of (fit seed,
    global step, row index) under ``fit`` (:mod:`gpflow_ext.randomness`), so they do not depend on how rows are
    split over minibatches, replicas or workers; outside ``fit`` from a fresh seed of ``generator``."""
    seed, rows = noise_seed_and_rows(generator, num_rows)
    noise = row_normal(seed, rows, num_samples * latent_dim, default_float())  # [B, S*Q]
    return tf.transpose(tf.reshape(noise, [-1, num_samples, latent_dim]), [1, 0, 2])  # [S, B, Q]


class PerRowLatents(tf.Module):
    """Free base Gaussians N(μ_n, s_n) of the N training rows: ``X_mean`` [N, Q] and ``X_var`` [N, Q] (diagonal)
    or [N, 1] (isotropic), gathered by the batch's row index."""

    def __init__(self, X_mean, X_var, base_covariance: BaseCovariance | None = None):
        super().__init__(name="per_row_latents")
        self.base_covariance = base_covariance if base_covariance is not None else Diagonal()
        X_mean, X_var = check_latents(X_mean, X_var, np.shape(X_mean)[-1])
        X_var = self.base_covariance.initial_variances(X_var, "X_var")
        self.X_mean = Parameter(X_mean, name="X_mean")  # [N, Q] base-Gaussian means μ_n
        self.X_var = Parameter(X_var, transform=positive(), name="X_var")  # [N, Q] (or [N, 1]) base variances s_n

    @property
    def local_variables(self):
        return list(self.X_mean.variables) + list(self.X_var.variables)

    @check_shapes(
        "values: [B, D]",
        "mask: [B, D]",
        "row_index: [B]",
        "return[0]: [B, Q]",
        "return[1]: [B, Q]",
    )
    def __call__(self, values, mask, row_index) -> tuple[tf.Tensor, tf.Tensor]:
        row_index = tf.cast(row_index, tf.int64)
        x_mean = tf.gather(self.X_mean, row_index)  # [B, Q]
        return x_mean, tf.broadcast_to(tf.gather(self.X_var, row_index), tf.shape(x_mean))  # [B, Q] each

    def training_latents(self, values, observed) -> tuple[np.ndarray, np.ndarray]:
        x_mean = self.X_mean.numpy()
        return x_mean, np.broadcast_to(self.X_var.numpy(), x_mean.shape).copy()


class EncoderLatents(tf.Module):
    """Amortised base Gaussians: a tf_keras ``network`` maps the masked row [y ⊙ m, m] ∈ R^{2D} to
    (μ_n, log s_n) ∈ R^{2Q} (log s_n clipped to [-20, 5]; averaged over Q for an isotropic base)."""

    def __init__(
        self, network: tf_keras.Model, output_dim: int, latent_dim: int, base_covariance: BaseCovariance | None = None
    ):
        super().__init__(name="encoder_latents")
        if not isinstance(network, tf_keras.Model):
            raise TypeError(f"encoder must be a tf_keras.Model mapping [B, 2D] -> [B, 2Q], got {type(network)}")
        if not network.built:
            network.build((None, 2 * output_dim))
        self.network = network
        self.latent_dim = int(latent_dim)
        self.base_covariance = base_covariance if base_covariance is not None else Diagonal()

    @property
    def local_variables(self):
        return list(self.network.trainable_variables)

    @check_shapes(
        "values: [B, D]",
        "mask: [B, D]",
        "return[0]: [B, Q]",
        "return[1]: [B, Q]",
    )
    def __call__(self, values, mask, row_index=None) -> tuple[tf.Tensor, tf.Tensor]:
        mask = tf.cast(mask, default_float())
        out = self.network(tf.concat([values * mask, mask], axis=-1))  # [B, 2Q]
        x_mean = out[:, : self.latent_dim]  # [B, Q]
        log_var = tf.clip_by_value(out[:, self.latent_dim :], -20.0, 5.0)  # [B, Q]
        log_var = self.base_covariance.reduce_log_variances(log_var)  # [B, Q] or [B, 1]
        return x_mean, tf.broadcast_to(tf.exp(log_var), tf.shape(x_mean))  # [B, Q] each

    def training_latents(self, values, observed) -> tuple[np.ndarray, np.ndarray]:
        x_mean, x_var = self(tf.constant(values, dtype=default_float()), tf.constant(observed, dtype=default_float()))
        return x_mean.numpy(), x_var.numpy()


def pca_latents(values: np.ndarray, observed: np.ndarray, latent_dim: int, rng: np.random.Generator) -> np.ndarray:
    """Initial μ_n [N, Q]: PCA of the observed entries (a sparse matrix of centred observed values) by
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


def distinct_rows(X_mean: np.ndarray, num_inducing: int, rng: np.random.Generator) -> np.ndarray:
    """Initial Z [M, Q]: distinct rows of ``X_mean`` in random order (repeated rows would make K_ZZ singular, and
    float32 Cholesky returns NaN without raising), topped up with N(0, I) draws when there are fewer than M."""
    order = rng.permutation(X_mean.shape[0])
    _, first = np.unique(X_mean[order], axis=0, return_index=True)
    Z = X_mean[order[np.sort(first)][:num_inducing]]
    if Z.shape[0] < num_inducing:
        Z = np.concatenate([Z, rng.standard_normal((num_inducing - Z.shape[0], X_mean.shape[1]))])
    return Z
