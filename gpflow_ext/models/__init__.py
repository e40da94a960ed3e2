"""Models built from gpflow_ext's pieces."""
from .mlgpf import MLGPF
from .preconditioned_svgp import PreconditionedSVGP
from .softmax_network import SoftmaxNetwork
from .svdkl import SVDKL
from .gplvf import GPLVF

__all__ = ["MLGPF", "PreconditionedSVGP", "SoftmaxNetwork", "SVDKL", "GPLVF"]
