"""Precision@k / nDCG@k: gpflow_ext.metrics vs napkinXC's metrics, side by side in one process.

Two regimes, as the models produce them:
* ranking given as top-k indices with a large label space (K = 100000, sparse Y),
* dense scores [N, K] for moderate K (our ``top_k`` chunked argpartition vs napkinXC's per-row argsort).

Prints the median of ``--repeats`` runs of each and the ratio napkinXC / ours (> 1: ours is faster),
and checks both give the same values. Run: ``python -m benchmarks.bench_metrics [--smoke]``.
"""
import time

import benchmarks.common  # noqa: F401  (first: TensorFlow's log lines off before it is imported)
from benchmarks.common import base_parser, print_table, write_results

import numpy as np
import scipy.sparse as sp

from gpflow_ext.metrics import ndcg_at_k, precision_at_k


def _median_seconds(function, repeats):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        value = function()
        times.append(time.perf_counter() - start)
    return float(np.median(times)), value


def _labels(rng, num_data, num_labels, per_row):
    rows = np.repeat(np.arange(num_data), per_row)
    Y = sp.csr_matrix((np.ones(rows.size), (rows, rng.integers(0, num_labels, rows.size))), shape=(num_data, num_labels))
    Y.data[:] = 1.0
    return Y


def run(smoke: bool = False, repeats: int = 5, seed: int = 0):
    try:
        from napkinxc.metrics import ndcg_at_k as napkin_ndcg
        from napkinxc.metrics import precision_at_k as napkin_precision
    except ImportError:
        napkin_ndcg = napkin_precision = None
        print("napkinxc is not installed (pip install napkinxc==0.7.2); timing gpflow_ext only")
    rng = np.random.default_rng(seed)
    k = 5
    cases = []
    num_data, num_labels = (2000, 100_000) if smoke else (20000, 100_000)
    Y = _labels(rng, num_data, num_labels, 5)
    ranked = rng.integers(0, num_labels, size=(num_data, k))
    ranked[::2, 0] = Y.indices[Y.indptr[:-1]][::2]
    cases.append(("indices", f"N={num_data} K={num_labels}", Y, ranked, [list(map(int, r)) for r in ranked]))
    num_data, num_labels = (1000, 2000) if smoke else (10000, 4000)
    Y = _labels(rng, num_data, num_labels, 5)
    scores = rng.normal(size=(num_data, num_labels))
    cases.append(("dense scores", f"N={num_data} K={num_labels}", Y, scores, scores))
    rows = []
    for kind, size, Y, ours_input, napkin_input in cases:
        for metric, ours, theirs in (("P@5", precision_at_k, napkin_precision), ("nDCG@5", ndcg_at_k, napkin_ndcg)):
            ours_seconds, ours_value = _median_seconds(lambda: ours(Y, ours_input, k), repeats)
            row = {"input": kind, "size": size, "metric": metric, "gpflow_ext_s": ours_seconds, "value": ours_value}
            if theirs is not None:
                theirs_seconds, theirs_value = _median_seconds(lambda: theirs(Y, napkin_input, k=k)[k - 1], repeats)
                if abs(theirs_value - ours_value) > 1e-12:
                    raise AssertionError(f"{metric} differs from napkinXC: {ours_value} vs {theirs_value}")
                row.update(napkinxc_s=theirs_seconds, ratio_napkinxc_over_ours=theirs_seconds / ours_seconds)
            rows.append(row)
    print_table(rows, ["input", "size", "metric", "value", "gpflow_ext_s", "napkinxc_s", "ratio_napkinxc_over_ours"],
                title=f"median of {repeats} runs; ratio > 1 means gpflow_ext is faster")
    return rows


def main(argv=None):
    parser = base_parser(__doc__.splitlines()[0], data_dir=False, epochs=False, logdir=False,
                         smoke="small sizes (seconds)")
    parser.add_argument("--repeats", type=int, default=5, help="timed repeats of each")
    args = parser.parse_args(argv)
    rows = run(args.smoke, args.repeats, args.seed)
    write_results({"rows": rows}, args.output)


if __name__ == "__main__":
    main()
