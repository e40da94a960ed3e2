"""What the experiment and benchmark scripts share: one command line, results with provenance, plain-text tables.

``experiments/`` and ``benchmarks/`` both build on this module (their ``common`` modules add what only they need),
so a flag has one name and one help text everywhere. Keeping TensorFlow's load-time log lines off has to happen
before this package (and so TensorFlow) is first imported, so each script folder does that itself first
(``experiments/quiet.py``, ``benchmarks/common.py``).
"""

import argparse
import copy
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = [
    "HelpFormatter",
    "base_parser",
    "make_strategy",
    "print_table",
    "script_parser",
    "write_results",
]


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter, argparse.RawDescriptionHelpFormatter):
    """``--help`` with every option's default (options without a help text too) and the description as written."""

    def _format_action(self, action: argparse.Action) -> str:
        if action.help is None and action.option_strings and action.default is not argparse.SUPPRESS:
            action = copy.copy(action)
            action.help = "(default: %(default)s)"
        return super()._format_action(action)


def script_parser(description: str, **kwargs: Any) -> argparse.ArgumentParser:
    """An ``ArgumentParser`` with :class:`HelpFormatter` and no shared flags (see :func:`base_parser`)."""
    return argparse.ArgumentParser(description=description, formatter_class=HelpFormatter, **kwargs)


def base_parser(
    description: str,
    *,
    data_dir: bool = True,
    epochs: bool = True,
    output: bool = True,
    logdir: bool = True,
    seed: bool = True,
    float32: bool = False,
    progress: bool = False,
    figure_dir: bool = False,
    smoke: str | None = None,
    strategy: bool = False,
) -> argparse.ArgumentParser:
    """The shared command line, each flag only where the script uses it.

    ``--data-dir DIR`` (default ``$GPFLOW_EXT_DATA``), ``--epochs E`` (``None``: the script's or paper's),
    ``--output results.json``, ``--logdir DIR`` (TensorBoard), ``--seed S``; on request ``--float32``,
    ``--no-progress``, ``--figure-dir DIR``, ``--smoke`` (``smoke`` is its help text: what the tiny run is) and
    ``--strategy {none,multiworker}`` (see :func:`make_strategy`).
    """
    parser = script_parser(description)
    if data_dir:
        parser.add_argument(
            "--data-dir",
            type=Path,
            default=os.environ.get("GPFLOW_EXT_DATA"),
            help="folder laid out like shared/data (default from $GPFLOW_EXT_DATA)",
        )
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
    if progress:
        parser.add_argument("--no-progress", action="store_true", help="hide the progress bars")
    if figure_dir:
        parser.add_argument("--figure-dir", type=Path, default=None, help="folder for the figures (PNG)")
    if smoke is not None:
        parser.add_argument("--smoke", action="store_true", help=f"tiny run for the tests: {smoke}")
    if strategy:
        parser.add_argument(
            "--strategy",
            choices=("none", "multiworker"),
            default="none",
            help="multiworker: train under tf.distribute.MultiWorkerMirroredStrategy, one process per worker with "
            "TF_CONFIG (python -m gpflow_ext.training.launch --workers W -- python -m benchmarks.NAME ... "
            "--strategy multiworker; docs/training/distributed.md)",
        )
    return parser


def make_strategy(args: argparse.Namespace) -> Any:
    """The ``tf.distribute`` strategy of ``--strategy`` (``None`` for ``none``). Call it right after parsing the
    command line, before any TensorFlow operation; build the model in ``strategy.scope()`` and pass
    ``strategy=`` to ``fit``. Only the chief (``gpflow_ext.training.is_chief``) should write results."""
    if getattr(args, "strategy", "none") == "none":
        return None
    from .training import multi_worker_strategy

    return multi_worker_strategy()


def write_results(results: Mapping[str, Any], output: Path | None, seeds: Sequence[int] | str | None = None) -> None:
    """Write ``results`` with its provenance (:func:`gpflow_ext.results.write_results`) if ``output`` is given.
    ``seeds`` defaults to the ``seed``/``seeds`` found in ``results`` or its ``args``/``arguments`` record."""
    from .results import write_results as write

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


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.4f}"
    return str(value)


def print_table(rows: Iterable[Mapping[str, Any]], columns: Sequence[str], title: str = "") -> str:
    """Print dict rows as an aligned text table (floats with 4 digits, ``-`` for missing); returns the text."""
    cells = [[_cell(r.get(c)) for c in columns] for r in rows]
    widths = [max([len(c)] + [len(row[i]) for row in cells]) for i, c in enumerate(columns)]
    lines = [title] if title else []
    lines.append("  ".join(c.ljust(w) for c, w in zip(columns, widths)))
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(v.ljust(w) for v, w in zip(row, widths)) for row in cells]
    text = "\n".join(lines)
    print(text)
    return text
