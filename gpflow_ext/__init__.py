"""gpflow_ext: GPflow 2 extensions for three papers.

* Fully scalable GPs: subspace inducing inputs, the preconditioned q(u) and MLGPF.
* SV-DKL: stochastic variational deep kernel learning with KISS-GP grids.
* GPLVF: Bayesian GPLVM with planar-flow q(X) for massively missing data.

Importing this package registers the new ``Kuu``/``Kuf``/``conditional``/``prior_kl``
implementations with GPflow's dispatchers, and each model's training-data rules with
:func:`gpflow_ext.validation.check_training_data`; nothing more. ``training``, ``recipes``, ``data``
and ``serving`` (and the small helpers ``metrics``, ``latents``, ``randomness``) load on first use:
``gpflow_ext.recipes.mlgpf`` works after a plain ``import gpflow_ext``.
"""

__version__ = "0.3.0"  # the one version source: pyproject.toml reads it

import importlib
from typing import TYPE_CHECKING, Any

from . import (
    bijectors,
    conditionals,
    config,
    covariances,
    inducing_variables,
    kullback_leiblers,
    likelihoods,
    models,
    posteriors,
    results,  # reads the git state the running code comes from, for result files' provenance
    utilities,
    validation,
    variational,
)

if TYPE_CHECKING:  # the modules loaded on first use, for type checkers
    from . import data, latents, metrics, randomness, recipes, scripts, serving, training

#: submodules imported when first used, through the module ``__getattr__`` below (PEP 562)
_ON_FIRST_USE = ("data", "latents", "metrics", "randomness", "recipes", "scripts", "serving", "training")

__all__ = [
    "bijectors",
    "conditionals",
    "config",
    "covariances",
    "data",
    "inducing_variables",
    "kullback_leiblers",
    "latents",
    "likelihoods",
    "metrics",
    "models",
    "posteriors",
    "randomness",
    "recipes",
    "results",
    "scripts",
    "serving",
    "training",
    "utilities",
    "validation",
    "variational",
]


def __getattr__(name: str) -> Any:
    if name in _ON_FIRST_USE:
        return importlib.import_module(f"{__name__}.{name}")  # also binds it here: later lookups are direct
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
