"""Generated parts of docs/mlgpf/selection.md and README.md for the four multi-label sets (Medical, Enron,
TMC2007-500, Bibtex): the candidates' 5-fold cross-validation on the training files, the mean-rank choice, and
the chosen recipe's test runs against the peers, paired over the same test rows (see experiments.report)."""
from collections.abc import Callable
from typing import Any

import numpy as np

from experiments.report import REPO, fmt, generator, load, markdown_table

STORE = "docs/mlgpf/results/selection"
CV = f"{STORE}/four-sets-cv-5fold.json"
#: the same cross-validation with a third candidate, label-gps-auto whose grid grows past a chosen end
EXTENDED = f"{STORE}/four-sets-cv-5fold-extended.json"
#: the chosen rule beside the same rule with a prior variance chosen per label (``label_wise_variance``)
LABEL_WISE = f"{STORE}/four-sets-cv-5fold-label-wise.json"
#: the chosen rule beside the same rule with a label-frequency prior (``frequency_exponent_grid``)
FREQUENCY = f"{STORE}/four-sets-cv-5fold-frequency.json"
#: the chosen rule beside the same rule with random Fourier features appended to the rows (``random_features``)
RANDOM_FEATURES = f"{STORE}/four-sets-cv-5fold-random-features.json"
#: the chosen rule beside an ensemble of it over seeds (``ensemble_size``)
ENSEMBLE = f"{STORE}/four-sets-cv-5fold-ensemble.json"
#: the chosen rule's single model beside MLGPF with shared factors started from it (``label-gps-shared``)
SHARED = f"{STORE}/four-sets-cv-5fold-shared.json"
#: the ensemble that is ``best`` beside the same ensemble ranking labels by p(y_k = 1 | x) (``rank_by_probability``)
PROBABILITY = f"{STORE}/four-sets-cv-5fold-probability.json"
#: ``best`` beside the same rule choosing the rows' transform with σ² (``input_transform_choices``)
TRANSFORM = f"{STORE}/four-sets-cv-5fold-transform.json"
#: the rows as given as a third transform to choose from (the four sets' folds, with the rule's ranking)
ROWS_AS_GIVEN = f"{STORE}/four-sets-cv-5fold-rows-as-given.json"
#: ``best`` beside the same ensemble with its members at the best σ² of the inner cross-validation
VARIANCE_ENSEMBLE = f"{STORE}/four-sets-cv-5fold-variance-ensemble.json"
#: ``best`` beside the same ensemble on the rows joined with a first stage's label probabilities (``label_score_weight``)
LABEL_SCORES = f"{STORE}/four-sets-cv-5fold-label-scores.json"
#: the MAP twins of ``best``'s variants on the folds of ``TRANSFORM`` (``experiments.mlgpf_map_screen``)
MAP_SCREEN = f"{STORE}/three-sets-map-screen.json"
DATASETS = ("bibtex", "enron", "medical", "tmc2007-500")
NAMES = {"bibtex": "Bibtex", "enron": "Enron", "medical": "Medical", "tmc2007-500": "TMC2007-500"}
CANDIDATES = {"kernel_variance=12": "`label-gps`, σ² = 12 fixed", "recipe=label-gps-auto": "`label-gps-auto`"}
PEERS = {"omikuji": "omikuji (Parabel)", "omikuji-bonsai": "omikuji (Bonsai)", "napkinxc": "napkinXC PLT",
         "napkinxc-ovr": "napkinXC OVR"}
KS = (1, 3, 5)


def _paired(dataset: str) -> str:
    """``--recipe best`` (a 3-seed ensemble ranking by probability, the rows' transform chosen with σ², the rows joined
    with a first stage's label probabilities) paired with the peers on ``dataset``'s test split."""
    return f"{STORE}/{dataset}-label-scores-vs-peers-paired.json"


#: the earlier forms of ``best``, each paired with the same peer runs: (name, paired file of ``dataset``)
EARLIER_FORMS: tuple[tuple[str, Callable[[str], str]], ...] = (
    ("one model (`ensemble_size=1`)", lambda dataset: f"{STORE}/{dataset}-recipe-vs-peers-paired.json"),
    ("3-seed ensemble, mean utilities", lambda dataset: f"{STORE}/{dataset}-ensemble-vs-peers-paired.json"),
    ("3-seed ensemble, by probability, TF-IDF rows", lambda dataset: f"{STORE}/{dataset}-probability-vs-peers-paired.json"),
    ("3-seed ensemble, by probability, the rows' transform chosen",
     lambda dataset: f"{STORE}/{dataset}-transform-vs-peers-paired.json"),
)


def _peers(dataset: str) -> str:
    return f"{STORE}/{dataset}-peers-10runs-rows.json"


def _has(path: str) -> bool:
    return (REPO / path).is_file()


def _name(method: str) -> str:
    if method.startswith("recipe "):
        return f"`--recipe {method[len('recipe '):]}`"
    if method.startswith("sklearn-ovr"):
        return f"scikit-learn OvR logistic regression ({method.split('(')[-1].rstrip(')')})"
    return PEERS.get(method, method)


def _chosen(tuning: dict[str, Any], config: dict[str, Any] | None = None) -> str:
    """The σ² an inner cross-validation chose, with `(lowest)` / `(highest)` when it is an end of its grid, the
    rows' transform chosen with it, and for an ensemble across σ² (``config``) its members' σ² in order."""
    from gpflow_ext.recipes.mlgpf_auto import grid_end
    from gpflow_ext.recipes.mlgpf_ensemble import member_variances

    end = grid_end(tuning["chosen"], tuning["grid"])
    transform = TRANSFORM_NAMES.get(tuning.get("input_transform"), tuning.get("input_transform"))
    text = f"{tuning['chosen']:g}" + (f" ({end})" if end else "") + (f" [{transform}]" if transform else "")
    if config is not None and config.get("ensemble_across_variances"):
        text += " (members " + " / ".join(f"{v:g}" for v in member_variances(tuning, config["ensemble_size"])) + ")"
    return text


#: the rows' transforms as the tables name them (``gpflow_ext.data.transforms.ROW_TRANSFORMS``)
TRANSFORM_NAMES = {"tfidf": "TF-IDF", "l2": "L2 only", "none": "as given"}


@generator("mlgpf-four-sets-cv")
def cv_table() -> str:
    cv = load(CV)
    folds = max(o["scheme"].get("folds", 1) for o in cv["datasets"].values())
    header = ["set", "candidate", *[f"P@1 fold {i}" for i in range(folds)], "folds done", "P@1 mean", "P@3 mean",
              "P@5 mean", "σ² chosen per fold"]
    rows = []
    for dataset, outcome in cv["datasets"].items():
        for c in outcome["candidates"]:
            per_fold = {s["split"]: s["P@1"] for s in c["splits"]}
            chosen = [_chosen(s["tuning"]) for s in c["splits"] if "tuning" in s]
            rows.append([NAMES.get(dataset, dataset), _label(c),
                         *[fmt(per_fold.get(i)) for i in range(folds)], len(per_fold), fmt(c.get("P@1 mean")),
                         fmt(c.get("P@3 mean")), fmt(c.get("P@5 mean")), ", ".join(chosen) or "-"])
    return markdown_table(header, rows)


def _common_folds(outcome: dict[str, Any]) -> dict[str, Any] | None:
    """The outcome restricted to the folds every candidate has (means recomputed over them); None if none."""
    shared = set.intersection(*[{s["split"] for s in c["splits"]} for c in outcome["candidates"]])
    if not shared:
        return None
    rows = []
    for c in outcome["candidates"]:
        splits = [s for s in c["splits"] if s["split"] in shared]
        rows.append({"name": c["name"], **{f"P@{k} mean": float(np.mean([s[f"P@{k}"] for s in splits])) for k in KS}})
    return {"candidates": rows, "complete": outcome.get("complete", False), "folds": sorted(shared)}


def _label(candidate: dict[str, Any]) -> str:
    """A candidate's name in the tables, from its config where the name alone is ambiguous."""
    config = candidate["config"]
    extensions = config.get("tuning_extensions", 0)
    if config.get("kernel_variance_grid") is not None and extensions:
        label = f"`label-gps-auto`, grid extended past a chosen end (at most {extensions} steps)"
    elif config.get("kernel_variance_grid") is not None:
        label = CANDIDATES["recipe=label-gps-auto"]
    else:
        label = CANDIDATES.get(candidate["name"], candidate["name"])
    if config.get("init_from_map"):
        label = (f"`label-gps-shared`: P = min({config['num_latent_gps']}, K) shared latent GPs and trained loadings, "
                 "started from the per-label MAP weights at the chosen σ²")
    if config.get("min_steps") is not None:
        label += f", at least {config['min_steps']} optimiser steps (epochs raised where N is small)"
    if config.get("label_wise_variance"):
        label += ", σ²_k chosen per label (held-out log-likelihood of each label)"
    if config.get("frequency_exponent_grid"):
        exponents = ", ".join(f"{g:g}" for g in config["frequency_exponent_grid"])
        label += f", label-frequency prior σ²(n_k/n̄)^γ, γ ∈ {{{exponents}}}"
    if config.get("random_features"):
        label += f", plus {config['random_features']} random Fourier features of an SE kernel (a non-linear part)"
    if config.get("input_transform_choices"):
        choices = " or ".join(TRANSFORM_NAMES.get(n, n) for n in config["input_transform_choices"])
        label += f", the rows' transform chosen with σ² ({choices})"
    if config.get("label_score_weight"):
        label += f", the rows joined with {config['label_score_weight']:g} × a first stage's out-of-fold label probabilities"
    if config.get("ensemble_size", 1) > 1:
        averaged = "probabilities" if config.get("rank_by_probability") else "mean utilities"
        size = config["ensemble_size"]
        members = f" at the {size} best σ² of the inner cross-validation" if config.get("ensemble_across_variances") else ""
        label += f", an ensemble of {size} seeds{members} (averaged {averaged})"
    if config.get("rank_by_probability"):
        label += ", labels ranked by their predictive probability"
    return label


def _label_shares(splits: list[dict[str, Any]]) -> str:
    """Over a label-wise candidate's folds, the mean share of labels whose σ²_k is below, equal to and above the
    σ² the same inner cross-validation chose for all labels."""
    shares = []
    for split in splits:
        tuning = split.get("tuning", {})
        if "label_variances" not in tuning:
            continue
        values = np.asarray(tuning["label_variances"])
        shares.append([np.mean(values < tuning["chosen"]), np.mean(values == tuning["chosen"]),
                       np.mean(values > tuning["chosen"])])
    if not shares:
        return "-"
    below, equal, above = (100 * np.mean(shares, axis=0)).tolist()
    return f"{below:.0f} % / {equal:.0f} % / {above:.0f} %"


def _per_label_choice(splits: list[dict[str, Any]]) -> str:
    """A label-wise candidate's shares of labels below / at / above σ², or a frequency candidate's γ per fold."""
    exponents = [s["tuning"]["chosen_exponent"] for s in splits if "chosen_exponent" in s.get("tuning", {})]
    if exponents:
        return "γ = " + ", ".join(f"{g:g}" for g in exponents)
    return _label_shares(splits)


def _label_prior_table(path: str, per_label: bool = True) -> str:
    """The candidates of a four-set cross-validation file on the folds all of them have: P@1/3/5 means, the σ²
    chosen per fold and, with ``per_label``, the per-label choice (:func:`_per_label_choice`)."""
    cv = load(path)
    rows = []
    for dataset, outcome in cv["datasets"].items():
        common = _common_folds(outcome)
        if common is None:
            continue
        for candidate, summary in zip(outcome["candidates"], common["candidates"]):
            splits = [s for s in candidate["splits"] if s["split"] in common["folds"]]
            chosen = [_chosen(s["tuning"], candidate["config"]) for s in splits if "tuning" in s]
            rows.append([NAMES.get(dataset, dataset), _label(candidate), ", ".join(map(str, common["folds"])),
                         *[fmt(summary[f"P@{k} mean"]) for k in KS], ", ".join(chosen) or "-",
                         *([_per_label_choice(splits)] if per_label else [])])
    header = ["set", "candidate", "folds", "P@1 mean", "P@3 mean", "P@5 mean", "σ² chosen per fold"]
    return markdown_table([*header, *(["per label: σ²_k below / equal to / above σ², or γ per fold"] if per_label
                                      else [])], rows)


@generator("mlgpf-four-sets-label-wise")
def label_wise_table() -> str:
    return _label_prior_table(LABEL_WISE)


@generator("mlgpf-four-sets-frequency")
def frequency_table() -> str:
    return _label_prior_table(FREQUENCY)


@generator("mlgpf-four-sets-frequency-rank")
def frequency_rank_sentence() -> str:
    return _rank_sentence(FREQUENCY)


@generator("mlgpf-four-sets-random-features")
def random_features_table() -> str:
    return _label_prior_table(RANDOM_FEATURES, per_label=False)


@generator("mlgpf-four-sets-random-features-rank")
def random_features_rank_sentence() -> str:
    return _rank_sentence(RANDOM_FEATURES)


@generator("mlgpf-four-sets-ensemble")
def ensemble_table() -> str:
    return _label_prior_table(ENSEMBLE, per_label=False)


@generator("mlgpf-four-sets-ensemble-rank")
def ensemble_rank_sentence() -> str:
    return _rank_sentence(ENSEMBLE)


@generator("mlgpf-four-sets-shared")
def shared_table() -> str:
    return _label_prior_table(SHARED, per_label=False)


@generator("mlgpf-four-sets-shared-rank")
def shared_rank_sentence() -> str:
    return _rank_sentence(SHARED)


@generator("mlgpf-four-sets-probability")
def probability_table() -> str:
    return _label_prior_table(PROBABILITY, per_label=False)


@generator("mlgpf-four-sets-probability-rank")
def probability_rank_sentence() -> str:
    return _rank_sentence(PROBABILITY)


@generator("mlgpf-four-sets-transform")
def transform_table() -> str:
    return _label_prior_table(TRANSFORM, per_label=False)


@generator("mlgpf-four-sets-transform-rank")
def transform_rank_sentence() -> str:
    return _rank_sentence(TRANSFORM)


@generator("mlgpf-four-sets-rows-as-given")
def rows_as_given_table() -> str:
    return _label_prior_table(ROWS_AS_GIVEN, per_label=False)


@generator("mlgpf-four-sets-rows-as-given-rank")
def rows_as_given_rank_sentence() -> str:
    return _rank_sentence(ROWS_AS_GIVEN)


@generator("mlgpf-four-sets-variance-ensemble")
def variance_ensemble_table() -> str:
    return _label_prior_table(VARIANCE_ENSEMBLE, per_label=False)


@generator("mlgpf-four-sets-variance-ensemble-rank")
def variance_ensemble_rank_sentence() -> str:
    return _rank_sentence(VARIANCE_ENSEMBLE)


@generator("mlgpf-four-sets-label-scores")
def label_scores_table() -> str:
    return _label_prior_table(LABEL_SCORES, per_label=False)


@generator("mlgpf-four-sets-label-scores-rank")
def label_scores_rank_sentence() -> str:
    return _rank_sentence(LABEL_SCORES)


@generator("mlgpf-four-sets-map-screen")
def map_screen_table() -> str:
    """Each variant's MAP-twin P@1/3/5 means over the screened folds, per set."""
    screen = load(MAP_SCREEN)
    rows = []
    for dataset, outcome in screen["datasets"].items():
        folds = ", ".join(str(f["split"]) for f in outcome["folds"])
        for variant, means in outcome["means"].items():
            rows.append([NAMES.get(dataset, dataset), variant, folds, *[fmt(means.get(f"P@{k} mean")) for k in KS]])
    return markdown_table(["set", "MAP twin of", "folds", "P@1 mean", "P@3 mean", "P@5 mean"], rows)


@generator("mlgpf-four-sets-extension")
def extension_table() -> str:
    """label-gps-auto with and without grid extension, on the folds both have, beside σ² = 12."""
    return _label_prior_table(EXTENDED, per_label=False)


@generator("mlgpf-four-sets-rank")
def rank_sentence() -> str:
    return _rank_sentence(CV)


@generator("mlgpf-four-sets-label-wise-rank")
def label_wise_rank_sentence() -> str:
    return _rank_sentence(LABEL_WISE)


def _rank_sentence(path: str) -> str:
    """The mean-rank rule's choice stored in a four-set cross-validation file, or the ranking on the folds every
    candidate has while it is incomplete."""
    from gpflow_ext.recipes.mlgpf_select import rank_across

    cv = load(path)
    labels = {c["name"]: _label(c) for o in cv["datasets"].values() for c in o["candidates"]}
    ranking = cv.get("ranking")
    if ranking is not None and ranking["complete"] and set(cv["datasets"]) == set(DATASETS):
        means = ", ".join(f"{labels.get(n, n)} {fmt(r)}" for n, r in ranking["mean_rank"].items())
        return (f"Rule (stored in the file): {ranking['rule']}. Mean ranks: {means}. "
                f"Chosen: {labels.get(ranking['chosen'], ranking['chosen'])}.")
    common = {d: _common_folds(o) for d, o in cv["datasets"].items()}
    usable = {d: o for d, o in common.items() if o is not None}
    missing = [NAMES.get(d, d) for d in DATASETS if d not in usable]
    state = "; ".join(f"{NAMES.get(d, d)}: folds {', '.join(map(str, o['folds']))}" for d, o in usable.items())
    if not usable:
        return "Not complete: no fold has been scored by every candidate yet, so there is no ranking."
    partial = rank_across(usable)
    means = ", ".join(f"{labels.get(n, n)} {fmt(r)}" for n, r in partial["mean_rank"].items())
    return (f"**Not complete**, so the rule has not chosen yet. On the folds every candidate has ({state}; "
            f"not scored by every candidate: {', '.join(missing) or 'none'}), the same ranking gives mean ranks "
            f"{means}: {labels.get(partial['chosen'], partial['chosen'])} first.")


def _range(summary: dict[str, float]) -> str:
    return f"{fmt(summary['median'])} ({fmt(summary['min'])} to {fmt(summary['max'])})"


def _verdict(p: dict[str, Any]) -> str:
    if p["interval_covers_zero"]:
        return "no difference"
    return "above" if p["mean_difference"] > 0 else "below"


def _recipe_median(paired: dict[str, Any], key: str, digits: int) -> str:
    """The median of ``key`` over the recipe's run files that record it (the upper middle of an even count)."""
    runs = [load(r["source"]) for name, m in paired["methods"].items() if name.startswith("recipe ")
            for r in m["runs"]]
    values = sorted(r[key] for r in runs if r.get(key) is not None)
    return fmt(values[len(values) // 2], digits) if values else "-"


@generator("mlgpf-four-sets-test")
def test_table() -> str:
    rows = []
    for dataset in DATASETS:
        if not _has(_paired(dataset)):
            continue
        paired = load(_paired(dataset))
        for name, method in paired["methods"].items():
            cells = [_range(method["summary"][f"P@{k}"]) for k in paired["ks"]]
            seconds = _recipe_median(paired, "seconds_per_epoch", 3) if name.startswith("recipe ") else ""
            rows.append([NAMES[dataset], _name(name), len(method["runs"]), *cells, seconds])
    return markdown_table(["set", "method", "runs", *[f"P@{k}: median (min to max)" for k in KS],
                           "s/epoch (median; per member of an ensemble)"], rows)


def _rerun(dataset: str) -> str:
    return f"{STORE}/{dataset}-best-min-steps-seed0-rerun-rows.json"


@generator("mlgpf-four-sets-single-vs-ensemble")
def single_vs_ensemble_table() -> str:
    """Per set: each form of ``best`` (:data:`EARLIER_FORMS`, then ``best``): median P@k over seeds 0-2, the (set,
    k) cells at or above the best peer's median, and the verdicts of the paired comparisons with every peer."""
    rows = []
    forms = (*EARLIER_FORMS, ("the same, rows joined with label scores (`best`)", _paired))
    for dataset in DATASETS:
        if not all(_has(path_of(dataset)) for _, path_of in forms):
            continue
        for label, path_of in forms:
            paired = load(path_of(dataset))
            methods = paired["methods"]
            recipe = _recipe(methods)
            medians = [methods[recipe]["summary"][f"P@{k}"]["median"] for k in KS]
            ahead = sum(m >= _best_peer(methods, k)[1] for m, k in zip(medians, KS))
            verdicts = [_verdict(c[f"P@{k}"]) for c in paired["comparisons"] for k in KS]
            rows.append([NAMES[dataset], label, *[fmt(m) for m in medians], f"{ahead} of {len(KS)}",
                         " / ".join(str(verdicts.count(v)) for v in ("above", "no difference", "below"))])
    return markdown_table(["set", "`--recipe best` as", *[f"P@{k} median" for k in KS],
                           "P@k at or above the best peer's median", "paired with every peer: above / no difference / below"],
                          rows)


def _ensemble_runs(dataset: str) -> list[str]:
    """``--recipe best``'s test runs on ``dataset`` on TF-IDF rows alone (before it chose the transform), seeds 0-2:
    the timed runs of the ensemble (the runs that choose the transform ran two at a time on the machine)."""
    return [f"{STORE}/{dataset}-best-probability-seed{seed}-rows.json" for seed in (0, 1, 2)]


@generator("mlgpf-four-sets-ensemble-cost")
def ensemble_cost_table() -> str:
    """Per set: the cost of ``--recipe best`` (the 3-seed ensemble) in its three test runs, medians: wall
    seconds of the whole run, of the choice of σ², s/epoch of the first member, epochs, peak RSS."""
    rows = []
    for dataset in DATASETS:
        if not all(_has(path) for path in _ensemble_runs(dataset)):
            continue
        runs = [load(path) for path in _ensemble_runs(dataset)]

        def median(values: list[float], digits: int) -> str:
            return fmt(float(np.median(values)), digits)

        rows.append([NAMES[dataset], median([r["provenance"]["wall_seconds"] for r in runs], 0),
                     median([r["tuning"]["seconds"] for r in runs], 0),
                     median([r["seconds_per_epoch"] for r in runs], 3), runs[0]["epochs_trained"],
                     median([r["peak_rss_gb"] for r in runs], 2),
                     ", ".join(sorted({r["provenance"]["cpu_model"] for r in runs}))])
    return markdown_table(["set", "wall s per run (σ², 3 fits, scoring)", "of which choosing σ²",
                           "s/epoch (one member)", "epochs per member", "peak RSS, GB", "machine"], rows)


@generator("mlgpf-four-sets-memory")
def memory_table() -> str:
    """Per set: the recipe's seed-0 test run re-run on another machine, with its peak memory, beside the stored
    run: σ² chosen, P@k of both, and the share of test rows whose top 5 labels are the same in the same order."""
    from gpflow_ext.recipes.xmc_baselines import decode_rows

    rows = []
    for dataset in DATASETS:
        if not _has(_rerun(dataset)):
            continue
        rerun, stored = load(_rerun(dataset)), load(f"{STORE}/{dataset}-best-min-steps-seed0-rows.json")
        same = np.mean(np.all(np.asarray(decode_rows(rerun["top"])) == np.asarray(decode_rows(stored["top"])), axis=1))
        rows.append([NAMES[dataset], fmt(rerun["peak_rss_gb"], 2), fmt(rerun["provenance"]["wall_seconds"], 0),
                     fmt(rerun["seconds_per_epoch"], 3), rerun["epochs_trained"],
                     f"{stored['tuning']['chosen']:g} / {rerun['tuning']['chosen']:g}",
                     " / ".join(f"{fmt(stored[f'P@{k}'])} → {fmt(rerun[f'P@{k}'])}" for k in KS),
                     f"{100 * same:.1f} %", f"{stored['provenance']['cpu_model']} → {rerun['provenance']['cpu_model']}"])
    return markdown_table(["set", "peak RSS, GB", "wall s (tuning + training + scoring)", "s/epoch", "epochs",
                           "σ² chosen, stored / re-run", "P@1 / P@3 / P@5, stored → re-run",
                           "test rows with the same top 5", "machine"], rows)


@generator("mlgpf-four-sets-paired")
def paired_table() -> str:
    rows: list[list[Any]] = []
    for dataset in DATASETS:
        if not _has(_paired(dataset)):
            continue
        paired = load(_paired(dataset))
        for c in paired["comparisons"]:
            for k in paired["ks"]:
                p = c[f"P@{k}"]
                rows.append([NAMES[dataset], _name(c["a"]), _name(c["b"]), f"P@{k}", f"{p['runs_a']} × {p['runs_b']}",
                             f"{p['mean_difference']:+.2f}",
                             f"{p['interval'][0]:+.2f} to {p['interval'][1]:+.2f}",
                             f"{p['wins']} / {p['ties']} / {p['losses']}", _verdict(p)])
    return markdown_table(["set", "recipe", "peer", "score", "pairs of runs", "recipe − peer (mean paired difference)",
                           "95% bootstrap interval (test rows)", "wins / ties / losses", "recipe is"], rows)


def _recipe(methods: dict[str, dict[str, Any]]) -> str:
    """The recipe's name among a paired comparison's methods (``recipe ...``)."""
    return next(n for n in methods if n.startswith("recipe "))


def _best_peer(methods: dict[str, dict[str, Any]], k: int) -> tuple[str, float]:
    """The peer (any method not named ``recipe ...``) with the highest median P@k, and that median."""
    medians = {n: m["summary"][f"P@{k}"]["median"] for n, m in methods.items() if not n.startswith("recipe ")}
    best = max(medians, key=lambda n: medians[n])
    return best, medians[best]


@generator("mlgpf-readme-four-sets")
def readme_table() -> str:
    """Per set: the recipe's median P@k over its seeds (where it was run on the test split) and the best peer's
    median of its runs (the peer named)."""
    rows = []
    for dataset in DATASETS:
        methods: dict[str, dict[str, Any]] = {}
        if _has(_paired(dataset)):
            methods = load(_paired(dataset))["methods"]
        elif _has(_peers(dataset)):
            grouped: dict[str, list[dict[str, Any]]] = {}
            for row in load(_peers(dataset))["results"]:
                grouped.setdefault(row["method"], []).append(row)
            for name, runs in grouped.items():
                methods[name] = {"runs": runs, "summary": {
                    f"P@{k}": {"median": float(np.median([r[f"P@{k}"] for r in runs]))} for k in KS}}
        else:
            continue
        recipes = [n for n in methods if n.startswith("recipe ")] or [None]
        for recipe in recipes:
            cells = []
            for k in KS:
                best, best_median = _best_peer(methods, k)
                if recipe is None:
                    cells.append(f"- vs {fmt(best_median)} ({_name(best)})")
                    continue
                ours = methods[recipe]["summary"][f"P@{k}"]["median"]
                mark = "**" if ours >= best_median else ""
                cells.append(f"{mark}{fmt(ours)}{mark} vs {fmt(best_median)} ({_name(best)})")
            runs = len(methods[recipe]["runs"]) if recipe else 0
            rows.append([NAMES[dataset], _name(recipe) if recipe else "not run on the test split", runs, *cells])
    return markdown_table(["set", "recipe", "seeds", *[f"P@{k}: recipe median vs best peer median" for k in KS]],
                          rows)


@generator("mlgpf-readme-four-sets-verdict")
def readme_verdict() -> str:
    """How many (set, k) cells the recipe's median is at or above the best peer's median, and for the others the
    paired comparison with that peer."""
    ahead, behind = 0, []
    for dataset in DATASETS:
        if not _has(_paired(dataset)):
            continue
        paired = load(_paired(dataset))
        methods = paired["methods"]
        recipe = _recipe(methods)
        for k in KS:
            best, best_median = _best_peer(methods, k)
            if methods[recipe]["summary"][f"P@{k}"]["median"] >= best_median:
                ahead += 1
                continue
            p = next(c for c in paired["comparisons"] if c["a"] == recipe and c["b"] == best)[f"P@{k}"]
            behind.append(f"{NAMES[dataset]} P@{k} against {_name(best)}, {p['mean_difference']:+.2f} "
                          f"({_verdict(p)})")
    cells = ahead + len(behind)
    text = f"at or above the best peer's median in {ahead} of {cells} (set, P@k) cells"
    if behind:
        text += "; below it in " + "; ".join(behind) + " by the paired comparison over the test rows"
    verdicts = [_verdict(c[f"P@{k}"]) for dataset in DATASETS if _has(_paired(dataset))
                for c in load(_paired(dataset))["comparisons"] for k in KS]
    counts = ", ".join(f"{v} in {verdicts.count(v)}" for v in ("above", "no difference", "below"))
    return text + f". Against every peer on every set ({len(verdicts)} paired comparisons) it is {counts}"
