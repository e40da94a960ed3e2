"""Generated parts of docs/gplvf/flows.md: GPLVF's planar flows judged on held-out ratings (experiments.gplvf_flows).

Every number comes from ``docs/gplvf/results/gplvf_flows.json`` through :func:`load`. Cells are mean ± sd over the
seeds in the file; differences are paired by seed (same held-out users, conditioning halves and initial draws). A
flow length is recommended only when its held-out log-likelihood beats the Gaussian q(X) on every seed and the
95 % t-interval of the paired differences lies above zero.
"""
import math
from collections.abc import Sequence

from experiments.report import fmt, generator, load, markdown_table
from experiments.report.gplvf import paired

FILE = "docs/gplvf/results/gplvf_flows.json"
PROTOCOL_NAMES = {"a": "(a) held-out users", "b1": "u1.base -> u1.test"}


def _runs(protocol: str) -> dict[int, dict[int, dict]]:
    """{flow length: {seed: run}} of one protocol."""
    out: dict[int, dict[int, dict]] = {}
    for run in load(FILE)["runs"]:
        if run["protocol"] == protocol:
            out.setdefault(run["flow_length"], {})[run["seed"]] = run
    return dict(sorted(out.items()))


def _protocols() -> list[str]:
    return sorted({run["protocol"] for run in load(FILE)["runs"]})


def _all():
    """(protocol, flow length, {seed: run}, all of the protocol's runs) in order."""
    for protocol in _protocols():
        runs = _runs(protocol)
        for length, by_seed in runs.items():
            yield protocol, length, by_seed, runs


def _ms(values: Sequence[float], digits: int = 3) -> str:
    n = len(values)
    mean = sum(values) / n
    if n < 2:
        return fmt(mean, digits)
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    return f"{fmt(mean, digits)} ± {fmt(sd, digits)}"


def _name(length: int) -> str:
    return "Gaussian" if length == 0 else f"Planar {length}"


def _cell(runs: dict[int, dict], get, digits: int = 3) -> str:
    return _ms([get(run) for run in runs.values()], digits)


def _paired_ll(runs: dict[int, dict[int, dict]], length: int) -> tuple[list[float], tuple[float, float, float] | None]:
    seeds = sorted(set(runs[length]) & set(runs.get(0, {})))
    diffs = [runs[length][s]["test_loglik"] - runs[0][s]["test_loglik"] for s in seeds]
    if len(seeds) < 2:
        return diffs, None
    return diffs, paired([runs[length][s]["test_loglik"] for s in seeds], [runs[0][s]["test_loglik"] for s in seeds])


@generator("gplvf-flows")
def accuracy_table() -> str:
    """Per protocol and flow length: the bound, held-out log-likelihood (and its paired difference from the
    Gaussian q(X)), RMSE, interval coverage and s/epoch."""
    header = ["protocol", "q(X)", "seeds", "training bound, last epoch", "held-out LL (eq. 33)", "LL - Gaussian (paired)", "per-rating LPD",
              "RMSE", "coverage 50 %", "coverage 90 %", "s/epoch"]
    rows = []
    for protocol, length, by_seed, runs in _all():
        diffs, interval = _paired_ll(runs, length) if length else ([], None)
        delta = "-" if not length else (_ms(diffs, 4) if diffs else "-")
        if interval is not None:
            delta += f" (95 % CI {fmt(interval[1], 4)} to {fmt(interval[2], 4)})"
        rows.append([PROTOCOL_NAMES.get(protocol, protocol), _name(length), len(by_seed),
                     _cell(by_seed, lambda r: r["final_elbo"], 0),
                     _cell(by_seed, lambda r: r["test_loglik"], 4), delta,
                     _cell(by_seed, lambda r: r["heldout"]["log_density"], 4), _cell(by_seed, lambda r: r["rmse"], 4),
                     _cell(by_seed, lambda r: r["heldout"]["coverage_50"]),
                     _cell(by_seed, lambda r: r["heldout"]["coverage_90"]),
                     _cell(by_seed, lambda r: r["seconds_per_epoch"], 2)])
    return markdown_table(header, rows)


@generator("gplvf-flows-diagnosis")
def diagnosis_table() -> str:
    """Per protocol and flow length: where the predictive variance comes from, how calibrated it is, the widths
    of q(x_n) (in lengthscale units) of training and held-out rows, the bound's terms and the in-sample fit."""
    header = ["protocol", "q(X)", "noise σ²", "GP var", "latent var", "mean (y-m)²/var", "log det q(x) train",
              "log det q(x) held-out", "E log lik (train)", "KL q(x)", "in-sample LPD", "in-sample cov. 90 %"]
    rows = []
    for protocol, length, by_seed, _ in _all():
        rows.append([PROTOCOL_NAMES.get(protocol, protocol), _name(length),
                     _cell(by_seed, lambda r: r["noise_variance"]),
                     _cell(by_seed, lambda r: r["heldout"]["var_gp"]),
                     _cell(by_seed, lambda r: r["heldout"]["var_latent"], 4),
                     _cell(by_seed, lambda r: r["heldout"]["mean_sq_z"]),
                     _cell(by_seed, lambda r: r["widths_train"]["entropy_log_det_scaled"], 2),
                     _cell(by_seed, lambda r: r["widths_heldout"]["entropy_log_det_scaled"], 2),
                     _cell(by_seed, lambda r: r["bound"]["expected_log_lik"], 0),
                     _cell(by_seed, lambda r: r["bound"]["kl_x"], 0),
                     _cell(by_seed, lambda r: r["train"]["log_density"], 4),
                     _cell(by_seed, lambda r: r["train"]["coverage_90"])])
    return markdown_table(header, rows)


@generator("gplvf-flows-recommendation")
def recommendation() -> str:
    """One sentence per protocol: the flow lengths that beat the Gaussian q(X) on held-out log-likelihood on every
    seed with the paired 95 % interval above zero, or that none does."""
    parts = []
    for protocol in _protocols():
        runs = _runs(protocol)
        winners = []
        for length in runs:
            if length == 0:
                continue
            diffs, interval = _paired_ll(runs, length)
            if interval is not None and all(d > 0 for d in diffs) and interval[1] > 0:
                winners.append(f"{_name(length)} (by {fmt(interval[0], 4)} nats per rating)")
        seeds = len(runs.get(0, {}))
        where = PROTOCOL_NAMES.get(protocol, protocol)
        if winners:
            parts.append(f"{where}: {', '.join(winners)} beat the Gaussian q(X) on all {seeds} seeds.")
        else:
            parts.append(f"{where}: no flow length beats the Gaussian q(X) on held-out log-likelihood over the "
                         f"{seeds} paired seeds.")
    return " ".join(parts)


@generator("gplvf-flows-changes")
def changes_table() -> str:
    """Per protocol and flow length, the change from the Gaussian q(X) of the same seed (mean ± sd over seeds):
    the bound on all rows and its terms, the widths of q(x_n), the noise variance and the fits in and out of
    sample."""
    header = ["protocol", "q(X)", "Δ bound", "Δ E log lik", "Δ KL q(x)", "Δ KL q(u)", "Δ log det q(x) train",
              "Δ log det q(x) held-out", "Δ noise σ²", "Δ in-sample LPD", "Δ held-out LL"]
    cells = [("bound", "elbo", 0), ("bound", "expected_log_lik", 0), ("bound", "kl_x", 0), ("bound", "kl_u", 0),
             ("widths_train", "entropy_log_det_scaled", 2), ("widths_heldout", "entropy_log_det_scaled", 2),
             (None, "noise_variance", 4), ("train", "log_density", 4), (None, "test_loglik", 4)]
    rows = []
    for protocol, length, by_seed, runs in _all():
        seeds = sorted(set(by_seed) & set(runs.get(0, {})))
        if length == 0 or not seeds:
            continue

        def value(run, part, key):
            return run[key] if part is None else run[part][key]

        row = [PROTOCOL_NAMES.get(protocol, protocol), _name(length)]
        for part, key, digits in cells:
            diffs = [value(by_seed[s], part, key) - value(runs[0][s], part, key) for s in seeds]
            row.append(_ms(diffs, digits))
        rows.append(row)
    return markdown_table(header, rows)


@generator("gplvf-flows-noise-share")
def noise_share() -> str:
    """The range over runs of the noise variance's share of the held-out predictive variance, in percent."""
    shares = [100 * r["heldout"]["var_noise"] / r["heldout"]["var_total"] for r in load(FILE)["runs"]]
    return f"{fmt(min(shares), 0)}-{fmt(max(shares), 0)} %"


@generator("gplvf-flows-coverage")
def coverage_range() -> str:
    """The range over runs of the held-out and in-sample coverage of the central 50 % and 90 % intervals."""
    runs = load(FILE)["runs"]

    def span(part: str, key: str) -> str:
        values = [r[part][key] for r in runs]
        return f"{fmt(min(values), 3)}-{fmt(max(values), 3)}"

    return (f"held-out ratings: {span('heldout', 'coverage_50')} (50 %) and {span('heldout', 'coverage_90')} (90 %); "
            f"training users' own ratings: {span('train', 'coverage_50')} and {span('train', 'coverage_90')}")


@generator("gplvf-flows-gains")
def gains() -> str:
    """Per flow length, the paired mean gain over the Gaussian q(X) in log density per rating in sample (training
    users' own ratings) and on held-out ratings (eq. 33)."""
    parts = []
    for protocol, length, by_seed, runs in _all():
        seeds = sorted(set(by_seed) & set(runs.get(0, {})))
        if length == 0 or not seeds:
            continue
        inside = sum(by_seed[s]["train"]["log_density"] - runs[0][s]["train"]["log_density"] for s in seeds)
        outside = sum(by_seed[s]["test_loglik"] - runs[0][s]["test_loglik"] for s in seeds)
        where = "" if len(_protocols()) == 1 else f"{PROTOCOL_NAMES.get(protocol, protocol)}, "
        parts.append(f"{where}{_name(length)} ({len(seeds)} seed{'s' if len(seeds) > 1 else ''}): "
                     f"{fmt(inside / len(seeds), 4)} in sample, {fmt(outside / len(seeds), 4)} held out")
    return "; ".join(parts)
