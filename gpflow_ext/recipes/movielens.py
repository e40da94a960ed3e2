"""GPLVF on MovieLens 100K (paper Section 4.2, Table 2, Figure 4): the protocols as configs plus run functions.

* (a) :class:`ProtocolA` / :func:`run_protocol_a`: train on the users outside the held-out set, condition each
  held-out user's q(x*) on a fraction of their ratings (model fixed) and predict the rest;
* (b) :class:`ProtocolB` / :func:`run_protocol_b`: train on uK.base, predict uK.test at the rows' own q(x_n);
* (c) :class:`ProtocolC` / :func:`run_protocol_c`: test log-likelihood vs flow length on the Sci-Fi/Romance slice.

The data protocols (per-row rating splits, the held-out user split, the user/item-bias baseline and centring
on its residuals) are in :mod:`gpflow_ext.recipes.movielens_data`; the evaluation at q(x*) is :func:`evaluate_at`.
A peer that needs its own interpreter (GPy) is passed in as a callable ``peer(train, target) -> dict or None``.
"""

import dataclasses
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from .gplvf import GPLVFTraining, flow_summaries, infer_latent
from .gplvf_likelihoods import rating_distribution
from .movielens_data import (
    RATING_RANGE,
    bias_baseline,
    centre,
    dense_with_nan,
    split_rows,
    split_users,
    subtract_biases,
)
from .scored_ratings import ScoredRatings, mixture

__all__ = [
    "evaluate_at",
    "scored_at",
    "ProtocolA",
    "ProtocolB",
    "ROWS",
    "ProtocolC",
    "run_protocol_a",
    "run_protocol_b",
    "run_protocol_c",
    "flow_name",
]

Peer = Callable[[sp.csr_matrix, sp.csr_matrix], dict | None]
RATING_VALUES = np.arange(RATING_RANGE[0], RATING_RANGE[1] + 1)  # the discrete rating scale 1..5
DISCRETE_KEYS = ("test_logprob_discrete", "coverage_50", "coverage_90", "width_50", "width_90")  # (b) stores these


def scored_at(
    model, x_mean, x_var, target: sp.csr_matrix, num_samples: int, seed: int, biases=None
) -> tuple[ScoredRatings, float]:
    """(the predictive distribution of the target entries at q(x*) = (x_mean, x_var) as :class:`ScoredRatings`,
    the model's own eq. 33 test log-likelihood per rating). ``biases`` = (mu, b_u [rows of target], b_i) when the
    model was trained on bias residuals: predictions add them back; the log-likelihood is the model's on the
    residuals (the same density). The log-likelihood is a density of the continuous rating for a Gaussian model, the
    probability of the discrete rating for an ordinal one; the :class:`ScoredRatings` hold both models' discrete
    rating probabilities (:func:`~gpflow_ext.recipes.gplvf_likelihoods.rating_distribution`)."""
    target = sp.csr_matrix(target).sorted_indices()
    has_target = np.diff(target.indptr) > 0
    model_target = target if biases is None else subtract_biases(target, *biases)
    mean, _ = model.predict_y_marginal(x_mean[has_target], x_var[has_target], num_samples=num_samples, seed=seed)
    t = target[has_target].tocoo()
    pred, offsets = mean.numpy()[t.row, t.col], None
    scored_rows = np.flatnonzero(has_target)
    if biases is not None:
        mu, b_u, b_i = biases
        offsets = mu + b_u[scored_rows[t.row]] + b_i[t.col]
        pred = pred + offsets
    test_ll = model.test_log_likelihood(
        dense_with_nan(model_target[has_target]),
        x_mean[has_target],
        x_var[has_target],
        num_samples=num_samples,
        seed=seed,
    )
    probabilities, joint = rating_distribution(
        model, x_mean[has_target], x_var[has_target], t, RATING_VALUES, offsets, num_samples, seed
    )
    row_log_joint = np.zeros(target.shape[0])
    row_log_joint[scored_rows] = joint
    scored = ScoredRatings(
        shape=target.shape,
        rows=scored_rows[t.row],
        cols=t.col,
        ratings=t.data,
        rating_values=RATING_VALUES,
        mean=pred,
        probabilities=probabilities,
        row_log_joint=row_log_joint,
    )
    return scored, test_ll


def evaluate_at(
    model, x_mean, x_var, target: sp.csr_matrix, num_samples: int, seed: int, biases=None
) -> dict[str, Any]:
    """RMSE (clipped to the rating range, and raw) and eq. 33 test log-likelihood per rating of the target entries
    at q(x*) = (x_mean, x_var) (:func:`scored_at`). ``test_loglik`` is the model's own: a density of the continuous
    rating for a Gaussian model, the probability of the discrete rating for an ordinal one; ``test_logprob_discrete``
    (both models: the discrete rating's probability) and the 50 % / 90 % interval ``coverage_*`` / ``width_*`` are
    :meth:`ScoredRatings.metrics`."""
    scored, test_ll = scored_at(model, x_mean, x_var, target, num_samples, seed, biases=biases)
    metrics = scored.metrics()
    return {
        "rmse": metrics.pop("rmse"),
        "rmse_unclipped": metrics.pop("rmse_unclipped"),
        "test_loglik": test_ll,
        **metrics,
    }


def flow_name(flow_length: int) -> str:
    """``"gaussian"`` for no flow, else ``"planar_<flow_length>"``: the name results are stored under."""
    return "gaussian" if flow_length == 0 else f"planar_{flow_length}"


# ------------------------------------------------------------------------------------ protocols
@dataclasses.dataclass
class NewRowsSettings:
    """What every protocol shares: the training settings, centring, prediction draws and TensorBoard folder."""

    training: GPLVFTraining = dataclasses.field(default_factory=GPLVFTraining)
    center: str = "bias"
    predict_samples: int = 50
    seed: int = 0  # the held-out users and their conditioning halves (training uses training.seed)
    condition_fraction: float = 0.5
    infer_steps: int = 1000
    infer_decay: str = "cosine"
    infer_samples: int = 8
    logdir: Path | None = None

    def __post_init__(self):
        if (self.training.likelihood == "ordinal") != (self.center == "classes"):
            raise ValueError(
                "an ordinal likelihood models ratings as classes: center='classes' goes with "
                f"training.likelihood='ordinal' and only with it, got center={self.center!r} and likelihood="
                f"{self.training.likelihood!r}"
            )

    def infer(self, model, observed):
        return infer_latent(
            model,
            observed,
            num_steps=self.infer_steps,
            learning_rate=0.05,
            num_samples=self.infer_samples,
            seed=self.training.seed,
            decay=self.infer_decay,
        )

    def log_folder(self, name: str) -> Path | None:
        return None if self.logdir is None else Path(self.logdir) / name


@dataclasses.dataclass
class ProtocolA(NewRowsSettings):
    """(a) the paper's: held-out users (the last ``num_test_users`` ids, or drawn with ``seed``); or, with
    ``validation``, ``num_validation_users`` of the training users (the test users unused)."""

    flows: Sequence[int] = (0, 20, 30, 50)
    num_test_users: int = 100
    test_users: str = "last"
    validation: bool = False
    num_validation_users: int = 100
    warm_start_epochs: int = 0


#: protocol (b)'s ways round: users as rows (the paper's) or items as rows (Yᵀ); name -> its results' key prefix
ROWS = {"users": "", "items": "items_"}


@dataclasses.dataclass
class ProtocolB(NewRowsSettings):
    """(b) uK.base -> uK.test for each split; ``peer_splits``: the splits the peer runs on.

    ``validation_fraction > 0`` chooses settings without the test split: that fraction of each user's uK.base
    ratings (drawn with ``seed`` and the split's position) is held out and scored, the model trains on the rest,
    and uK.test is not used. ``rows``: which way round GPLVF is trained, each a key of :data:`ROWS`: ``"users"`` (the paper's: a latent
    point per user, an output per item) and/or ``"items"`` (the transpose: a latent point per item, an output per
    user). With both, the equally weighted mixture of the two models' predictive distributions is scored too.
    ``predictions_dir``: each model's :class:`ScoredRatings` is also saved there as ``{split}_{name}.npz``."""

    flows: Sequence[int] = (0, 20)
    peer_splits: Sequence[str] = ("u1",)
    validation_fraction: float = 0.0
    rows: Sequence[str] = ("users",)
    predictions_dir: Path | None = None

    def __post_init__(self):
        super().__post_init__()
        if not 0.0 <= self.validation_fraction < 1.0:
            raise ValueError(
                "validation_fraction is the share of each user's uK.base ratings held out for validation, in "
                f"[0, 1) (0: score uK.test), got {self.validation_fraction!r}"
            )
        if isinstance(self.rows, str) or not self.rows or any(r not in ROWS for r in self.rows):
            raise ValueError(f"rows must be a non-empty sequence of {tuple(ROWS)}, got {self.rows!r}")
        if len(set(self.rows)) != len(self.rows):
            raise ValueError(f"rows must not repeat a value, got {self.rows!r}")

    def fit_and_scored(self, base: sp.csr_matrix, test: sp.csr_matrix | None, position: int):
        """(ratings to train on, ratings to score) of one split: (uK.base, uK.test), or with a validation fraction
        (the rest of uK.base, its held-out part)."""
        if not self.validation_fraction:
            return base, test
        rng = np.random.default_rng([self.seed, position])
        return split_rows(base, 1.0 - self.validation_fraction, rng)

    def train_and_score(self, train: sp.csr_matrix, scored: sp.csr_matrix, rows: str, flow_length: int, logdir=None):
        """Train GPLVF with ``rows`` (a key of :data:`ROWS`) as its rows on ``train`` [users, items] and predict
        ``scored`` at the rows' own q(x_n): (:class:`ScoredRatings` indexed [users, items], the model's own test
        log-likelihood, History). A row with no training ratings (an item no user rated) is predicted at the
        base N(0, I) of q(x), through the flow."""
        if rows == "items":
            train, scored = sp.csr_matrix(train.T), sp.csr_matrix(scored.T)
        model_train, _, biases = centre(train, None, self.center)
        trained = np.diff(sp.csr_matrix(model_train).indptr) > 0
        model, history = self.training.train(sp.csr_matrix(model_train[trained]), flow_length, logdir=logdir)
        x_trained = model.training_latents()
        x_mean = np.zeros((train.shape[0], x_trained[0].shape[1]))
        x_var = np.ones((train.shape[0], x_trained[1].shape[1]))
        x_mean[trained], x_var[trained] = x_trained
        predictions, test_ll = scored_at(
            model, x_mean, x_var, scored, self.predict_samples, self.training.seed, biases=biases
        )
        return (predictions.transposed() if rows == "items" else predictions), test_ll, history


@dataclasses.dataclass
class ProtocolC(NewRowsSettings):
    """(c) Figure 4: the Sci-Fi/Romance slice, 90/10 users as in (a); ``figure_dir``: where the figure goes."""

    flows: Sequence[int] = (0, 5, 10, 20, 30)
    figure_dir: Path | None = None


def run_protocol_a(ratings: sp.csr_matrix, config: ProtocolA, peer: Peer | None = None) -> dict[str, dict]:
    """Protocol (a): per flow length a row of RMSE, test log-likelihood, timings and flow summaries; then the
    bias baseline and the peer (trained on the training users plus the held-out users' observed ratings)."""
    train_users, heldout_users, rng = split_users(
        ratings.shape[0],
        config.num_test_users,
        config.seed,
        config.num_validation_users if config.validation else None,
        test_users=config.test_users,
    )
    train = ratings[train_users]
    observed, target = split_rows(ratings[heldout_users], config.condition_fraction, rng)
    kind = "validation" if config.validation else "test"
    print(
        f"(a) {train.shape[0]} training users, {len(heldout_users)} held-out {kind} users; conditioning on "
        f"{observed.nnz} ratings ({config.condition_fraction:.0%} per user), predicting {target.nnz}"
    )
    model_train, model_observed, test_biases = centre(train, observed, config.center)
    training, train_seed = config.training, config.training.seed
    warm = None
    if config.warm_start_epochs:  # every model (the Gaussian included) starts from one Gaussian-q(X) model
        warm, _ = training.train(model_train, 0, epochs=config.warm_start_epochs)
    results = {}
    for flow_length in config.flows:
        name = flow_name(flow_length)
        start = time.time()
        model, history = training.train(
            model_train, flow_length, logdir=config.log_folder(f"a_{name}"), warm_start=warm
        )
        amortised = None
        if training.encoder:  # q(x*) straight from the encoder, no optimisation; the fit below starts from it
            infer_start = time.perf_counter()
            x_mean, x_var = model.encode(model_observed)
            amortised = evaluate_at(
                model, x_mean, x_var, target, config.predict_samples, train_seed, biases=test_biases
            )
            amortised["seconds"] = time.perf_counter() - infer_start
        infer_start = time.perf_counter()
        x_mean, x_var = config.infer(model, model_observed) if observed.nnz else (None, None)
        infer_seconds = time.perf_counter() - infer_start
        row = evaluate_at(model, x_mean, x_var, target, config.predict_samples, train_seed, biases=test_biases)
        row["infer_seconds"] = infer_seconds  # the q(x*) fit (tracing included), not the prediction
        if amortised is not None:
            row["amortised"] = amortised  # at the encoder's q(x*); seconds include the prediction
        row.update(
            seconds_per_epoch=history.median_seconds_per_epoch(),
            epochs=len(history.epochs),
            final_elbo=-history.final_objective,
            total_seconds=time.time() - start,
        )
        if flow_length > 0:
            row["flow_local_nonlinearity"] = flow_summaries(model, x_mean, x_var, train_seed)
        results[name] = row
        print(name, {k: row[k] for k in ("rmse", "test_loglik", "seconds_per_epoch", "infer_seconds")}, flush=True)
        if amortised is not None:
            print("  at the encoder's q(x*), no fit:", amortised, flush=True)
        if flow_length > 0:
            print("  flow over each row's q(x):", row["flow_local_nonlinearity"], flush=True)
    conditioning_train = sp.vstack([train, observed]).tocsr()
    target_full = sp.vstack([sp.csr_matrix(train.shape), target]).tocsr()
    results["bias_baseline"] = bias_baseline(conditioning_train, target_full)
    peer_result = peer(conditioning_train, target_full) if peer is not None else None
    if peer_result is not None:
        results["gpy_bgplvm_missing"] = peer_result
    return results


def run_protocol_b(
    ratings_by_split: dict[str, tuple[sp.csr_matrix, sp.csr_matrix]], config: ProtocolB, peer: Peer | None = None
) -> dict[str, dict]:
    """Protocol (b): per split, ``{name}_rmse``, ``{name}_test_loglik``, ``{name}_seconds_per_epoch``,
    ``{name}_final_elbo`` and the discrete-rating metrics of :func:`evaluate_at` for each flow length (the rows'
    own q(x_n) predict their scored ratings: uK.test, or the validation part of uK.base, see
    :class:`ProtocolB`), ``bias_rmse``, ``scored`` (``"test"`` or ``"validation"``) with ``num_scored`` and, on
    ``peer_splits``, ``gpy_*``. ``name`` is the flow's :func:`flow_name` behind the :data:`ROWS` prefix of the
    model's rows; with several ``rows`` their mixture's metrics are under ``mixture_{flow name}_*``."""
    results = {}
    for position, (split, (base, split_test)) in enumerate(ratings_by_split.items()):
        train, test = config.fit_and_scored(base, split_test, position)
        row: dict[str, Any] = {"scored": "validation" if config.validation_fraction else "test", "num_scored": test.nnz}
        for flow_length in config.flows:
            members = []
            for rows in config.rows:
                name = ROWS[rows] + flow_name(flow_length)
                predictions, test_ll, history = config.train_and_score(
                    train, test, rows, flow_length, logdir=config.log_folder(f"b_{split}_{name}")
                )
                members.append(predictions)
                if config.predictions_dir is not None:
                    predictions.save(Path(config.predictions_dir) / f"{split}_{name}.npz")
                metrics = predictions.metrics()
                row[f"{name}_rmse"] = metrics["rmse"]
                row[f"{name}_test_loglik"] = test_ll
                for key in DISCRETE_KEYS:
                    row[f"{name}_{key}"] = metrics[key]
                row[f"{name}_seconds_per_epoch"] = history.median_seconds_per_epoch()
                row[f"{name}_final_elbo"] = -history.final_objective
            if len(members) > 1:
                metrics = mixture(members).metrics()
                for key in ("rmse", *DISCRETE_KEYS):
                    row[f"mixture_{flow_name(flow_length)}_{key}"] = metrics[key]
        row["bias_rmse"] = bias_baseline(train, test)["rmse"]
        if peer is not None and split in config.peer_splits:
            row.update({f"gpy_{key}": value for key, value in (peer(train, test) or {}).items()})
        results[split] = row
        print(split, row, flush=True)
    return results


def run_protocol_c(
    ratings: sp.csr_matrix, genres: np.ndarray, genre_names: Sequence[str], config: ProtocolC
) -> dict[str, dict]:
    """Protocol (c) (Figure 4): per flow length the (a)-style evaluation on the Sci-Fi/Romance slice (items tagged
    Sci-Fi or Romance, users with at least 2 ratings there, 10 % held-out users); the figure to ``figure_dir``."""
    genre_names = list(genre_names)
    cols = np.flatnonzero(genres[:, genre_names.index("Sci-Fi")] | genres[:, genre_names.index("Romance")])
    sub = sp.csr_matrix(ratings[:, cols])
    sub = sub[np.diff(sub.indptr) >= 2]
    rng = np.random.default_rng(config.seed + 1)
    users = rng.permutation(sub.shape[0])
    num_test = max(2, int(round(0.1 * sub.shape[0])))
    train = sub[np.sort(users[num_test:])]
    observed, target = split_rows(sub[np.sort(users[:num_test])], config.condition_fraction, rng)
    print(
        f"(c) Sci-Fi/Romance slice: {sub.shape[0]} users x {sub.shape[1]} movies, {sub.nnz} ratings; "
        f"{num_test} held-out users"
    )
    model_train, model_observed, test_biases = centre(train, observed, config.center)
    results = {}
    for flow_length in config.flows:
        name = flow_name(flow_length)
        model, history = config.training.train(model_train, flow_length, logdir=config.log_folder(f"c_{name}"))
        x_mean, x_var = config.infer(model, model_observed)
        row = evaluate_at(
            model, x_mean, x_var, target, config.predict_samples, config.training.seed, biases=test_biases
        )
        row.update(seconds_per_epoch=history.median_seconds_per_epoch(), final_elbo=-history.final_objective)
        results[name] = row
        print(name, row, flush=True)
    if config.figure_dir is not None:
        _figure4(results, list(config.flows), Path(config.figure_dir))
    return results


def _figure4(results: dict[str, dict], lengths: Sequence[int], figure_dir: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(4.5, 3.2))
    ax.plot(lengths, [results[flow_name(k)]["test_loglik"] for k in lengths], "o-")
    ax.set_xlabel("planar flow length (0 = mean-field Gaussian)")
    ax.set_ylabel("test log-likelihood per rating")
    ax.set_title("MovieLens Sci-Fi/Romance (Figure 4)")
    fig.tight_layout()
    figure_dir.mkdir(parents=True, exist_ok=True)
    fig.savefig(figure_dir / "gplvf_figure4_movielens.png", dpi=120)
    plt.close(fig)
