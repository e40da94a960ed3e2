"""Likelihoods: the MLGPF multi-label Bernoulli-logit with factor loadings (eq. 12-13, 21, 23), SV-DKL's
softmax over mixed latent GPs, and expectations over observed entries only (``masked``, for GPLVF)."""

from . import masked, mixed_softmax
from .mixed_softmax import MixedSoftmax
from .multilabel import MultiLabelBernoulli

__all__ = ["MultiLabelBernoulli", "MixedSoftmax", "masked", "mixed_softmax"]
