"""Per-step cost of subspace inducing inputs (Z = A X̃) against free inducing inputs Z [M, D].

Synthetic sparse data shaped like EUR-Lex / RCV1 / AmazonCat (D = 5 000 / 47 236 / 203 882 with
~236 / ~73 / ~71 non-zeros per row, Zipf-distributed column popularity, L2-normalised rows).  For each
D and kernel, the same model (``PreconditionedSVGP``, Bernoulli likelihood, M inducing inputs, batch B)
is trained with

* ``subspace``: ``SubspaceInducingPoints.from_data(X, M, R)``, minibatches as ``tf.SparseTensor``
  (per step: X_b X̃ᵀ by a sparse product, then O(R M² + B R M));
* ``free-Z``: ``gpflow.inducing_variables.InducingPoints`` [M, D] initialised at M random rows,
  minibatches as dense [B, D] tensors (densified before timing, so densifying is not charged).

Each (model, D, kernel) runs in its own subprocess so its peak RSS is its own and an out-of-memory
configuration is reported instead of taking the benchmark down; a configuration whose estimated
memory exceeds the available memory is skipped and reported as such.  Timing: a compiled step
(gradient + Adam update), median over ``--steps`` steps after ``--warmup`` steps.

    python -m benchmarks.subspace_scaling                      # full table (minutes)
    python -m benchmarks.subspace_scaling --dims 2000 --num-data 1000 --rank 200 --steps 3  # quick
"""
from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

import benchmarks.common  # noqa: F401  (first: TensorFlow's log lines off before it is imported)
from benchmarks.common import base_parser

from gpflow_ext.results import write_results

REPO = Path(__file__).resolve().parent.parent

NNZ_PER_ROW = {5000: 236, 47236: 73, 203882: 71}  # EUR-Lex, RCV1, AmazonCat-13K (averages)


def synthetic_sparse(num_data: int, dim: int, nnz_per_row: int, seed: int = 0):
    """CSR [N, D]: Zipf column popularity, positive tf-idf-like values, unit-norm rows."""
    import numpy as np
    import scipy.sparse

    rng = np.random.default_rng(seed)
    popularity = 1.0 / (np.arange(dim) + 10.0)
    popularity /= popularity.sum()
    counts = np.clip(rng.poisson(nnz_per_row, size=num_data), 1, dim)
    indptr = np.concatenate([[0], np.cumsum(counts)])
    indices = np.concatenate(
        [np.sort(rng.choice(dim, size=c, replace=False, p=popularity)) for c in counts]
    )
    data = rng.exponential(1.0, size=indices.size)
    X = scipy.sparse.csr_matrix((data, indices, indptr), shape=(num_data, dim))
    norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1))).ravel()
    return scipy.sparse.diags(1.0 / norms) @ X


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def worker(args) -> dict:
    from benchmarks.common import compiled_training_step

    import gpflow
    import numpy as np
    import tensorflow as tf
    from gpflow.keras import tf_keras

    import gpflow_ext
    from gpflow_ext.utilities import to_input_tensor

    if args.float32:
        gpflow.config.set_default_float(np.float32)
    dtype = gpflow.default_float()
    nnz = NNZ_PER_ROW.get(args.dim, 100)
    X = synthetic_sparse(args.num_data, args.dim, nnz, seed=args.seed)
    rng = np.random.default_rng(args.seed)
    Y = (rng.uniform(size=(args.num_data, 1)) < 0.3).astype(np.float64)
    rss_data = _rss_mb()

    t0 = time.perf_counter()
    if args.model == "subspace":
        iv = gpflow_ext.inducing_variables.SubspaceInducingPoints.from_data(
            X, args.num_inducing, args.rank, seed=args.seed
        )
    else:
        Z = X[rng.choice(args.num_data, args.num_inducing, replace=False)].toarray()
        iv = gpflow.inducing_variables.InducingPoints(Z)
    setup_seconds = time.perf_counter() - t0
    kernel = gpflow.kernels.Linear() if args.kernel == "linear" else gpflow.kernels.SquaredExponential()
    model = gpflow_ext.models.PreconditionedSVGP(
        kernel, gpflow.likelihoods.Bernoulli(), iv, num_data=args.num_data
    )
    optimizer = tf_keras.optimizers.Adam(1e-3)
    variables = model.trainable_variables
    param_bytes = int(sum(np.prod(v.shape) * v.dtype.size for v in variables))
    constant_bytes = int(np.prod(iv.basis_t.shape) * iv.basis_t.dtype.size) if args.model == "subspace" else 0

    batches = []
    for _b in range(4):
        rows = rng.choice(args.num_data, args.batch_size, replace=False)
        Xb = X[rows]
        Xb = to_input_tensor(Xb, dtype) if args.model == "subspace" else tf.constant(Xb.toarray(), dtype)
        batches.append((Xb, tf.constant(Y[rows], dtype)))

    if args.model == "subspace":
        x_spec = tf.SparseTensorSpec([None, args.dim], dtype)
    else:
        x_spec = tf.TensorSpec([None, args.dim], dtype)

    train_step = compiled_training_step(  # fit's compiled step (gpflow_ext.training.step.make_step)
        model, optimizer, variables=variables, input_signature=[(x_spec, tf.TensorSpec([None, 1], dtype))]
    )

    def step(Xb, Yb):
        return train_step((Xb, Yb))

    times, losses = [], []
    for i in range(args.warmup + args.steps):
        Xb, Yb = batches[i % len(batches)]
        t = time.perf_counter()
        loss = step(Xb, Yb)
        losses.append(float(loss))  # forces completion
        if i >= args.warmup:
            times.append(time.perf_counter() - t)
    return {
        "model": args.model,
        "dim": args.dim,
        "kernel": args.kernel,
        "nnz_per_row": nnz,
        "step_seconds_median": float(np.median(times)),
        "step_seconds_all": times,
        "setup_seconds": setup_seconds,
        "trainable_parameters": int(sum(np.prod(v.shape) for v in variables)),
        "trainable_parameter_mb": param_bytes / 2**20,
        "fixed_basis_mb": constant_bytes / 2**20,
        "peak_rss_mb": _rss_mb(),
        "rss_after_data_mb": rss_data,
        "final_loss_finite": bool(np.isfinite(losses[-1])),
    }


def _available_mb() -> float:
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable"):
                return int(line.split()[1]) / 1024.0
    return float("inf")


def _estimated_mb(args, model: str, dim: int) -> float:
    item = 4 if args.float32 else 8
    # calibrated on measured peak RSS (float64, M = B = 500, R = 1000): free-Z used ~25x its [M, D]
    # parameters at D = 47 236 (5.3 GB) and was OOM-killed at 13.7 GB at D = 203 882; the subspace
    # model ~3.1x its fixed basis [D, R] (5.6 GB at D = 203 882); ~0.75 GB is the data and TF itself
    if model == "free-Z":
        return 28 * max(args.num_inducing, args.batch_size) * dim * item / 2**20 + 1000
    return 3.5 * args.rank * dim * item / 2**20 + 1000


def main() -> None:
    parser = base_parser(__doc__.splitlines()[0], data_dir=False, epochs=False, logdir=False, float32=True)
    parser.add_argument("--dims", type=int, nargs="+", default=[5000, 47236, 203882])
    parser.add_argument("--kernels", nargs="+", default=["linear", "se"], choices=["linear", "se"])
    parser.add_argument("--num-data", type=int, default=4000, help="rows of the synthetic data set")
    parser.add_argument("--num-inducing", type=int, default=500)
    parser.add_argument("--rank", type=int, default=1000)
    parser.add_argument("--batch-size", type=int, default=500)
    parser.add_argument("--steps", type=int, default=7, help="timed steps (median reported)")
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--memory-fraction", type=float, default=0.7,
                        help="skip a configuration estimated to need more than this share of MemAvailable")
    # worker mode (one configuration, prints JSON)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--model", choices=["subspace", "free-Z"], help=argparse.SUPPRESS)
    parser.add_argument("--dim", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--kernel", choices=["linear", "se"], help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.worker:
        print("RESULT " + json.dumps(worker(args)))
        return

    rows = []
    for dim in args.dims:
        for kernel in args.kernels:
            for model in ("subspace", "free-Z"):
                need, have = _estimated_mb(args, model, dim), _available_mb()
                row = {"model": model, "dim": dim, "kernel": kernel}
                if need > args.memory_fraction * have:
                    row["error"] = f"skipped: needs ~{need / 1024:.1f} GB, {have / 1024:.1f} GB available"
                    print(row, flush=True)
                    rows.append(row)
                    continue
                cmd = [sys.executable, "-m", "benchmarks.subspace_scaling", "--worker", "--model", model,
                       "--dim", str(dim), "--kernel", kernel, "--num-data", str(args.num_data),
                       "--num-inducing", str(args.num_inducing), "--rank", str(args.rank),
                       "--batch-size", str(args.batch_size), "--steps", str(args.steps),
                       "--warmup", str(args.warmup), "--seed", str(args.seed)]
                if args.float32:
                    cmd.append("--float32")
                proc = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO)
                result = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
                if proc.returncode == 0 and result:
                    row.update(json.loads(result[-1][len("RESULT "):]))
                else:
                    tail = (proc.stderr.strip().splitlines() or ["?"])[-1]
                    row["error"] = f"failed (exit {proc.returncode}): {tail[:200]}"
                print({k: v for k, v in row.items() if k != "step_seconds_all"}, flush=True)
                rows.append(row)

    print()
    header = (f"{'D':>7} {'kernel':>6} {'nnz/row':>7} | {'subspace s/step':>15} {'free-Z s/step':>13} "
              f"{'ratio':>7} | {'sub params MB':>13} {'free params MB':>14} | {'sub RSS MB':>10} "
              f"{'free RSS MB':>11} | {'sub setup s':>11}")
    print(header)
    print("-" * len(header))
    for dim in args.dims:
        for kernel in args.kernels:
            sub = next(r for r in rows if r["dim"] == dim and r["kernel"] == kernel and r["model"] == "subspace")
            free = next(r for r in rows if r["dim"] == dim and r["kernel"] == kernel and r["model"] == "free-Z")

            def get(row, key, fmt):
                return format(row[key], fmt) if key in row else "fail"

            ratio = (f"{sub['step_seconds_median'] / free['step_seconds_median']:.4f}"
                     if "step_seconds_median" in sub and "step_seconds_median" in free else "-")
            print(f"{dim:>7} {kernel:>6} {sub.get('nnz_per_row', NNZ_PER_ROW.get(dim, '-')):>7} | "
                  f"{get(sub, 'step_seconds_median', '.4f'):>15} {get(free, 'step_seconds_median', '.4f'):>13} "
                  f"{ratio:>7} | {get(sub, 'trainable_parameter_mb', '.1f'):>13} "
                  f"{get(free, 'trainable_parameter_mb', '.1f'):>14} | {get(sub, 'peak_rss_mb', '.0f'):>10} "
                  f"{get(free, 'peak_rss_mb', '.0f'):>11} | {get(sub, 'setup_seconds', '.1f'):>11}")
    for row in rows:
        if "error" in row:
            print(f"note: {row['model']} D={row['dim']} {row['kernel']}: {row['error']}")
    print("ratio = subspace / free-Z median seconds per training step (gradient + Adam), same run; "
          "subspace parameters exclude the fixed basis X̃ (reported as fixed_basis_mb in the JSON).")
    write_results({"rows": rows}, args.output)


if __name__ == "__main__":
    main()
