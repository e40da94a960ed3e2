"""Likelihoods: the MLGPF multi-label Bernoulli-logit with factor loadings (eq. 12-13, 21, 23), SV-DKL's
softmax over mixed latent GPs, expectations over observed entries only (``masked``, for GPLVF), one likelihood
per column (``columns``), GPLVF's expected log-likelihood per row (``rows``) and an ordered probit with learnt bin
edges (:class:`Ordinal`); what each likelihood's observations may be (``support``)."""

from . import columns, masked, mixed_softmax, ordinal, rows, support
from .mixed_softmax import MixedSoftmax
from .multilabel import MultiLabelBernoulli
from .ordinal import Ordinal

__all__ = [
    "MultiLabelBernoulli",
    "MixedSoftmax",
    "Ordinal",
    "columns",
    "masked",
    "mixed_softmax",
    "ordinal",
    "rows",
    "support",
]
