"""Everything ``fit`` does with ``tf.distribute``: checks, the per-replica step, input splitting and
which worker writes.

Data parallelism: each global minibatch of row indices is split into contiguous shares, one per
replica; each replica gathers its rows, weights its objective by its share of the global batch
(b_r / B, so the replica sum equals the single-device minibatch objective), and the gradients are
summed by the strategy when the optimizer applies them. The finite check runs between the two
compiled calls, so every replica agrees on applying or not.
"""

import json
import os
from collections.abc import Callable, Sequence
from typing import Any

import tensorflow as tf

from .step import finite_flags, loss_and_gradients, objective
from .updates import Stage

__all__ = ["check_strategy", "is_chief", "DistributedStep", "split_rows", "multi_worker_strategy"]

_COMMUNICATION = {
    "auto": tf.distribute.experimental.CommunicationImplementation.AUTO,
    "ring": tf.distribute.experimental.CommunicationImplementation.RING,
    "nccl": tf.distribute.experimental.CommunicationImplementation.NCCL,
}


def multi_worker_strategy(communication: str = "ring") -> tf.distribute.MultiWorkerMirroredStrategy:
    """A ``tf.distribute.MultiWorkerMirroredStrategy`` for the cluster in ``TF_CONFIG`` (set by
    ``python -m gpflow_ext.training.launch`` or a cluster manager; without it, a cluster of one).

    Call it at program start, before any TensorFlow operation runs (collective ops are configured when
    TensorFlow starts). ``communication``: ``"ring"`` (gRPC all-reduce, CPU workers), ``"nccl"`` (GPUs)
    or ``"auto"``.
    """
    if communication not in _COMMUNICATION:
        raise ValueError(f"communication must be one of {sorted(_COMMUNICATION)}, got {communication!r}")
    config = os.environ.get("TF_CONFIG")
    if config:
        try:
            cluster = json.loads(config)["cluster"]
        except (ValueError, KeyError, TypeError) as err:
            raise ValueError(f"TF_CONFIG must be JSON with a 'cluster' entry, got {config[:200]!r}") from err
        if not isinstance(cluster, dict) or not any(cluster.get(kind) for kind in ("chief", "worker")):
            raise ValueError(f"TF_CONFIG names no 'chief' or 'worker' task: {config[:200]!r}")
    options = tf.distribute.experimental.CommunicationOptions(implementation=_COMMUNICATION[communication])
    try:
        return tf.distribute.MultiWorkerMirroredStrategy(communication_options=options)
    except RuntimeError as err:
        raise RuntimeError(
            "multi_worker_strategy() must be called at program start, before any TensorFlow operation "
            f"(TensorFlow said: {err})"
        ) from err


def check_strategy(strategy: Any, variables: Sequence[tf.Variable], stages: Sequence[Stage] = ()) -> None:
    """The model was built in ``strategy.scope()``; the update has one stage (when given)."""
    outside = [v.name for v in variables if not strategy.extended.variable_created_in_scope(v)]
    if outside:
        raise ValueError(
            f"strategy given but the model variables {outside[:3]} were created outside strategy.scope(); "
            "build the model inside `with strategy.scope():`"
        )
    if len(stages) > 1:
        raise ValueError(
            "optimizer: a staged update (NaturalGradientUpdate) is not supported under a tf.distribute "
            "strategy; use a tf_keras optimizer"
        )


def is_chief(strategy: Any) -> bool:
    """Whether this process writes checkpoints and TensorBoard logs (always, without a multi-worker
    strategy; the chief -- or worker 0 when there is no chief -- under one)."""
    resolver = getattr(strategy, "cluster_resolver", None) if strategy is not None else None
    if resolver is None or not getattr(strategy.extended, "_in_multi_worker_mode", lambda: False)():
        return True
    task_type, task_id = resolver.task_type, resolver.task_id
    if task_type is None or task_type == "chief":
        return True
    has_chief = "chief" in resolver.cluster_spec().as_dict()
    return task_type == "worker" and task_id == 0 and not has_chief


def split_rows(strategy: tf.distribute.Strategy, rows: tf.Tensor):
    """A global batch of row indices as per-replica contiguous shares."""

    def share(context):
        n = tf.shape(rows)[0]
        r, count = context.replica_id_in_sync_group, context.num_replicas_in_sync
        return rows[(r * n) // count : ((r + 1) * n) // count]

    return strategy.experimental_distribute_values_from_function(share)


class DistributedStep:
    """``compute(rows, seed) -> (objective, (per-replica grads, flags))`` and ``apply(grads)``; each replica
    evaluates its share of the rows with per-row random numbers keyed by ``(seed, global row index)``."""

    def __init__(self, strategy, model, stage: Stage, gather: Callable | None, dtype: tf.DType, internal: bool):
        self.strategy = strategy
        variables = stage.variables
        replicas = strategy.num_replicas_in_sync

        def replica_compute(rows, seed):
            if internal:  # every replica evaluates the full objective / R
                loss, grads = loss_and_gradients(
                    objective(model, internal=True), variables, tf.constant(1.0 / replicas, dtype)
                )
                return loss, grads, tf.cast(tf.logical_not(finite_flags(loss, grads)), tf.int32)
            batch = gather(rows)
            local = tf.cast(tf.shape(rows)[0], dtype)
            total = tf.distribute.get_replica_context().all_reduce(tf.distribute.ReduceOp.SUM, local)

            def weighted():
                loss, grads = loss_and_gradients(objective(model, batch, (seed, rows)), variables, local / total)
                return loss, [tf.convert_to_tensor(g) for g in grads]  # IndexedSlices -> dense for tf.cond

            def empty():  # a replica that got no rows from a short last batch
                return tf.zeros((), dtype), [tf.zeros_like(v) for v in variables]

            loss, grads = tf.cond(local > 0, weighted, empty)
            return loss, grads, tf.cast(tf.logical_not(finite_flags(loss, grads)), tf.int32)

        def compute(rows=None, seed=None) -> tuple[tf.Tensor, Any]:
            loss, grads, bad = strategy.run(replica_compute, args=(rows, seed))
            loss = strategy.reduce(tf.distribute.ReduceOp.SUM, loss, axis=None)
            bad = strategy.reduce(tf.distribute.ReduceOp.SUM, bad, axis=None)  # [1 + V] replicas failing
            return loss, (grads, tf.equal(bad, 0))

        def apply(grads) -> None:
            strategy.run(stage.apply, args=(grads,))

        self.compute = compute
        self.apply = apply
