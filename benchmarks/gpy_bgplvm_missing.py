"""Peer: GPy's Bayesian GPLVM with missing_data=True (BayesianGPLVMMiniBatch) (run by the peers interpreter, numpy 2).

    $GPFLOW_EXT_PEERS_PYTHON benchmarks/gpy_bgplvm_missing.py in.npz out.json [--latent-dim Q] ...

``in.npz`` holds ``Y`` [N, D] with NaN for missing entries and the target entries
(``rows``, ``cols``, ``vals``). Trains with L-BFGS-B for ``--max-iters`` iterations, predicts
the target entries at the rows' latent means and writes predictions and timings as JSON. :func:`gpy_peer` runs
this script from the main environment.
One GPy objective+gradient evaluation touches every row once, i.e. it is one epoch; each evaluation
is timed, and the median leaves out the first (which also builds GPy's caches).
"""
import argparse
import json
import time

import numpy as np


def main():
    # plain argparse: this runs under the peers interpreter, without the benchmarks' common imports
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("inputs", help="in.npz: Y with NaN for missing entries, target rows / cols / vals")
    parser.add_argument("output", help="results JSON (predictions and timings)")
    parser.add_argument("--latent-dim", type=int, default=10, help="Q")
    parser.add_argument("--num-inducing", type=int, default=50, help="M")
    parser.add_argument("--max-iters", type=int, default=30, help="L-BFGS-B iterations")
    parser.add_argument("--seed", type=int, default=0, help="random seed")
    args = parser.parse_args()
    import GPy
    from GPy.models.bayesian_gplvm_minibatch import BayesianGPLVMMiniBatch

    np.random.seed(args.seed)
    data = np.load(args.inputs)
    Y = data["Y"]
    column_mean = np.nanmean(np.where(np.isnan(Y), np.nan, Y), axis=0)
    global_mean = np.nanmean(Y)
    column_mean = np.where(np.isnan(column_mean), global_mean, column_mean)
    Yc = Y - column_mean  # GPy's GP has zero mean: centre each column on its observed mean
    kernel = GPy.kern.RBF(args.latent_dim, ARD=True)
    start = time.time()
    # GPy 1.15's BayesianGPLVM(missing_data=True) returns a NaN objective on data with NaN (its
    # inference is not routed through the missing-data loop); BayesianGPLVMMiniBatch(missing_data=True)
    # is GPy's working implementation (a psi-statistics VarDTC per output over its observed rows).
    model = BayesianGPLVMMiniBatch(
        Yc, args.latent_dim, kernel=kernel, num_inducing=args.num_inducing, missing_data=True, init="random"
    )
    build_seconds = time.time() - start
    evaluation_seconds = []
    objective = model._objective_grads

    def timed(x):
        tic = time.time()
        try:
            return objective(x)
        finally:
            evaluation_seconds.append(time.time() - tic)

    model._objective_grads = timed
    start = time.time()
    model.optimize("lbfgsb", max_iters=args.max_iters, messages=False)
    train_seconds = time.time() - start
    rows, cols = data["rows"], data["cols"]
    mean, _ = model.predict(model.X.mean.values[np.unique(rows)])
    lookup = {r: i for i, r in enumerate(np.unique(rows))}
    pred = mean[[lookup[r] for r in rows], cols] + column_mean[cols]
    out = {
        "pred": pred.tolist(),
        "seconds_per_iter": train_seconds / max(len(evaluation_seconds), 1),
        # the first evaluation also builds GPy's per-output caches: leave it out of the median
        "median_seconds_per_evaluation": float(np.median(evaluation_seconds[1:] or evaluation_seconds)),
        "first_evaluation_seconds": evaluation_seconds[0] if evaluation_seconds else float("nan"),
        "objective_evaluations": len(evaluation_seconds),
        "train_seconds": train_seconds,
        "build_seconds": build_seconds,
        "final_objective": float(model.objective_function()),
        "gpy_version": GPy.__version__,
        "optimizer_status": str(getattr(model.optimization_runs[-1], "status", "")) if model.optimization_runs else "",
    }
    with open(args.output, "w") as handle:
        json.dump(out, handle)


def gpy_peer(train, target, *, latent_dim, num_inducing, max_iters, seed, timeout=3000):
    """GPy BayesianGPLVM(missing_data=True) run by this script under the peers interpreter: RMSE on ``target`` and
    seconds per iteration (None, with the reason printed, when there is no peers interpreter or the run fails).
    Called from the main environment (TensorFlow side); ``train``/``target`` are CSR rating matrices."""
    import os
    import subprocess
    import tempfile
    from pathlib import Path

    import scipy.sparse as sp

    from gpflow_ext.config import PEERS_HINT, peers_python
    from gpflow_ext.recipes.movielens_data import RATING_RANGE, dense_with_nan, rmse

    python = peers_python()
    if python is None:
        print(f"GPy peer skipped: no peers interpreter; {PEERS_HINT}")
        return None
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        t = sp.coo_matrix(target)
        np.savez(tmp / "in.npz", Y=dense_with_nan(train), rows=t.row, cols=t.col, vals=t.data)
        cmd = [python, str(Path(__file__).resolve()), str(tmp / "in.npz"), str(tmp / "out.json"),
               "--latent-dim", str(latent_dim), "--num-inducing", str(num_inducing),
               "--max-iters", str(max_iters), "--seed", str(seed)]
        env = dict(os.environ, OMP_NUM_THREADS="2", MKL_NUM_THREADS="2", OPENBLAS_NUM_THREADS="2")
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
        except subprocess.TimeoutExpired:
            print(f"GPy peer timed out after {timeout} s")
            return None
        if proc.returncode != 0:
            print("GPy peer failed:\n" + proc.stderr[-2000:])
            return None
        out = json.loads((tmp / "out.json").read_text())
    pred = np.asarray(out["pred"])
    out.update(rmse=rmse(np.clip(pred, *RATING_RANGE), t.data), rmse_unclipped=rmse(pred, t.data), num_test=int(t.nnz))
    out.pop("pred")
    return out


if __name__ == "__main__":
    main()
