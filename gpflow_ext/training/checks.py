"""Input checks for :func:`gpflow_ext.training.fit`, run at the API boundary before any tf.function.

Every problem raises a plain Python error (``TypeError`` / ``ValueError``) that names the argument
and what was expected, so a user never has to read a TensorFlow traceback from inside a graph.
The generic argument and data checks live in :mod:`gpflow_ext.validation` and are re-exported here.
"""
from typing import Optional, Sequence

import tensorflow as tf

from ..validation import (  # noqa: F401  (re-exported: the checks live in gpflow_ext.validation)
    _first_nonfinite_dense,
    _first_nonfinite_sparse,
    check_data,
    check_model,
    check_positive_int,
    check_positive_number,
)


class NonFiniteObjectiveError(FloatingPointError):
    """The objective or a gradient became NaN/inf during training.

    Raised by :func:`gpflow_ext.training.fit` *before* the offending update is applied, so the
    model still holds the last finite parameters and no checkpoint of a non-finite state is written.
    ``epoch`` (1-based: the epoch being trained) and ``step`` (1-based global update number, counted
    across resumed runs) say where it happened; ``what`` lists the non-finite quantities.
    """

    def __init__(self, epoch: int, step: int, what: Sequence[str], last_checkpoint: Optional[str]):
        self.epoch = epoch
        self.step = step
        self.what = list(what)
        self.last_checkpoint = last_checkpoint
        where = f"epoch {epoch}, step {step}"
        kept = (
            f"; the last good checkpoint {last_checkpoint} was kept"
            if last_checkpoint
            else "; no checkpoint was written"
        )
        super().__init__(
            f"non-finite value at {where}: {', '.join(self.what)}. The update was not applied{kept}. "
            "Try a smaller learning_rate, float64, or check the model's initial parameters."
        )


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
