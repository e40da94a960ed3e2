from . import grid
from . import subspace
"""Kuu/Kuf registrations with GPflow's dispatchers for the new inducing variables."""
from .subspace import Kff, inducing_covariances, project_inputs
