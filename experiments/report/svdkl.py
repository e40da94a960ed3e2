"""Generated parts of the svdkl pages (see experiments.report): docs/svdkl/results.md, docs/svdkl/airline.md and the
SV-DKL table of README.md, from the files in docs/svdkl/results/. The paper's numbers come from
experiments/paper_values.py and sit in columns labelled as the paper's."""
import math
from collections.abc import Sequence

import numpy as np

from experiments.paper_values import SVDKL as PAPER
from experiments.report import fmt, generator, load, markdown_table

STORE = "docs/svdkl/results/"
STAGE = {"DNN": "network", "CNN": "network", "DNN+GP": "gp", "CNN+GP": "gp", "SV-DKL": "joint"}

# --------------------------------------------------------------------------------------------------------------------
# The test runs behind the tables, by name: (label, dataset, files).
# --------------------------------------------------------------------------------------------------------------------
ADULT_KEEP = [f"svdkl_adult_cv5_indicators_keep_seed{s}.json" for s in range(3)]
ADULT_STD = ["svdkl_adult_cv5.json", "svdkl_adult_cv5_seed1.json", "svdkl_adult_cv5_seed2.json"]
ADULT_GP_LR = [f"svdkl_adult_cv5_joint_gp_lr_seed{s}.json" for s in range(3)]
MNIST_SELECTED = ["svdkl_mnist_selected.json", "svdkl_mnist_selected_seed1.json", "svdkl_mnist_selected_seed2.json"]
MNIST_B5000 = [f"svdkl_mnist_b5000_seed{s}.json" for s in range(3)]

SETTINGS: dict[str, tuple[str, str, list[str]]] = {
    "adult-cv-keep": ("Adult, 5-fold CV, seeds 0 / 1 / 2 (3/5/3)", "adult", ADULT_KEEP),
    "adult-test-keep": ("Adult, UCI test file (3/5/3)", "adult", ["svdkl_adult_indicators_keep.json"]),
    "connect4-cv-keep": ("Connect-4, 5-fold CV, seed 0 (8/3/5)", "connect4",
                         ["svdkl_connect4_cv5_indicators_keep.json"]),
    "connect4-split-keep": ("Connect-4, 80/20 split (8/3/5)", "connect4", ["svdkl_connect4_indicators_keep.json"]),
    "adult-cv-std": ("Adult, 5-fold CV, seeds 0 / 1 / 2 (3/5/3)", "adult", ADULT_STD),
    "adult-cv-std-gp-lr": ("Adult, 5-fold CV, seeds 0 / 1 / 2 (3/5/3), `--joint-gp-lr 1e-3`", "adult", ADULT_GP_LR),
    "adult-test-std": ("Adult, UCI test file (3/5/3)", "adult", ["svdkl_adult_3_5_3.json"]),
    "connect4-cv-std": ("Connect-4, 5-fold CV, seed 0 (8/3/5)", "connect4", ["svdkl_connect4_cv5.json"]),
    "connect4-split-std": ("Connect-4, 80/20 split (8/3/5)", "connect4", ["svdkl_connect4.json"]),
    "mnist-e10": ("MNIST, LeNet (10/2/3, joint lr 1e-4), seed 0", "mnist", ["svdkl_mnist_e10.json"]),
    "mnist-selected": ("MNIST, LeNet (10/2/4, joint lr 3e-4), seeds 0 / 1 / 2", "mnist", MNIST_SELECTED),
    "mnist-b5000": ("MNIST, LeNet (10/2/8, joint minibatch 5000, joint lr 3e-4), seeds 0 / 1 / 2", "mnist",
                    MNIST_B5000),
}


def _runs(files: Sequence[str]) -> list[list[dict]]:
    """Per file, its runs (one per fold; one for a single split); each run: {model: row, 'seconds': {...}}."""
    out = []
    for name in files:
        record = load(STORE + name)
        runs = []
        if "folds" in record and isinstance(record["folds"], list):
            for fold in record["folds"]:
                run = {row["model"]: row for row in fold["rows"]}
                run["seconds"] = fold.get("median_seconds_per_epoch", {})
                runs.append(run)
        else:
            run = {row["model"]: row for row in record["rows"]}
            run["seconds"] = record.get("median_seconds_per_epoch", {})
            runs.append(run)
        out.append(runs)
    return out


def _models(dataset: str) -> list[str]:
    return ["CNN", "CNN+GP", "SV-DKL"] if dataset == "mnist" else ["DNN", "DNN+GP", "SV-DKL"]


def _paper(dataset: str, model: str) -> tuple[str, str]:
    if dataset == "mnist":
        return fmt(PAPER["table3_accuracy"]["mnist"].get(model), 4), fmt(PAPER["table6_nlp"]["mnist"].get(model), 3)
    return fmt(PAPER["table2_accuracy"][dataset].get(model), 3), fmt(PAPER["table5_nlp"][dataset].get(model), 3)


def _mean_sd(values: Sequence[float], digits: int = 4) -> str:
    values = np.asarray(values, dtype=float)
    if len(values) == 1:
        return fmt(values[0], digits)
    return f"{fmt(values.mean(), digits)} ± {fmt(values.std(), digits)}"


def _three_way_rows(key: str) -> list[list[str]]:
    label, dataset, files = SETTINGS[key]
    per_file = _runs(files)
    runs = [run for file_runs in per_file for run in file_runs]
    rows = []
    for i, model in enumerate(_models(dataset)):
        accuracy = [run[model]["accuracy"] for run in runs]
        nlp = [run[model]["nlp"] for run in runs]
        seconds = [run["seconds"][STAGE[model]] for run in runs if STAGE[model] in run["seconds"]]
        per_seed = " / ".join(fmt(np.mean([run[model]["accuracy"] for run in file_runs]), 4)
                              for file_runs in per_file) if len(per_file) > 1 else "-"
        paper_accuracy, paper_nlp = _paper(dataset, model)
        rows.append([label if i == 0 else "", len(runs) if i == 0 else "", model, _mean_sd(accuracy), per_seed,
                     fmt(float(np.mean(nlp)), 4), fmt(float(np.median(seconds)), 1) if seconds else "-",
                     paper_accuracy, paper_nlp])
    return rows


def _three_way_table(keys: Sequence[str]) -> str:
    header = ["data, split (epochs network/GP/joint)", "runs", "model", "accuracy (mean ± sd over runs)",
              "accuracy per seed", "NLP", "s / epoch (median)", "paper's accuracy", "paper's NLP"]
    return markdown_table(header, [row for key in keys for row in _three_way_rows(key)])


@generator("svdkl-uci-table")
def uci_table() -> str:
    """Adult and Connect-4 with the default preprocessing (one-hot columns kept at 0/1)."""
    return _three_way_table(["adult-cv-keep", "adult-test-keep", "connect4-cv-keep", "connect4-split-keep"])


@generator("svdkl-uci-standardised-table")
def uci_standardised_table() -> str:
    """Adult and Connect-4 with every column standardised (the runs before 2026-11-25)."""
    return _three_way_table(["adult-cv-std", "adult-cv-std-gp-lr", "adult-test-std", "connect4-cv-std",
                             "connect4-split-std"])


@generator("svdkl-mnist-table")
def mnist_table() -> str:
    return _three_way_table(["mnist-e10", "mnist-selected", "mnist-b5000"])


# --------------------------------------------------------------------------------------------------------------------
# Paired differences (SV-DKL − DNN over the same runs).
# --------------------------------------------------------------------------------------------------------------------
def _paired(key: str, model_a: str = "SV-DKL", model_b: str = "") -> dict:
    """Differences of ``model_a`` − ``model_b`` (default the DNN/CNN) over the runs of setting ``key``."""
    _, dataset, files = SETTINGS[key]
    model_b = model_b or _models(dataset)[0]
    runs = [run for file_runs in _runs(files) for run in file_runs]
    diff = np.array([run[model_a]["accuracy"] - run[model_b]["accuracy"] for run in runs])
    return _summary(diff)


def _summary(diff: np.ndarray) -> dict:
    n = len(diff)
    out = {"n": n, "mean": float(diff.mean()), "ahead": int((diff > 0).sum()), "tied": int((diff == 0).sum()),
           "behind": int((diff < 0).sum()), "se": None, "low": None, "high": None}
    if n > 1:
        from scipy import stats

        se = float(diff.std(ddof=1) / math.sqrt(n))
        half = float(stats.t.ppf(0.975, n - 1)) * se
        out.update(se=se, low=out["mean"] - half, high=out["mean"] + half)
    return out


def _verdict(p: dict) -> str:
    if p["low"] is None:
        return "one split: no interval"
    if p["low"] > 0:
        return "above"
    if p["high"] < 0:
        return "below"
    return "no difference (interval covers 0)"


def _signed(value: float, digits: int = 4) -> str:
    return ("+" if value >= 0 else "−") + fmt(abs(value), digits)


@generator("svdkl-paired-table")
def paired_table() -> str:
    """SV-DKL − DNN accuracy over the same folds / seeds, for every test setting."""
    rows = []
    for key in ["adult-cv-keep", "adult-test-keep", "connect4-cv-keep", "connect4-split-keep", "adult-cv-std",
                "adult-cv-std-gp-lr", "adult-test-std", "connect4-cv-std", "connect4-split-std", "mnist-e10",
                "mnist-selected", "mnist-b5000"]:
        label, dataset, _ = SETTINGS[key]
        p = _paired(key)
        interval = "-" if p["low"] is None else f"[{_signed(p['low'])}, {_signed(p['high'])}]"
        rows.append([label, "one-hot kept at 0/1" if "keep" in key else ("-" if dataset == "mnist" else "standardised"),
                     p["n"], _signed(p["mean"]), interval, f"{p['ahead']} / {p['tied']} / {p['behind']}", _verdict(p)])
    header = ["setting", "one-hot columns", "runs", "SV-DKL − DNN accuracy (mean)", "95% t-interval",
              "runs ahead / tied / behind", "SV-DKL vs DNN"]
    return markdown_table(header, rows)


def _sentence_paired(key: str, model_b: str = "") -> str:
    p = _paired(key, model_b=model_b)
    text = f"{_signed(p['mean'])}"
    if p["se"] is not None:
        text += f" (standard error {fmt(p['se'], 4)}, {p['n']} runs)"
    return text


@generator("svdkl-adult-keep-vs-dnn")
def adult_keep_vs_dnn() -> str:
    p = _paired("adult-cv-keep")
    return (f"SV-DKL − DNN over the 15 folds: {_sentence_paired('adult-cv-keep')}, SV-DKL ahead in {p['ahead']} of "
            f"{p['n']} folds; {_verdict(p)}.")


@generator("svdkl-adult-keep-vs-std")
def adult_keep_vs_std() -> str:
    """SV-DKL with one-hot columns kept minus SV-DKL with them standardised, same folds and network seeds."""
    keep = [run["SV-DKL"]["accuracy"] for f in _runs(ADULT_KEEP) for run in f]
    std = [run["SV-DKL"]["accuracy"] for f in _runs(ADULT_STD) for run in f]
    p = _summary(np.array(keep) - np.array(std))
    return (f"SV-DKL over the 15 folds: {_mean_sd(keep)} with one-hot columns kept against {_mean_sd(std)} with them "
            f"standardised; fold by fold {_signed(p['mean'])} (standard error {fmt(p['se'], 4)}), {_verdict(p)}.")


@generator("svdkl-adult-gp-lr-vs-default")
def adult_gp_lr_vs_default() -> str:
    gp_lr = [run["SV-DKL"]["accuracy"] for f in _runs(ADULT_GP_LR) for run in f]
    std = [run["SV-DKL"]["accuracy"] for f in _runs(ADULT_STD) for run in f]
    p = _summary(np.array(gp_lr) - np.array(std))
    return (f"SV-DKL {_mean_sd(gp_lr)} with `--joint-gp-lr 1e-3` against {_mean_sd(std)} without it over the same "
            f"15 folds; fold by fold {_signed(p['mean'])} (standard error {fmt(p['se'], 4)}), {_verdict(p)}.")


@generator("svdkl-mnist-floor")
def mnist_floor() -> str:
    sel = [f[0]["SV-DKL"]["accuracy"] for f in _runs(MNIST_SELECTED)]
    big = [f[0]["SV-DKL"]["accuracy"] for f in _runs(MNIST_B5000)]
    floor = PAPER["table3_accuracy"]["mnist"]["SV-DKL"]
    return (f"SV-DKL's mean over seeds 0-2 is {fmt(np.mean(sel), 4)} with the joint minibatch of 256 and "
            f"{fmt(np.mean(big), 4)} with 5000, against the paper's {fmt(floor, 4)}.")


# --------------------------------------------------------------------------------------------------------------------
# Selection runs (training data only).
# --------------------------------------------------------------------------------------------------------------------
DEFAULT_CANDIDATE = {"network_epochs": 3, "gp_epochs": 5, "joint_epochs": 3, "joint_learning_rate": 1e-4,
                     "batch_size": 256}


def _config_text(config: dict) -> str:
    changed = {k: v for k, v in config.items() if DEFAULT_CANDIDATE.get(k, object()) != v}
    return ", ".join(f"`{k}={v}`" for k, v in changed.items()) or "the default (3/5/3, joint lr `1e-4`, batch 256)"


@generator("svdkl-adult-selection-table")
def adult_selection_table() -> str:
    rows = []
    for index, row in enumerate(load(STORE + "svdkl_adult_schedule_selection.json")["rows"]):
        rows.append([index, _config_text(row["config"]), fmt(row["dnn"]["accuracy"], 4),
                     fmt(row["dnn_gp"]["accuracy"], 4), fmt(row["svdkl"]["accuracy"], 4)])
    return markdown_table(["candidate", "change from the default", "DNN", "DNN+GP", "SV-DKL"], rows)


@generator("svdkl-adult-selection-cv5-table")
def adult_selection_cv5_table() -> str:
    records = load(STORE + "svdkl_adult_schedule_selection_cv5.json")["rows"]
    base = next(r for r in records if r["candidate"] == 0)

    def folds(row, model):
        return np.array([f[model]["accuracy"] for f in row["per_fold"]])

    def paired(a, b):
        d = a - b
        return f"{_signed(float(d.mean()))} ± {fmt(float(d.std(ddof=1) / math.sqrt(len(d))), 4)}"

    rows = []
    for row in records:
        first = row["candidate"] == 0
        rows.append([row["candidate"], _config_text(row["config"]), fmt(row["dnn"]["accuracy"], 4),
                     fmt(row["svdkl"]["accuracy"], 4), paired(folds(row, "svdkl"), folds(row, "dnn")),
                     "-" if first else paired(folds(row, "dnn"), folds(base, "dnn")),
                     "-" if first else paired(folds(row, "svdkl"), folds(base, "svdkl"))])
    header = ["candidate", "change from the default", "DNN", "SV-DKL", "SV-DKL − DNN",
              "DNN − candidate 0's DNN", "SV-DKL − candidate 0's SV-DKL"]
    note = "Differences: mean over the 5 inner folds ± standard error, fold by fold."
    return markdown_table(header, rows) + "\n\n" + note


@generator("svdkl-mnist-selection-table")
def mnist_selection_table() -> str:
    rows = []
    for name, label in [("svdkl_mnist_schedule_selection.json", "joint minibatch 256"),
                        ("svdkl_mnist_schedule_selection_cosine.json", "joint minibatch 256, cosine network lr"),
                        ("svdkl_mnist_schedule_selection_b5000.json", "joint minibatch 5000")]:
        record = load(STORE + name)
        for i, joint in enumerate(record["joint"]):
            curve = [p["accuracy"] for p in joint["per_epoch"]]
            best = int(np.argmax(curve))
            rows.append([label if i == 0 else "", fmt(record["dnn"]["accuracy"], 4) if i == 0 else "",
                         fmt(record["dnn_gp"]["accuracy"], 4) if i == 0 else "", f"`{joint['joint_learning_rate']:g}`",
                         f"{fmt(min(curve), 4)} - {fmt(max(curve), 4)}", f"{fmt(curve[best], 4)} at epoch {best + 1}"])
        b = record["best"]
        rows[-len(record["joint"])][0] += f" (chosen: lr `{b['joint_learning_rate']:g}` × {b['joint_epochs']} epochs)"
    header = ["selection run (validation: 10 000 training images)", "CNN", "CNN+GP", "joint lr",
              "SV-DKL over the joint epochs", "best"]
    return markdown_table(header, rows)


# --------------------------------------------------------------------------------------------------------------------
# Speed benchmark.
# --------------------------------------------------------------------------------------------------------------------
@generator("svdkl-speed-table")
def speed_table() -> str:
    record = load(STORE + "svdkl_speed.json")
    sizes = [str(m) for m in record["grid_sizes"]]
    first, last = sizes[0], sizes[-1]
    gp = record.get("gpytorch") or {}

    def line(label, times):
        cells = [fmt(times[m] * 1e3, 0) for m in sizes]
        return [label, *cells, f"{fmt(times[last] / times[first], 2)}×",
                f"{fmt(times[first] / record['network_s'], 2)}×"]

    rows = [["plain network (gpflow_ext / GPyTorch)",
             f"{fmt(record['network_s'] * 1e3, 0)} / {fmt(gp['network'] * 1e3, 0) if gp else '-'}",
             *[""] * (len(sizes) - 1), "", ""],
            line("SV-DKL, circulant prior (FFT)", record["circulant"]),
            line("SV-DKL, Toeplitz prior (Cholesky)", record["grid"]),
            line("SVGP-style inducing points on the features", record["points"])]
    if gp:
        row = line("GPyTorch SV-DKL (`GridInterpolationVariationalStrategy`)", gp["svdkl"])
        row[-1] = f"{fmt(gp['svdkl'][first] / gp['network'], 2)}× (of its network)"
        rows.append(row)
    header = ["step [ms]", *[f"m = {m}" for m in sizes], f"m = {last} / m = {first}", f"m = {first} / network"]
    return markdown_table(header, rows)


@generator("svdkl-speed-peer")
def speed_peer() -> str:
    r = load(STORE + "svdkl_speed.json")["ratios"]
    return (f"GPyTorch's step is {fmt(r['gpytorch_over_gpflow_ext_svdkl_m70'], 1)}× ours (Toeplitz) at m = 70 and "
            f"{fmt(r['gpytorch_over_gpflow_ext_circulant_m2000'], 1)}× the circulant model's at m = 2000.")


# --------------------------------------------------------------------------------------------------------------------
# Airline (Table 1 / 4, Figure 2a-b).
# --------------------------------------------------------------------------------------------------------------------
def _ms(stat: dict, digits: int = 4) -> str:
    return f"{fmt(stat['mean'], digits)} ± {fmt(stat['sd'], digits)}"


@generator("svdkl-airline-table1")
def airline_table1() -> str:
    record = load(STORE + "svdkl_airline.json")
    ours = {row["model"]: row for row in record["table1"]}
    acc, nlp, hours = PAPER["table1_airline_accuracy"], PAPER["table4_airline_nlp"], PAPER["table1_airline_hours"]
    rows = []
    for model in ["KLSP-GP", "DNN", "DNN+GP", "SV-DKL", "DNN+"]:
        row = ours.get(model)
        mine = [_ms(row["accuracy"]), _ms(row["nlp"]), _ms(row["seconds_per_epoch"], 1),
                _ms(row["train_seconds"], 0)] if row else ["-"] * 4
        rows.append([model, *mine, fmt(acc.get(model), 4 if model == "DNN+GP" else 3), fmt(nlp.get(model), 3),
                     fmt(hours.get(model), 2)])
    rows.append(["majority class", _ms(record["majority_rate"]), "-", "-", "-", "not stated", "-", "-"])
    header = ["model", "accuracy", "NLP", "s / epoch", "training time (s)", "paper's accuracy", "paper's NLP",
              "paper's time (h)"]
    return markdown_table(header, rows)


def _airline_full_runs():
    record = load(STORE + "svdkl_airline.json")
    return [run for run in record["runs"] if run["fraction"] == 1.0]


@generator("svdkl-airline-seeds-table")
def airline_seeds_table() -> str:
    rows = []
    for run in sorted(_airline_full_runs(), key=lambda r: r["seed"]):
        m = run["models"]
        rows.append([run["seed"], *[fmt(m[k]["accuracy"], 4) for k in ("DNN", "DNN+GP", "SV-DKL")],
                     _signed(m["SV-DKL"]["accuracy"] - m["DNN"]["accuracy"]),
                     _signed(m["SV-DKL"]["nlp"] - m["DNN"]["nlp"]), fmt(run["majority_rate"], 4)])
    return markdown_table(["seed", "DNN", "DNN+GP", "SV-DKL", "SV-DKL − DNN accuracy", "SV-DKL − DNN NLP",
                           "majority class"], rows)


@generator("svdkl-airline-gap")
def airline_gap() -> str:
    runs = _airline_full_runs()
    d_acc = np.mean([r["models"]["SV-DKL"]["accuracy"] - r["models"]["DNN"]["accuracy"] for r in runs])
    d_nlp = np.mean([r["models"]["SV-DKL"]["nlp"] - r["models"]["DNN"]["nlp"] for r in runs])
    acc, nlp = PAPER["table1_airline_accuracy"], PAPER["table4_airline_nlp"]
    return (f"SV-DKL − DNN, mean over the seeds: {_signed(d_acc, 3)} accuracy, {_signed(d_nlp, 3)} NLP "
            f"(the paper's: {_signed(acc['SV-DKL'] - acc['DNN'], 3)}, {_signed(nlp['SV-DKL'] - nlp['DNN'], 3)}).")


@generator("svdkl-airline-figure2-table")
def airline_figure2_table() -> str:
    record = load(STORE + "svdkl_airline.json")
    batches: dict[float, set] = {}
    for run in record["runs"]:
        batches.setdefault(run["fraction"], set()).add(run["batch_size"])
    by_fraction: dict[float, dict[str, dict]] = {}
    for row in record["figure2"]:
        by_fraction.setdefault(row["fraction"], {})[row["model"]] = row
    rows = []
    for fraction in sorted(by_fraction):
        m = by_fraction[fraction]
        rows.append([fmt(fraction, 4), m["DNN"]["n_train"], ", ".join(str(b) for b in sorted(batches[fraction])),
                     *[_ms(m[k]["accuracy"]) if m[k]["accuracy"]["n"] > 1 else fmt(m[k]["accuracy"]["mean"], 4)
                       for k in ("DNN", "DNN+GP", "SV-DKL")],
                     _signed(m["SV-DKL"]["accuracy"]["mean"] - m["DNN"]["accuracy"]["mean"]),
                     fmt(m["DNN"]["train_seconds"]["mean"], 0), fmt(m["SV-DKL"]["train_seconds"]["mean"], 0),
                     ", ".join(str(s) for s in m["DNN"]["seeds"])])
    header = ["fraction", "n", "batch", "DNN acc", "DNN+GP acc", "SV-DKL acc", "SV-DKL − DNN", "DNN time (s)",
              "SV-DKL time (s)", "seeds"]
    return markdown_table(header, rows)


# --------------------------------------------------------------------------------------------------------------------
# Diabetes (Table 2 / Table 5 row).
# --------------------------------------------------------------------------------------------------------------------
def _diabetes(name: str, with_paper: bool) -> str:
    record = load(STORE + f"svdkl_diabetes_{name}.json")
    ours = {row["model"]: row for row in record["summary"]}
    acc, nlp = PAPER["table2_accuracy"]["diabetes"], PAPER["table5_nlp"]["diabetes"]
    models = (["SVM"] if with_paper else []) + ["DNN", "DNN+GP", "SV-DKL"]
    rows = []
    for model in models:
        row = ours.get(model)
        mine = [_ms(row["accuracy"]), _ms(row["nlp"]), _ms(row["seconds_per_epoch"], 1)] if row else ["-"] * 3
        rows.append([model, *mine] + ([fmt(acc.get(model), 3), fmt(nlp.get(model), 3)] if with_paper else []))
    rows.append(["majority class", _ms(record["majority_rate"]), "-", "-"] + (["-", "-"] if with_paper else []))
    header = ["model", "accuracy", "NLP", "s / epoch"] + (["paper's accuracy", "paper's NLP"] if with_paper else [])
    return markdown_table(header, rows)


def _diabetes_folds(name: str) -> str:
    record = load(STORE + f"svdkl_diabetes_{name}.json")
    rows = []
    for fold in record["folds"]:
        m = fold["models"]
        rows.append([fold["fold"] + 1, *[fmt(m[k]["accuracy"], 4) for k in ("DNN", "DNN+GP", "SV-DKL")],
                     fmt(fold["majority_rate"], 4), _signed(m["SV-DKL"]["accuracy"] - m["DNN"]["accuracy"])])
    return markdown_table(["fold", "DNN", "DNN+GP", "SV-DKL", "majority class", "SV-DKL − DNN"], rows)


for _name, _paper_columns in [("readmitted_30d", True), ("readmitted", False), ("readmitted_grouped", False),
                              ("readmitted_30d_grouped", True)]:
    _slug = _name.replace("_", "-")
    generator(f"svdkl-diabetes-{_slug}-table")(lambda n=_name, p=_paper_columns: _diabetes(n, p))
    generator(f"svdkl-diabetes-{_slug}-folds")(lambda n=_name: _diabetes_folds(n))


@generator("svdkl-diabetes-constant-nlp")
def diabetes_constant_nlp() -> str:
    """The NLP of the constant predictor that gives every row the class rates (binary entropy of the majority rate)."""
    record = load(STORE + "svdkl_diabetes_readmitted_30d.json")
    p = record["majority_rate"]["mean"]
    entropy = -(p * math.log(p) + (1 - p) * math.log(1 - p))
    ours = {row["model"]: row["nlp"]["mean"] for row in record["summary"]}
    return (f"The constant predictor of the class rates has NLP {fmt(entropy, 3)} (the entropy of a "
            f"{fmt(p, 4)} / {fmt(1 - p, 4)} split); DNN {fmt(ours['DNN'], 3)}, DNN+GP {fmt(ours['DNN+GP'], 3)}, "
            f"SV-DKL {fmt(ours['SV-DKL'], 3)}.")


# --------------------------------------------------------------------------------------------------------------------
# README.
# --------------------------------------------------------------------------------------------------------------------
@generator("svdkl-readme-table")
def readme_table() -> str:
    rows = []
    for key, data, command in [
        ("adult-cv-keep", "Adult (3 seeds × 5 folds)", "`python -m experiments.svdkl_uci --dataset adult --folds 5 "
         "--network-epochs 3 --gp-epochs 5 --joint-epochs 3 --seed S`"),
        ("connect4-cv-keep", "Connect-4 (5 folds)", "`python -m experiments.svdkl_uci --dataset connect4 --folds 5 "
         "--network-epochs 8 --gp-epochs 3 --joint-epochs 5`"),
        ("mnist-selected", "MNIST (LeNet, test set, 3 seeds; joint stage chosen on validation)",
         "`python -m experiments.svdkl_images --dataset mnist --network-epochs 10 --gp-epochs 2 --joint-epochs 4 "
         "--joint-lr 3e-4 --seed S`"),
        ("mnist-b5000", "MNIST, joint minibatch 5000 (second setting tested)",
         "`python -m experiments.svdkl_images --dataset mnist --network-epochs 10 --gp-epochs 2 --joint-epochs 8 "
         "--joint-lr 3e-4 --joint-batch-size 5000 --seed S`"),
    ]:
        _, dataset, files = SETTINGS[key]
        runs = [run for f in _runs(files) for run in f]
        dnn = _models(dataset)[0]
        p = _paired(key)
        paper = PAPER["table3_accuracy"]["mnist"]["SV-DKL"] if dataset == "mnist" else \
            PAPER["table2_accuracy"][dataset]["SV-DKL"]
        rows.append([data, _mean_sd([r["SV-DKL"]["accuracy"] for r in runs]),
                     fmt(paper, 4 if dataset == "mnist" else 3),
                     _mean_sd([r[dnn]["accuracy"] for r in runs]),
                     f"{_signed(p['mean'])}: {_verdict(p)}", command])
    header = ["data", "SV-DKL", "paper's SV-DKL", "DNN (same network, same run)", "SV-DKL − DNN (paired)", "command"]
    return markdown_table(header, rows)
