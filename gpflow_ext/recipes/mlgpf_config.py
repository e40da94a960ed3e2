"""MLGPF's settings as configs: the paper's eight variants of Tables 2 and 4 (*Fully scalable Gaussian processes
using subspace inducing inputs*, Section 4), the ``tfidf`` and ``label-gps`` recipes, and the registry of named recipes.

A variant is named ``[s][f]-KERNEL``: prefix ``s`` = subspace inducing inputs Z = A X̃ (else free Z), ``f`` = the
inducing inputs (A or Z) kept fixed (else optimised); kernel ``linear`` or ``se``.
"""

import dataclasses
from collections.abc import Callable
from typing import Any, TypeAlias

import numpy as np
import scipy.sparse

from ..training.schedules import LEARNING_RATE_DECAYS
from ..validation import check_choice, check_float_tuple, check_positive_int, check_positive_number

__all__ = [
    "METHODS",
    "DATASET_SETTINGS",
    "parse_method",
    "MLGPFConfig",
    "epochs_for_min_steps",
    "paper_config",
    "tfidf_config",
    "label_gps_config",
    "AUTO_GRID",
    "AUTO_TUNING_BUDGET",
    "AUTO_TUNING_MAX_LABELS",
    "label_gps_auto_config",
    "BEST_ENSEMBLE_SIZE",
    "BEST_MIN_STEPS",
    "BEST_INPUT_TRANSFORMS",
    "best_config",
    "label_gps_shared_config",
    "RECIPES",
    "register_recipe",
    "tour_config",
    "Matrix",
]

#: An input matrix: dense rows or CSR.
Matrix: TypeAlias = np.ndarray | scipy.sparse.csr_matrix


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
    :param kernel_variance_grid: σ² values to choose from on the training rows before the model is built
        (:func:`gpflow_ext.recipes.mlgpf_auto.resolve_config`, run by ``run_mlgpf``); ``None``: no choice.
    :param tuning_folds: K of the inner K-fold cross-validation that chooses σ² from ``kernel_variance_grid``.
    :param tuning_extensions: how many σ² values may be added past an end of ``kernel_variance_grid`` that the
        inner cross-validation chooses, one step of the grid's ratio at a time (0: the grid as given).
    :param min_steps: train for at least this many optimiser steps: on N training rows ``epochs`` is raised to
        ceil(min_steps / ceil(N / batch_size)) where it is fewer (:meth:`with_min_steps`, applied by
        :func:`gpflow_ext.recipes.mlgpf_auto.resolve_config`); ``None``: ``epochs`` as given.
    :param label_wise_variance: with ``kernel_variance_grid`` and ``independent_labels``, the same inner
        cross-validation also chooses a prior variance σ²_k per label from the grid, by each label's held-out
        log-likelihood (:data:`gpflow_ext.recipes.mlgpf_auto.LABEL_WISE_RULE`); the model is trained with them.
    :param label_kernel_variances: σ²_k per label [K] (the outcome of ``label_wise_variance``, or given): label
        k's GP has prior variance σ²_k, through ``MLGPF(latent_scales=sqrt(σ²_k / kernel_variance))``.
    :param frequency_exponent_grid: with ``kernel_variance_grid`` and ``independent_labels``, γ values of a
        label-frequency prior σ²_k = σ² (n_k / n̄)^γ chosen jointly with σ² by the same inner cross-validation
        (:data:`gpflow_ext.recipes.mlgpf_auto.FREQUENCY_RULE`); 0 is the plain rule.
    :param random_features: F > 0 appends F random Fourier features of a squared-exponential kernel to the
        rows after ``input_transform`` (:class:`~gpflow_ext.data.transforms.WithRandomFeatures`, lengthscale by
        the median heuristic on the training rows, drawn from ``seed``): a linear kernel then adds a non-linear
        part to the linear model; 0: the rows as transformed. :meth:`rows_transform` is the transform applied.
    :param tuning_max_labels: the inner cross-validation of ``kernel_variance_grid`` sees at most this many
        labels, the most frequent ones (:func:`~gpflow_ext.recipes.mlgpf_data.tuning_subsample`); None: all.
        The label-wise choices see every label.
    :param tuning_budget: and at most the random rows whose inner-fold products of features and weights cost
        this many multiply-adds (n_fit × R × labels; also each first stage of ``label_score_weight``); None: every row.
    :param init_from_map: start the latent GPs and loadings from the rank-P SVD of one linear GP per label's MAP
        weights at σ² (:mod:`~gpflow_ext.recipes.mlgpf_shared`; P = min(``num_latent_gps``, K, R)); needs
        ``basis_inducing``, a linear kernel and shared factors (not ``independent_labels``).
    :param rank_by_probability: rank labels by p(y_k = 1 | x) = E[σ(f_k)] instead of the mean utilities f̄_k
        (P@k on the test rows and in the cross-validation; the inner choice of σ² is unchanged).
    :param input_transform_choices: names of :data:`~gpflow_ext.data.transforms.ROW_TRANSFORMS` (e.g. ``("tfidf",
        "l2")``); the inner cross-validation chooses ``input_transform`` among them (with σ² from the grid, if set).
    :param ensemble_size: E > 1 trains E models with seeds ``seed`` to ``seed + E − 1`` and ranks by their
        averaged mean utilities (:func:`~gpflow_ext.recipes.mlgpf_ensemble.ensemble_top_k`); 1: one model.
    :param ensemble_across_variances: with ``kernel_variance_grid`` and E > 1, member e trains at the e-th best σ²
        of the inner cross-validation (:data:`~gpflow_ext.recipes.mlgpf_ensemble.MEMBER_VARIANCES_RULE`), not all at one.
    :param member_kernel_variances: each member's σ² [E] (the outcome of ``ensemble_across_variances``, or given);
        None: every member at ``kernel_variance``.
    :param label_score_weight: α > 0 appends α × a first stage's label probabilities to the rows, out-of-fold on the
        training rows (:class:`~gpflow_ext.recipes.mlgpf_stacking.LabelScoreFeatures`, at σ², ``tuning_folds``); 0: none.
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
    kernel_variance_grid: tuple[float, ...] | None = None
    tuning_folds: int = 3
    tuning_extensions: int = 0
    min_steps: int | None = None
    label_wise_variance: bool = False
    label_kernel_variances: tuple[float, ...] | None = None
    frequency_exponent_grid: tuple[float, ...] | None = None
    random_features: int = 0
    tuning_max_labels: int | None = None
    tuning_budget: float | None = None
    ensemble_size: int = 1
    init_from_map: bool = False
    rank_by_probability: bool = False
    input_transform_choices: tuple[str, ...] | None = None
    ensemble_across_variances: bool = False
    member_kernel_variances: tuple[float, ...] | None = None
    label_score_weight: float = 0.0

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
        if self.kernel_variance_grid is not None:
            object.__setattr__(
                self, "kernel_variance_grid", check_float_tuple(self.kernel_variance_grid, "kernel_variance_grid")
            )
        check_positive_int(self.tuning_folds, "tuning_folds")
        if self.tuning_folds < 2:
            raise ValueError(f"tuning_folds must be at least 2, got {self.tuning_folds}")
        check_positive_int(self.tuning_extensions, "tuning_extensions", minimum=0)
        check_positive_int(self.min_steps, "min_steps", allow_none=True)
        check_positive_int(self.random_features, "random_features", minimum=0)
        check_positive_int(self.tuning_max_labels, "tuning_max_labels", allow_none=True)
        check_positive_int(self.ensemble_size, "ensemble_size")
        if self.init_from_map and not (self.basis_inducing and self.kernel == "linear" and not self.independent_labels):
            raise ValueError("init_from_map=True needs basis_inducing=True, kernel='linear', independent_labels=False")
        if self.tuning_budget is not None:
            check_positive_number(self.tuning_budget, "tuning_budget", "a positive number of multiply-adds or None")
        if self.label_wise_variance and self.kernel_variance_grid is None:
            raise ValueError("label_wise_variance=True chooses each label's σ² from kernel_variance_grid: set the grid")
        if self.frequency_exponent_grid is not None:
            grid = check_float_tuple(self.frequency_exponent_grid, "frequency_exponent_grid", positive=False)
            if self.kernel_variance_grid is None or self.tuning_extensions or self.label_wise_variance:
                raise ValueError(
                    "frequency_exponent_grid is chosen with σ² on kernel_variance_grid as given: set the grid, "
                    "with tuning_extensions=0 and label_wise_variance=False"
                )
            object.__setattr__(self, "frequency_exponent_grid", grid)
        label_wise = self.label_wise_variance or self.frequency_exponent_grid is not None
        if (label_wise or self.label_kernel_variances is not None) and not self.independent_labels:
            raise ValueError("label-wise prior variances need independent_labels=True (one latent GP per label)")
        if self.label_kernel_variances is not None:
            values = check_float_tuple(self.label_kernel_variances, "label_kernel_variances")
            if self.kernel_variance is None:
                raise ValueError("label_kernel_variances needs kernel_variance (the kernel's σ²) to be set")
            object.__setattr__(self, "label_kernel_variances", values)
        if self.input_transform is not None and not callable(self.input_transform):
            raise TypeError(f"input_transform must be callable or None, got {type(self.input_transform).__name__}")
        if self.input_transform_choices is not None:
            from ..data.transforms import row_transform_names

            object.__setattr__(self, "input_transform_choices", row_transform_names(self.input_transform_choices))
            if self.kernel_variance_grid is None and self.kernel_variance is None:
                raise ValueError("input_transform_choices are chosen at kernel_variance or on kernel_variance_grid")
        from .mlgpf_ensemble import check_member_variances

        members = check_member_variances(self, label_wise or self.label_kernel_variances is not None)
        object.__setattr__(self, "member_kernel_variances", members)
        from .mlgpf_stacking import check_label_score_weight

        object.__setattr__(self, "label_score_weight", check_label_score_weight(self))

    @property
    def method(self) -> str:
        """The paper's name of this variant, e.g. ``"sf-linear"``."""
        prefix = ("s" if self.subspace else "") + ("" if self.train_inducing else "f")
        return f"{prefix}-{self.kernel}" if prefix else self.kernel

    def rows_transform(self) -> Any:
        """The transform the rows go through before anything else (fitted on the training rows where it has a
        ``fit``): ``input_transform``, followed by ``random_features`` random Fourier features when set."""
        if not self.random_features:
            return self.input_transform
        from ..data.transforms import WithRandomFeatures

        return WithRandomFeatures(self.input_transform, self.random_features, seed=self.seed)

    def with_min_steps(self, num_rows: int) -> "MLGPFConfig":
        """This config for ``num_rows`` training rows with ``min_steps`` turned into epochs (and set to None):
        ``epochs`` = max(epochs, ceil(min_steps / ceil(num_rows / batch_size)))."""
        num_rows = check_positive_int(num_rows, "num_rows")
        if self.min_steps is None:
            return self
        epochs = epochs_for_min_steps(self.epochs, self.min_steps, num_rows, self.batch_size)
        return dataclasses.replace(self, epochs=epochs, min_steps=None)

    def as_dict(self) -> dict[str, Any]:
        """The JSON-ready fields (all but ``input_transform``, which is given by name)."""
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "input_transform"}
        transform = self.input_transform
        out["input_transform"] = None if transform is None else getattr(transform, "__name__", repr(transform))
        return out


def epochs_for_min_steps(epochs: int, min_steps: int, num_rows: int, batch_size: int) -> int:
    """max(epochs, ceil(min_steps / ceil(num_rows / batch_size))): epochs of at least ``min_steps`` batch steps."""
    return max(int(epochs), -(-int(min_steps) // -(-int(num_rows) // int(batch_size))))


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
    settings.update(basis_inducing=True, independent_labels=True)  # the recipe's model, whatever the overrides
    return tfidf_config(method, dataset, **settings)


#: σ² values ``label-gps-auto`` chooses from: doubling steps from 1/2 to 256 (``label-gps`` fixes 12; the earlier grid
#: {2, ..., 64} had its ends chosen on Medical and Enron). ``tuning_extensions`` lets the grid grow past a chosen end.
AUTO_GRID: tuple[float, ...] = tuple(2.0**e for e in range(-1, 9))


#: The labels and multiply-adds per inner-fold product ``label-gps-auto``'s σ² cross-validation sees at most (``tuning_max_labels``,
#: ``tuning_budget``): above the four shared sets, which it sees whole; minutes of this machine's matmul rate on larger data.
AUTO_TUNING_MAX_LABELS, AUTO_TUNING_BUDGET = 500, 4e9


def label_gps_auto_config(method: str = "s-linear", dataset: str = "bibtex", **overrides: Any) -> MLGPFConfig:
    """:func:`label_gps_config` with σ² chosen on the training rows from :data:`AUTO_GRID` (or the override
    ``kernel_variance_grid``) by an inner ``tuning_folds``-fold (3) cross-validation of the model's MAP twin
    (:mod:`gpflow_ext.recipes.mlgpf_auto`), so it runs unchanged on any dataset. On large data the cross-validation
    sees the most frequent labels and random rows within :data:`AUTO_TUNING_MAX_LABELS` and
    :data:`AUTO_TUNING_BUDGET` (:func:`~gpflow_ext.recipes.mlgpf_data.tuning_subsample`). The basis rank is
    not tuned: R = min(2000, N, D) is the exact span of the rows on every set with min(N, D) <= 2000."""
    defaults = dict(
        kernel_variance_grid=AUTO_GRID, tuning_max_labels=AUTO_TUNING_MAX_LABELS, tuning_budget=AUTO_TUNING_BUDGET
    )
    return label_gps_config(method, dataset, **{**defaults, **{k: v for k, v in overrides.items() if v is not None}})


#: The optimiser steps ``best`` trains for at least: the steps of ``label-gps``'s 100 epochs on Bibtex's 4,880 rows.
BEST_MIN_STEPS = 1000
#: The seeds ``best`` trains and averages (``ensemble_size``), fixed before the cross-validation that chose it.
BEST_ENSEMBLE_SIZE = 3
#: The rows' transforms ``best``'s inner cross-validation chooses from with σ² (``input_transform_choices``).
BEST_INPUT_TRANSFORMS = ("tfidf", "l2")
#: α of ``best``'s label-score features (``label_score_weight``), fixed from a screen of MAP twins before its CV.
BEST_LABEL_SCORE_WEIGHT = 0.25


def best_config(method: str = "s-linear", dataset: str = "bibtex", **overrides: Any) -> MLGPFConfig:
    """:func:`label_gps_auto_config` trained for at least :data:`BEST_MIN_STEPS` optimiser steps (epochs raised
    where N is small; ``min_steps``), as an ensemble of :data:`BEST_ENSEMBLE_SIZE` seeds (``ensemble_size``; σ² is
    chosen once) that ranks labels by the members' averaged p(y_k = 1 | x) (``rank_by_probability``), with the rows'
    transform chosen with σ² from :data:`BEST_INPUT_TRANSFORMS` (``input_transform_choices``), on rows joined with
    :data:`BEST_LABEL_SCORE_WEIGHT` × a first stage's label probabilities (``label_score_weight``). Chosen by the
    mean rank of 5-fold cross-validated P@1/3/5 on the training files of Medical, Enron, Bibtex and TMC2007-500
    (``docs/mlgpf/selection.md``): over ``label-gps`` (σ² = 12) and ``label-gps-auto`` (100 epochs), then the
    ensemble, the ranking by probability, the chosen transform and the label scores, each before any test split
    was scored with it. An explicit ``epochs`` is trained
    as given (no ``min_steps``) unless ``min_steps`` is given too; ``ensemble_size=1`` trains one model."""
    overrides = {k: v for k, v in overrides.items() if v is not None}
    defaults: dict[str, Any] = {"ensemble_size": BEST_ENSEMBLE_SIZE, "rank_by_probability": True}
    defaults |= {"input_transform_choices": BEST_INPUT_TRANSFORMS, "label_score_weight": BEST_LABEL_SCORE_WEIGHT}
    defaults["min_steps"] = None if "epochs" in overrides else BEST_MIN_STEPS  # an explicit epochs as given
    return label_gps_auto_config(method, dataset, **{**defaults, **overrides})


def label_gps_shared_config(method: str = "s-linear", dataset: str = "bibtex", **overrides: Any) -> MLGPFConfig:
    """:func:`best_config`'s single model ranking by mean utilities on TF-IDF rows, with P = ``num_latent_gps`` (the
    paper's 30 by default) shared latent GPs mixed by trained loadings instead of one GP per label, started from the
    per-label MAP weights at the chosen σ² (``init_from_map``): the paper's model with ``label-gps`` as its start."""
    defaults = {"ensemble_size": 1, "rank_by_probability": False, "input_transform_choices": ("tfidf",)}  # as in its CV
    defaults["label_score_weight"] = 0.0  # nor label scores
    overrides = {**defaults, **{k: v for k, v in overrides.items() if v is not None}}
    config = best_config(method, dataset, **overrides)
    return dataclasses.replace(config, independent_labels=False, init_from_map=True)


#: Named recipes, ``name -> factory(method, dataset, **overrides) -> MLGPFConfig`` (``--recipe`` in the scripts): ``paper``
#: (the paper's settings), ``tfidf``, ``label-gps``, ``label-gps-auto``, ``best`` (chosen by cross-validation on four
#: training files) and ``label-gps-shared``, each the ``*_config`` function of its name.
RECIPES: dict[str, Callable[..., MLGPFConfig]] = {
    "paper": paper_config,
    "tfidf": tfidf_config,
    "label-gps": label_gps_config,
    "label-gps-auto": label_gps_auto_config,
    "best": best_config,
    "label-gps-shared": label_gps_shared_config,
}


def register_recipe(name: str, factory: Callable[..., MLGPFConfig]) -> None:
    """Add ``factory(method, dataset, **overrides) -> MLGPFConfig`` to :data:`RECIPES` under ``name``."""
    if not isinstance(name, str) or not name or name in RECIPES:
        raise ValueError(f"recipe name must be a new non-empty string, got {name!r} (taken: {sorted(RECIPES)})")
    if not callable(factory):
        raise TypeError(f"factory must be callable, got {type(factory).__name__}")
    RECIPES[name] = factory


def tour_config(quick: bool = True, *, epochs: int | None = None, seed: int = 0) -> MLGPFConfig:
    """s-LINEAR for :func:`synthetic_multilabel`: P 10, M 100, R 100, batch 250, 20 sampled negatives,
    Adam at 0.05, 60 epochs (200 when not ``quick``), test P@k every 20 epochs."""
    sizes = dict(num_latent_gps=10, num_inducing=100, rank=100, batch_size=250, num_negative_samples=20)
    epochs = epochs if epochs is not None else (60 if quick else 200)
    return paper_config("s-linear", "synthetic", learning_rate=0.05, eval_every=20, seed=seed, epochs=epochs, **sizes)
