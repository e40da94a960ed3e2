"""Inducing variables: subspace inducing inputs Z = A X̃."""
from .subspace import SubspaceInducingPoints, subspace_basis
