"""GPLVF bound: the two ways of forming q(f)'s variance at the observed pairs, side by side with GPflow's
dense conditional, on real data.

    python -m benchmarks.gplvf_variance_by --data-dir DIR [--repeats 20] [--output r.json]

``conditional_at_pairs(..., variance_by=...)``: ``PerPair()`` ("pairs") gathers each observed pair's L_d
([P, M, M]); ``PerOutput()`` ("outputs") forms L_dᵀ a for every (row, output) of the batch in one matmul and gathers the pairs. The peer is
the same model with GPflow's dense ``conditional`` over all D outputs, masked and summed (``DenseGPLVF``).
Median seconds of one compiled training step (Adam, one Monte Carlo draw) with ratios to ``"outputs"``, on

* MNIST 14x14 (5 000 digits, 40 % of pixels missing, Q = 2, batch 200, planar 10, M = 30 and 50): P ≈ 0.6·N·D;
* MovieLens 100K u1.base (943 x 1 682, 5 % observed, Q = 10, batch 64, planar 20, M = 20): P ≈ 0.05·N·D.

``variance_by=None`` (the default) picks ``PerOutput()`` when at least a quarter of the entries is observed.
Timings on a shared machine are noisy: compare the ratios, which come from the same process.
"""
import benchmarks.common  # noqa: F401  (first: TensorFlow's log lines off before it is imported)
from benchmarks.common import base_parser, print_table, write_results

import numpy as np

from benchmarks.gplvf_speed import DenseGPLVF, step_seconds
from gpflow_ext.bijectors import planar_flow
from gpflow_ext.conditionals.pairs import PerOutput, PerPair
from gpflow_ext.data import load_mnist, load_movielens
from gpflow_ext.data.movielens import ratings_matrix
from gpflow_ext.models import GPLVF


def model_auto_choice(Y) -> str:
    """What ``GPLVF(Y, ...)`` picks with ``variance_by=None`` (built on the data, nothing trained)."""
    return GPLVF(Y, 2, 2).variance_by.name


def compare(name, Y, *, latent_dim, num_inducing, flow_length, batch_size, repeats):
    row = {"data": name, "N x D": f"{Y.shape[0]} x {Y.shape[1]}", "M": num_inducing,
           "observed fraction": float(np.mean(~np.isnan(Y)))}
    seconds = {}
    for label, build in (("pairs", GPLVF), ("outputs", GPLVF), ("GPflow dense", DenseGPLVF)):
        kwargs = {} if label == "GPflow dense" else {"variance_by": {"pairs": PerPair(), "outputs": PerOutput()}[label]}
        model = build(Y, latent_dim, num_inducing, flow=planar_flow(flow_length, latent_dim), seed=0, **kwargs)
        seconds[label] = step_seconds(model, model.training_data(), batch_size, repeats)
        row[f"{label} s/step"] = seconds[label]
    for label in ("pairs", "GPflow dense"):
        row[f"{label} / outputs"] = seconds[label] / seconds["outputs"]
    row["auto picks"] = model_auto_choice(Y)
    print(row, flush=True)
    return row


def main(argv=None):
    parser = base_parser(__doc__.split("\n")[0], epochs=False, logdir=False)
    parser.add_argument("--repeats", type=int, default=20, help="timed steps of each (median reported)")
    args = parser.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    images, _ = load_mnist(args.data_dir, subset="5k", size=14, download=False)
    digits = images.reshape(images.shape[0], -1) / 255.0
    digits[rng.random(digits.shape) < 0.4] = np.nan
    digits[np.isnan(digits).all(axis=1), 0] = 0.0  # no empty row (none expected at 40 %)
    ratings = ratings_matrix(load_movielens(args.data_dir, split="u1", download=False).train)
    ratings = ratings[np.diff(ratings.indptr) > 0]
    movielens = np.full(ratings.shape, np.nan)
    coo = ratings.tocoo()
    movielens[coo.row, coo.col] = coo.data - coo.data.mean()
    rows = [
        compare("MNIST 14x14", digits, latent_dim=2, num_inducing=m, flow_length=10, batch_size=200,
                repeats=args.repeats)
        for m in (30, 50)
    ]
    rows.append(compare("MovieLens u1.base", movielens, latent_dim=10, num_inducing=20, flow_length=20,
                        batch_size=64, repeats=args.repeats))
    print_table(rows, ["data", "M", "observed fraction", "pairs s/step", "outputs s/step", "GPflow dense s/step",
                       "pairs / outputs", "GPflow dense / outputs", "auto picks"],
                title="GPLVF training step: variance_by pairs vs outputs vs GPflow's dense conditional")
    write_results({"rows": rows}, args.output, seeds=[args.seed])
    return rows


if __name__ == "__main__":
    main()
