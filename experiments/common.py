"""What every experiment script shares: the command line, results JSON, paper tables (benchmarks: their own
``benchmarks.common``, with the same flags).

The command-line convention (``base_parser``): argparse with the defaults shown in ``--help`` and the
shared flags under one name each, where a script has them: ``--data-dir``, ``--output`` (results JSON),
``--logdir`` (TensorBoard), ``--seed``, ``--float32``, ``--no-progress``, ``--figure-dir`` and ``--smoke``
(a tiny run, for the tests). Scripts run as ``python -m experiments.NAME`` from the repository root.
"""
import argparse
import copy
import dataclasses
import os
import types
import typing
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from experiments import quiet  # noqa: F401  (first: TensorFlow's log lines off before it is imported)

REPO = Path(__file__).resolve().parent.parent


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter, argparse.RawDescriptionHelpFormatter):
    """``--help`` with every option's default (options without a help text too) and the description as written."""

    def _format_action(self, action):
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
) -> argparse.ArgumentParser:
    """The shared command line, each flag only where the script uses it.

    ``--data-dir DIR`` (default ``$GPFLOW_EXT_DATA``), ``--epochs E`` (``None``: the script's or paper's),
    ``--output results.json``, ``--logdir DIR`` (TensorBoard), ``--seed S``; on request ``--float32``,
    ``--no-progress``, ``--figure-dir DIR`` and ``--smoke`` (``smoke`` is its help text: what the tiny run is).
    """
    parser = script_parser(description)
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
    if progress:
        parser.add_argument("--no-progress", action="store_true", help="hide the progress bars")
    if figure_dir:
        parser.add_argument("--figure-dir", type=Path, default=None, help="folder for the figures (PNG)")
    if smoke is not None:
        parser.add_argument("--smoke", action="store_true", help=f"tiny run for the tests: {smoke}")
    return parser


def add_planar_constraint_argument(parser: argparse.ArgumentParser) -> None:
    """``--planar-constraint``: the planar layers' wᵀû map (``gpflow_ext.bijectors.Planar(identity_at_zero=)``)."""
    parser.add_argument("--planar-constraint", choices=("identity-at-zero", "rezende"), default="identity-at-zero",
                        help="planar layers' wᵀû = -1 + softplus(wᵀu + log(e-1)) (small raw parameters = identity) or "
                             "Rezende and Mohamed's -1 + softplus(wᵀu) (each small layer contracts by 0.69; GPLVF "
                             "results before 2026-11-25 used it)")


def planar_identity_at_zero(args: argparse.Namespace) -> bool:
    """``Planar(identity_at_zero=)`` from the ``--planar-constraint`` of :func:`add_planar_constraint_argument`."""
    return args.planar_constraint == "identity-at-zero"


def write_results(results: Mapping[str, Any], output: Path | None, seeds: Sequence[int] | None = None) -> None:
    """Write ``results`` with its provenance (``gpflow_ext.results.write_results``) if ``output`` is given.
    ``seeds`` defaults to the ``seed``/``seeds`` found in ``results`` or its ``args`` record."""
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
    rows = list(rows)

    def fmt(value):
        if value is None:
            return "-"
        if isinstance(value, float):
            return f"{value:.4f}"
        return str(value)

    cells = [[fmt(r.get(c)) for c in columns] for r in rows]
    widths = [max([len(c)] + [len(row[i]) for row in cells]) for i, c in enumerate(columns)]
    lines = [title] if title else []
    lines.append("  ".join(c.ljust(w) for c, w in zip(columns, widths)))
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(v.ljust(w) for v, w in zip(row, widths)) for row in cells]
    text = "\n".join(lines)
    print(text)
    return text


def arguments_record(args) -> dict[str, Any]:
    """The parsed command line as JSON-ready values (paths as strings), to store beside the results."""
    return as_builtin({k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()})


def as_builtin(values: dict[str, Any]) -> dict[str, Any]:
    """numpy scalars -> Python floats/ints so results JSON stays portable."""
    out = {}
    for key, value in values.items():
        if hasattr(value, "item") and getattr(value, "shape", None) == ():
            value = value.item()
        out[key] = value
    return out


def _flag_type(annotation: Any):
    """``(type, is_bool)`` of a dataclass field's annotation (``Optional[X]`` and ``X | None`` are ``X``)."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        annotation = next(a for a in typing.get_args(annotation) if a is not type(None))
    return annotation, annotation is bool


def dataclass_flags(config_class: type, flags: Mapping[str, str]) -> dict[str, str]:
    """``{field: dest}``: the ``argparse`` destination of each field's flag in ``flags`` (``{field: "--flag"}``)."""
    names = {f.name for f in dataclasses.fields(config_class)}
    unknown = sorted(set(flags) - names)
    if unknown:
        raise ValueError(f"flags: {unknown} are not fields of {config_class.__name__}")
    return {name: flag.lstrip("-").replace("-", "_") for name, flag in flags.items()}


def add_dataclass_arguments(
    parser: argparse.ArgumentParser,
    config_class: type,
    flags: Mapping[str, str],
    *,
    help: Mapping[str, str] | None = None,  # noqa: A002 (argparse's word)
    choices: Mapping[str, Sequence[Any]] | None = None,
) -> None:
    """One command-line option per field of the dataclass ``config_class`` named in ``flags`` (``{field:
    "--flag"}``, in the order given), so that each default is stated once, in the dataclass.

    The option's type is the field's annotation (``Optional[X]``: ``X``; ``bool``: ``--flag`` / ``--no-flag``),
    its default the field's default, its help text ``help[field]`` or the field's ``metadata["help"]``,
    its choices ``choices[field]``. Read the values back with :func:`config_from_args`.
    """
    hints = typing.get_type_hints(config_class)
    fields = {f.name: f for f in dataclasses.fields(config_class)}
    dataclass_flags(config_class, flags)
    for name, flag in flags.items():
        field = fields[name]
        if field.default is not dataclasses.MISSING:
            default = field.default
        elif field.default_factory is not dataclasses.MISSING:
            default = field.default_factory()
        else:
            raise ValueError(f"flags: field {name!r} of {config_class.__name__} has no default")
        kind, is_bool = _flag_type(hints[name])
        text = (help or {}).get(name, field.metadata.get("help"))
        if is_bool:
            parser.add_argument(flag, action=argparse.BooleanOptionalAction, default=default, help=text)
        else:
            parser.add_argument(flag, type=kind, default=default, help=text,
                                **({"choices": list(choices[name])} if choices and name in choices else {}))


def config_from_args(config_class: type, args: argparse.Namespace, flags: Mapping[str, str],
                     **overrides: Any) -> dict[str, Any]:
    """``{field: value}`` of the options :func:`add_dataclass_arguments` added for ``flags``, then ``overrides``;
    pass it to ``config_class(**...)`` with the fields that do not come from the command line."""
    values = {name: getattr(args, dest) for name, dest in dataclass_flags(config_class, flags).items()}
    values.update(overrides)
    return values
