"""Generated parts of docs/mlgpf/selection.md: the cross-validation of the label-gps prior variance on Bibtex's
training file and the paired comparison of the recipe with its peers on Bibtex's test split (see
experiments.report)."""
from typing import Any

from experiments.report import fmt, generator, load, markdown_table
from experiments.report.mlgpf_four_sets import PEERS as PEER_NAMES

STORE = "docs/mlgpf/results/selection"
CV = f"{STORE}/bibtex-label-gps-prior-variance-5fold.json"
PAIRED = f"{STORE}/bibtex-best-vs-peers-paired.json"
#: the σ² = 16 test run made before the cross-validation (the mlgpf results store)
VARIANCE16_TEST = "docs/mlgpf/results/bibtex-label-gps-variance16.json"
#: the earlier 5-fold run of σ² (same folds: KFold(5, shuffle=True, random_state=0)) that re-chose 12
EARLIER_CV = "docs/mlgpf/results/validation-label-gps-5fold.jsonl"


def _value(candidate: dict[str, Any]) -> str:
    overrides = candidate["overrides"]
    return ", ".join(f"{v:g}" if isinstance(v, float) else str(v) for v in overrides.values()) or candidate["name"]


def _chosen(cv: dict[str, Any]) -> str:
    return (cv.get("selection") or {}).get("chosen", "")


@generator("mlgpf-selection-cv")
def cv_table() -> str:
    cv = load(CV)
    folds = cv["scheme"].get("folds", 1)
    header = ["σ² (`kernel_variance`)", *[f"P@1 fold {i}" for i in range(folds)], "folds done", "P@1 mean",
              "P@1 sd", "P@3 mean", "P@5 mean"]
    rows = []
    for c in cv["candidates"]:
        per_fold = {s["split"]: s["P@1"] for s in c["splits"]}
        mark = (lambda text: f"**{text}**") if c["name"] == _chosen(cv) else (lambda text: text)
        sd = c.get("P@1 sd") if len(per_fold) > 1 else None
        rows.append([mark(_value(c)), *[fmt(per_fold.get(i)) for i in range(folds)], len(per_fold),
                     mark(fmt(c.get("P@1 mean"))), fmt(sd), fmt(c.get("P@3 mean")),
                     fmt(c.get("P@5 mean"))])
    return markdown_table(header, rows)


@generator("mlgpf-selection-cv-choice")
def cv_choice() -> str:
    cv = load(CV)
    done = sum(len(c["splits"]) for c in cv["candidates"])
    total = len(cv["candidates"]) * cv["scheme"].get("folds", 1)
    if not cv.get("complete"):
        return (f"The run is not complete: {done} of {total} fits are in the file, so it makes no choice yet "
                f"(the same command with `--resume` fits the rest).")
    s = cv["selection"]
    chosen = next(c for c in cv["candidates"] if c["name"] == s["chosen"])
    ties = ", ".join(_value(c) for c in cv["candidates"] if c["name"] in s["ties"])
    return (f"Rule (stored in the file): {s['rule']}. Chosen: σ² = {_value(chosen)} (mean P@1 "
            f"{fmt(s['chosen_mean'])}, {fmt(s['gap_to_runner_up'])} above the next candidate; "
            f"within the margin of {s['margin']:g}: {ties}).")


@generator("mlgpf-selection-history-test16")
def history_test16() -> str:
    return fmt(load(VARIANCE16_TEST)["P@1"])


def _earlier_cv_means() -> dict[float, float]:
    """Mean P@1 per σ² of the earlier 5-fold run (one record per fold and σ²; a list, or ``{"rows": [...]}``)."""
    try:
        records = load(EARLIER_CV)
    except FileNotFoundError:
        records = load(EARLIER_CV.replace(".jsonl", ".json"))
    records = records["rows"] if isinstance(records, dict) else records
    by_value: dict[float, list[float]] = {}
    for r in records:
        by_value.setdefault(float(r["kernel_variance"]), []).append(r["P@1"])
    return {v: sum(p) / len(p) for v, p in by_value.items()}


@generator("mlgpf-selection-history-margin")
def history_margin() -> str:
    means = _earlier_cv_means()
    return (f"{fmt(means[12.0] - means[16.0])} points of mean P@1 over the 5 folds "
            f"(σ² = 12: {fmt(means[12.0])}; 16: {fmt(means[16.0])})")


@generator("mlgpf-selection-history-candidates")
def history_candidates() -> str:
    return ", ".join(f"{v:g}" for v in sorted(_earlier_cv_means()))


def _peer(name: str) -> str:
    return PEER_NAMES.get(name, name)


def _range(summary: dict[str, float]) -> str:
    return f"{fmt(summary['median'])} ({fmt(summary['min'])} to {fmt(summary['max'])})"


@generator("mlgpf-selection-runs")
def runs_table() -> str:
    paired = load(PAIRED)
    rows = []
    for name, method in paired["methods"].items():
        label = "`label-gps` (σ² = 12, run as `--recipe best`)" if name.startswith("recipe ") else _peer(name)
        rows.append([label, len(method["runs"]), *[_range(method["summary"][f"P@{k}"]) for k in paired["ks"]]])
    return markdown_table(["method", "runs", *[f"P@{k}: median (min to max)" for k in paired["ks"]]], rows)


def _verdict(p: dict[str, Any]) -> str:
    if p["interval_covers_zero"]:
        return "no difference"
    return "above" if p["mean_difference"] > 0 else "below"


@generator("mlgpf-selection-paired")
def paired_table() -> str:
    paired = load(PAIRED)
    rows: list[list[Any]] = []
    for c in paired["comparisons"]:
        for k in paired["ks"]:
            p = c[f"P@{k}"]
            rows.append([_peer(c["b"]), f"P@{k}", f"{p['runs_a']} × {p['runs_b']}",
                         f"{p['mean_difference']:+.2f}", f"{p['interval'][0]:+.2f} to {p['interval'][1]:+.2f}",
                         f"{p['wins']} / {p['ties']} / {p['losses']}", _verdict(p)])
    level = paired["bootstrap"]["level"]
    return markdown_table(["peer", "score", "pairs of runs", "recipe − peer (mean paired difference)",
                           f"{level:.0%} bootstrap interval (test rows)", "wins / ties / losses",
                           "recipe is"], rows)


@generator("mlgpf-selection-reproduces")
def reproduces() -> str:
    """How many (σ², fold) P@1 values of the earlier run the command gives again (same folds)."""
    records = None
    try:
        records = load(EARLIER_CV)
    except FileNotFoundError:
        records = load(EARLIER_CV.replace(".jsonl", ".json"))
    records = records["rows"] if isinstance(records, dict) else records
    earlier = {(float(r["kernel_variance"]), r["fold"]): r["P@1"] for r in records}
    cv = load(CV)
    shared = same = 0
    for c in cv["candidates"]:
        for s in c["splits"]:
            key = (float(c["overrides"]["kernel_variance"]), s["split"])
            if key in earlier:
                shared += 1
                same += abs(earlier[key] - s["P@1"]) < 1e-9
    return f"{same} of the {shared} (σ², fold) P@1 values the two runs share are identical"


ABLATION = f"{STORE}/bibtex-label-gps-ablation-validation.json"
ABLATION_NAMES = {
    "recipe defaults": "`label-gps` as it is (σ² = 12 fixed, one GP per label, Z = X̃)",
    "kernel_variance=None": "σ² trained with the bound instead of fixed",
    "independent_labels=False": "a trained shared Φ with P = 30 latent GPs instead of one GP per label",
    "recipe=tfidf": "`tfidf`: the paper's s-LINEAR (P = 30, M = 200 trained A) on the same TF-IDF rows",
}


@generator("mlgpf-selection-ablation")
def ablation_table() -> str:
    result = load(ABLATION)
    rows = []
    for c in result["candidates"]:
        split = c["splits"][0] if c["splits"] else {}
        mark = (lambda text: f"**{text}**") if c["name"] == _chosen(result) else (lambda text: text)
        flag = f"`{c['name']}`" if c["overrides"] else '`""`'
        rows.append([mark(ABLATION_NAMES.get(c["name"], c["name"])), flag,
                     *[mark(fmt(split.get(f"P@{k}"))) if k == 1 else fmt(split.get(f"P@{k}")) for k in (1, 3, 5)]])
    held = result["candidates"][0]["splits"][0]["n_held_out"] if result["candidates"][0]["splits"] else "-"
    return markdown_table(["variant", "`--candidate`", f"P@1 ({held} held-out rows)", "P@3", "P@5"], rows)


@generator("mlgpf-selection-paired-summary")
def paired_summary() -> str:
    """One sentence per peer for the README: the paired P@1/3/5 verdicts."""
    paired = load(PAIRED)
    parts = []
    for c in paired["comparisons"]:
        verdicts = ", ".join(f"P@{k} {_verdict(c[f'P@{k}'])} ({c[f'P@{k}']['mean_difference']:+.2f})"
                             for k in paired["ks"])
        parts.append(f"against {_peer(c['b'])}: {verdicts}")
    return "; ".join(parts)


#: σ² chosen on cuts of the four training files against the choice on all of each file
TUNING_CUT = f"{STORE}/tuning-cut-four-sets.json"


@generator("mlgpf-tuning-cut")
def tuning_cut_table() -> str:
    """Per set and cut: rows and labels kept, the σ² chosen whole / on the cut for each seed, how many seeds agree,
    the mean and largest regret in the whole file's held-out P@1, and the median seconds of a cut's tuning beside
    the whole file's."""
    import numpy as np

    from experiments.report.mlgpf_four_sets import NAMES

    result = load(TUNING_CUT)
    rows = []
    for dataset, data in result["datasets"].items():
        whole_seconds = np.median([w["seconds"] for w in data["whole"].values()])
        for cut_name, *_ in result["cuts"]:
            cuts = [c for c in data["cuts"] if c["cut"] == cut_name]
            regrets = [c["regret_P@1"] for c in cuts]
            rows.append([NAMES.get(dataset, dataset), cut_name, f"{cuts[0]['rows']:,} of {data['rows']:,}",
                         f"{cuts[0]['labels']} of {data['labels']}",
                         ", ".join(f"{c['whole_chosen']:g} / {c['chosen']:g}" for c in cuts),
                         f"{sum(c['chosen'] == c['whole_chosen'] for c in cuts)} of {len(cuts)}",
                         fmt(float(np.mean(regrets))), fmt(max(regrets)),
                         f"{np.median([c['seconds'] for c in cuts]):.0f} / {whole_seconds:.0f}"])
    header = ["set", "cut", "rows", "labels", "σ² whole / cut, per seed", "seeds that agree",
              "mean regret (P@1)", "largest regret (P@1)", "s: cut / whole (median)"]
    return markdown_table(header, rows)
