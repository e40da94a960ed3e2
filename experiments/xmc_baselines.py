"""Peers on the same split as MLGPF: napkinXC (PLT, OVR), omikuji (Parabel, Bonsai), one-vs-rest logistic regression.

    python -m experiments.xmc_baselines --data-dir DIR --dataset bibtex [--output baselines.json]

Run it with the project's interpreter (the one with gpflow_ext). The data are read with
``gpflow_ext.data`` (same loader and split as ``mlgpf_xmc.py``) and written once in the Extreme
Classification Repository text format to a temporary folder; napkinXC and omikuji then run in a
subprocess under the *peers* interpreter (numpy 2), found only through ``$GPFLOW_EXT_PEERS_PYTHON`` (create
one with ``python -m venv peers && peers/bin/pip install -r benchmarks/requirements-peers-xmc.txt``), which runs
``experiments/xmc_peer_worker.py`` (``napkinxc``: PLT, ``napkinxc-ovr``: OVR, ``omikuji``: Parabel,
``omikuji-bonsai``: omikuji with the Bonsai-like settings of its README). The
scikit-learn one-vs-rest logistic regression
(``gpflow_ext.recipes.xmc_baselines``) runs in this process. Every method is scored by
``gpflow_ext.metrics`` (P@1/3/5, nDCG@1/3/5) and printed beside the paper's MLGPF numbers
(Tables 2, 3).

omikuji's tree building is not seeded, so its scores vary from run to run (about one point of P@1 on
Bibtex); ``--repeats N`` runs each peer N times (seeds ``seed`` … ``seed + N - 1``) and adds a summary row per
peer with the median, minimum and maximum of each score. ``--save-rows`` keeps each run's top 5 label ids per
test row in the results JSON (key ``top``), for paired comparisons (``experiments.xmc_paired``).
"""
import os
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import experiments.quiet  # noqa: F401  (first: TensorFlow's log lines off before it is imported)

import numpy as np
import scipy.sparse as sp

from experiments.common import base_parser, print_table, write_results
from experiments.paper_values import MLGPF as PAPER
from gpflow_ext.config import peers_python
from gpflow_ext.metrics import ranking_metrics
from gpflow_ext.recipes.mlgpf import load_xmc
from gpflow_ext.recipes.xmc_baselines import one_vs_rest_logistic, summarise_runs

PEER_METHODS = ("napkinxc", "napkinxc-ovr", "omikuji", "omikuji-bonsai")
#: ``--smoke``: rows kept per split
SMOKE_ROWS = 500


def scores_from_top(top: np.ndarray, Y_test: sp.csr_matrix, ks=(1, 3, 5)) -> dict[str, float]:
    top = np.where(top < 0, 0, top)  # padding (fewer than k predictions) can never be a hit twice
    return ranking_metrics(top, Y_test, ks)


def run_peers(X_train, Y_train, X_test, Y_test, methods=PEER_METHODS, threads: int = 2, seed: int = 0,
              repeats: int = 1, save_rows: bool = False) -> list[dict[str, Any]]:
    """Each peer in ``methods`` trained ``repeats`` times (seeds ``seed + r``) and scored on the test split;
    one row per run (``run``: r), in run order (``top``: the encoded top 5 per test row with ``save_rows``).
    The data are written once."""
    from gpflow_ext.data import write_xmc_text
    from gpflow_ext.recipes.xmc_baselines import encode_rows

    python = peers_python(required=True)
    worker = Path(__file__).resolve().parent / "xmc_peer_worker.py"
    results = []
    with tempfile.TemporaryDirectory(prefix="xmc_peers_") as folder:
        write_xmc_text(os.path.join(folder, "train.txt"), X_train, Y_train)
        write_xmc_text(os.path.join(folder, "test.txt"), X_test, Y_test)
        log = os.path.join(folder, "worker.log")
        for run in range(repeats):
            with open(log, "w") as handle:
                completed = subprocess.run(
                    [python, str(worker), folder, "--methods", *methods, "--top-k", "5", "--threads", str(threads),
                     "--seed", str(seed + run)],
                    stdout=handle, stderr=subprocess.STDOUT,
                )
            if completed.returncode != 0:
                tail = Path(log).read_text()[-3000:]
                raise RuntimeError(f"peer worker failed (exit {completed.returncode}):\n{tail}")
            for name in methods:
                out = np.load(os.path.join(folder, f"{name}.npz"))
                row = {
                    "method": name, "run": run, "seed": seed + run, "fit_seconds": float(out["fit_seconds"]),
                    "predict_seconds": float(out["predict_seconds"]), **scores_from_top(out["top"], Y_test),
                }
                if save_rows:
                    row["top"] = encode_rows(out["top"].astype(np.int64))  # -1: no prediction
                results.append(row)
    return results


def main(argv=None) -> dict[str, Any]:
    parser = base_parser(__doc__.splitlines()[0], epochs=False, logdir=False,
                         smoke=f"the first {SMOKE_ROWS} rows of each split")
    parser.add_argument("--dataset", default="bibtex",
                        help="a multi-label dataset under --data-dir in a Mulan or XMC layout (as in mlgpf_xmc)")
    parser.add_argument("--methods", nargs="+", default=["napkinxc", "omikuji", "ovr"],
                        choices=[*PEER_METHODS, "ovr"],
                        help="peers to run (napkinxc: PLT, napkinxc-ovr: napkinXC's OVR, omikuji: Parabel, "
                             "omikuji-bonsai: omikuji with Bonsai-like settings, ovr: scikit-learn one-vs-rest)")
    parser.add_argument("--threads", type=int, default=2, help="threads of each peer")
    parser.add_argument("--C", type=float, default=10.0, help="inverse L2 strength of the one-vs-rest model")
    parser.add_argument("--repeats", type=int, default=1,
                        help="runs of each napkinXC / omikuji peer (seeds seed, seed+1, ...), summarised by the median")
    parser.add_argument("--max-rows", type=int, default=None,
                        help=f"only the first rows of each split (--smoke: {SMOKE_ROWS})")
    parser.add_argument("--save-rows", action="store_true",
                        help="store each run's top 5 label ids per test row (key 'top', compact: "
                             "gpflow_ext.recipes.xmc_baselines.encode_rows) for experiments.xmc_paired")
    args = parser.parse_args(argv)
    if args.data_dir is None:
        parser.error("--data-dir (or $GPFLOW_EXT_DATA) is required")
    if args.repeats < 1:
        parser.error(f"--repeats must be a positive integer, got {args.repeats}")
    try:
        rows_kept = args.max_rows or (SMOKE_ROWS if args.smoke else None)
        (X_train, Y_train), (X_test, Y_test) = load_xmc(args.dataset, args.data_dir, rows_kept)
    except FileNotFoundError as error:
        parser.error(f"--dataset {args.dataset!r}: {error}")
    rows = []
    peers = [m for m in args.methods if m in PEER_METHODS]
    if peers:
        try:
            rows += run_peers(X_train, Y_train, X_test, Y_test, peers, args.threads, args.seed, args.repeats,
                              save_rows=args.save_rows)
        except RuntimeError as error:
            parser.exit(2, f"{parser.prog}: error: {error}\n")
    if "ovr" in args.methods:
        rows.append(one_vs_rest_logistic((X_train, Y_train), (X_test, Y_test), C=args.C, seed=args.seed,
                                         save_rows=args.save_rows))
    paper = PAPER["table2"].get(args.dataset, {}).get("s-linear")
    summary = summarise_runs(rows)
    table_rows = [{k: v for k, v in r.items() if k != "top"} for r in rows] + summary
    if paper:
        table_rows.append({"method": "paper MLGPF s-LINEAR (Table 2)", "P@1": paper["P@1"], "P@3": paper["P@3"],
                           "P@5": paper["P@5"]})
    for name, values in PAPER["table3"].get(args.dataset, {}).items():
        table_rows.append({"method": f"paper {name} (Table 3)", **values})
    print_table(table_rows, ["method", "P@1", "P@3", "P@5", "nDCG@3", "nDCG@5", "fit_seconds"],
                title=f"{args.dataset}: peers on the same split (P@k, nDCG@k in %)")
    result = {"dataset": args.dataset, "n_train": X_train.shape[0], "n_test": X_test.shape[0],
              "smoke": bool(args.smoke), "max_rows": args.max_rows, "results": rows}
    if summary:
        result["summary"] = summary
    write_results(result, args.output)
    return result


if __name__ == "__main__":
    main()
