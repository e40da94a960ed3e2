"""The predictive mixture of MovieLens models trained in separate runs (e.g. with different likelihoods).

    python -m experiments.gplvf_mixture --splits u1,u2,u3,u4,u5 \\
        --member gaussian_users PRED_GAUSSIAN gaussian --member gaussian_items PRED_GAUSSIAN items_gaussian \\
        --member ordinal_users PRED_ORDINAL gaussian --member ordinal_items PRED_ORDINAL items_gaussian \\
        --output mixture.json

Each ``--member LABEL DIR NAME`` is one model's predictions saved by ``experiments.gplvf_movielens --protocol b
--save-predictions DIR``: the file ``DIR/{split}_{NAME}.npz`` of every split (``NAME`` is the run's model name,
e.g. ``gaussian`` for users as rows with a Gaussian q(X), ``items_gaussian`` for items as rows). Per split the
result file stores every member's metrics (``{LABEL}_rmse``, ``{LABEL}_test_logprob_discrete``, coverage and
widths; they equal the run's own) and those of the equally weighted mixture of all members (``mixture_*``,
``gpflow_ext.recipes.scored_ratings.mixture``: the average of the means and of the rating probabilities, and of
each user's joint probability of their scored ratings). The members must score the same ratings: runs of the same
splits with the same ``--seed`` and ``--validation-fraction``.
"""

import argparse
from pathlib import Path

import experiments.quiet  # noqa: F401  (first: TensorFlow's log lines off before it is imported)

from experiments.common import arguments_record, print_table, script_parser, write_results
from gpflow_ext.recipes.movielens import DISCRETE_KEYS
from gpflow_ext.recipes.scored_ratings import ScoredRatings, mixture

KEYS = ("rmse", *DISCRETE_KEYS)  # the measures protocol (b) stores per model


def build_parser() -> argparse.ArgumentParser:
    parser = script_parser(__doc__.split("\n")[0])
    parser.add_argument(
        "--member",
        nargs=3,
        action="append",
        required=True,
        metavar=("LABEL", "DIR", "NAME"),
        help="one model: its label in the results, the --save-predictions folder of its run and its "
        "model name there (DIR/{split}_{NAME}.npz); give two or more",
    )
    parser.add_argument("--splits", default="u1,u2,u3,u4,u5", help="comma-separated splits to mix")
    parser.add_argument("--output", type=Path, default=None, help="write the results JSON here")
    return parser


def member_files(parser: argparse.ArgumentParser, members: list[list[str]], splits: list[str]) -> dict:
    """``{label: {split: path}}``, every file checked to exist before anything is read."""
    labels = [label for label, _, _ in members]
    if len(members) < 2:
        parser.error(f"--member must be given at least twice (a mixture of one model is that model), got {labels}")
    if len(set(labels)) != len(labels) or "mixture" in labels:
        parser.error(f"--member labels must be distinct and not 'mixture', got {labels}")
    if not splits:
        parser.error("--splits must name at least one split, e.g. u1,u2")
    files = {
        label: {split: Path(folder) / f"{split}_{name}.npz" for split in splits} for label, folder, name in members
    }
    missing = [str(path) for paths in files.values() for path in paths.values() if not path.is_file()]
    if missing:
        parser.error(
            f"--member: no saved predictions at {missing} (run experiments.gplvf_movielens --protocol b "
            "--save-predictions DIR on those splits)"
        )
    return files


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    splits = [s.strip() for s in args.splits.split(",") if s.strip()]
    files = member_files(parser, args.member, splits)
    results: dict = {
        "config": arguments_record(args),
        "members": [{"label": label, "predictions": folder, "name": name} for label, folder, name in args.member],
        "b": {},
    }
    for split in splits:
        scored = {label: ScoredRatings.load(paths[split]) for label, paths in files.items()}
        try:
            mixed = mixture(list(scored.values()))
        except ValueError as error:
            parser.error(f"--member: on {split} {error} (members are given in the order {list(scored)})")
        row = {"num_scored": int(mixed.rows.shape[0])}
        for label, member in [*scored.items(), ("mixture", mixed)]:
            metrics = member.metrics()
            row.update({f"{label}_{key}": metrics[key] for key in KEYS})
        results["b"][split] = row
    labels = [*files, "mixture"]
    print_table(
        [dict(split=s, **r) for s, r in results["b"].items()],
        ["split"] + [f"{n}_rmse" for n in labels] + [f"{n}_test_logprob_discrete" for n in labels],
        title="MovieLens 100K: members and their equally weighted mixture",
    )
    write_results(results, args.output, seeds=[])
    return results


if __name__ == "__main__":
    main()
