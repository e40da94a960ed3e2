"""MLGPF on extreme multi-label data sets: the paper's Tables 2 and 4 (and Table 5's timing).

    python -m experiments.mlgpf_xmc --data-dir DIR --dataset bibtex --method s-linear \\
        [--epochs E] [--output results.json] [--logdir runs/bibtex-s-linear]

``--data-dir`` is a folder laid out like shared/data: ``NAME/NAME-train.arff(.gz)`` +
``NAME-test.arff`` + ``NAME.xml`` (Mulan), or the Extreme Classification Repository text files
(``NAME_train.txt``/``NAME_test.txt``, ``train.txt``/``test.txt``, or ``NAME_data.txt`` with its split
files); see ``gpflow_ext.data.load_multilabel``. Each dataset's defaults are the paper's settings
(Section 4: P, M, R, batch size, epochs). Prints P@1/3/5 beside the paper's numbers and writes
results JSON (P@k, nDCG@k, seconds per epoch, final bound); TensorBoard gets the bound per step
(Figure 1) and P@k per epoch (``metrics/P@k``).
"""
if not __package__:  # `python -m experiments.mlgpf_xmc`: the repository root on the path (prefer `python -m`)
    import pathlib
    import sys

    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from experiments import quiet  # noqa: E402,F401  (first: TensorFlow's log lines off before it is imported)

import time  # noqa: E402
from typing import Any, Dict, Optional  # noqa: E402

import numpy as np  # noqa: E402

from experiments.common import as_builtin, base_parser, print_table, write_results  # noqa: E402
from experiments.paper_values import MLGPF as PAPER  # noqa: E402

#: Section 4: P latent GPs, M inducing inputs, R subspace rank, |X_b| minibatch size, epochs.
DATASET_SETTINGS: Dict[str, Dict[str, int]] = {
    "bibtex": dict(num_latent_gps=30, num_inducing=500, rank=1000, batch_size=500, epochs=400),
    "delicious": dict(num_latent_gps=30, num_inducing=500, rank=250, batch_size=500, epochs=200),
    "mediamill": dict(num_latent_gps=30, num_inducing=500, rank=70, batch_size=500, epochs=200),
    "eurlex": dict(num_latent_gps=40, num_inducing=500, rank=2500, batch_size=800, epochs=200),
    "rcv1": dict(num_latent_gps=30, num_inducing=500, rank=2000, batch_size=500, epochs=20),
    "amazoncat": dict(num_latent_gps=30, num_inducing=500, rank=2000, batch_size=500, epochs=15),
}
#: File-name stems of each dataset as distributed (Mulan / Extreme Classification Repository).
DATASET_FILE_NAMES = {"eurlex": ["eurlex", "Eurlex", "EUR-Lex"], "rcv1": ["rcv1", "RCV1-x", "rcv1x"],
                      "amazoncat": ["amazoncat", "AmazonCat-13K", "AmazonCat"]}

#: ``--smoke``: rows kept per split and the settings used unless given on the command line
SMOKE: Dict[str, int] = dict(max_rows=400, epochs=2, num_latent_gps=4, num_inducing=20, rank=30, batch_size=200,
                             num_negative_samples=20)

METHODS = ("s-linear", "linear", "s-se", "se", "sf-linear", "f-linear", "sf-se", "f-se")


def paper_row(dataset: str, method: str) -> Dict[str, Optional[float]]:
    """The paper's P@1/3/5 for (dataset, method) from Table 2 (optimised) or Table 4 (fixed)."""
    table = PAPER["table4" if method.startswith(("sf-", "f-")) else "table2"]
    row = table.get(dataset, {}).get(method, {})
    minutes = PAPER["table5_minutes_per_epoch"].get(dataset, {}).get(method)
    return {"P@1": row.get("P@1"), "P@3": row.get("P@3"), "P@5": row.get("P@5"),
            "seconds_per_epoch": None if minutes is None else 60.0 * minutes}


def load_dataset(data_dir, dataset: str, max_rows: Optional[int] = None):
    """``(X_train, Y_train, X_test, Y_test)`` as CSR matrices via ``gpflow_ext.data``; ``max_rows``
    keeps only the first rows of each split (smoke runs)."""
    from gpflow_ext.data import load_multilabel

    errors = []
    for name in DATASET_FILE_NAMES.get(dataset, [dataset]):
        try:
            train, test = load_multilabel(name, data_dir)
            rows = slice(max_rows or None)
            return train.X[rows], train.Y[rows], test.X[rows], test.Y[rows]
        except FileNotFoundError as error:
            errors.append(str(error))
    raise FileNotFoundError("; ".join(errors))


def run(
    dataset: str,
    method: str,
    X_train,
    Y_train,
    X_test,
    Y_test,
    epochs: Optional[int] = None,
    logdir=None,
    seed: int = 0,
    learning_rate: float = 0.01,
    num_negative_samples: Optional[int] = None,
    float32: bool = False,
    eval_every: int = 1,
    progress: bool = True,
    **overrides: Any,
) -> Dict[str, Any]:
    """Build the method's MLGPF on the training split, train with ``gpflow_ext.training.fit``,
    evaluate P@k / nDCG@k on the test split. ``overrides`` replace the dataset's paper settings."""
    import gpflow
    import tensorflow as tf

    from gpflow_ext.models import MLGPF
    from gpflow_ext.training import TensorBoard, fit

    settings = dict(DATASET_SETTINGS.get(dataset, DATASET_SETTINGS["bibtex"]))
    settings.update({k: v for k, v in overrides.items() if v is not None})
    if epochs is not None:
        settings["epochs"] = epochs
    if float32:
        gpflow.config.set_default_float(np.float32)
    tf.random.set_seed(seed)
    n_train = X_train.shape[0]
    settings["num_inducing"] = min(settings["num_inducing"], n_train)
    start = time.perf_counter()
    model = MLGPF.from_method(
        method, X_train, Y_train,
        num_inducing=settings["num_inducing"], num_latent_gps=settings["num_latent_gps"],
        rank=settings["rank"], num_negative_samples=num_negative_samples, seed=seed,
    )
    build_seconds = time.perf_counter() - start
    X_train, Y_train = model.prepare_data(X_train, Y_train)
    X_test, Y_test = model.prepare_data(X_test, Y_test)

    def test_metrics() -> Dict[str, float]:
        scores = model.evaluate(X_test, Y_test)
        return {k: v for k, v in scores.items() if k.startswith("P@")}

    history = fit(
        model, (X_train, Y_train), epochs=settings["epochs"], batch_size=settings["batch_size"],
        learning_rate=learning_rate, logdir=None if logdir is None else str(logdir), seed=seed,
        callbacks=[test_metrics, TensorBoard(log_every=1, log_parameters=False)], metrics_every=eval_every,
        progress=progress,
    )
    scores = model.evaluate(X_test, Y_test)
    bound = full_bound(model, X_train, Y_train, settings["batch_size"])
    result = {
        "dataset": dataset, "method": method, "settings": settings, "learning_rate": learning_rate,
        "num_negative_samples": num_negative_samples, "float": "float32" if float32 else "float64",
        "epochs_trained": int(history.epochs[-1]) if history.epochs else int(history.start_epoch),
        "resumed_from": history.resumed_from,
        "seconds_per_epoch": history.median_seconds_per_epoch() if history.epochs else None,
        "build_seconds": build_seconds,
        "final_bound": bound,
        "bound_per_epoch": [-float(v) for v in history.objective],
        "test_metrics_per_epoch": {k: list(map(float, v)) for k, v in history.metrics.items()},
        "metric_epochs": list(history.metric_epochs),
        "paper": paper_row(dataset, method),
        **as_builtin(scores),
    }
    return result


def full_bound(model, X, Y, batch_size: int = 500) -> float:
    """The bound of eq. 20 on the whole training set (all labels exact, summed over row blocks):
    Σ_b |B_b|/N (elbo_b + KL) − KL, where elbo_b = N/|B_b| · data_b − KL."""
    from gpflow_ext.covariances.subspace import to_input_tensor

    kl = float(model.prior_kl())
    samples, model.num_negative_samples = model.num_negative_samples, None
    try:
        data_term = 0.0
        for start in range(0, X.shape[0], batch_size):
            rows = slice(start, start + batch_size)
            b = X[rows].shape[0]
            elbo = float(model.elbo((to_input_tensor(X[rows]), to_input_tensor(Y[rows]))))
            data_term += (elbo + kl) * b / model.num_data
    finally:
        model.num_negative_samples = samples
    return data_term - kl


def print_comparison(results) -> str:
    rows = []
    for r in results:
        paper = r["paper"]
        rows.append({
            "dataset": r["dataset"], "method": r["method"], "epochs": r["epochs_trained"],
            "P@1": r["P@1"], "paper P@1": paper["P@1"], "P@3": r["P@3"], "paper P@3": paper["P@3"],
            "P@5": r["P@5"], "paper P@5": paper["P@5"], "s/epoch": r.get("seconds_per_epoch"),
            "paper s/epoch": paper["seconds_per_epoch"],
        })
    return print_table(rows, ["dataset", "method", "epochs", "P@1", "paper P@1", "P@3", "paper P@3", "P@5",
                              "paper P@5", "s/epoch", "paper s/epoch"], title="MLGPF: ours vs the paper (Tables 2, 4, 5)")


def tour(quick: bool = True, *, logdir=None, seed: int = 0, epochs: Optional[int] = None,
         progress: bool = False) -> Dict[str, float]:
    """MLGPF (s-LINEAR) on a generated sparse multi-label problem (no download), well under a minute.

    Data: 2 500 sparse binary bag-of-words rows (D = 300, ~15 words each); each row's 3 labels (of
    K = 50) are the top scores of a rank-8 linear map of its words, the structure MLGPF's factor
    model (P latent GPs with a linear kernel, Φ, b) can express. 2 000 / 500 train/test rows,
    20 negative labels sampled per row (eq. 23). Prints and returns the test P@1/3/5 (%); ``epochs``
    replaces the quick/full count, ``logdir`` gets the TensorBoard logs (bound per step, P@k).
    """
    import scipy.sparse as sp

    rng = np.random.default_rng(0)
    X = sp.random(2500, 300, density=0.05, format="csr", random_state=0)
    X.data[:] = 1.0
    scores = X @ rng.normal(size=(300, 8)) @ rng.normal(size=(8, 50))  # [N, K]
    top = np.argsort(-scores, axis=1)[:, :3]
    Y = sp.csr_matrix((np.ones(top.size), (np.repeat(np.arange(2500), 3), top.ravel())), shape=(2500, 50))
    result = run(
        "synthetic", "s-linear", X[:2000], Y[:2000], X[2000:], Y[2000:],
        epochs=epochs if epochs is not None else (60 if quick else 200), logdir=logdir, seed=seed,
        learning_rate=0.05, eval_every=20, progress=progress,
        num_latent_gps=10, num_inducing=100, rank=100, batch_size=250, num_negative_samples=20,
    )
    scores = {k: result[k] for k in ("P@1", "P@3", "P@5")}
    print("MLGPF tour (s-linear, generated sparse data, K=50): "
          + ", ".join(f"{k} {v:.1f}%" for k, v in scores.items())
          + f", {result['seconds_per_epoch']:.2f} s/epoch")
    return scores


def main(argv=None) -> Dict[str, Any]:
    parser = base_parser(__doc__.splitlines()[0], float32=True, progress=True,
                         smoke=f"the first {SMOKE['max_rows']} rows of each split, small P, M, R (explicit flags win)")
    parser.add_argument("--dataset", default="bibtex", choices=sorted(DATASET_SETTINGS))
    parser.add_argument("--method", default="s-linear", choices=METHODS)
    parser.add_argument("--learning-rate", type=float, default=0.01)
    parser.add_argument("--num-negative-samples", type=int, default=None,
                        help="negative labels sampled per instance (default: all labels)")
    parser.add_argument("--num-latent-gps", type=int, default=None, help="P (default: the paper's)")
    parser.add_argument("--num-inducing", type=int, default=None, help="M (default: the paper's)")
    parser.add_argument("--rank", type=int, default=None, help="R (default: the paper's)")
    parser.add_argument("--batch-size", type=int, default=None, help="|X_b| (default: the paper's)")
    parser.add_argument("--eval-every", type=int, default=1, help="test P@k every this many epochs")
    args = parser.parse_args(argv)
    if args.data_dir is None:
        parser.error("--data-dir (or $GPFLOW_EXT_DATA) is required")
    if args.smoke:
        for name, value in SMOKE.items():
            if name != "max_rows" and getattr(args, name) is None:
                setattr(args, name, value)
    X_train, Y_train, X_test, Y_test = load_dataset(args.data_dir, args.dataset, SMOKE["max_rows"] if args.smoke else None)
    result = run(
        args.dataset, args.method, X_train, Y_train, X_test, Y_test, epochs=args.epochs,
        logdir=args.logdir, seed=args.seed, learning_rate=args.learning_rate,
        num_negative_samples=args.num_negative_samples, float32=args.float32, eval_every=args.eval_every,
        progress=not args.no_progress, num_latent_gps=args.num_latent_gps, num_inducing=args.num_inducing,
        rank=args.rank, batch_size=args.batch_size,
    )
    print_comparison([result])
    write_results(result, args.output)
    return result


if __name__ == "__main__":
    main()
