from . import svdkl
"""Models built from gpflow_ext's pieces."""
from .mlgpf import MLGPF
from .preconditioned_svgp import PreconditionedSVGP
from .softmax_network import SoftmaxNetwork
from .svdkl import SVDKL
"""Models built from GPflow pieces."""
from .gplvf import GPLVF
