"""One training loop for every GPflow model: :func:`fit` (see its docstring), built from parts:
updates (optimizers, natural gradients), the compiled step, callbacks, checkpoints, distribute."""

from .callbacks import Callback, Checkpointing, FunctionCallback, Metrics, ProgressBar, RunState, TensorBoard
from .data import ArrayData, minibatch_dataset
from .distribute import is_chief, multi_worker_strategy
from .early_stopping import EarlyStopping
from .errors import CheckpointMismatchError, NonFiniteObjectiveError, TrainingStepError
from .fit import fit
from .history import History
from .optimizers import GroupedOptimizer, adam_by_group
from .schedules import LEARNING_RATE_DECAYS, decayed_learning_rate
from .updates import NaturalGradientUpdate, OptimizerUpdate, Update

__all__ = [
    "fit",
    "History",
    "NonFiniteObjectiveError",
    "TrainingStepError",
    "CheckpointMismatchError",
    "ArrayData",
    "minibatch_dataset",
    "GroupedOptimizer",
    "adam_by_group",
    "LEARNING_RATE_DECAYS",
    "decayed_learning_rate",
    "Update",
    "OptimizerUpdate",
    "NaturalGradientUpdate",
    "Callback",
    "RunState",
    "ProgressBar",
    "TensorBoard",
    "Metrics",
    "FunctionCallback",
    "Checkpointing",
    "EarlyStopping",
    "multi_worker_strategy",
    "is_chief",
]
