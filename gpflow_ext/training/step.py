"""The compiled training step: loss, gradients, finite check, update.

This is the only place in gpflow_ext where gradients are applied. A step evaluates each stage of
the :class:`~gpflow_ext.training.updates.Update` in turn; a stage is applied only if its objective
and gradients are finite and every earlier stage was applied, and when a later stage fails the
earlier ones are rolled back, so the parameters never hold a partial or non-finite update.
"""

import contextlib
from collections.abc import Callable, Sequence
from typing import Any

import tensorflow as tf

from ..randomness import minibatch_noise
from .updates import Stage

__all__ = [
    "loss_and_gradients",
    "finite_flags",
    "make_step",
    "compile_step",
    "uses_stateful_random_ops",
    "NOISE_SPEC",
    "objective",
]

#: ``(seed [2], row indices [B])`` of a step's per-row random numbers (:mod:`gpflow_ext.randomness`)
NOISE_SPEC = (tf.TensorSpec([2], tf.int64), tf.TensorSpec([None], tf.int64))


def objective(
    model: tf.Module, batch: Any = None, noise: Sequence[tf.Tensor] | None = None, internal: bool = False
) -> Callable[[], tf.Tensor]:
    """``model.training_loss`` of a minibatch (or of the held data), inside the :func:`minibatch_noise`
    block of ``noise = (seed, rows)`` when given."""

    def loss() -> tf.Tensor:
        with minibatch_noise(*noise) if noise is not None else contextlib.nullcontext():
            return model.training_loss() if internal else model.training_loss(batch)

    return loss


def loss_and_gradients(
    loss_fn: Callable[[], tf.Tensor], variables: Sequence[tf.Variable], weight: tf.Tensor | None = None
):
    """Objective (times ``weight``) and its gradients (zeros for variables it does not touch)."""
    with tf.GradientTape(watch_accessed_variables=False) as tape:
        tape.watch(variables)
        loss = loss_fn()
        if weight is not None:
            loss = loss * tf.cast(weight, loss.dtype)
    grads = tape.gradient(loss, variables)
    return loss, [tf.zeros_like(v) if g is None else g for g, v in zip(grads, variables)]


def finite_flags(loss: tf.Tensor, grads: Sequence[Any]) -> tf.Tensor:
    """[1 + len(grads)] bool: objective finite, then each gradient finite."""
    flags = [tf.reduce_all(tf.math.is_finite(loss))]
    for grad in grads:
        values = grad.values if isinstance(grad, tf.IndexedSlices) else grad
        flags.append(tf.reduce_all(tf.math.is_finite(values)))
    return tf.stack(flags)


def make_step(model: tf.Module, stages: list[Stage], internal: bool) -> Callable:
    """``step(batch, noise) -> (objective, flags)`` for one device (``noise``: see :func:`objective`).

    ``objective`` is the first stage's objective (before any update of the step); ``flags`` is
    [objective finite, gradient finite per variable of every stage in order]; when a stage's
    objective is non-finite the first flag is False.
    """

    def loss_of(batch, noise):
        return objective(model, batch, noise, internal)

    def apply_if(ok: tf.Tensor, stage: Stage, grads: list[tf.Tensor]) -> None:
        def update():
            stage.apply(grads)
            return tf.constant(True)

        tf.cond(ok, update, lambda: tf.constant(False))

    if len(stages) == 1:
        (stage,) = stages

        def step(batch=None, noise=None):
            loss, grads = loss_and_gradients(loss_of(batch, noise), stage.variables)
            flags = finite_flags(loss, grads)
            apply_if(tf.reduce_all(flags), stage, grads)
            return loss, flags

        return step

    def staged_step(batch=None, noise=None):
        saved = [[tf.identity(v) for v in stage.variables] for stage in stages[:-1]]  # for the rollback
        applied = tf.constant(True)
        objective_ok = tf.constant(True)
        first_loss, gradient_flags = None, []
        for stage in stages:
            loss, grads = loss_and_gradients(loss_of(batch, noise), stage.variables)
            flags = finite_flags(loss, grads)
            first_loss = loss if first_loss is None else first_loss
            objective_ok = tf.logical_and(objective_ok, flags[0])
            gradient_flags.append(flags[1:])
            applied = tf.logical_and(applied, tf.reduce_all(flags))
            apply_if(applied, stage, grads)

        def rollback():
            for stage, values in zip(stages[:-1], saved):
                for variable, value in zip(stage.variables, values):
                    variable.assign(value)
            return tf.constant(False)

        tf.cond(applied, lambda: tf.constant(True), rollback)
        return first_loss, tf.concat([objective_ok[None]] + gradient_flags, axis=0)

    return staged_step


def compile_step(step: Callable, signature: Sequence[Any] | None = None, jit_compile: bool = False) -> Callable:
    """``step`` as a ``tf.function`` (``input_signature=signature``: one tracing for full and short batches),
    compiled with XLA when ``jit_compile``.

    Under XLA, the ``tf.SparseTensor`` parts of a minibatch are made dense (``tf.sparse.to_dense``, [B, D]) by an
    outer ``tf.function`` and the XLA-compiled step receives dense tensors: sparse ops have no XLA kernels and
    a sparse minibatch's number of stored entries changes from batch to batch, while XLA compiles for fixed
    shapes (dense minibatches have two: full and last batch).
    """
    sparse = signature is not None and any(
        isinstance(part, tf.SparseTensorSpec) for part in tf.nest.flatten(signature[0], expand_composites=False)
    )
    if not (jit_compile and sparse):
        if signature is not None:
            return tf.function(step, input_signature=signature, jit_compile=jit_compile)
        return tf.function(step, reduce_retracing=True, jit_compile=jit_compile)
    inner = tf.function(step, reduce_retracing=True, jit_compile=True)

    def densified(batch, *rest):
        dense = tuple(tf.sparse.to_dense(part) if isinstance(part, tf.SparseTensor) else part for part in batch)
        return inner(dense, *rest)

    return tf.function(densified, input_signature=signature)


_STATEFUL_RANDOM_OPS = {
    "RandomStandardNormal",
    "RandomUniform",
    "RandomUniformInt",
    "TruncatedNormal",
    "ParameterizedTruncatedNormal",
    "RandomGamma",
    "RandomPoisson",
    "RandomPoissonV2",
    "RandomShuffle",
    "Multinomial",
    "RandomCrop",
}


def uses_stateful_random_ops(graph: tf.Graph) -> bool:
    """Whether a traced graph (incl. nested functions: cond/while bodies) has seed-at-trace random ops.

    Stateless ops (``StatelessRandom*``) and ``tf.random.Generator`` ops (state in a variable) are not counted.
    """
    graph_def = graph.as_graph_def()
    nodes = list(graph_def.node)
    for function in graph_def.library.function:
        nodes.extend(function.node_def)
    return any(node.op in _STATEFUL_RANDOM_OPS for node in nodes)
