"""GPLVF's names and contracts before the split, kept for one release (``DeprecationWarning``).

* :data:`MOVED`: old names of ``gpflow_ext.models.gplvf`` -> their new homes (served by that module's
  ``__getattr__``);
* :data:`LEGACY_FACTORIES`: what the deprecated constructor arguments ``kernel=<name>`` and ``encoder=True`` call.
  The named kernels and the encoder network are settings of ``gpflow_ext.recipes.gplvf``, which fills this table
  (and adds its names to :data:`MOVED`) when ``gpflow_ext`` is imported, so that the models never import recipes;
* :class:`LegacyPredictions`: ``GPLVF.mean_at_pairs`` and the old ``predict_y(x_mean, x_var, ...)`` / ``predict_log_density(Y_test, x_mean,
  x_var, ...)`` contracts (numpy, Monte Carlo through q(x*)), recognised by an array where GPflow's contract has
  ``full_cov``.
"""
from typing import Any, Callable, Dict

import numpy as np

from .._deprecation import _warn
from ..conditionals.pairs import mean_at_pairs

MOVED = {  # old name in gpflow_ext.models.gplvf -> "module:new name"
    "validate_observations": "gpflow_ext.validation:check_observations",
    "masked_gaussian_expected_log_likelihood": "gpflow_ext.likelihoods.masked:masked_gaussian_expected_log_likelihood",
    "NewRowsLatents": "gpflow_ext.models.new_rows_latents:NewRowsLatents",
    "BASE_COVARIANCES": "gpflow_ext.latents:BASE_COVARIANCE_NAMES",
    "conditional_at_pairs": "gpflow_ext.conditionals.pairs:conditional_at_pairs",
    "VARIANCE_BY": "gpflow_ext.conditionals.pairs:VARIANCE_BY_NAMES",
    "DENSE_VARIANCE_MIN_OBSERVED_FRACTION": "gpflow_ext.conditionals.pairs:DENSE_VARIANCE_MIN_OBSERVED_FRACTION",
    "gaussian_kl_to_standard_normal": "gpflow_ext.kullback_leiblers:gaussian_kl_to_standard_normal",
    "flow_kl_to_standard_normal": "gpflow_ext.kullback_leiblers:flow_kl_to_standard_normal",
    "KL_X_ESTIMATORS": "gpflow_ext.kullback_leiblers:KL_X_NAMES",
}

LEGACY_FACTORIES: Dict[str, Callable] = {}


def legacy_factory(argument: str, value: Any, new: str) -> Callable:
    """Warn that ``GPLVF(argument=value)`` is deprecated for ``new``; return the factory that builds it."""
    _warn(f"GPLVF({argument}={value!r})", new, stacklevel=4)
    if argument not in LEGACY_FACTORIES:
        raise RuntimeError(f"import gpflow_ext (not only gpflow_ext.models) to use the deprecated {argument}={value!r}")
    return LEGACY_FACTORIES[argument]


def is_old_contract(second_argument: Any, keywords: Dict[str, Any]) -> bool:
    """True for a call in the old contract: an array/tensor as the second positional argument (GPflow's
    ``full_cov`` flag there) or the old keywords (``num_samples``, ``seed``, ``mask``, ``x_var``...)."""
    array = not isinstance(second_argument, (bool, np.bool_)) and second_argument is not None
    return bool(keywords) or (array and np.ndim(second_argument) >= 1)


class LegacyPredictions:
    """The old prediction contracts, for :class:`~gpflow_ext.models.GPLVF`'s ``predict_y`` / ``predict_log_density``."""

    def _old_predict_y(self, x_mean, x_var, keywords):
        _warn("GPLVF.predict_y(x_mean, x_var, ...)", "GPLVF.predict_y_marginal(x_mean, x_var, ...) (tensors)", 4)
        x_var = keywords.pop("x_var", x_var)
        mean, var = self.predict_y_marginal(keywords.pop("x_mean", x_mean), x_var, **keywords)
        return mean.numpy(), var.numpy()

    def _old_predict_log_density(self, Y_test, x_mean, x_var, keywords):
        _warn("GPLVF.predict_log_density(Y_test, x_mean, x_var, ...)", "GPLVF.predict_log_density_marginal(...)", 4)
        x_mean, x_var = keywords.pop("x_mean", x_mean), keywords.pop("x_var", x_var)
        return self.predict_log_density_marginal(keywords.pop("Y_test", Y_test), x_mean, x_var, **keywords).numpy()

    def mean_at_pairs(self, x, row_index, output_index):
        """Deprecated: ``gpflow_ext.conditionals.pairs.mean_at_pairs(model.mean_function, x, rows, outputs, D)``."""
        _warn("GPLVF.mean_at_pairs", "gpflow_ext.conditionals.pairs.mean_at_pairs(model.mean_function, ...)")
        return mean_at_pairs(self.mean_function, x, row_index, output_index, self.output_dim)
