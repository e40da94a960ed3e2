"""GPLVF's training step with q_sqrt's fill and the whitened KL(q(u) ‖ p(u)) from the packed factors
(``gpflow_ext.variational.packed_lower``), side by side with GPflow's forms in the same process.

    python -m benchmarks.gplvf_packed_lower --data-dir DIR [--batch-sizes 64,256,943] [--rounds 20]
        [--steps-per-round 20] [--output r.json]

* Ours: ``GPLVF`` as built (q_sqrt under GPflow's ``triangular()``): ``fill_lower`` (tfp's fill with its gradient
  written out as one gather) and ``whitened_gauss_kl_packed`` (the KL from the packed entries, nothing filled).
* Peer: the same model and values with q_sqrt's transform wrapped in a one-bijector ``tfp.bijectors.Chain``, which
  ``lower_factors`` and ``whitened_gauss_kl`` do not take for packed storage, so the bound transforms q_sqrt with
  ``tf.convert_to_tensor`` and takes GPflow's ``gauss_kl``, both differentiated by autodiff (the form before).

On MovieLens 100K u1.base (943 x 1 682, Gaussian likelihood, ``RowSums()``, Q = 10, M = 20, one Monte Carlo draw,
Adam 0.01): first the bound and its gradients on one minibatch with the same base noise (largest relative
differences), then the compiled ``fit`` step of each on a fixed minibatch per batch size, timed in alternating rounds
of ``--steps-per-round`` steps (the machine's drift falls on both): median seconds per step and the peer's over ours.
"""
import time

import benchmarks.common  # noqa: F401  (first: TensorFlow's log lines off before it is imported)
from benchmarks.common import base_parser, compiled_training_step, print_table, write_results

import gpflow
import numpy as np
import tensorflow as tf
import tensorflow_probability as tfp

from benchmarks.gplvf_speed import bound_and_gradients, relative_differences
from gpflow_ext.data import load_movielens
from gpflow_ext.data.movielens import ratings_matrix
from gpflow_ext.models import GPLVF


def with_gpflows_forms(model: GPLVF) -> GPLVF:
    """``model`` with q_sqrt's transform wrapped so that the bound takes GPflow's fill and ``gauss_kl``."""
    wrapped = tfp.bijectors.Chain([gpflow.utilities.triangular()])
    model.q_sqrt = gpflow.Parameter(model.q_sqrt.numpy(), transform=wrapped, name="q_sqrt")
    return model


def alternating_medians(steps: dict, rounds: int, steps_per_round: int) -> dict[str, float]:
    """Median seconds per call of each ``step()``, timed in alternating rounds."""
    times: dict[str, list[float]] = {name: [] for name in steps}
    for _ in range(rounds):
        for name, step in steps.items():
            for _ in range(steps_per_round):
                start = time.perf_counter()
                step()
                times[name].append(time.perf_counter() - start)
    return {name: float(np.median(seconds)) for name, seconds in times.items()}


def main(argv=None):
    parser = base_parser(__doc__.split("\n")[0], epochs=False, logdir=False)
    parser.add_argument("--batch-sizes", default="64,256,943", help="comma-separated minibatch sizes")
    parser.add_argument("--rounds", type=int, default=20, help="alternating rounds of timed steps")
    parser.add_argument("--steps-per-round", type=int, default=20)
    parser.add_argument("--latent-dim", type=int, default=10)
    parser.add_argument("--num-inducing", type=int, default=20)
    parser.add_argument("--smoke", action="store_true", help="tiny run for the tests: 2 rounds of 2 steps")
    args = parser.parse_args(argv)
    if args.smoke:
        args.rounds, args.steps_per_round = 2, 2
    ratings = ratings_matrix(load_movielens(args.data_dir, split="u1", download=False).train)
    ratings = ratings[np.diff(ratings.indptr) > 0]
    rng = np.random.default_rng(args.seed)

    def build(peer: bool) -> GPLVF:
        model = GPLVF(ratings, args.latent_dim, args.num_inducing, num_samples=1, seed=args.seed)
        return with_gpflows_forms(model) if peer else model

    rows = []
    for batch_size in [min(int(b), ratings.shape[0]) for b in args.batch_sizes.split(",")]:
        index = rng.choice(ratings.shape[0], batch_size, replace=False)
        models = {"ours": build(False), "GPflow's forms": build(True)}
        batch = tuple(tf.constant(a[index]) for a in models["ours"].training_data())
        noise = tf.constant(np.random.default_rng(args.seed).standard_normal((1, batch_size, args.latent_dim)))
        checks = relative_differences(*(bound_and_gradients(model, batch, noise) for model in models.values()))
        steps = {}
        for name, model in models.items():
            step = compiled_training_step(model, learning_rate=0.01)
            float(step(batch))  # trace
            steps[name] = lambda step=step: float(step(batch))
        seconds = alternating_medians(steps, args.rounds, args.steps_per_round)
        row = {
            "batch size": batch_size,
            "ours s/step": seconds["ours"],
            "GPflow's forms s/step": seconds["GPflow's forms"],
            "GPflow's forms / ours": seconds["GPflow's forms"] / seconds["ours"],
            **checks,
        }
        print(row, flush=True)
        rows.append(row)
    print_table(
        rows,
        ["batch size", "ours s/step", "GPflow's forms s/step", "GPflow's forms / ours", "bound relative difference",
         "gradient relative difference"],
        title="GPLVF step: packed fill and KL (ours) vs GPflow's fill and gauss_kl by autodiff",
    )
    settings = {key: getattr(args, key) for key in ("batch_sizes", "rounds", "steps_per_round", "latent_dim",
                                                    "num_inducing", "smoke")}
    write_results({"args": settings, "matrix": list(ratings.shape), "rows": rows}, args.output, seeds=[args.seed])
    return rows


if __name__ == "__main__":
    main()
