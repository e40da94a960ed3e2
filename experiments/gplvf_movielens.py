"""GPLVF on MovieLens 100K (paper Section 4.2, Table 2, Figure 4), with peers on the same split.

Protocols (``--protocol a,b,c``):

(a) the paper's: 843 training users and 100 held-out users, the last 100 user ids (``--test-users
    last``, the default) or 100 drawn with ``--seed`` (``--test-users random``). GPLVF is trained on
    the 843 users (Q = 10). For each held-out user a fraction
    ``--condition-fraction`` (default 0.5) of their ratings, chosen at random, is observed; q(x*)
    is inferred from those alone (model fixed) and the remaining ratings are predicted.
    Gaussian q(X) vs Planar_K for K in ``--flows`` (default 0,20,30,50); RMSE beside Table 2.
    ``--validation``: the same protocol inside the training users only, for choosing settings:
    ``--num-validation-users`` (default 100) of the 843 training users are held out as validation
    users (conditioned and predicted exactly like test users), GPLVF trains on the other 743, and
    the 100 test users are not used at all (the test split itself is unchanged by the flag).
(b) the standard u1..u5 splits: train on uK.base (all 943 users), predict uK.test at q(x_n).
(c) Figure 4: test log-likelihood (eq. 33) vs flow length on the Sci-Fi/Romance slice (items
    tagged Sci-Fi or Romance; users with at least 2 ratings there; same 90/10 user protocol as (a)).

Peers on the same split: a user/item-bias baseline (regularised least squares, mu + b_u + b_i)
and GPy's ``BayesianGPLVM(missing_data=True)`` run by ``$GPFLOW_EXT_PEERS_PYTHON`` in a
subprocess (GPy cannot infer new rows cheaply, so in (a) it is trained on the 843 users plus the
observed part of the 100 held-out users and predicts their remaining ratings at their latent
means: it sees the same ratings, transductively).

Centring (``--center bias``, the default): GPLVF models the residual of a user/item-bias fit,
r_nd = y_nd - (mu + b_n + b_d). Its outputs are the items, so its constant mean is per item (b_d),
but nothing in the model is per user: a user's overall rating level has to be carried by x_n and
learnt separately by every item's q(u_d) from that item's few ratings. Without centring the
model settles at the bias baseline (0.953 in (a)); with it the GP models only the user-item
interactions. mu and b_d are fitted (regularised alternating least squares, as the bias baseline)
on the training rows only; b_n of a held-out user in (a)/(c) comes from their observed ratings
alone (item biases fixed), so nothing about the predicted ratings is used. Predictions add the
offsets back; the test log-likelihood of y equals that of r at the shifted value (a known shift).
``--center none`` trains on the raw ratings (the per-item constant mean only).

Predictions are clipped to the rating range [1, 5] for every model (RMSE before clipping is
reported too).

``--kl-x base-gaussian-ablation`` (protocol (a) only; never the default) replaces the Monte Carlo
KL of the *flowed* q(x_n) by the closed-form KL of its *base* Gaussian N(mu_n, diag s_n), the
estimator of one public GPLVF implementation. That objective ignores the flow's log-det, so it is
not a bound on log p(Y) for any flow other than the identity: it is here only to measure whether
the paper's flow gains can come from it. ``--kl-x correct`` (the default) is ``GPLVF``'s own.

Defaults (since 2026-11-25) are the settings chosen on the validation users and used for the README's
tables: M = 20, one Monte Carlo draw, batch 64, 150 epochs of Adam 0.01 cosine-decayed to 0, the flow's
shared parameters at Adam 1e-3 (``--flow-learning-rate``), identity-at-zero planar layers, and q(x*) fitted
with 1 000 cosine-decayed steps of 8 draws. Every results JSON records its full configuration; runs before
that date used M = 50, two draws, batch 128, 300 epochs, constant rates, 300 q(x*) steps and random test
users unless their command said otherwise.

Every model trains through ``gpflow_ext.training.fit`` (:func:`train_with_fit`): minibatches shuffled by the
stateless key (seed, epoch), the short last batch kept (ceil(N / B) steps per epoch), natural gradients for
q(u) through ``NaturalGradientUpdate``. The README's tables were produced by an earlier loop of this script
(numpy-permuted minibatches, short last batch dropped): the same model and bound, other minibatches
(``results_gplvf/movielens_a_defaults_seed0_fit.json`` is the default (a) run through ``fit``).

``--smoke`` runs every protocol on a slice (the 60 most active users x the 80 most rated items, 3 epochs)
for the tests.
"""
if not __package__:  # `python -m experiments.gplvf_movielens`: the repository root on the path (prefer `python -m`)
    import pathlib
    import sys

    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from experiments import quiet  # noqa: E402,F401  (first: TensorFlow's log lines off before it is imported)

import argparse  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Dict, Optional, Sequence, Tuple  # noqa: E402

import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402

from experiments.common import (  # noqa: E402
    REPO, add_planar_constraint_argument, arguments_record, base_parser, planar_identity_at_zero, print_table,
    write_results,
)

import gpflow  # noqa: E402
import tensorflow as tf  # noqa: E402

from experiments.paper_values import GPLVF as PAPER  # noqa: E402
from gpflow_ext.bijectors import flow_local_nonlinearity, planar_flow  # noqa: E402
from gpflow_ext.data import load_movielens  # noqa: E402
from gpflow_ext.data.movielens import ratings_matrix  # noqa: E402
from gpflow_ext.models import GPLVF  # noqa: E402
from gpflow_ext.models.gplvf import (  # noqa: E402
    BASE_COVARIANCES, KERNEL_NAMES, flow_kl_to_standard_normal, gaussian_kl_to_standard_normal,
)
from gpflow_ext.training import (  # noqa: E402
    LEARNING_RATE_DECAYS, NaturalGradientUpdate, adam_by_group, decayed_learning_rate, fit,
)
from gpflow_ext.validation import check_positive_number  # noqa: E402
from gpflow_ext.training.data import steps_per_epoch  # noqa: E402

RATING_RANGE = (1.0, 5.0)
GPY_SCRIPT = REPO / "benchmarks" / "gpy_bgplvm_missing.py"


# ------------------------------------------------------------------------------------ data
def dense_with_nan(matrix: sp.csr_matrix) -> np.ndarray:
    """Observed entries of a CSR matrix as a dense array with NaN where missing (no imputation)."""
    matrix = sp.csr_matrix(matrix)
    out = np.full(matrix.shape, np.nan)
    rows = np.repeat(np.arange(matrix.shape[0]), np.diff(matrix.indptr))
    out[rows, matrix.indices] = matrix.data
    return out


def split_rows(matrix: sp.csr_matrix, fraction: float, rng) -> Tuple[sp.csr_matrix, sp.csr_matrix]:
    """Per row: a random ``fraction`` of its entries (at least 1) -> observed, the rest -> target."""
    matrix = sp.csr_matrix(matrix)
    keep_rows, keep_cols, keep_vals, tgt_rows, tgt_cols, tgt_vals = [], [], [], [], [], []
    for r in range(matrix.shape[0]):
        cols = matrix.indices[matrix.indptr[r]: matrix.indptr[r + 1]]
        vals = matrix.data[matrix.indptr[r]: matrix.indptr[r + 1]]
        if len(cols) == 0:
            continue
        order = rng.permutation(len(cols))
        n_keep = max(1, int(round(fraction * len(cols))))
        if len(cols) > 1:
            n_keep = min(n_keep, len(cols) - 1)
        k, t = order[:n_keep], order[n_keep:]
        keep_rows += [r] * len(k); keep_cols += list(cols[k]); keep_vals += list(vals[k])
        tgt_rows += [r] * len(t); tgt_cols += list(cols[t]); tgt_vals += list(vals[t])
    shape = matrix.shape
    return (
        sp.csr_matrix((keep_vals, (keep_rows, keep_cols)), shape=shape),
        sp.csr_matrix((tgt_vals, (tgt_rows, tgt_cols)), shape=shape),
    )


SMALL_USERS, SMALL_ITEMS = 60, 80


def small_slice(matrix: sp.csr_matrix, num_users=SMALL_USERS, num_items=SMALL_ITEMS) -> sp.csr_matrix:
    """The most active users x the most rated items (for quick runs)."""
    matrix = sp.csr_matrix(matrix)
    items = np.argsort(-np.diff(matrix.tocsc().indptr))[:num_items]
    sub = matrix[:, np.sort(items)]
    users = np.argsort(-np.diff(sub.indptr))[:num_users]
    return sp.csr_matrix(sub[np.sort(users)])


def drop_empty_rows(matrix: sp.csr_matrix) -> sp.csr_matrix:
    return matrix[np.diff(matrix.indptr) > 0]


# ------------------------------------------------------------------------------------ models
def group_adam(model: GPLVF, group_learning_rates: Optional[Dict[str, float]], learning_rate: float, lr_decay: str,
               total_steps: int):
    """One Adam per group of ``model.parameter_groups()`` (``gpflow_ext.training.adam_by_group``), each rate
    ``decayed_learning_rate(rate, lr_decay, total_steps)``. ``group_learning_rates``: e.g. ``{"flow": 1e-3,
    "local": 0.05}``; other groups keep ``learning_rate``. A rate for the flow of a model without one is an
    error (the group is empty)."""
    groups = model.parameter_groups()
    rates = dict(group_learning_rates or {})
    for group, rate in rates.items():
        check_positive_number(rate, f"group_learning_rates[{group!r}]")
        if group in groups and not groups[group]:
            raise ValueError(f"a {group} learning rate needs a model with a {group} group (flow length > 0)")

    def decayed(rate):
        return decayed_learning_rate(rate, lr_decay, total_steps, name="lr_decay")

    return adam_by_group(groups, {g: decayed(r) for g, r in rates.items()}, decayed(learning_rate))


def train_with_fit(model: GPLVF, *, epochs: int, batch_size: int, learning_rate: float, seed: int,
                   natgrad_gamma: float = 0.0, lr_decay: str = "constant",
                   group_learning_rates: Optional[Dict[str, float]] = None, logdir: Optional[Path] = None,
                   progress: bool = False):
    """Train ``model`` on its own rows with ``gpflow_ext.training.fit`` and return fit's ``History``.

    Adam per group of :meth:`GPLVF.parameter_groups` (:func:`group_adam`) with ``lr_decay`` over all
    ``epochs x ceil(N / batch_size)`` steps (fit keeps the short last batch). The flow's shared λ see every
    minibatch while each row's (μ_n, s_n) moves once per epoch.

    ``natgrad_gamma > 0``: q(u) = (q_mu, q_sqrt) is instead updated by GPflow's natural-gradient step of
    length gamma (Salimbeni et al. 2018) on each minibatch, then Adam updates everything else (Z, kernel,
    noise, mean, q(x_n), flow) on a fresh estimate of the bound (``NaturalGradientUpdate``). For fixed x the
    bound is conjugate in q(u), so gamma = 1 on the full data jumps to the optimal q(u); gamma < 1 damps the
    minibatch and Monte Carlo noise."""
    if not np.isfinite(natgrad_gamma) or not 0.0 <= natgrad_gamma <= 1.0:
        raise ValueError(f"natgrad_gamma must be in [0, 1] (0 = Adam for q(u) too), got {natgrad_gamma!r}")
    total_steps = epochs * steps_per_epoch(model.num_data, batch_size)
    optimizer = group_adam(model, group_learning_rates, learning_rate, lr_decay, total_steps)
    if natgrad_gamma > 0:
        optimizer = NaturalGradientUpdate(natgrad_gamma, optimizer=optimizer)
    return fit(
        model, model.training_data(), epochs=epochs, batch_size=batch_size, optimizer=optimizer, seed=seed,
        logdir=None if logdir is None else str(logdir), progress=progress,
    )


class BaseGaussianKLAblation(GPLVF):
    """GPLVF whose KL(q(x_n) ‖ p(x_n)) term is that of the *base* Gaussian, ignoring the flow (biased).

    For ``--kl-x base-gaussian-ablation`` only: samples still go through the flow, but the KL charged is
    KL(N(μ_n, diag s_n) ‖ N(0, I)), so the flow's volume change (its log-det) costs nothing. The bound is then
    not a lower bound on log p(Y) unless the flow is the identity; the issue rules this estimator out for the
    library, and the experiment uses it only to test whether the paper's flow gains depend on it.
    """

    def latent_samples_and_kl(self, x_mean, x_var, base_noise):
        x, _ = flow_kl_to_standard_normal(self.flow, x_mean, x_var, base_noise)  # [S, B, Q]
        return x, gaussian_kl_to_standard_normal(x_mean, x_var)  # [B]


def plain_monte_carlo_gplvf(*args, flow=None, **kwargs) -> GPLVF:
    """GPLVF whose flow KL is estimated with every term by Monte Carlo (``kl_x="monte_carlo_plain"``), as in the
    results recorded before 2026-11-25; the Gaussian q(X) keeps its closed form."""
    return GPLVF(*args, flow=flow, kl_x="auto" if flow is None else "monte_carlo_plain", **kwargs)


KL_X_CHOICES = {
    "correct": GPLVF, "plain-monte-carlo": plain_monte_carlo_gplvf, "base-gaussian-ablation": BaseGaussianKLAblation,
}


def train_gplvf(
    train: sp.csr_matrix,
    flow_length: int,
    *,
    latent_dim: int,
    num_inducing: int,
    epochs: int,
    batch_size: int,
    learning_rate: float,
    num_samples: int,
    seed: int,
    kernel: str = "se",
    natgrad_gamma: float = 0.0,
    logdir: Optional[Path] = None,
    kl_x: str = "correct",
    base_covariance: str = "diagonal",
    lr_decay: str = "constant",
    group_learning_rates: Optional[Dict[str, float]] = None,
    warm_start: Optional[GPLVF] = None,
    identity_at_zero: bool = True,
    encoder: bool = False,
):
    """Build the (a)-(c) model (``flow_length`` planar layers, 0 = Gaussian q(X)) and train it.

    ``encoder``: amortise q(x_n) with GPLVF's tf_keras encoder (``encoder=True``) instead of per-row (μ_n, s_n).
    ``warm_start``: a trained Gaussian-q(X) GPLVF on the same data whose parameters (q(x_n) base, Z, kernel,
    noise, mean, q(u)) the new model starts from; its flow starts near the identity, so training begins at
    (almost) the warm model's bound and only the flow's extra freedom differs from continuing the warm model.
    """
    if kl_x not in KL_X_CHOICES:
        raise ValueError(f"kl_x must be one of {sorted(KL_X_CHOICES)}, got {kl_x!r}")
    tf.random.set_seed(seed)
    flow = None
    if flow_length > 0:
        flow = planar_flow(flow_length, latent_dim, seed=seed, identity_at_zero=identity_at_zero)
    model = KL_X_CHOICES[kl_x](
        train, latent_dim, num_inducing, flow=flow, kernel=kernel, num_samples=num_samples, seed=seed,
        base_covariance=base_covariance, encoder=True if encoder else None,
    )
    gpflow.utilities.set_trainable(model.inducing_variable, True)
    if warm_start is not None:
        if encoder:
            raise ValueError("warm_start needs per-row q(x_n) parameters (encoder=False)")
        if warm_start.flow is not None:
            raise ValueError("warm_start must be a Gaussian-q(X) GPLVF (flow=None)")
        values = {k: v.numpy() for k, v in gpflow.utilities.parameter_dict(warm_start).items()}
        gpflow.utilities.multiple_assign(model, values)  # shapes are checked by assign
    history = train_with_fit(
        model, epochs=epochs, batch_size=batch_size, learning_rate=learning_rate, seed=seed,
        natgrad_gamma=natgrad_gamma, lr_decay=lr_decay, group_learning_rates=group_learning_rates, logdir=logdir,
    )
    return model, history


def kernel_lengthscales(kernel: gpflow.kernels.Kernel) -> Optional[np.ndarray]:
    """The SE-ARD lengthscales of ``kernel`` (or of its SE part in a sum); None if it has none."""
    parts = kernel.kernels if isinstance(kernel, gpflow.kernels.Sum) else [kernel]
    for part in parts:
        if isinstance(part, gpflow.kernels.SquaredExponential):
            return part.lengthscales.numpy()
    return None


def flow_summaries(model: GPLVF, heldout_mean, heldout_var, seed: int) -> Dict[str, Dict[str, float]]:
    """:func:`flow_local_nonlinearity` of the trained flow over the training rows' q(x_n) and the held-out
    rows' q(x*), in SE lengthscale units: how far each row's flowed q is from a Gaussian."""
    scale = kernel_lengthscales(model.kernel)
    out = {"train": flow_local_nonlinearity(model.flow, *model.training_latents(), scale=scale, seed=seed)}
    if heldout_mean is not None:
        out["heldout"] = flow_local_nonlinearity(model.flow, heldout_mean, heldout_var, scale=scale, seed=seed)
    return out


def rmse(pred: np.ndarray, target: np.ndarray) -> float:
    return float(np.sqrt(np.mean((pred - target) ** 2)))


def evaluate_at(
    model: GPLVF, x_mean, x_var, target: sp.csr_matrix, num_samples: int, seed: int, biases=None
) -> Dict[str, float]:
    """RMSE (clipped and raw) and eq. 33 test log-likelihood per rating for the target entries.

    ``biases`` = (mu, b_u [rows of target], b_i) when the model was trained on bias residuals
    (``--center bias``): predictions are mu + b_u + b_i + the model's mean, and the test
    log-likelihood is the model's on the residual target (the same density, shifted)."""
    target = sp.csr_matrix(target)
    has_target = np.diff(target.indptr) > 0
    model_target = target if biases is None else subtract_biases(target, *biases)
    mean, _ = model.predict_y(x_mean[has_target], x_var[has_target], num_samples=num_samples, seed=seed)
    t = target[has_target].tocoo()
    pred = mean[t.row, t.col]
    if biases is not None:
        mu, b_u, b_i = biases
        pred = pred + mu + b_u[np.flatnonzero(has_target)[t.row]] + b_i[t.col]
    test_ll = model.test_log_likelihood(
        dense_with_nan(model_target[has_target]), x_mean[has_target], x_var[has_target], num_samples=num_samples,
        seed=seed,
    )
    return {
        "rmse": rmse(np.clip(pred, *RATING_RANGE), t.data),
        "rmse_unclipped": rmse(pred, t.data),
        "test_loglik": test_ll,
        "num_test": int(t.nnz),
    }


def fit_biases(train: sp.csr_matrix, reg: float = 5.0, iters: int = 20) -> Tuple[float, np.ndarray, np.ndarray]:
    """(mu, b_u [rows], b_i [cols]) of mu + b_u + b_i by alternating regularised least squares on the observed entries."""
    train = sp.coo_matrix(train)
    mu = float(train.data.mean())
    b_u = np.zeros(train.shape[0])
    b_i = np.zeros(train.shape[1])
    for _ in range(iters):
        b_u = row_biases(train, mu, b_i, reg)  # rows given the columns
        b_i = row_biases(train.T, mu, b_u, reg)  # columns given the rows
    return mu, b_u, b_i


def row_biases(observed: sp.csr_matrix, mu: float, b_i: np.ndarray, reg: float = 5.0) -> np.ndarray:
    """Row biases from the observed entries with mu and the column biases ``b_i`` fixed (one
    alternating least-squares half-step of :func:`fit_biases`; new users' b_u in protocols a/c)."""
    observed = sp.coo_matrix(observed)
    counts = np.bincount(observed.row, minlength=observed.shape[0])
    return np.bincount(observed.row, observed.data - mu - b_i[observed.col], observed.shape[0]) / (counts + reg)


def subtract_biases(matrix: sp.csr_matrix, mu: float, b_u: np.ndarray, b_i: np.ndarray) -> sp.csr_matrix:
    """The observed entries minus mu + b_u[row] + b_i[col], same sparsity pattern."""
    m = sp.coo_matrix(matrix)
    return sp.csr_matrix((m.data - mu - b_u[m.row] - b_i[m.col], (m.row, m.col)), shape=m.shape)


def bias_baseline(train: sp.csr_matrix, target: sp.csr_matrix, reg: float = 5.0, iters: int = 20) -> Dict[str, float]:
    """mu + b_u + b_i fitted by alternating regularised least squares on the observed entries."""
    mu, b_u, b_i = fit_biases(train, reg, iters)
    t = sp.coo_matrix(target)
    pred = mu + b_u[t.row] + b_i[t.col]
    return {"rmse": rmse(np.clip(pred, *RATING_RANGE), t.data), "rmse_unclipped": rmse(pred, t.data), "num_test": int(t.nnz)}


def peers_python() -> Optional[str]:
    path = os.environ.get("GPFLOW_EXT_PEERS_PYTHON", "/work/peers/bin/python")
    if path and Path(path).exists():
        return path
    print(
        "GPy peer skipped: no peers interpreter. Create one with\n"
        "  python -m venv peers && peers/bin/pip install -r benchmarks/requirements-peers.txt\n"
        "and set GPFLOW_EXT_PEERS_PYTHON=peers/bin/python"
    )
    return None


def gpy_peer(train: sp.csr_matrix, target: sp.csr_matrix, *, latent_dim, num_inducing, max_iters, seed, timeout=3000):
    """GPy BayesianGPLVM(missing_data=True) in a subprocess: RMSE on ``target`` and seconds per iteration."""
    python = peers_python()
    if python is None:
        return None
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        t = sp.coo_matrix(target)
        np.savez(tmp / "in.npz", Y=dense_with_nan(train), rows=t.row, cols=t.col, vals=t.data)
        cmd = [python, str(GPY_SCRIPT), str(tmp / "in.npz"), str(tmp / "out.json"),
               "--latent-dim", str(latent_dim), "--num-inducing", str(num_inducing),
               "--max-iters", str(max_iters), "--seed", str(seed)]
        env = dict(os.environ, OMP_NUM_THREADS="2", MKL_NUM_THREADS="2", OPENBLAS_NUM_THREADS="2")
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
        except subprocess.TimeoutExpired:
            print(f"GPy peer timed out after {timeout} s")
            return None
        if proc.returncode != 0:
            print("GPy peer failed:\n" + proc.stderr[-2000:])
            return None
        out = json.loads((tmp / "out.json").read_text())
    pred = np.asarray(out["pred"])
    out.update(rmse=rmse(np.clip(pred, *RATING_RANGE), t.data), rmse_unclipped=rmse(pred, t.data), num_test=int(t.nnz))
    out.pop("pred")
    return out


# ------------------------------------------------------------------------------------ protocols
def centre(train: sp.csr_matrix, new_rows: Optional[sp.csr_matrix], how: str):
    """(what GPLVF trains on, what it conditions on for ``new_rows``, biases for ``evaluate_at`` on new rows).

    ``how="bias"``: residuals of mu + b_u + b_i fitted on ``train``; new rows get b_u from their own
    observed entries (``row_biases``). ``how="none"``: the ratings as they are."""
    if how == "none":
        return train, new_rows, None
    if how != "bias":
        raise ValueError(f"--center must be 'bias' or 'none', got {how!r}")
    mu, b_u, b_i = fit_biases(train)
    if new_rows is None:  # predict at the training rows themselves (protocol b)
        return subtract_biases(train, mu, b_u, b_i), None, (mu, b_u, b_i)
    b_new = row_biases(new_rows, mu, b_i)
    return subtract_biases(train, mu, b_u, b_i), subtract_biases(new_rows, mu, b_new, b_i), (mu, b_new, b_i)


def split_users(
    num_users: int, num_test_users: int, seed: int, num_validation_users: Optional[int] = None,
    test_users: str = "random",
) -> Tuple[np.ndarray, np.ndarray, np.random.Generator]:
    """(training users, held-out users, generator for the held-out users' rating split) of protocol (a).

    ``test_users="random"``: the test users are the first ``num_test_users`` of a permutation drawn
    with ``seed``; ``"last"``: the last ``num_test_users`` rows (MovieLens user ids 844-943 for 100 of
    943, the literal reading of "trained on 843 users and made predictions for 100 users").
    ``num_validation_users=None``: held-out = the test users, training = all others.
    Otherwise held-out = ``num_validation_users`` of the *training* users (drawn by a second
    generator, so the test split is the same with and without validation), training = the rest
    of the training users: the test users appear in neither."""
    for arg, value in (("num_test_users", num_test_users), ("num_validation_users", num_validation_users)):
        if value is not None and (not isinstance(value, (int, np.integer)) or value < 1):
            raise ValueError(f"{arg} must be a positive integer, got {value!r}")
    num_train = num_users - num_test_users - (num_validation_users or 0)
    if num_train < 1:
        raise ValueError(
            f"num_test_users={num_test_users} + num_validation_users={num_validation_users} leave no training "
            f"users out of {num_users}"
        )
    if test_users not in ("random", "last"):
        raise ValueError(f"test_users must be 'random' or 'last', got {test_users!r}")
    rng = np.random.default_rng(seed)
    users = rng.permutation(num_users) if test_users == "random" else np.arange(num_users)[::-1]
    test_users, train_users = np.sort(users[:num_test_users]), np.sort(users[num_test_users:])
    if num_validation_users is None:
        return train_users, test_users, rng
    validation_rng = np.random.default_rng([seed, 1])
    shuffled = validation_rng.permutation(train_users)
    return np.sort(shuffled[num_validation_users:]), np.sort(shuffled[:num_validation_users]), rng


def group_rates(args, flow_length: int) -> Dict[str, float]:
    """``group_learning_rates`` of one (a) model from --flow-learning-rate / --local-learning-rate."""
    rates = {"local": args.local_learning_rate}
    if flow_length > 0:
        rates["flow"] = args.flow_learning_rate
    return {group: rate for group, rate in rates.items() if rate is not None}


def training_settings(args) -> Dict:
    """The ``train_gplvf`` keyword arguments shared by protocols (a)-(c) (all but the flow length, epochs,
    group rates, logdir and warm start); ``seed`` is --train-seed, or --seed when that is not given."""
    return dict(
        latent_dim=args.latent_dim, num_inducing=args.num_inducing, batch_size=args.batch_size,
        learning_rate=args.learning_rate, num_samples=args.num_samples,
        seed=args.seed if args.train_seed is None else args.train_seed, kernel=args.kernel,
        natgrad_gamma=args.natgrad_gamma, kl_x=args.kl_x, base_covariance=args.base_covariance, lr_decay=args.lr_decay,
        identity_at_zero=planar_identity_at_zero(args), encoder=args.encoder,
    )


def protocol_a(ratings: sp.csr_matrix, args) -> Dict[str, Dict]:
    train_users, heldout_users, rng = split_users(
        ratings.shape[0], args.num_test_users, args.seed,
        args.num_validation_users if args.validation else None, test_users=args.test_users,
    )
    train = ratings[train_users]
    observed, target = split_rows(ratings[heldout_users], args.condition_fraction, rng)
    kind = "validation" if args.validation else "test"
    print(f"(a) {train.shape[0]} training users, {len(heldout_users)} held-out {kind} users; conditioning on "
          f"{observed.nnz} ratings ({args.condition_fraction:.0%} per user), predicting {target.nnz}")
    model_train, model_observed, test_biases = centre(train, observed, args.center)
    # --seed fixes the held-out users and their conditioning halves; --train-seed (default: --seed)
    # only the initialisation, minibatches and Monte Carlo draws, so models can be compared on one split
    # over several training seeds.
    common = training_settings(args)
    train_seed = common["seed"]
    warm = None
    if args.warm_start_epochs:
        # one Gaussian-q(X) model trained --warm-start-epochs; every model below (the Gaussian included, which then
        # simply continues) starts from it and trains --epochs more, so the flows get no extra training
        warm, _ = train_gplvf(model_train, 0, epochs=args.warm_start_epochs, group_learning_rates=group_rates(args, 0),
                              **common)
    results = {}
    for flow_length in args.flows:
        name = "gaussian" if flow_length == 0 else f"planar_{flow_length}"
        start = time.time()
        model, history = train_gplvf(
            model_train, flow_length, epochs=args.epochs, group_learning_rates=group_rates(args, flow_length),
            logdir=None if args.logdir is None else args.logdir / f"a_{name}", warm_start=warm, **common,
        )
        amortised = None
        if args.encoder:  # q(x*) straight from the encoder, no optimisation; the fit below starts from it
            infer_start = time.perf_counter()
            x_mean, x_var = model.encode(model_observed)
            amortised = evaluate_at(model, x_mean, x_var, target, args.predict_samples, train_seed, biases=test_biases)
            amortised["seconds"] = time.perf_counter() - infer_start
        infer_start = time.perf_counter()
        x_mean, x_var = model.infer_latent(
            model_observed, num_steps=args.infer_steps, learning_rate=0.05, num_samples=args.infer_samples,
            seed=train_seed, decay=args.infer_decay,
        ) if observed.nnz else (None, None)
        infer_seconds = time.perf_counter() - infer_start
        row = evaluate_at(model, x_mean, x_var, target, args.predict_samples, train_seed, biases=test_biases)
        row["infer_seconds"] = infer_seconds  # the q(x*) fit (tracing included), not the prediction
        if amortised is not None:
            row["amortised"] = amortised  # RMSE etc. at the encoder's q(x*); seconds include the prediction
        row.update(
            seconds_per_epoch=history.median_seconds_per_epoch(), epochs=len(history.epochs),
            final_elbo=-history.final_objective, total_seconds=time.time() - start,
            paper_rmse=PAPER.get("table2_rmse", {}).get(name),
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
    if args.gpy:
        gpy = gpy_peer(
            conditioning_train, target_full,
            latent_dim=args.latent_dim, num_inducing=args.num_inducing, max_iters=args.gpy_iters, seed=args.seed,
            timeout=args.gpy_timeout,
        )
        if gpy is not None:
            results["gpy_bgplvm_missing"] = gpy
    return results


def protocol_b(ratings_by_split, args) -> Dict[str, Dict]:
    """Train on uK.base, predict uK.test, for each split and each --flows-b length (0 = Gaussian q(X)), with the
    same training settings as (a); the rows' own q(x_n) (the training latents) predict their test ratings.
    Row keys: ``{name}_rmse``, ``{name}_test_loglik``, ``{name}_seconds_per_epoch``, ``{name}_final_elbo`` with
    ``name`` "gaussian" or "planar_K", plus ``bias_rmse`` and, where GPy ran, ``gpy_*``."""
    common = training_settings(args)
    results = {}
    for split, (train, test) in ratings_by_split.items():
        row = {}
        model_train, _, biases = centre(train, None, args.center)
        for flow_length in args.flows_b:
            name = "gaussian" if flow_length == 0 else f"planar_{flow_length}"
            model, history = train_gplvf(
                model_train, flow_length, epochs=args.epochs, group_learning_rates=group_rates(args, flow_length),
                logdir=None if args.logdir is None else args.logdir / f"b_{split}_{name}", **common,
            )
            ev = evaluate_at(
                model, *model.training_latents(), test, args.predict_samples, common["seed"], biases=biases
            )
            row[f"{name}_rmse"] = ev["rmse"]
            row[f"{name}_test_loglik"] = ev["test_loglik"]
            row[f"{name}_seconds_per_epoch"] = history.median_seconds_per_epoch()
            row[f"{name}_final_elbo"] = -history.final_objective
        row["bias_rmse"] = bias_baseline(train, test)["rmse"]
        if args.gpy and split in args.gpy_splits and not args.smoke:  # small runs: GPy in (a) only
            gpy = gpy_peer(train, test, latent_dim=args.latent_dim, num_inducing=args.num_inducing,
                           max_iters=args.gpy_iters, seed=args.seed, timeout=args.gpy_timeout)
            row.update({f"gpy_{key}": value for key, value in (gpy or {}).items()})  # rmse, timings, status
        results[split] = row
        print(split, row, flush=True)
    return results


def protocol_c(ratings: sp.csr_matrix, genres: np.ndarray, genre_names: Sequence[str], args) -> Dict[str, Dict]:
    cols = np.flatnonzero(genres[:, genre_names.index("Sci-Fi")] | genres[:, genre_names.index("Romance")])
    sub = sp.csr_matrix(ratings[:, cols])
    sub = sub[np.diff(sub.indptr) >= 2]
    rng = np.random.default_rng(args.seed + 1)
    users = rng.permutation(sub.shape[0])
    num_test = max(2, int(round(0.1 * sub.shape[0])))
    train = sub[np.sort(users[num_test:])]
    observed, target = split_rows(sub[np.sort(users[:num_test])], args.condition_fraction, rng)
    print(f"(c) Sci-Fi/Romance slice: {sub.shape[0]} users x {sub.shape[1]} movies, {sub.nnz} ratings; "
          f"{num_test} held-out users")
    model_train, model_observed, test_biases = centre(train, observed, args.center)
    common = training_settings(args)
    results = {}
    for flow_length in args.flows_c:
        name = "gaussian" if flow_length == 0 else f"planar_{flow_length}"
        model, history = train_gplvf(
            model_train, flow_length, epochs=args.epochs, group_learning_rates=group_rates(args, flow_length),
            logdir=None if args.logdir is None else args.logdir / f"c_{name}", **common,
        )
        x_mean, x_var = model.infer_latent(
            model_observed, num_steps=args.infer_steps, learning_rate=0.05, num_samples=args.infer_samples,
            seed=common["seed"], decay=args.infer_decay,
        )
        row = evaluate_at(model, x_mean, x_var, target, args.predict_samples, common["seed"], biases=test_biases)
        row.update(seconds_per_epoch=history.median_seconds_per_epoch(), final_elbo=-history.final_objective)
        results[name] = row
        print(name, row, flush=True)
    if args.figure_dir is not None:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        lengths = list(args.flows_c)
        fig, ax = plt.subplots(figsize=(4.5, 3.2))
        ax.plot(lengths, [results["gaussian" if k == 0 else f"planar_{k}"]["test_loglik"] for k in lengths], "o-")
        ax.set_xlabel("planar flow length (0 = mean-field Gaussian)")
        ax.set_ylabel("test log-likelihood per rating")
        ax.set_title("MovieLens Sci-Fi/Romance (Figure 4)")
        fig.tight_layout()
        args.figure_dir.mkdir(parents=True, exist_ok=True)
        fig.savefig(args.figure_dir / "gplvf_figure4_movielens.png", dpi=120)
        plt.close(fig)
    return results


def parse_lengths(text: str):
    """"0,20,50" -> [0, 20, 50] (flow lengths; 0 = Gaussian q(X))."""
    try:
        lengths = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"flow lengths must be comma-separated integers, got {text!r}") from None
    if not lengths or min(lengths) < 0:
        raise argparse.ArgumentTypeError(f"flow lengths must be non-negative integers (0 = Gaussian), got {text!r}")
    return lengths


def main(argv=None):
    parser = base_parser(__doc__.split("\n")[0], figure_dir=True,
                         smoke=f"every protocol on the {SMALL_USERS} most active users x the {SMALL_ITEMS} most rated "
                               "items, 3 epochs, small Q and M, few inference steps")
    parser.add_argument("--protocol", default="a,b,c", help="comma-separated protocols to run (a, b, c)")
    parser.add_argument("--flows", type=parse_lengths, default=[0, 20, 30, 50], help="(a) flow lengths, 0 = Gaussian")
    parser.add_argument("--flows-b", type=parse_lengths, default=[0, 20],
                        help="(b) flow lengths, 0 = Gaussian (results before 2026-11-25: planar 20 only)")
    parser.add_argument("--flows-c", type=parse_lengths, default=[0, 5, 10, 20, 30])
    parser.add_argument("--splits", default="u1,u2,u3,u4,u5")
    parser.add_argument("--latent-dim", type=int, default=10)
    parser.add_argument("--num-inducing", type=int, default=20)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--learning-rate", type=float, default=0.01)
    parser.add_argument("--num-samples", type=int, default=1)
    parser.add_argument("--flow-learning-rate", type=float, default=1e-3,
                        help="Adam learning rate of the flow's shared parameters (pass the --learning-rate value to "
                             "share one rate, as before 2026-11-25)")
    add_planar_constraint_argument(parser)
    parser.add_argument("--warm-start-epochs", type=int, default=0,
                        help="(a) first train one Gaussian-q(X) model this many epochs; every model then starts from "
                             "it (flows near the identity) and trains --epochs more")
    parser.add_argument("--local-learning-rate", type=float, default=None,
                        help="Adam learning rate of every row's q(x_n) parameters (default: --learning-rate)")
    parser.add_argument("--lr-decay", choices=LEARNING_RATE_DECAYS, default="cosine",
                        help="training: Adam at --learning-rate throughout, or cosine-decayed to 0 over all steps")
    parser.add_argument("--predict-samples", type=int, default=50)
    parser.add_argument("--infer-steps", type=int, default=1000)
    parser.add_argument("--infer-decay", choices=LEARNING_RATE_DECAYS, default="cosine",
                        help="learning rate of the q(x*) fit: constant Adam 0.05, or cosine-decayed to 0")
    parser.add_argument("--infer-samples", type=int, default=8,
                        help="Monte Carlo draws per step when inferring q(x*) of new rows")
    parser.add_argument("--train-seed", type=int, default=None,
                        help="seed of the initialisation, minibatches and Monte Carlo draws (default: --seed); "
                             "--seed also picks the held-out users and their conditioning halves")
    parser.add_argument("--num-test-users", type=int, default=100)
    parser.add_argument("--validation", action="store_true",
                        help="(a) hold out --num-validation-users of the training users instead of the test users "
                             "(for choosing settings; the test users are not used)")
    parser.add_argument("--num-validation-users", type=int, default=100)
    parser.add_argument("--test-users", choices=("random", "last"), default="last",
                        help="(a) held-out test users: drawn with --seed, or the last --num-test-users user ids")
    parser.add_argument("--natgrad-gamma", type=float, default=0.0,
                        help="natural-gradient step length for q(u) (0: Adam for q(u) as for everything else)")
    parser.add_argument("--kernel", choices=KERNEL_NAMES, default="se",
                        help="GP kernel on the latent space: SE-ARD (the paper's), ARD linear, or their sum")
    parser.add_argument("--condition-fraction", type=float, default=0.5)
    parser.add_argument("--center", choices=("bias", "none"), default="bias",
                        help="train GPLVF on the residuals of a user/item-bias fit (default) or on the raw ratings")
    parser.add_argument("--gpy", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument("--gpy-iters", type=int, default=300)
    parser.add_argument("--gpy-splits", default="u1")
    parser.add_argument("--gpy-timeout", type=float, default=3000.0, help="seconds before the GPy subprocess is stopped")
    parser.add_argument("--kl-x", choices=sorted(KL_X_CHOICES), default="correct",
                        help="(a) KL(q(x)||p(x)) term: 'correct' (GPLVF's: base KL in closed form + Monte Carlo flow "
                             "correction), 'plain-monte-carlo' (every term by Monte Carlo, as before 2026-11-25) or "
                             "the biased base-Gaussian ablation")
    parser.add_argument("--encoder", action="store_true",
                        help="amortised q(x_n): GPLVF's tf_keras encoder maps each masked row to (mu_n, s_n); in (a) "
                             "the held-out users are scored at the encoder's q(x*) ('amortised') and after the q(x*) "
                             "fit started from it")
    parser.add_argument("--base-covariance", choices=BASE_COVARIANCES, default="diagonal",
                        help="q(x_n)'s base Gaussian: N(mu_n, diag s_n) or the paper's N(mu_n, s_n I) (eq. 2, 4)")
    args = parser.parse_args(argv)
    if args.infer_samples < 1:
        parser.error(f"--infer-samples must be >= 1, got {args.infer_samples}")
    if args.epochs is None:
        args.epochs = 3 if args.smoke else 150
    args.gpy_splits = args.gpy_splits.split(",")
    protocols = args.protocol.split(",")
    if args.kl_x != "correct" and protocols != ["a"]:
        parser.error(f"--kl-x {args.kl_x} is an ablation of protocol (a) only; pass --protocol a")
    if args.warm_start_epochs < 0:
        parser.error(f"--warm-start-epochs must be >= 0, got {args.warm_start_epochs}")
    if args.encoder and args.warm_start_epochs:
        parser.error("--encoder cannot be combined with --warm-start-epochs (the warm start copies per-row q(x_n))")
    for name in ("flow_learning_rate", "local_learning_rate"):
        rate = getattr(args, name)
        if rate is not None and not (np.isfinite(rate) and rate > 0):
            parser.error(f"--{name.replace('_', '-')} must be a positive number, got {rate}")

    ml = load_movielens(args.data_dir, split=None, download=False)
    ratings = ratings_matrix(ml.ratings)
    genres = ml.items.genres.astype(bool)
    if args.smoke:
        args.num_test_users = min(args.num_test_users, 15)
        args.num_validation_users = min(args.num_validation_users, 15)
        args.infer_steps = min(args.infer_steps, 10)
        args.predict_samples = min(args.predict_samples, 5)
        args.gpy_iters = min(args.gpy_iters, 1)
        args.flows = [k for k in args.flows if k in (0, 20)][:2]
        args.num_inducing = min(args.num_inducing, 10)
        args.latent_dim = min(args.latent_dim, 3)
    results = {"config": arguments_record(args)}

    if "a" in protocols:
        data = small_slice(ratings) if args.smoke else ratings
        results["a"] = protocol_a(data, args)
        rows = []
        for name, row in results["a"].items():
            rows.append({"q(X)": name, "RMSE": row.get("rmse"), "paper RMSE": row.get("paper_rmse"),
                         "test loglik": row.get("test_loglik"),
                         "s/epoch": row.get("seconds_per_epoch", row.get("seconds_per_iter"))})
        print_table(rows, ["q(X)", "RMSE", "paper RMSE", "test loglik", "s/epoch"],
                    title=f"(a) MovieLens 100K, {'validation users' if args.validation else 'test users'}, "
                          f"kernel {args.kernel}, conditioning fraction {args.condition_fraction}, KL(q(x)) {args.kl_x}")
    if "b" in protocols:
        splits = {}
        for split in args.splits.split(","):
            mls = load_movielens(args.data_dir, split=split, download=False)
            train, test = ratings_matrix(mls.train), ratings_matrix(mls.test)
            if args.smoke:
                keep = small_slice(ratings).shape  # same slice definition on the split
                items = np.sort(np.argsort(-np.diff(ratings.tocsc().indptr))[:SMALL_ITEMS])
                users = np.sort(np.argsort(-np.diff(ratings[:, items].tocsr().indptr))[:SMALL_USERS])
                train, test = train[users][:, items], test[users][:, items]
                assert train.shape == keep
            nonempty = np.diff(train.indptr) > 0
            splits[split] = (sp.csr_matrix(train[nonempty]), sp.csr_matrix(test[nonempty]))
            if args.smoke:
                break
        results["b"] = protocol_b(splits, args)
        names = ["gaussian" if k == 0 else f"planar_{k}" for k in args.flows_b]
        print_table([dict(split=s, **r) for s, r in results["b"].items()],
                    ["split"] + [f"{n}_rmse" for n in names] + ["bias_rmse", "gpy_rmse"]
                    + [f"{n}_seconds_per_epoch" for n in names] + ["gpy_seconds_per_iter"],
                    title="(b) MovieLens 100K uK.base -> uK.test RMSE")
    if "c" in protocols:
        data, g = (ratings, genres)
        if args.smoke:  # the slice's 60 most active users, 2 flow lengths
            args.flows_c = args.flows_c[:2]
            data = ratings[np.sort(np.argsort(-np.diff(ratings.indptr))[:SMALL_USERS])]
        results["c"] = protocol_c(data, g, list(ml.items.genre_names), args)
    write_results(results, args.output)
    return results


if __name__ == "__main__":
    main()
