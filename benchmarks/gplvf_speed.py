"""GPLVF speed: seconds per epoch on MovieLens 100K against GPy's missing-data Bayesian GPLVM in the
same run, and compiled step time vs planar flow length.

    python -m benchmarks.gplvf_speed --data-dir DIR [--lengths 0,5,10,20,50] [--gpy-iters 10] [--output r.json]
    python -m benchmarks.gplvf_speed --passes-only [--batch-sizes 64,256,1024] [--variance-by rows,pairs]
        [--pass-epochs 4] [--output r.json]

* GPLVF: one epoch = one pass of row minibatches over all users (SVI, eq. 22-23); median over
  epochs after the first (tracing).
* GPy: ``BayesianGPLVMMiniBatch(missing_data=True)`` (``$GPFLOW_EXT_PEERS_PYTHON``); one objective +
  gradient evaluation touches every row once, so seconds per evaluation = seconds per epoch: the
  median over evaluations after the first (the first also builds GPy's caches and is reported apart).
* Passes (``passes``): seconds per pass (epoch) of ``fit`` with Adam 0.01 at each of ``--batch-sizes`` and each
  ``--variance-by`` (``RowSums()``, the default for the Gaussian likelihood; ``AutodiffRowSums()``, the same bound
  with its variance term differentiated by autodiff, the peer of the written-out gradient; and ``PerPair()``)
  (a batch of N rows or more is one full-batch step per pass), for the step as a ``tf.function`` (``fit``'s
  default) and compiled with XLA (``jit_compile=True``): the median over the epochs after the first (the first
  traces and compiles; its seconds are kept), the GPy median seconds per evaluation over ours for each, and the
  best of the two. GPy runs first in the same run (a subprocess of the same benchmark); the machine's load moves
  both, so the ratios, not the seconds, are compared.
* Flow length: median seconds of one compiled training step (B rows, S samples) per length,
  with the ratio to the Gaussian q(X) (length 0).
* Observed pairs vs dense: GPLVF evaluates q(f_d(x_n)) only at observed (n, d) pairs
  (``conditional_at_pairs``); the peer is the same model with GPflow's dense conditional over all D
  outputs, masked and summed (``DenseGPLVF``, the library's form before the pairwise one): median
  training-step seconds and the seconds of ``infer_latent`` for held-out rows, with ratios.

Both peers see the same users x movies matrix (u1.base), same Q and M. Timings on a shared
machine are noisy: compare the ratios printed, not the absolute seconds.
"""
import time

import benchmarks.common  # noqa: F401  (first: TensorFlow's log lines off before it is imported)
from benchmarks.common import base_parser, compiled_training_step, print_table, write_results

import numpy as np
import tensorflow as tf

from benchmarks.gpy_bgplvm_missing import gpy_peer
from gpflow_ext.bijectors import planar_flow
from gpflow_ext.conditionals.pairs import PerOutput, PerPair, RowSums
from gpflow_ext.data import load_movielens
from gpflow_ext.data.movielens import ratings_matrix
from gpflow_ext.likelihoods.masked import masked_variational_expectations
from gpflow_ext.models import GPLVF
from gpflow_ext.recipes.gplvf import infer_latent, train_with_fit
from gpflow_ext.training import fit


class DenseGPLVF(GPLVF):
    """GPLVF whose bound computes q(f_d(x_n)) for every output d and masks the unobserved ones (the peer)."""

    def row_terms(self, values, mask, x_mean, x_var, base_noise):
        x, kl_x = self.latent_samples_and_kl(x_mean, x_var, base_noise)  # [S, B, Q], [B]
        f_mean, f_var = self.predict_f(x)  # [S, B, D]
        expected_log_lik = masked_variational_expectations(
            self.likelihood, x, tf.broadcast_to(values[None], tf.shape(f_mean)),
            tf.broadcast_to(tf.cast(mask, tf.bool)[None], tf.shape(f_mean)), f_mean, f_var,
        )  # [S, B]
        return tf.reduce_mean(expected_log_lik, axis=0), kl_x


def infer_seconds(model, rows, num_steps, num_samples):
    infer_latent(model, rows, num_steps=1, num_samples=num_samples)  # trace
    start = time.perf_counter()
    infer_latent(model, rows, num_steps=num_steps, num_samples=num_samples, decay="cosine")
    return time.perf_counter() - start


def step_seconds(model, data, batch_size, repeats, seed=0):
    """Median seconds of one compiled training step of ``fit`` (Adam 0.01) on a fixed minibatch."""
    rng = np.random.default_rng(seed)
    rows = rng.choice(data[0].shape[0], batch_size, replace=False)
    batch = tuple(tf.constant(a[rows]) for a in data)
    step = compiled_training_step(model, learning_rate=0.01)
    step(batch)  # trace
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        float(step(batch))
        times.append(time.perf_counter() - start)
    return float(np.median(times))


class AutodiffRowSums(RowSums):
    """``RowSums()`` with the variance sums' gradient by autodiff (the peer of the written-out gradient of
    ``masked_quadratic_forms``): the masked product with the lower triangles of S_d = L_d L_dᵀ, then
    ``tf.GradientTape`` through it."""

    def quadratic_forms(self, A, L, observed):
        num_inducing = L.shape[-1]
        rows, cols = np.tril_indices(num_inducing)
        S = tf.reshape(tf.matmul(L, L, transpose_b=True), [tf.shape(L)[0], -1])  # [D, M*M]
        T_lower = tf.matmul(observed, tf.gather(S, rows * num_inducing + cols, axis=1))  # [B, M(M+1)/2]
        weights = tf.constant(np.where(rows == cols, 1.0, 2.0), dtype=A.dtype)
        outer = tf.gather(A, rows, axis=-1) * tf.gather(A, cols, axis=-1) * weights  # [S, B, M(M+1)/2]
        return tf.reduce_sum(outer * T_lower[None], axis=-1)  # [S, B]


VARIANCE_BY = {"rows": RowSums, "rows-autodiff": AutodiffRowSums, "pairs": PerPair, "outputs": PerOutput}


def bound_and_gradients(model, batch, base_noise) -> tuple[float, list[np.ndarray]]:
    """The bound of ``model`` on one minibatch with fixed base noise, and its gradients in the trainable variables."""
    with tf.GradientTape() as tape:
        bound = model.elbo_given_base_noise(batch, base_noise)
    return float(bound), [tf.convert_to_tensor(g).numpy() for g in tape.gradient(bound, model.trainable_variables)]


def relative_differences(ours, peer) -> dict:
    """Largest relative differences of two ``(bound, gradients)`` of :func:`bound_and_gradients`, relative to ours."""
    (bound, grads), (peer_bound, peer_grads) = ours, peer
    gradient_diff = max(float(np.abs(p - g).max() / max(np.abs(g).max(), 1e-300)) for g, p in zip(grads, peer_grads))
    return {"bound relative difference": abs(peer_bound - bound) / abs(bound), "gradient relative difference": gradient_diff}


def autodiff_peer_check(train, latent_dim, num_inducing, seed, batch_size=256) -> dict:
    """Bound and gradients of ``RowSums()`` and its autodiff peer on one minibatch with the same parameters and base
    noise (perturbed from their initial values): the largest relative differences. The timings compare two ways of
    differentiating one objective only if these are at rounding level."""
    results = []
    for variance_by in (RowSums(), AutodiffRowSums()):
        model = GPLVF(train, latent_dim, num_inducing, num_samples=1, seed=seed, variance_by=variance_by)
        data = model.training_data()
        rows = np.random.default_rng(seed).choice(data[0].shape[0], min(batch_size, data[0].shape[0]), replace=False)
        model.q_mu.assign(np.random.default_rng(seed).standard_normal(model.q_mu.shape))
        q_sqrt = np.tril(0.3 * np.random.default_rng(seed + 1).standard_normal(model.q_sqrt.shape))
        model.q_sqrt.assign(q_sqrt + np.eye(num_inducing))
        noise = tf.constant(np.random.default_rng(seed + 2).standard_normal((1, rows.size, latent_dim)))
        results.append(bound_and_gradients(model, tuple(tf.constant(a[rows]) for a in data), noise))
    check = relative_differences(*results)
    if check["bound relative difference"] > 1e-10 or check["gradient relative difference"] > 1e-8:
        raise AssertionError(f"AutodiffRowSums differs from RowSums: {check}")
    print(f"autodiff peer check: {check}", flush=True)
    return check


def pass_seconds(train, batch_sizes, epochs, latent_dim, num_inducing, seed, variances=("rows",)):
    """``passes`` rows: per batch size, ``variance_by`` and step compilation, median seconds per pass over epochs
    2.. of ``fit``."""
    rows = []
    for batch_size in batch_sizes:
        for variance in variances:
            for name, jit in (("tf.function", False), ("XLA", True)):
                model = GPLVF(train, latent_dim, num_inducing, num_samples=1, seed=seed,
                              variance_by=VARIANCE_BY[variance]())
                history = fit(model, model.training_data(), epochs=epochs, batch_size=batch_size, learning_rate=0.01,
                              seed=seed, progress=False, jit_compile=jit)
                seconds = history.seconds_per_epoch
                rows.append({"batch size": batch_size, "variance_by": variance, "step": name,
                             "steps/pass": history.steps_per_epoch, "s/pass": float(np.median(seconds[1:] or seconds)),
                             "first pass s": seconds[0], "pass seconds": list(seconds),
                             "final objective": history.objective[-1]})
                print(f"B {batch_size} {variance} {name}: {rows[-1]['s/pass']:.3f} s/pass (first {seconds[0]:.1f} s)",
                      flush=True)
    return rows


def passes_table(rows, gpy_seconds):
    """Adds the GPy / ours ratio to each ``passes`` row and returns the summary per batch size and ``variance_by``
    (best step)."""
    summary = []
    for row in rows:
        row["GPy / ours"] = None if gpy_seconds is None else gpy_seconds / row["s/pass"]
    for key in dict.fromkeys((r["batch size"], r["variance_by"]) for r in rows):
        mine = {r["step"]: r for r in rows if (r["batch size"], r["variance_by"]) == key}
        best = min(mine.values(), key=lambda r: r["s/pass"])
        summary.append({"batch size": key[0], "variance_by": key[1], "steps/pass": best["steps/pass"],
                        "tf.function s/pass": mine["tf.function"]["s/pass"], "XLA s/pass": mine["XLA"]["s/pass"],
                        "best": best["step"], "GPy s/pass": gpy_seconds, "GPy / default": mine["tf.function"]["GPy / ours"],
                        "GPy / best": best["GPy / ours"]})
    print_table(summary, list(summary[0]), title="seconds per pass over u1.base: GPLVF (fit) and GPy, one run")
    return summary


def main(argv=None):
    parser = base_parser(__doc__.split("\n")[0], logdir=False,
                         smoke="u1.base's first 100 users, 2 epochs, 2 repeats")
    parser.add_argument("--lengths", default="0,5,10,20,50")
    parser.add_argument("--latent-dim", type=int, default=10)
    parser.add_argument("--num-inducing", type=int, default=20)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--gpy-iters", type=int, default=10)
    parser.add_argument("--infer-rows", type=int, default=100, help="held-out rows for the infer_latent timing")
    parser.add_argument("--infer-steps", type=int, default=100)
    parser.add_argument("--infer-samples", type=int, default=8)
    parser.add_argument("--batch-sizes", default="64,256,1024", help="batch sizes of the per-pass comparison")
    parser.add_argument("--pass-epochs", type=int, default=4, help="epochs per batch size and step (first: tracing)")
    parser.add_argument("--variance-by", default="rows,rows-autodiff,pairs",
                        help="GPLVF variance_by choices of the per-pass comparison, side by side (rows, rows-autodiff: "
                             "RowSums with its variance gradient by autodiff, pairs, outputs)")
    parser.add_argument("--passes-only", action="store_true",
                        help="GPy and the per-pass comparison only (no flow-length or pairs-vs-dense steps)")
    args = parser.parse_args(argv)
    batch_sizes = [int(v) for v in args.batch_sizes.split(",") if v.strip()]
    if not batch_sizes or min(batch_sizes) < 1:
        parser.error(f"--batch-sizes must be positive integers, got {args.batch_sizes!r}")
    variances = [v.strip() for v in args.variance_by.split(",") if v.strip()]
    if not variances or any(v not in VARIANCE_BY for v in variances):
        parser.error(f"--variance-by must list some of {sorted(VARIANCE_BY)}, got {args.variance_by!r}")
    if args.pass_epochs < 2:
        parser.error(f"--pass-epochs must be at least 2 (the first traces), got {args.pass_epochs}")
    epochs = args.epochs or (2 if args.smoke else 4)
    ml = load_movielens(args.data_dir, split="u1", download=False)
    train, test = ratings_matrix(ml.train), ratings_matrix(ml.test)
    keep = np.diff(train.indptr) > 0
    train, test = train[keep], test[keep]
    if args.smoke:
        train, test = train[:60, :100], test[:60, :100]
        keep = np.diff(train.indptr) > 0
        train, test = train[keep], test[keep]
        args.repeats, args.pass_epochs = 2, 2
    results = {"matrix": list(train.shape), "ratings": int(train.nnz),
               "args": {"latent_dim": args.latent_dim, "num_inducing": args.num_inducing, "seed": args.seed,
                        "gpy_iters": args.gpy_iters, "batch_sizes": batch_sizes, "pass_epochs": args.pass_epochs,
                        "variance_by": variances}}
    gpy = gpy_peer(train, test, latent_dim=args.latent_dim, num_inducing=args.num_inducing,
                   max_iters=args.gpy_iters, seed=args.seed)
    if gpy is not None:
        results["gpy_seconds_per_epoch"] = gpy["median_seconds_per_evaluation"]
        results["gpy_first_evaluation_seconds"] = gpy["first_evaluation_seconds"]
        results["gpy_objective_evaluations"] = gpy["objective_evaluations"]
    gpy_seconds = results.get("gpy_seconds_per_epoch")
    if "rows-autodiff" in variances:
        results["autodiff_peer_check"] = autodiff_peer_check(train, args.latent_dim, args.num_inducing, args.seed)
    results["passes"] = pass_seconds(train, batch_sizes, args.pass_epochs, args.latent_dim, args.num_inducing,
                                     args.seed, variances)
    results["passes_summary"] = passes_table(results["passes"], gpy_seconds)
    if args.passes_only:
        write_results(results, args.output, seeds=[args.seed])
        return results

    model = GPLVF(train, args.latent_dim, args.num_inducing, num_samples=1)
    history = train_with_fit(model, epochs=epochs, batch_size=args.batch_size, learning_rate=0.01, seed=args.seed)
    results["gplvf_gaussian_seconds_per_epoch"] = history.median_seconds_per_epoch()
    if gpy is not None:
        results["gpy_over_gplvf_ratio"] = gpy["median_seconds_per_evaluation"] / results["gplvf_gaussian_seconds_per_epoch"]
    print_table(
        [{"model": "GPLVF (Gaussian q(X), SVI)", "s/epoch": results["gplvf_gaussian_seconds_per_epoch"]},
         {"model": "GPy BGPLVM missing_data", "s/epoch": results.get("gpy_seconds_per_epoch"),
          "ratio": results.get("gpy_over_gplvf_ratio")}],
        ["model", "s/epoch", "ratio"], title=f"MovieLens u1.base {train.shape}, Q={args.latent_dim}, M={args.num_inducing}",
    )

    rows = []
    data = model.training_data()
    base = None
    for length in [int(v) for v in args.lengths.split(",")]:
        flow = planar_flow(length, args.latent_dim) if length else None
        m = GPLVF(train, args.latent_dim, args.num_inducing, flow=flow, num_samples=1)
        seconds = step_seconds(m, data, min(args.batch_size, data[0].shape[0]), args.repeats)
        base = seconds if base is None else base
        rows.append({"flow length": length, "s/step": seconds, "ratio to Gaussian": seconds / base})
    results["step_seconds_vs_flow_length"] = rows
    print_table(rows, ["flow length", "s/step", "ratio to Gaussian"], title="compiled step time vs planar flow length")

    held_out = train[-min(args.infer_rows, train.shape[0]):]
    rows = []
    for name, cls in (("observed pairs (GPLVF)", GPLVF), ("dense, masked (peer)", DenseGPLVF)):
        m = cls(train, args.latent_dim, args.num_inducing, flow=planar_flow(20, args.latent_dim), num_samples=1)
        rows.append({
            "bound": name,
            "s/step": step_seconds(m, data, min(args.batch_size, data[0].shape[0]), args.repeats),
            "infer_latent s": infer_seconds(m, held_out, args.infer_steps, args.infer_samples),
        })
    for key in ("s/step", "infer_latent s"):
        rows[1][f"{key} ratio"] = rows[1][key] / rows[0][key]
    results["observed_pairs_vs_dense"] = rows
    print_table(rows, ["bound", "s/step", "s/step ratio", "infer_latent s", "infer_latent s ratio"],
                title=f"Planar 20: training step (B={args.batch_size}) and infer_latent ({held_out.shape[0]} rows, "
                      f"{args.infer_samples} draws x {args.infer_steps} steps), pairs vs dense")
    write_results(results, args.output, seeds=[args.seed])
    return results


if __name__ == "__main__":
    main()
