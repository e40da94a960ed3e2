"""Kuu/Kuf registrations with GPflow's dispatchers for the new inducing variables."""

from . import grid, subspace
from .subspace import Kff, inducing_covariances, project_inputs

__all__ = ["Kff", "inducing_covariances", "project_inputs", "grid", "subspace"]
