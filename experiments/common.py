"""What every experiment script shares: the command line, results JSON, paper tables."""
import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any, Dict, Iterable, Mapping, Optional, Sequence

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:  # run as `python experiments/NAME.py` from anywhere
    sys.path.insert(0, str(REPO))


def base_parser(description: str) -> argparse.ArgumentParser:
    """``--data-dir DIR [--epochs E] [--output results.json] [--logdir DIR] [--seed S]``."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=os.environ.get("GPFLOW_EXT_DATA"),
        help="folder laid out like shared/data (default: $GPFLOW_EXT_DATA)",
    )
    parser.add_argument("--epochs", type=int, default=None, help="override the paper's epochs")
    parser.add_argument("--output", type=Path, default=None, help="write results JSON here")
    parser.add_argument("--logdir", type=Path, default=None, help="TensorBoard log folder")
    parser.add_argument("--seed", type=int, default=0)
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


def write_results(results: Mapping[str, Any], output: Optional[Path]) -> None:
    """Write ``results`` as JSON (if ``output`` is given) and say where."""
    if output is None:
        return
    output = Path(output)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(results, indent=2, sort_keys=True, default=float))
    print(f"results written to {output}")


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


def arguments_record(args) -> Dict[str, Any]:
    """The parsed command line as JSON-ready values (paths as strings), to store beside the results."""
    return as_builtin({k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()})


def as_builtin(values: Dict[str, Any]) -> Dict[str, Any]:
    """numpy scalars -> Python floats/ints so results JSON stays portable."""
    out = {}
    for key, value in values.items():
        if hasattr(value, "item") and getattr(value, "shape", None) == ():
            value = value.item()
        out[key] = value
    return out


def compiled_training_step(model, optimizer: Any = None, *, learning_rate: float = 0.01,
                           variables: Optional[Sequence[Any]] = None, internal: bool = False,
                           input_signature: Optional[Sequence[Any]] = None):
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
