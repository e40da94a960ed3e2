"""SV-DKL speed, all in one run (ratios; medians of compiled training steps):

1. SV-DKL training step vs the plain network's step at the same batch (target <= 1.3x), with the paper's zero mean and
   with the linear class-score mean the recipes build;
2. SV-DKL step at m grid points per GP for m = 70 ... 2000, relative to m = 70 (target <= 1.5x at
   m = 2000; the paper's Figure 2c-d), with the exact Toeplitz prior (Cholesky per step) and the
   circulant-embedding prior (``CirculantGridPrior()``: FFT square root, no Cholesky), beside the SVGP-style GP layer
   with ordinary inducing points
   on the same features (GPflow's Kuu/Kuf/gauss_kl, cost O(m^3 + B m^2));
3. GPyTorch's SV-DKL (GridInterpolationVariationalStrategy, CPU torch, float64) on the same sizes,
   run in a subprocess with ``$GPFLOW_EXT_PEERS_PYTHON``.

    python -m benchmarks.svdkl_speed [--batch-size 4096] [--grid-sizes 70,500,2000] [--output results.json]

Network d-1000-1000-500-50-c (Adult-like d = 108, c = 2, one GP per output feature).
"""
import json
import subprocess
import time
from pathlib import Path

import benchmarks.common  # noqa: F401  (first: TensorFlow's log lines off before it is imported)
from benchmarks.common import base_parser, compiled_training_step

import gpflow
import numpy as np
import tensorflow as tf
from gpflow.keras import tf_keras

from gpflow_ext.config import peers_python
from gpflow_ext.models import SVDKL
from gpflow_ext.results import write_results
from gpflow_ext.variational import CirculantGridPrior, FreeInducingPoints, KISSGPGrid, ToeplitzGridPrior

HERE = Path(__file__).resolve().parent


def build_network(d, c, hidden):
    tf_keras.utils.set_random_seed(0)
    f = gpflow.default_float()
    layers = [tf_keras.Input((d,), dtype=f)]
    layers += [tf_keras.layers.Dense(h, activation="relu", dtype=f) for h in hidden]
    layers += [tf_keras.layers.Dense(c, dtype=f)]
    return tf_keras.Sequential(layers)


def median_step_seconds(step, repeats):
    for _ in range(2):  # trace + warm up
        step()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        float(step())
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


class NetworkLoss(tf.Module):
    """The plain network's softmax cross-entropy as a ``training_loss`` (the baseline step)."""

    def __init__(self, network):
        super().__init__()
        self.network = network

    def training_loss(self, data):
        X, Y = data
        logits = self.network(X, training=True)
        return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=tf.cast(Y[:, 0], tf.int32),
                                                                             logits=logits))


def timed_step(model, data, variables):
    """One compiled training step of ``fit`` (Adam 1e-3) on a fixed batch, as a function of no arguments."""
    step = compiled_training_step(model, tf_keras.optimizers.Adam(1e-3), variables=variables)
    return lambda: step(data)


def main(argv=None):
    parser = base_parser(__doc__.splitlines()[0], data_dir=False, epochs=False, logdir=False, seed=False)
    parser.add_argument("--batch-size", type=int, default=4096, help="B")
    parser.add_argument("--input-dim", type=int, default=108, help="d, the network's input width")
    parser.add_argument("--num-classes", type=int, default=2, help="c")
    parser.add_argument("--hidden", default="1000,1000,500,50", help="hidden layer widths")
    parser.add_argument("--grid-sizes", default="70,500,2000", help="comma-separated grid sizes m")
    parser.add_argument("--repeats", type=int, default=5, help="timed steps (median reported)")
    parser.add_argument("--skip-peer", action="store_true", help="do not run the GPyTorch peer")
    args = parser.parse_args(argv)
    hidden = [int(h) for h in args.hidden.split(",") if h]
    sizes = [int(m) for m in args.grid_sizes.split(",")]
    B, d, c = args.batch_size, args.input_dim, args.num_classes
    rng = np.random.default_rng(0)
    X = tf.constant(rng.normal(size=(B, d)))
    Y = tf.constant(rng.integers(0, c, size=(B, 1)))
    results = {"batch_size": B, "input_dim": d, "num_classes": c, "hidden": hidden, "grid_sizes": sizes}

    net = build_network(d, c, hidden)
    net_step = timed_step(NetworkLoss(net), (X, Y), net.trainable_variables)
    results["network_s"] = median_step_seconds(net_step, args.repeats)
    print(f"plain network step (B={B}): {results['network_s'] * 1e3:.1f} ms")

    def linear_mean():  # the class-score mean the recipes build (run_three_way), features [c] -> scores [c]
        return gpflow.mean_functions.Linear(np.zeros((c, c)), np.zeros(c))

    variants = {  # results key: (label, the GP layer for m inducing values per dimension, the mean)
        "grid": ("SV-DKL grid, Toeplitz (Cholesky)", lambda m: KISSGPGrid(m, prior=ToeplitzGridPrior()), None),
        "grid_linear_mean": ("SV-DKL grid, Toeplitz, linear mean", lambda m: KISSGPGrid(m), linear_mean),
        "circulant": ("SV-DKL grid, circulant (FFT)", lambda m: KISSGPGrid(m, prior=CirculantGridPrior()), None),
        "points": ("SVGP-style points", lambda m: FreeInducingPoints(m), None),
    }
    for key, (label, inducing, mean) in variants.items():
        results[key] = {}
        for m in sizes:
            model = SVDKL(build_network(d, c, hidden), c, num_data=100_000, inducing=inducing(m),
                          mean_function=None if mean is None else mean())
            step = timed_step(model, (X, Y), model.trainable_variables)
            seconds = median_step_seconds(step, args.repeats)
            results[key][str(m)] = seconds
            print(f"{label} m={m}: {seconds * 1e3:.1f} ms ({seconds / results['network_s']:.2f}x network)")

    python = None if args.skip_peer else peers_python()
    if python is None and not args.skip_peer:
        print("GPyTorch peer skipped: create the venv with `python -m venv peers && peers/bin/pip install -r "
              "benchmarks/requirements-peers.txt` and set GPFLOW_EXT_PEERS_PYTHON=peers/bin/python")
    if python is not None:
        cfg = dict(input_dim=d, num_classes=c, batch_size=B, hidden=hidden, repeats=args.repeats,
                   grid_sizes=sizes, num_data=100_000)
        proc = subprocess.run([python, str(HERE / "svdkl_gpytorch_peer.py"), json.dumps(cfg)],
                              capture_output=True, text=True, timeout=3600)
        if proc.returncode != 0:
            print("GPyTorch peer failed:\n" + proc.stderr[-2000:])
        else:
            results["gpytorch"] = json.loads(proc.stdout.strip().splitlines()[-1])

    m0, m1 = str(sizes[0]), str(sizes[-1])
    print(f"\nSV-DKL step time, batch {B}, network {d}-{'-'.join(map(str, hidden))}-{c} (median of {args.repeats}):")
    print(f"{'':28s}{'gpflow_ext':>12s}{'gpytorch':>12s}")
    gp = results.get("gpytorch")
    print(f"{'plain network [ms]':28s}{results['network_s'] * 1e3:12.1f}{(gp['network'] * 1e3 if gp else float('nan')):12.1f}")
    for m in sizes:
        print(f"{'SV-DKL Toeplitz m=' + str(m) + ' [ms]':28s}{results['grid'][str(m)] * 1e3:12.1f}"
              f"{(gp['svdkl'][str(m)] * 1e3 if gp else float('nan')):12.1f}")
    for m in sizes:
        print(f"{'SV-DKL circulant m=' + str(m) + ' [ms]':28s}{results['circulant'][str(m)] * 1e3:12.1f}")
    for m in sizes:
        print(f"{'SVGP-style m=' + str(m) + ' [ms]':28s}{results['points'][str(m)] * 1e3:12.1f}")
    ratios = {
        f"svdkl_over_network_at_m{m0}": results["grid"][m0] / results["network_s"],
        f"svdkl_m{m1}_over_m{m0}": results["grid"][m1] / results["grid"][m0],
        f"svdkl_linear_mean_over_network_at_m{m0}": results["grid_linear_mean"][m0] / results["network_s"],
        f"svdkl_circulant_over_network_at_m{m0}": results["circulant"][m0] / results["network_s"],
        f"svdkl_circulant_m{m1}_over_m{m0}": results["circulant"][m1] / results["circulant"][m0],
        f"svgp_points_m{m1}_over_m{m0}": results["points"][m1] / results["points"][m0],
    }
    if gp:
        ratios[f"gpytorch_svdkl_m{m1}_over_m{m0}"] = gp["svdkl"][m1] / gp["svdkl"][m0]
        ratios[f"gpytorch_over_gpflow_ext_svdkl_m{m0}"] = gp["svdkl"][m0] / results["grid"][m0]
        ratios[f"gpytorch_over_gpflow_ext_svdkl_m{m1}"] = gp["svdkl"][m1] / results["grid"][m1]
        ratios[f"gpytorch_over_gpflow_ext_circulant_m{m1}"] = gp["svdkl"][m1] / results["circulant"][m1]
    results["ratios"] = ratios
    for k, v in ratios.items():
        print(f"  {k}: {v:.2f}x")
    write_results(results, args.output)
    return results


if __name__ == "__main__":
    main()
