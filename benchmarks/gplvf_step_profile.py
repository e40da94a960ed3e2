"""Where GPLVF's training step spends its time, traced with ``tf.profiler`` at several batch sizes.

    python -m benchmarks.gplvf_step_profile [--data-dir DIR] [--batch-sizes 64,256,1024] [--steps 20]
        [--trace-dir runs/gplvf_step_trace] [--output r.json] [--smoke]

GPLVF as ``benchmarks.gplvf_speed`` times it (MovieLens u1.base, users as rows, Q = 10, M = 20, Gaussian q(X),
``RowSums()``, one sample), one compiled training step of ``fit`` (Adam 0.01) per batch size on a fixed minibatch:
traced once and warmed up, then ``--steps`` steps under ``tf.profiler`` (``benchmarks.common.profile_op_seconds``).
Each op's seconds, forward and backward, are assigned to a part of the step (:data:`PARTS`) by the name scope it
runs in: the optimiser's update (``Adam``), the transform of q_sqrt's free vector into its D lower triangles
[D, M, M] (``q_sqrt``), KL(q(u) ‖ p(u)) (``prior_kl``), the D products S_d = L_d L_dᵀ of the variance term and their
gradient (``output_factors``), the batch's own terms (``local_parameters``, ``row_terms``) and the rest. The first four work over all D
outputs whatever the batch size (:data:`PER_OUTPUT_PARTS`); their share is stored as ``per_output_share``.

Ops on the executor's threads overlap, so the op seconds add up to more than the wall time: the shares are what is
compared. The largest ops by name are stored too.
"""
import re
from pathlib import Path

import benchmarks.common  # noqa: F401  (first: TensorFlow's log lines off before it is imported)
from benchmarks.common import base_parser, compiled_training_step, profile_op_seconds, write_results

import numpy as np
import tensorflow as tf

from gpflow_ext.data import load_movielens
from gpflow_ext.data.movielens import ratings_matrix
from gpflow_ext.models import GPLVF


#: (part of the step, test on an op's name), the first that matches: the name scopes of ``GPLVF``'s bound and of
#: ``masked_quadratic_forms``, forward and backward (``gradient_tape/...``) alike
def _in_scope(*scopes: str):
    """Whether an op's name lies in one of the name scopes (``scope``, ``scope_1``, ... at any depth)."""
    pattern = re.compile(rf"(^|/)({'|'.join(scopes)})(_\d+)?/")
    return lambda name: pattern.search(name) is not None


PARTS = (
    ("optimiser update (Adam, every variable)", _in_scope("Adam")),
    ("q_sqrt: its D lower triangles from the free vector", _in_scope("q_sqrt")),
    ("KL(q(u) ‖ p(u)) over the D outputs", _in_scope("prior_kl")),
    ("S_d = L_d L_dᵀ for the D outputs (variance term)", _in_scope("output_factors")),
    ("the batch's rows: q(x_n), samples, expected log-likelihood", _in_scope("row_terms", "local_parameters")),
    ("the rest", lambda name: True),
)
#: the parts whose work is over all D outputs whatever the batch size
PER_OUTPUT_PARTS = PARTS[0][0], PARTS[1][0], PARTS[2][0], PARTS[3][0]


def step_parts(op_seconds: dict[str, float]) -> dict[str, float]:
    """Seconds per step of each of :data:`PARTS` from a trace's seconds per op name."""
    parts = {part: 0.0 for part, _ in PARTS}
    for name, seconds in op_seconds.items():
        part = next(part for part, matches in PARTS if matches(name))
        parts[part] += seconds
    return parts


def main(argv=None):
    parser = base_parser(__doc__.splitlines()[0], epochs=False, logdir=False,
                         smoke="u1.base's first 100 users, batch sizes 16 and 64, 2 traced steps")
    parser.add_argument("--batch-sizes", default="64,256,1024")
    parser.add_argument("--steps", type=int, default=20, help="traced steps per batch size")
    parser.add_argument("--latent-dim", type=int, default=10)
    parser.add_argument("--num-inducing", type=int, default=20)
    parser.add_argument("--trace-dir", default="runs/gplvf_step_trace", help="where tf.profiler writes its traces")
    parser.add_argument("--largest", type=int, default=20, help="op names stored per batch size")
    args = parser.parse_args(argv)
    batch_sizes = [int(v) for v in args.batch_sizes.split(",") if v.strip()]
    if not batch_sizes or min(batch_sizes) < 1:
        parser.error(f"--batch-sizes must be positive integers, got {args.batch_sizes!r}")
    if args.steps < 1:
        parser.error(f"--steps must be at least 1, got {args.steps}")
    train = ratings_matrix(load_movielens(args.data_dir, split="u1", download=False).train)
    train = train[np.diff(train.indptr) > 0]
    if args.smoke:
        train = train[:100]
        train = train[:, np.unique(train.indices)]
        batch_sizes, args.steps = [16, 64], 2
    results = {"matrix": list(train.shape), "ratings": int(train.nnz), "latent_dim": args.latent_dim,
               "num_inducing": args.num_inducing, "steps": args.steps, "by_batch_size": []}
    for batch_size in batch_sizes:
        model = GPLVF(train, args.latent_dim, args.num_inducing, num_samples=1, seed=args.seed)
        data = model.training_data()
        rows = np.random.default_rng(args.seed).choice(data[0].shape[0], min(batch_size, data[0].shape[0]),
                                                       replace=False)
        batch = tuple(tf.constant(a[rows]) for a in data)
        step = compiled_training_step(model, learning_rate=0.01)
        for _ in range(3):  # trace and warm up
            float(step(batch))
        trace = profile_op_seconds(lambda: float(step(batch)), args.steps, Path(args.trace_dir) / f"b{batch_size}")
        parts = step_parts(trace["op_seconds"])
        total = sum(parts.values())
        results["by_batch_size"].append({
            "batch_size": int(rows.size), "wall_seconds_per_step": trace["wall_seconds_per_step"],
            "op_seconds_per_step": total, "parts": [[part, seconds] for part, seconds in parts.items()],
            "per_output_parts": list(PER_OUTPUT_PARTS),
            "per_output_share": sum(parts[part] for part in PER_OUTPUT_PARTS) / total,
            "largest_ops": [[name, seconds] for name, seconds in list(trace["op_seconds"].items())[:args.largest]],
            "op_type_seconds": [[name, seconds] for name, seconds in trace["op_type_seconds"].items()],
        })
        print(f"batch {rows.size}: {1e3 * trace['wall_seconds_per_step']:.1f} ms/step wall, "
              f"{1e3 * total:.1f} ms of ops", flush=True)
        for part, seconds in parts.items():
            print(f"  {part:40s} {1e3 * seconds:8.2f} ms  {100 * seconds / total:5.1f} %")
    write_results(results, args.output, seeds=[args.seed])
    return results


if __name__ == "__main__":
    main()
