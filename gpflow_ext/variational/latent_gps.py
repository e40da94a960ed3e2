"""J additive GPs on network features with their inducing variables and q(u): the inducing choice of SV-DKL.

GP j reads the features of its group ``feature_groups[j]`` (D of them) through a squared-exponential base
kernel. Two choices, each an object that owns its kernel, inducing variable and q(u) and computes its own
KL and samples (the model only calls them):

* :class:`KISSGPGrid` (the paper, Sections 3–4): one KISS-GP
  :class:`~gpflow_ext.inducing_variables.GridInducingPoints` grid on [-1, 1]^D shared by the J GPs,
  ``f_j = W_j u_j`` exactly (eq. 2 with K̃ = 0; :mod:`gpflow_ext.conditionals.grid`), q(u) a
  :class:`~gpflow_ext.variational.KroneckerGaussian`, p(u) a grid prior object
  (:class:`~gpflow_ext.variational.ToeplitzGridPrior` or :class:`~gpflow_ext.variational.CirculantGridPrior`).
* :class:`FreeInducingPoints`: M ordinary inducing points on the features shared by the J GPs, full q(u) and
  GPflow's SVGP ``conditional`` (f | u keeps its own variance) and ``prior_kl``.

Both are configured first (``KISSGPGrid(64)``) and built by the model, which knows J, D and the groups
(:meth:`LatentGPs.build`); a built object belongs to one model.
"""

import dataclasses
from typing import Any

import gpflow
import numpy as np
import tensorflow as tf
from check_shapes import check_shapes
from gpflow.conditionals.util import base_conditional
from gpflow.covariances import Kuf, Kuu
from gpflow.inducing_variables import InducingPoints, SharedIndependentInducingVariables
from gpflow.kernels import SeparateIndependent, SquaredExponential
from gpflow.kullback_leiblers import prior_kl

from ..inducing_variables.grid import GridInducingPoints, interpolate_samples, interpolation_indices_and_weights
from ..randomness import row_normal
from ..validation import check_choice, check_positive_int
from .grid_priors import GridPrior, ToeplitzGridPrior
from .kronecker import KroneckerGaussian

__all__ = ["LatentGPs", "KISSGPGrid", "FreeInducingPoints"]


class LatentGPs(gpflow.Module):
    """J GPs on groups of features: configured at construction, given their shapes by :meth:`build`."""

    def __init__(self, name: str | None = None):
        super().__init__(name=name)
        self.built = False

    def build(
        self, feature_groups: np.ndarray, num_features: int, lengthscale: Any, jitter: float, whiten: bool
    ) -> None:
        """Create kernel, inducing variable and q(u) for ``feature_groups`` [J, D] (indices into Q features)."""
        if self.built:
            raise ValueError(f"this {type(self).__name__} already belongs to a model: pass a new one to each model")
        self.feature_groups = np.asarray(feature_groups, dtype=np.int32)  # [J, D]
        self.num_gps, self.input_dim = (int(s) for s in self.feature_groups.shape)
        self.num_features = int(num_features)
        self.jitter = float(jitter)
        self.whiten = bool(whiten)
        self._build(lengthscale)
        self.built = True

    def _build(self, lengthscale: Any) -> None:
        raise NotImplementedError

    @property
    def dtype(self) -> tf.DType:
        """The float type of q(u)."""
        raise NotImplementedError

    def prior_kl(self) -> tf.Tensor:
        """KL[q(u) ‖ p(u)] summed over the J GPs (eq. 4)."""
        raise NotImplementedError

    def latent_samples(
        self, H: tf.Tensor, num_samples: int, seed: tf.Tensor | None = None, rows: tf.Tensor | None = None
    ) -> tf.Tensor:
        """Samples of the J GP outputs at scaled features ``H`` [B, Q], ``[T, B, J]``. ``seed``: None (TF's global
        generator) or a shape-[2] seed of stateless draws; with ``rows`` (the rows' indices in the training data,
        [B] int64), the draws of :mod:`gpflow_ext.randomness` keyed by ``(seed, row)`` (what ``fit`` uses: the
        same numbers with and without ``jit_compile``)."""
        raise NotImplementedError

    def kernel_matrix(self, H1: tf.Tensor, H2: tf.Tensor) -> tf.Tensor:
        """Σ_j k_j(h_j, h'_j) on scaled features, ``[N1, N2]``."""
        raise NotImplementedError


class KISSGPGrid(LatentGPs):
    """J GPs on one KISS-GP grid with a Kronecker q(u) (the paper's method, Sections 3–4).

    :param grid_size: grid points per dimension (>= 4).
    :param prior: the grid prior, :class:`~gpflow_ext.variational.ToeplitzGridPrior` (default) or
        :class:`~gpflow_ext.variational.CirculantGridPrior` (needs ``whiten=True``).
    :param out_of_range: the grid's policy for features outside [-1, 1] (``"clamp"`` or ``"error"``).
    """

    def __init__(
        self,
        grid_size: int = 64,
        prior: GridPrior | None = None,
        out_of_range: str = "clamp",
        name: str | None = None,
    ):
        super().__init__(name=name)
        self.grid_size = check_positive_int(grid_size, "grid_size")
        prior = ToeplitzGridPrior() if prior is None else prior
        if not isinstance(prior, GridPrior):
            raise TypeError(f"prior must be a GridPrior (ToeplitzGridPrior(), CirculantGridPrior()), got {prior!r}")
        self.prior = prior
        self.out_of_range = check_choice(out_of_range, "out_of_range", ("clamp", "error"))

    def _build(self, lengthscale: Any) -> None:
        self.prior.check_whiten(self.whiten)
        J, D = self.num_gps, self.input_dim
        self.kernel = SeparateIndependent([SquaredExponential(lengthscales=[lengthscale] * D) for _ in range(J)])
        self.inducing_variable = GridInducingPoints(
            self.grid_size, input_dim=D, lower=-1.0, upper=1.0, out_of_range=self.out_of_range
        )
        self.q = KroneckerGaussian(J, self.prior.variational_sizes(self.inducing_variable))
        self.prior.init_q(self.q, self.inducing_variable, self.kernel.kernels, self.jitter, self.whiten)

    @property
    def dtype(self) -> tf.DType:
        return self.q.q_mu.dtype

    def prior_kl(self) -> tf.Tensor:
        return self.prior.kl(self.q, self.inducing_variable, self.kernel.kernels, self.jitter, self.whiten)

    @check_shapes("return: [J, M, T]")
    def sample_inducing(self, num_samples: int, seed: tf.Tensor | None = None) -> tf.Tensor:
        """Reparameterised grid values u^(t) = μ + L ε^(t) (whitened: u = R(μ + L ε)), ``[J, m, T]``."""
        return self.prior.sample(
            self.q, self.inducing_variable, self.kernel.kernels, self.jitter, self.whiten, num_samples, seed=seed
        )

    @check_shapes("v: [J, N, R]", "return: [J, M, R]")
    def grid_values(self, v: tf.Tensor) -> tf.Tensor:
        """The prior's whitening map u = (⊗_d R_d) v, ``[J, ∏ n_d, R] -> [J, m, R]``."""
        return self.prior.grid_values(self.inducing_variable, self.kernel.kernels, self.jitter, v)

    @check_shapes("H: [B, Q]", "return: [T, B, J]")
    def latent_samples(
        self, H: tf.Tensor, num_samples: int, seed: tf.Tensor | None = None, rows: tf.Tensor | None = None
    ) -> tf.Tensor:
        """f^(t) = W u^(t) (eq. 8) for one draw of u per sample shared by the batch."""
        Hg = tf.gather(H, self.feature_groups, axis=1)  # [B, J, D]
        indices, weights = interpolation_indices_and_weights(self.inducing_variable, Hg)  # [B, J, K]
        if rows is not None:  # u is shared by the batch: streams no row uses (gpflow_ext.randomness)
            u = self.prior.sample(
                self.q,
                self.inducing_variable,
                self.kernel.kernels,
                self.jitter,
                self.whiten,
                num_samples,
                keyed_seed=seed,
            )  # [J, m, T]
            return interpolate_samples(indices, weights, u)  # [T, B, J]
        u = self.sample_inducing(num_samples, seed=seed)  # [J, m, T]
        return interpolate_samples(indices, weights, u)  # [T, B, J]

    def kernel_matrix(self, H1: tf.Tensor, H2: tf.Tensor) -> tf.Tensor:
        K = 0.0
        for g, k in zip(self.feature_groups, self.kernel.kernels):
            K += k.K(tf.gather(H1, g, axis=1), tf.gather(H2, g, axis=1))
        return K


class FreeInducingPoints(LatentGPs):
    """J GPs sharing M free inducing points on the features, full q(u) and GPflow's SVGP conditional.

    :param num_inducing: M. The points start on a diagonal of [-1, 1]^Q, each feature's coordinates permuted
        (a fixed permutation) so that the dimensions of a multi-feature group are not correlated.
    """

    def __init__(self, num_inducing: int = 64, name: str | None = None):
        super().__init__(name=name)
        self.num_inducing = check_positive_int(num_inducing, "num_inducing")

    def _build(self, lengthscale: Any) -> None:
        J, D, M = self.num_gps, self.input_dim, self.num_inducing
        Q = self.num_features
        self.kernel = SeparateIndependent(
            [SquaredExponential(lengthscales=[lengthscale] * D, active_dims=g) for g in self.feature_groups.tolist()]
        )
        Z = np.tile(np.linspace(-1.0, 1.0, M)[:, None], [1, Q])  # [M, Q]
        rng = np.random.default_rng(0)
        for q in range(1, Q):  # decorrelate dimensions of a multi-D group
            Z[:, q] = rng.permutation(Z[:, q])
        self.inducing_variable = SharedIndependentInducingVariables(InducingPoints(Z))
        self.q_mu = gpflow.Parameter(np.zeros((M, J)), name="q_mu")  # [M, J]
        if self.whiten:
            q_sqrt = np.tile(np.eye(M)[None], [J, 1, 1])
        else:
            q_sqrt = tf.linalg.cholesky(Kuu(self.inducing_variable, self.kernel, jitter=self.jitter))  # [J, M, M]
        self.q_sqrt = gpflow.Parameter(q_sqrt, transform=gpflow.utilities.triangular(), name="q_sqrt")  # [J, M, M]

    @property
    def dtype(self) -> tf.DType:
        return self.q_mu.dtype

    def _jitter_context(self) -> Any:
        """GPflow's default jitter replaced by the model's for K_ZZ in ``conditional`` and ``prior_kl``."""
        return gpflow.config.as_context(dataclasses.replace(gpflow.config.config(), jitter=self.jitter))

    def prior_kl(self) -> tf.Tensor:
        with self._jitter_context():
            return prior_kl(self.inducing_variable, self.kernel, self.q_mu, self.q_sqrt, whiten=self.whiten)

    @check_shapes("H: [B, Q]", "return[0]: [B, J]", "return[1]: [B, J]")
    def marginals(self, H: tf.Tensor) -> Any:
        """The SVGP marginals q(f_j(h)) = ∫ p(f_j | u_j) q(u_j) du_j, mean and variance ``[B, J]`` each: GPflow's
        ``base_conditional`` per GP in a Python loop over the J GPs (GPflow's ``conditional`` maps over them with
        ``tf.map_fn``, whose gradient has shapes XLA cannot compile; the numbers are the same)."""
        with self._jitter_context():
            Kmms = Kuu(self.inducing_variable, self.kernel, jitter=gpflow.config.default_jitter())  # [J, M, M]
            Kmns = Kuf(self.inducing_variable, self.kernel, H)  # [J, M, B]
        means, variances = [], []
        for j, k in enumerate(self.kernel.kernels):
            mean, var = base_conditional(
                Kmns[j], Kmms[j], k.K_diag(H), self.q_mu[:, j : j + 1], q_sqrt=self.q_sqrt[j : j + 1], white=self.whiten
            )  # [B, 1] each
            means.append(mean)
            variances.append(var)
        return tf.concat(means, axis=1), tf.concat(variances, axis=1)  # [B, J] each

    @check_shapes("H: [B, Q]", "return: [T, B, J]")
    def latent_samples(
        self, H: tf.Tensor, num_samples: int, seed: tf.Tensor | None = None, rows: tf.Tensor | None = None
    ) -> tf.Tensor:
        """Independent draws from the marginals q(f_j(h_b)) (the likelihood factorises over points)."""
        mean, var = self.marginals(H)  # [B, J], [B, J]
        eps_shape = tf.concat([[num_samples], tf.shape(mean)], 0)
        if rows is not None:  # each row's draws from its own stream (gpflow_ext.randomness)
            eps = row_normal(seed, rows, num_samples * self.num_gps, mean.dtype)  # [B, T·J]
            eps = tf.transpose(tf.reshape(eps, [-1, num_samples, self.num_gps]), [1, 0, 2])  # [T, B, J]
        elif seed is None:
            eps = tf.random.normal(eps_shape, dtype=mean.dtype)
        else:
            eps = tf.random.stateless_normal(eps_shape, seed=seed, dtype=mean.dtype)
        return mean[None] + tf.sqrt(var)[None] * eps  # [T, B, J]

    def kernel_matrix(self, H1: tf.Tensor, H2: tf.Tensor) -> tf.Tensor:
        K = 0.0
        for k in self.kernel.kernels:  # the kernels carry their groups as active_dims
            K += k.K(H1, H2)
        return K
