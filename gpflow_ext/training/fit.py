"""The one training loop: :func:`fit` trains any GPflow model.

* models with external data (``gpflow.models.ExternalDataTrainingLossMixin``: SVGP, MLGPF, SVDKL,
  GPLVF ...) get minibatches ``model.training_loss(batch)`` from a ``tf.data`` pipeline
  (:mod:`gpflow_ext.training.data`); dense numpy and ``scipy.sparse`` CSR inputs (the latter arrive
  as ``tf.SparseTensor``);
* models holding their data (``InternalDataTrainingLossMixin``: GPR, SGPR ...) train full batch;
* compiled ``tf.function`` steps, tf_keras Adam by default (any tf_keras optimizer accepted);
* TensorBoard via ``gpflow.monitor`` (:mod:`gpflow_ext.training.monitoring`), a tqdm progress bar;
* ``tf.train.CheckpointManager`` resume, NaN/inf detection that never applies or saves a bad update;
* an optional ``tf.distribute`` strategy for data parallelism.
"""
import contextlib
import time
import warnings
from pathlib import Path
from typing import Any, Callable, Dict, Mapping, Optional, Sequence, Union

import gpflow
import numpy as np
import tensorflow as tf
from gpflow.keras import tf_keras
from tqdm.auto import tqdm

from .checks import (
    NonFiniteObjectiveError,
    check_data,
    check_model,
    check_positive_int,
    check_positive_number,
    uses_stateful_random_ops,
)
from .data import ArrayData, minibatch_dataset, steps_per_epoch
from .history import History
from .monitoring import TrainingMonitor, call_flexibly

__all__ = ["fit"]

_SEED_STRIDE = 1_000_003  # per-epoch TF seed = seed * stride + epoch


def _resolve_variables(model: tf.Module, variables: Optional[Sequence[Any]]) -> list:
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
    unique, seen = [], set()
    for variable in candidates:
        if variable.ref() not in seen:
            seen.add(variable.ref())
            unique.append(variable)
    if not unique:
        raise ValueError("there are no trainable variables to optimise (check gpflow.set_trainable / variables=)")
    return unique


def _build_optimizer(optimizer: Any, variables: Sequence[tf.Variable]) -> None:
    """Create the optimizer's slot variables now (tf_keras ``build``; legacy ``_create_all_weights``)."""
    if hasattr(optimizer, "build") and callable(optimizer.build):
        if not getattr(optimizer, "_built", False):
            optimizer.build(variables)
    elif hasattr(optimizer, "_create_all_weights"):
        optimizer._create_all_weights(variables)


def _default_log_every(n_steps: int) -> int:
    # one gpflow.monitor call costs ~10-40 ms eagerly (summary ops + flush): once per epoch, at most every 100 steps
    return max(1, min(n_steps, 100))


def _variable_names(model: tf.Module, variables: Sequence[tf.Variable]) -> list:
    """Readable names (GPflow parameter paths such as ``.kernel.variance``) for ``variables``."""
    by_ref = {}
    for path, leaf in gpflow.utilities.parameter_dict(model).items():
        variable = leaf.unconstrained_variable if isinstance(leaf, gpflow.Parameter) else leaf
        if isinstance(variable, tf.Variable):
            by_ref.setdefault(variable.ref(), path)
    return [by_ref.get(v.ref(), v.name) for v in variables]


def _nonfinite_names(flags: np.ndarray, names: Sequence[str]) -> list:
    out = []
    if not flags[0]:
        out.append("objective")
    for ok, name in zip(flags[1:], names):
        if not ok:
            out.append(f"gradient of {name}")
    return out


def _finite_flags(loss: tf.Tensor, grads: Sequence[Any]) -> tf.Tensor:
    flags = [tf.reduce_all(tf.math.is_finite(loss))]
    for grad in grads:
        values = grad.values if isinstance(grad, tf.IndexedSlices) else grad
        flags.append(tf.reduce_all(tf.math.is_finite(values)))
    return tf.stack(flags)  # [1 + num_variables] bool


def _batch_size_of(part: Union[tf.Tensor, tf.SparseTensor]) -> tf.Tensor:
    if isinstance(part, tf.SparseTensor):
        return part.dense_shape[0]
    return tf.shape(part, out_type=tf.int64)[0]


def fit(
    model: tf.Module,
    data: Optional[Sequence[Any]] = None,
    *,
    epochs: int = 1,
    batch_size: Optional[int] = None,
    optimizer: Optional[Any] = None,
    learning_rate: float = 1e-2,
    logdir: Optional[Union[str, Path]] = None,
    checkpoint_dir: Optional[Union[str, Path]] = None,
    checkpoint_every: int = 1,
    max_checkpoints: int = 3,
    seed: int = 0,
    callbacks: Sequence[Callable[..., Any]] = (),
    metrics: Optional[Mapping[str, Callable[..., float]]] = None,
    metrics_every: int = 1,
    images: Optional[Mapping[str, Callable[..., None]]] = None,
    images_every: Optional[int] = None,
    image_kwargs: Optional[Mapping[str, Any]] = None,
    log_every: Optional[int] = None,
    log_parameters: Union[bool, Sequence[str]] = True,
    monitor: Optional[Any] = None,
    progress: bool = True,
    compile: bool = True,
    dtype: Optional[Any] = None,
    strategy: Optional[tf.distribute.Strategy] = None,
    variables: Optional[Sequence[Any]] = None,
    shuffle: bool = True,
    exact_random_resume: bool = True,
) -> History:
    """Train ``model`` by minimising ``model.training_loss`` and return a :class:`History`.

    :param model: any GPflow model. External-data models (SVGP & co.) are called as
        ``model.training_loss(batch)``; internal-data models (GPR, SGPR) as ``model.training_loss()``
        with ``data=None``.
    :param data: tuple of arrays with equal first dimension N (numpy or ``scipy.sparse``, CSR
        preferred). Each minibatch is a tuple of the same structure; sparse parts arrive as
        ``tf.SparseTensor``. Floating arrays are cast to ``dtype``; integer arrays (row indices,
        labels) keep their integer type and boolean arrays (masks) stay ``tf.bool``. NaN/inf is
        rejected before training.
    :param epochs: total number of epochs. With a checkpoint, training resumes at the saved epoch
        and stops at ``epochs`` (re-running the same command continues where it stopped).
    :param batch_size: minibatch size B (``None``: full batch). steps per epoch = ceil(N / B).
    :param optimizer: any tf_keras optimizer (default ``tf_keras.optimizers.Adam(learning_rate)``;
        ``learning_rate`` is ignored when an optimizer is given). With a ``strategy``, create it
        inside ``strategy.scope()``.
    :param logdir: TensorBoard folder (``tensorboard --logdir DIR``); ``None`` logs nothing.
    :param checkpoint_dir: ``tf.train.CheckpointManager`` folder (default ``logdir/checkpoints``
        when ``logdir`` is given). Holds model, optimizer state, epoch/step counters and the seed.
    :param checkpoint_every: save every this many epochs (and after the last one).
    :param seed: makes training reproducible: epoch ``e`` (1-based) shuffles with the stateless key
        ``(seed, e)``. TF's global seed is set to ``seed * 1000003 + e`` before the first epoch of
        the call, and before every epoch if the step has stateful random ops (see
        ``exact_random_resume``), so Monte Carlo objectives are identical whether or not the run
        was resumed.
    :param callbacks: functions called eagerly after every ``metrics_every``-th epoch with any of
        the keyword arguments ``model, epoch, step, history, objective`` they declare; a returned
        ``dict`` of scalars is logged like ``metrics``.
    :param metrics: ``{name: function}`` of user scalars (e.g. test accuracy), called eagerly every
        ``metrics_every`` epochs (and after the last), logged to TensorBoard as ``metrics/<name>``
        and stored in ``history.metrics``. Functions may take no arguments or any of those above.
    :param images: ``{name: plot(fig, axes)}`` written through ``gpflow.monitor.ImageToTensorBoard``
        every ``images_every`` epochs (default: ``metrics_every``); ``image_kwargs`` go to it.
    :param log_every: objective and parameters to TensorBoard every this many steps (default:
        once per epoch, or every 100 steps if epochs are longer).
    :param log_parameters: ``True`` (kernel and likelihood parameters), ``False`` or a list of
        keywords for ``ModelToTensorBoard``.
    :param monitor: extra ``gpflow.monitor`` ``Monitor``/``MonitorTaskGroup``(s), called every step
        with ``step, objective, model, epoch``.
    :param progress: show a tqdm bar with the objective.
    :param compile: wrap the step in ``tf.function`` (``False`` for eager debugging).
    :param dtype: float type for floating data (default ``gpflow.default_float()``); must match the
        model's parameters.
    :param strategy: a ``tf.distribute`` strategy (e.g. ``MirroredStrategy``). Build the model inside
        ``strategy.scope()``. Each replica's loss is weighted by its share of the global batch
        (b_r / B), so the replica sum equals the single-device minibatch objective.
    :param variables: train only these (Parameters, tf.Variables or Modules); default all trainable.
    :param shuffle: reshuffle rows every epoch.
    :param exact_random_resume: if the compiled step contains stateful random ops (e.g. a Monte
        Carlo ELBO using ``tf.random.normal``), retrace it once per epoch under the epoch's seed
        so that a resumed run draws the same numbers as an uninterrupted one (costs one tracing
        per epoch; ``False`` traces once and keeps one continuous random stream, reproducible from
        scratch but not across a resume). Steps without stateful random ops are traced once.
    :raises NonFiniteObjectiveError: (a ``FloatingPointError``) when the objective or a gradient is
        NaN/inf; the update is not applied and the last checkpoint is left as it was.
    """
    # ---------------------------------------------------------------- argument checks (eager, early)
    check_model(model)
    epochs = check_positive_int(epochs, "epochs", minimum=0)
    batch_size = check_positive_int(batch_size, "batch_size", allow_none=True)
    checkpoint_every = check_positive_int(checkpoint_every, "checkpoint_every")
    max_checkpoints = check_positive_int(max_checkpoints, "max_checkpoints")
    metrics_every = check_positive_int(metrics_every, "metrics_every")
    images_every = check_positive_int(images_every, "images_every", allow_none=True) or metrics_every
    log_every = check_positive_int(log_every, "log_every", allow_none=True)
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    seed = int(seed)
    if optimizer is None and not isinstance(learning_rate, tf_keras.optimizers.schedules.LearningRateSchedule):
        check_positive_number(learning_rate, "learning_rate", "a positive number or a schedule")
    if metrics is not None and not isinstance(metrics, Mapping):
        raise TypeError("metrics must be a mapping {name: function}")
    if images is not None and not isinstance(images, Mapping):
        raise TypeError("images must be a mapping {name: plot(fig, axes)}")
    if callable(callbacks):
        callbacks = (callbacks,)
    for i, callback in enumerate(callbacks):
        if not callable(callback):
            raise TypeError(f"callbacks[{i}] is not callable: {callback!r}")
    dtype = tf.as_dtype(dtype if dtype is not None else gpflow.default_float())
    if not dtype.is_floating:
        raise ValueError(f"dtype must be a floating type (float32/float64), got {dtype.name}")

    internal = isinstance(model, gpflow.models.InternalDataTrainingLossMixin)
    if internal:
        if data is not None:
            raise ValueError(
                f"{type(model).__name__} holds its own data (InternalDataTrainingLossMixin); call fit(model, data=None)"
            )
        if batch_size is not None:
            raise ValueError(f"{type(model).__name__} trains full batch; batch_size must be None")
        array_data = None
        num_data = None
        n_steps = 1
    else:
        if data is None:
            raise ValueError(f"{type(model).__name__} needs training data: fit(model, (X, Y), ...)")
        arrays = check_data(data)
        num_data = int(arrays[0].shape[0])
        if batch_size is not None and batch_size >= num_data:
            batch_size = None
        model_num_data = getattr(model, "num_data", "absent")
        if batch_size is not None and model_num_data is None:
            raise ValueError(
                f"{type(model).__name__}.num_data is None, so each minibatch would be treated as the whole "
                f"data set; build the model with num_data={num_data} (N) to train with batch_size={batch_size}"
            )
        if isinstance(model_num_data, (int, np.integer)) and int(model_num_data) != num_data:
            warnings.warn(
                f"{type(model).__name__}.num_data={int(model_num_data)} but data has {num_data} rows; "
                "the minibatch objective is scaled by num_data / batch size"
            )
        n_steps = steps_per_epoch(num_data, batch_size)

    variables = _resolve_variables(model, variables)
    mismatched = [f"{v.name} ({v.dtype.name})" for v in variables if v.dtype.is_floating and v.dtype != dtype]
    if mismatched:
        raise ValueError(
            f"the model's parameters {mismatched[:3]} do not have dtype={dtype.name}; build the model under "
            "gpflow.config.as_context(gpflow.config.Config(float=...)) or pass the matching dtype="
        )
    if not internal:
        array_data = ArrayData(arrays, dtype)
    if strategy is not None:
        if not isinstance(strategy, tf.distribute.Strategy):
            raise TypeError(f"strategy must be a tf.distribute.Strategy, got {type(strategy).__name__}")
        outside = [v.name for v in variables if not strategy.extended.variable_created_in_scope(v)]
        if outside:
            raise ValueError(
                f"strategy given but the model variables {outside[:3]} were created outside strategy.scope(); "
                "build the model inside `with strategy.scope():`"
            )
    if log_every is None:
        log_every = _default_log_every(n_steps)

    # ---------------------------------------------------------------- optimizer, counters, checkpoint
    scope = strategy.scope() if strategy is not None else contextlib.nullcontext()
    with scope:
        if optimizer is None:
            optimizer = tf_keras.optimizers.Adam(learning_rate=learning_rate)
        if not hasattr(optimizer, "apply_gradients"):
            raise TypeError(f"optimizer must have apply_gradients (a tf_keras optimizer), got {type(optimizer).__name__}")
        _build_optimizer(optimizer, variables)  # slots exist before restore and before tracing
    epoch_counter = tf.Variable(0, dtype=tf.int64, trainable=False, name="epoch")
    step_counter = tf.Variable(0, dtype=tf.int64, trainable=False, name="step")
    seed_record = tf.Variable(seed, dtype=tf.int64, trainable=False, name="seed")

    if checkpoint_dir is None and logdir is not None:
        checkpoint_dir = Path(logdir) / "checkpoints"
    manager = None
    resumed_from = None
    if checkpoint_dir is not None:
        checkpoint = tf.train.Checkpoint(
            model=model, optimizer=optimizer, epoch=epoch_counter, step=step_counter, seed=seed_record
        )
        manager = tf.train.CheckpointManager(checkpoint, str(checkpoint_dir), max_to_keep=max_checkpoints)
        if manager.latest_checkpoint:
            resumed_from = manager.latest_checkpoint
            try:
                checkpoint.restore(resumed_from).assert_existing_objects_matched()
            except (AssertionError, ValueError, tf.errors.InvalidArgumentError) as err:
                raise ValueError(
                    f"checkpoint {resumed_from} does not match this model/optimizer (different architecture?); "
                    f"use another checkpoint_dir or delete it: {err}"
                ) from err
            if int(seed_record.numpy()) != seed:
                warnings.warn(
                    f"resuming from {resumed_from} saved with seed={int(seed_record.numpy())} but seed={seed}; "
                    "the remaining epochs will not match an uninterrupted run"
                )
                seed_record.assign(seed)
    start_epoch = int(epoch_counter.numpy())
    if resumed_from is not None:
        print(f"fit: resumed from {resumed_from} at epoch {start_epoch} (step {int(step_counter.numpy())})")

    # ---------------------------------------------------------------- compiled step
    def maybe_compile(function, signature=None):
        if not compile:
            return function
        if signature is not None:  # batch dimension None: one tracing for full and short batches
            return tf.function(function, input_signature=signature)
        return tf.function(function, reduce_retracing=True)

    def loss_and_grads(batch: Optional[tuple], weight: Optional[tf.Tensor] = None):
        with tf.GradientTape(watch_accessed_variables=False) as tape:
            tape.watch(variables)
            loss = model.training_loss() if batch is None else model.training_loss(batch)
            if weight is not None:
                loss = loss * tf.cast(weight, loss.dtype)
        grads = tape.gradient(loss, variables)
        grads = [tf.zeros_like(v) if g is None else g for g, v in zip(grads, variables)]
        return loss, grads

    if strategy is None:
        # One call per step: the update is applied only if objective and gradients are finite
        # (the optimizer's slots were built above, so nothing is created inside the cond).

        def compute(batch):
            loss, grads = loss_and_grads(batch)
            flags = _finite_flags(loss, grads)

            def update():
                optimizer.apply_gradients(zip(grads, variables))
                return tf.constant(True)

            tf.cond(tf.reduce_all(flags), update, lambda: tf.constant(False))
            return loss, flags

        apply = None

    else:
        replicas = strategy.num_replicas_in_sync

        def replica_compute(rows):
            if rows is None:  # internal data: every replica evaluates the full objective / R
                loss, grads = loss_and_grads(None, tf.constant(1.0 / replicas, dtype))
                return loss, grads, tf.cast(tf.logical_not(_finite_flags(loss, grads)), tf.int32)
            batch = array_data.gather(rows)
            local = tf.cast(tf.shape(rows)[0], dtype)
            total = tf.distribute.get_replica_context().all_reduce(tf.distribute.ReduceOp.SUM, local)

            def weighted():
                loss, grads = loss_and_grads(batch, local / total)
                return loss, [tf.convert_to_tensor(g) for g in grads]  # IndexedSlices -> dense for tf.cond

            def empty():  # a replica that got no rows from a short last batch
                return tf.zeros((), dtype), [tf.zeros_like(v) for v in variables]

            loss, grads = tf.cond(local > 0, weighted, empty)
            return loss, grads, tf.cast(tf.logical_not(_finite_flags(loss, grads)), tf.int32)

        def compute(rows):
            loss, grads, bad = strategy.run(replica_compute, args=(rows,))
            loss = strategy.reduce(tf.distribute.ReduceOp.SUM, loss, axis=None)
            bad = strategy.reduce(tf.distribute.ReduceOp.SUM, bad, axis=None)  # [1 + V] replicas failing
            return loss, grads, tf.equal(bad, 0)  # [] total objective, per-replica grads, [1 + V] flags

        def two_phase_apply(grads):
            strategy.run(lambda g: optimizer.apply_gradients(zip(g, variables)), args=(grads,))

        # Two calls per step: all replicas must agree on applying, so the finite check runs in between.
        apply = maybe_compile(two_phase_apply)
        strategy_compute = compute

        def compute(rows):
            loss, grads, flags = strategy_compute(rows)
            return loss, (grads, flags)

    step_function = compute
    # ---------------------------------------------------------------- input pipeline
    signature = None
    if array_data is None:
        batches = iter(())
    else:
        dataset = minibatch_dataset(
            array_data,
            batch_size or num_data,
            start_epoch + 1,  # 1-based epoch numbers key the shuffle
            max(start_epoch, epochs) + 1,
            seed,
            shuffle,
            gather=strategy is None,
        )
        batches = iter(dataset)
        if strategy is None:
            signature = [dataset.element_spec]
    compute = maybe_compile(step_function, signature)

    def next_input():
        if array_data is None:
            return None
        item = next(batches)
        if strategy is None:
            return item
        rows = item

        def split(context):  # contiguous share of the global batch for this replica
            n = tf.shape(rows)[0]
            r, count = context.replica_id_in_sync_group, context.num_replicas_in_sync
            return rows[(r * n) // count : ((r + 1) * n) // count]

        return strategy.experimental_distribute_values_from_function(split)

    # ---------------------------------------------------------------- loop
    history = History(
        steps_per_epoch=n_steps,
        start_epoch=start_epoch,
        resumed_from=resumed_from,
        last_checkpoint=manager.latest_checkpoint if manager else None,
        logdir=str(logdir) if logdir is not None else None,
    )
    metric_functions = dict(metrics or {})
    training_monitor = TrainingMonitor(
        str(logdir) if logdir is not None else None,
        model,
        log_every=log_every,
        log_parameters=log_parameters,
        metric_names=list(metric_functions),
        images=images,
        image_kwargs=image_kwargs,
        extra=monitor,
    )
    if logdir is not None:
        Path(logdir).mkdir(parents=True, exist_ok=True)
    remaining = max(0, epochs - start_epoch) * n_steps
    bar = tqdm(
        total=remaining,
        desc=f"fit {type(model).__name__}",
        unit="step",
        disable=not progress or remaining == 0,
        dynamic_ncols=True,
        leave=True,
    )
    step = int(step_counter.numpy())
    first_call = True
    retrace_each_epoch = False
    epoch = start_epoch
    try:
        for epoch in range(start_epoch + 1, epochs + 1):  # 1-based epoch being trained
            if epoch == start_epoch + 1 or retrace_each_epoch or not compile:
                # (set_seed also clears TF's kernel cache, which re-instantiates compiled functions:
                # done only when random ops need it, it costs about as much as a tracing)
                tf.random.set_seed(seed * _SEED_STRIDE + epoch)
            if retrace_each_epoch and epoch > start_epoch + 1:
                # stateful random ops bake their seeds in at tracing: a fresh trace per epoch makes
                # epoch e's random numbers depend on (seed, e) only, hence identical after a resume
                compute = maybe_compile(step_function, signature)
            started = time.perf_counter()
            epoch_losses = []
            for _ in range(n_steps):
                inputs = next_input()
                if first_call:
                    first_call = False
                    try:  # first call traces: turn errors from inside the model into a clear one
                        loss, flags = compute(inputs)
                        if compile and exact_random_resume:
                            retrace_each_epoch = uses_stateful_random_ops(compute.get_concrete_function(inputs).graph)
                    except (NonFiniteObjectiveError, KeyboardInterrupt):
                        raise
                    except Exception as err:
                        shapes = array_data.shapes() if array_data is not None else "internal data"
                        raise ValueError(
                            f"{type(model).__name__}.training_loss failed on a minibatch built from data with "
                            f"shapes {shapes} (dtype {dtype.name}): {type(err).__name__}: {err}"
                        ) from err
                else:
                    loss, flags = compute(inputs)
                if apply is not None:
                    grads, flags = flags
                flags = np.asarray(flags)
                if not flags.all():
                    raise NonFiniteObjectiveError(
                        epoch,
                        step + 1,
                        _nonfinite_names(flags, _variable_names(model, variables)) if flags.size > 1 else ["objective or gradient"],
                        manager.latest_checkpoint if manager else None,
                    )
                if apply is not None:
                    apply(grads)
                step += 1
                value = float(loss)
                epoch_losses.append(value)
                bar.update(1)
                bar.set_postfix(epoch=f"{epoch}/{epochs}", objective=f"{value:.5g}", refresh=False)
                training_monitor.on_step(step, objective=value, model=model, epoch=epoch)
            seconds = time.perf_counter() - started
            epoch_objective = float(np.mean(epoch_losses))
            epoch_counter.assign(epoch)
            step_counter.assign(step)
            history.epochs.append(epoch)
            history.objective.append(epoch_objective)
            history.seconds_per_epoch.append(seconds)
            history.steps.append(step)
            training_monitor.on_epoch(step, epoch_objective=epoch_objective, seconds_per_epoch=seconds)
            last = epoch == epochs
            if manager is not None and (epoch % checkpoint_every == 0 or last):
                history.last_checkpoint = manager.save(checkpoint_number=epoch)
            if metric_functions or callbacks:
                if epoch % metrics_every == 0 or last:
                    context = dict(model=model, epoch=epoch, step=step, history=history, objective=epoch_objective)
                    values: Dict[str, float] = {}
                    for name, function in metric_functions.items():
                        values[name] = float(call_flexibly(function, **context))
                    for callback in callbacks:
                        returned = call_flexibly(callback, **context)
                        if isinstance(returned, Mapping):
                            values.update({str(k): float(v) for k, v in returned.items()})
                    if values:
                        for name, value in values.items():
                            history.metrics.setdefault(name, []).append(value)
                        history.metric_epochs.append(epoch)
                        training_monitor.add_metric_names(values)
                        training_monitor.on_metrics(step, values)
                        shown = ", ".join(f"{k}={v:.4g}" for k, v in values.items())
                        bar.write(f"epoch {epoch}: objective={epoch_objective:.6g} {shown}")
            if images and (epoch % images_every == 0 or last):
                training_monitor.on_images(step)
    except KeyboardInterrupt:
        bar.close()
        where = manager.latest_checkpoint if manager is not None else None
        print(
            f"fit: interrupted in epoch {epoch} at step {step}; "
            + (f"re-run the same command to resume from {where}" if where else "no checkpoint (pass logdir= or checkpoint_dir=)")
        )
        raise
    finally:
        bar.close()
    return history
