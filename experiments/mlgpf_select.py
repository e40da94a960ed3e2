"""MLGPF settings chosen on the training file: K-fold cross-validation or a validation split, never the test split.

    python -m experiments.mlgpf_select --dataset bibtex --recipe label-gps --folds 5 \\
        --grid prior_variance=8,12,16,20 [--margin 0] [--output cv.json]
    python -m experiments.mlgpf_select --dataset bibtex --recipe label-gps --validation-fraction 0.2 \\
        --candidate "" --candidate "kernel_variance=none" --candidate "recipe=tfidf" [--output ablation.json]

Only the training file of ``--dataset`` is read (``gpflow_ext.recipes.mlgpf_data.load_training_file``: any Mulan
or XMC dataset that ``mlgpf_xmc`` accepts; the test file is never opened). Its rows are split
by ``KFold(--folds, shuffle=True, random_state=--seed)`` or, with ``--validation-fraction``, once by a seeded
shuffle. Candidates are ``--grid FIELD=V1,V2`` (any ``MLGPFConfig`` field; several ``--grid`` give their product;
``prior_variance`` is ``kernel_variance``) or ``--candidate "FIELD=V,FIELD=V"`` (may set ``recipe``; ``""`` is
the recipe as it is). Each candidate is trained on each split's fit rows and scored once on its held-out rows.
The result file holds every candidate's per-split P@1/3/5, their mean and sd, the rule and the choice
(``gpflow_ext.recipes.mlgpf_select.choose``: the highest mean P@1; candidates within ``--margin`` points of it
are ties, the first of them in the order given is chosen).

Several datasets in one command write one ``--output`` file: ``{"datasets": {name: that dataset's selection},
"ranking": ...}``, the ranking by ``gpflow_ext.recipes.mlgpf_select.rank_across`` (each candidate's mean rank over
the datasets and P@1/3/5). A self-tuning candidate (``recipe=label-gps-auto``) chooses σ² inside each split from
the split's fit rows; a fit whose resolved config and rows equal one already made (in this run, in ``--output``
with ``--resume``, or in a ``--reuse FILE`` of one dataset or several) is taken from it:

    python -m experiments.mlgpf_select --dataset medical enron tmc2007-500 bibtex --folds 5 \\
        --candidate kernel_variance=12 --candidate recipe=label-gps-auto [--reuse EARLIER.json] --output cv.json
"""
import json
from pathlib import Path
from typing import Any

import experiments.quiet  # noqa: F401  (first: TensorFlow's log lines off before it is imported)

from experiments.common import base_parser, print_table
from gpflow_ext.recipes.mlgpf_candidates import candidate_name, parse_candidate, parse_grid
from gpflow_ext.recipes.mlgpf_config import METHODS, RECIPES
from gpflow_ext.recipes.mlgpf_data import load_training_file
from gpflow_ext.recipes.mlgpf_select import kfold_splits, rank_across, select, validation_splits
from gpflow_ext.results import write_results

#: ``--smoke``: training rows kept and the settings fixed for every candidate unless given
SMOKE: dict[str, int] = dict(max_rows=300, epochs=2, rank=30, batch_size=100)


def main(argv=None) -> dict[str, Any]:
    parser = base_parser(__doc__.splitlines()[0], float32=True, logdir=False,
                         smoke=f"the first {SMOKE['max_rows']} training rows, 2 epochs, rank 30")
    parser.add_argument("--dataset", nargs="+", default=["bibtex"],
                        help="multi-label datasets under --data-dir (as in mlgpf_xmc); with several, one --output file "
                             "holds each dataset's selection and the candidates' mean rank over them")
    parser.add_argument("--method", default="s-linear", choices=METHODS)
    parser.add_argument("--recipe", default="label-gps", choices=sorted(RECIPES),
                        help="the recipe the candidates modify")
    split = parser.add_mutually_exclusive_group()
    split.add_argument("--folds", type=int, default=5, help="K of the K-fold cross-validation")
    split.add_argument("--validation-fraction", type=float, default=None,
                       help="score on one held-out fraction of the training rows instead of K folds")
    parser.add_argument("--grid", action="append", default=[], metavar="FIELD=V1,V2",
                        help="candidate values of a config field (repeat for a product grid)")
    parser.add_argument("--candidate", action="append", default=[], metavar="FIELD=V,FIELD=V",
                        help="one candidate's overrides (repeat; '' is the recipe unchanged)")
    parser.add_argument("--metric", default="P@1", choices=("P@1", "P@3", "P@5"), help="the score the rule ranks by")
    parser.add_argument("--margin", type=float, default=0.0,
                        help="candidates within this many points of the best mean are ties; the first listed is chosen")
    parser.add_argument("--max-rows", type=int, default=None, help="use only the first rows of the training file")
    parser.add_argument("--resume", action="store_true",
                        help="reuse the fits already in --output (same rows, splits and configs) and refit only the "
                             "rest; --output is rewritten after every fit (complete: false until the last)")
    parser.add_argument("--reuse", action="append", default=[], type=Path, metavar="FILE",
                        help="an earlier selection file: its fits of the same configs on the same dataset, rows "
                             "and splits are reused (repeat)")
    args = parser.parse_args(argv)
    if args.data_dir is None:
        parser.error("--data-dir (or $GPFLOW_EXT_DATA) is required")
    try:
        candidates = parse_grid(args.grid) if args.grid else []
        candidates += [parse_candidate(spec) for spec in args.candidate]
    except ValueError as error:
        parser.error(str(error))
    if not candidates:
        parser.error("give candidates with --grid and/or --candidate")
    base = {"epochs": args.epochs, "seed": args.seed, "float32": args.float32 or None}
    max_rows = args.max_rows
    if args.smoke:
        max_rows = max_rows or SMOKE["max_rows"]
        base.update({k: v for k, v in SMOKE.items() if k != "max_rows" and base.get(k) is None})
    fixed = {k: v for k, v in base.items() if v is not None}
    reused = [json.loads(path.read_text()) for path in args.reuse]
    previous_file = None
    if args.resume and args.output is not None and args.output.exists():
        previous_file = json.loads(args.output.read_text())
    combined = len(args.dataset) > 1
    if previous_file is not None and combined:
        others = sorted(set(previous_file.get("datasets", {})) - set(args.dataset))
        if others:
            parser.error(f"--resume: {args.output} also holds {', '.join(others)}; add them to --dataset or write "
                         "another --output")
    outcomes: dict[str, Any] = {}

    def save(current):  # each fit lands in --output, so a stopped run loses at most one fit
        if args.output is not None:
            if combined and previous_file is not None:  # datasets not reached yet keep what --output held
                earlier = previous_file.get("datasets", {})
                current = {d: current[d] if d in current else earlier[d] for d in args.dataset
                           if d in current or d in earlier}
            write_results(bundle(current), args.output, seeds=[args.seed])

    def bundle(current):
        if not combined:
            return current
        names = [candidate_name(c) for c in candidates]
        out = {"datasets": current, "candidates": names}
        if all([c["name"] for c in r.get("candidates", [])] == names and all("P@1 mean" in c for c in r["candidates"])
               for r in current.values()):  # ranked once every dataset has a score of this run's every candidate
            out["ranking"] = rank_across(current)
        return out

    for dataset in args.dataset:
        try:
            X, Y = load_training_file(dataset, args.data_dir, max_rows)  # the test file is never opened
        except FileNotFoundError as error:
            parser.error(f"--dataset {dataset!r}: {error}")
        if args.validation_fraction is not None:
            splits, scheme = validation_splits(X.shape[0], args.validation_fraction, args.seed), {
                "kind": "validation split", "fraction": args.validation_fraction, "seed": args.seed}
        else:
            splits, scheme = kfold_splits(X.shape[0], args.folds, args.seed), {
                "kind": "k-fold", "folds": args.folds, "shuffle": True, "random_state": args.seed}
        header = {"dataset": dataset, "recipe": args.recipe, "method": args.method, "split": "train",
                  "n_train_rows": int(X.shape[0]), "scheme": scheme, "fixed": fixed, "smoke": bool(args.smoke)}
        previous = {"candidates": []}
        if previous_file is not None:
            earlier = previous_file.get("datasets", {}).get(dataset) if combined else previous_file
            if earlier is not None:
                if {k: earlier.get(k) for k in header} != json.loads(json.dumps(header)):
                    parser.error(f"--resume: {args.output} was made on other rows, splits or settings")
                previous["candidates"] += earlier["candidates"]
        for other in reused:  # earlier runs on the same rows and splits: their fits are reused by config
            other = other.get("datasets", {}).get(dataset, {}) if "datasets" in other else other
            if other.get("dataset") == dataset and other.get("n_train_rows") == header["n_train_rows"] \
                    and other.get("scheme") == json.loads(json.dumps(scheme)):
                previous["candidates"] += other["candidates"]

        def progress(partial, header=header, dataset=dataset):
            save({**outcomes, dataset: {**header, **partial}} if combined else {**header, **partial})

        outcome = select(X, Y, candidates, splits, recipe=args.recipe, method=args.method, dataset=dataset,
                         base=base, metric=args.metric, margin=args.margin,
                         log=lambda line, d=dataset: print(f"{d}: {line}", flush=True),
                         previous=previous, progress=progress)
        table = [{"candidate": c["name"], **{k: c[k] for k in c if k.endswith((" mean", " sd"))}}
                 for c in outcome["candidates"]]
        print_table(table, ["candidate", "P@1 mean", "P@1 sd", "P@3 mean", "P@3 sd", "P@5 mean", "P@5 sd"],
                    title=f"{dataset} training file: {scheme['kind']} ({len(splits)} split(s))")
        selection = outcome["selection"]
        print(f"rule: {selection['rule']}\nchosen: {selection['chosen']} (ties: {', '.join(selection['ties'])})")
        outcomes[dataset] = {**header, **outcome}
    result = bundle(outcomes) if combined else outcomes[args.dataset[0]]
    if combined:
        ranking = result["ranking"]
        print(f"rule: {ranking['rule']}\nmean ranks: " +
              ", ".join(f"{n} {r:.2f}" for n, r in ranking["mean_rank"].items()) + f"\nchosen: {ranking['chosen']}")
    write_results(result, args.output, seeds=[args.seed])
    return result


if __name__ == "__main__":
    main()
