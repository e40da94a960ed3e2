from . import mixed_softmax
from .mixed_softmax import MixedSoftmax
