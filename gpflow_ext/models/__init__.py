"""Models built from gpflow_ext's pieces."""

from .gplvf import GPLVF
from .mlgpf import MLGPF
from .preconditioned_svgp import PreconditionedSVGP
from .softmax_network import SoftmaxNetwork
from .svdkl import SVDKL

__all__ = ["MLGPF", "PreconditionedSVGP", "SoftmaxNetwork", "SVDKL", "GPLVF"]
