"""MLGPF speed on Bibtex: time per training step and seconds per epoch against a stock GPflow SLFM.

    python -m benchmarks.mlgpf_speed [--data-dir DIR] [--repeats 7] [--float32] [--profile DIR] [--output r.json] [--smoke]

Measured in one process, interleaved round-robin so that load on a shared machine hits every
contender alike (medians reported):

* ``tf.matmul`` rate (GFLOP/s) on 2000×2000 matrices, the machine's reference speed;
* MLGPF s-LINEAR and LINEAR (paper settings: P=30, M=500, R=1000, |B|=500, all 159 labels) — one
  compiled Adam step (bound + gradients + update);
* the same s-LINEAR step differentiated through :func:`gpflow_ext.utilities.cholesky_inverse_and_logdet` instead
  of the closed-form gradient of :func:`gpflow_ext.variational.preconditioned_inverse_terms` (the peer of that
  gradient: the same model built with ``inverse_and_logdet=``; every peer's bound is checked equal to the
  model's before timing), in float64 and, with ``--float32``, float32;
* the same step with TensorFlow's own gradients of ``cholesky`` and ``triangular_solve``;
* the same step differentiated through the library's other way of forming L⁻¹ for that dtype (float64 takes
  triangular solves by default, so its peer is :func:`gpflow_ext.utilities.matmul_cholesky_inverse_and_logdet`;
  float32 takes matrix products, so its peer is :func:`gpflow_ext.utilities.solve_cholesky_inverse_and_logdet`),
  beside the step differentiated through the default, the measurement behind
  :func:`gpflow_ext.utilities.cholesky_inverse_and_logdet`'s choice;
* stock GPflow SLFM with the same M, P and batch: ``gpflow.models.SVGP`` with
  ``LinearCoregionalization`` (K=159 outputs from P latent GPs with linear kernels),
  ``SharedIndependentInducingVariables`` (one free Z [M, D]), full-covariance q(u)
  and a Bernoulli likelihood with a logistic link (its default quadrature), on dense minibatches.

Seconds per epoch = median step time × ceil(N / |B|) (N = 4 880; 10 steps). The MLGPF step's
FLOPs are counted from its matrix operations (forward; the backward pass is counted as twice
the forward, the usual estimate; a triangular factor, inverse or solve at its triangular cost, whichever
way it is computed) and divided by the step time to give the achieved GFLOP/s, printed beside the matmul
rate. The float32 step computes L⁻¹ and its gradient by full matrix products, which multiply by the zero
triangle too: it executes more multiply-adds than are counted, so the count is of the work the bound needs. The paper's
Table 5 gives 0.94 min/epoch for s-LINEAR on Bibtex.
"""
import math
import time
from pathlib import Path

import benchmarks.common  # noqa: F401  (first: TensorFlow's log lines off before it is imported)
from benchmarks.common import base_parser, profile_op_seconds, write_results

import numpy as np


def matmul_gflops(dtype, n: int = 2000, repeats: int = 5) -> float:
    import tensorflow as tf

    a = tf.random.normal([n, n], dtype=dtype)
    b = tf.random.normal([n, n], dtype=dtype)
    tf.matmul(a, b).numpy()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        tf.matmul(a, b).numpy()
        times.append(time.perf_counter() - start)
    return 2 * n**3 / np.median(times) / 1e9


def mlgpf_forward_flops(B, nnz_per_row, M, R, P, K, D=None, subspace=True, H=20) -> float:
    """Forward FLOPs of one MLGPF bound evaluation (multiply-add = 2)."""
    flops = 0.0
    if subspace:
        flops += 2 * (M * R * R + M * M * R)  # K_Z = A (X̃X̃ᵀ) Aᵀ      (eq. 5)
        flops += 2 * B * nnz_per_row * R + 2 * M * R * B  # (X_b X̃ᵀ) Aᵀ          (eq. 6)
    else:
        flops += 2 * M * M * D + 2 * M * D * B  # Z Zᵀ and Z X_bᵀ (dense)
    flops += P * M**3 / 3  # Cholesky of K + Σ_p
    flops += P * M**3  # L_p⁻¹ (KL trace, eq. 22)
    flops += 2 * P * M * M * B  # L_p⁻¹ K_ZX as a product with the L_p⁻¹ above (variances, eq. 19)
    flops += 2 * M * B * P  # means K_XZ μ
    flops += 2 * 2 * B * P * K + 4 * B * K * H  # utilities (eq. 21) and quadrature
    return flops


def build_slfm(X, Y, Z, P, K, loadings):
    import gpflow
    import tensorflow as tf

    kernel = gpflow.kernels.LinearCoregionalization(
        [gpflow.kernels.Linear(variance=1.0 / 68.7) for _ in range(P)], W=loadings
    )
    iv = gpflow.inducing_variables.SharedIndependentInducingVariables(gpflow.inducing_variables.InducingPoints(Z))
    likelihood = gpflow.likelihoods.Bernoulli(invlink=tf.sigmoid)  # logistic link, Gauss-Hermite quadrature
    return gpflow.models.SVGP(kernel, likelihood, iv, num_latent_gps=P, num_data=X.shape[0], whiten=False)


AUTODIFF_PEER = "s-linear, TF Cholesky gradient"
DIFFERENTIATED_PEER = "s-linear, gradient through L⁻¹"
#: dtype -> (the peer's name, the library's non-default way of forming L⁻¹ and its gradient for that dtype)
OTHER_PATH_PEERS = {
    "float64": ("s-linear, matrix-product L⁻¹ and gradient", "matmul_cholesky_inverse_and_logdet"),
    "float32": ("s-linear, triangular-solve L⁻¹ and gradient", "solve_cholesky_inverse_and_logdet"),
}


def autodiff_cholesky_inverse_and_logdet(A):
    """(L⁻¹, log|A|) through ``tf.linalg.cholesky`` and ``triangular_solve``, differentiated by TensorFlow."""
    import tensorflow as tf

    L = tf.linalg.cholesky(A)  # [P, M, M]
    eye = tf.eye(tf.shape(A)[-1], batch_shape=tf.shape(A)[:-2], dtype=A.dtype)
    logdet = 2.0 * tf.reduce_sum(tf.math.log(tf.linalg.diag_part(L)), axis=-1)  # [P]
    return tf.linalg.triangular_solve(L, eye, lower=True), logdet


def profile(step, logdir, steps: int = 5, largest: int = 15) -> dict:
    """``step``'s trace over ``steps`` steps (:func:`benchmarks.common.profile_op_seconds`): its ``largest`` ops and
    op types by seconds per step as ``[name, seconds]`` pairs, largest first, the rest summed as ``"(other)"``."""
    trace = profile_op_seconds(lambda: float(step()), steps, logdir)
    out = {"wall_seconds_per_step": trace["wall_seconds_per_step"], "steps": steps}
    for key in ("op_seconds", "op_type_seconds"):
        items = list(trace[key].items())
        out[key] = [list(item) for item in items[:largest]] + [["(other)", sum(seconds for _, seconds in items[largest:])]]
    total = sum(trace["op_type_seconds"].values())
    print(f"{logdir}: {1e3 * out['wall_seconds_per_step']:.1f} ms/step wall, {1e3 * total:.1f} ms of ops")
    for op_type, seconds in out["op_type_seconds"]:
        print(f"  {op_type:40s} {1e3 * seconds:8.1f} ms  {100 * seconds / total:5.1f} %")
    return out


def compiled_step(model, data):
    """One compiled training step of ``fit`` (Adam 1e-3) on ``data``, as a function of no arguments."""
    from benchmarks.common import compiled_training_step

    from gpflow.keras import tf_keras

    step = compiled_training_step(model, tf_keras.optimizers.Adam(1e-3))
    return lambda: step(data)


def main(argv=None):
    parser = base_parser(__doc__.splitlines()[0], epochs=False, logdir=False, seed=False,
                         smoke="P = 3, M = 20, R = 30, batch 50, one timed step each")
    parser.add_argument("--repeats", type=int, default=7, help="timed steps per contender")
    parser.add_argument("--float32", action="store_true", help="also time MLGPF s-LINEAR in float32")
    parser.add_argument("--no-slfm", action="store_true", help="skip the SLFM contender")
    parser.add_argument("--profile", default=None,
                        help="also trace the MLGPF s-LINEAR steps with tf.profiler into this folder and store the "
                             "seconds per step of their largest ops and op types")
    args = parser.parse_args(argv)

    import gpflow
    import tensorflow as tf

    from gpflow_ext import utilities
    from gpflow_ext.recipes.mlgpf import build_mlgpf, load_xmc
    from gpflow_ext.recipes.mlgpf_config import DATASET_SETTINGS, paper_config
    from gpflow_ext.utilities import to_input_tensor

    settings = dict(DATASET_SETTINGS["bibtex"])
    if args.smoke:
        settings.update(num_latent_gps=3, num_inducing=20, rank=30, batch_size=50, kmeans_max_iter=5)
        args.repeats = 1
    P, M, R, B = settings["num_latent_gps"], settings["num_inducing"], settings["rank"], settings["batch_size"]
    sizes = {key: settings[key] for key in ("num_latent_gps", "num_inducing", "rank", "batch_size", "kmeans_max_iter")
             if key in settings}
    (X_train, Y_train), _ = load_xmc("bibtex", args.data_dir)
    N, D = X_train.shape
    K = Y_train.shape[1]
    steps_per_epoch = math.ceil(N / B)
    rows = np.sort(np.random.default_rng(0).choice(N, size=B, replace=False))
    X_b, Y_b = X_train[rows], Y_train[rows]
    nnz_per_row = X_b.nnz / B

    contenders = {}
    flops = {}
    bound_differences = {}

    def add_autodiff_peer(name, dtype, inverse_and_logdet=autodiff_cholesky_inverse_and_logdet):
        """The s-linear step with another ``inverse_and_logdet``, on a model of its own (same initialisation)."""
        config = paper_config("s-linear", "bibtex", **sizes)
        peer = build_mlgpf(config, X_train, Y_train, inverse_and_logdet=inverse_and_logdet)
        reference = build_mlgpf(config, X_train, Y_train)  # the same initialisation, the library's gradient
        data = (to_input_tensor(X_b, dtype), to_input_tensor(Y_b, dtype))
        contenders[name] = compiled_step(peer, data)
        bound_differences[name] = abs(float(peer.elbo(data)) - float(reference.elbo(data)))  # equal bounds
        flops[name] = flops["MLGPF s-linear (float64)"]

    def add_differentiated_peer(dtype):
        """The s-linear step differentiated through the library's L⁻¹ for ``dtype``; returns its name."""
        add_autodiff_peer(f"{DIFFERENTIATED_PEER} ({dtype})", getattr(tf, dtype), utilities.cholesky_inverse_and_logdet)
        return f"{DIFFERENTIATED_PEER} ({dtype})"

    def add_other_path_peer(dtype):
        """The s-linear step with the library's other way of forming L⁻¹ for ``dtype``; returns its name."""
        name, function = OTHER_PATH_PEERS[dtype]
        add_autodiff_peer(f"{name} ({dtype})", getattr(tf, dtype), getattr(utilities, function))
        return f"{name} ({dtype})"

    for method in ("s-linear", "linear"):
        model = build_mlgpf(paper_config(method, "bibtex", **sizes), X_train, Y_train)
        contenders[f"MLGPF {method} (float64)"] = compiled_step(model, (to_input_tensor(X_b), to_input_tensor(Y_b)))
        flops[f"MLGPF {method} (float64)"] = 3 * mlgpf_forward_flops(B, nnz_per_row, M, R, P, K, D, method == "s-linear")
    add_differentiated_peer("float64")
    add_autodiff_peer(AUTODIFF_PEER + " (float64)", tf.float64)
    add_other_path_peer("float64")
    if not args.no_slfm:
        Z = model.inducing_variable.Z.numpy()  # the LINEAR model's k-means Z
        slfm = build_slfm(X_train, Y_train, Z, P, K, model.loadings.numpy())
        data = (tf.constant(X_b.toarray()), tf.constant(Y_b.toarray()))
        contenders["stock GPflow SLFM (float64)"] = compiled_step(slfm, data)
    if args.float32:
        gpflow.config.set_default_float(np.float32)
        model32 = build_mlgpf(paper_config("s-linear", "bibtex", **sizes), X_train, Y_train)
        contenders["MLGPF s-linear (float32)"] = compiled_step(
            model32, (to_input_tensor(X_b, tf.float32), to_input_tensor(Y_b, tf.float32))
        )
        float(contenders["MLGPF s-linear (float32)"]())  # trace while float32 is the default
        flops["MLGPF s-linear (float32)"] = flops["MLGPF s-linear (float64)"]
        float(contenders[add_differentiated_peer("float32")]())
        add_autodiff_peer(AUTODIFF_PEER + " (float32)", tf.float32)
        float(contenders[AUTODIFF_PEER + " (float32)"]())
        float(contenders[add_other_path_peer("float32")]())
        gpflow.config.set_default_float(np.float64)

    for step in contenders.values():  # trace + warm up
        float(step())
    times = {name: [] for name in contenders}
    rates = {"float64": [], "float32": []}
    for _ in range(args.repeats):  # round-robin so that machine load hits everyone alike
        rates["float64"].append(matmul_gflops(tf.float64))
        rates["float32"].append(matmul_gflops(tf.float32))
        for name, step in contenders.items():
            start = time.perf_counter()
            float(step())
            times[name].append(time.perf_counter() - start)

    matmul64, matmul32 = np.median(rates["float64"]), np.median(rates["float32"])
    reference = np.median(times["stock GPflow SLFM (float64)"]) if "stock GPflow SLFM (float64)" in times else None
    print(f"Bibtex, P={P}, M={M}, R={R}, |B|={B}, K={K}, D={D}; {args.repeats} interleaved steps each; medians")
    print(f"TF matmul rate in this run: float64 {matmul64:.1f} GFLOP/s, float32 {matmul32:.1f} GFLOP/s")
    width = max(len(name) for name in times)
    header = f"{'contender':{width}s} {'s/step':>8s} {'s/epoch':>8s} {'SLFM/this':>10s} {'GFLOP/s':>8s} {'% of matmul':>11s}"
    print(header)
    print("-" * len(header))
    results = {}
    for name, ts in times.items():
        median = float(np.median(ts))
        gflops = flops[name] / median / 1e9 if name in flops else None
        peak = matmul32 if "float32" in name else matmul64
        ratio = reference / median if reference else None
        results[name] = {"seconds_per_step": median, "seconds_per_epoch": median * steps_per_epoch,
                         "speedup_vs_slfm": ratio, "gflops": gflops, "all_step_seconds": ts}
        print(f"{name:{width}s} {median:8.3f} {median * steps_per_epoch:8.2f} "
              f"{(f'{ratio:.2f}x' if ratio else '-'):>10s} {(f'{gflops:.1f}' if gflops else '-'):>8s} "
              f"{(f'{100 * gflops / peak:.0f}%' if gflops else '-'):>11s}")
    for dtype in ("float64", "float32"):
        for peer, what in ((f"{DIFFERENTIATED_PEER} ({dtype})", DIFFERENTIATED_PEER[len("s-linear, "):]),
                           (f"{AUTODIFF_PEER} ({dtype})", "TensorFlow's Cholesky gradient"),
                           (f"{OTHER_PATH_PEERS[dtype][0]} ({dtype})", OTHER_PATH_PEERS[dtype][0][len("s-linear, "):])):
            if peer in results:
                ratio = results[peer]["seconds_per_step"] / results[f"MLGPF s-linear ({dtype})"]["seconds_per_step"]
                results[peer]["time_over_s_linear"] = ratio
                print(f"{dtype}: the step with {what} takes {ratio:.2f}x the s-linear step's time "
                      f"(bounds at the same parameters differ by {bound_differences[peer]:.2e})")
                results[peer]["bound_difference"] = bound_differences[peer]
        other, differentiated = f"{OTHER_PATH_PEERS[dtype][0]} ({dtype})", f"{DIFFERENTIATED_PEER} ({dtype})"
        if other in results and differentiated in results:
            ratio = results[other]["seconds_per_step"] / results[differentiated]["seconds_per_step"]
            results[other]["time_over_default_path"] = ratio
            print(f"{dtype}: differentiated through L⁻¹, the {OTHER_PATH_PEERS[dtype][1]} step takes {ratio:.2f}x "
                  "the default path's")
    if args.profile:
        for name in (name for name in contenders if name.startswith("MLGPF s-linear")):
            results[name]["profile"] = profile(contenders[name], Path(args.profile) / name.replace(" ", "_"))
    print("paper Table 5 (Xeon E5-2667 v3): s-LINEAR 0.94 min/epoch = 56.4 s/epoch, LINEAR 58.2 s/epoch")
    out = {"matmul_gflops": {"float64": matmul64, "float32": matmul32}, "results": results}
    write_results({"dataset": "bibtex", "P": P, "M": M, "R": R, "batch_size": B, "K": K, "D": D,
                   "repeats": args.repeats, **out}, args.output)
    return out


if __name__ == "__main__":
    main()
