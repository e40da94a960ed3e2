"""Priors p(u) on a KISS-GP grid as objects: Toeplitz (exact K_ZZ) or circulant (FFT) (SV-DKL Section 4).

J GPs share one :class:`~gpflow_ext.inducing_variables.GridInducingPoints` grid of m = ∏_d m_d points, and
q is a :class:`~gpflow_ext.variational.KroneckerGaussian`. A grid prior knows how the grid values u relate to
q's coordinates v through a whitening map u = (⊗_d R_d) v with R_d R_dᵀ = K_d:

* :class:`ToeplitzGridPrior`: R_d = chol(K_d) of the base kernel's Toeplitz factors (jitter included), v of
  the grid's own size; q may also be unwhitened (q(u) directly, KL against ⊗_d K_d, eq. 10–11).
* :class:`CirculantGridPrior`: the paper's circulant approximation of Toeplitz K_ZZ. Each axis embeds in a
  ring of n_d ≈ ``period_factor``·(m_d − 1) points; R_d = [C_d^{1/2} F_dᵀ]_{:m_d} by inverse FFT
  (:func:`~gpflow_ext.covariances.grid.circulant_sqrt_apply`), v in the rings' Fourier coordinates with
  p(v) = N(0, I). q covers the ``variational_size`` lowest frequencies of each axis; the others keep their
  prior (:meth:`GridPrior.fill`). Needs the whitened parameterisation.

Each prior computes its own factors, square roots, KL pieces and samples; the model only calls them.
"""

from collections.abc import Callable, Sequence
from functools import partial

import numpy as np
import tensorflow as tf
from check_shapes import check_shapes
from gpflow.kernels import Kernel

from ..covariances import grid as grid_covariances
from ..inducing_variables.grid import GridInducingPoints
from ..randomness import shared_normal
from ..validation import check_positive_int
from .kronecker import KroneckerGaussian, kron_apply

__all__ = ["GridPrior", "ToeplitzGridPrior", "CirculantGridPrior", "stack_gps", "grid_prior_from_name"]

SqrtFn = Callable[[tf.Tensor], tf.Tensor]


def stack_gps(per_gp: list[list[tf.Tensor]]) -> list[tf.Tensor]:
    """J lists of D per-dimension tensors -> D tensors batched over the J GPs."""
    return [tf.stack([f[d] for f in per_gp]) for d in range(len(per_gp[0]))]


def toeplitz_prior_factors(grid: GridInducingPoints, kernels: Sequence[Kernel], jitter: float) -> list[tf.Tensor]:
    """K_ZZ Kronecker factors of J GPs on ``grid``, jitter included: D × ``[J, m_d, m_d]``."""
    return stack_gps([grid_covariances.grid_kuu_factors(grid, k, jitter) for k in kernels])


class GridPrior:
    """p(u) for J GPs on one grid, seen through q's coordinates v (u = (⊗_d R_d) v when whitened).

    Subclasses give :meth:`latent_sizes` (the sizes n_d of v per axis), :meth:`variational_sizes` (q's sizes)
    and :meth:`sqrt_factors` (the maps R_d); :meth:`fill` places q's block in v (the identity when q covers v).
    """

    #: whether q(u) may be parameterised directly (unwhitened), with a KL against ⊗_d K_d
    supports_unwhitened = True

    def latent_sizes(self, grid: GridInducingPoints) -> tuple[int, ...]:
        raise NotImplementedError

    def variational_sizes(self, grid: GridInducingPoints) -> tuple[int, ...]:
        return self.latent_sizes(grid)

    def sqrt_factors(self, grid: GridInducingPoints, kernels: Sequence[Kernel], jitter: float) -> list[SqrtFn]:
        """The whitening maps R_d as functions ``[J, n_d, r] -> [J, m_d, r]``."""
        raise NotImplementedError

    def check_whiten(self, whiten: bool) -> None:
        if not whiten and not self.supports_unwhitened:
            raise ValueError(f"{type(self).__name__} needs whiten=True")

    def init_q(
        self, q: KroneckerGaussian, grid: GridInducingPoints, kernels: Sequence[Kernel], jitter: float, whiten: bool
    ) -> None:
        """q = p: μ = 0, L_d = I (whitened) or chol(K_d): the KL starts at zero."""
        q.init_from_prior(None if whiten else toeplitz_prior_factors(grid, kernels, jitter))

    def kl(
        self, q: KroneckerGaussian, grid: GridInducingPoints, kernels: Sequence[Kernel], jitter: float, whiten: bool
    ) -> tf.Tensor:
        """Σ_j KL[q ‖ p] (eq. 10–11): against N(0, I) when whitened, else against ⊗_d K_{j,d}."""
        return q.kl(None if whiten else toeplitz_prior_factors(grid, kernels, jitter))

    def fill(
        self,
        grid: GridInducingPoints,
        v_low: tf.Tensor,
        num_samples: int,
        seed: tf.Tensor | None = None,
        keyed_seed: tf.Tensor | None = None,
    ):
        """q's samples ``[J, ∏ k_d, T]`` as full coordinates ``[J, ∏ n_d, T]``: q's block placed first along each
        axis (the circulant prior's low frequencies), the remaining coordinates drawn from their prior N(0, 1);
        the identity when q covers every coordinate (``variational_sizes == latent_sizes``)."""
        sizes, variational_sizes = self.latent_sizes(grid), self.variational_sizes(grid)
        if variational_sizes == sizes:
            return v_low
        J = int(v_low.shape[0])  # static: no graph ops before the random draw
        low = tf.reshape(v_low, [J, *variational_sizes, num_samples])  # [J, k_1..k_D, T]
        pads = [[0, 0]] + [[0, n - k] for n, k in zip(sizes, variational_sizes)] + [[0, 0]]
        mask = tf.pad(tf.ones_like(low), pads)  # [J, n_1..n_D, T]
        if keyed_seed is not None:
            num = int(np.prod(sizes)) * num_samples
            eps = tf.reshape(shared_normal(keyed_seed, J, num, v_low.dtype, first_stream=J), tf.shape(mask))
        elif seed is None:
            eps = tf.random.normal(tf.shape(mask), dtype=v_low.dtype)
        else:
            eps = tf.random.stateless_normal(tf.shape(mask), seed=seed, dtype=v_low.dtype)
        v = tf.pad(low, pads) + (1.0 - mask) * eps
        return tf.reshape(v, [J, -1, num_samples])  # [J, ∏ n_d, T]

    @check_shapes("v: [J, N, R]", "return: [J, M, R]")
    def grid_values(
        self, grid: GridInducingPoints, kernels: Sequence[Kernel], jitter: float, v: tf.Tensor
    ) -> tf.Tensor:
        """The whitening map u = (⊗_d R_d) v: ``[J, ∏ n_d, R] -> [J, m, R]``."""
        return kron_apply(self.latent_sizes(grid), v, self.sqrt_factors(grid, kernels, jitter))

    @check_shapes("return: [J, M, T]")
    def sample(
        self,
        q: KroneckerGaussian,
        grid: GridInducingPoints,
        kernels: Sequence[Kernel],
        jitter: float,
        whiten: bool,
        num_samples: int,
        seed: tf.Tensor | None = None,
        keyed_seed: tf.Tensor | None = None,
    ) -> tf.Tensor:
        """Reparameterised grid values u^(t) = μ + L ε^(t) (whitened: u = R(μ + L ε)), ``[J, m, T]``.

        ``seed``: None (TF's global generator) or a shape-[2] integer tensor for stateless draws.
        ``keyed_seed``: a shape-[2] int64 seed whose draws come from :func:`gpflow_ext.randomness.shared_normal`
        (q's ε from streams 0..J-1, the circulant prior's high frequencies from streams J..2J-1): what ``fit``
        uses, the same numbers with and without ``jit_compile``."""
        seeds = (None, None) if seed is None else tuple(tf.unstack(tf.random.experimental.stateless_split(seed, 2)))
        eps = None
        if keyed_seed is not None:
            eps = shared_normal(keyed_seed, q.num_gps, q.num_inducing * num_samples, q.q_mu.dtype)  # [J, k·T]
        v = q.sample(num_samples, seed=seeds[0], eps=eps)  # [J, ∏ k_d, T]
        v = self.fill(grid, v, num_samples, seed=seeds[1], keyed_seed=keyed_seed)  # [J, ∏ n_d, T]
        return self.grid_values(grid, kernels, jitter, v) if whiten else v


class ToeplitzGridPrior(GridPrior):
    """The exact K_ZZ = ⊗_d K_d of the base kernel, whitened by Cholesky factors (O(m_d³) per axis)."""

    def latent_sizes(self, grid: GridInducingPoints) -> tuple[int, ...]:
        return tuple(grid.grid_sizes)

    def sqrt_factors(self, grid: GridInducingPoints, kernels: Sequence[Kernel], jitter: float) -> list[SqrtFn]:
        chols = [tf.linalg.cholesky(K) for K in toeplitz_prior_factors(grid, kernels, jitter)]
        return [partial(tf.linalg.matmul, R) for R in chols]

    def __repr__(self) -> str:
        return "ToeplitzGridPrior()"


class CirculantGridPrior(GridPrior):
    """The base kernel periodised on rings of n_d points, square roots by FFT, no Cholesky.

    :param period_factor: the ring's period in units of the grid's span (>= 2; default 3).
    :param variational_size: free Fourier coordinates per axis (default: the grid size, as many free numbers
        as the paper's full L); higher frequencies stay at their prior N(0, 1).

    The prior is exactly :func:`~gpflow_ext.covariances.grid.periodised_grid_kuu` = R Rᵀ, which differs from
    the squared exponential by about k(P − span) (1.2e-8 for ℓ = 0.7 on [-1, 1] with the default factor).
    """

    supports_unwhitened = False

    def __init__(self, period_factor: float = 3.0, variational_size: int | None = None):
        if not (isinstance(period_factor, (int, float, np.floating, np.integer)) and period_factor >= 2.0):
            raise ValueError(f"period_factor must be a number >= 2, got {period_factor!r}")
        self.period_factor = float(period_factor)
        self.variational_size = check_positive_int(variational_size, "variational_size", allow_none=True)

    def latent_sizes(self, grid: GridInducingPoints) -> tuple[int, ...]:
        """The ring sizes n_d (:func:`~gpflow_ext.covariances.grid.circulant_embedding_size`)."""
        return tuple(grid_covariances.circulant_embedding_size(m_d, self.period_factor) for m_d in grid.grid_sizes)

    def variational_sizes(self, grid: GridInducingPoints) -> tuple[int, ...]:
        return tuple(
            min(n_d, int(self.variational_size or m_d)) for n_d, m_d in zip(self.latent_sizes(grid), grid.grid_sizes)
        )

    def sqrt_factors(self, grid: GridInducingPoints, kernels: Sequence[Kernel], jitter: float) -> list[SqrtFn]:
        ring_sizes = self.latent_sizes(grid)
        spectra = stack_gps(
            [grid_covariances.grid_circulant_spectra(grid, k, ring_sizes, jitter) for k in kernels]
        )  # D × [J, n_d//2+1]
        return [partial(grid_covariances.circulant_sqrt_apply, lam, m=m) for lam, m in zip(spectra, grid.grid_sizes)]

    def __repr__(self) -> str:
        return f"CirculantGridPrior(period_factor={self.period_factor}, variational_size={self.variational_size})"


GRID_PRIOR_NAMES = ("toeplitz", "circulant")


def grid_prior_from_name(name: str, period_factor: float = 3.0, variational_size: int | None = None) -> GridPrior:
    """``"toeplitz"`` -> :class:`ToeplitzGridPrior`, ``"circulant"`` -> :class:`CirculantGridPrior` (the
    command-line names)."""
    if name == "toeplitz":
        return ToeplitzGridPrior()
    if name == "circulant":
        return CirculantGridPrior(period_factor, variational_size)
    raise ValueError(f"grid_prior must be one of {GRID_PRIOR_NAMES}, got {name!r}")
