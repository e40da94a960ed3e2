"""Predictive distributions of scored ratings, as models see them and as a mixture of models.

* :class:`ScoredRatings`: one model's predictive mean and discrete rating distribution for the stored entries of a
  scored matrix [N, D], with each row's joint log-probability (paper eq. 33 on the discrete ratings), and their
  metrics (:meth:`ScoredRatings.metrics`: RMSE, log-probability per rating, interval coverage).
* :meth:`ScoredRatings.transposed`: the same predictions indexed by the other side of the matrix, e.g. a GPLVF
  trained on Yᵀ (items as rows) scored per user.
* :meth:`ScoredRatings.save` / :meth:`ScoredRatings.load`: one ``.npz`` file per model's predictions, so that
  models trained in separate runs can be mixed afterwards.
* :func:`mixture`: the predictive distribution of an equally (or otherwise) weighted mixture of models,
  p(y) = Σ_m w_m p_m(y) for every row's ratings jointly, with mean Σ_m w_m E_m[y].
"""

import dataclasses
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from scipy.special import logsumexp

from .gplvf_likelihoods import interval_metrics, rating_classes
from .movielens_data import rmse

__all__ = ["ScoredRatings", "mixture"]


@dataclasses.dataclass(frozen=True)
class ScoredRatings:
    """A model's predictive distribution of the T scored entries of a matrix of shape ``shape`` [N, D], in row-major
    order (``rows``, ``cols`` [T], sorted by row then column).

    ``ratings`` [T]: the scored values, on the scale ``rating_values`` [K] (ascending); ``mean`` [T]: the predictive
    mean rating; ``probabilities`` [T, K]: p(rating = rating_values[k]) averaged over q(x*); ``row_log_joint`` [N]:
    log p(row n's scored ratings) (0 for a row with none)."""

    shape: tuple[int, int]
    rows: np.ndarray
    cols: np.ndarray
    ratings: np.ndarray
    rating_values: np.ndarray
    mean: np.ndarray
    probabilities: np.ndarray
    row_log_joint: np.ndarray

    def __post_init__(self):
        num = self.rows.shape[0]
        for name in ("cols", "ratings", "mean"):
            if getattr(self, name).shape != (num,):
                raise ValueError(f"{name} must have shape [T] = ({num},), got {getattr(self, name).shape}")
        if self.probabilities.shape != (num, self.rating_values.size):
            raise ValueError(
                f"probabilities must have shape [T, K] = ({num}, {self.rating_values.size}), got "
                f"{self.probabilities.shape}"
            )
        if self.row_log_joint.shape != (self.shape[0],):
            raise ValueError(f"row_log_joint must have shape [N] = ({self.shape[0]},), got {self.row_log_joint.shape}")
        if num and np.any(np.diff(self.rows * self.shape[1] + self.cols) <= 0):
            raise ValueError("rows and cols must list distinct entries in row-major order")

    @property
    def classes(self) -> np.ndarray:
        """The index of each scored rating in ``rating_values`` [T]."""
        return rating_classes(self.ratings, self.rating_values)

    def metrics(self) -> dict[str, float]:
        """``rmse`` (the mean clipped to the rating scale), ``rmse_unclipped``, ``test_logprob_discrete`` (Σ_n
        row_log_joint / T), the 50 % / 90 % ``coverage_*`` / ``width_*`` of
        :func:`~gpflow_ext.recipes.gplvf_likelihoods.interval_metrics` and ``num_test``."""
        low, high = self.rating_values[0], self.rating_values[-1]
        return {
            "rmse": rmse(np.clip(self.mean, low, high), self.ratings),
            "rmse_unclipped": rmse(self.mean, self.ratings),
            "test_logprob_discrete": float(self.row_log_joint.sum() / self.rows.shape[0]),
            **interval_metrics(self.probabilities, self.classes),
            "num_test": int(self.rows.shape[0]),
        }

    def save(self, path: str | Path) -> Path:
        """Write every field to the ``.npz`` file ``path`` (folders made as needed); returns the path."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        fields = {field.name: np.asarray(getattr(self, field.name)) for field in dataclasses.fields(self)}
        with path.open("wb") as handle:
            np.savez_compressed(handle, **fields)
        return path

    @classmethod
    def load(cls, path: str | Path) -> "ScoredRatings":
        """The predictions :meth:`save` wrote to ``path``."""
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"path must be a .npz file of saved ScoredRatings, {str(path)!r} does not exist")
        with np.load(path) as stored:
            missing = {field.name for field in dataclasses.fields(cls)} - set(stored.files)
            if missing:
                raise ValueError(f"{str(path)!r} is not a saved ScoredRatings: it lacks {sorted(missing)}")
            values = {field.name: stored[field.name] for field in dataclasses.fields(cls)}
        values["shape"] = tuple(int(v) for v in values["shape"])
        return cls(**values)

    def transposed(self) -> "ScoredRatings":
        """The same predictions for the matrix's transpose [D, N], in its row-major order. The entries of one new
        row come from different rows of the model, whose latent points are independent under q(X), so a new
        row's joint log-probability is the sum of its entries' log marginal probabilities."""
        order = np.lexsort((self.rows, self.cols))  # by column, then row
        rows, cols = self.cols[order], self.rows[order]
        probabilities = self.probabilities[order]
        log_marginal = np.log(probabilities[np.arange(order.size), self.classes[order]])  # [T]
        return ScoredRatings(
            shape=(self.shape[1], self.shape[0]),
            rows=rows,
            cols=cols,
            ratings=self.ratings[order],
            rating_values=self.rating_values,
            mean=self.mean[order],
            probabilities=probabilities,
            row_log_joint=np.bincount(rows, log_marginal, minlength=self.shape[1]),
        )


def mixture(members: Sequence[ScoredRatings], weights: Sequence[float] | None = None) -> ScoredRatings:
    """The mixture Σ_m w_m p_m of the members' predictive distributions (equal weights unless ``weights``, which
    must be positive and sum to 1): mean Σ_m w_m mean_m, probabilities Σ_m w_m p_m, and each row's joint
    log Σ_m w_m p_m(row's ratings). Every member must score the same entries of the same matrix."""
    members = list(members)
    if not members:
        raise ValueError("mixture needs at least one member")
    first = members[0]
    for position, member in enumerate(members[1:], start=1):
        same = (
            member.shape == first.shape
            and np.array_equal(member.rows, first.rows)
            and np.array_equal(member.cols, first.cols)
            and np.array_equal(member.ratings, first.ratings)
            and np.array_equal(member.rating_values, first.rating_values)
        )
        if not same:
            raise ValueError(
                f"members[{position}] scores other entries, values or a rating scale than members[0]: every member "
                "must predict the same entries of the same matrix (transpose one first if it was trained on Yᵀ)"
            )
    w = np.full(len(members), 1.0 / len(members)) if weights is None else np.asarray(weights, dtype=np.float64)
    if w.shape != (len(members),) or np.any(~np.isfinite(w)) or np.any(w <= 0) or not np.isclose(w.sum(), 1.0):
        raise ValueError(f"weights must be {len(members)} positive numbers summing to 1, got {weights!r}")
    return dataclasses.replace(
        first,
        mean=np.einsum("m,mt->t", w, np.stack([m.mean for m in members])),
        probabilities=np.einsum("m,mtk->tk", w, np.stack([m.probabilities for m in members])),
        row_log_joint=logsumexp(np.stack([m.row_log_joint for m in members]), axis=0, b=w[:, None]),
    )
