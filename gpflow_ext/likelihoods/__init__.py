from . import mixed_softmax
"""Likelihoods: the MLGPF multi-label Bernoulli-logit with factor loadings (eq. 12-13, 21, 23)."""
from .multilabel import MultiLabelBernoulli
from .mixed_softmax import MixedSoftmax
from . import masked
