from . import svdkl
"""Models built from gpflow_ext's pieces."""
from .mlgpf import MLGPF
from .preconditioned_svgp import PreconditionedSVGP
from .svdkl import SVDKL, pretrain_and_fit
"""Models built from GPflow pieces."""
from .gplvf import GPLVF
