"""Every model's training step with and without XLA (``fit(..., jit_compile=True)``) in one process.

    python -m benchmarks.xla_step [--steps 20] [--warmup 2] [--models svgp,mlgpf-sparse-sampled] [--output r.json]

For each model two twins (same seeds, same initial variables) take the step ``fit`` compiles (Adam 0.01,
minibatches and per-row noise keyed by ``(seed, step, row)`` as in ``fit``): one as a ``tf.function``, one
compiled with XLA. The twins alternate step by step on the same minibatches; after ``--warmup`` steps (tracing,
XLA compilation) the median wall seconds per step of each, their ratio and the largest |Δ objective| over the
timed steps are recorded. Synthetic data, small sizes: the ratio is what a fused step saves in per-op overhead
at these sizes, not a claim for large ones. Timings on a shared machine are noisy: compare the ratios.
"""
import time

import benchmarks.common  # noqa: F401  (first: TensorFlow's log lines off before it is imported)
from benchmarks.common import base_parser, print_table, write_results

import gpflow
import numpy as np
import scipy.sparse as sp
import tensorflow as tf
from gpflow.keras import tf_keras

from gpflow_ext.bijectors import planar_flow
from gpflow_ext.inducing_variables import SubspaceInducingPoints
from gpflow_ext.models import GPLVF, MLGPF, SVDKL, PreconditionedSVGP
from gpflow_ext.training.prepare import training_input
from gpflow_ext.training.step import NOISE_SPEC, compile_step, make_step
from gpflow_ext.training.updates import as_update
from gpflow_ext.variational import FreeInducingPoints, KISSGPGrid
from gpflow_ext.variational.grid_priors import CirculantGridPrior

N = 1200
BATCH = 200

#: model name -> what it is (the table's description)
MODELS = {
    "svgp": "stock gpflow SVGP, SE, D 5, M 50",
    "preconditioned-dense": "PreconditionedSVGP, subspace Z, SE, dense X D 100, M 50, R 30",
    "mlgpf-dense-exact": "MLGPF, linear, dense X D 100, K 50, P 10, M 50, R 30, every label",
    "mlgpf-sparse-sampled": "MLGPF, linear, CSR X D 2000 (2 %), K 200, P 10, M 50, R 30, 10 negatives",
    "svdkl-toeplitz": "SVDKL, MLP 10-32-4, KISS-GP grid 32, Toeplitz prior, C 5",
    "svdkl-circulant": "SVDKL, MLP 10-32-4, KISS-GP grid 32, circulant prior, C 5",
    "svdkl-points": "SVDKL, MLP 10-32-4, 32 free inducing points, C 5",
    "gplvf": "GPLVF, Gaussian q(X), D 20 (20 % missing), Q 5, M 20",
    "gplvf-flow": "GPLVF, planar flow of length 5, D 20 (20 % missing), Q 5, M 20",
}


def _multilabel(rng, sparse):
    D, K = (2000, 200) if sparse else (100, 50)
    X = sp.random(N, D, density=0.02 if sparse else 0.3, format="csr", random_state=rng.integers(1 << 31))
    Y = sp.random(N, K, density=0.05, format="csr", random_state=rng.integers(1 << 31))
    Y.data[:] = 1.0
    return X if sparse else X.toarray(), Y


def _net(seed):
    tf_keras.utils.set_random_seed(seed)
    return tf_keras.Sequential([
        tf_keras.Input((10,), dtype="float64"),
        tf_keras.layers.Dense(32, activation="relu", dtype="float64"),
        tf_keras.layers.Dense(4, dtype="float64"),
    ])


def build(name, seed):
    """(model, data) of one configuration; the same seed gives the same model and data."""
    rng = np.random.default_rng(seed)
    if name == "svgp":
        X = rng.normal(size=(N, 5))
        Y = np.sin(X[:, :1]) + 0.1 * rng.normal(size=(N, 1))
        Z = X[rng.choice(N, 50, replace=False)]
        model = gpflow.models.SVGP(gpflow.kernels.SquaredExponential(), gpflow.likelihoods.Gaussian(), Z, num_data=N)
        return model, (X, Y)
    if name == "preconditioned-dense":
        X, _ = _multilabel(rng, sparse=False)
        Y = np.sin(X[:, :1]) + 0.1 * rng.normal(size=(N, 1))
        iv = SubspaceInducingPoints.from_data(X, num_inducing=50, rank=30)
        kernel = gpflow.kernels.SquaredExponential(lengthscales=3.0)
        return PreconditionedSVGP(kernel, gpflow.likelihoods.Gaussian(), iv, num_data=N), (X, Y)
    if name.startswith("mlgpf"):
        sparse = "sparse" in name
        X, Y = _multilabel(rng, sparse)
        iv = SubspaceInducingPoints.from_data(X, num_inducing=50, rank=30)
        model = MLGPF(gpflow.kernels.Linear(), iv, Y.shape[1], 10, N, num_negative_samples=10 if sparse else None)
        return model, (X, Y)
    if name.startswith("svdkl"):
        X = rng.normal(size=(N, 10))
        Y = (np.abs(X[:, 0] + X[:, 1] * X[:, 2]) * 2).astype(int) % 5
        inducing = {"svdkl-toeplitz": KISSGPGrid(32), "svdkl-circulant": KISSGPGrid(32, prior=CirculantGridPrior()),
                    "svdkl-points": FreeInducingPoints(32)}[name]
        return SVDKL(_net(seed), 5, num_data=N, inducing=inducing), (X, Y)
    Y = rng.normal(size=(N, 20)) + np.sin(rng.normal(size=(N, 1)))
    Y[rng.random(Y.shape) < 0.2] = np.nan
    Y[:, 0] = np.where(np.isnan(Y[:, 0]), 0.0, Y[:, 0])
    flow = planar_flow(5, 5, seed=seed) if name == "gplvf-flow" else None
    model = GPLVF(Y, 5, 20, flow=flow, seed=seed)
    return model, model.training_data()


def twin_steps(name, seed, steps, warmup):
    """Per-step seconds and objectives of the tf.function twin and the XLA twin, alternating on the same batches."""
    record = {False: {"seconds": [], "objective": []}, True: {"seconds": [], "objective": []}}
    steps_of = {}
    for jit in (False, True):
        model, data = build(name, seed)
        training = training_input(model, data, BATCH, tf.float64, seed, True, None)
        variables = list(model.trainable_variables)
        update = as_update(None, 0.01)
        update.build(model, variables)
        signature = [training.element_spec[1], NOISE_SPEC]
        steps_of[jit] = compile_step(make_step(model, update.stages(model, variables), False), signature, jit)
    training.last_epoch = 1 + (warmup + steps) // training.steps_per_epoch  # one pipeline for every epoch
    done, epoch = 0, 1
    while done < warmup + steps:
        for rows, batch in training.epoch(epoch):  # the same minibatch for both twins
            noise = (tf.constant([seed, done], tf.int64), rows)  # fit's per-row noise key: (seed, step)
            for jit, step in steps_of.items():
                start = time.perf_counter()
                loss = float(step(batch, noise)[0])
                seconds = time.perf_counter() - start
                if done >= warmup:
                    record[jit]["seconds"].append(seconds)
                    record[jit]["objective"].append(loss)
            done += 1
            if done == warmup + steps:
                break
        epoch += 1
    plain, xla = record[False], record[True]
    return {
        "description": MODELS[name],
        "steps": steps,
        "tf_function_seconds_per_step": float(np.median(plain["seconds"])),
        "xla_seconds_per_step": float(np.median(xla["seconds"])),
        "tf_function_over_xla": float(np.median(plain["seconds"]) / np.median(xla["seconds"])),
        "max_abs_objective_difference": float(np.max(np.abs(np.subtract(plain["objective"], xla["objective"])))),
        "max_abs_objective": float(np.max(np.abs(plain["objective"]))),
        "tf_function_seconds": plain["seconds"],
        "xla_seconds": xla["seconds"],
    }


def main(argv=None):
    parser = base_parser(__doc__.split("\n")[0], data_dir=False, epochs=False, logdir=False,
                         smoke="svgp and gplvf, 2 timed steps")
    parser.add_argument("--steps", type=int, default=20, help="timed steps per model (after the warm-up)")
    parser.add_argument("--warmup", type=int, default=2, help="untimed steps first (tracing, XLA compilation)")
    parser.add_argument("--models", default=",".join(MODELS), help=f"comma-separated, of {', '.join(MODELS)}")
    args = parser.parse_args(argv)
    names = [m for m in args.models.split(",") if m]
    unknown = sorted(set(names) - set(MODELS))
    if unknown:
        parser.error(f"unknown models {unknown}; choose from {', '.join(MODELS)}")
    if args.smoke:
        names, args.steps = ["svgp", "gplvf"], 2
    results = {"args": {"steps": args.steps, "warmup": args.warmup, "seed": args.seed, "num_data": N,
                        "batch_size": BATCH}, "models": {}}
    for name in names:
        results["models"][name] = twin_steps(name, args.seed, args.steps, args.warmup)
        row = results["models"][name]
        print(f"{name}: tf.function {row['tf_function_seconds_per_step']:.5f} s/step, XLA "
              f"{row['xla_seconds_per_step']:.5f} s/step, max |Δ objective| {row['max_abs_objective_difference']:.2e}",
              flush=True)
    print_table([{"model": n, **results["models"][n]} for n in names],
                ["model", "tf_function_seconds_per_step", "xla_seconds_per_step", "tf_function_over_xla",
                 "max_abs_objective_difference"], title=f"training step, N {N}, batch {BATCH}, float64")
    write_results(results, args.output, seeds=[args.seed])
    return results


if __name__ == "__main__":
    main()
