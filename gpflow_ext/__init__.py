"""gpflow_ext: GPflow 2 extensions for three papers.

* Fully scalable GPs: subspace inducing inputs, the preconditioned q(u) and MLGPF.
* SV-DKL: stochastic variational deep kernel learning with KISS-GP grids.
* GPLVF: Bayesian GPLVM with planar-flow q(X) for massively missing data.

Importing this package registers the new ``Kuu``/``Kuf``/``conditional``/``prior_kl``
implementations with GPflow's dispatchers, and each model's training-data rules with
:func:`gpflow_ext.validation.check_training_data`.
"""
__version__ = "0.2.0"  # the one version source: pyproject.toml reads it

from . import bijectors
from . import config
from . import covariances
from . import posteriors
from . import data
from . import inducing_variables
from . import likelihoods
from . import metrics
from . import models
from . import training
from . import validation
from . import variational
from . import serving
from . import conditionals
from . import recipes
from . import results  # reads the git state the running code comes from, for result files' provenance

from . import kullback_leiblers
from . import latents
