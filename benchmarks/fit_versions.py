"""Seconds per epoch of ``gpflow_ext.training.fit`` against the ``fit`` of an earlier commit, side by side.

The earlier package is extracted with ``git archive REF gpflow_ext`` into a scratch folder and
imported as ``gpflow_ext_baseline`` (it uses relative imports only), so both loops run in one process
on the same model class, the same data and the same settings, interleaved repeat by repeat. Only the
loop differs: both train this checkout's models.

Problems:

* ``svgp-digits``: the model of ``benchmarks/bench_fit.py`` (stock SVGP, 10 latent GPs, RobustMax,
  k-means inducing points, scikit-learn digits, batch 200);
* ``mlgpf-bibtex``: MLGPF s-LINEAR on Bibtex at the paper's settings (P 30, M 500, R 1000, batch 500),
  one epoch per repeat (needs ``--data-dir`` with ``bibtex/``).

Prints the median seconds per epoch (first epoch of each call skipped: tracing) and the ratio
baseline / current (> 1: the current loop is faster). Run:
``python -m benchmarks.fit_versions --baseline-ref a2d2399 --data-dir ../shared/data``.
"""
import importlib
import importlib.util
import subprocess
import sys
import tarfile
import tempfile
import time
from io import BytesIO
from pathlib import Path

import benchmarks.common  # noqa: F401  (first: TensorFlow's log lines off before it is imported)
from benchmarks.common import base_parser

import numpy as np

from gpflow_ext.results import write_results

REPO = Path(__file__).resolve().parent.parent


def import_baseline(ref: str, scratch: Path):
    """``gpflow_ext`` at git ``ref`` as the package ``gpflow_ext_baseline``."""
    archive = subprocess.run(["git", "-C", str(REPO), "archive", "--format=tar", ref, "gpflow_ext"],
                             check=True, capture_output=True).stdout
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(scratch)
    package = scratch / "gpflow_ext_baseline"
    (scratch / "gpflow_ext").rename(package)
    # imported from its folder (its submodules are found through the package's __path__), sys.path untouched
    spec = importlib.util.spec_from_file_location("gpflow_ext_baseline", package / "__init__.py",
                                                  submodule_search_locations=[str(package)])
    module = importlib.util.module_from_spec(spec)
    sys.modules["gpflow_ext_baseline"] = module
    spec.loader.exec_module(module)
    return importlib.import_module("gpflow_ext_baseline.training")


def svgp_digits(seed: int = 0):
    import gpflow
    from sklearn.cluster import KMeans

    from gpflow_ext.data import load_digits

    digits = load_digits(test_fraction=0)
    X = digits.X_train  # [1797, 64], pixels in [0, 1]
    Y = digits.y_train[:, None].astype(np.float64)  # [1797, 1]
    Z = KMeans(n_clusters=50, n_init=1, random_state=seed).fit(X).cluster_centers_

    def build():
        return gpflow.models.SVGP(gpflow.kernels.SquaredExponential(lengthscales=4.0),
                                  gpflow.likelihoods.MultiClass(10), inducing_variable=Z.copy(),
                                  num_latent_gps=10, num_data=len(X))

    return build, (X, Y), dict(batch_size=200, learning_rate=0.01), 3


def mlgpf_bibtex(data_dir: str, seed: int = 0):
    from gpflow_ext.data import load_bibtex
    from gpflow_ext.recipes.mlgpf import build_mlgpf
    from gpflow_ext.recipes.mlgpf_config import paper_config

    train, _ = load_bibtex(data_dir, download=False)

    def build():
        return build_mlgpf(paper_config("s-linear", "bibtex", seed=seed), train.X, train.Y)

    model = build()
    data = model.prepare_data(train.X, train.Y)
    return build, data, dict(batch_size=500, learning_rate=0.01), 2


def time_loop(fit, build, data, settings, epochs: int) -> float:
    model = build()
    history = fit(model, data, epochs=epochs, seed=0, progress=False, **settings)
    times = history.seconds_per_epoch[-(epochs - 1):]  # this call's epochs, the first (tracing) skipped
    return float(np.median(times))


def main(argv=None) -> dict:
    parser = base_parser(__doc__.split("\n\n")[0], epochs=False, logdir=False, seed=False)
    parser.add_argument("--baseline-ref", default="a2d2399", help="git commit whose fit is the baseline")
    parser.add_argument("--problems", default="svgp-digits,mlgpf-bibtex",
                        help="comma-separated problem names (mlgpf-bibtex reads bibtex/ under --data-dir)")
    parser.add_argument("--repeats", type=int, default=5, help="interleaved repeats of each loop")
    args = parser.parse_args(argv)

    from gpflow_ext.training import fit as current_fit

    results = {"baseline_ref": args.baseline_ref, "problems": {}}
    with tempfile.TemporaryDirectory() as scratch:
        baseline_fit = import_baseline(args.baseline_ref, Path(scratch)).fit
        for name in args.problems.split(","):
            if name == "svgp-digits":
                build, data, settings, epochs = svgp_digits()
            elif name == "mlgpf-bibtex":
                build, data, settings, epochs = mlgpf_bibtex(args.data_dir)
            else:
                raise ValueError(f"--problems: unknown problem {name!r} (svgp-digits, mlgpf-bibtex)")
            current, baseline = [], []
            for _ in range(args.repeats):
                current.append(time_loop(current_fit, build, data, settings, epochs))
                baseline.append(time_loop(baseline_fit, build, data, settings, epochs))
            row = {"current_s_per_epoch": float(np.median(current)), "baseline_s_per_epoch": float(np.median(baseline)),
                   "current_all": current, "baseline_all": baseline}
            row["baseline_over_current"] = row["baseline_s_per_epoch"] / row["current_s_per_epoch"]
            results["problems"][name] = row
            print(f"{name}: current {row['current_s_per_epoch']:.4f} s/epoch, baseline ({args.baseline_ref}) "
                  f"{row['baseline_s_per_epoch']:.4f} s/epoch, baseline/current {row['baseline_over_current']:.3f}",
                  flush=True)
    write_results(results, args.output)
    return results


if __name__ == "__main__":
    started = time.perf_counter()
    main()
    print(f"total {time.perf_counter() - started:.0f} s")
