"""What every benchmark shares: TensorFlow without log lines, the command line, results JSON, compiled steps.

Importing this module first (``from benchmarks import common``, before TensorFlow is imported anywhere) keeps
TensorFlow's C++ and Python log lines off, as the experiments do (``TF_CPP_MIN_LOG_LEVEL=0`` shows them again).
The command line (:func:`base_parser`) has the same shared flags, under the same names, as the experiments'.
Benchmarks import the library and this module, never ``experiments``. Scripts run as
``python -m benchmarks.NAME`` from the repository root.
"""
import argparse
import copy
import importlib.util
import logging
import os
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

LEVEL_VARIABLE = "TF_CPP_MIN_LOG_LEVEL"
REPO = Path(__file__).resolve().parent.parent


def quiet_tensorflow() -> None:
    """``TF_CPP_MIN_LOG_LEVEL=3`` unless set, the ``tensorflow``/``absl`` loggers at ERROR, and TensorFlow imported
    with file descriptor 2 on the null device (the lines it writes while loading); safe without TensorFlow."""
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


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter, argparse.RawDescriptionHelpFormatter):
    """``--help`` with every option's default (options without a help text too) and the description as written."""

    def _format_action(self, action):
        if action.help is None and action.option_strings and action.default is not argparse.SUPPRESS:
            action = copy.copy(action)
            action.help = "(default: %(default)s)"
        return super()._format_action(action)


def base_parser(
    description: str,
    *,
    data_dir: bool = True,
    epochs: bool = True,
    output: bool = True,
    logdir: bool = True,
    seed: bool = True,
    float32: bool = False,
    smoke: str | None = None,
    strategy: bool = False,
) -> argparse.ArgumentParser:
    """The shared command line, each flag only where the benchmark uses it: ``--data-dir DIR`` (default
    ``$GPFLOW_EXT_DATA``), ``--epochs E``, ``--output results.json``, ``--logdir DIR``, ``--seed S``; on request
    ``--float32``, ``--smoke`` (``smoke`` is its help text: what the tiny run is) and ``--strategy
    {none,multiworker}`` (see :func:`make_strategy`)."""
    parser = argparse.ArgumentParser(description=description, formatter_class=HelpFormatter)
    if data_dir:
        parser.add_argument("--data-dir", type=Path, default=os.environ.get("GPFLOW_EXT_DATA"),
                            help="folder laid out like shared/data (default from $GPFLOW_EXT_DATA)")
    if epochs:
        parser.add_argument("--epochs", type=int, default=None, help="training epochs (None: the script's default)")
    if output:
        parser.add_argument("--output", type=Path, default=None, help="write the results JSON here")
    if logdir:
        parser.add_argument("--logdir", type=Path, default=None, help="TensorBoard log folder")
    if seed:
        parser.add_argument("--seed", type=int, default=0, help="random seed")
    if float32:
        parser.add_argument("--float32", action="store_true", help="compute in float32 (default float64)")
    if smoke is not None:
        parser.add_argument("--smoke", action="store_true", help=f"tiny run for the tests: {smoke}")
    if strategy:
        parser.add_argument("--strategy", choices=("none", "multiworker"), default="none",
                            help="multiworker: train under tf.distribute.MultiWorkerMirroredStrategy, one process per "
                                 "worker with TF_CONFIG (python -m gpflow_ext.training.launch --workers W -- python -m "
                                 "benchmarks.NAME ... --strategy multiworker; docs/training/distributed.md)")
    return parser


def make_strategy(args: argparse.Namespace):
    """The ``tf.distribute`` strategy of ``--strategy`` (``None`` for ``none``). Call it right after parsing the
    command line, before any TensorFlow operation; build the model in ``strategy.scope()`` and pass
    ``strategy=`` to ``fit``. Only the chief (``gpflow_ext.training.is_chief``) should write results."""
    if getattr(args, "strategy", "none") == "none":
        return None
    from gpflow_ext.training import multi_worker_strategy

    return multi_worker_strategy()


def write_results(results: Mapping[str, Any], output: Path | None, seeds: Sequence[int] | None = None) -> None:
    """Write ``results`` with its provenance (``gpflow_ext.results.write_results``) if ``output`` is given;
    ``seeds`` defaults to the ``seed``/``seeds`` of ``results`` or its ``args`` record."""
    from gpflow_ext.results import write_results as write

    if seeds is None:
        for record in (results, results.get("args") or {}, results.get("arguments") or {}):
            if isinstance(record, Mapping) and record.get("seeds") is not None:
                seeds = record["seeds"]
                break
            if isinstance(record, Mapping) and isinstance(record.get("seed"), int):
                seeds = [record["seed"]]
                break
    if isinstance(seeds, str):
        seeds = [int(s) for s in seeds.split(",") if s.strip()]
    write(results, output, seeds=seeds)


def print_table(rows: Iterable[Mapping[str, Any]], columns: Sequence[str], title: str = "") -> str:
    """Print dict rows as an aligned text table (floats with 4 digits); returns the text."""
    cells = [["-" if r.get(c) is None else f"{r[c]:.4f}" if isinstance(r.get(c), float) else str(r[c]) for c in columns]
             for r in rows]
    widths = [max([len(c)] + [len(row[i]) for row in cells]) for i, c in enumerate(columns)]
    lines = [title] if title else []
    lines.append("  ".join(c.ljust(w) for c, w in zip(columns, widths)))
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(v.ljust(w) for v, w in zip(row, widths)) for row in cells]
    text = "\n".join(lines)
    print(text)
    return text


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
