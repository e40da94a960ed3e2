"""What every benchmark shares: TensorFlow without log lines, the command line, results JSON, compiled steps.

Importing this module first (``from benchmarks import common``, before TensorFlow is imported anywhere) keeps
TensorFlow's C++ and Python log lines off, as the experiments do (``TF_CPP_MIN_LOG_LEVEL=0`` shows them again).
The command line (:func:`base_parser`) has the same shared flags, under the same names, as the experiments'.
Benchmarks import the library and this module, never ``experiments``. Scripts run as
``python -m benchmarks.NAME`` from the repository root.
"""
import importlib.util
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

LEVEL_VARIABLE = "TF_CPP_MIN_LOG_LEVEL"
REPO = Path(__file__).resolve().parent.parent


def quiet_tensorflow() -> None:
    """``TF_CPP_MIN_LOG_LEVEL=3`` unless set, the ``tensorflow``/``absl`` loggers at ERROR, and TensorFlow imported
    with file descriptor 2 on the null device (the lines it writes while loading); safe without TensorFlow. It runs
    before ``gpflow_ext`` (which imports TensorFlow) is imported, so it cannot live in the package."""
    os.environ.setdefault(LEVEL_VARIABLE, "3")
    for name in ("tensorflow", "absl"):
        logging.getLogger(name).setLevel(logging.ERROR)
    quiet = os.environ[LEVEL_VARIABLE].strip() not in ("", "0")
    if not quiet or "tensorflow" in sys.modules or importlib.util.find_spec("tensorflow") is None:
        return
    sys.stderr.flush()
    saved, null = os.dup(2), os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, 2)
        import tensorflow  # noqa: F401
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(null)


quiet_tensorflow()

from gpflow_ext.scripts import (  # noqa: E402,F401  (re-exported: what experiments and benchmarks share)
    HelpFormatter,
    base_parser,
    make_strategy,
    print_table,
    write_results,
)


def compiled_training_step(model, optimizer: Any = None, *, learning_rate: float = 0.01,
                           variables: Sequence[Any] | None = None, internal: bool = False,
                           input_signature: Sequence[Any] | None = None):
    """``step(batch) -> objective`` (``step()`` for internal-data models): one compiled training step of
    ``gpflow_ext.training.fit`` (its update and :func:`gpflow_ext.training.step.make_step`, in ``tf.function``),
    for timing single steps of our models; ``optimizer`` as ``fit``'s (default Adam at ``learning_rate``),
    ``variables`` the trained tf.Variables (default: all trainable), ``input_signature`` the ``tf.function``'s
    (``[batch spec]``, to trace once for every batch size). Whole runs use ``fit`` itself."""
    import tensorflow as tf

    from gpflow_ext.training.step import make_step
    from gpflow_ext.training.updates import as_update

    variables = list(model.trainable_variables if variables is None else variables)
    update = as_update(optimizer, learning_rate)
    update.build(model, variables)
    step = tf.function(make_step(model, update.stages(model, variables), internal), input_signature=input_signature)
    if internal:
        return lambda: step()[0]
    return lambda batch: step(batch)[0]


def profile_op_seconds(step, steps: int, logdir: str | Path) -> dict[str, Any]:
    """Where a compiled step's time goes: ``step()`` run ``steps`` times under ``tf.profiler``, its trace read back.

    Returns ``wall_seconds_per_step`` and, per step, the seconds of each TensorFlow op as the executor ran it
    (``op_seconds``: op name -> seconds, largest first) and of each op type (``op_type_seconds``). Ops on the two
    executor threads of a 2-core machine may overlap, so the op seconds can add up to more than the wall time;
    their shares are what the trace says about the step. Call ``step()`` once before, so that tracing is not timed.
    """
    import time

    import tensorflow as tf
    from tensorflow.tsl.profiler.protobuf import xplane_pb2

    logdir = Path(logdir)
    tf.profiler.experimental.start(str(logdir))
    start = time.perf_counter()
    for _ in range(steps):
        step()
    wall = (time.perf_counter() - start) / steps
    tf.profiler.experimental.stop()
    trace = max(logdir.glob("**/*.xplane.pb"), key=lambda path: path.stat().st_mtime)
    space = xplane_pb2.XSpace()
    space.ParseFromString(trace.read_bytes())
    by_op: dict[str, float] = {}
    by_type: dict[str, float] = {}
    for plane in space.planes:
        for line in plane.lines:
            for event in line.events:
                name = plane.event_metadata[event.metadata_id].name  # "scope/name:OpType" for a TensorFlow op
                op_type = name.rsplit(":", 1)[-1]
                if ":" not in name or "::" in name or not op_type or op_type[0] == " ":  # host events, not ops
                    continue
                seconds = event.duration_ps * 1e-12 / steps
                by_op[name] = by_op.get(name, 0.0) + seconds
                by_type[op_type] = by_type.get(op_type, 0.0) + seconds

    def largest_first(table: dict[str, float]) -> dict[str, float]:
        return dict(sorted(table.items(), key=lambda item: -item[1]))

    return {"wall_seconds_per_step": wall, "steps": steps, "op_seconds": largest_first(by_op),
            "op_type_seconds": largest_first(by_type)}
