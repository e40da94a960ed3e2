"""The one training loop: :func:`fit` trains any GPflow model.

The loop is assembled from parts: an *update* (:mod:`.updates`: Adam by default, any tf_keras
optimizer, grouped optimizers, natural gradients), the compiled *step* (:mod:`.step`, the only
place gradients are applied), *callbacks* (:mod:`.callbacks`: progress, TensorBoard, metrics,
checkpoints), *checkpoints* with run fingerprints and recovery (:mod:`.checkpoints`),
``tf.distribute`` (:mod:`.distribute`) and ``tf.data`` input (:mod:`.data`).
"""

import contextlib
import time
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import tensorflow as tf

from .callbacks import Callback, FunctionCallback, ProgressBar, RunState, TensorBoard
from .checkpoints import RunCheckpoints
from .data import ArrayInput, HeldData
from .diagnosis import first_nonfinite_operation, nonfinite_culprits
from .distribute import DistributedStep, check_strategy, is_chief, split_rows
from .errors import NonFiniteObjectiveError, TrainingStepError
from .history import History
from .prepare import (
    check_arguments,
    resolve_checkpointing,
    resolve_variables,
    run_fingerprint,
    training_dtype,
    training_input,
)
from .step import NOISE_SPEC, compile_step, make_step, objective, uses_stateful_random_ops
from .updates import as_update

__all__ = ["fit"]

_SEED_STRIDE = 1_000_003  # per-epoch TF seed = seed * stride + epoch


def fit(
    model: tf.Module,
    data: Sequence[Any] | None = None,
    *,
    epochs: int = 1,
    batch_size: int | None = None,
    optimizer: Any | None = None,
    learning_rate: float = 1e-2,
    callbacks: Sequence[Callback | Callable[..., Any]] = (),
    logdir: str | Path | None = None,
    checkpoint_dir: str | Path | None = None,
    seed: int = 0,
    strategy: tf.distribute.Strategy | None = None,
    variables: Sequence[Any] | None = None,
    shuffle: bool = True,
    progress: bool = True,
    exact_random_resume: bool = True,
    jit_compile: bool = False,
) -> History:
    """Train ``model`` by minimising ``model.training_loss`` and return its :class:`History`.

    Everything else is a callback: checkpointing and resume (:class:`~gpflow_ext.training.Checkpointing`:
    folder, ``resume``, how often, how many to keep), user scalars
    (:class:`~gpflow_ext.training.Metrics`, or plain functions in ``callbacks``), TensorBoard
    (:class:`~gpflow_ext.training.TensorBoard`), early stopping. The float type of the data is the
    model's (the dtype of its trained parameters); to debug the step eagerly, call
    ``tf.config.run_functions_eagerly(True)`` first.

    :param model: any GPflow model. External-data models (SVGP & co.) are called as
        ``model.training_loss(batch)``; internal-data models (GPR, SGPR) as ``model.training_loss()``
        with ``data=None``.
    :param data: tuple of arrays with equal first dimension N (numpy or ``scipy.sparse``, CSR
        preferred). Each minibatch is a tuple of the same structure; sparse parts arrive as
        ``tf.SparseTensor``. Floating arrays are cast to the model's float type; integer arrays keep
        their type and boolean arrays (masks) stay ``tf.bool``. The data are checked before anything is
        traced. Also a ``tf.data.Dataset`` of minibatch tuples (dense or ``tf.SparseTensor`` parts), one
        full pass per epoch, or a function ``epoch -> Dataset`` (1-based), for data streamed from disk;
        ``batch_size`` is then None, and resuming mid-epoch skips the batches already trained.
    :param epochs: total number of epochs of the run (a resumed run trains up to it).
    :param batch_size: minibatch size B (``None``: full batch); steps per epoch = ceil(N / B).
    :param optimizer: a tf_keras optimizer (default ``Adam(learning_rate)``), a
        :class:`~gpflow_ext.training.GroupedOptimizer`, or an update such as
        :class:`~gpflow_ext.training.NaturalGradientUpdate`. With a ``strategy``, create it inside
        ``strategy.scope()``.
    :param learning_rate: Adam's learning rate (a number or a schedule) when ``optimizer`` is None.
    :param callbacks: :class:`~gpflow_ext.training.Callback` objects (at most one
        :class:`~gpflow_ext.training.Checkpointing`), or functions called eagerly after every epoch
        with any of ``model, epoch, step, history, objective``; a returned ``dict`` of scalars is
        logged like :class:`~gpflow_ext.training.Metrics` (wrap a function in
        :class:`~gpflow_ext.training.FunctionCallback` to call it less often).
    :param logdir: TensorBoard folder (``tensorboard --logdir DIR``); checkpoints go to
        ``logdir/checkpoints`` (with :class:`~gpflow_ext.training.Checkpointing`'s defaults) unless
        a ``Checkpointing`` callback or ``checkpoint_dir`` is given. Pass a
        :class:`~gpflow_ext.training.TensorBoard` callback to choose what is logged.
    :param checkpoint_dir: short for ``callbacks=[Checkpointing(checkpoint_dir)]``.
    :param seed: epoch ``e`` (1-based) shuffles with the stateless key ``(seed, e)``; TF's global
        seed is set to ``seed * 1000003 + e`` before the first epoch of the call, and before every
        epoch if the step has stateful random ops (see ``exact_random_resume``).
    :param strategy: a ``tf.distribute`` strategy; build the model inside ``strategy.scope()``.
        Each replica's loss is weighted by its share of the global batch, so the result equals the
        single-device run. Only the chief writes checkpoints and logs.
    :param variables: train only these (Parameters, tf.Variables or Modules); default all trainable.
        The way to train a model in stages (what ``var_list`` is to ``optimizer.minimize``).
    :param shuffle: reshuffle the rows of array data every epoch (``False``: rows in order, the
        minibatches a file streamed front to back gives).
    :param progress: show a tqdm bar with the objective.
    :param exact_random_resume: if the step contains stateful random ops (``tf.random.normal``,
        seeded ``Dropout``), retrace it once per epoch under the epoch's seed so that epoch ``e``'s
        random numbers depend on ``(seed, e)`` only, hence a resumed run draws the same numbers as an
        uninterrupted one (``False``: trace once; faster, and the random numbers of a run without
        checkpoints differ from those of the default). It decides which random numbers a run draws,
        so it is an argument of ``fit`` rather than of ``Checkpointing``: adding checkpoints to a run
        never changes its numbers.
    :param jit_compile: compile the step with XLA (``tf.function(jit_compile=True)``: one fused program, no host
        ops, as a GPU runs it), one compilation per minibatch shape. SVGP, PreconditionedSVGP, MLGPF, SVDKL and
        GPLVF compile whole and give the steps of ``False`` to round-off (their noise: :mod:`gpflow_ext.randomness`).
        Fallbacks: ``tf.SparseTensor`` parts of a minibatch are made dense ([B, D]) outside the compiled region
        (sparse ops have no XLA kernels; nnz varies per batch), and MLGPF takes its fixed-shape label term
        (O(B·K)); TF's random ops (``tf.random.normal``, ``Dropout``) compile but draw other numbers; ignored,
        with a warning, under a ``strategy``.
    :raises NonFiniteObjectiveError: when the objective or a gradient is NaN/inf; the update is not
        applied, the error names the culprit, and the last checkpoint is left as it was.
    :raises TrainingStepError: when the model fails on a minibatch (cause first, then epoch and step).
    """
    if not isinstance(jit_compile, (bool, np.bool_)):
        raise TypeError(f"jit_compile must be a bool, got {type(jit_compile).__name__} ({jit_compile!r})")
    ints, seed, callbacks = check_arguments(
        model, epochs, batch_size, seed, optimizer, learning_rate, callbacks, strategy
    )
    epochs = ints["epochs"]
    saver, callbacks = resolve_checkpointing(callbacks, checkpoint_dir, logdir)
    variables = resolve_variables(model, variables)
    dtype = training_dtype(model, variables, check=False)
    training = training_input(model, data, ints["batch_size"], dtype, seed, shuffle, strategy)
    dtype = training_dtype(model, variables)  # after the data checks, whose messages are more specific

    # ---------------------------------------------------------------- update and its stages
    if strategy is not None:
        check_strategy(strategy, variables)
    with strategy.scope() if strategy is not None else contextlib.nullcontext():
        update = as_update(optimizer, learning_rate)
        update.build(model, variables)  # slots exist before restore and before tracing
    stages = update.stages(model, variables)
    if strategy is not None:
        check_strategy(strategy, variables, stages)
    trained = [v for stage in stages for v in stage.variables]  # the order of the gradient flags

    # ---------------------------------------------------------------- checkpoints and resume
    counters = dict(
        epoch=tf.Variable(0, dtype=tf.int64, trainable=False, name="epoch"),
        step=tf.Variable(0, dtype=tf.int64, trainable=False, name="step"),
        epoch_step=tf.Variable(0, dtype=tf.int64, trainable=False, name="epoch_step"),
        epoch_loss_sum=tf.Variable(0.0, dtype=tf.float64, trainable=False, name="epoch_loss_sum"),
        history=tf.Variable("", dtype=tf.string, trainable=False, name="history"),
    )
    fingerprint = tf.Variable("", dtype=tf.string, trainable=False, name="fingerprint")
    writer = is_chief(strategy)
    history = History(steps_per_epoch=training.steps_per_epoch, logdir=None if logdir is None else str(logdir))
    checkpoints = None
    if saver is not None:
        stateful = [(f"callback_{i}", c) for i, c in enumerate(callbacks) if hasattr(c, "checkpoint_state")]
        states = {key: c.checkpoint_state(model) for key, c in stateful}
        fingerprint_values = run_fingerprint(model, trained, training, seed, dtype, update)
        if stateful:
            fingerprint_values["callback_states"] = [f"{key}:{type(c).__name__}" for key, c in stateful]
        checkpoints = RunCheckpoints(
            saver.directory,
            tf.train.Checkpoint(model=model, optimizer=update.trackable, fingerprint=fingerprint, **counters, **states),
            fingerprint,
            fingerprint_values,
            saver.max_checkpoints,
            writer=writer,
        )
        history.resumed_from = history.last_checkpoint = checkpoints.restore(saver.resume)
        history.restore_json(counters["history"].numpy().decode())
        saver.attach(checkpoints, counters)
    run = RunState(
        model=model,
        history=history,
        epochs=epochs,
        steps_per_epoch=training.steps_per_epoch,
        logdir=history.logdir,
        writer=writer,
        epoch=int(counters["epoch"].numpy()),
        step=int(counters["step"].numpy()),
        epoch_step=int(counters["epoch_step"].numpy()),
        epoch_loss_sum=float(counters["epoch_loss_sum"].numpy()),
    )
    history.start_epoch = run.epoch
    if history.resumed_from is not None:
        where = f"epoch {run.epoch}" + (f" + {run.epoch_step} step(s)" if run.epoch_step else "")
        if run.epoch >= epochs:
            print(
                f"fit: {history.resumed_from} already holds epoch {run.epoch} of {epochs}: restored it, "
                "nothing left to train (Checkpointing(..., resume=False) trains afresh, a larger epochs= "
                "continues)"
            )
        else:
            print(f"fit: resumed from {history.resumed_from} at {where} (step {run.step})")

    # ---------------------------------------------------------------- callbacks
    parts: list[Callback] = [ProgressBar(progress)]
    if not any(isinstance(c, TensorBoard) for c in callbacks):
        parts.append(TensorBoard())
    parts += [c if isinstance(c, Callback) else FunctionCallback(c) for c in callbacks]

    if run.epoch >= epochs:
        return history
    _train(
        run,
        model=model,
        stages=stages,
        trained=trained,
        training=training,
        strategy=strategy,
        parts=parts,
        saver=saver,
        checkpoints=checkpoints,
        dtype=dtype,
        seed=seed,
        compile=not tf.config.functions_run_eagerly(),
        exact_random_resume=exact_random_resume,
        jit_compile=bool(jit_compile),
    )
    return history


def _train(
    run,
    *,
    model,
    stages,
    trained,
    training,
    strategy,
    parts,
    saver,
    checkpoints,
    dtype,
    seed,
    compile,
    exact_random_resume,
    jit_compile,
) -> None:
    """The loop over epochs and steps (``fit`` has checked and prepared everything)."""

    def compiled(function, signature=None, jit=False):
        return compile_step(function, signature, jit) if compile else function

    internal = isinstance(training, HeldData)
    keyed = isinstance(training, ArrayInput)  # row indices known: per-row noise keyed by (seed, step, row)
    signature = None
    if strategy is None and not internal:
        signature = [training.element_spec[1], NOISE_SPEC] if keyed else [training.element_spec]
    if strategy is None:
        step_function, apply = make_step(model, stages, internal), None
    else:
        distributed = DistributedStep(
            strategy, model, stages[0], None if internal else training.data.gather, dtype, internal
        )
        step_function, apply = distributed.compute, compiled(distributed.apply)
        if jit_compile:
            warnings.warn("fit: jit_compile=True is ignored under a tf.distribute strategy", stacklevel=3)
            jit_compile = False
    compute = compiled(step_function, signature, jit_compile)

    def step_arguments(global_input, step: int) -> tuple:
        """The compiled step's arguments (and the global batch, for diagnosis)."""
        if internal:
            return (), None
        noise_seed = tf.constant([seed, step], tf.int64)  # the step's per-row noise: (fit seed, global step)
        if strategy is not None:
            return (split_rows(strategy, global_input), noise_seed), global_input
        if keyed:
            rows, batch = global_input
            return (batch, (noise_seed, rows)), (batch, (noise_seed, rows))
        return (global_input,), (global_input, None)

    training.last_epoch = run.epochs
    for part in parts:
        part.on_train_begin(run)
    retrace_each_epoch, first_call, first_epoch = False, True, run.epoch + 1
    try:
        for epoch in range(first_epoch, run.epochs + 1):  # 1-based epoch being trained
            if run.stop:
                break
            if epoch == first_epoch or retrace_each_epoch or not compile:
                tf.random.set_seed(seed * _SEED_STRIDE + epoch)
            if retrace_each_epoch and epoch > first_epoch:
                # stateful random ops bake their seeds in at tracing: a fresh trace per epoch makes
                # epoch e's random numbers depend on (seed, e) only, hence identical after a resume
                compute = compiled(step_function, signature, jit_compile)
            started = time.perf_counter()
            for global_input in training.epoch(epoch, skip=run.epoch_step):
                arguments, global_batch = step_arguments(global_input, run.step)
                try:
                    loss, flags = compute(*arguments)
                    if first_call and compile and exact_random_resume:
                        graph = compute.get_concrete_function(*arguments).graph
                        retrace_each_epoch = uses_stateful_random_ops(graph)
                        if retrace_each_epoch and run.epoch_step and run.history.resumed_from:
                            warnings.warn(
                                "resumed mid-epoch with a step that has stateful random ops: the rest of "
                                f"epoch {epoch} draws other random numbers than an uninterrupted run",
                                stacklevel=2,
                            )
                except (NonFiniteObjectiveError, KeyboardInterrupt):
                    raise
                except (tf.errors.OpError, ValueError, TypeError, IndexError, KeyError) as err:
                    raise TrainingStepError(
                        err, type(model).__name__, epoch, run.step + 1, training.description
                    ) from err
                first_call = False
                if apply is not None:
                    grads, flags = flags
                flags = np.asarray(flags)
                if not flags.all():
                    _raise_nonfinite(
                        model, trained, flags, epoch, run.step + 1, checkpoints, training, global_batch, strategy, seed
                    )
                if apply is not None:
                    apply(grads)
                run.step += 1
                run.epoch_step += 1
                run.objective = float(loss)
                run.epoch_loss_sum += run.objective
                try:
                    for part in parts:
                        part.on_step_end(run)
                finally:  # the step is done: a callback that raises (Ctrl-C) does not cost a due checkpoint
                    if saver is not None:
                        saver.on_step_end(run)
            run.seconds = time.perf_counter() - started
            if run.epoch_step == 0:
                raise ValueError(f"data: epoch {epoch} yielded no minibatch (an empty tf.data.Dataset?)")
            run.epoch_objective = run.epoch_loss_sum / run.epoch_step
            run.epoch, run.epoch_step, run.epoch_loss_sum = epoch, 0, 0.0
            history = run.history
            history.epochs.append(epoch)
            history.objective.append(run.epoch_objective)
            history.seconds_per_epoch.append(run.seconds)
            history.steps.append(run.step)
            try:
                _epoch_end(run, parts)
            finally:  # written after the epoch's metrics, and also when a callback raised (Ctrl-C)
                if saver is not None:
                    saver.on_epoch_end(run)
    except KeyboardInterrupt:
        for part in parts:
            part.on_train_end(run)
        where = f"in epoch {run.current_epoch} at step {run.step}"
        if checkpoints is None:
            print(f"fit: interrupted {where}; no checkpoint (pass logdir= or checkpoint_dir=)")
        elif checkpoints.latest is None:
            print(
                f"fit: interrupted {where}; no checkpoint was written yet in {checkpoints.directory} "
                "(re-running starts from the beginning)"
            )
        else:
            print(f"fit: interrupted {where}; re-run the same command to resume from {checkpoints.latest}")
        raise
    for part in parts:
        part.on_train_end(run)


def _epoch_end(run: RunState, parts: Sequence[Callback]) -> None:
    """Epoch-end callbacks; scalars they return are recorded in the history as they come."""
    history = run.history
    values: dict[str, float] = {}
    for part in parts:
        returned = part.on_epoch_end(run)
        if returned:
            if not values:
                history.metric_epochs.append(run.epoch)
            for name, value in returned.items():
                history.metrics.setdefault(name, []).append(value)
            values.update(returned)
    if values:
        for part in parts:
            part.on_metrics(run, values)


def _raise_nonfinite(model, trained, flags, epoch, step, checkpoints, training, batch, strategy, seed):
    """Name the culprit (values, then gradients; the first non-finite op from an eager re-run with the
    step's random numbers)."""
    what = nonfinite_culprits(model, trained, flags)
    if isinstance(training, HeldData):
        origin = first_nonfinite_operation(objective(model, internal=True))
    else:
        if strategy is not None:  # the global batch of row indices
            rows = batch
            batch, noise = training.data.gather(rows), (tf.constant([seed, step - 1], tf.int64), rows)
        else:
            batch, noise = batch
        origin = first_nonfinite_operation(objective(model, batch, noise))
    raise NonFiniteObjectiveError(epoch, step, what, checkpoints.latest if checkpoints else None, origin)
