from . import grid
"""Inducing variables: subspace inducing inputs Z = A X̃."""
from .subspace import SubspaceInducingPoints, subspace_basis
from .basis import BasisInducingPoints
from .grid import BoundedScaling, GridInducingPoints
