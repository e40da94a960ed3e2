"""GPLVF likelihoods by name for the recipes, and metrics of predictions on a discrete rating scale.

* :func:`likelihood_arguments` / :data:`LIKELIHOOD_NAMES`: ``"gaussian"`` (GPLVF's default), ``"ordinal"``
  (:class:`gpflow_ext.likelihoods.Ordinal` on integer classes 0..K-1, edges learnt from k + 1/2) or
  ``"bernoulli"`` (``gpflow.likelihoods.Bernoulli`` on 0/1), as GPLVF keyword arguments.
* :func:`discrete_rating_metrics`: the test log-probability of the discrete ratings (eq. 33 with p(rating) in
  place of a density) and the coverage of central 50 % / 90 % predictive intervals on the rating scale, for an
  ordinal model (its own class probabilities) and for a Gaussian one (its predictive density integrated over each
  rating's bin, the end bins open: the same ordered probit with σ² + v), so that the two are judged alike.
"""

import gpflow
import numpy as np
import scipy.sparse as sp
import tensorflow as tf
from scipy.special import logsumexp

from ..likelihoods.ordinal import Ordinal, ordinal_log_probabilities

__all__ = [
    "LIKELIHOOD_NAMES",
    "likelihood_arguments",
    "rating_log_probabilities",
    "rating_distribution",
    "rating_classes",
    "interval_metrics",
    "discrete_rating_metrics",
]

LIKELIHOOD_NAMES = ("gaussian", "ordinal", "bernoulli")


def likelihood_arguments(name: str, values: np.ndarray, observed: np.ndarray) -> dict:
    """GPLVF keyword arguments (``likelihood``, ``mean_function``) for the likelihood ``name`` on ``values`` [N, D]
    observed where ``observed`` [N, D] is True. ``"ordinal"``: K = max class + 1, edges 1/2, 3/2, ..., σ at
    √(0.1 · the classes' variance) (as the Gaussian's noise), each column's mean at its class mean shrunk to the
    global one by 5 pseudo-observations (as the Gaussian's)."""
    if name not in LIKELIHOOD_NAMES:
        raise ValueError(f"likelihood must be one of {LIKELIHOOD_NAMES}, got {name!r}")
    data = values[observed]
    if name == "gaussian":
        return {}
    if name == "bernoulli":
        if not np.all((data == 0) | (data == 1)):
            raise ValueError("likelihood='bernoulli' needs observed values 0 or 1")
        return {"likelihood": gpflow.likelihoods.Bernoulli()}
    if data.size == 0 or not np.all((data == np.round(data)) & (data >= 0)):
        raise ValueError("likelihood='ordinal' needs observed values that are integer classes 0, 1, ..., K-1")
    num_classes = int(data.max()) + 1
    if num_classes < 2:
        raise ValueError(f"likelihood='ordinal' needs at least 2 classes, got {num_classes}")
    column_sum, column_count = np.where(observed, values, 0.0).sum(0), observed.sum(0)
    shrunk = (column_sum + 5.0 * data.mean()) / (column_count + 5.0)
    sigma = max(float(np.sqrt(0.1 * data.var())), 0.05)
    return {
        "likelihood": Ordinal(np.arange(num_classes - 1) + 0.5, sigma=sigma),
        "mean_function": gpflow.mean_functions.Constant(shrunk),
    }


def rating_log_probabilities(
    model, x_mean, x_var, target: sp.spmatrix, rating_values, offsets=None, num_samples: int = 50, seed: int = 0
) -> np.ndarray:
    """log p(rating_k | x*_j) [J, T, K] of every rating value k for the T stored entries of ``target`` [N*, D]
    (COO order) at the draws x*_j of q(x*) = (x_mean, x_var) [N*, Q] (``model.base_noise(N*, J, seed)``).

    An ordinal model (class k = ``rating_values[k]``): its ``predictive_log_probabilities``. A Gaussian model: its
    predictive N(μ + offset, v + σ²) integrated over each rating's bin (edges halfway between rating values, end
    bins open); ``offsets`` [T]: what the model's f omits (the bias fit it was trained on the residuals of)."""
    target = sp.coo_matrix(target)
    rating_values = np.asarray(rating_values, dtype=np.float64)
    noise = model.base_noise(x_mean.shape[0], num_samples, seed)  # [J, N*, Q]
    num_inducing = int(model.inducing_variable.num_inducing)
    chunk = max(1, int(2e7 // (num_samples * model.output_dim * num_inducing)))  # rows: GPflow tiles [D, M, J·rows]
    likelihood = model.likelihood
    if isinstance(likelihood, gpflow.likelihoods.Gaussian):
        edges = tf.constant(0.5 * (rating_values[1:] + rating_values[:-1]), dtype=gpflow.config.default_float())
    elif not isinstance(likelihood, Ordinal):
        raise TypeError(f"rating probabilities need a Gaussian or Ordinal GPLVF, got {type(likelihood).__name__}")
    out = np.zeros((num_samples, target.nnz, rating_values.size))
    offsets = np.zeros(target.nnz) if offsets is None else np.asarray(offsets, dtype=np.float64)
    for start in range(0, x_mean.shape[0], chunk):
        stop = min(start + chunk, x_mean.shape[0])
        entries = np.flatnonzero((target.row >= start) & (target.row < stop))
        x = model.latent_draws(x_mean[start:stop], x_var[start:stop], noise[:, start:stop])  # [J, n, Q]
        f_mean, f_var = (t.numpy() for t in model.predict_f(x))  # [J, n, D]
        fm = f_mean[:, target.row[entries] - start, target.col[entries]]  # [J, t]
        fv = f_var[:, target.row[entries] - start, target.col[entries]]  # [J, t]
        if isinstance(likelihood, Ordinal):
            log_p = likelihood.predictive_log_probabilities(fm, fv)  # [J, t, K]
        else:
            scale = tf.sqrt(fv + likelihood.variance)  # [J, t]
            log_p = ordinal_log_probabilities(edges, fm + offsets[entries], scale)  # [J, t, K]
        out[:, entries] = log_p.numpy()
    return out


def rating_distribution(
    model, x_mean, x_var, target: sp.spmatrix, rating_values, offsets=None, num_samples: int = 50, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """(probabilities [T, K], row_log_joint [N*]) of the T stored entries of ``target`` [N*, D] (COO order):
    p(rating_k) averaged over the draws of q(x*), and per row log 1/J Σ_j Π_{test d} p(rating_nd | x*_j) (eq. 33 on
    the discrete ratings; 0 for a row with no entries). Arguments as :func:`rating_log_probabilities`."""
    target = sp.coo_matrix(target)
    rating_values = np.asarray(rating_values, dtype=np.float64)
    log_p = rating_log_probabilities(model, x_mean, x_var, target, rating_values, offsets, num_samples, seed)
    classes = rating_classes(target.data, rating_values)
    picked = log_p[:, np.arange(target.nnz), classes]  # [J, T]
    per_row = np.zeros((x_mean.shape[0], num_samples))
    np.add.at(per_row, target.row, picked.T)  # [N*, J]: Σ over each row's test entries
    joint = logsumexp(per_row, axis=1) - np.log(num_samples)  # [N*]
    return np.exp(log_p).mean(axis=0), joint


def rating_classes(ratings: np.ndarray, rating_values: np.ndarray) -> np.ndarray:
    """The index k of each rating in ``rating_values`` (ValueError for a value off the scale)."""
    classes = np.searchsorted(rating_values, ratings)
    if not np.all(rating_values[np.minimum(classes, rating_values.size - 1)] == ratings):
        raise ValueError(f"target holds values outside the rating scale {rating_values.tolist()}")
    return classes


def interval_metrics(probabilities: np.ndarray, classes: np.ndarray) -> dict[str, float]:
    """``coverage_50`` / ``coverage_90``: the fraction of ratings (class indices ``classes`` [T]) inside the central
    interval [q_(1-α)/2, q_(1+α)/2] of each entry's predictive distribution ``probabilities`` [T, K];
    ``width_50`` / ``width_90``: its mean number of rating values (discrete intervals cover at least α)."""
    cdf = np.cumsum(probabilities, axis=-1)  # [T, K]
    out = {}
    for level in (50, 90):
        low = np.argmax(cdf >= (1 - level / 100) / 2, axis=-1)
        high = np.argmax(cdf >= (1 + level / 100) / 2 - 1e-12, axis=-1)
        out[f"coverage_{level}"] = float(np.mean((classes >= low) & (classes <= high)))
        out[f"width_{level}"] = float(np.mean(high - low + 1))
    return out


def discrete_rating_metrics(
    model, x_mean, x_var, target: sp.spmatrix, rating_values, offsets=None, num_samples: int = 50, seed: int = 0
) -> dict[str, float]:
    """``test_logprob_discrete``: Σ_rows log 1/J Σ_j Π_{test d} p(rating_nd | x*_j) / T (eq. 33 on the discrete
    ratings, per rating); the 50 % / 90 % intervals' coverage and width of :func:`interval_metrics` for each entry's
    predictive rating distribution (averaged over q(x*))."""
    target = sp.coo_matrix(target)
    rating_values = np.asarray(rating_values, dtype=np.float64)
    probabilities, joint = rating_distribution(model, x_mean, x_var, target, rating_values, offsets, num_samples, seed)
    return {
        "test_logprob_discrete": float(joint.sum() / target.nnz),
        **interval_metrics(probabilities, rating_classes(target.data, rating_values)),
    }
