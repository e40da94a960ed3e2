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
