"""What :func:`~gpflow_ext.training.fit` checks and prepares before its loop: the arguments, the
training arrays (through each model's :func:`~gpflow_ext.validation.check_training_data`), the
variables to train, and the run fingerprint stored with every checkpoint."""

import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import gpflow
import numpy as np
import tensorflow as tf
from gpflow.keras import tf_keras

from ..validation import check_model, check_positive_int, check_positive_number, check_training_data
from .callbacks import Callback, Checkpointing
from .checkpoints import check_folder, data_fingerprint
from .data import ArrayData, ArrayInput, DatasetInput, HeldData
from .diagnosis import variable_names

__all__ = ["resolve_variables", "check_arguments", "training_dtype", "training_input", "run_fingerprint"]


def resolve_variables(model: tf.Module, variables: Sequence[Any] | None) -> list:
    """The tf.Variables to train: all trainable ones, or those of the given Parameters/Modules/Variables."""
    if variables is None:
        candidates = list(model.trainable_variables)
    else:
        if isinstance(variables, (tf.Variable, gpflow.Parameter, tf.Module)):
            variables = [variables]
        candidates = []
        for i, item in enumerate(variables):
            if isinstance(item, gpflow.Parameter):
                if not item.trainable:
                    raise ValueError(
                        f"variables[{i}] ({item.name}) is a non-trainable gpflow.Parameter; "
                        "use gpflow.set_trainable(parameter, True) first"
                    )
                candidates.append(item.unconstrained_variable)
            elif isinstance(item, tf.Module):
                candidates.extend(item.trainable_variables)
            elif isinstance(item, tf.Variable):
                candidates.append(item)
            else:
                raise TypeError(
                    f"variables[{i}] must be a gpflow.Parameter, tf.Variable or tf.Module, got {type(item).__name__}"
                )
    unique = list({v.ref(): v for v in candidates}.values())
    if not unique:
        raise ValueError("there are no trainable variables to optimise (check gpflow.set_trainable / variables=)")
    return unique


def check_arguments(model, epochs, batch_size, seed, optimizer, learning_rate, callbacks, strategy):
    """Check :func:`~gpflow_ext.training.fit`'s arguments before anything is traced; raise naming the argument."""
    check_model(model)
    if strategy is not None and not isinstance(strategy, tf.distribute.Strategy):
        raise TypeError(f"strategy must be a tf.distribute.Strategy, got {type(strategy).__name__}")
    ints = dict(
        epochs=check_positive_int(epochs, "epochs", minimum=0),
        batch_size=check_positive_int(batch_size, "batch_size", allow_none=True),
    )
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    if optimizer is None and not isinstance(learning_rate, tf_keras.optimizers.schedules.LearningRateSchedule):
        check_positive_number(learning_rate, "learning_rate", "a positive number or a schedule")
    callbacks = (callbacks,) if callable(callbacks) and not isinstance(callbacks, Callback) else tuple(callbacks)
    for i, callback in enumerate(callbacks):
        if not (isinstance(callback, Callback) or callable(callback)):
            raise TypeError(f"callbacks[{i}] is not callable: {callback!r}")
    return ints, int(seed), callbacks


def training_dtype(model: tf.Module, variables: Sequence[tf.Variable], check: bool = True) -> tf.DType:
    """The float type of the trained variables (``gpflow.default_float()`` if none is floating):
    floating data are cast to it. A mix of float types raises (``check=False``: gives the default)."""
    floating = {v.dtype.base_dtype for v in variables if v.dtype.is_floating}
    if len(floating) > 1 and not check:
        return tf.as_dtype(gpflow.default_float())
    if len(floating) > 1:
        named = sorted(f"{v.name} ({v.dtype.name})" for v in variables if v.dtype.is_floating)
        raise ValueError(
            f"the trained parameters of {type(model).__name__} mix float types {sorted(d.name for d in floating)}: "
            f"{named[:4]}; build the whole model under gpflow.config.as_context(gpflow.config.Config(float=...))"
        )
    return floating.pop() if floating else tf.as_dtype(gpflow.default_float())


def training_input(model, data, batch_size, dtype, seed, shuffle, strategy):
    """What the loop iterates over: :class:`HeldData` (internal-data models), :class:`ArrayInput`
    (arrays checked by the model's :func:`check_training_data`) or :class:`DatasetInput`."""
    name = type(model).__name__
    if isinstance(model, gpflow.models.InternalDataTrainingLossMixin):
        if data is not None:
            raise ValueError(f"{name} holds its own data (InternalDataTrainingLossMixin); call fit(model, data=None)")
        if batch_size is not None:
            raise ValueError(f"{name} trains full batch; batch_size must be None")
        return HeldData()
    if data is None:
        raise ValueError(f"{name} needs training data: fit(model, (X, Y), ...)")
    if isinstance(data, tf.data.Dataset) or (callable(data) and not isinstance(data, (tuple, list))):
        if batch_size is not None:
            raise ValueError("batch_size must be None with a tf.data.Dataset: batch the dataset itself")
        if strategy is not None:
            raise ValueError("data: a tf.data.Dataset is not supported with a strategy yet; pass arrays")
        if getattr(model, "num_data", "absent") is None:
            raise ValueError(
                f"{name}.num_data is None, so each minibatch would be treated as the whole data set; "
                "build the model with num_data=N to train on minibatches from a tf.data.Dataset"
            )
        return DatasetInput(data, dtype)
    arrays = check_training_data(model, data)
    num_data = int(arrays[0].shape[0])
    if batch_size is not None and batch_size >= num_data:
        batch_size = None
    model_num_data = getattr(model, "num_data", "absent")
    if batch_size is not None and model_num_data is None:
        raise ValueError(
            f"{name}.num_data is None, so each minibatch would be treated as the whole "
            f"data set; build the model with num_data={num_data} (N) to train with batch_size={batch_size}"
        )
    if isinstance(model_num_data, (int, np.integer)) and int(model_num_data) != num_data:
        warnings.warn(
            f"{name}.num_data={int(model_num_data)} but data has {num_data} rows; "
            "the minibatch objective is scaled by num_data / batch size",
            stacklevel=2,
        )
    fingerprint = {**data_fingerprint(arrays), "batch_size": batch_size, "shuffle": bool(shuffle)}
    return ArrayInput(
        ArrayData(arrays, dtype),
        batch_size or num_data,
        seed,
        shuffle,
        gather=strategy is None,
        fingerprint=fingerprint,
    )


def run_fingerprint(model, variables, training, seed, dtype, update) -> dict:
    """What makes a run itself (model class and parameter shapes, trained variables, data, seed, dtype and
    update rule), stored with its checkpoints so that a resume into a different run is refused."""
    shapes = {
        path: [list(leaf.shape), leaf.dtype.name]
        for path, leaf in gpflow.utilities.parameter_dict(model).items()
        if hasattr(leaf, "shape")
    }
    return {
        "model": type(model).__qualname__,
        "variables": shapes,
        "trained": variable_names(model, variables),
        "data": training.fingerprint(),
        "steps_per_epoch": training.steps_per_epoch,
        "seed": seed,
        "dtype": dtype.name,
        "optimizer": update.config(),
    }


def resolve_checkpointing(
    callbacks: Sequence[Any], checkpoint_dir: str | Path | None, logdir: str | Path | None
) -> tuple[Checkpointing | None, tuple]:
    """The run's one :class:`Checkpointing` (from ``callbacks``, else ``checkpoint_dir``, else
    ``logdir/checkpoints``, else none) and the other callbacks; folders are checked before training."""
    savers = [c for c in callbacks if isinstance(c, Checkpointing)]
    callbacks = tuple(c for c in callbacks if not isinstance(c, Checkpointing))
    if len(savers) > 1:
        raise ValueError(f"callbacks hold {len(savers)} Checkpointing callbacks; a run has one checkpoint folder")
    if savers and checkpoint_dir is not None:
        raise ValueError(
            "pass checkpoint_dir= or a Checkpointing callback, not both "
            "(checkpoint_dir=D is short for callbacks=[Checkpointing(D)])"
        )
    if logdir is not None:
        check_folder(logdir, "logdir")
    saver = savers[0] if savers else None
    if saver is None and checkpoint_dir is not None:
        saver = Checkpointing(checkpoint_dir)
    elif saver is None and logdir is not None:
        saver = Checkpointing(Path(logdir) / "checkpoints")
    if saver is not None:  # the folder may have been replaced by a file since the callback was made
        check_folder(saver.directory, "checkpoint_dir")
    return saver, callbacks
