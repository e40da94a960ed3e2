"""Variational q(u) families."""

from . import kronecker
from .grid_priors import CirculantGridPrior, GridPrior, ToeplitzGridPrior
from .kronecker import KroneckerGaussian
from .latent_gps import FreeInducingPoints, KISSGPGrid, LatentGPs
from .packed_lower import fill_lower, lower_factors, packed_layout, whitened_gauss_kl, whitened_gauss_kl_packed
from .preconditioned import (
    PreconditionedGaussian,
    preconditioned_conditional,
    preconditioned_inverse_terms,
    preconditioned_kl,
    preconditioned_kl_and_marginals,
    preconditioned_mean_and_covariance,
)

__all__ = [
    "PreconditionedGaussian",
    "preconditioned_conditional",
    "preconditioned_inverse_terms",
    "preconditioned_kl",
    "preconditioned_kl_and_marginals",
    "preconditioned_mean_and_covariance",
    "KroneckerGaussian",
    "CirculantGridPrior",
    "GridPrior",
    "ToeplitzGridPrior",
    "FreeInducingPoints",
    "KISSGPGrid",
    "LatentGPs",
    "kronecker",
    "fill_lower",
    "lower_factors",
    "packed_layout",
    "whitened_gauss_kl",
    "whitened_gauss_kl_packed",
]
