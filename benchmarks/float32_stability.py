"""Float32 at M = 500: PreconditionedSVGP (factorises K + Σ) against stock SVGP (factorises K + jitter).

M inducing points are packed in a 2-D input space, so K_ZZ is numerically singular in float32.
Both models train by Adam on minibatches with the same data, kernel and likelihood; the script prints
how many steps each survives and its loss.

    python -m benchmarks.float32_stability --steps 200 [--output result.json]
"""
import dataclasses

import benchmarks.common  # noqa: F401  (first: TensorFlow's log lines off before it is imported)
from benchmarks.common import base_parser, compiled_training_step, write_results

import gpflow
import numpy as np
import tensorflow as tf
from gpflow.keras import tf_keras

from gpflow_ext.models import PreconditionedSVGP


def _float32_run(model_factory, X, Y, steps, batch):
    """Adam on minibatches in float32; returns (ELBO history, error message or None)."""
    model = model_factory()
    opt = tf_keras.optimizers.Adam(0.01)
    dataset = tf.data.Dataset.from_tensor_slices((X, Y)).repeat().shuffle(len(X), seed=0).batch(batch)
    it = iter(dataset)

    train_step = compiled_training_step(model, opt)  # fit's compiled step (gpflow_ext.training.step.make_step)

    def step(Xb, Yb):
        return train_step((Xb, Yb))

    history = []
    try:
        for i in range(steps):
            history.append(float(step(*next(it))))
            if not np.isfinite(history[-1]):
                return history, f"non-finite loss {history[-1]} at step {i}"
    except tf.errors.InvalidArgumentError as err:
        return history, str(err).splitlines()[0]
    return history, None


def float32_comparison(num_inducing=500, num_data=2000, steps=60, batch=500, seed=0, stock_steps=None):
    """Train PreconditionedSVGP and stock SVGP in float32 with M inducing points packed in a 2-D input
    space (K_ZZ numerically singular in float32). Returns {name: (history, error)}."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-3, 3, size=(num_data, 2)).astype(np.float32)
    Y = (np.sin(X[:, :1]) * np.cos(X[:, 1:]) + 0.1 * rng.normal(size=(num_data, 1))).astype(np.float32)
    config = dataclasses.replace(gpflow.config.config(), float=np.float32, jitter=1e-6)
    results = {}
    with gpflow.config.as_context(config):
        Z = X[rng.choice(num_data, num_inducing, replace=False)]

        def ours():
            return PreconditionedSVGP(
                gpflow.kernels.SquaredExponential(lengthscales=1.0), gpflow.likelihoods.Gaussian(variance=0.1),
                Z.copy(), num_data=num_data,
            )

        def stock():
            return gpflow.models.SVGP(
                gpflow.kernels.SquaredExponential(lengthscales=1.0), gpflow.likelihoods.Gaussian(variance=0.1),
                Z.copy(), num_data=num_data,
            )

        results["PreconditionedSVGP"] = _float32_run(ours, X, Y, steps, batch)
        results["SVGP"] = _float32_run(stock, X, Y, stock_steps or steps, batch)
    return results


def main(argv=None) -> None:
    parser = base_parser(__doc__.splitlines()[0], data_dir=False, epochs=False, logdir=False)
    parser.add_argument("--steps", type=int, default=200, help="Adam steps of each model")
    parser.add_argument("--num-inducing", type=int, default=500, help="M")
    args = parser.parse_args(argv)
    results = float32_comparison(num_inducing=args.num_inducing, steps=args.steps, seed=args.seed)
    for name, (history, error) in results.items():
        print(f"{name:>20}: {len(history)}/{args.steps} steps, first loss {history[0] if history else None}, "
              f"last loss {history[-1] if history else None}, error: {error}")
    write_results({"num_inducing": args.num_inducing, "steps": args.steps,
                   "models": {name: {"steps_survived": len(history), "losses": history, "error": error}
                              for name, (history, error) in results.items()}}, args.output, seeds=[args.seed])


if __name__ == "__main__":
    main()
