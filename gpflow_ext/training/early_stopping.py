"""Early stopping as a part of :func:`gpflow_ext.training.fit`: stop when a monitored score stops improving and
hand back the variables of its best epoch.

>>> stop = EarlyStopping(lambda model: validation_nlp(model), name="val_nlp", patience=3)   # doctest: +SKIP
>>> fit(model, data, epochs=50, callbacks=[stop])                                            # doctest: +SKIP
>>> stop.best_epoch, stop.best_value                                                         # doctest: +SKIP
"""

import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import tensorflow as tf

from .callbacks import Callback, RunState, call_flexibly

__all__ = ["EarlyStopping"]


class EarlyStopping(Callback):
    """Stop training when ``monitor`` has not improved for ``patience`` evaluations; restore the best state.

    :param monitor: a function of any of ``model, epoch, step, history, objective`` returning a scalar (the
        callback evaluates it every ``every`` epochs and logs it as the metric ``name``; ``inf`` in ``"min"`` mode,
        ``-inf`` in ``"max"`` mode, marks a state that must not be chosen), or the name of a metric
        another callback returns (``metrics={"val_nlp": ...}`` of ``fit``), or ``"objective"`` (the epoch's mean
        training objective).
    :param name: the metric's name for a function ``monitor`` (default ``"monitor"``).
    :param mode: ``"min"`` (default: a loss, an NLP) or ``"max"`` (an accuracy).
    :param patience: evaluations without improvement before training stops (>= 1).
    :param min_delta: an improvement must beat the best by more than this.
    :param restore_best: at the end (stopped or not) the model's variables are set to those of the best
        evaluation, exactly (a copy kept in memory and in the run's checkpoints).
    :param include_start: with a function ``monitor``, evaluate it before the first epoch too, so the state
        training started from counts as a candidate (epoch 0): training never returns a worse model than it got.
    :param every: evaluate every this many epochs (and after the last).

    After ``fit``: ``best_epoch`` (0 = the starting state), ``best_value``, ``stopped_epoch`` (``None`` if the run
    used all its epochs) and ``values`` (``{epoch: value}``). The state is checkpointed with the run, so a resumed
    run continues counting patience, and a run that stopped stays stopped.
    """

    def __init__(
        self,
        monitor: str | Callable[..., float],
        *,
        name: str | None = None,
        mode: str = "min",
        patience: int = 5,
        min_delta: float = 0.0,
        restore_best: bool = True,
        include_start: bool = True,
        every: int = 1,
    ):
        if not (callable(monitor) or isinstance(monitor, str)):
            raise TypeError(f"monitor must be a function returning a scalar or a metric name, got {monitor!r}")
        if mode not in ("min", "max"):
            raise ValueError(f"mode must be 'min' or 'max', got {mode!r}")
        for label, value in (("patience", patience), ("every", every)):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
                raise ValueError(f"{label} must be a positive int, got {value!r}")
        if not (isinstance(min_delta, (int, float)) and math.isfinite(min_delta) and min_delta >= 0):
            raise ValueError(f"min_delta must be a finite number >= 0, got {min_delta!r}")
        if name is not None and not isinstance(name, str):
            raise TypeError(f"name must be a str, got {name!r}")
        self.monitor = monitor
        self.name = name or (monitor if isinstance(monitor, str) else "monitor")
        self.mode, self.patience, self.min_delta = mode, int(patience), float(min_delta)
        self.restore_best, self.include_start, self.every = bool(restore_best), bool(include_start), int(every)
        self._state: Any = None  # a tf.Module of the state variables, made by checkpoint_state
        self.values: dict = {}

    # -- state kept in tf.Variables, so that it is checkpointed with the run ------------------------------
    def checkpoint_state(self, model: tf.Module) -> tf.Module:
        """The variables that hold this callback's state (``fit`` adds them to the run's checkpoints)."""
        if self._state is None or self._state.model_id != id(model):
            state = tf.Module(name="early_stopping")
            state.model_id = id(model)
            state.best_value = tf.Variable(
                math.inf if self.mode == "min" else -math.inf, dtype=tf.float64, trainable=False, name="best_value"
            )
            state.best_epoch = tf.Variable(-1, dtype=tf.int64, trainable=False, name="best_epoch")
            state.wait = tf.Variable(0, dtype=tf.int64, trainable=False, name="wait")
            state.stopped_epoch = tf.Variable(-1, dtype=tf.int64, trainable=False, name="stopped_epoch")
            self._watched: list[tf.Variable] = list(model.variables)
            state.best_variables = (
                [tf.Variable(v, trainable=False, name="best") for v in self._watched] if self.restore_best else []
            )
            self._state = state
        return self._state

    @property
    def best_epoch(self) -> int | None:
        value = -1 if self._state is None else int(self._state.best_epoch.numpy())
        return None if value < 0 else value

    @property
    def best_value(self) -> float | None:
        return None if self.best_epoch is None else float(self._state.best_value.numpy())

    @property
    def stopped_epoch(self) -> int | None:
        value = -1 if self._state is None else int(self._state.stopped_epoch.numpy())
        return None if value < 0 else value

    # -- the loop's hooks -------------------------------------------------------------------------------
    def on_train_begin(self, run: RunState) -> None:
        state = self.checkpoint_state(run.model)
        if self.stopped_epoch is not None:  # a resumed run that had stopped: nothing more to train
            run.stop = True
            return
        if (
            callable(self.monitor)
            and self.include_start
            and run.epoch == 0
            and run.epoch_step == 0
            and self.best_epoch is None
        ):
            self._record(run, self._evaluate(run), epoch=0)
        del state

    def on_epoch_end(self, run: RunState) -> Mapping[str, float] | None:
        if callable(self.monitor):
            if not (run.epoch % self.every == 0 or run.epoch == run.epochs):
                return None
            value = self._evaluate(run)
            self._decide(run, value)
            return {self.name: value}
        if self.monitor == "objective":
            self._decide(run, run.epoch_objective)
        return None

    def on_metrics(self, run: RunState, values: Mapping[str, float]) -> None:
        if isinstance(self.monitor, str) and self.monitor != "objective" and self.monitor in values:
            self._decide(run, float(values[self.monitor]))

    def on_train_end(self, run: RunState) -> None:
        if self._state is not None and self.stopped_epoch is None and self.best_epoch is not None:
            self._restore()

    # -- helpers ----------------------------------------------------------------------------------------
    def _evaluate(self, run: RunState) -> float:
        assert callable(self.monitor)  # a name is read from the metrics instead
        value = call_flexibly(
            self.monitor,
            model=run.model,
            epoch=run.epoch,
            step=run.step,
            history=run.history,
            objective=run.epoch_objective,
        )
        value = float(value)
        worst = math.inf if self.mode == "min" else -math.inf
        if math.isnan(value) or (math.isinf(value) and value != worst):
            raise ValueError(
                f"EarlyStopping monitor {self.name!r} returned {value} at epoch {run.epoch} "
                f"(a number, or {worst} for a state that must not be chosen)"
            )
        return value

    def _decide(self, run: RunState, value: float) -> None:
        """Record the epoch's value; stop after ``patience`` evaluations without improvement. The best state is
        put back before the epoch's checkpoint is written, so that checkpoint holds it."""
        self._record(run, value, epoch=run.epoch)
        if int(self._state.wait.numpy()) >= self.patience:
            self._state.stopped_epoch.assign(run.epoch)
            run.stop = True
        if run.stop or run.epoch >= run.epochs:
            self._restore()

    def _record(self, run: RunState, value: float, epoch: int) -> None:
        state = self._state
        self.values[epoch] = value
        best = float(state.best_value.numpy())
        better = value < best - self.min_delta if self.mode == "min" else value > best + self.min_delta
        if better or self.best_epoch is None:
            state.best_value.assign(value)
            state.best_epoch.assign(epoch)
            state.wait.assign(0)
            for saved, variable in zip(state.best_variables, self._watched):
                saved.assign(variable)
        else:
            state.wait.assign_add(1)

    def _restore(self) -> None:
        if self.restore_best and self.best_epoch is not None:
            for saved, variable in zip(self._state.best_variables, self._watched):
                variable.assign(saved)
