"""Callbacks of :func:`gpflow_ext.training.fit`: progress bar, TensorBoard, metrics, checkpoints,
and plain user functions.

A callback implements any of ``on_train_begin(run)``, ``on_step_end(run)``,
``on_epoch_end(run) -> Optional[dict]`` (a returned dict of scalars is recorded in
``history.metrics`` and logged), ``on_metrics(run, values)`` and ``on_train_end(run)``; ``run`` is
the :class:`RunState` of the loop. All run eagerly, outside the compiled step. Setting ``run.stop``
ends training after the epoch; a callback with a ``checkpoint_state(model) -> tf.Module`` method has
that module saved and restored with the run's checkpoints.

TensorBoard scalars (through ``gpflow.monitor``, Python-int steps): ``training/objective`` every
``log_every`` steps, ``training/epoch_objective`` and ``training/seconds_per_epoch`` every epoch,
model parameters (``ModelToTensorBoard``), ``metrics/<name>``, and images ``<name>`` from
``plot(fig, axes)`` functions (``ImageToTensorBoard``).
"""

import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpflow.monitor import ImageToTensorBoard, ModelToTensorBoard, Monitor, MonitorTaskGroup, ScalarToTensorBoard

from ..validation import check_positive_int
from .checkpoints import RESUME_CHOICES, check_folder
from .history import History

__all__ = [
    "RunState",
    "Callback",
    "ProgressBar",
    "TensorBoard",
    "Metrics",
    "FunctionCallback",
    "Checkpointing",
    "call_flexibly",
]


@dataclass
class RunState:
    """What the loop knows; callbacks read it (``checkpoint`` writes the counters)."""

    model: Any
    history: History
    epochs: int
    steps_per_epoch: int | None  # None: a dataset of unknown length (counted while iterating)
    logdir: str | None
    epoch: int = 0  # epochs completed
    step: int = 0  # global updates done
    epoch_step: int = 0  # updates done in the epoch under way
    epoch_loss_sum: float = 0.0  # sum of the objectives of those updates
    objective: float = float("nan")  # last minibatch objective
    epoch_objective: float = float("nan")
    seconds: float = 0.0
    writer: bool = True  # this process writes logs and checkpoints
    stop: bool = False  # a callback asks the loop to end after this epoch (EarlyStopping)
    extras: dict[str, Any] = field(default_factory=dict)

    @property
    def current_epoch(self) -> int:
        """1-based number of the epoch under way (or just finished, in ``on_epoch_end``)."""
        return self.epoch if self.epoch_step == 0 else self.epoch + 1

    @property
    def finished_epoch(self) -> bool:
        return self.epoch_step == 0


def call_flexibly(function: Callable[..., Any], **available: Any) -> Any:
    """Call ``function`` with the keyword arguments it declares (all of them if it takes ``**kwargs``).

    Lets user callbacks be ``lambda: ...``, ``lambda model: ...`` or ``def cb(epoch, **_)``.
    """
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):  # builtins without a signature
        return function()
    parameters = signature.parameters.values()
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        return function(**available)
    wanted = {
        p.name: available[p.name]
        for p in parameters
        if p.name in available and p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    }
    return function(**wanted)


class Callback:
    """Base class with no-op hooks."""

    def on_train_begin(self, run: RunState) -> None:
        pass

    def on_step_end(self, run: RunState) -> None:
        pass

    def on_epoch_end(self, run: RunState) -> Mapping[str, float] | None:
        return None

    def on_metrics(self, run: RunState, values: Mapping[str, float]) -> None:
        pass

    def on_train_end(self, run: RunState) -> None:
        pass


def _due(run: RunState, every: int) -> bool:
    return run.epoch % every == 0 or run.epoch == run.epochs


class FunctionCallback(Callback):
    """A user function called every ``every`` epochs (and after the last) with any of ``model,
    epoch, step, history, objective``; a returned mapping of scalars is logged as metrics."""

    def __init__(self, function: Callable[..., Any], every: int = 1):
        self.function = function
        self.every = every

    def on_epoch_end(self, run: RunState) -> Mapping[str, float] | None:
        if not _due(run, self.every):
            return None
        returned = call_flexibly(
            self.function,
            model=run.model,
            epoch=run.epoch,
            step=run.step,
            history=run.history,
            objective=run.epoch_objective,
        )
        if isinstance(returned, Mapping):
            return {str(k): float(v) for k, v in returned.items()}
        return None


class Metrics(Callback):
    """``{name: function}`` of user scalars (e.g. test accuracy) every ``every`` epochs."""

    def __init__(self, functions: Mapping[str, Callable[..., float]], every: int = 1):
        if not isinstance(functions, Mapping):
            raise TypeError("metrics must be a mapping {name: function}")
        self.functions = dict(functions)
        self.every = every

    def on_epoch_end(self, run: RunState) -> Mapping[str, float] | None:
        if not self.functions or not _due(run, self.every):
            return None
        context = dict(
            model=run.model, epoch=run.epoch, step=run.step, history=run.history, objective=run.epoch_objective
        )
        return {name: float(call_flexibly(f, **context)) for name, f in self.functions.items()}


class ProgressBar(Callback):
    """A tqdm bar over the remaining steps, with the objective; prints metrics as they come."""

    def __init__(self, enabled: bool = True):
        self.enabled = enabled
        self.bar: Any = None  # a tqdm bar from on_train_begin on

    def on_train_begin(self, run: RunState) -> None:
        from tqdm import tqdm  # the text bar: tqdm.auto needs ipywidgets in Jupyter and warns without it

        remaining = (
            None
            if run.steps_per_epoch is None
            else max(0, (run.epochs - run.epoch) * run.steps_per_epoch - run.epoch_step)
        )
        self.bar = tqdm(
            total=remaining,
            desc=f"fit {type(run.model).__name__}",
            unit="step",
            disable=not self.enabled or remaining == 0,
            dynamic_ncols=True,
            leave=True,
        )

    def on_step_end(self, run: RunState) -> None:
        self.bar.update(1)
        self.bar.set_postfix(epoch=f"{run.current_epoch}/{run.epochs}", objective=f"{run.objective:.5g}", refresh=False)

    def on_metrics(self, run: RunState, values: Mapping[str, float]) -> None:
        shown = ", ".join(f"{k}={v:.4g}" for k, v in values.items())
        message = f"epoch {run.epoch}: objective={run.epoch_objective:.6g} {shown}"
        if self.enabled:
            self.bar.write(message)

    def on_train_end(self, run: RunState) -> None:
        if self.bar is not None:
            self.bar.close()


def _read(key: str) -> Callable[..., float]:
    def read(**kwargs: Any) -> float:
        return kwargs[key]

    return read


def _read_metric(name: str) -> Callable[..., float]:
    def read(**kwargs: Any) -> float:
        return kwargs["metrics"][name]

    return read


class TensorBoard(Callback):
    """TensorBoard logging through ``gpflow.monitor``.

    :param logdir: folder (default: ``fit``'s ``logdir``).
    :param log_every: objective and parameters every this many steps (default: once per epoch, at
        most every 100 steps).
    :param log_parameters: ``True`` (kernel and likelihood), ``False``, or keywords for
        ``ModelToTensorBoard``.
    :param images: ``{name: plot(fig, axes)}`` every ``images_every`` epochs (and after the last).
    :param image_kwargs: passed to ``ImageToTensorBoard`` (e.g. ``subplots_kw``).
    :param monitor: extra ``gpflow.monitor`` ``Monitor``/``MonitorTaskGroup``(s), called every
        step with ``step, objective, model, epoch``.
    """

    def __init__(
        self,
        logdir: str | None = None,
        *,
        log_every: int | None = None,
        log_parameters: bool | Sequence[str] = True,
        images: Mapping[str, Callable] | None = None,
        images_every: int = 1,
        image_kwargs: Mapping[str, Any] | None = None,
        monitor: Monitor | MonitorTaskGroup | Sequence[MonitorTaskGroup] | None = None,
    ):
        if images is not None and not isinstance(images, Mapping):
            raise TypeError("images must be a mapping {name: plot(fig, axes)}")
        self.logdir = None if logdir is None else str(logdir)
        self.log_every = log_every
        self.log_parameters = log_parameters
        self.images = dict(images or {})
        self.images_every = images_every
        self.image_kwargs = dict(image_kwargs or {})
        if monitor is None:
            self.extra: list[Any] = []
        elif isinstance(monitor, (Monitor, MonitorTaskGroup)):
            self.extra = [monitor]
        else:
            self.extra = list(monitor)
        self.directory: str | None = None
        self.step_group = None
        self.epoch_tasks: list[Any] = []
        self.metric_tasks: dict[str, Any] = {}
        self.image_tasks: list[Any] = []

    def on_train_begin(self, run: RunState) -> None:
        self.directory = self.logdir or run.logdir if run.writer else None
        self.step_group, self.epoch_tasks, self.metric_tasks, self.image_tasks = None, [], {}, []
        if self.directory is None:
            return
        log_every = self.log_every or max(1, min(run.steps_per_epoch or 100, 100))
        tasks = [ScalarToTensorBoard(self.directory, _read("objective"), "training/objective")]
        if self.log_parameters:
            keywords = ["kernel", "likelihood"] if self.log_parameters is True else list(self.log_parameters)
            tasks.append(ModelToTensorBoard(self.directory, run.model, keywords_to_monitor=keywords))
        self.step_group = MonitorTaskGroup(tasks, period=log_every)
        self.epoch_tasks = [
            ScalarToTensorBoard(self.directory, _read("epoch_objective"), "training/epoch_objective"),
            ScalarToTensorBoard(self.directory, _read("seconds_per_epoch"), "training/seconds_per_epoch"),
        ]
        self.image_tasks = [
            ImageToTensorBoard(self.directory, plot, name, **self.image_kwargs) for name, plot in self.images.items()
        ]

    def on_step_end(self, run: RunState) -> None:
        kwargs = dict(objective=run.objective, model=run.model, epoch=run.current_epoch)
        if self.step_group is not None:
            self.step_group(run.step, **kwargs)
        for monitor in self.extra:
            monitor(run.step, **kwargs)

    def on_epoch_end(self, run: RunState) -> None:
        for task in self.epoch_tasks:
            task(run.step, epoch_objective=run.epoch_objective, seconds_per_epoch=run.seconds)
        if self.image_tasks and _due(run, self.images_every):
            for task in self.image_tasks:
                task(run.step)
        return None

    def on_metrics(self, run: RunState, values: Mapping[str, float]) -> None:
        if self.directory is None:
            return
        for name in values:
            if name not in self.metric_tasks:
                self.metric_tasks[name] = ScalarToTensorBoard(self.directory, _read_metric(name), f"metrics/{name}")
            self.metric_tasks[name](run.step, metrics=dict(values))


class Checkpointing(Callback):
    """Checkpoints of a :func:`~gpflow_ext.training.fit` run, and resuming from them.

    Pass it in ``fit``'s ``callbacks``; ``fit(..., checkpoint_dir=D)`` is short for
    ``callbacks=[Checkpointing(D)]`` and ``fit(..., logdir=L)`` checkpoints to ``L/checkpoints`` with
    these defaults. Saving goes through :class:`~gpflow_ext.training.checkpoints.RunCheckpoints`.

    :param checkpoint_dir: the folder of the run's ``ckpt-N`` files (created if missing); an existing
        regular file is refused.
    :param resume: with checkpoints in the folder: ``"auto"`` resumes when they were written by the
        same run (same model structure, data, batch size, seed, optimizer configuration: the
        fingerprint stored with each checkpoint) and refuses otherwise, naming the differences;
        ``True`` requires a checkpoint; ``False`` starts afresh after moving the existing
        checkpoints to ``previous-K/``. A finished run restores its parameters, says so, and ``fit``
        returns its History. Unreadable checkpoints are set aside with a warning and the newest
        readable one is used.
    :param every_epochs: save every this many epochs (and after the last one).
    :param every_steps: also save every this many steps within an epoch; a resumed run continues
        mid-epoch with the same minibatches (bit-identical for steps whose randomness lives in
        variables, such as ``tf.random.Generator``).
    :param max_checkpoints: the folder keeps at most this many checkpoints after every save (the
        newest ones; checkpoints found on disk when the run starts count too).
    """

    def __init__(
        self,
        checkpoint_dir: str | Path,
        *,
        resume: str | bool = "auto",
        every_epochs: int = 1,
        every_steps: int | None = None,
        max_checkpoints: int = 3,
    ):
        if checkpoint_dir is None:
            raise ValueError("checkpoint_dir must be a folder path, got None")
        self.directory = check_folder(checkpoint_dir, "checkpoint_dir")
        if not any(resume is choice for choice in RESUME_CHOICES) and resume != "auto":
            raise ValueError(f"resume must be 'auto', True or False, got {resume!r}")
        self.resume = resume
        self.every_epochs = check_positive_int(every_epochs, "every_epochs")
        self.every_steps = check_positive_int(every_steps, "every_steps", allow_none=True)
        self.max_checkpoints = check_positive_int(max_checkpoints, "max_checkpoints")
        self.checkpoints: Any = None
        self.counters: dict[str, Any] = {}

    def attach(self, checkpoints: Any, counters: dict[str, Any]) -> None:
        """Called by ``fit``: the run's :class:`RunCheckpoints` and its checkpointed counters ``epoch,
        step, epoch_step, epoch_loss_sum, history`` (a JSON string), assigned from the run state just
        before each save."""
        self.checkpoints = checkpoints
        self.counters = counters

    def save(self, run: RunState) -> None:
        self.counters["epoch"].assign(run.epoch)
        self.counters["step"].assign(run.step)
        self.counters["epoch_step"].assign(run.epoch_step)
        self.counters["epoch_loss_sum"].assign(run.epoch_loss_sum)
        self.counters["history"].assign(run.history.to_json())
        saved = self.checkpoints.save(run.step)
        if saved is not None:
            run.history.last_checkpoint = saved

    def on_step_end(self, run: RunState) -> None:
        last = run.steps_per_epoch is not None and run.epoch_step >= run.steps_per_epoch
        if self.every_steps and run.step % self.every_steps == 0 and run.epoch_step > 0 and not last:
            self.save(run)

    def on_epoch_end(self, run: RunState) -> None:
        if _due(run, self.every_epochs):
            self.save(run)
        return None
