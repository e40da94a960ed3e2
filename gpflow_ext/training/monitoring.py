"""TensorBoard logging for :func:`gpflow_ext.training.fit` through ``gpflow.monitor``.

All tasks run eagerly, outside the compiled step, with Python-int steps (``gpflow.monitor`` tasks
are not meant to be traced). Scalars written:

* ``training/objective`` -- the minibatch objective every ``log_every`` steps;
* ``training/epoch_objective``, ``training/seconds_per_epoch`` -- once per epoch;
* model parameters (``ModelToTensorBoard``: kernel and likelihood by default);
* ``metrics/<name>`` -- user metric functions (e.g. test accuracy) every ``metrics_every`` epochs;
* images ``<name>`` -- user plotting functions ``plot(fig, axes)`` via ``ImageToTensorBoard``.
"""
import inspect
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Union

from gpflow.monitor import (
    ImageToTensorBoard,
    ModelToTensorBoard,
    Monitor,
    MonitorTaskGroup,
    ScalarToTensorBoard,
)


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


def _value(key: str) -> Callable[..., float]:
    def read(**kwargs: Any) -> float:
        return kwargs[key]

    return read


def _metric_value(name: str) -> Callable[..., float]:
    def read(**kwargs: Any) -> float:
        return kwargs["metrics"][name]

    return read


class TrainingMonitor:
    """The ``gpflow.monitor`` task groups that ``fit`` calls at step and epoch ends."""

    def __init__(
        self,
        logdir: Optional[str],
        model: Any,
        *,
        log_every: int,
        log_parameters: Union[bool, Sequence[str]],
        metric_names: Sequence[str],
        images: Optional[Mapping[str, Callable]],
        image_kwargs: Optional[Mapping[str, Any]] = None,
        extra: Optional[Union[Monitor, MonitorTaskGroup, Sequence[MonitorTaskGroup]]] = None,
    ):
        self.logdir = logdir
        self.log_every = log_every
        step_tasks: List[Any] = []
        self.epoch_tasks: List[Any] = []
        self.metric_tasks: List[Any] = []
        self._metric_names = set(metric_names)
        self.image_tasks: List[Any] = []
        if logdir is not None:
            step_tasks.append(ScalarToTensorBoard(logdir, _value("objective"), "training/objective"))
            if log_parameters:
                keywords = ["kernel", "likelihood"] if log_parameters is True else list(log_parameters)
                step_tasks.append(ModelToTensorBoard(logdir, model, keywords_to_monitor=keywords))
            self.epoch_tasks = [
                ScalarToTensorBoard(logdir, _value("epoch_objective"), "training/epoch_objective"),
                ScalarToTensorBoard(logdir, _value("seconds_per_epoch"), "training/seconds_per_epoch"),
            ]
            self.metric_tasks = [
                ScalarToTensorBoard(logdir, _metric_value(name), f"metrics/{name}") for name in metric_names
            ]
            for name, plot in (images or {}).items():
                self.image_tasks.append(ImageToTensorBoard(logdir, plot, name, **dict(image_kwargs or {})))
        self.step_group = MonitorTaskGroup(step_tasks, period=log_every) if step_tasks else None
        if extra is None:
            self.extra: List[Any] = []
        elif isinstance(extra, (Monitor, MonitorTaskGroup)):
            self.extra = [extra]
        else:
            self.extra = list(extra)

    def on_step(self, step: int, **kwargs: Any) -> None:
        if self.step_group is not None:
            self.step_group(step, **kwargs)
        for monitor in self.extra:
            monitor(step, **kwargs)

    def on_epoch(self, step: int, **kwargs: Any) -> None:
        for task in self.epoch_tasks:
            task(step, **kwargs)

    def add_metric_names(self, names: Sequence[str]) -> None:
        """Scalar tasks for metric names first seen now (e.g. returned by a callback)."""
        if self.logdir is None:
            return
        for name in names:
            if name not in self._metric_names:
                self._metric_names.add(name)
                self.metric_tasks.append(ScalarToTensorBoard(self.logdir, _metric_value(name), f"metrics/{name}"))

    def on_metrics(self, step: int, metrics: Dict[str, float]) -> None:
        for task in self.metric_tasks:
            if task.name[len("metrics/"):] in metrics:
                task(step, metrics=metrics)

    def on_images(self, step: int) -> None:
        for task in self.image_tasks:
            task(step)
