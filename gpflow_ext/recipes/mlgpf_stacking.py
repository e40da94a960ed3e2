"""Label-score features (``MLGPFConfig.label_score_weight``): the rows with a first stage's label probabilities
appended, so that each label's GP also sees which other labels the row is likely to carry (stacked binary
relevance: Godbole and Sarawagi, *Discriminative methods for multi-labeled classification*, PAKDD 2004).

The first stage is the MAP twin of ``label-gps`` at the recipe's σ² (:func:`~gpflow_ext.recipes.mlgpf_map.map_predictor`:
Bernoulli-logit labels, prior N(0, σ² I) on the weights in the basis of the rows' leading right-singular vectors),
fitted for the L most frequent labels. With p̂_l(x) = sigmoid(f_l(x)) its probabilities, the model is trained on

    x ← [x, α p̂_1(x), ..., α p̂_L(x)]    (α = ``label_score_weight``),

and a linear kernel on the joined rows adds α² p̂(x)·p̂(x') to the rows' own x·x'. The training rows' p̂ are
out-of-fold: the rows are split by ``KFold(folds, shuffle=True, random_state=seed)`` and each fold is scored by a
first stage fitted on the other folds, so the model learns from scores as good as those of rows the first stage has
not seen. New rows are scored by a first stage fitted on every training row.
"""

from typing import Any

import numpy as np
import scipy.sparse
import scipy.special

from ..data.transforms import append_columns
from ..validation import check_input_matrix, check_multilabel_data, check_positive_int, check_positive_number
from .mlgpf_map import FoldedMapPredictor, MapPredictor, map_predictor

__all__ = ["LABEL_SCORE_MAX_LABELS", "LabelScoreFeatures", "check_label_score_weight"]

#: L: the first stage scores at most this many labels, the most frequent (ties: the lower label id first).
LABEL_SCORE_MAX_LABELS = 256


def check_label_score_weight(config: Any) -> float:
    """An ``MLGPFConfig``'s ``label_score_weight`` as a float α >= 0 (0: no label-score features), after checking
    that α > 0 has a σ² for its first stage (``kernel_variance`` or ``kernel_variance_grid``)."""
    weight = check_positive_number(
        config.label_score_weight, "label_score_weight", "a non-negative finite float", allow_zero=True
    )
    if weight and config.kernel_variance is None and config.kernel_variance_grid is None:
        raise ValueError(
            "label_score_weight > 0 fits its first stage at σ²: set kernel_variance or kernel_variance_grid"
        )
    return weight


class LabelScoreFeatures:
    """The rows joined with α p̂(x) of a first stage (module docstring). ``fit(X, Y)`` on the training rows (already
    through the recipe's row transform) fits the first stages; :attr:`training_rows` are then the training rows with
    their out-of-fold scores, and calling the fitted object on new rows joins the scores of the first stage fitted on
    every training row.

    :param weight: α > 0, the scale of the appended probabilities.
    :param kernel_variance: σ² of the first stage's prior.
    :param folds: K of the out-of-fold split of the training rows.
    :param rank: the first stage's basis rank (at most min(N, D) of the rows it is fitted on).
    :param seed: seeds the split and the basis.
    :param max_labels: L, at most this many labels scored, the most frequent.
    :param budget: each first stage is fitted on at most the random rows (of those it may see) whose product of
        features and weights costs this many multiply-adds, n·R·L (and at least 2R rows); None: every row. Every
        training row is still scored out-of-fold.
    """

    def __init__(
        self,
        weight: float,
        kernel_variance: float,
        *,
        folds: int = 3,
        rank: int = 2000,
        seed: int = 0,
        max_labels: int = LABEL_SCORE_MAX_LABELS,
        budget: float | None = None,
    ) -> None:
        self.weight = check_positive_number(weight, "weight", "a positive finite float (α; 0 appends nothing)")
        self.kernel_variance = check_positive_number(kernel_variance, "kernel_variance", "a positive finite float")
        self.folds = check_positive_int(folds, "folds", minimum=2)
        self.rank = check_positive_int(rank, "rank")
        self.seed = seed
        self.max_labels = check_positive_int(max_labels, "max_labels")
        self.budget = None if budget is None else check_positive_number(budget, "budget", "a positive number or None")
        self.rows_fitted: list[int] = []  # the rows each first stage was fitted on: one per fold, then the last
        self.labels: np.ndarray | None = None  # [L] the scored label ids
        self.predictor: MapPredictor | FoldedMapPredictor | None = None
        self.training_rows: Any = None  # [N, D + L]

    def fit(self, X: Any, Y: Any) -> "LabelScoreFeatures":
        """Fit the first stages on the training rows X [N, D] and labels Y [N, K] (dense or CSR); returns ``self``."""
        from sklearn.model_selection import KFold

        X, Y = check_multilabel_data(X, Y)
        if X.shape[0] < self.folds:
            raise ValueError(f"folds={self.folds} needs at least that many training rows, got {X.shape[0]}")
        counts = np.asarray((Y != 0).sum(axis=0)).ravel()  # [K]
        self.labels = np.argsort(-counts, kind="stable")[: self.max_labels]  # [L]
        labels = Y[:, self.labels]  # [N, L]
        out_of_fold = np.zeros((X.shape[0], self.labels.size))  # [N, L]
        rng = np.random.default_rng(self.seed)
        self.rows_fitted = []
        for fit, held in KFold(n_splits=self.folds, shuffle=True, random_state=self.seed).split(np.arange(X.shape[0])):
            stage = self._first_stage(X, labels, fit, rng)
            out_of_fold[held] = stage.scores(X[held])  # [N_held, L]
        self.predictor = self._first_stage(X, labels, np.arange(X.shape[0]), rng)
        self.training_rows = self._joined(X, out_of_fold)
        return self

    def _first_stage(
        self, X: Any, labels: Any, rows: np.ndarray, rng: np.random.Generator
    ) -> MapPredictor | FoldedMapPredictor:
        """The MAP twin fitted on ``rows`` of X, or on the random ones of them within ``budget`` (n·R·L)."""
        if self.budget is not None:
            per_row = min(self.rank, *X.shape) * labels.shape[1]  # multiply-adds per row of a product
            keep = max(int(self.budget // per_row), 2 * self.rank)
            if rows.size > keep:
                rows = np.sort(rng.choice(rows, keep, replace=False))
        self.rows_fitted.append(int(rows.size))
        return map_predictor(X[rows], labels[rows], self.kernel_variance, self.rank, seed=self.seed)

    def _joined(self, X: Any, scores: np.ndarray) -> Any:
        """[X, α sigmoid(scores)] [N, D + L]; ``scores`` [N, L] is overwritten by the features (one array of them)."""
        features = scipy.special.expit(scores, out=scores)  # [N, L]
        features *= self.weight
        return append_columns(X, features)  # [N, D + L]

    def __call__(self, X: Any) -> Any:
        """New rows X [N, D] joined with α p̂(x) of the first stage fitted on every training row [N, D + L]."""
        if self.predictor is None:
            raise ValueError("LabelScoreFeatures is not fitted: call fit(X_train, Y_train) first")
        X = check_input_matrix(X, "X", allow_sparse=True, integer="cast", what="inputs")
        if X.shape[1] != self.predictor.num_features:
            raise ValueError(f"X has {X.shape[1]} columns; the first stage was fitted on {self.predictor.num_features}")
        return self._joined(X, self.predictor.scores(X))
