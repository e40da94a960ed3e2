"""Overhead of ``gpflow_ext.training.fit`` against GPflow's documented minibatch loop, side by side.

Same model (stock SVGP, 10 latent GPs, RobustMax, M k-means inducing points), same digits data,
same batch size and optimizer. The peer is the loop from GPflow's SVGP tutorial:
``tf.data ... .repeat().shuffle(N).batch(B)`` iterator, ``model.training_loss_closure(iter, compile=True)``
and a ``tf.function`` step calling ``optimizer.minimize``. ``fit`` adds NaN checks, the monitor hooks,
checkpointing (here off) and epoch bookkeeping.

Prints the median seconds per epoch of each (after one warm-up epoch) and the ratio
GPflow loop / fit (> 1: fit is faster). Run: ``python -m benchmarks.bench_fit [--smoke]``.
"""
import time

import benchmarks.common  # noqa: F401  (first: TensorFlow's log lines off before it is imported)
from benchmarks.common import base_parser, print_table, write_results

import numpy as np


def _problem(num_inducing: int, seed: int):
    import gpflow
    from sklearn.cluster import KMeans

    from gpflow_ext.data import load_digits

    digits = load_digits(test_fraction=0)
    X = digits.X_train  # [1797, 64], pixels in [0, 1]
    Y = digits.y_train[:, None].astype(np.float64)  # [1797, 1]
    Z = KMeans(n_clusters=num_inducing, n_init=1, random_state=seed).fit(X).cluster_centers_

    def build():
        return gpflow.models.SVGP(
            gpflow.kernels.SquaredExponential(lengthscales=4.0),
            gpflow.likelihoods.MultiClass(10),
            inducing_variable=Z.copy(),
            num_latent_gps=10,
            num_data=len(X),
        )

    return X, Y, build


def gpflow_loop_seconds_per_epoch(build, X, Y, batch_size, epochs, learning_rate):
    """GPflow tutorial loop; returns the seconds of each epoch (first includes tracing)."""
    import tensorflow as tf
    from gpflow.keras import tf_keras

    model = build()
    N = len(X)
    steps = -(-N // batch_size)
    dataset = tf.data.Dataset.from_tensor_slices((X, Y)).repeat().shuffle(N, seed=0).batch(batch_size)
    loss = model.training_loss_closure(iter(dataset), compile=True)
    optimizer = tf_keras.optimizers.Adam(learning_rate)

    @tf.function
    def optimization_step():
        optimizer.minimize(loss, model.trainable_variables)  # peer: GPflow's tutorial loop, not ours

    times = []
    for _ in range(epochs):
        start = time.perf_counter()
        for _ in range(steps):
            optimization_step()
        float(loss())  # the tutorial logs the loss once per epoch (also syncs)
        times.append(time.perf_counter() - start)
    return times


def fit_seconds_per_epoch(build, X, Y, batch_size, epochs, learning_rate):
    from gpflow_ext.training import fit

    history = fit(build(), (X, Y), epochs=epochs, batch_size=batch_size, learning_rate=learning_rate, progress=False)
    return history.seconds_per_epoch


def run(smoke: bool = False, repeats: int = 3, seed: int = 0):
    num_inducing, epochs = (20, 2) if smoke else (100, 6)
    X, Y, build = _problem(num_inducing, seed)
    rows = []
    for batch_size in ([128] if smoke else [128, 512]):
        ours, peer = [], []
        for _ in range(repeats):  # interleaved so load changes hit both
            peer += gpflow_loop_seconds_per_epoch(build, X, Y, batch_size, epochs, 0.01)[1:]
            ours += fit_seconds_per_epoch(build, X, Y, batch_size, epochs, 0.01)[1:]
        row = {
            "case": f"digits N={len(X)} M={num_inducing} B={batch_size}",
            "fit_s_per_epoch": float(np.median(ours)),
            "gpflow_loop_s_per_epoch": float(np.median(peer)),
        }
        row["ratio"] = row["gpflow_loop_s_per_epoch"] / row["fit_s_per_epoch"]
        rows.append(row)
    print_table(
        rows,
        ["case", "fit_s_per_epoch", "gpflow_loop_s_per_epoch", "ratio"],
        title="seconds per epoch, median (ratio = GPflow loop / fit; > 1: fit is faster)",
    )
    return rows


def main(argv=None):
    parser = base_parser(__doc__.splitlines()[0], data_dir=False, epochs=False, logdir=False,
                         smoke="M = 20, 2 epochs, batch size 128 only")
    parser.add_argument("--repeats", type=int, default=3, help="timed repeats of each loop")
    args = parser.parse_args(argv)
    rows = run(smoke=args.smoke, repeats=args.repeats, seed=args.seed)
    write_results({"rows": rows}, args.output)


if __name__ == "__main__":
    main()
