"""The README's main job: a tour of gpflow_ext on data that ships with scikit-learn (no download).

    python -m experiments.tour                 # quick tour (~1-2 min per section on 2 CPU cores)
    python -m experiments.tour --full          # longer training
    python -m experiments.tour --sections svgp_digits --epochs 5 --output results/tour.json
    python -m experiments.tour --smoke         # every section for an epoch or two (tests)
    tensorboard --logdir runs/tour             # watch the runs

Every section is a function ``tour(quick: bool = True, *, logdir, seed, epochs, progress) -> dict`` listed
in ``SECTIONS``; it trains through :func:`gpflow_ext.training.fit`, writes TensorBoard logs under its own
``logdir`` (``--logdir``/SECTION), prints its metric and returns its results.
"""
import time
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import experiments.quiet  # noqa: F401  (first: TensorFlow's log lines off before it is imported)

from experiments.common import REPO, as_builtin, base_parser, print_table, write_results

#: epochs of every section under ``--smoke`` (the tests' tiny run; ``--epochs`` overrides it)
SMOKE_EPOCHS = 1


def _accuracy(labels, probabilities) -> float:
    from gpflow_ext.metrics import accuracy

    return accuracy(labels, probabilities)


def svgp_digits(
    quick: bool = True,
    *,
    logdir: Path | None = None,
    seed: int = 0,
    epochs: int | None = None,
    num_inducing: int | None = None,
    batch_size: int = 128,
    progress: bool = True,
) -> dict[str, Any]:
    """Stock ``gpflow.models.SVGP`` (10 latent GPs, RobustMax multiclass likelihood, k-means inducing
    points) trained by ``fit`` on scikit-learn's 8x8 digits (75/25 stratified split).

    Logs objective, kernel/likelihood parameters, test accuracy (every few epochs) and an image of
    the inducing points to TensorBoard under ``logdir``.
    """
    import gpflow
    import numpy as np
    from sklearn.cluster import KMeans

    from gpflow_ext.data import load_digits
    from gpflow_ext.training import Checkpointing, Metrics, TensorBoard, fit

    epochs = epochs if epochs is not None else (20 if quick else 100)
    num_inducing = num_inducing if num_inducing is not None else (100 if quick else 200)
    X_train, y_train, X_test, y_test = load_digits(test_fraction=0.25, seed=seed)  # pixels in [0, 1], [N, 64]
    Y_train = y_train[:, None].astype(np.float64)  # [N, 1] class index, GPflow's multiclass convention
    num_classes = 10

    Z = KMeans(n_clusters=num_inducing, n_init=1, random_state=seed).fit(X_train).cluster_centers_  # [M, 64]
    model = gpflow.models.SVGP(
        kernel=gpflow.kernels.SquaredExponential(lengthscales=np.sqrt(X_train.shape[1]) / 2.0),
        likelihood=gpflow.likelihoods.MultiClass(num_classes),  # RobustMax
        inducing_variable=Z,
        num_latent_gps=num_classes,
        num_data=len(X_train),
        whiten=True,
    )

    def test_accuracy() -> float:
        mean, var = model.predict_y(X_test)
        return _accuracy(y_test, mean.numpy())

    def plot_inducing(fig, axes) -> None:
        Zv = model.inducing_variable.Z.numpy()[:16]
        for i, ax in enumerate(axes.ravel()):
            ax.imshow(Zv[i].reshape(8, 8), cmap="gray_r")
            ax.set_axis_off()

    metrics_every = max(1, epochs // 4)
    started = time.perf_counter()
    history = fit(
        model,
        (X_train, Y_train),
        epochs=epochs,
        batch_size=batch_size,
        learning_rate=0.01,
        logdir=logdir,
        seed=seed,
        callbacks=[
            Metrics({"test_accuracy": test_accuracy}, every=metrics_every),
            TensorBoard(images={"inducing_points": plot_inducing}, images_every=epochs if epochs > 0 else 1,
                        image_kwargs={"subplots_kw": {"nrows": 4, "ncols": 4}, "fig_kw": {"figsize": (4, 4)}}),
        ] + ([Checkpointing(Path(logdir) / "checkpoints", every_epochs=5)] if logdir is not None else []),
        # under logdir/checkpoints; re-running with the same --logdir resumes
        progress=progress,
    )
    train_seconds = time.perf_counter() - started
    mean, _ = model.predict_y(X_test)
    accuracy = _accuracy(y_test, mean.numpy())
    nlpd = -float(np.mean(model.predict_log_density((X_test, y_test[:, None].astype(np.float64))).numpy()))
    result = {
        "section": "svgp_digits",
        "model": "gpflow.models.SVGP + MultiClass(RobustMax)",
        "data": f"sklearn digits: {len(X_train)} train / {len(X_test)} test, D={X_train.shape[1]}",
        "epochs": epochs,
        "num_inducing": num_inducing,
        "batch_size": batch_size,
        "test_accuracy": accuracy,
        "test_nlpd": nlpd,
        "final_objective": history.final_objective,
        "seconds_per_epoch_median": history.median_seconds_per_epoch(),
        "seconds_total": train_seconds,
        "logdir": str(logdir) if logdir is not None else None,
    }
    print(
        f"SVGP on digits: test accuracy {accuracy:.4f}, test NLPD {nlpd:.4f} after {epochs} epochs "
        f"({result['seconds_per_epoch_median']:.3f} s/epoch median)"
    )
    if logdir is not None:
        print(f"TensorBoard logs: {logdir}   (view with: tensorboard --logdir {Path(logdir).parent})")
    return result


def mlgpf_multilabel(quick: bool = True, *, logdir: Path | None = None, seed: int = 0,
                     epochs: int | None = None, progress: bool = True) -> dict[str, Any]:
    """MLGPF (s-LINEAR, :func:`gpflow_ext.recipes.mlgpf_config.tour_config`) on a generated sparse multi-label problem
    (:func:`gpflow_ext.recipes.mlgpf.synthetic_multilabel`: 2 000 / 500 bag-of-words rows, K = 50, no download),
    20 negative labels sampled per row (eq. 23); prints and returns the test P@1/3/5 (%)."""
    from gpflow_ext.recipes.mlgpf import run_mlgpf, synthetic_multilabel
    from gpflow_ext.recipes.mlgpf_config import tour_config

    train, test = synthetic_multilabel()
    result = run_mlgpf(tour_config(quick, epochs=epochs, seed=seed), train, test, logdir=logdir, progress=progress)
    scores = {k: result[k] for k in ("P@1", "P@3", "P@5")}
    print("MLGPF tour (s-linear, generated sparse data, K=50): "
          + ", ".join(f"{k} {v:.1f}%" for k, v in scores.items())
          + f", {result['seconds_per_epoch']:.2f} s/epoch")
    return scores


def svdkl_digits(quick: bool = True, *, logdir: Path | None = None, seed: int = 0,
                 epochs: int | None = None, progress: bool = True) -> dict[str, Any]:
    """DNN vs DNN+GP vs SV-DKL on scikit-learn's digits (accuracy)."""
    from gpflow_ext.recipes.svdkl import run_digits

    return run_digits(quick, logdir=logdir, seed=seed, epochs=epochs, progress=progress)


def gplvf_digits(quick: bool = True, *, logdir: Path | None = None, seed: int = 0,
                 epochs: int | None = None, progress: bool = True) -> dict[str, Any]:
    """GPLVF on scikit-learn's digits with 40 % of pixels missing: imputation RMSE of the missing pixels for a
    Gaussian and a planar-flow q(X) beside mean imputation, and each model's final training bound
    (``gpflow_ext.recipes.gplvf_images``)."""
    from gpflow_ext.recipes.gplvf_images import digits_config, load_digits_images, run_imputation

    images = load_digits_images(quick)
    results = run_imputation(images, digits_config(quick, epochs=epochs, seed=seed, logdir=logdir, progress=progress))
    print_table(
        [{"method": "mean imputation", "RMSE": results["mean_imputation_rmse"]},
         {"method": "GPLVF Gaussian q(X)", "RMSE": results["gaussian_imputation_rmse"],
          "bound": results["gaussian_final_elbo"], "s/epoch": results["gaussian_seconds_per_epoch"]},
         {"method": "GPLVF planar-4 q(X)", "RMSE": results["flow_imputation_rmse"],
          "bound": results["flow_final_elbo"], "s/epoch": results["flow_seconds_per_epoch"]}],
        ["method", "RMSE", "bound", "s/epoch"],
        title=f"GPLVF tour: sklearn digits ({images.shape[0]} images), 40% pixels missing, imputation RMSE",
    )
    return results


# (name, function) in tour order; each function: tour(quick: bool = True, *, logdir, seed, epochs, progress) -> dict


SECTIONS: list[tuple[str, Callable[..., dict[str, Any]]]] = [
    ("svgp_digits", svgp_digits),
    ("mlgpf_multilabel", mlgpf_multilabel),
    ("svdkl_digits", svdkl_digits),
    ("gplvf_digits", gplvf_digits),
]


def main(argv: Sequence[str] | None = None) -> dict[str, dict[str, Any]]:
    parser = base_parser(__doc__.split("\n\n")[0], data_dir=False, progress=True,
                         smoke=f"every section for {SMOKE_EPOCHS} epoch(s) of its quick setting")
    parser.add_argument("--full", action="store_true", help="longer training (default: quick tour)")
    parser.add_argument(
        "--sections",
        default=",".join(name for name, _ in SECTIONS),
        help=f"comma-separated subset of: {', '.join(name for name, _ in SECTIONS)}",
    )
    args = parser.parse_args(argv)
    known = dict(SECTIONS)
    wanted = [name.strip() for name in args.sections.split(",") if name.strip()]
    unknown = [name for name in wanted if name not in known]
    if unknown:
        parser.error(f"unknown section(s) {unknown}; choose from {sorted(known)}")
    if args.logdir is None:
        stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
        args.logdir = REPO / "runs" / "tour" / stamp
    epochs = SMOKE_EPOCHS if args.smoke and args.epochs is None else args.epochs
    results: dict[str, dict[str, Any]] = {}
    for name in wanted:
        print(f"\n=== {name} ===")
        results[name] = as_builtin(
            known[name](not args.full, logdir=Path(args.logdir) / name, seed=args.seed, epochs=epochs,
                        progress=not args.no_progress)
        )
    rows = [  # one row per (section, figure): sections report different metrics
        {"section": name, "figure": key, "value": float(value)}
        for name, result in results.items()
        for key, value in result.items()
        if isinstance(value, (int, float)) and not isinstance(value, bool)
    ]
    print()
    print_table(rows, ["section", "figure", "value"], title="tour results")
    print(f"\nTensorBoard logs went to {args.logdir}  ->  tensorboard --logdir {args.logdir}")
    write_results(results, args.output, seeds=[args.seed])
    return results


if __name__ == "__main__":
    main()
