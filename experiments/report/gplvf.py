"""Generated parts of the gplvf pages (see experiments.report).

Every number comes from a file of the store ``docs/gplvf/results/`` (index: its README.md) through :func:`load`;
the paper's numbers come from ``experiments.paper_values.GPLVF`` and are labelled as the paper's. A flow is called
better than the Gaussian q(X) only when the 95 % t-interval of the paired per-seed differences lies below zero;
otherwise the table says "tie".
"""
import math
from collections.abc import Sequence

from experiments.report import fmt, generator, load, markdown_table  # noqa: F401

STORE = "docs/gplvf/results"
SEEDS = (0, 1, 2, 3, 4)
#: protocol (a) at the defaults, test users 844-943 (the Gaussian of seeds 0-2 comes from the seed-matched run
#: before the flow fixes: its code path did not change)
A_DEFAULTS = STORE + "/movielens_a_last100_seed{seed}_lrcosine_inf8_cosine_split_kl_flowlr0.001.json"
A_GAUSSIAN = STORE + "/movielens_a_last100_seed{seed}_lrcosine_inf8_cosine.json"
A_LOCAL = STORE + "/movielens_a_last100_seed{seed}_split_kl_flowlr0.001_locallr0.1.json"
B_FILE = STORE + "/movielens_b_e150_split_kl_flowlr0.001.json"
C_FILE = {0: STORE + "/movielens_c.json", 1: STORE + "/movielens_c_seed1.json", 2: STORE + "/movielens_c_seed2.json"}
NAMES = {"gaussian": "Gaussian", "planar_5": "Planar 5", "planar_10": "Planar 10", "planar_20": "Planar 20",
         "planar_30": "Planar 30", "planar_50": "Planar 50"}


def _paper() -> dict[str, float]:
    from experiments.paper_values import GPLVF

    return GPLVF["table2_rmse"]


def _t95(n: int) -> float:
    """Two-sided 95 % quantile of Student's t with n - 1 degrees of freedom."""
    from scipy.stats import t

    return float(t.ppf(0.975, n - 1))


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)


def paired(flow: Sequence[float], base: Sequence[float]) -> tuple[float, float, float]:
    """Mean of flow - base over seeds and its 95 % t-interval (low, high)."""
    diffs = [f - b for f, b in zip(flow, base)]
    n = len(diffs)
    mean = _mean(diffs)
    sd = math.sqrt(sum((d - mean) ** 2 for d in diffs) / (n - 1))
    half = _t95(n) * sd / math.sqrt(n)
    return mean, mean - half, mean + half


def verdict(flow: Sequence[float], base: Sequence[float], lower_is_better: bool = True) -> str:
    """"better", "worse" or "tie" from the 95 % interval of the paired differences."""
    _, low, high = paired(flow, base)
    if low <= 0 <= high:
        return "tie"
    below = high < 0
    return "better" if below == lower_is_better else "worse"


def _signed(value: float, digits: int) -> str:
    return ("+" if value >= 0 else "−") + fmt(abs(value), digits)


def _interval(flow: Sequence[float], base: Sequence[float], digits: int = 5) -> str:
    mean, low, high = paired(flow, base)
    return f"{_signed(mean, digits)} [{_signed(low, digits)}, {_signed(high, digits)}]"


def _bold_min(values: Sequence[float | None], digits: int) -> list[str]:
    """Cells with the strictly smallest value in bold (no bold when two are equal at the printed digits)."""
    cells = [fmt(v, digits) for v in values]
    shown = [c for c, v in zip(cells, values) if v is not None]
    best = min(shown, key=float)
    if shown.count(best) == 1:
        cells = [f"**{c}**" if c == best else c for c in cells]
    return cells


# ----------------------------------------------------------------------------------------------------------------
# protocol (a): the paper's split, test users 844-943, at the defaults
# ----------------------------------------------------------------------------------------------------------------


def protocol_a(pattern: str = A_DEFAULTS) -> dict[str, dict[str, list[float]]]:
    """{model: {"rmse": [...], "test_loglik": [...]}} over SEEDS, plus "bias_baseline" RMSEs."""
    out: dict[str, dict[str, list[float]]] = {}
    for seed in SEEDS:
        runs = dict(load(pattern.format(seed=seed))["a"])
        if "gaussian" not in runs:
            runs["gaussian"] = load(A_GAUSSIAN.format(seed=seed))["a"]["gaussian"]
        for model, run in runs.items():
            record = out.setdefault(model, {"rmse": [], "test_loglik": [], "final_elbo": []})
            for key in record:
                if key in run:
                    record[key].append(run[key])
    return out


@generator("gplvf-a")
def table_a() -> str:
    runs = protocol_a()
    models = ["gaussian", "planar_20", "planar_50"]
    rows = []
    for i, seed in enumerate(SEEDS):
        rows.append([str(seed)] + _bold_min([runs[m]["rmse"][i] for m in models], 5)
                    + [fmt(runs["bias_baseline"]["rmse"][i], 4)])
    rows.append(["RMSE mean"] + [fmt(_mean(runs[m]["rmse"]), 5) for m in models]
                + [fmt(_mean(runs["bias_baseline"]["rmse"]), 4)])
    base = runs["gaussian"]["rmse"]
    rows.append(["flow − Gaussian, mean [95 % interval over seeds]", ""]
                + [_interval(runs[m]["rmse"], base) for m in models[1:]] + [""])
    rows.append(["flow vs Gaussian", ""] + [verdict(runs[m]["rmse"], base) for m in models[1:]] + [""])
    rows.append(["test log-lik. per rating, mean"] + [fmt(_mean(runs[m]["test_loglik"]), 4) for m in models] + [""])
    paper = _paper()
    rows.append(["the paper, Table 2 (RMSE)"] + [fmt(paper[m], 4) for m in models] + [""])
    return markdown_table(["seed", "Gaussian", "Planar 20", "Planar 50", "user/item bias"], rows)


@generator("gplvf-a-summary")
def summary_a() -> str:
    runs = protocol_a()
    base = runs["gaussian"]["rmse"]
    counts = {m: sum(f < g for f, g in zip(runs[m]["rmse"], base)) for m in ("planar_20", "planar_50")}
    paper_best = _paper()["planar_50"]
    worst = max(max(runs[m]["rmse"]) for m in ("gaussian", "planar_20", "planar_50"))
    below = "every run is below" if worst < paper_best else "not every run is below"
    return (f"Over the {len(SEEDS)} seeds Planar 20 is below the Gaussian in {counts['planar_20']} and Planar 50 in "
            f"{counts['planar_50']}; the paired differences are a {verdict(runs['planar_20']['rmse'], base)} "
            f"(Planar 20) and a {verdict(runs['planar_50']['rmse'], base)} (Planar 50), and {below} the "
            f"paper's best figure (Planar 50, {fmt(paper_best, 4)}).")


@generator("gplvf-a-fit")
def fit_rerun() -> str:
    old = load(STORE + "/movielens_a_defaults_seed0.json")["a"]
    new = load(STORE + "/movielens_a_defaults_seed0_fit.json")["a"]
    return (f"seed 0 through `fit`: Gaussian {fmt(new['gaussian']['rmse'], 5)}, Planar 20 "
            f"{fmt(new['planar_20']['rmse'], 5)} (the earlier loop: {fmt(old['gaussian']['rmse'], 5)} and "
            f"{fmt(old['planar_20']['rmse'], 5)})")


@generator("gplvf-flow-nonlinearity")
def flow_nonlinearity() -> str:
    fractions = []
    for seed in SEEDS:
        for _model, run in load(A_DEFAULTS.format(seed=seed))["a"].items():
            for rows in (run.get("flow_local_nonlinearity") or {}).values():
                fractions.append(rows["nonaffine_fraction"])
    return (f"{fmt(100 * min(fractions), 1)}-{fmt(100 * max(fractions), 1)} % of each row's spread "
            f"(median over rows, training and held-out users, Planar 20 and 50, five seeds)")


# ----------------------------------------------------------------------------------------------------------------
# protocol (b): the five standard splits, GPy beside GPLVF in the same run
# ----------------------------------------------------------------------------------------------------------------


def _b() -> dict[str, dict[str, float]]:
    return load(B_FILE)["b"]


@generator("gplvf-b")
def table_b() -> str:
    splits = _b()
    names = sorted(splits)
    rows = []
    keys = ["gaussian_rmse", "planar_20_rmse", "gpy_rmse", "bias_rmse"]
    for name in names:
        s = splits[name]
        rows.append([name] + _bold_min([s[k] for k in keys[:3]], 5)[:2] + [fmt(s["gpy_rmse"], 4),
                    fmt(s["bias_rmse"], 4),
                    f"{fmt(s['gaussian_seconds_per_epoch'], 2)} / {fmt(s['planar_20_seconds_per_epoch'], 2)}",
                    f"{fmt(s['gpy_median_seconds_per_evaluation'], 2)}, {s['gpy_objective_evaluations']}"])
    mean = {k: _mean([splits[n][k] for n in names]) for k in keys}
    rows.append(["mean", fmt(mean["gaussian_rmse"], 5), fmt(mean["planar_20_rmse"], 5), fmt(mean["gpy_rmse"], 4),
                 fmt(mean["bias_rmse"], 4), "", ""])
    g = [splits[n]["gaussian_rmse"] for n in names]
    p = [splits[n]["planar_20_rmse"] for n in names]
    rows.append(["Planar 20 − Gaussian [95 % interval over splits]", "", _interval(p, g), "", "", "", ""])
    rows.append(["Planar 20 vs Gaussian", "", verdict(p, g), "", "", "", ""])
    rows.append(["test log-lik. per rating, mean",
                 fmt(_mean([splits[n]["gaussian_test_loglik"] for n in names]), 4),
                 fmt(_mean([splits[n]["planar_20_test_loglik"] for n in names]), 4), "", "", "", ""])
    return markdown_table(["split", "Gaussian", "Planar 20", "GPy BGPLVM (missing data)", "user/item bias",
                           "s / epoch, Gaussian / Planar 20", "GPy s / evaluation (median), evaluations"], rows)


@generator("gplvf-b-speed")
def speed_b() -> str:
    splits = _b()
    ratios = [s["gpy_median_seconds_per_evaluation"] / s["gaussian_seconds_per_epoch"] for s in splits.values()]
    return (f"one GPy objective evaluation (which touches every row once) took {fmt(min(ratios), 1)}-"
            f"{fmt(max(ratios), 1)}x as long as one GPLVF epoch (Gaussian q(X))")


# ----------------------------------------------------------------------------------------------------------------
# protocol (c): Figure 4, test log-likelihood against flow length
# ----------------------------------------------------------------------------------------------------------------


@generator("gplvf-c")
def table_c() -> str:
    runs = {seed: load(path)["c"] for seed, path in C_FILE.items()}
    models = ["gaussian", "planar_5", "planar_10", "planar_20", "planar_30"]
    rows = []
    for m in models:
        ll = [runs[s][m]["test_loglik"] for s in sorted(runs)]
        rmse = [runs[s][m]["rmse"] for s in sorted(runs)]
        bound = [runs[s][m]["final_elbo"] for s in sorted(runs)]
        rows.append([NAMES[m]] + [fmt(v, 4) for v in ll] + [fmt(_mean(ll), 4), fmt(_mean(rmse), 4),
                                                               f"{_mean(bound):,.0f}".replace(",", " ")])
    base = [runs[s]["gaussian"]["test_loglik"] for s in sorted(runs)]
    for m in models[1:]:
        flow = [runs[s][m]["test_loglik"] for s in sorted(runs)]
        rows[models.index(m)].append(verdict(flow, base, lower_is_better=False))
    rows[0].append("")
    return markdown_table(["q(X)", "test log-lik. seed 0", "seed 1", "seed 2", "mean", "RMSE, mean",
                           "final training bound, mean", "flow vs Gaussian (log-lik., 3 seeds)"], rows)


@generator("gplvf-c-local-rate")
def table_c_local() -> str:
    files = [("the default (`--learning-rate 0.01`)", C_FILE[0]),
             ("`--local-learning-rate 0.05`", STORE + "/movielens_c_locallr0.05.json"),
             ("`--local-learning-rate 0.1`", STORE + "/movielens_c_locallr0.1.json")]
    rows = []
    for label, path in files:
        c = load(path)["c"]
        g, p = c["gaussian"], c["planar_20"]
        rows.append([label, f"{g['final_elbo']:,.0f}".replace(",", " "), f"{p['final_elbo']:,.0f}".replace(",", " "),
                     f"{p['final_elbo'] - g['final_elbo']:,.0f}".replace(",", " "),
                     fmt(g["test_loglik"], 4), fmt(p["test_loglik"], 4)])
    return markdown_table(["rows' (μ_n, s_n) rate, seed 0", "Gaussian bound", "Planar 20 bound",
                           "Planar 20 − Gaussian (nats)", "Gaussian test log-lik.", "Planar 20 test log-lik."], rows)


# ----------------------------------------------------------------------------------------------------------------
# the rows' own learning rate on protocol (a): validation users, then test users
# ----------------------------------------------------------------------------------------------------------------


@generator("gplvf-validation-local-rate")
def table_validation_local() -> str:
    gaussian = load(STORE + "/validation/last100_se_e150_lrcosine_inf8_cosine.json")["a"]["gaussian"]
    flows = load(STORE + "/validation/last100_se_e150_lrcosine_inf8_cosine_split_kl_flowlr0.001.json")["a"]
    local = load(STORE + "/validation/last100_lrcosine_inf8_cosine_split_kl_flowlr0.001_locallr0.1.json")["a"]
    default = {"gaussian": gaussian, "planar_20": flows["planar_20"], "planar_50": flows["planar_50"]}
    models = ["gaussian", "planar_20", "planar_50"]
    bound = lambda v: f"{v:,.0f}".replace(",", " ")  # noqa: E731
    return markdown_table(["validation users, seed 0", "Gaussian", "Planar 20", "Planar 50"], [
        ["RMSE, defaults"] + _bold_min([default[m]["rmse"] for m in models], 4),
        ["RMSE, `--local-learning-rate 0.1`"] + _bold_min([local[m]["rmse"] for m in models], 4),
        ["final training bound, defaults"] + [bound(default[m]["final_elbo"]) for m in models],
        ["final training bound, `--local-learning-rate 0.1`"] + [bound(local[m]["final_elbo"]) for m in models],
    ])


@generator("gplvf-test-local-rate")
def table_test_local() -> str:
    local = protocol_a(A_LOCAL)
    default = protocol_a()
    rows = []
    for m in ("gaussian", "planar_20"):
        cells = [fmt(v, 5) for v in local[m]["rmse"]]
        rows.append([NAMES[m]] + cells + [fmt(_mean(local[m]["rmse"]), 5), fmt(_mean(default[m]["rmse"]), 5),
                     fmt(_mean(local[m]["test_loglik"]), 4)])
    g, p = local["gaussian"]["rmse"], local["planar_20"]["rmse"]
    rows.append(["Planar 20 − Gaussian [95 % interval]", "", "", "", "", "", _interval(p, g), "", ""])
    rows.append(["Planar 20 vs Gaussian", "", "", "", "", "", verdict(p, g), "", ""])
    return markdown_table(["test users, `--local-learning-rate 0.1`"] + [f"seed {s}" for s in SEEDS]
                          + ["mean", "mean at the defaults (table (a))", "test log-lik. mean"], rows)


# ----------------------------------------------------------------------------------------------------------------
# amortised q(x_n)
# ----------------------------------------------------------------------------------------------------------------


@generator("gplvf-encoder")
def table_encoder() -> str:
    enc = load(STORE + "/movielens_a_encoder_seed0.json")["a"]
    per_row = load(A_DEFAULTS.format(seed=0))["a"]
    per_row_gaussian = load(A_GAUSSIAN.format(seed=0))["a"]["gaussian"]
    bound = lambda v: f"{v:,.0f}".replace(",", " ")  # noqa: E731
    g, p = enc["gaussian"], enc["planar_20"]
    return markdown_table(["seed 0, test users", "Gaussian", "Planar 20", "seconds for the 100 users"], [
        ["the encoder's q(x*), no optimisation", fmt(g["amortised"]["rmse"], 4), fmt(p["amortised"]["rmse"], 4),
         f"{fmt(g['amortised']['seconds'], 1)} / {fmt(p['amortised']['seconds'], 1)} (prediction included)"],
        ["q(x*) fitted from the encoder's output", fmt(g["rmse"], 4), fmt(p["rmse"], 4),
         f"{fmt(g['infer_seconds'], 1)} / {fmt(p['infer_seconds'], 1)} (the fit alone)"],
        ["per-row q(x_n), fitted (table (a), seed 0)", fmt(per_row_gaussian["rmse"], 4),
         fmt(per_row["planar_20"]["rmse"], 4), ""],
        ["final training bound, encoder", bound(g["final_elbo"]), bound(p["final_elbo"]), ""],
        ["final training bound, per-row", bound(per_row_gaussian["final_elbo"]),
         bound(per_row["planar_20"]["final_elbo"]), ""],
    ])


# ----------------------------------------------------------------------------------------------------------------
# how the defaults were chosen: validation users, and the test numbers seen on the way
# ----------------------------------------------------------------------------------------------------------------

#: (step, what was compared, validation file, models, the choice) in the order the runs were made
SELECTION = [
    ("1", "SE-ARD kernel, 150 epochs (random validation users)", "validation/se_e150.json", "kept"),
    ("1", "`--kernel se+linear`", "validation/sel_e150.json", ""),
    ("1", "`--epochs 400`", "validation/se_e400.json", ""),
    ("1", "`--epochs 75`", "validation/se_e75.json", ""),
    ("1", "`--infer-steps 1000`", "validation/se_e150_inf1000.json", ""),
    ("1", "`--kernel linear --num-inducing 10`", "validation/lin_m10_e150.json", ""),
    ("1", "`--natgrad-gamma 0.1`", "validation/se_e150_ng01.json", ""),
    ("1", "SE-ARD, validation seed 1", "validation/seed1_se_e150.json", "kept"),
    ("1", "`--kernel se+linear`, validation seed 1", "validation/seed1_sel_e150.json", ""),
    ("2", "diagonal base (validation users of the literal split)", "validation/last100_se_e150.json", "kept"),
    ("2", "`--base-covariance isotropic`", "validation/last100_isotropic_e150.json", ""),
    ("3", "q(x*) fit `--infer-samples 8 --infer-steps 1000 --infer-decay cosine`",
     "validation/last100_se_e150_inf8_cosine_pairs.json", "taken"),
    ("4", "`--lr-decay cosine`", "validation/last100_se_e150_lrcosine_inf8_cosine.json", "taken"),
    ("5", "`--num-samples 4`", "validation/last100_se_e150_lrcosine_inf8_cosine_s4.json", ""),
    ("5", "`--flow-learning-rate 0.001` (old planar layers)",
     "validation/last100_se_e150_lrcosine_inf8_cosine_flowlr0.001.json", ""),
    ("5", "`--local-learning-rate 0.05`", "validation/last100_se_e150_lrcosine_inf8_cosine_locallr0.05.json", ""),
    ("6", "identity-at-zero planar layers, plain Monte Carlo KL",
     "validation/last100_se_e150_lrcosine_inf8_cosine_identity_init.json", ""),
    ("6", "identity-at-zero layers, split KL, `--flow-learning-rate 0.001`",
     "validation/last100_se_e150_lrcosine_inf8_cosine_split_kl_flowlr0.001.json", "taken (today's defaults)"),
    ("7", "`--warm-start-epochs 100 --epochs 50`",
     "validation/last100_lrcosine_inf8_cosine_split_kl_flowlr0.001_warm100_e50.json", "not taken"),
    ("8", "`--local-learning-rate 0.1`", "validation/last100_lrcosine_inf8_cosine_split_kl_flowlr0.001_locallr0.1.json",
     "not taken (defaults frozen)"),
]

#: test-user runs in the order they were seen (step = the selection step they came after)
TEST_RUNS = [
    ("0", "first centred run, random test users, seed 0 (its rerun in the next row gave the same numbers)",
     ["movielens_a_seed0.json"]),
    ("1", "the step-1 defaults, random test users, seeds 0-2",
     ["movielens_a_seed0.json", "movielens_a_seed1.json", "movielens_a_seed2.json"]),
    ("1", "the step-1 defaults, test users 844-943, seeds 0-2",
     ["movielens_a_last100_seed0.json", "movielens_a_last100_seed1.json", "movielens_a_last100_seed2.json"]),
    ("2", "isotropic base, test users 844-943, seed 0", ["movielens_a_last100_seed0_isotropic.json"]),
    ("2", "isotropic base, random test users, seed 0", ["movielens_a_seed0_isotropic.json"]),
    ("3", "step-3 q(x*) fit, test users 844-943, seed 0", ["movielens_a_last100_seed0_inf8_cosine.json"]),
    ("4", "step-4 defaults, test users 844-943, seeds 0-2",
     ["movielens_a_last100_seed0_lrcosine_inf8_cosine.json", "movielens_a_last100_seed1_lrcosine_inf8_cosine.json",
      "movielens_a_last100_seed2_lrcosine_inf8_cosine.json"]),
    ("4", "step-4 defaults, seed 0, training seeds 1-4",
     [f"movielens_a_last100_seed0_train{t}_lrcosine_inf8_cosine.json" for t in (1, 2, 3, 4)]),
    ("4", "step-4 defaults, random test users, seeds 0-2",
     ["movielens_a_seed0_lrcosine_inf8_cosine.json", "movielens_a_seed1_lrcosine_inf8_cosine.json",
      "movielens_a_seed2_lrcosine_inf8_cosine.json"]),
    ("5", "`--local-learning-rate 0.05`, test users 844-943, seeds 0-2",
     [f"movielens_a_last100_seed{s}_lrcosine_inf8_cosine_locallr0.05.json" for s in (0, 1, 2)]),
    ("6", "today's defaults, test users 844-943, seeds 0-4 (table (a))",
     [A_DEFAULTS.format(seed=s)[len(STORE) + 1:] for s in SEEDS]),
    ("8", "`--local-learning-rate 0.1`, test users 844-943, seeds 0-4",
     [A_LOCAL.format(seed=s)[len(STORE) + 1:] for s in SEEDS]),
]


def _rmse(record: dict[str, dict], model: str) -> float | None:
    return record[model]["rmse"] if model in record else None


@generator("gplvf-selection")
def table_selection() -> str:
    step4 = load(f"{STORE}/validation/last100_se_e150_lrcosine_inf8_cosine.json")["a"]["gaussian"]
    rows = []
    for step, label, path, choice in SELECTION:
        a = load(f"{STORE}/{path}")["a"]
        gaussian = a.get("gaussian") or (step4 if int(step) >= 5 else None)
        gap = (f"{a['planar_20']['final_elbo'] - gaussian['final_elbo']:,.0f}".replace(",", " ")
               if gaussian and "planar_20" in a else "-")
        rows.append([step, label, fmt(_rmse(a, "gaussian"), 4), fmt(_rmse(a, "planar_20"), 4),
                     fmt(_rmse(a, "planar_50"), 4), gap, choice, f"`{path}`"])
    return markdown_table(["step", "candidate", "Gaussian", "Planar 20", "Planar 50",
                           "bound, Planar 20 − Gaussian (nats)", "choice", "file"], rows)


@generator("gplvf-test-history")
def table_test_history() -> str:
    rows = []
    for step, label, paths in TEST_RUNS:
        records = [load(f"{STORE}/{p}")["a"] for p in paths]
        if label.startswith("today's"):
            records = [dict(r) for r in records]
            for seed, r in zip(SEEDS, records):
                if "gaussian" not in r:
                    r["gaussian"] = load(A_GAUSSIAN.format(seed=seed))["a"]["gaussian"]
        cells = []
        for m in ("gaussian", "planar_20", "planar_50"):
            values = [_rmse(r, m) for r in records]
            cells.append(fmt(_mean(values), 4) if all(v is not None for v in values) else "-")
        rows.append([step, label] + cells + [str(len(paths))])
    return markdown_table(["after step", "test-user runs", "Gaussian", "Planar 20", "Planar 50", "files"], rows)


@generator("gplvf-warm-start")
def warm_start() -> str:
    warm = load(STORE + "/validation/last100_lrcosine_inf8_cosine_split_kl_flowlr0.001_warm100_e50.json")["a"]
    gain = [warm[m]["final_elbo"] - warm["gaussian"]["final_elbo"] for m in ("planar_20", "planar_50")]
    rmse = [warm[m]["rmse"] for m in ("gaussian", "planar_20", "planar_50")]
    return (f"started from a Gaussian trained for 100 epochs, Planar 20 and 50 end {gain[0]:.0f} and {gain[1]:.0f} "
            f"nats above the Gaussian's bound, yet their validation RMSE is {fmt(rmse[1], 4)} and "
            f"{fmt(rmse[2], 4)} against the Gaussian's {fmt(rmse[0], 4)}")


# ----------------------------------------------------------------------------------------------------------------
# speed, variance_by
# ----------------------------------------------------------------------------------------------------------------

SPEED_FILES = [
    ("before the pairwise bound, idle machine", "peers/gplvf_speed_idle.json"),
    ("before the pairwise bound, loaded machine", "peers/gplvf_speed.json"),
    ("pairwise bound, idle machine", "peers/gplvf_speed_pairs.json"),
    ("pairwise bound, overlapping a test run", "peers/gplvf_speed_2026-11-25.json"),
]


@generator("gplvf-speed")
def table_speed() -> str:
    rows = []
    for label, path in SPEED_FILES:
        s = load(f"{STORE}/{path}")
        steps = [r["ratio to Gaussian"] for r in s["step_seconds_vs_flow_length"] if r["flow length"]]
        dense = {r["bound"]: r for r in s.get("observed_pairs_vs_dense", [])}
        peer = dense.get("dense, masked (peer)", {})
        rows.append([label, fmt(s["gplvf_gaussian_seconds_per_epoch"], 2), fmt(s["gpy_seconds_per_epoch"], 2),
                     fmt(s["gpy_over_gplvf_ratio"], 1), f"{fmt(min(steps), 2)}-{fmt(max(steps), 2)}",
                     fmt(peer.get("s/step ratio"), 1), fmt(peer.get("infer_latent s ratio"), 1), f"`{path}`"])
    return markdown_table(["u1.base run", "GPLVF s / epoch", "GPy s / evaluation", "GPy / GPLVF",
                           "step, K = 5-50 planar layers / Gaussian", "dense masked / pairs, step",
                           "dense masked / pairs, `infer_latent`", "file"], rows)


SPEED_PASSES = "peers/gplvf_speed_passes.json"


@generator("gplvf-speed-passes")
def table_speed_passes() -> str:
    s = load(f"{STORE}/{SPEED_PASSES}")
    names = {"rows": "`RowSums()` (default)", "rows-autodiff": "`RowSums()`, variance gradient by autodiff (peer)",
             "pairs": "`PerPair()`", "outputs": "`PerOutput()`"}
    rows = [[r["batch size"], names[r.get("variance_by", "pairs")], r["steps/pass"], fmt(r["tf.function s/pass"], 3),
             fmt(r["XLA s/pass"], 3), fmt(r["GPy s/pass"], 2), fmt(r["GPy / default"], 1), fmt(r["GPy / best"], 1)]
            for r in s["passes_summary"]]
    return markdown_table(["batch size", "`variance_by`", "steps / pass", "GPLVF s / pass, `tf.function` step (default)",
                           "GPLVF s / pass, XLA step (`jit_compile=True`)", "GPy s / evaluation",
                           "GPy / GPLVF `tf.function`", "GPy / GPLVF best"], rows)


@generator("gplvf-speed-passes-ratios")
def speed_passes_ratios() -> str:
    """RowSums against PerPair and XLA against tf.function, per batch size, from the per-pass run."""
    summary = load(f"{STORE}/{SPEED_PASSES}")["passes_summary"]
    by = {(r["batch size"], r["variance_by"]): r for r in summary}
    sizes = sorted({b for b, _ in by})
    pairs = ", ".join(f"{fmt(by[b, 'rows']['tf.function s/pass'] / by[b, 'pairs']['tf.function s/pass'], 2)}x at "
                      f"batch {b}" for b in sizes)
    xla = [by[b, "rows"]["XLA s/pass"] / by[b, "rows"]["tf.function s/pass"] for b in sizes]
    written = ", ".join(
        " / ".join(f"{fmt(by[b, 'rows-autodiff'][k] / by[b, 'rows'][k], 2)}x" for k in ("tf.function s/pass", "XLA s/pass"))
        + f" at batch {b}" for b in sizes if (b, "rows-autodiff") in by
    )
    gpy = ", ".join(f"{fmt(by[b, 'rows']['GPy / default'], 1)}x at batch {b}" for b in sizes)
    best = ", ".join(f"{fmt(by[b, 'rows']['GPy / best'], 1)}x at batch {b}" for b in sizes)
    return (f"with `tf.function` steps a pass of `RowSums()` takes {pairs} the time of `PerPair()`'s; GPLVF's default "
            f"pass is faster than GPy's evaluation by {gpy}, and its best pass by {best}; the XLA step of `RowSums()` "
            f"takes {fmt(min(xla), 1)}-{fmt(max(xla), 1)}x the `tf.function` step's time"
            + (f"; the peer that differentiates the variance term by autodiff takes {written} the time of "
               "`RowSums()`'s written-out gradient (`tf.function` / XLA step)" if written else ""))


PACKED_LOWER = "peers/gplvf_packed_lower.json"


@generator("gplvf-packed-lower")
def table_packed_lower() -> str:
    """The step with the packed fill and KL against GPflow's forms, side by side, per batch size."""
    rows = [[r["batch size"], fmt(1e3 * r["ours s/step"], 1), fmt(1e3 * r["GPflow's forms s/step"], 1),
             fmt(r["GPflow's forms / ours"], 2), f"{r['bound relative difference']:.0e}",
             f"{r['gradient relative difference']:.0e}"] for r in load(f"{STORE}/{PACKED_LOWER}")["rows"]]
    return markdown_table(["batch size", "packed fill and KL, ms / step", "GPflow's fill and `gauss_kl`, ms / step",
                           "GPflow's / packed", "bound, relative difference",
                           "gradients, largest relative difference"], rows)


@generator("gplvf-variance-by")
def table_variance_by() -> str:
    rows = []
    for r in load(STORE + "/peers/gplvf_variance_by.json")["rows"]:
        times = [r["pairs s/step"], r["outputs s/step"], r["GPflow dense s/step"]]
        rows.append([r["data"], r["M"], f"{fmt(100 * r['observed fraction'], 0)} %"]
                    + [f"{c} s" for c in _bold_min(times, 3)] + [fmt(r["pairs / outputs"], 2), r["auto picks"]])
    return markdown_table(["data", "M", "observed", "`PerPair()`", "`PerOutput()`",
                           "GPflow's dense conditional, masked", "pairs / outputs", "`variance_by=None` picks"], rows)


# ----------------------------------------------------------------------------------------------------------------
# images: MNIST and the tour's digits
# ----------------------------------------------------------------------------------------------------------------


def _images_rows(r: dict, flow_label: str) -> list[list[str]]:
    bound = lambda v: f"{v:,.1f}".replace(",", " ") if abs(v) < 1000 else f"{v:,.0f}".replace(",", " ")  # noqa: E731
    return [["Gaussian", fmt(r["gaussian_imputation_rmse"], 4), bound(r["gaussian_final_elbo"]),
             fmt(r["gaussian_seconds_per_epoch"], 2)],
            [flow_label, fmt(r["flow_imputation_rmse"], 4), bound(r["flow_final_elbo"]),
             fmt(r["flow_seconds_per_epoch"], 2)],
            ["column means", fmt(r["mean_imputation_rmse"], 4), "", ""]]


@generator("gplvf-mnist")
def table_mnist() -> str:
    r = load(STORE + "/mnist_defaults_e200.json")
    return markdown_table(["q(X)", "imputation RMSE of the missing pixels", "final training bound", "s / epoch"],
                          _images_rows(r, "Planar 10"))


@generator("gplvf-mnist-flow-rate")
def table_mnist_flow_rate() -> str:
    shared = load(STORE + "/mnist_e20_m30_split_kl.json")
    own = load(STORE + "/mnist_e20_m30_split_kl_flowlr0.001.json")
    bound = lambda v: f"{v:,.0f}".replace(",", " ")  # noqa: E731
    return markdown_table(["20 epochs, M = 30", "final training bound", "imputation RMSE"], [
        ["Gaussian", bound(own["gaussian_final_elbo"]), fmt(own["gaussian_imputation_rmse"], 4)],
        ["Planar 10, `--flow-learning-rate 0.01` (the shared rate)", bound(shared["flow_final_elbo"]),
         fmt(shared["flow_imputation_rmse"], 4)],
        ["Planar 10, `--flow-learning-rate 0.001`", bound(own["flow_final_elbo"]), fmt(own["flow_imputation_rmse"], 4)],
    ])


@generator("gplvf-tour")
def table_tour() -> str:
    r = load(STORE + "/tour.json")["gplvf_digits"]
    return markdown_table(["q(X)", "imputation RMSE of the missing pixels", "final training bound", "s / epoch"],
                          _images_rows(r, "Planar 4"))


@generator("gplvf-tour-summary")
def tour_summary() -> str:
    r = load(STORE + "/tour.json")["gplvf_digits"]
    gain = r["flow_final_elbo"] - r["gaussian_final_elbo"]
    diff = r["flow_imputation_rmse"] - r["gaussian_imputation_rmse"]
    lower = "Gaussian" if diff > 0 else "flow"
    return (f"One run, one seed: the flow's bound is {abs(gain):.0f} nats {'above' if gain > 0 else 'below'} the "
            f"Gaussian's, and the {lower}'s imputation RMSE is lower by {fmt(abs(diff), 4)}; one seed cannot say "
            f"whether that difference is more than noise.")


# ----------------------------------------------------------------------------------------------------------------
# README
# ----------------------------------------------------------------------------------------------------------------


@generator("gplvf-readme")
def table_readme() -> str:
    runs = protocol_a()
    base = runs["gaussian"]["rmse"]
    paper = _paper()
    b = _b()
    gpy = _mean([s["gpy_rmse"] for s in b.values()])
    gplvf_b = _mean([s["gaussian_rmse"] for s in b.values()])
    command = "`python -m experiments.gplvf_movielens --protocol a --flows 0,20,50 --no-gpy --seed S`"
    rows = [["GPLVF, Gaussian q(X)", fmt(_mean(base), 5), "", command]]
    for m in ("planar_20", "planar_50"):
        rows.append([f"GPLVF, {NAMES[m]}", fmt(_mean(runs[m]["rmse"]), 5),
                     f"{_interval(runs[m]['rmse'], base)}: {verdict(runs[m]['rmse'], base)}", "same runs"])
    rows.append(["user/item bias baseline", fmt(_mean(runs["bias_baseline"]["rmse"]), 4), "", "same runs"])
    rows.append(["the paper, Table 2 (Gaussian / Planar 20 / Planar 50)",
                 " / ".join(fmt(paper[m], 4) for m in ("gaussian", "planar_20", "planar_50")), "", ""])
    rows.append(["GPy `BayesianGPLVMMiniBatch(missing_data=True)`, u1-u5 splits",
                 f"{fmt(gpy, 4)} (GPLVF Gaussian there: {fmt(gplvf_b, 4)})", "",
                 "`python -m experiments.gplvf_movielens --protocol b --gpy-splits u1,u2,u3,u4,u5`"])
    return markdown_table(["model", "RMSE", "flow − Gaussian [95 % interval over seeds]", "command"], rows)


STEP_PROFILE = "gplvf_step_profile.json"


@generator("gplvf-step-profile")
def table_step_profile() -> str:
    """Each part of the compiled step, ms per step and share of the op time, per batch size."""
    runs = load(f"{STORE}/{STEP_PROFILE}")["by_batch_size"]
    seconds = [dict(run["parts"]) for run in runs]
    rows = [[part, *(f"{fmt(1e3 * by_part[part], 2)} ({fmt(100 * by_part[part] / run['op_seconds_per_step'], 0)} %)"
                     for run, by_part in zip(runs, seconds))] for part, _ in runs[0]["parts"]]
    rows.append([f"the parts over all D outputs (the first {len(runs[0]['per_output_parts'])})",
                 *(f"{fmt(100 * run['per_output_share'], 0)} %" for run in runs)])
    rows.append(["all ops / wall time per step, ms",
                 *(f"{fmt(1e3 * run['op_seconds_per_step'], 1)} / {fmt(1e3 * run['wall_seconds_per_step'], 1)}"
                   for run in runs)])
    return markdown_table(["part of the step", *(f"batch {run['batch_size']}, ms (share)" for run in runs)], rows)


@generator("gplvf-step-profile-share")
def step_profile_share() -> str:
    runs = load(f"{STORE}/{STEP_PROFILE}")["by_batch_size"]
    shares = ", ".join(f"{fmt(100 * run['per_output_share'], 0)} % at batch {run['batch_size']}" for run in runs)
    return f"the parts over all D outputs take {shares} of the step's op time"
