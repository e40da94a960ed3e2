from . import svdkl
from .svdkl import SVDKL, pretrain_and_fit
