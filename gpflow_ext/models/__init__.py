"""Models built from gpflow_ext's pieces."""
from .preconditioned_svgp import PreconditionedSVGP
