"""Joining dense columns to CSR rows: ``gpflow_ext.data.transforms.append_columns`` against ``scipy.sparse.hstack``
(of the rows and the block made CSR, the library's form before it), side by side at one size.

    python -m benchmarks.append_columns [--rows 1186239] [--nnz-per-row 71] [--columns 203882] [--width 256]
        [--repeats 3] [--output r.json]

Rows: random CSR of the given shape (``--nnz-per-row`` stored entries per row at random columns, float64), the
block [N, F] uniform in (0, 1) as the label-score probabilities are; the defaults are AmazonCat-13K's training
rows with the ``best`` recipe's 256 label scores. Each method runs in its own fresh process, ``--repeats`` times
alternating: the peak RSS above the process's RSS once the inputs are built (VmHWM, reset just before the
join, so it holds the joined matrix and every copy made on the way) and the wall seconds, as medians; the two joins are checked equal
(indptr, indices and data) on the first rows. Ratios are scipy's over ours.
"""
import argparse
import json
import subprocess
import sys
import time

import benchmarks.common  # noqa: F401  (first: TensorFlow's log lines off before it is imported)
from benchmarks.common import base_parser, write_results

import numpy as np
import scipy.sparse as sp

METHODS = ("append_columns", "scipy.sparse.hstack")


def _inputs(rows: int, nnz_per_row: int, columns: int, width: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    indptr = np.arange(rows + 1, dtype=np.int64) * nnz_per_row  # [N + 1]
    indices = np.sort(rng.integers(0, columns, (rows, nnz_per_row)), axis=1).ravel().astype(np.int32)  # [nnz]
    X = sp.csr_matrix((rng.random(indptr[-1]), indices, indptr), shape=(rows, columns))  # duplicates summed below
    X.sum_duplicates()
    return X, rng.random((rows, width))  # [N, D], [N, F]


def _status_gb(field: str) -> float:
    """A memory line of /proc/self/status (``VmRSS``, ``VmHWM``: the peak) in GB."""
    with open("/proc/self/status") as status:
        line = next(line for line in status if line.startswith(field + ":"))
    return int(line.split()[1]) / 2**20


def _reset_peak() -> None:
    """Start VmHWM (the peak RSS) again from the current RSS (Linux: ``5`` to /proc/self/clear_refs)."""
    with open("/proc/self/clear_refs", "w") as clear_refs:
        clear_refs.write("5")


def one_join(method: str, rows: int, nnz_per_row: int, columns: int, width: int, check_rows: int = 1000) -> dict:
    """One join in this process: seconds, peak RSS above the inputs' (GB), and the first rows' arrays."""
    from gpflow_ext.data.transforms import append_columns

    X, block = _inputs(rows, nnz_per_row, columns, width)
    _reset_peak()
    before = _status_gb("VmRSS")
    start = time.perf_counter()
    if method == "append_columns":
        joined = append_columns(X, block)
    else:
        joined = sp.hstack([X, sp.csr_matrix(block)], format="csr")
    seconds = time.perf_counter() - start
    head = joined[:check_rows]
    return {"seconds": seconds, "peak_gb_above_inputs": _status_gb("VmHWM") - before, "joined_gb": (
        joined.data.nbytes + joined.indices.nbytes + joined.indptr.nbytes) / 2**30, "nnz": int(joined.nnz),
        "head": [head.indptr.tolist(), head.indices.tolist(), head.data.tolist()]}


def main(argv=None) -> dict:
    parser = base_parser(__doc__.splitlines()[0], data_dir=False, epochs=False, logdir=False)
    parser.add_argument("--rows", type=int, default=1_186_239)
    parser.add_argument("--nnz-per-row", type=int, default=71)
    parser.add_argument("--columns", type=int, default=203_882)
    parser.add_argument("--width", type=int, default=256, help="F, the dense columns appended")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--one", choices=METHODS, help=argparse.SUPPRESS)  # one join in this process
    args = parser.parse_args(argv)
    shape = (args.rows, args.nnz_per_row, args.columns, args.width)
    if args.one:
        print(json.dumps(one_join(args.one, *shape)))
        return {}
    runs: dict[str, list[dict]] = {m: [] for m in METHODS}
    for _ in range(args.repeats):
        for method in METHODS:
            command = [sys.executable, "-m", "benchmarks.append_columns", "--one", method, "--rows", str(args.rows),
                       "--nnz-per-row", str(args.nnz_per_row), "--columns", str(args.columns),
                       "--width", str(args.width)]
            out = subprocess.run(command, capture_output=True, text=True, check=True).stdout
            runs[method].append(json.loads(out.strip().splitlines()[-1]))
    heads = {m: runs[m][0].pop("head") for m in METHODS}
    for method in METHODS:
        for run in runs[method]:
            run.pop("head", None)
    summary = {m: {"seconds": float(np.median([r["seconds"] for r in runs[m]])),
                   "peak_gb_above_inputs": float(np.median([r["peak_gb_above_inputs"] for r in runs[m]])),
                   "joined_gb": runs[m][0]["joined_gb"], "nnz": runs[m][0]["nnz"]} for m in METHODS}
    ours, peer = summary["append_columns"], summary["scipy.sparse.hstack"]
    result = {
        "rows": args.rows, "nnz_per_row": args.nnz_per_row, "columns": args.columns, "width": args.width,
        "repeats": args.repeats, "runs": runs, "summary": summary,
        "same_first_rows": heads["append_columns"] == heads["scipy.sparse.hstack"],
        # None where our join left no trace above the inputs' pages (a tiny run reusing freed memory)
        "peak_ratio": peer["peak_gb_above_inputs"] / ours["peak_gb_above_inputs"] if ours["peak_gb_above_inputs"] > 0
        else None,
        "seconds_ratio": peer["seconds"] / ours["seconds"],
    }
    print(f"{'method':<22}{'s':>9}{'peak GB above inputs':>24}{'joined GB':>12}")
    for method in METHODS:
        s = summary[method]
        print(f"{method:<22}{s['seconds']:>9.2f}{s['peak_gb_above_inputs']:>24.2f}{s['joined_gb']:>12.2f}")
    peak = "n/a" if result["peak_ratio"] is None else f"{result['peak_ratio']:.2f}x"
    print(f"scipy / ours: peak {peak}, seconds {result['seconds_ratio']:.2f}x; "
          f"same first rows: {result['same_first_rows']}")
    write_results(result, args.output)
    return result


if __name__ == "__main__":
    main()
