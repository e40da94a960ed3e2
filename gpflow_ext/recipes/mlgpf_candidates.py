"""MLGPF candidate settings from text: ``"kernel_variance=8,12,16"`` (a grid) and ``"recipe=tfidf,epochs=50"`` (one
candidate) into overrides of any :class:`~gpflow_ext.recipes.mlgpf_config.MLGPFConfig` field or ``recipe``, their
names, and the config each gives (used by :mod:`gpflow_ext.recipes.mlgpf_select` and its script)."""

import dataclasses
import itertools
from collections.abc import Sequence
from typing import Any

from .mlgpf_config import RECIPES, MLGPFConfig

__all__ = ["ALIASES", "parse_grid", "parse_candidate", "candidate_name", "candidate_config"]

#: Other names accepted for config fields in a grid (``prior_variance=8,12`` is ``kernel_variance``).
ALIASES: dict[str, str] = {"prior_variance": "kernel_variance", "sigma2": "kernel_variance"}


def _field_types() -> dict[str, Any]:
    return {f.name: f.type for f in dataclasses.fields(MLGPFConfig)}


def _parse_value(field: str, text: str) -> Any:
    """``text`` as the type of config field ``field`` (``none`` -> None; a tuple field's values separated by ``;``,
    e.g. ``kernel_variance_grid=1;2;4``)."""
    text = text.strip()
    if text.lower() == "none":
        return None
    if field == "recipe":
        if text not in RECIPES:
            raise ValueError(f"recipe={text!r}: not one of {', '.join(sorted(RECIPES))}")
        return text
    kind = str(_field_types()[field])
    if "tuple[str" in kind:  # names separated by ';', e.g. input_transform_choices=tfidf;l2
        return tuple(v.strip() for v in text.split(";"))
    if "tuple" in kind:  # a sequence field: values separated by ';' (',' separates fields and grid values)
        return tuple(float(v) for v in text.split(";"))
    if "bool" in kind:
        if text.lower() not in ("true", "false", "1", "0"):
            raise ValueError(f"{field}={text!r}: expected true or false")
        return text.lower() in ("true", "1")
    if "int" in kind:
        return int(text)
    if "float" in kind:
        return float(text)
    return text


def _field(name: str) -> str:
    name = ALIASES.get(name.strip(), name.strip())
    if name != "recipe" and name not in _field_types():
        raise ValueError(
            f"{name!r} is not an MLGPFConfig field (fields: {', '.join(sorted(_field_types()))}; "
            f"aliases: {', '.join(f'{a}={b}' for a, b in ALIASES.items())})"
        )
    if name == "input_transform":
        raise ValueError("input_transform cannot be set from text; use a recipe that sets it")
    return name


def parse_grid(specs: Sequence[str]) -> list[dict[str, Any]]:
    """``["kernel_variance=8,12", "epochs=50,100"]`` -> the Cartesian product of the values, in order
    (first field slowest): ``[{"kernel_variance": 8.0, "epochs": 50}, ...]``."""
    fields, values = [], []
    for spec in specs:
        name, sep, text = spec.partition("=")
        if not sep or not text.strip():
            raise ValueError(f"grid entry {spec!r}: expected FIELD=V1,V2,...")
        field = _field(name)
        if field in fields:
            raise ValueError(f"grid field {field!r} given twice")
        fields.append(field)
        values.append([_parse_value(field, v) for v in text.split(",")])
    return [dict(zip(fields, combo)) for combo in itertools.product(*values)]


def parse_candidate(spec: str) -> dict[str, Any]:
    """``"recipe=tfidf,epochs=50"`` -> ``{"recipe": "tfidf", "epochs": 50}`` (one candidate; ``""`` -> ``{}``)."""
    out: dict[str, Any] = {}
    for item in filter(None, (s.strip() for s in spec.split(","))):
        name, sep, text = item.partition("=")
        if not sep:
            raise ValueError(f"candidate entry {item!r}: expected FIELD=VALUE")
        field = _field(name)
        out[field] = _parse_value(field, text)
    return out


def candidate_name(overrides: dict[str, Any]) -> str:
    """``{"kernel_variance": 12.0}`` -> ``"kernel_variance=12"``; ``{}`` -> ``"recipe defaults"``."""
    if not overrides:
        return "recipe defaults"

    def text(value: Any) -> str:
        if isinstance(value, tuple):  # as parse_candidate reads it
            return ";".join(text(v) for v in value)
        return f"{value:g}" if isinstance(value, float) else str(value)

    return ",".join(f"{k}={text(v)}" for k, v in overrides.items())


def candidate_config(
    recipe: str, method: str, dataset: str, overrides: dict[str, Any], base: dict[str, Any] | None = None
) -> MLGPFConfig:
    """The config of ``recipe`` (or the candidate's own ``recipe``) for ``method`` on ``dataset``, with ``base``
    (fixed for every candidate, e.g. epochs) and then the candidate's fields on top."""
    overrides = dict(overrides)
    name = overrides.pop("recipe", recipe)
    config = RECIPES[name](method, dataset)
    fields = {**{k: v for k, v in (base or {}).items() if v is not None}, **overrides}
    return dataclasses.replace(config, **fields) if fields else config
