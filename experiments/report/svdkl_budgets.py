"""Generated parts of docs/svdkl/budgets.md: DNN / DNN+GP / SV-DKL over datasets x epoch budgets x seeds
(``experiments.svdkl_budgets``)."""

from experiments.report import fmt, generator, load, markdown_table

#: the result files of experiments.svdkl_budgets, in the order their rows are shown
BUDGET_FILES = ("docs/svdkl/results/budgets-images.json", "docs/svdkl/results/budgets-tabular.json",
                "docs/svdkl/results/budgets-tabular-seeds-1-2.json")


def _cells() -> list[dict]:
    from experiments.report import REPO

    cells: list[dict] = []
    for path in BUDGET_FILES:
        if (REPO / path).is_file():
            cells += load(path)["cells"]
    return cells


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
        row.append(", ".join("{network}/{gp}/{joint}".format(**c["chosen_epoch"]) for c in cells))
        rows.append(row)
    return markdown_table(
        ["data", "budget E", "seeds", "DNN acc / NLP", "DNN+GP acc / NLP", "SV-DKL acc / NLP",
         "DNN+GP − DNN, worst seed (acc / NLP)", "SV-DKL − DNN, worst seed (acc / NLP)",
         "epochs kept (network/GP/joint) per seed"], rows)


@generator("svdkl-budgets-cells")
def budgets_cells() -> str:
    """How many (dataset, budget, seed) runs meet each bar."""
    cells = _cells()
    svdkl = sum(c["svdkl"]["accuracy"] >= c["dnn"]["accuracy"] - 0.002 and c["svdkl"]["nlp"] <= c["dnn"]["nlp"]
                for c in cells)
    dnn_gp = sum(c["dnn_gp"]["accuracy"] >= c["dnn"]["accuracy"] - 0.002 and c["dnn_gp"]["nlp"] <= c["dnn"]["nlp"]
                 for c in cells)
    return (f"of {len(cells)} runs, SV-DKL is within 0.002 of the DNN's accuracy or above it with an NLP at most "
            f"the DNN's in {svdkl}; DNN+GP in {dnn_gp}")
