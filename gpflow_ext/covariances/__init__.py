"""Kuu/Kuf registrations with GPflow's dispatchers for the new inducing variables."""
from . import subspace
from .subspace import Kff, project_inputs, to_input_tensor
