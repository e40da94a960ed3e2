"""Generated parts of docs/svdkl/budgets.md: DNN / DNN+GP / SV-DKL over datasets x epoch budgets x seeds
(``experiments.svdkl_budgets``, and the airline and Diabetes scripts' runs at one budget each)."""

from experiments.report import fmt, generator, load, markdown_table

#: the result files of experiments.svdkl_budgets, in the order their rows are shown
BUDGET_FILES = ("docs/svdkl/results/budgets-tour.json", "docs/svdkl/results/budgets-images.json",
                "docs/svdkl/results/budgets-mnist.json", "docs/svdkl/results/budgets-mnist-seeds-1-2.json",
                "docs/svdkl/results/budgets-tabular.json",
                "docs/svdkl/results/budgets-tabular-seeds-1-2.json")
#: result files of experiments.svdkl_airline and experiments.svdkl_diabetes run at one budget (``--epochs E``)
SCRIPT_FILES = ("docs/svdkl/results/budgets-airline-e2.json", "docs/svdkl/results/budgets-airline-e6.json",
                "docs/svdkl/results/budgets-airline-e6-seeds-1-2.json",
                "docs/svdkl/results/budgets-diabetes-readmitted_30d-e2.json",
                "docs/svdkl/results/budgets-diabetes-readmitted_30d-e6.json",
                "docs/svdkl/results/budgets-diabetes-readmitted-e2.json",
                "docs/svdkl/results/budgets-diabetes-readmitted-e6.json")
_MODEL_KEYS = {"DNN": "dnn", "DNN+GP": "dnn_gp", "SV-DKL": "svdkl"}


def script_cells(result: dict) -> list[dict]:
    """The budget-table cells of one airline or Diabetes result file: one per seed (airline, all training rows)
    or per fold (Diabetes), the budget being the network epochs E."""
    budget = result["settings"]["epochs"]["network_epochs"] if "epochs" in result["settings"] else \
        result["settings"]["network_epochs"]
    if "folds" in result:
        dataset, runs = f"diabetes ({result['target']})", result["folds"]
    else:
        dataset, runs = "airline", [r for r in result["runs"] if r["fraction"] == 1.0]
    cells = []
    for run in runs:
        cell = {"dataset": dataset, "budget": budget, "chosen_epoch": run.get("chosen_epoch")}
        for name, key in _MODEL_KEYS.items():
            cell[key] = {"accuracy": run["models"][name]["accuracy"], "nlp": run["models"][name]["nlp"]}
        cells.append(cell)
    return cells


def _cells() -> list[dict]:
    from experiments.report import REPO

    cells: list[dict] = []
    for path in BUDGET_FILES:
        if (REPO / path).is_file():
            result = load(path)
            cells += [dict(cell, commit=_commit(result)) for cell in result["cells"]]
    for path in SCRIPT_FILES:
        if (REPO / path).is_file():
            result = load(path)
            cells += [dict(cell, commit=_commit(result)) for cell in script_cells(result)]
    return cells


def _commit(result: dict) -> str:
    """The short commit a result file was written at (its provenance)."""
    return str(result["provenance"]["git_commit"])[:7]


def _groups(cells: list[dict]) -> dict:
    groups: dict = {}
    for cell in cells:
        groups.setdefault((cell["dataset"], cell["budget"]), []).append(cell)
    return groups


def _mean(cells: list[dict], key: str, measure: str) -> float:
    return sum(c[key][measure] for c in cells) / len(cells)


@generator("svdkl-budgets-table")
def budgets_table() -> str:
    rows = []
    for (dataset, budget), cells in _groups(_cells()).items():
        row = [dataset, budget, len(cells)]
        for key in ("dnn", "dnn_gp", "svdkl"):
            row.append(f"{fmt(_mean(cells, key, 'accuracy'), 4)} / {fmt(_mean(cells, key, 'nlp'), 4)}")
        for key in ("dnn_gp", "svdkl"):
            worst_accuracy = min(c[key]["accuracy"] - c["dnn"]["accuracy"] for c in cells)
            worst_nlp = max(c[key]["nlp"] - c["dnn"]["nlp"] for c in cells)
            row.append(f"{worst_accuracy:+.4f} / {worst_nlp:+.4f}")
        row.append(", ".join("{network}/{gp}/{joint}".format(**c["chosen_epoch"]) if c["chosen_epoch"] else "not recorded"
                             for c in cells))
        row.append(", ".join(f"`{commit}`" for commit in dict.fromkeys(c["commit"] for c in cells)))
        rows.append(row)
    return markdown_table(
        ["data", "budget E or N/G/J", "seeds or folds", "DNN acc / NLP", "DNN+GP acc / NLP", "SV-DKL acc / NLP",
         "DNN+GP − DNN, worst seed (acc / NLP)", "SV-DKL − DNN, worst seed (acc / NLP)",
         "epochs kept (network/GP/joint) per seed or fold", "run at"], rows)


def _meets(cell: dict, key: str) -> bool:
    """The bar: accuracy at most 0.002 below the DNN's and NLP at most the DNN's."""
    return cell[key]["accuracy"] >= cell["dnn"]["accuracy"] - 0.002 and cell[key]["nlp"] <= cell["dnn"]["nlp"]


@generator("svdkl-budgets-cells")
def budgets_cells() -> str:
    """How many (dataset, budget, seed) runs meet each bar."""
    cells = _cells()
    groups = _groups(cells).values()

    def row_meets(key: str, group: list[dict]) -> bool:
        means = {k: {m: _mean(group, k, m) for m in ("accuracy", "nlp")} for k in ("dnn", key)}
        return _meets(means, key)

    return (f"of {len(cells)} runs, SV-DKL is within 0.002 of the DNN's accuracy or above it with an NLP at most "
            f"the DNN's in {sum(_meets(c, 'svdkl') for c in cells)}; DNN+GP in {sum(_meets(c, 'dnn_gp') for c in cells)}. "
            f"Of the table's {len(groups)} rows (means over seeds or "
            f"folds), SV-DKL meets that bar in {sum(row_meets('svdkl', g) for g in groups)} and DNN+GP in "
            f"{sum(row_meets('dnn_gp', g) for g in groups)}")


@generator("svdkl-budgets-misses")
def budgets_misses() -> str:
    """How far the runs that miss the bar miss it, and whether their GP stage kept its start."""
    misses = [(cell["dnn"]["accuracy"] - cell[key]["accuracy"], cell[key]["nlp"] - cell["dnn"]["nlp"],
               bool(cell["chosen_epoch"]) and cell["chosen_epoch"]["gp"] == 0)
              for cell in _cells() for key in ("dnn_gp", "svdkl") if not _meets(cell, key)]
    if not misses:
        return "no run misses it"
    return (f"the {len(misses)} misses (DNN+GP and SV-DKL counted apart) are at most "
            f"{max(max(m[1], 0.0) for m in misses):.6f} above the DNN's NLP and at most "
            f"{max(max(m[0], 0.0) for m in misses):.4f} below its accuracy; in "
            f"{sum(m[2] for m in misses)} of them the GP stage kept its start, so the model predicts what its "
            "network predicts up to the start's fidelity")


#: the step-time benchmark (``benchmarks.svdkl_speed``) before this page's changes, and re-run at m = 70 after them
SPEED_BEFORE, SPEED_AFTER = "docs/svdkl/results/svdkl_speed.json", "docs/svdkl/results/svdkl_speed_m70.json"
#: the same at m = 70 with the linear class-score mean (``match_network``'s exact start) beside the zero mean
SPEED_LINEAR_MEAN = "docs/svdkl/results/svdkl_speed_m70_linear_mean.json"


@generator("svdkl-budgets-step-ratio")
def step_ratio() -> str:
    """SV-DKL's training step over the plain network's, in the earlier benchmark run and the re-run."""
    parts = []
    for path in (SPEED_BEFORE, SPEED_AFTER):
        record = load(path)
        ratio = record["ratios"]["svdkl_over_network_at_m70"]
        parts.append(f"{fmt(ratio, 3)}× at `{_commit(record)}` (network step {fmt(record['network_s'] * 1e3, 0)} ms)")
    record = load(SPEED_LINEAR_MEAN)
    parts.append(f"{fmt(record['ratios']['svdkl_over_network_at_m70'], 3)}× with the paper's zero mean and "
                 f"{fmt(record['ratios']['svdkl_linear_mean_over_network_at_m70'], 3)}× with the recipes' linear "
                 f"class-score mean at `{_commit(record)}` (network step {fmt(record['network_s'] * 1e3, 0)} ms)")
    return "SV-DKL's training step over the network's, m = 70, B = 4096: " + "; ".join(parts)
