"""A small training job for the multi-worker tests: SVGP, MLGPF (CSR inputs, sparse labels, negative-label
sampling) and GPLVF (planar flow, missing entries), each trained by ``fit`` and saved by the chief.

    python tests/training/multiworker_job.py OUT [--models svgp,mlgpf,gplvf] [--checkpoints DIR] ...

With ``TF_CONFIG`` set (``python -m gpflow_ext.training.launch``) it trains under
``MultiWorkerMirroredStrategy``; without, in one process. Writes ``OUT/<model>.npz`` (the parameters) and
``OUT/<model>.json`` (the History) from the chief only.
"""
import argparse
import json
import os
import sys
import time
from pathlib import Path

from gpflow_ext.training import multi_worker_strategy  # before any TensorFlow op: the strategy comes first

STRATEGY = multi_worker_strategy() if os.environ.get("TF_CONFIG") else None

import contextlib  # noqa: E402

import gpflow  # noqa: E402
import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402

from gpflow_ext.bijectors import planar_flow  # noqa: E402
from gpflow_ext.models import GPLVF  # noqa: E402
from gpflow_ext.recipes.mlgpf import build_mlgpf  # noqa: E402
from gpflow_ext.recipes.mlgpf_config import paper_config  # noqa: E402
from gpflow_ext.training import Callback, Checkpointing, fit, is_chief  # noqa: E402

N = 200


def svgp_problem():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(N, 2))
    Y = np.sin(2 * X[:, :1]) + 0.1 * rng.normal(size=(N, 1))
    model = gpflow.models.SVGP(gpflow.kernels.SquaredExponential(lengthscales=[1.0, 1.0]),
                               gpflow.likelihoods.Gaussian(variance=0.5), X[:8].copy(), num_data=N)
    return model, (X, Y)


def mlgpf_problem():
    X = sp.random(N, 40, density=0.15, format="csr", random_state=1)
    Y = sp.random(N, 25, density=0.12, format="csr", random_state=2)
    Y.data[:] = 1.0
    config = paper_config("s-linear", num_inducing=6, num_latent_gps=3, rank=8, num_negative_samples=4, seed=0)
    model = build_mlgpf(config, X, Y)
    return model, model.prepare_data(X, Y)


def gplvf_problem():
    rng = np.random.default_rng(3)
    Y = np.sin(rng.standard_normal((N, 2))) @ rng.standard_normal((2, 5)) + 0.1 * rng.standard_normal((N, 5))
    Y[rng.random(Y.shape) < 0.3] = np.nan
    Y[:, 0] = np.nan_to_num(Y[:, 0])  # no empty row
    model = GPLVF(Y, 2, 6, flow=planar_flow(2, 2, init_scale=0.5, seed=1), num_samples=2, seed=2)
    return model, model.training_data()


PROBLEMS = {"svgp": svgp_problem, "mlgpf": mlgpf_problem, "gplvf": gplvf_problem}


class Pace(Callback):
    """Sleeps after every step (room to kill a worker mid-run)."""

    def __init__(self, seconds):
        self.seconds = seconds

    def on_step_end(self, run):
        time.sleep(self.seconds)


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("out", type=Path)
    parser.add_argument("--models", default="svgp,mlgpf,gplvf")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=50)
    parser.add_argument("--checkpoints", type=Path, default=None, help="checkpoint folder (one per model inside)")
    parser.add_argument("--checkpoint-every-steps", type=int, default=None)
    parser.add_argument("--sleep", type=float, default=0.0, help="seconds to sleep after each step")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    task = json.loads(os.environ.get("TF_CONFIG", "{}")).get("task", {}).get("index", 0)
    (args.out / f"pid-{task}").write_text(str(os.getpid()))
    for name in args.models.split(","):
        with STRATEGY.scope() if STRATEGY is not None else contextlib.nullcontext():
            model, data = PROBLEMS[name]()
        started = time.perf_counter()
        history = fit(model, data, epochs=args.epochs, batch_size=args.batch_size, learning_rate=0.02, seed=3,
                      progress=False, strategy=STRATEGY,
                      callbacks=([Pace(args.sleep)] if args.sleep else []) + (
                          [] if args.checkpoints is None else
                          [Checkpointing(args.checkpoints / name, every_steps=args.checkpoint_every_steps)]))
        seconds = time.perf_counter() - started
        print(f"{name}: objective {history.objective} in {seconds:.1f} s, seconds per epoch "
              f"{history.seconds_per_epoch}", flush=True)
        if is_chief(STRATEGY):
            values = {k: np.asarray(v.numpy()) for k, v in gpflow.utilities.parameter_dict(model).items()}
            np.savez(args.out / f"{name}.npz", **values)
            (args.out / f"{name}.json").write_text(json.dumps(
                {"objective": history.objective, "seconds_per_epoch": history.seconds_per_epoch,
                 "resumed_from": history.resumed_from, "seconds": seconds}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
