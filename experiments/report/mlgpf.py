"""Generated parts of the mlgpf pages (see experiments.report): README.md's MLGPF section,
docs/mlgpf/results.md and docs/mlgpf/scaling.md, from the files in docs/mlgpf/results/ (index:
docs/mlgpf/results/README.md) and the paper's numbers in experiments/paper_values.py."""
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from experiments.paper_values import MLGPF as PAPER
from experiments.report import REPO, fmt, generator, load, markdown_table
from experiments.report.mlgpf_four_sets import TRANSFORM_NAMES

STORE = "docs/mlgpf/results"
SCALING = f"{STORE}/scaling"
#: The eight variants of Tables 2 and 4, in the paper's order, with their names in the tables.
VARIANTS = {"s-linear": "s-LINEAR", "linear": "LINEAR", "s-se": "s-SE", "se": "SE",
            "sf-linear": "sf-LINEAR", "f-linear": "f-LINEAR", "sf-se": "sf-SE", "f-se": "f-SE"}
#: The earlier, shorter run of each variant (the same settings; stopped before the paper's 400 epochs).
EARLIER = {"s-linear": "bibtex-s-linear.json", "linear": "bibtex-linear-60epochs.json",
           "s-se": "bibtex-s-se-60epochs.json", "se": "bibtex-se-60epochs.json",
           "sf-linear": "bibtex-sf-linear-30epochs.json", "f-linear": "bibtex-f-linear-30epochs.json",
           "sf-se": "bibtex-sf-se-30epochs.json", "f-se": "bibtex-f-se-30epochs.json"}
LABEL_GPS = [f"{STORE}/bibtex-label-gps.json", f"{STORE}/bibtex-label-gps-seed1.json",
             f"{STORE}/bibtex-label-gps-seed2.json"]
LABEL_GPS_16 = [f"{STORE}/bibtex-label-gps-variance16.json", f"{STORE}/bibtex-label-gps-variance16-seed1.json",
                f"{STORE}/bibtex-label-gps-variance16-seed2.json"]
#: ``--recipe best`` (a 3-seed ensemble of label-gps-auto, at least 1,000 steps, ranking by probability, the rows' transform
#: chosen, the rows joined with label scores), seeds 0-2, the runs of the four-set comparison
BEST = [f"{STORE}/selection/bibtex-best-label-scores-seed{seed}-rows.json" for seed in (0, 1, 2)]
#: the same without label scores (``best`` before it joined them), seeds 0-2
BEST_BEFORE = [f"{STORE}/selection/bibtex-best-transform-seed{seed}-rows.json" for seed in (0, 1, 2)]
PEERS_10 = f"{STORE}/selection/bibtex-peers-10runs-rows.json"  # the runs the paired comparison uses
BONSAI_10 = f"{STORE}/selection/bibtex-bonsai-10runs-rows.json"  # omikuji with Bonsai settings, run later
#: the ``--methods`` each peer file was written with
PEER_FILE_METHODS = {PEERS_10: "omikuji napkinxc napkinxc-ovr", BONSAI_10: "omikuji-bonsai"}
#: (method, name, file) of the peers in README's Bibtex table
README_PEERS = (
    ("omikuji", "omikuji (Parabel defaults)", PEERS_10),
    ("omikuji-bonsai", "omikuji (Bonsai settings)", BONSAI_10),
    ("napkinxc", "napkinXC PLT", PEERS_10),
    ("napkinxc-ovr", "napkinXC OVR", PEERS_10),
)
BASELINES = f"{STORE}/bibtex-baselines-2026-11-25.json"
BASELINES_EARLIER = f"{STORE}/bibtex-baselines.json"
TFIDF = f"{STORE}/bibtex-tfidf.json"
KS = (1, 3, 5)
TIE = 1e-9  # P@k of two runs on the same rows is a ratio of counts: equal counts give equal floats


def _paper_bibtex(method: str) -> dict[str, Any]:
    return PAPER["table2"]["bibtex"].get(method) or PAPER["table4"]["bibtex"][method]


def _paper_table(method: str) -> str:
    return "Table 2" if method in PAPER["table2"]["bibtex"] else "Table 4"


def _pk(record: dict[str, Any], digits: int = 2, bold_first: bool = False) -> str:
    values = [fmt(record[f"P@{k}"], digits) for k in KS]
    if bold_first:
        values[0] = f"**{values[0]}**"
    return " / ".join(values)


def _variant(method: str) -> dict[str, Any]:
    return load(f"{STORE}/bibtex-{method}-400epochs.json")


def _paper_seconds_per_epoch(dataset: str = "bibtex", method: str = "s-linear") -> float:
    return PAPER["table5_minutes_per_epoch"][dataset][method] * 60


# --------------------------------------------------------------------------------------------------------
# docs/mlgpf/results.md: the eight variants beside Tables 2 and 4
# --------------------------------------------------------------------------------------------------------
@generator("mlgpf-variants-400")
def variants_400() -> str:
    paper_minutes = PAPER["table5_minutes_per_epoch"]["bibtex"]
    rows = []
    for method, name in VARIANTS.items():
        ours, earlier = _variant(method), load(f"{STORE}/{EARLIER[method]}")
        curve = ", ".join(fmt(p, 1) for p in ours["test_metrics_per_epoch"]["P@1"])
        rows.append([name, _pk(ours, bold_first=True), f"{_pk(_paper_bibtex(method))} ({_paper_table(method)})",
                     f"{_pk(earlier)} ({earlier['epochs_trained']})", curve, fmt(ours["seconds_per_epoch"], 1),
                     fmt(paper_minutes[method] * 60, 1) if method in paper_minutes else None])
    return markdown_table(["variant", "P@1 / P@3 / P@5 at 400 epochs, ours", "the paper (table)",
                           "earlier shorter run (epochs)", "test P@1 every 20 epochs", "s/epoch, ours",
                           "s/epoch, the paper (Table 5, its Xeon server)"], rows)


def _above(ours: dict[str, Any], paper: dict[str, Any]) -> bool:
    return all(ours[f"P@{k}"] > paper[f"P@{k}"] + TIE for k in KS)


@generator("mlgpf-variants-above-paper")
def variants_above_paper() -> str:
    above = [VARIANTS[m] for m in VARIANTS if _above(_variant(m), _paper_bibtex(m))]
    count = "All eight" if len(above) == len(VARIANTS) else f"{len(above)} of the eight ({', '.join(above)})"
    earlier = {k: [VARIANTS[m] for m in VARIANTS
                   if load(f"{STORE}/{EARLIER[m]}")[f"P@{k}"] > _paper_bibtex(m)[f"P@{k}"] + TIE] for k in KS}
    short = "; ".join(f"P@{k}: {', '.join(names) if names else 'none'}" for k, names in earlier.items())
    return (f"{count} variants are above the paper's Tables 2 and 4 on P@1, P@3 and P@5 at 400 epochs. Of the "
            f"earlier, shorter runs, those above the paper on {short}.")


# --------------------------------------------------------------------------------------------------------
# label-gps, its σ² = 16 predecessor and the peers (results.md and README.md)
# --------------------------------------------------------------------------------------------------------
def _runs(paths: Sequence[str]) -> list[dict[str, Any]]:
    return [load(p) for p in paths]


def _joined(runs: Sequence[dict[str, Any]], key: str, digits: int = 2) -> str:
    return " / ".join(fmt(r[key], digits) for r in runs)


def _peer_runs(method: str, path: str = PEERS_10) -> list[dict[str, Any]]:
    return [r for r in load(path)["results"] if r["method"] == method]


def _median_range(runs: Sequence[dict[str, Any]], key: str) -> str:
    values = [r[key] for r in runs]
    return f"{fmt(statistics.median(values))} ({fmt(min(values))}–{fmt(max(values))})"


def _peer(path: str, method: str) -> dict[str, Any]:
    return next(r for r in load(path)["results"] if r["method"].startswith(method))


@generator("mlgpf-bibtex-test")
def bibtex_test() -> str:
    gps, gps16 = _runs(LABEL_GPS), _runs(LABEL_GPS_16)
    rows = [
        ["**MLGPF `label-gps`** (`--recipe label-gps`, σ² = 12), seeds 0 / 1 / 2"]
        + [_joined(gps, f"P@{k}") for k in KS]
        + [f"{_joined(gps, 'seconds_per_epoch')} s/epoch, {gps[0]['epochs_trained']} epochs"],
        ["`label-gps` with σ² = 16 (the recipe before the cross-validation), seeds 0 / 1 / 2"]
        + [_joined(gps16, f"P@{k}") for k in KS] + [f"{_joined(gps16, 'seconds_per_epoch')} s/epoch"],
    ]
    for method, name in (("omikuji", "omikuji (Parabel defaults)"), ("napkinxc", "napkinXC PLT (defaults)")):
        runs = _peer_runs(method)
        rows.append([f"{name}, median of {len(runs)} runs (range)"] + [_median_range(runs, f"P@{k}") for k in KS]
                    + [f"{fmt(statistics.median(r['fit_seconds'] for r in runs), 1)} s to fit (median)"])
    for method, name in (("omikuji", "omikuji"), ("napkinxc", "napkinXC PLT")):
        runs = [_peer(BASELINES, method), _peer(BASELINES_EARLIER, method)]
        rows.append([f"{name}, one run on 2026-11-25 / the earlier recorded run"]
                    + [_joined(runs, f"P@{k}") for k in KS] + [""])
    ovr = _peer(BASELINES, "sklearn-ovr")
    rows.append(["scikit-learn one-vs-rest logistic regression (C = 10, raw rows)"]
                + [fmt(ovr[f"P@{k}"]) for k in KS] + [f"{fmt(ovr['fit_seconds'], 1)} s to fit"])
    if (REPO / TFIDF).is_file():
        tfidf = load(TFIDF)
        rows.append(["MLGPF recipe `tfidf` (P = 30 shared latent GPs, seed 0)"] + [fmt(tfidf[f"P@{k}"]) for k in KS]
                    + [f"{fmt(tfidf['seconds_per_epoch'], 2)} s/epoch, {tfidf['epochs_trained']} epochs"])
    s_linear = _variant("s-linear")
    rows.append(["MLGPF s-LINEAR, the paper's settings, 400 epochs"] + [fmt(s_linear[f"P@{k}"]) for k in KS]
                + [f"{fmt(s_linear['seconds_per_epoch'], 1)} s/epoch"])
    paper, sleec = PAPER["table2"]["bibtex"]["s-linear"], PAPER["table3"]["bibtex"]["SLEEC"]
    rows.append(["the paper, Table 2 (s-LINEAR) / Table 3 (SLEEC)"]
                + [f"{fmt(paper[f'P@{k}'])} / {fmt(sleec[f'P@{k}'])}" for k in KS]
                + [f"{fmt(_paper_seconds_per_epoch(), 1)} s/epoch (Table 5)"])
    n_train, n_test = load(BASELINES)["n_train"], load(BASELINES)["n_test"]
    return markdown_table([f"Bibtex test ({n_train:,} / {n_test:,} rows)", "P@1", "P@3", "P@5", "time"], rows)


def _counts(ours: Sequence[dict[str, Any]], peers: Sequence[dict[str, Any]], key: str) -> tuple[int, int, int]:
    above = tie = below = 0
    for a in ours:
        for b in peers:
            if abs(a[key] - b[key]) <= TIE:
                tie += 1
            elif a[key] > b[key]:
                above += 1
            else:
                below += 1
    return above, tie, below


@generator("mlgpf-label-gps-vs-peer-runs")
def label_gps_vs_peer_runs() -> str:
    gps = _runs(LABEL_GPS)
    peers = _peer_runs("omikuji") + _peer_runs("napkinxc")
    parts = []
    for k in KS:
        above, tie, below = _counts(gps, peers, f"P@{k}")
        parts.append(f"P@{k}: above in {above}, tied in {tie}, below in {below}")
    return (f"each of the {len(gps)} `label-gps` seeds against each of the {len(peers)} peer runs of "
            f"`{Path(PEERS_10).name}` ({len(gps) * len(peers)} pairs of whole-split scores; "
            + "; ".join(parts) + ").")


@generator("mlgpf-peer-spread")
def peer_spread() -> str:
    parts = []
    for method, name in (("omikuji", "omikuji"), ("napkinxc", "napkinXC")):
        values = [r["P@1"] for r in _peer_runs(method)]
        parts.append(f"{name}: P@1 from {fmt(min(values))} to {fmt(max(values))}, median "
                     f"{fmt(statistics.median(values))} ({len(values)} runs)")
    return "; ".join(parts) + "."


@generator("mlgpf-variance16-p1")
def variance16_p1() -> str:
    return _joined(_runs(LABEL_GPS_16), "P@1")


@generator("mlgpf-label-gps-order")
def label_gps_order() -> str:
    first, then = load(LABEL_GPS_16[0])["provenance"], load(LABEL_GPS[0])["provenance"]
    return (f"the σ² = 16 test results were committed at {first['utc_time'][:16].replace('T', ' ')} UTC (commit "
            f"`{first['git_commit'][:7]}`), the cross-validation with the σ² = 12 test results at "
            f"{then['utc_time'][:16].replace('T', ' ')} UTC (commit `{then['git_commit'][:7]}`)")


@generator("mlgpf-tfidf-test")
def tfidf_test() -> str:
    tfidf = load(TFIDF)
    return (f"test P@1 / P@3 / P@5 {_pk(tfidf)} (seed 0, {tfidf['epochs_trained']} epochs, "
            f"{fmt(tfidf['seconds_per_epoch'], 2)} s/epoch)")


# --------------------------------------------------------------------------------------------------------
# README.md: the Bibtex summary and the AmazonCat paragraph
# --------------------------------------------------------------------------------------------------------
@generator("mlgpf-readme-bibtex")
def readme_bibtex() -> str:
    s_linear, paper = _variant("s-linear"), PAPER["table2"]["bibtex"]["s-linear"]
    gps, gps16 = _runs(LABEL_GPS), _runs(LABEL_GPS_16)
    xmc = "`python -m experiments.mlgpf_xmc --dataset bibtex"
    peers = {method: _peer_runs(method, path) for method, _, path in README_PEERS}
    top_peer = {k: max(statistics.median(r[f"P@{k}"] for r in runs) for runs in peers.values()) for k in KS}

    def bold_if_ahead(runs: Sequence[dict[str, Any]], k: int) -> str:  # every seed at or above every peer's median
        text = _joined(runs, f"P@{k}")
        return f"**{text}**" if min(r[f"P@{k}"] for r in runs) >= top_peer[k] else text

    rows = [
        ["MLGPF s-LINEAR, the paper's settings and 400 epochs (all eight variants beside Tables 2 and 4: "
         "[docs/mlgpf/results.md](docs/mlgpf/results.md))"] + [fmt(s_linear[f"P@{k}"]) for k in KS]
        + [f"{xmc} --method s-linear --learning-rate 0.03 --float32`"],
        ["the paper, Table 2 (s-LINEAR)"] + [fmt(paper[f"P@{k}"]) for k in KS] + [""],
    ]
    best_runs = [path for path in BEST if (REPO / path).is_file()]  # the seeds run so far
    if best_runs:
        best = _runs(best_runs)
        chosen = " / ".join(f"{r['tuning']['chosen']:g}" for r in best)
        transforms = " / ".join(TRANSFORM_NAMES[r["tuning"]["input_transform"]] for r in best)
        seeds = " / ".join(str(r["config"]["seed"]) for r in best)
        rows.append(["MLGPF recipe `best` (an ensemble of 3 seeds of `label-gps-auto`, at least 1,000 steps, "
                     f"labels ranked by their predictive probability; σ² and the rows' transform chosen on the "
                     f"training rows: {chosen}, {transforms}; the rows joined with 0.25 × a first stage's label "
                     "probabilities; the rule chosen by cross-validation on four training "
                     f"files); seeds {seeds} (members s, s + 1, s + 2)"]
                    + [bold_if_ahead(best, k) for k in KS] + [f"{xmc} --recipe best --seed S`"])
    if all((REPO / path).is_file() for path in BEST_BEFORE):
        earlier = _runs(BEST_BEFORE)
        chosen = " / ".join(f"{r['tuning']['chosen']:g}" for r in earlier)
        rows.append([f"the same without label scores (`best` before it joined them; σ² {chosen}); "
                     "seeds 0 / 1 / 2"] + [bold_if_ahead(earlier, k) for k in KS]
                    + [f"{xmc} --recipe best --label-score-weight 0 --seed S`"])
    rows += [
        ["MLGPF recipe `label-gps`: one linear GP per label on Z = X̃, TF-IDF rows, σ² = 12 (chosen on Bibtex's "
         f"training file), {gps[0]['epochs_trained']} epochs; seeds 0 / 1 / 2"] + [bold_if_ahead(gps, k) for k in KS]
        + [f"{xmc} --recipe label-gps --seed S`"],
        ["the same with σ² = 16, the recipe's earlier value, scored on the test split before σ² = 12 was chosen; "
         "seeds 0 / 1 / 2"] + [_joined(gps16, f"P@{k}") for k in KS] + [""],
    ]
    for method, name, path in README_PEERS:
        runs = peers[method]
        rows.append([f"{name}, median of {len(runs)} runs (range)"] + [_median_range(runs, f"P@{k}") for k in KS]
                    + [f"`python -m experiments.xmc_baselines --dataset bibtex --methods {PEER_FILE_METHODS[path]} "
                       "--repeats 10 --save-rows`"])
    return markdown_table(["model", "P@1", "P@3", "P@5", "command"], rows)


@generator("mlgpf-readme-amazoncat")
def readme_amazoncat() -> str:
    full, basis = load(f"{SCALING}/full_k13k.json"), load(f"{SCALING}/basis_and_200_steps.json")
    minutes = full["seconds_per_epoch_measured"][0] / 60
    paper = PAPER["table5_minutes_per_epoch"]["amazoncat"]["s-linear"]
    return (f"takes {fmt(minutes, 1)} minutes on 2 CPU cores in float32 with a peak RSS of "
            f"{fmt(full['peak_rss_gb'], 1)} GB "
            f"({fmt(basis['rss_gb_after_basis'], 1)} GB while the basis is computed); the paper's Table 5 gives "
            f"{fmt(paper, 1)} minutes per epoch on real AmazonCat on its Xeon server (another machine and other "
            "data, so not a speed-up)")


# --------------------------------------------------------------------------------------------------------
# results.md: speed
# --------------------------------------------------------------------------------------------------------
@generator("mlgpf-speed")
def speed() -> str:
    record = load(f"{STORE}/mlgpf_speed.json")
    rates = record["matmul_gflops"]
    rows = []
    order = ["MLGPF s-linear (float64)", "MLGPF linear (float64)", "gradient through L⁻¹ (float64)",
             "Cholesky gradient (float64)", "L⁻¹ and gradient (float64)", "SLFM", "MLGPF s-linear (float32)",
             "gradient through L⁻¹ (float32)", "Cholesky gradient (float32)", "L⁻¹ and gradient (float32)"]
    first = lambda name: next((i for i, key in enumerate(order) if key in name), len(order))  # noqa: E731
    for contender, row in sorted(record["results"].items(), key=lambda item: first(item[0])):
        gflops = "-"
        if row["gflops"] is not None:
            rate = rates["float32" if "float32" in contender else "float64"]
            gflops = f"{fmt(row['gflops'], 1)} ({fmt(100 * row['gflops'] / rate, 0)} % of matmul)"
        rows.append([contender, fmt(row["seconds_per_step"], 3), fmt(row["seconds_per_epoch"], 1),
                     f"{fmt(row['speedup_vs_slfm'], 2)}×", gflops])
    return markdown_table(["contender (M = 500, P = 30, batch 500)", "s/step", "s/epoch", "SLFM time / this",
                           "achieved GFLOP/s"], rows)


@generator("mlgpf-speed-cholesky")
def speed_cholesky() -> str:
    results = load(f"{STORE}/mlgpf_speed.json")["results"]

    def ratios(peer):
        return " and ".join(f"{fmt(results[f'{peer} ({dtype})']['time_over_s_linear'], 2)} times as long in {dtype}"
                            for dtype in ("float64", "float32"))

    return (f"differentiated through L⁻¹ the s-linear step takes {ratios('s-linear, gradient through L⁻¹')}, and "
            f"with TensorFlow's own gradients {ratios('s-linear, TF Cholesky gradient')}")


@generator("mlgpf-speed-profile")
def speed_profile() -> str:
    results = load(f"{STORE}/mlgpf_speed.json")["results"]
    traces = {dtype: dict(results[f"MLGPF s-linear ({dtype})"]["profile"]["op_type_seconds"])
              for dtype in ("float64", "float32")}
    totals = {dtype: sum(trace.values()) for dtype, trace in traces.items()}
    op_types = [op for op in traces["float32"] if op != "(other)"]
    op_types += [op for op in traces["float64"] if op not in op_types and op != "(other)"]

    def cell(dtype, op_type):
        seconds = traces[dtype].get(op_type)
        return "-" if seconds is None else f"{fmt(1e3 * seconds, 1)} ({fmt(100 * seconds / totals[dtype], 0)} %)"

    rows = [[f"`{op}`", cell("float32", op), cell("float64", op)] for op in op_types]
    rows.append(["(other op types)", cell("float32", "(other)"), cell("float64", "(other)")])
    walls = {dtype: 1e3 * results[f"MLGPF s-linear ({dtype})"]["profile"]["wall_seconds_per_step"]
             for dtype in traces}
    rows.append(["all ops / wall time of the traced steps",
                 *(f"{fmt(1e3 * totals[dtype], 1)} / {fmt(walls[dtype], 1)}" for dtype in ("float32", "float64"))])
    return markdown_table(["op type (s-linear step)", "float32 ms/step (share of op time)",
                           "float64 ms/step (share of op time)"], rows)


@generator("mlgpf-speed-paths")
def speed_paths() -> str:
    results = load(f"{STORE}/mlgpf_speed.json")["results"]
    products = results["s-linear, matrix-product L⁻¹ and gradient (float64)"]["time_over_default_path"]
    solves = results["s-linear, triangular-solve L⁻¹ and gradient (float32)"]["time_over_default_path"]
    return (f"in float64 the step with matrix products takes {fmt(products, 2)} times as long as with triangular "
            f"solves, and in float32 the step with triangular solves takes {fmt(solves, 2)} times as long as with "
            "matrix products")


@generator("mlgpf-speed-matmul")
def speed_matmul() -> str:
    rates = load(f"{STORE}/mlgpf_speed.json")["matmul_gflops"]
    return (f"TF matmul in the same run: {fmt(rates['float64'], 1)} GFLOP/s float64, "
            f"{fmt(rates['float32'], 1)} GFLOP/s float32")


@generator("mlgpf-fit-timing")
def fit_timing() -> str:
    timing = load(f"{STORE}/bibtex-s-linear-8epochs-timing.json")
    return (f"s-LINEAR **{fmt(timing['seconds_per_epoch'], 2)} s/epoch** (the paper's Table 5 gives "
            f"{fmt(_paper_seconds_per_epoch(), 1)} s on its Xeon server; times from different machines are shown "
            "side by side, not compared as a speed-up)")


@generator("mlgpf-paper-table5")
def paper_table5() -> str:
    minutes = PAPER["table5_minutes_per_epoch"]["bibtex"]
    return (f"Paper Table 5 (Xeon E5-2667 v3): s-LINEAR {fmt(minutes['s-linear'], 2)} min/epoch "
            f"({fmt(minutes['s-linear'] * 60, 1)} s), LINEAR {fmt(minutes['linear'], 2)} min/epoch on Bibtex.")


# --------------------------------------------------------------------------------------------------------
# docs/mlgpf/scaling.md: AmazonCat-13K size, streamed from disk
# --------------------------------------------------------------------------------------------------------
SCALING_RUNS = ("n10k_k13k.json", "n100k_k13k.json", "n100k_k1k.json", "full_k13k.json", "full_200_steps_float64.json")


@generator("mlgpf-acs-paper-minutes")
def acs_paper_minutes() -> str:
    return f"**{fmt(PAPER['table5_minutes_per_epoch']['amazoncat']['s-linear'], 1)} min/epoch**"


@generator("mlgpf-acs-synth")
def acs_synth() -> str:
    stats = load(f"{SCALING}/synth_full_stats.json")
    train, test = stats["train"], stats["test"]
    return (f"realised at full size: {fmt(train['nnz_per_row'], 2)} nnz/row and {fmt(train['labels_per_row'], 3)} "
            f"labels/row on train, {fmt(test['nnz_per_row'], 2)} / {fmt(test['labels_per_row'], 3)} on test; "
            f"{fmt(stats['seconds'], 0)} s to write {train['rows'] + test['rows']:,} rows")


@generator("mlgpf-scaling-runs")
def scaling_runs() -> str:
    rows = []
    for name in SCALING_RUNS:
        r = load(f"{SCALING}/{name}")
        full = r["N"] > 1_000_000  # the full AmazonCat-13K size
        n = f"{r['N']:,}" + (", float64" if r["float"] == "float64" else "")
        steps = (f"{r['steps_trained']:,}" if r["steps_trained"] == r["steps_per_epoch"]
                 else f"{r['steps_trained']:,} of {r['steps_per_epoch']:,}")
        measured = r.get("seconds_per_epoch_measured")
        minutes = f"{fmt(r['seconds_per_epoch_projected'] / 60, 1 if full else 2)} / " + (
            fmt(measured[0] / 60, 1 if full else 2) if measured and r["steps_trained"] == r["steps_per_epoch"] else "-")
        scored = "(not scored)" if r["float"] == "float64" else (
            f"{_pk(r)} ({'all ' if r['test_rows'] > 100000 else ''}{r['test_rows']:,})")
        rows.append([n, f"{r['K']:,}", steps,
                     f"{fmt(r['seconds_per_step'], 3 if r['seconds_per_step'] < 1 else 2)} / "
                     f"{fmt(r['training_cpu_seconds_per_step'], 2)}",
                     minutes, fmt(r["peak_rss_gb"], 2), scored])
    paper_minutes = PAPER["table5_minutes_per_epoch"]["amazoncat"]["s-linear"]
    paper_pk = PAPER["table2"]["amazoncat"]["s-linear"]
    rows.append(["the paper, AmazonCat-13K (real data, Xeon server)", "13,330", "15 epochs", "",
                 f"{fmt(paper_minutes, 1)} (Table 5)", "", f"{_pk(paper_pk)} (Table 2)"])
    return markdown_table(["N", "K", "steps (an epoch)", "s/step wall / CPU", "min/epoch projected / measured",
                           "peak RSS GB", "P@1 / P@3 / P@5 % (test rows)"], rows)


#: the ``label-gps`` recipe's model at full size: every label exactly, and 100 sampled negatives
LABEL_GPS_RUNS = ("label_gps_200_steps_exact.json", "label_gps_200_steps_negatives.json",
                  "best_tuned_200_steps_exact.json", "best_label_scores_200_steps_exact.json")
#: the best recipe at this size: σ² chosen on the training file (``--tune``), then the same 200 exact steps
BEST_TUNED = f"{SCALING}/best_tuned_200_steps_exact.json"
#: the same with the recipe's label-score first stage (``--label-scores``), the joined rows trained from memory
BEST_LABEL_SCORES = f"{SCALING}/best_label_scores_200_steps_exact.json"


@generator("mlgpf-scaling-label-gps")
def scaling_label_gps() -> str:
    rows = []
    for name in LABEL_GPS_RUNS:
        r = load(f"{SCALING}/{name}")
        labels = "every label exactly" if r["exact_labels"] else f"{r['args']['num_negative_samples']} sampled negatives"
        if "label_scores" in r:
            labels += f", rows joined with {r['label_scores']['labels']} label scores"
        variance = r.get("kernel_variance", float(r["args"]["kernel_variance"]))
        rows.append([labels, f"{variance:g}" + (" (chosen by `best`'s rule)" if "tuning" in r else " (fixed)"),
                     f"{r['steps_trained']:,} of {r['steps_per_epoch']:,}",
                     f"{fmt(r['seconds_per_step'], 3)} / {fmt(r['training_cpu_seconds_per_step'], 2)}",
                     fmt(r["seconds_per_epoch_projected"] / 60, 1), fmt(r["peak_rss_gb"], 2),
                     "loaded" if "basis_from_cache" in r else "computed", f"{_pk(r)} ({r['test_rows']:,})"])
    return markdown_table(["labels per step", "σ²", "steps", "s/step wall / CPU", "min/epoch projected",
                           "peak RSS GB", "basis", "P@1 / P@3 / P@5 % (test rows)"], rows)


@generator("mlgpf-scaling-best-tuning")
def scaling_best_tuning() -> str:
    r = load(BEST_TUNED)
    tuning, wall, cpu = r["tuning"], r["phases_seconds"], r["phases_cpu_seconds"]
    cut = tuning["subsample"]
    scores = ", ".join(f"{row['kernel_variance']:g}: {fmt(row['P@1 mean'])}" for row in tuning["scores"])
    return (f"Reading the {r['N']:,} training rows into memory took {fmt(wall['reading_for_tuning'], 0)} s. The "
            f"choice of σ² took **{fmt(wall['tuning'], 0)} s** wall ({fmt(cpu['tuning'], 0)} s CPU), on the "
            f"{cut['labels']:,} most frequent of {cut['of_labels']:,} labels and {cut['rows']:,} random rows "
            f"({cut['multiply_adds']:.3g} multiply-adds per fold product); peak RSS after it "
            f"{fmt(r['rss_gb_after_tuning'], 2)} GB. It chose **σ² = {tuning['chosen']:g}** (held-out P@1 of the MAP "
            f"twin per σ², mean of {tuning['folds']} inner folds: {scores})")


@generator("mlgpf-scaling-label-scores")
def scaling_label_scores() -> str:
    r, before = load(BEST_LABEL_SCORES), load(BEST_TUNED)
    scores, wall, cpu = r["label_scores"], r["phases_seconds"], r["phases_cpu_seconds"]
    fitted = scores["rows_fitted"]
    choices = "; ".join(f"`{c['input_transform']}` at σ² = {c['kernel_variance']:g}, held-out P@1 {fmt(c['P@1 mean'])}"
                        for c in r["tuning"]["input_transform_scores"])
    return (f"In this run the rule chose the rows' transform with σ² ({choices}; {fmt(wall['tuning'], 0)} s wall): "
            f"**`{r['tuning']['input_transform']}` at σ² = {r['kernel_variance']:g}**. "
            f"The first stage (α = {scores['weight']:g}, σ² = {scores['kernel_variance']:g}, the "
            f"{scores['labels']} most frequent labels) took **{fmt(wall['label_scores'], 0)} s** wall "
            f"({fmt(cpu['label_scores'], 0)} s CPU): {scores['folds']} out-of-fold fits on {fitted[0]:,} random rows "
            f"each and one on {fitted[-1]:,} (the budget's cut), every one of the {r['N']:,} training rows scored, "
            f"and the rows joined ({fmt(scores['nnz_per_row'], 1)} stored numbers per row, "
            f"{r['D_joined']:,} columns); peak RSS after it {fmt(r['rss_gb_after_label_scores'], 2)} GB. The basis "
            f"of the joined rows took {fmt(wall['basis'], 0)} s, and a step on them "
            f"{fmt(r['training_cpu_seconds_per_step'], 2)} CPU s against {fmt(before['training_cpu_seconds_per_step'], 2)} "
            f"without the first stage; the peak RSS of the whole run was {fmt(r['peak_rss_gb'], 2)} GB")


@generator("mlgpf-scaling-append-columns")
def scaling_append_columns() -> str:
    r = load(f"{SCALING}/append_columns.json")
    ours, peer = r["summary"]["append_columns"], r["summary"]["scipy.sparse.hstack"]
    return (f"at {r['rows']:,} rows of {r['nnz_per_row']} random entries and {r['width']} appended columns, "
            f"`append_columns` peaks at {fmt(ours['peak_gb_above_inputs'], 2)} GB above its inputs (the joined "
            f"matrix is {fmt(ours['joined_gb'], 2)} GB) and takes {fmt(ours['seconds'], 1)} s, against "
            f"{fmt(peer['peak_gb_above_inputs'], 2)} GB and {fmt(peer['seconds'], 1)} s for `scipy.sparse.hstack`: "
            f"{fmt(r['peak_ratio'], 1)} times less memory and {fmt(r['seconds_ratio'], 1)} times faster (medians of "
            f"{r['repeats']} runs each, in fresh processes, the same arrays)")


@generator("mlgpf-scaling-phases")
def scaling_phases() -> str:
    basis, full = load(f"{SCALING}/basis_and_200_steps.json"), load(f"{SCALING}/full_k13k.json")
    wall, cpu = basis["phases_seconds"], basis["phases_cpu_seconds"]
    args = basis["args"]
    rows = [
        ["statistics pass (label counts, mean ‖x‖², a 100k-row sample)", fmt(wall["statistics"], 0),
         fmt(cpu["statistics"], 0), fmt(basis["rss_gb_after_statistics"], 2)],
        [f"basis: streamed randomized SVD, R = {basis['R']}, {args['passes']} passes over "
         f"{int(args['basis_sample']):,} "
         f"random training rows, float32 work arrays, k-means (A) on {int(args['kmeans_sample']):,} of them",
         fmt(wall["basis"], 0), fmt(cpu["basis"], 0), fmt(basis["rss_gb_after_basis"], 2)],
        [f"training, one epoch ({full['steps_trained']:,} steps, checkpoints every "
         f"{full['args']['checkpoint_every_steps']} steps)", fmt(full["phases_seconds"]["training"], 0),
         fmt(full["phases_cpu_seconds"]["training"], 0), fmt(full["rss_gb_after_training"], 2)],
        [f"P@k over the {full['test_rows']:,} test rows, streamed", fmt(full["phases_seconds"]["evaluation"], 0),
         fmt(full["phases_cpu_seconds"]["evaluation"], 0), fmt(full["peak_rss_gb"], 2)],
    ]
    return markdown_table(["phase, full size", "wall s", "CPU s", "peak RSS GB"], rows)


@generator("mlgpf-scaling-targets")
def scaling_targets() -> str:
    full, basis = load(f"{SCALING}/full_k13k.json"), load(f"{SCALING}/basis_and_200_steps.json")
    f64 = load(f"{SCALING}/full_200_steps_float64.json")
    minutes = full["seconds_per_epoch_measured"][0] / 60
    return (f"One epoch at full size takes **{fmt(minutes, 1)} minutes** in float32 (target ≤ 40), and the peak RSS "
            f"is **{fmt(basis['rss_gb_after_basis'], 1)} GB** while the basis is computed and "
            f"**{fmt(full['rss_gb_after_training'], 1)} GB** while training (target ≤ 16 GB). In float64 the step "
            f"costs {fmt(f64['seconds_per_step'] / full['seconds_per_step'], 1)} times as much "
            f"({fmt(f64['seconds_per_step'], 2)} s; {fmt(f64['seconds_per_epoch_projected'] / 60, 0)} minutes per "
            f"epoch projected, over the target) and the peak RSS is {fmt(f64['peak_rss_gb'], 1)} GB.")


@generator("mlgpf-scaling-growth")
def scaling_growth() -> str:
    k13 = [load(f"{SCALING}/{n}") for n in ("n10k_k13k.json", "n100k_k13k.json", "full_k13k.json")]
    k1k = load(f"{SCALING}/n100k_k1k.json")
    steps = [r["seconds_per_step"] for r in k13]
    return (f"The median step takes {fmt(min(steps), 2)} to {fmt(max(steps), 2)} s from N = {k13[0]['N']:,} to "
            f"{k13[-1]['N']:,}, and {fmt(k1k['seconds_per_step'], 3)} s at K = {k1k['K']:,} against "
            f"{fmt(k13[1]['seconds_per_step'], 3)} s at K = {k13[1]['K']:,} (N = {k1k['N']:,}).")


@generator("mlgpf-scaling-pk")
def scaling_pk() -> str:
    full, k1k = load(f"{SCALING}/full_k13k.json"), load(f"{SCALING}/n100k_k1k.json")
    return (f"one epoch at full size reaches test P@1 {fmt(full['P@1'], 2)}; with K = {k1k['K']:,} labels "
            f"{k1k['steps_trained']} steps reach P@1 {fmt(k1k['P@1'], 2)}")


@generator("mlgpf-scaling-learning-rate")
def scaling_learning_rate() -> str:
    chosen, other = load(f"{SCALING}/basis_and_200_steps.json"), load(f"{SCALING}/200_steps_lr0.05.json")
    return (f"The learning rate (`{chosen['args']['learning_rate']}`) was chosen between "
            f"`{chosen['args']['learning_rate']}` and `{other['args']['learning_rate']}` by P@1 on the first "
            f"{chosen['test_rows']:,} rows of the generated test file after {chosen['steps_trained']} full-size steps "
            f"({fmt(chosen['P@1'], 2)} against {fmt(other['P@1'], 2)}): a choice made on the test file, before "
            "the runs above.")


@generator("mlgpf-scaling-cpu")
def scaling_cpu() -> str:
    full = load(f"{SCALING}/full_k13k.json")
    return (f"CPU seconds per step {fmt(full['training_cpu_seconds_per_step'], 2)} against "
            f"{fmt(full['seconds_per_step'], 2)} s wall")


@generator("mlgpf-scaling-15-epochs")
def scaling_15_epochs() -> str:
    full = load(f"{SCALING}/full_k13k.json")
    minutes = full["seconds_per_epoch_measured"][0] / 60
    return f"at {fmt(minutes, 1)} minutes an epoch, 15 epochs take about {fmt(15 * minutes / 60, 1)} hours here"


@generator("mlgpf-paper-amazoncat-pk")
def paper_amazoncat_pk() -> str:
    return f"{_pk(PAPER['table2']['amazoncat']['s-linear'])} (the paper's Table 2)"


@generator("mlgpf-acs-basis-rss")
def acs_basis_rss() -> str:
    return f"{fmt(load(f'{SCALING}/basis_and_200_steps.json')['rss_gb_after_basis'], 1)} GB"
