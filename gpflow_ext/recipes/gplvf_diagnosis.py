"""How well a trained GPLVF predicts held-out entries, and why: calibration, q(x) widths, variance sources.

A GPLVF with a Gaussian likelihood predicts entry (n, d) of a row with q(x*) by the mixture over x* ~ q(x*)

    p(y | q(x*)) = E_{x*} N(y; m_d(x*), v_d(x*) + σ²) ≈ 1/J Σ_j N(y; m_j, v_j + σ²),

m_j, v_j the GP predictive mean and variance of f_d at the draw x*_j = g(μ* + √s* ε_j) (the draws of
``GPLVF.predict_y_marginal`` with the same ``num_samples`` and ``seed``). From the J draws per entry:

* :func:`mixture_log_density`: log p(y | q(x*)) per entry (the *marginal* log predictive density of one rating;
  ``GPLVF.test_log_likelihood`` is eq. 33, the *joint* density of a row's test entries, per entry);
* :func:`mixture_cdf` and :func:`interval_coverage`: the predictive CDF F(y) of the same mixture, exactly (a sum
  of normal CDFs, no root finding); y lies in the central interval of level p iff (1 - p)/2 <= F(y) <= (1 + p)/2,
  so the coverage of central intervals is the fraction of entries whose F(y) falls there.
  :func:`gaussian_cdf` gives the same for the moment-matched Gaussian N(E m_j, E v_j + Var m_j + σ²);
* :func:`variance_decomposition`: predictive variance = σ² (likelihood noise) + E_j v_j (the GP's variance at
  x*) + Var_j m_j (the spread of the GP mean over q(x*): x's uncertainty), each averaged over the entries;
* :func:`latent_widths`: how wide each row's q(x_n) is, as log-determinants of its covariance: the base
  Gaussian's Σ_q log s_nq, the entropy-matched log det (Σ_q log s_nq + 2 E log|det ∂g/∂x⁰|: the log det of the
  Gaussian with q(x_n)'s entropy, exact in expectation for any flow) and the log det of the flowed draws' sample
  covariance, optionally in units of the kernel's lengthscales (what the GP sees);
* :func:`predictive_measures`: all of the above for the observed entries of ``Y`` at q(x*) = (μ*, s*), and
  :func:`bound_terms`: the training bound's three terms on all training rows.
"""

import gpflow
import numpy as np
import tensorflow as tf
from check_shapes import check_shapes
from gpflow.config import default_float
from scipy.special import logsumexp, ndtr

from ..bijectors.planar import flow_forward_and_log_det
from ..models.gplvf import GPLVF
from ..validation import check_latents, check_observations, check_positive_int

__all__ = [
    "mixture_log_density",
    "mixture_cdf",
    "gaussian_cdf",
    "interval_coverage",
    "variance_decomposition",
    "entry_predictive_draws",
    "latent_widths",
    "predictive_measures",
    "bound_terms",
    "noise_variance",
]

LOG_2PI = float(np.log(2.0 * np.pi))


def noise_variance(model: GPLVF) -> float:
    """σ² of a GPLVF with a ``gpflow.likelihoods.Gaussian`` likelihood (TypeError for any other likelihood:
    the measures of this module are the Gaussian predictive's)."""
    if not isinstance(model, GPLVF):
        raise TypeError(f"model must be a GPLVF, got {type(model).__name__}")
    if not isinstance(model.likelihood, gpflow.likelihoods.Gaussian):
        raise TypeError(
            f"model: these measures need a Gaussian likelihood (a mixture of normals), got "
            f"{type(model.likelihood).__name__}"
        )
    return float(model.likelihood.variance.numpy())


def _check_draws(y, f_mean, f_var, noise):
    y, f_mean, f_var = (np.asarray(a, dtype=np.float64) for a in (y, f_mean, f_var))
    if f_mean.ndim != 2 or f_var.shape != f_mean.shape or y.shape != f_mean.shape[1:]:
        raise ValueError(
            f"f_mean and f_var must be [J, P] and y [P], got y {y.shape}, f_mean {f_mean.shape}, f_var {f_var.shape}"
        )
    if np.any(f_var < 0) or not np.isfinite(noise) or noise <= 0:
        raise ValueError(f"f_var must be >= 0 and noise_variance finite and > 0, got noise_variance={noise!r}")
    return y, f_mean, f_var + noise  # [P], [J, P], [J, P]


@check_shapes("y: [P]", "f_mean: [J, P]", "f_var: [J, P]", "return: [P]")
def mixture_log_density(y, f_mean, f_var, noise_variance: float) -> np.ndarray:
    """log 1/J Σ_j N(y; m_j, v_j + σ²) per entry [P]: the log predictive density of each entry under q(x*)."""
    y, f_mean, total = _check_draws(y, f_mean, f_var, noise_variance)
    log_normal = -0.5 * (LOG_2PI + np.log(total) + (y - f_mean) ** 2 / total)  # [J, P]
    return logsumexp(log_normal, axis=0) - np.log(f_mean.shape[0])


@check_shapes("y: [P]", "f_mean: [J, P]", "f_var: [J, P]", "return: [P]")
def mixture_cdf(y, f_mean, f_var, noise_variance: float) -> np.ndarray:
    """F(y) = 1/J Σ_j Φ((y - m_j) / √(v_j + σ²)) per entry [P]: the predictive mixture's CDF at the observed y."""
    y, f_mean, total = _check_draws(y, f_mean, f_var, noise_variance)
    return np.mean(ndtr((y - f_mean) / np.sqrt(total)), axis=0)


@check_shapes("y: [P]", "mean: [P]", "var: [P]", "return: [P]")
def gaussian_cdf(y, mean, var) -> np.ndarray:
    """Φ((y - mean) / √var) per entry [P] (the moment-matched Gaussian predictive's CDF at y)."""
    return ndtr((np.asarray(y) - np.asarray(mean)) / np.sqrt(np.asarray(var)))


def interval_coverage(cdf_values, level: float) -> float:
    """Fraction of entries inside the central predictive interval of probability ``level`` (0 < level < 1), from
    the predictive CDF at each observed value: (1 - level)/2 <= F(y) <= (1 + level)/2."""
    if not 0.0 < float(level) < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level!r}")
    cdf_values = np.asarray(cdf_values, dtype=np.float64)
    if cdf_values.ndim != 1 or cdf_values.size == 0:
        raise ValueError(f"cdf_values must be a non-empty 1-D array, got shape {cdf_values.shape}")
    tail = 0.5 * (1.0 - float(level))
    return float(np.mean((cdf_values >= tail) & (cdf_values <= 1.0 - tail)))


@check_shapes("f_mean: [J, P]", "f_var: [J, P]")
def variance_decomposition(f_mean, f_var, noise_variance: float) -> dict[str, float]:
    """Predictive variance of each entry split into ``noise`` σ², ``gp`` E_j v_j and ``latent`` Var_j m_j (the
    spread of the GP mean over x* ~ q(x*)), each averaged over the entries; ``total`` is their sum."""
    f_mean, f_var = np.asarray(f_mean, dtype=np.float64), np.asarray(f_var, dtype=np.float64)
    gp, latent = float(np.mean(f_var)), float(np.mean(np.var(f_mean, axis=0)))
    return {"noise": float(noise_variance), "gp": gp, "latent": latent, "total": float(noise_variance) + gp + latent}


def _chunk_rows(model: GPLVF, num_rows: int, num_samples: int) -> list[tuple[int, int]]:
    size = max(1, int(2e7 // max(1, num_samples * model.output_dim * int(model.inducing_variable.num_inducing))))
    return [(start, min(start + size, num_rows)) for start in range(0, num_rows, size)]


def entry_predictive_draws(
    model: GPLVF, Y, x_mean, x_var, *, mask=None, num_samples: int = 50, seed: int = 0
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(y [P], m [J, P], v [J, P]) at the P observed entries of ``Y`` [N*, D] (NaN = not a test entry, or
    ``mask``; row-major order): the GP's predictive mean and variance of f at x*_j ~ q(x*) of each row, with the
    base draws of ``model.base_noise(N*, num_samples, seed)`` (those of ``predict_y_marginal``)."""
    values, observed = check_observations(Y, mask, name="Y", num_outputs=model.output_dim, allow_empty_rows=True)
    x_mean, x_var = check_latents(x_mean, x_var, model.latent_dim)
    num_samples = check_positive_int(num_samples, "num_samples")
    if x_mean.shape[0] != values.shape[0]:
        raise ValueError(f"x_mean has {x_mean.shape[0]} rows but Y has {values.shape[0]}")
    noise = model.base_noise(values.shape[0], num_samples, seed)  # [J, N*, Q]
    means, variances = [], []
    for start, stop in _chunk_rows(model, values.shape[0], num_samples):
        rows, cols = np.nonzero(observed[start:stop])  # [p] each, row-major
        if rows.size == 0:
            continue
        x = model.latent_draws(x_mean[start:stop], x_var[start:stop], noise[:, start:stop])  # [J, n, Q]
        f_mean, f_var = model.predict_f(x)  # [J, n, D] each
        means.append(f_mean.numpy()[:, rows, cols])  # [J, p]
        variances.append(f_var.numpy()[:, rows, cols])  # [J, p]
    if not means:
        raise ValueError("Y has no observed entries to predict")
    return values[observed], np.concatenate(means, axis=1), np.concatenate(variances, axis=1)


def latent_widths(flow, x_mean, x_var, *, num_samples: int = 200, seed: int = 0, scale=None) -> dict[str, float]:
    """Widths of the rows' q(x_n) = g_# N(μ_n, diag s_n), each a mean over rows of a log-determinant:

    * ``base_log_det``: Σ_q log s_nq (the base Gaussian's covariance);
    * ``entropy_log_det``: Σ_q log s_nq + 2 E log|det ∂g/∂x⁰| (Monte Carlo over ``num_samples`` base draws): the log
      det of the Gaussian with the entropy of q(x_n) (equal to ``base_log_det`` without a flow);
    * ``sample_log_det``: log det of the sample covariance of ``num_samples`` flowed draws;
    * with ``scale`` [Q] (e.g. the SE lengthscales) each also ``*_scaled``: the same for x / scale,
      i.e. minus 2 Σ_q log scale_q.
    """
    x_mean, x_var = check_latents(x_mean, x_var, np.shape(x_mean)[-1])
    num_rows, latent_dim = x_mean.shape
    num_samples = check_positive_int(num_samples, "num_samples")
    if num_samples <= latent_dim:
        raise ValueError(f"num_samples must exceed Q = {latent_dim} (a sample covariance of full rank)")
    noise = np.random.default_rng(seed).standard_normal((num_samples, num_rows, latent_dim))
    x0 = x_mean + np.sqrt(x_var) * noise  # [S, N, Q]
    x, log_det = flow_forward_and_log_det(flow, tf.constant(x0, dtype=default_float()))
    x, log_det = x.numpy().astype(np.float64), log_det.numpy().astype(np.float64)  # [S, N, Q], [S, N]
    centred = x - x.mean(axis=0)  # [S, N, Q]
    covariance = np.einsum("snq,snr->nqr", centred, centred) / (num_samples - 1)  # [N, Q, Q]
    base = np.sum(np.log(x_var), axis=-1)  # [N]
    out = {
        "base_log_det": float(np.mean(base)),
        "entropy_log_det": float(np.mean(base + 2.0 * np.mean(log_det, axis=0))),
        "sample_log_det": float(np.mean(np.linalg.slogdet(covariance)[1])),
    }
    if scale is not None:
        scale = np.broadcast_to(np.asarray(scale, dtype=np.float64), (latent_dim,))
        if not np.all(np.isfinite(scale)) or np.any(scale <= 0):
            raise ValueError(f"scale must be finite and > 0, got {scale}")
        shift = 2.0 * float(np.sum(np.log(scale)))
        out.update({f"{key}_scaled": value - shift for key, value in list(out.items())})
    return out


def predictive_measures(
    model: GPLVF,
    Y,
    x_mean,
    x_var,
    *,
    mask=None,
    levels=(0.5, 0.9),
    num_samples: int = 50,
    seed: int = 0,
) -> dict[str, float]:
    """Calibration of GPLVF's predictive at the observed entries of ``Y`` for rows with q(x*) = (μ*, s*):
    ``log_density`` (mean of :func:`mixture_log_density`), ``coverage_<pct>`` (central mixture intervals, exact
    CDF of the J-draw mixture) and ``coverage_<pct>_moment_matched``, ``mean_sq_z`` (mean of (y - mean)² / var
    under the moment-matched Gaussian: 1 when calibrated, above 1 when overconfident), the variance decomposition
    (``var_noise``, ``var_gp``, ``var_latent``, ``var_total``) and ``num_entries``. Gaussian likelihood only."""
    sigma2 = noise_variance(model)
    y, f_mean, f_var = entry_predictive_draws(model, Y, x_mean, x_var, mask=mask, num_samples=num_samples, seed=seed)
    mean = f_mean.mean(axis=0)  # [P]
    var = f_var.mean(axis=0) + f_mean.var(axis=0) + sigma2  # [P]
    cdf, cdf_matched = mixture_cdf(y, f_mean, f_var, sigma2), gaussian_cdf(y, mean, var)
    out = {"log_density": float(np.mean(mixture_log_density(y, f_mean, f_var, sigma2)))}
    for level in levels:
        pct = int(round(100 * level))
        out[f"coverage_{pct}"] = interval_coverage(cdf, level)
        out[f"coverage_{pct}_moment_matched"] = interval_coverage(cdf_matched, level)
    out["mean_sq_z"] = float(np.mean((y - mean) ** 2 / var))
    out.update({f"var_{k}": v for k, v in variance_decomposition(f_mean, f_var, sigma2).items()})
    out["num_entries"] = int(y.size)
    return out


def bound_terms(model: GPLVF, *, num_samples: int = 10, seed: int = 0) -> dict[str, float]:
    """The training bound on all training rows, by its terms: ``expected_log_lik`` Σ_n E log p(y_o | x, u),
    ``kl_x`` Σ_n KL(q(x_n) ‖ p(x_n)), ``kl_u`` Σ_d KL(q(u_d) ‖ p(u_d)) and ``elbo`` = the first minus the others,
    with ``num_samples`` base draws per row from numpy's ``default_rng(seed)`` (Monte Carlo in the first two)."""
    values, mask, row_index = model.training_data()
    num_samples = check_positive_int(num_samples, "num_samples")
    noise = model.base_noise(model.num_data, num_samples, seed)  # [S, N, Q]
    loglik, kl_x = 0.0, 0.0
    for start, stop in _chunk_rows(model, model.num_data, num_samples):
        x_mean, x_var = model.local_parameters(values[start:stop], mask[start:stop], row_index[start:stop])
        terms = model.row_terms(values[start:stop], mask[start:stop], x_mean, x_var, noise[:, start:stop])
        loglik, kl_x = loglik + float(tf.reduce_sum(terms[0])), kl_x + float(tf.reduce_sum(terms[1]))
    kl_u = float(model.prior_kl())
    return {"expected_log_lik": loglik, "kl_x": kl_x, "kl_u": kl_u, "elbo": loglik - kl_x - kl_u}
