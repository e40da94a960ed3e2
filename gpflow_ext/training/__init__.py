"""One training loop for every GPflow model: :func:`fit` (see its docstring)."""
from .checks import NonFiniteObjectiveError
from .data import ArrayData, minibatch_dataset
from .fit import fit
from .history import History
from .optimizers import GroupedOptimizer, adam_by_group
from .schedules import LEARNING_RATE_DECAYS, decayed_learning_rate

__all__ = ["fit", "History", "NonFiniteObjectiveError", "ArrayData", "minibatch_dataset", "GroupedOptimizer",
           "adam_by_group", "LEARNING_RATE_DECAYS", "decayed_learning_rate"]
