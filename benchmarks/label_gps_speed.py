"""One GP per label on Z = X̃ (the ``label-gps`` recipe): the diagonal path against the generic dense path.

    python -m benchmarks.label_gps_speed [--data-dir DIR] [--ranks 250 500] [--repeats 7] [--output r.json]

The same MLGPF (TF-IDF Bibtex rows, K = 159 independent label GPs, linear kernel, float32, |B| = 500) evaluates
its bound and gradients through ``gpflow_ext.conditionals.preconditioned``: for ``BasisInducingPoints`` with a
``Linear`` kernel K_ZZ = σ² I and the step costs O(B·R·K); the peer is the generic path on the same inducing
variable (``kl_and_marginals`` for any inducing variable: a batched Cholesky of K + Σ_p, [K, R, R]). Both are
compiled, timed interleaved in one process (medians), checked to give the same bound, and the ratio is printed.
Without ``--data-dir``/``$GPFLOW_EXT_DATA`` a generated problem of Bibtex's shape is used.
"""
import dataclasses
import time

import benchmarks.common  # noqa: F401  (first: TensorFlow's log lines off before it is imported)
from benchmarks.common import base_parser, print_table, write_results

import numpy as np


def _problem(data_dir):
    from gpflow_ext.recipes.mlgpf import load_xmc, synthetic_multilabel

    if data_dir is not None:
        (X, Y), _ = load_xmc("bibtex", data_dir)
        return X, Y, "bibtex"
    (X, Y), _ = synthetic_multilabel(num_rows=4880, num_features=1836, num_labels=159)
    return X, Y, "generated (4880 x 1836, K = 159)"


def main(argv=None):
    parser = base_parser(__doc__.splitlines()[0], epochs=False, logdir=False, seed=False)
    parser.add_argument("--ranks", type=int, nargs="+", default=[250, 500], help="R values (the dense path needs K·R² memory)")
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args(argv)

    import gpflow
    import tensorflow as tf

    from gpflow_ext.conditionals.preconditioned import _kl_and_marginals_dense
    from gpflow_ext.recipes.mlgpf import build_mlgpf
    from gpflow_ext.recipes.mlgpf_config import label_gps_config
    from gpflow_ext.utilities import to_input_tensor

    X, Y, name = _problem(args.data_dir)
    rows = []
    with gpflow.config.as_context(dataclasses.replace(gpflow.config.config(), float=np.float32)):
        for rank in args.ranks:
            config = label_gps_config("s-linear", "bibtex", rank=rank)
            transform = config.input_transform.fit(X)
            model = build_mlgpf(config, transform(X), Y)
            Xp, Yp = model.prepare_data(transform(X), Y)
            batch = (to_input_tensor(Xp[:500], tf.float32), to_input_tensor(Yp[:500], tf.float32))
            variables = model.trainable_variables

            def dense_loss():
                Xb, Yb = batch
                kl, mean, var = _kl_and_marginals_dense(model.inducing_variable, model.kernel, X=Xb,
                                                        q_mu=model.q.q_mu, q_sigma=model.q.q_sigma)
                data = tf.reduce_sum(model._expected_log_likelihood(Xb, mean, tf.maximum(var, 0.0), Yb))
                return -(data * model.num_data / 500.0 - kl)

            contenders = {"diagonal (BasisInducingPoints, Linear)": lambda: model.training_loss(batch),
                          "generic dense path (Cholesky of K + Σ_p)": dense_loss}
            steps, values = {}, {}
            for label, loss in contenders.items():
                @tf.function
                def step(loss=loss):
                    with tf.GradientTape() as tape:
                        value = loss()
                    return value, tape.gradient(value, variables)
                steps[label] = step
                values[label] = float(step()[0])  # compile
            times = {label: [] for label in steps}
            for _ in range(args.repeats):
                for label, step in steps.items():
                    start = time.perf_counter()
                    value, grads = step()
                    [g.numpy() for g in grads if g is not None]
                    times[label].append(time.perf_counter() - start)
            base = np.median(times["generic dense path (Cholesky of K + Σ_p)"])
            for label in steps:
                median = float(np.median(times[label]))
                rows.append({"R": rank, "path": label, "s/step": median, "dense time / this": base / median,
                             "bound": -values[label]})
    print_table(rows, ["R", "path", "s/step", "dense time / this", "bound"],
                title=f"label-gps step (bound + gradients), {name}, K = {Y.shape[1]}, |B| = 500, float32")
    write_results({"problem": name, "num_labels": int(Y.shape[1]), "batch_size": 500, "repeats": args.repeats,
                   "rows": rows}, args.output)
    return rows


if __name__ == "__main__":
    main()
