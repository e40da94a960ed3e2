from . import kronecker
from .kronecker import KroneckerGaussian
