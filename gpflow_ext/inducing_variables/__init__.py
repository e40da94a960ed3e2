"""Inducing variables: subspace inducing inputs Z = A X̃ (MLGPF) and KISS-GP grids (SV-DKL)."""

from . import grid
from .basis import BasisInducingPoints
from .grid import BoundedScaling, GridInducingPoints
from .subspace import SubspaceInducingPoints, subspace_basis

__all__ = [
    "SubspaceInducingPoints",
    "subspace_basis",
    "BasisInducingPoints",
    "BoundedScaling",
    "GridInducingPoints",
    "grid",
]
