"""Peer: GPy's Bayesian GPLVM with missing_data=True (BayesianGPLVMMiniBatch) (run by the peers interpreter, numpy 2).

    $GPFLOW_EXT_PEERS_PYTHON benchmarks/gpy_bgplvm_missing.py in.npz out.json [--latent-dim Q] ...

``in.npz`` holds ``Y`` [N, D] with NaN for missing entries and the target entries
(``rows``, ``cols``, ``vals``). Trains with L-BFGS-B for ``--max-iters`` iterations, predicts
the target entries at the rows' latent means and writes predictions and timings as JSON.
One GPy objective+gradient evaluation touches every row once, i.e. it is one epoch; each evaluation
is timed, and the median leaves out the first (which also builds GPy's caches).
"""
import argparse
import json
import time

import numpy as np


def main():
    # plain argparse: this runs under the peers interpreter, without experiments.common's imports
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


if __name__ == "__main__":
    main()
