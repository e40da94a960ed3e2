"""MLGPF as the paper runs it: build a model from a config and train it.

*Fully scalable Gaussian processes using subspace inducing inputs*, Section 4. The configs (the eight variants
of Tables 2 and 4, the named recipes) are in :mod:`gpflow_ext.recipes.mlgpf_config`.

* :func:`build_mlgpf` (config, X, Y) -> :class:`~gpflow_ext.models.MLGPF`, initialised from the data;
  :func:`run_mlgpf` trains it with :func:`gpflow_ext.training.fit` and returns a results dict (test
  P@k / nDCG@k, seconds per epoch, the final full-data bound, :func:`full_bound`).
* :func:`load_xmc` reads a dataset under any of its published file names; :func:`synthetic_multilabel`
  is the no-download tour problem.

Example
-------
>>> import scipy.sparse as sp
>>> from gpflow_ext.recipes.mlgpf import build_mlgpf
>>> from gpflow_ext.recipes.mlgpf_config import paper_config
>>> X = sp.random(60, 40, density=0.2, format="csr", random_state=0)
>>> Y = sp.random(60, 12, density=0.15, format="csr", random_state=1); Y.data[:] = 1.0
>>> config = paper_config("s-linear", "bibtex", num_inducing=8, num_latent_gps=3, rank=10)
>>> model = build_mlgpf(config, X, Y)
>>> model.predict_utilities(X[:2].toarray()).shape
TensorShape([2, 12])
"""

import dataclasses
import time
from pathlib import Path
from typing import Any, NamedTuple

import gpflow
import numpy as np
import scipy.sparse
import tensorflow as tf

from ..data.transforms import median_distance
from ..inducing_variables import BasisInducingPoints, SubspaceInducingPoints
from ..metrics import ranking_metrics
from ..models import MLGPF
from ..training import FunctionCallback, TensorBoard, fit
from ..training.schedules import decayed_learning_rate
from ..utilities import to_input_tensor
from ..validation import check_input_matrix, check_multilabel_data
from .mlgpf_auto import resolve_config
from .mlgpf_config import Matrix, MLGPFConfig
from .mlgpf_data import load_xmc, synthetic_multilabel
from .mlgpf_ensemble import ensemble_top_k
from .mlgpf_stacking import LabelScoreFeatures

__all__ = ["build_mlgpf", "run_mlgpf", "full_bound", "load_xmc", "synthetic_multilabel"]


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
    if config.kernel_variance_grid is not None:
        raise ValueError(
            "config.kernel_variance_grid is set: choose σ² on the training rows first with "
            "gpflow_ext.recipes.mlgpf_auto.resolve_config(config, X, Y) (run_mlgpf does)"
        )
    X, Y = check_multilabel_data(X, Y)
    N, D = X.shape
    rng = np.random.default_rng(config.seed)
    num_inducing = min(config.num_inducing, N)
    sq_norms = np.asarray(X.multiply(X).sum(axis=1)).ravel() if scipy.sparse.issparse(X) else np.sum(X**2, axis=1)
    if config.kernel == "linear":
        kernel = gpflow.kernels.Linear(variance=1.0 / max(float(np.mean(sq_norms)), 1e-12))
    else:
        kernel = gpflow.kernels.SquaredExponential(variance=1.0, lengthscales=median_distance(X, rng))
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
    num_latent_gps = Y.shape[1] if config.independent_labels else config.num_latent_gps
    if config.init_from_map:  # P = min(num_latent_gps, K, R) factors of the per-label MAP weights
        from .mlgpf_shared import map_initialisation

        start = map_initialisation(X, Y, inducing_variable, float(kernel.variance.numpy()), num_latent_gps)
        model_kwargs = {**start, **model_kwargs}
        num_latent_gps = model_kwargs["q_mu"].shape[1]
    frequency = np.clip(np.asarray(Y.sum(axis=0)).ravel() / N, 0.5 / N, 1.0 - 0.5 / N)  # [K]
    model_kwargs.setdefault("bias", np.log(frequency) - np.log1p(-frequency))
    if config.label_kernel_variances is not None:
        if len(config.label_kernel_variances) != Y.shape[1]:
            raise ValueError(
                f"config.label_kernel_variances has {len(config.label_kernel_variances)} values; Y has "
                f"{Y.shape[1]} labels"
            )
        scales = np.sqrt(np.asarray(config.label_kernel_variances) / config.kernel_variance)  # [K]
        model_kwargs.setdefault("latent_scales", scales)
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


class _Member(NamedTuple):
    """One trained model of an ensemble, with the rows as it reads them and the cut-offs it scores."""

    model: MLGPF
    history: Any
    build_seconds: float
    train: tuple[Any, Any]  # (X, Y) after ``model.prepare_data``
    test: tuple[Any, Any]
    ks: tuple[int, ...]


def _train_member(
    config: MLGPFConfig, train: tuple[Any, Any], test: tuple[Any, Any], logdir: str | Path | None, progress: bool
) -> _Member:
    """One model of ``config`` built and trained on the (transformed) rows ``train``, test P@k every
    ``eval_every`` epochs."""
    tf.random.set_seed(config.seed)
    start = time.perf_counter()
    model = build_mlgpf(config, *train)
    build_seconds = time.perf_counter() - start
    X_train, Y_train = model.prepare_data(*train)
    X_test, Y_test = model.prepare_data(*test)
    ks = tuple(k for k in REPORTED_KS if k <= model.num_labels)  # P@5 needs 5 labels to rank

    def test_metrics() -> dict[str, float]:
        metrics = model.evaluate(X_test, Y_test, ks=ks, by_probability=config.rank_by_probability)
        return {k: v for k, v in metrics.items() if k.startswith("P@")}

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
        callbacks=[FunctionCallback(test_metrics, config.eval_every), TensorBoard(log_every=1, log_parameters=False)],
        progress=progress,
    )
    return _Member(model, history, build_seconds, (X_train, Y_train), (X_test, Y_test), ks)


#: the cut-offs :func:`run_mlgpf` scores (those up to the number of labels)
REPORTED_KS = (1, 3, 5)


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
    ``test``. Returns test P@k and nDCG@k (%) for k in :data:`REPORTED_KS` up to the number of labels,
    ``seconds_per_epoch`` (median), ``final_bound`` (eq. 20 on the whole training set), the bound and test P@k
    per epoch, and the config. ``save_rows`` adds ``"top"``: the top 5 (at most K) label ids of every test row
    (best first) as
    :func:`gpflow_ext.recipes.xmc_baselines.encode_rows` writes them, for paired comparisons. With
    ``ensemble_size`` E > 1, E models are trained with seeds ``seed``, ..., ``seed + E − 1`` and the test rows are
    ranked by their averaged mean utilities (:func:`~gpflow_ext.recipes.mlgpf_ensemble.ensemble_top_k`; member e at
    σ² ``member_kernel_variances[e]`` where set; the
    bound, history and timings are the first member's, ``"member_metrics"`` each member's test P@k). A config with
    ``kernel_variance_grid`` first gets σ² from the training rows alone
    (:func:`~gpflow_ext.recipes.mlgpf_auto.resolve_config`; its record under ``"tuning"``). With
    ``label_score_weight`` the rows get a first stage's label probabilities after their transform
    (:class:`~gpflow_ext.recipes.mlgpf_stacking.LabelScoreFeatures`)."""
    check_input_matrix(test[0], "test[0] (X)", allow_sparse=True, integer="cast", what="inputs")  # before training
    tuning_start = time.perf_counter()
    config, tuning = resolve_config(config, *train, name="train[0] (X)")  # checks the training rows
    if tuning is not None:
        tuning["seconds"] = time.perf_counter() - tuning_start
    precision = dataclasses.replace(gpflow.config.config(), float=np.float32 if config.float32 else np.float64)
    (X_train, Y_train), (X_test, Y_test) = train, test
    transform = config.rows_transform()
    if transform is not None:
        transform = transform.fit(X_train) if hasattr(transform, "fit") else transform
        X_train, X_test = transform(X_train), transform(X_test)
    if config.label_score_weight:  # the first stage at the chosen σ², after the rows' transform
        if config.kernel_variance is None:
            raise ValueError("label_score_weight > 0 needs kernel_variance, the first stage's σ²: got None")
        weight, variance = config.label_score_weight, config.kernel_variance
        features = LabelScoreFeatures(
            weight, variance, folds=config.tuning_folds, rank=config.rank, seed=config.seed, budget=config.tuning_budget
        )
        features.fit(X_train, Y_train)
        X_train, X_test = features.training_rows, features(X_test)
    with gpflow.config.as_context(precision):
        size = config.ensemble_size
        member_logdirs = [logdir if logdir is None or size == 1 else Path(logdir) / f"member_{e}" for e in range(size)]
        variances = config.member_kernel_variances or (config.kernel_variance,) * size
        members = [  # member e trains with seed + e (and its own σ², if set): the first is the single model
            _train_member(
                dataclasses.replace(config, seed=config.seed + e, kernel_variance=variances[e]),
                (X_train, Y_train),
                (X_test, Y_test),
                member_logdirs[e],
                progress,
            )
            for e in range(size)
        ]
        model, history, build_seconds, (X_train, Y_train), (X_test, Y_test), ks = members[0]
        models = [member.model for member in members]
        by_probability = config.rank_by_probability
        top = ensemble_top_k(models, X_test, k=max(ks), by_probability=by_probability)  # [N_test, max(ks)]
        scores = ranking_metrics(top, Y_test, ks)
        bound = full_bound(model, X_train, Y_train, config.batch_size)
        rows: dict[str, Any] = {}
        if size > 1:  # each member's own test P@k, beside the ensemble's
            rows["member_metrics"] = [
                {
                    k: v
                    for k, v in m.evaluate(X_test, Y_test, ks=ks, by_probability=by_probability).items()
                    if k.startswith("P@")
                }
                for m in models
            ]
        if save_rows:
            from .xmc_baselines import encode_rows

            top_5 = ensemble_top_k(models, X_test, k=min(5, model.num_labels), by_probability=by_probability)
            rows["top"] = encode_rows(top_5)
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
        **({"tuning": tuning} if tuning is not None else {}),
        **rows,
    }
