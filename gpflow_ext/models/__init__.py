"""Models built from GPflow pieces."""
from .gplvf import GPLVF
