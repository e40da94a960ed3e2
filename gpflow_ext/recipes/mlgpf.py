"""MLGPF as the paper runs it: the eight variants of Tables 2 and 4 as configs, build and run functions.

*Fully scalable Gaussian processes using subspace inducing inputs*, Section 4. A variant is named
``[s][f]-KERNEL``: prefix ``s`` = subspace inducing inputs Z = A X̃ (else free Z), ``f`` = the
inducing inputs (A or Z) kept fixed (else optimised); kernel ``linear`` or ``se``.

* :class:`MLGPFConfig`: every setting of one run (kernel, subspace, trainable inducing inputs, P, M, R,
  batch size, epochs, learning rate, negative-label sampling, seed, float32, an input transform).
* :func:`paper_config` (``paper_config("s-linear", "bibtex")``): the paper's settings per dataset;
  :data:`RECIPES` maps a recipe name to such a factory ``(method, dataset) -> MLGPFConfig``
  (``paper`` is the default; register more with :func:`register_recipe`).
* :func:`build_mlgpf` (config, X, Y) -> :class:`~gpflow_ext.models.MLGPF`, initialised from the data;
  :func:`run_mlgpf` trains it with :func:`gpflow_ext.training.fit` and returns a results dict (test
  P@k / nDCG@k, seconds per epoch, the final full-data bound).
* :func:`load_xmc` reads a dataset under any of its published file names; :func:`synthetic_multilabel`
  and :func:`tour_config` are the no-download tour problem.

Example
-------
>>> import scipy.sparse as sp
>>> from gpflow_ext.recipes.mlgpf import build_mlgpf, paper_config
>>> X = sp.random(60, 40, density=0.2, format="csr", random_state=0)
>>> Y = sp.random(60, 12, density=0.15, format="csr", random_state=1); Y.data[:] = 1.0
>>> config = paper_config("s-linear", "bibtex", num_inducing=8, num_latent_gps=3, rank=10)
>>> model = build_mlgpf(config, X, Y)
>>> model.predict_utilities(X[:2].toarray()).shape
TensorShape([2, 12])
"""

import dataclasses
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeAlias

import gpflow
import numpy as np
import scipy.sparse
import tensorflow as tf

from ..inducing_variables import BasisInducingPoints, SubspaceInducingPoints
from ..models import MLGPF
from ..training import FunctionCallback, TensorBoard, fit
from ..training.schedules import LEARNING_RATE_DECAYS, decayed_learning_rate
from ..utilities import to_input_tensor
from ..validation import check_choice, check_multilabel_data, check_positive_int, check_positive_number
from .mlgpf_data import load_xmc, synthetic_multilabel

__all__ = [
    "METHODS",
    "DATASET_SETTINGS",
    "MLGPFConfig",
    "parse_method",
    "paper_config",
    "tfidf_config",
    "label_gps_config",
    "RECIPES",
    "register_recipe",
    "build_mlgpf",
    "run_mlgpf",
    "full_bound",
    "load_xmc",
    "synthetic_multilabel",
    "tour_config",
]

#: The paper's variants (Tables 2 and 4).
METHODS = ("s-linear", "linear", "s-se", "se", "sf-linear", "f-linear", "sf-se", "f-se")

#: Section 4: P latent GPs, M inducing inputs, R subspace rank, ``|X_b|`` minibatch size, epochs.
DATASET_SETTINGS: dict[str, dict[str, int]] = {
    "bibtex": dict(num_latent_gps=30, num_inducing=500, rank=1000, batch_size=500, epochs=400),
    "delicious": dict(num_latent_gps=30, num_inducing=500, rank=250, batch_size=500, epochs=200),
    "mediamill": dict(num_latent_gps=30, num_inducing=500, rank=70, batch_size=500, epochs=200),
    "eurlex": dict(num_latent_gps=40, num_inducing=500, rank=2500, batch_size=800, epochs=200),
    "rcv1": dict(num_latent_gps=30, num_inducing=500, rank=2000, batch_size=500, epochs=20),
    "amazoncat": dict(num_latent_gps=30, num_inducing=500, rank=2000, batch_size=500, epochs=15),
}

Matrix: TypeAlias = np.ndarray | scipy.sparse.csr_matrix


def parse_method(method: str) -> tuple[bool, bool, str]:
    """``"sf-linear"`` -> (subspace=True, trainable=False, kernel="linear")."""
    if not isinstance(method, str) or method.lower() not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)}; got {method!r}")
    prefix, _, kernel = method.lower().rpartition("-")
    return "s" in prefix, "f" not in prefix, kernel


@dataclasses.dataclass(frozen=True)
class MLGPFConfig:
    """Every setting of one MLGPF run (defaults: the paper's s-LINEAR on Bibtex, Adam at 0.01).

    :param kernel: ``"linear"`` or ``"se"`` (squared exponential), shared by the P latent GPs.
    :param subspace: subspace inducing inputs Z = A X̃ (else free Z from k-means).
    :param train_inducing: optimise A (or Z); ``False`` keeps them at their k-means initialisation.
    :param num_negative_samples: negatives drawn per instance (eq. 23); ``None``: every label exactly.
    :param kmeans_max_iter: k-means iterations initialising A or Z.
    :param float32: build and train in float32 (inside a ``gpflow.config`` context; default float64).
    :param eval_every: test P@k every this many epochs during training (TensorBoard ``metrics/P@k``).
    :param input_transform: applied to train and test X before anything else (e.g. a row normalisation);
        ``None`` keeps X as read. One with a ``fit`` method (``gpflow_ext.data.transforms.TfidfRows``) is
        first fitted on the training X: ``input_transform.fit(X_train)`` returns the transform applied.
    :param learning_rate_decay: ``"constant"`` or ``"cosine"`` (to 0 over all steps;
        :func:`gpflow_ext.training.schedules.decayed_learning_rate`).
    :param basis_inducing: the R basis vectors themselves are the inducing inputs, Z = X̃
        (:class:`~gpflow_ext.inducing_variables.BasisInducingPoints`; M = R, ``num_inducing`` and
        ``train_inducing`` unused; needs ``subspace``). With the linear kernel this is exact Bayesian
        linear regression in the span of X̃, at O(B·R·P) per step.
    :param independent_labels: one latent GP per label, Φ = I not trained (P = K; ``num_latent_gps`` unused).
    :param kernel_variance: the kernel's variance σ², fixed (not trained); ``None`` initialises it from the
        data (see :func:`build_mlgpf`) and trains it with the bound.
    """

    kernel: str = "linear"
    subspace: bool = True
    train_inducing: bool = True
    num_latent_gps: int = 30
    num_inducing: int = 500
    rank: int = 1000
    batch_size: int = 500
    epochs: int = 400
    learning_rate: float = 0.01
    num_negative_samples: int | None = None
    seed: int = 0
    kmeans_max_iter: int = 10
    float32: bool = False
    eval_every: int = 1
    input_transform: Callable[[Matrix], Matrix] | None = None
    learning_rate_decay: str = "constant"
    basis_inducing: bool = False
    independent_labels: bool = False
    kernel_variance: float | None = None

    def __post_init__(self) -> None:
        check_choice(self.kernel, "kernel", ("linear", "se"))
        check_choice(self.learning_rate_decay, "learning_rate_decay", LEARNING_RATE_DECAYS)
        for name in ("num_latent_gps", "num_inducing", "rank", "batch_size", "epochs", "kmeans_max_iter", "eval_every"):
            check_positive_int(getattr(self, name), name)
        check_positive_int(self.num_negative_samples, "num_negative_samples", allow_none=True)
        if self.basis_inducing and not self.subspace:
            raise ValueError("basis_inducing=True (Z = X̃) needs subspace=True: use an s-* method")
        if self.kernel_variance is not None:
            check_positive_number(self.kernel_variance, "kernel_variance", "a positive finite float or None")
        if self.input_transform is not None and not callable(self.input_transform):
            raise TypeError(f"input_transform must be callable or None, got {type(self.input_transform).__name__}")

    @property
    def method(self) -> str:
        """The paper's name of this variant, e.g. ``"sf-linear"``."""
        prefix = ("s" if self.subspace else "") + ("" if self.train_inducing else "f")
        return f"{prefix}-{self.kernel}" if prefix else self.kernel

    def as_dict(self) -> dict[str, Any]:
        """The JSON-ready fields (all but ``input_transform``, which is given by name)."""
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "input_transform"}
        transform = self.input_transform
        out["input_transform"] = None if transform is None else getattr(transform, "__name__", repr(transform))
        return out


def paper_config(method: str = "s-linear", dataset: str = "bibtex", **overrides: Any) -> MLGPFConfig:
    """The paper's settings for ``method`` on ``dataset`` (Section 4; unknown datasets get Bibtex's),
    with ``overrides`` (config fields; ``None`` values are ignored) on top."""
    subspace, trainable, kernel = parse_method(method)
    settings: dict[str, Any] = dict(DATASET_SETTINGS.get(dataset, DATASET_SETTINGS["bibtex"]))
    settings.update({k: v for k, v in overrides.items() if v is not None})
    return MLGPFConfig(kernel=kernel, subspace=subspace, train_inducing=trainable, **settings)


def tfidf_config(method: str = "s-linear", dataset: str = "bibtex", **overrides: Any) -> MLGPFConfig:
    """The paper's model on TF-IDF, L2-normalised rows (:class:`~gpflow_ext.data.transforms.TfidfRows`, IDF
    from the training rows), M = 200, Adam at 0.1 with a cosine decay to 0 over 100 epochs (or the paper's
    epochs for ``dataset`` where fewer: 20 on RCV1, 15 on AmazonCat), float32.
    Chosen on a validation split of Bibtex's training file (``docs/mlgpf/results.md``)."""
    from ..data.transforms import TfidfRows

    paper_epochs = DATASET_SETTINGS.get(dataset, DATASET_SETTINGS["bibtex"])["epochs"]
    settings = dict(num_inducing=200, epochs=min(100, paper_epochs), learning_rate=0.1, float32=True)
    settings.update({k: v for k, v in overrides.items() if v is not None})
    config = paper_config(method, dataset, **settings)
    return dataclasses.replace(config, input_transform=TfidfRows(), learning_rate_decay="cosine")


def label_gps_config(method: str = "s-linear", dataset: str = "bibtex", **overrides: Any) -> MLGPFConfig:
    """One linear-kernel GP per label (Φ = I, P = K) on TF-IDF, L2-normalised rows, with the subspace basis
    itself as inducing inputs (Z = X̃, R = min(2000, N, D)): Bayesian one-vs-rest logistic regression on
    the span of the leading R right-singular vectors, exact when R = rank(X). Prior weight variance
    σ² = 12 (fixed; the rows have unit norm), Adam at 0.1 with a cosine decay over 100 epochs (fewer where
    the paper trains fewer, as in :func:`tfidf_config`), float32.
    Chosen on Bibtex's training file: the model on a validation split, σ² by 5-fold cross-validation of
    P@1 (``docs/mlgpf/results.md``).

    :raises ValueError: ``method`` is not ``s-linear`` (the recipe is that model; others have no Z = X̃
        shortcut).
    """
    if parse_method(method) != (True, True, "linear"):
        raise ValueError(f"the label-gps recipe is the s-linear model; got method={method!r}")
    settings = dict(rank=2000, kernel_variance=12.0)
    settings.update({k: v for k, v in overrides.items() if v is not None})
    config = tfidf_config(method, dataset, **settings)
    return dataclasses.replace(config, basis_inducing=True, independent_labels=True)


#: Named recipes: ``name -> factory(method, dataset, **overrides) -> MLGPFConfig`` (``--recipe`` in the scripts):
#: ``paper`` (the paper's settings), ``tfidf`` (:func:`tfidf_config`), ``label-gps`` (:func:`label_gps_config`;
#: also ``best``, the most accurate on Bibtex's validation split).
RECIPES: dict[str, Callable[..., MLGPFConfig]] = {
    "paper": paper_config,
    "tfidf": tfidf_config,
    "label-gps": label_gps_config,
    "best": label_gps_config,
}


def register_recipe(name: str, factory: Callable[..., MLGPFConfig]) -> None:
    """Add ``factory(method, dataset, **overrides) -> MLGPFConfig`` to :data:`RECIPES` under ``name``."""
    if not isinstance(name, str) or not name or name in RECIPES:
        raise ValueError(f"recipe name must be a new non-empty string, got {name!r} (taken: {sorted(RECIPES)})")
    if not callable(factory):
        raise TypeError(f"factory must be callable, got {type(factory).__name__}")
    RECIPES[name] = factory


# -----------------------------------------------------------------------------------------
# build
# -----------------------------------------------------------------------------------------
def build_mlgpf(config: MLGPFConfig, X: Any, Y: Any, **model_kwargs: Any) -> MLGPF:
    """The config's MLGPF initialised from the training data ``X`` [N, D] (dense or CSR), ``Y`` [N, K].

    ``s-*`` variants: Z = A X̃ (X̃: ``rank`` leading right-singular vectors of X; A: k-means on U·S), or
    Z = X̃ with ``basis_inducing``; the others: free Z from a few k-means iterations on X;
    ``train_inducing`` sets A / Z trainable. ``kernel_variance`` fixes σ²; ``independent_labels`` makes
    P = K with Φ = I.
    Initialisation the paper does not give, chosen here: the linear kernel's variance is
    1/mean‖x‖² so that k(x, x) ≈ 1; the SE lengthscale is the median distance between 1 000 random
    training rows; b_k = logit of label k's training frequency; Φ ~ N(0, 1/P). ``model_kwargs`` go
    to :class:`~gpflow_ext.models.MLGPF` (e.g. ``loadings``, ``q_mu``, ``num_gauss_hermite_points``).
    """
    if not isinstance(config, MLGPFConfig):
        raise TypeError(f"config must be an MLGPFConfig, got {type(config).__name__}")
    X, Y = check_multilabel_data(X, Y)
    N, D = X.shape
    rng = np.random.default_rng(config.seed)
    num_inducing = min(config.num_inducing, N)
    sq_norms = np.asarray(X.multiply(X).sum(axis=1)).ravel() if scipy.sparse.issparse(X) else np.sum(X**2, axis=1)
    if config.kernel == "linear":
        kernel = gpflow.kernels.Linear(variance=1.0 / max(float(np.mean(sq_norms)), 1e-12))
    else:
        kernel = gpflow.kernels.SquaredExponential(variance=1.0, lengthscales=median_distance(X, sq_norms, rng))
    if config.kernel_variance is not None:
        kernel.variance.assign(config.kernel_variance)
        gpflow.set_trainable(kernel.variance, False)
    if config.basis_inducing:
        inducing_variable = BasisInducingPoints.from_data(X, rank=min(config.rank, min(N, D)), seed=config.seed)
    elif config.subspace:
        inducing_variable = SubspaceInducingPoints.from_data(
            X,
            num_inducing=num_inducing,
            rank=min(config.rank, min(N, D)),
            seed=config.seed,
            trainable_A=config.train_inducing,
            kmeans_max_iter=config.kmeans_max_iter,
        )
    else:
        if config.num_inducing > N:
            raise ValueError(
                f"num_inducing={config.num_inducing} exceeds the {N} training rows of X: {config.method} places "
                f"free inducing inputs by k-means on the rows, which gives at most N distinct centres (repeated "
                f"inducing inputs make K_ZZ singular); use num_inducing <= {N}"
            )
        from sklearn.cluster import KMeans

        centres = (
            KMeans(n_clusters=num_inducing, n_init=1, max_iter=config.kmeans_max_iter, random_state=config.seed)
            .fit(X)
            .cluster_centers_
        )  # [M, D]
        inducing_variable = gpflow.inducing_variables.InducingPoints(centres)
        gpflow.set_trainable(inducing_variable, config.train_inducing)
    frequency = np.clip(np.asarray(Y.sum(axis=0)).ravel() / N, 0.5 / N, 1.0 - 0.5 / N)  # [K]
    model_kwargs.setdefault("bias", np.log(frequency) - np.log1p(-frequency))
    num_latent_gps = Y.shape[1] if config.independent_labels else config.num_latent_gps
    return MLGPF(
        kernel,
        inducing_variable,
        num_labels=Y.shape[1],
        num_latent_gps=num_latent_gps,
        num_data=N,
        num_negative_samples=config.num_negative_samples,
        seed=config.seed,
        independent_labels=config.independent_labels,
        **model_kwargs,
    )


def median_distance(X: Matrix, sq_norms: np.ndarray, rng: np.random.Generator, sample: int = 1000) -> float:
    """Median Euclidean distance between pairs of ``sample`` random rows of X (1.0 if it is 0)."""
    rows = rng.choice(X.shape[0], size=min(sample, X.shape[0]), replace=False)
    sub = X[rows]
    inner = sub @ sub.T
    inner = inner.toarray() if scipy.sparse.issparse(inner) else inner
    sq = sq_norms[rows]
    dist2 = np.maximum(sq[:, None] + sq[None, :] - 2.0 * inner, 0.0)
    upper = dist2[np.triu_indices(len(rows), k=1)]
    median = float(np.sqrt(np.median(upper))) if upper.size else 1.0
    return median if median > 0 else 1.0


# -----------------------------------------------------------------------------------------
# run
# -----------------------------------------------------------------------------------------
def full_bound(model: MLGPF, X: Matrix, Y: scipy.sparse.csr_matrix, batch_size: int = 500) -> float:
    """The bound of eq. 20 on the whole training set (all labels exact, summed over row blocks):
    ``Σ_b |B_b|/N (elbo_b + KL) − KL``, where ``elbo_b = N/|B_b| · data_b − KL``."""
    if model.num_data is None:
        raise ValueError("full_bound needs model.num_data, the training-set size N the bound is scaled to: got None")
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


def run_mlgpf(
    config: MLGPFConfig,
    train: tuple[Any, Any],
    test: tuple[Any, Any],
    *,
    logdir: str | Path | None = None,
    progress: bool = True,
    save_rows: bool = False,
) -> dict[str, Any]:
    """Build the config's MLGPF on ``train = (X, Y)``, train it with :func:`gpflow_ext.training.fit`
    (TensorBoard under ``logdir``: the bound per step, test P@k every ``eval_every`` epochs) and score
    ``test``. Returns test P@1/3/5 and nDCG@1/3/5 (%), ``seconds_per_epoch`` (median), ``final_bound``
    (eq. 20 on the whole training set), the bound and test P@k per epoch, and the config. ``save_rows`` adds
    ``"top"``: the top 5 label ids of every test row (best first) as
    :func:`gpflow_ext.recipes.xmc_baselines.encode_rows` writes them, for paired comparisons."""
    precision = dataclasses.replace(gpflow.config.config(), float=np.float32 if config.float32 else np.float64)
    (X_train, Y_train), (X_test, Y_test) = train, test
    transform = config.input_transform
    if transform is not None:
        transform = transform.fit(X_train) if hasattr(transform, "fit") else transform
        X_train, X_test = transform(X_train), transform(X_test)
    with gpflow.config.as_context(precision):
        tf.random.set_seed(config.seed)
        start = time.perf_counter()
        model = build_mlgpf(config, X_train, Y_train)
        build_seconds = time.perf_counter() - start
        X_train, Y_train = model.prepare_data(X_train, Y_train)
        X_test, Y_test = model.prepare_data(X_test, Y_test)

        def test_metrics() -> dict[str, float]:
            return {k: v for k, v in model.evaluate(X_test, Y_test).items() if k.startswith("P@")}

        history = fit(
            model,
            (X_train, Y_train),
            epochs=config.epochs,
            batch_size=config.batch_size,
            learning_rate=decayed_learning_rate(
                config.learning_rate,
                config.learning_rate_decay,
                config.epochs * -(-X_train.shape[0] // config.batch_size),
                name="learning_rate_decay",
            ),
            logdir=None if logdir is None else str(logdir),
            seed=config.seed,
            callbacks=[
                FunctionCallback(test_metrics, config.eval_every),
                TensorBoard(log_every=1, log_parameters=False),
            ],
            progress=progress,
        )
        scores = model.evaluate(X_test, Y_test)
        bound = full_bound(model, X_train, Y_train, config.batch_size)
        rows = {}
        if save_rows:
            from .xmc_baselines import encode_rows

            rows["top"] = encode_rows(model.predict_top_k(X_test, k=min(5, model.num_labels)))
    return {
        "method": config.method,
        "config": config.as_dict(),
        "settings": {  # as built: P, M, R of the model (e.g. P = K with independent labels, M = R with Z = X̃)
            "num_latent_gps": int(model.num_latent_gps),
            "num_inducing": int(model.inducing_variable.num_inducing),
            "rank": getattr(model.inducing_variable, "rank", None),
            "batch_size": config.batch_size,
            "epochs": config.epochs,
        },
        "learning_rate": config.learning_rate,
        "num_negative_samples": config.num_negative_samples,
        "float": "float32" if config.float32 else "float64",
        "epochs_trained": int(history.epochs[-1]) if history.epochs else int(history.start_epoch),
        "resumed_from": history.resumed_from,
        "seconds_per_epoch": history.median_seconds_per_epoch() if history.epochs else None,
        "build_seconds": build_seconds,
        "final_bound": bound,
        "bound_per_epoch": [-float(v) for v in history.objective],
        "test_metrics_per_epoch": {k: list(map(float, v)) for k, v in history.metrics.items()},
        "metric_epochs": list(history.metric_epochs),
        **{k: float(v) for k, v in scores.items()},
        **rows,
    }


def tour_config(quick: bool = True, *, epochs: int | None = None, seed: int = 0) -> MLGPFConfig:
    """s-LINEAR for :func:`synthetic_multilabel`: P 10, M 100, R 100, batch 250, 20 sampled negatives,
    Adam at 0.05, 60 epochs (200 when not ``quick``), test P@k every 20 epochs."""
    return paper_config(
        "s-linear",
        "synthetic",
        num_latent_gps=10,
        num_inducing=100,
        rank=100,
        batch_size=250,
        num_negative_samples=20,
        learning_rate=0.05,
        eval_every=20,
        seed=seed,
        epochs=epochs if epochs is not None else (60 if quick else 200),
    )
