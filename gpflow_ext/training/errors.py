"""Errors raised by :func:`gpflow_ext.training.fit` while training (argument errors are plain
``TypeError`` / ``ValueError`` from :mod:`gpflow_ext.validation`, raised before anything is traced)."""

import re
from collections.abc import Sequence

__all__ = ["NonFiniteObjectiveError", "TrainingStepError", "CheckpointMismatchError"]


class NonFiniteObjectiveError(FloatingPointError):
    """The objective or a gradient became NaN/inf during training.

    Raised by :func:`gpflow_ext.training.fit` *before* the offending update is applied, so the
    model still holds the last finite parameters and no checkpoint of a non-finite state is written.

    * ``epoch`` (1-based: the epoch being trained) and ``step`` (1-based global update number,
      counted across resumed runs) say where it happened;
    * ``what`` lists the non-finite quantities, culprits first: the parameters whose value or
      gradient is non-finite (GPflow paths such as ``.kernel.lengthscales``; tf_keras weights as
      ``.feature_extractor/dense_1/kernel``), or ``objective`` when every gradient is;
    * ``origin`` (may be ``None``) is the first operation that produced a non-finite value when the
      objective was re-evaluated eagerly under ``tf.debugging.enable_check_numerics``, e.g.
      ``Cholesky of Kmm (gpflow/conditionals/util.py:56: Lm = tf.linalg.cholesky(Kmm))``.
    """

    def __init__(
        self,
        epoch: int,
        step: int,
        what: Sequence[str],
        last_checkpoint: str | None,
        origin: str | None = None,
    ):
        self.epoch = epoch
        self.step = step
        self.what = list(what)
        self.last_checkpoint = last_checkpoint
        self.origin = origin
        kept = (
            f"; the last good checkpoint {last_checkpoint} was kept"
            if last_checkpoint
            else "; no checkpoint was written"
        )
        first = f" First non-finite operation: {origin}." if origin else ""
        super().__init__(
            f"non-finite value at epoch {epoch}, step {step}: {', '.join(self.what)}.{first} "
            f"The update was not applied{kept}. "
            "Try a smaller learning_rate, float64, or check the model's initial parameters."
        )


class TrainingStepError(ValueError):
    """A training step failed inside the model (a TensorFlow error or a Python error while tracing).

    The message starts with the underlying cause, then says where: the model, the epoch and step
    (both 1-based) and the shapes of the data the minibatch was built from. ``cause`` holds the
    original exception (also chained as ``__cause__``).
    """

    def __init__(self, cause: BaseException, model_name: str, epoch: int, step: int, data_shapes: str):
        self.cause = cause
        self.epoch = epoch
        self.step = step
        text = _first_lines(getattr(cause, "message", None) or str(cause))
        super().__init__(
            f"{type(cause).__name__}: {text} -- raised by {model_name}.training_loss in epoch {epoch}, "
            f"step {step}, on a minibatch built from data with shapes {data_shapes}"
        )


class CheckpointMismatchError(ValueError):
    """The checkpoints in a folder were written by a run with another configuration (model
    structure, data, batch size, optimizer ...); ``differences`` lists ``(key, saved, now)``."""

    def __init__(self, path: str, differences: Sequence[tuple], hint: str):
        self.path = path
        self.differences = list(differences)
        shown = "; ".join(f"{key}: saved {saved}, now {now}" for key, saved, now in self.differences[:8])
        more = f" (and {len(self.differences) - 8} more)" if len(self.differences) > 8 else ""
        super().__init__(f"checkpoint {path} was written by a different run: {shown}{more}. {hint}")


def _first_lines(text: str, limit: int = 3) -> str:
    """The head of a (TensorFlow) error message, without its graph stack trace. An error raised
    while tracing ("in user code: File ... ValueError: ...") is reduced to its last error line."""
    lines = [line for line in str(text).strip().splitlines() if line.strip()]
    if any(line.startswith("Detected at node") for line in lines):
        # "Graph execution error: Detected at node N defined at: File ... <message> [[{{node N}}]]"
        frames = [i for i, line in enumerate(lines) if re.match(r'\s*File "', line)]
        node = next(line for line in lines if line.startswith("Detected at node"))
        node = re.sub(r"^Detected at node '?([^' ]+)'?.*$", r"\1", node)
        rest = [line for line in lines[(frames[-1] + 1 if frames else 0) :] if not line.strip().startswith("[[")]
        lines = rest + [f"(at node {node})"]
    if lines and lines[0].strip().startswith("in user code"):
        errors = [i for i, line in enumerate(lines) if re.match(r"\s*\w+(Error|Exception): ", line)]
        if errors:
            lines = [re.sub(r"^\s*\w+(Error|Exception): ", "", lines[errors[-1]])] + lines[errors[-1] + 1 :]
    head = []
    for line in lines:
        if line.lstrip().startswith(("Stack trace", 'File "', "[[", "Traceback")):
            break
        head.append(line.strip())
        if len(head) == limit:
            break
    return " ".join(head) if head else str(text)[:500]
