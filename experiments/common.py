"""What every experiment script shares: the command line, results JSON, paper tables (with the benchmarks:
``gpflow_ext.scripts``, re-exported here).

The command-line convention (``base_parser``): argparse with the defaults shown in ``--help`` and the
shared flags under one name each, where a script has them: ``--data-dir``, ``--output`` (results JSON),
``--logdir`` (TensorBoard), ``--seed``, ``--float32``, ``--no-progress``, ``--figure-dir`` and ``--smoke``
(a tiny run, for the tests). Scripts run as ``python -m experiments.NAME`` from the repository root.
"""
import argparse
import dataclasses
import types
import typing
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import experiments.quiet  # noqa: F401  (first: TensorFlow's log lines off before it is imported)

from gpflow_ext.scripts import HelpFormatter, base_parser, print_table, script_parser, write_results  # noqa: F401

REPO = Path(__file__).resolve().parent.parent


def add_planar_constraint_argument(parser: argparse.ArgumentParser) -> None:
    """``--planar-constraint``: the planar layers' wᵀû map (``gpflow_ext.bijectors.Planar(identity_at_zero=)``)."""
    parser.add_argument("--planar-constraint", choices=("identity-at-zero", "rezende"), default="identity-at-zero",
                        help="planar layers' wᵀû = -1 + softplus(wᵀu + log(e-1)) (small raw parameters = identity) or "
                             "Rezende and Mohamed's -1 + softplus(wᵀu) (each small layer contracts by 0.69; GPLVF "
                             "results before 2026-11-25 used it)")


def planar_identity_at_zero(args: argparse.Namespace) -> bool:
    """``Planar(identity_at_zero=)`` from the ``--planar-constraint`` of :func:`add_planar_constraint_argument`."""
    return args.planar_constraint == "identity-at-zero"


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
