"""GPLVF with one likelihood per column (SwitchedLikelihood + likelihood_columns) and the learnt-edge Ordinal:
each term against a Monte Carlo or closed-form twin, masked entries inert, a one-likelihood switch equal to the
plain model, float32 and float64, checkpoint / deepcopy / SavedModel, bad arguments refused by name."""

import gpflow
import numpy as np
import pytest
import tensorflow as tf
from scipy.stats import norm

from gpflow_ext.likelihoods import Ordinal
from gpflow_ext.models import GPLVF
from gpflow_ext.serving import export
from gpflow_ext.training import fit

EDGES = np.array([0.5, 1.5, 2.5, 3.5])
COLUMNS = np.array([0, 1, 2, 0, 1, 2])  # Gaussian, Bernoulli, Ordinal, ...


def _mixed(num_rows=12, seed=0, missing=0.3):
    rng = np.random.default_rng(seed)
    Y = np.stack(
        [
            rng.standard_normal(num_rows),
            (rng.random(num_rows) < 0.4).astype(float),
            rng.integers(0, 5, num_rows).astype(float),
        ]
        * 2,
        axis=1,
    )
    Y[rng.random(Y.shape) < missing] = np.nan
    Y[np.isnan(Y).all(axis=1), 0] = 0.5
    return Y


def _switched():
    return gpflow.likelihoods.SwitchedLikelihood(
        [gpflow.likelihoods.Gaussian(variance=0.3), gpflow.likelihoods.Bernoulli(), Ordinal(EDGES, sigma=0.8)]
    )


def _model(likelihood=None, columns=COLUMNS, Y=None, seed=0, **kwargs):
    Y = _mixed(seed=seed) if Y is None else Y
    likelihood = _switched() if likelihood is None else likelihood
    model = GPLVF(Y, 2, 4, likelihood=likelihood, likelihood_columns=columns, seed=seed, **kwargs)
    rng = np.random.default_rng(seed + 1)  # q(u) away from the prior so that every term matters
    model.q_mu.assign(0.7 * rng.standard_normal(model.q_mu.shape))
    model.mean_function.c.assign(model.mean_function.c + 0.3 * rng.standard_normal(model.output_dim))
    return model, Y


def _log_prob(lik, f, y):
    """log p(y | f) of one scalar likelihood, elementwise, in numpy (independent of the code under test)."""
    if isinstance(lik, gpflow.likelihoods.Gaussian):
        return norm.logpdf(y, f, np.sqrt(lik.variance.numpy()))
    if isinstance(lik, gpflow.likelihoods.Bernoulli):
        p = 1e-3 + (1 - 2e-3) * norm.cdf(f)  # GPflow's probit with its jitter
        return np.where(y == 1, np.log(p), np.log1p(-p))
    edges = np.r_[-np.inf, lik.bin_edges.numpy(), np.inf]
    sigma = lik.sigma.numpy()
    k = y.astype(int)
    upper, lower = (edges[k + 1] - f) / sigma, (edges[k] - f) / sigma
    return np.log(np.where(lower > 0, norm.sf(lower) - norm.sf(upper), norm.cdf(upper) - norm.cdf(lower)))


def test_bound_terms_match_monte_carlo_over_f_with_each_columns_likelihood():
    model, Y = _model()
    values, mask, rows = model.training_data()
    x_mean, x_var = model.local_parameters(tf.constant(values), tf.constant(mask), tf.constant(rows))
    noise = np.random.default_rng(5).standard_normal((2, Y.shape[0], 2))
    expected, _ = model.row_terms(values, mask, x_mean, x_var, noise)  # [N]

    x = model.latent_draws(x_mean, x_var, noise)  # [S, N, Q]
    f_mean, f_var = (t.numpy() for t in model.predict_f(x))  # [S, N, D]
    f = f_mean[None] + np.sqrt(f_var[None]) * np.random.default_rng(7).standard_normal((100_000, 1, 1, 1))
    twin = np.zeros(Y.shape[0])
    for d, k in enumerate(COLUMNS):
        lik = model.likelihood.likelihoods[k]
        log_lik = _log_prob(lik, f[..., d], np.nan_to_num(Y[:, d])[None, None]).mean(axis=(0, 1))  # [N]
        twin += np.where(mask[:, d] > 0, log_lik, 0.0)
    np.testing.assert_allclose(expected.numpy(), twin, rtol=2e-3, atol=5e-3)


def test_masked_entries_change_nothing_in_a_switched_model():
    model, Y = _model()
    values, mask, rows = model.training_data()
    noise = np.random.default_rng(1).standard_normal((2, Y.shape[0], 2))
    before = model.elbo_given_base_noise((values, mask, rows), noise)
    after = model.elbo_given_base_noise((np.where(mask > 0, values, 7.0), mask, rows), noise)
    assert float(before) == pytest.approx(float(after), abs=1e-12)


def test_predictions_are_each_columns_likelihoods_own():
    model, Y = _model()
    x_mean, x_var = model.training_latents()
    noise = model.base_noise(Y.shape[0], 20, seed=2)
    mean, var = model.predict_y_marginal_given_base_noise(x_mean, x_var, noise)
    x = model.latent_draws(x_mean, x_var, noise)
    f_mean, f_var = model.predict_f(x)  # [J, N, D]
    log_density = model.predict_log_density((x[0], Y))  # [N] at the first draw
    twin_density = np.zeros(Y.shape[0])
    for d, k in enumerate(COLUMNS):
        lik = model.likelihood.likelihoods[k]
        m, v = (t.numpy()[..., 0] for t in lik.predict_mean_and_var(x, f_mean[..., d : d + 1], f_var[..., d : d + 1]))
        total_mean = m.mean(axis=0)
        np.testing.assert_allclose(mean.numpy()[:, d], total_mean, rtol=1e-10)
        np.testing.assert_allclose(var.numpy()[:, d], (v + m**2).mean(axis=0) - total_mean**2, rtol=1e-8, atol=1e-12)
        observed = ~np.isnan(Y[:, d])
        y = np.nan_to_num(Y[:, d : d + 1])
        lpd = lik.predict_log_density(x[0], f_mean[0, :, d : d + 1], f_var[0, :, d : d + 1], y).numpy()
        twin_density += np.where(observed, lpd, 0.0)
    np.testing.assert_allclose(log_density.numpy(), twin_density, rtol=1e-10)


def test_one_likelihood_for_every_column_equals_the_plain_model():
    Y = _mixed()
    Y = np.where(np.isnan(Y), np.nan, (Y > 0.5).astype(float))  # binary everywhere
    plain, _ = _model(gpflow.likelihoods.Bernoulli(), columns=None, Y=Y)
    switched, _ = _model(gpflow.likelihoods.SwitchedLikelihood([gpflow.likelihoods.Bernoulli()]), np.zeros(6, int), Y=Y)
    data = plain.training_data()
    noise = np.random.default_rng(0).standard_normal((2, Y.shape[0], 2))
    assert float(switched.elbo_given_base_noise(data, noise)) == pytest.approx(
        float(plain.elbo_given_base_noise(data, noise)), rel=1e-12
    )
    x_mean, x_var = plain.training_latents()
    for a, b in zip(
        plain.predict_y_marginal(x_mean, x_var, num_samples=5),
        switched.predict_y_marginal(x_mean, x_var, num_samples=5),
    ):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12)
    np.testing.assert_allclose(
        plain.predict_log_density_marginal(Y, x_mean, x_var, num_samples=5).numpy(),
        switched.predict_log_density_marginal(Y, x_mean, x_var, num_samples=5).numpy(),
        rtol=1e-12,
    )


def test_ordinal_probabilities_and_predictions_match_closed_form_and_monte_carlo():
    lik = Ordinal(EDGES, sigma=0.7)
    F = np.array([-3.0, 0.3, 2.0, 4.0, 9.0])[:, None]
    V = np.array([0.1, 0.5, 0.2, 1.0, 0.3])[:, None]
    Y = np.array([0.0, 0.0, 2.0, 4.0, 4.0])[:, None]
    X = np.zeros((5, 1))
    edges = np.r_[-np.inf, EDGES, np.inf]
    scale = np.sqrt(0.49 + V)
    probs = norm.cdf((edges[None, 1:] - F) / scale) - norm.cdf((edges[None, :-1] - F) / scale)  # [5, K]
    np.testing.assert_allclose(
        lik.predict_log_density(X, F, V, Y).numpy(), np.log(probs[range(5), Y[:, 0].astype(int)]), rtol=1e-10
    )
    mean, var = lik.predict_mean_and_var(X, F, V)
    k = np.arange(5)
    np.testing.assert_allclose(mean.numpy()[:, 0], probs @ k, rtol=1e-10)
    np.testing.assert_allclose(var.numpy()[:, 0], probs @ k**2 - (probs @ k) ** 2, rtol=1e-8, atol=1e-12)
    f = F[:, 0] + np.sqrt(V[:, 0]) * np.random.default_rng(0).standard_normal((400_000, 1))
    mc = _log_prob(lik, f, Y[:, 0].astype(int)).mean(axis=0)
    np.testing.assert_allclose(lik.variational_expectations(X, F, V, Y).numpy(), mc, rtol=2e-3, atol=3e-3)
    with tf.GradientTape() as tape:
        value = tf.reduce_sum(lik.variational_expectations(X, F, V, Y))
    grads = tape.gradient(value, [lik.bin_edges.unconstrained_variable, lik.sigma.unconstrained_variable])
    assert all(np.all(np.isfinite(g.numpy())) for g in grads)


@pytest.mark.parametrize("dtype, rtol, atol", [(np.float64, 1e-10, 1e-16), (np.float32, 1e-4, 1e-7)])
def test_log_normal_cdf_matches_scipy_over_both_tails(dtype, rtol, atol):
    """log Φ with one erfc per point and the asymptotic series in the far lower tail equals scipy's log_ndtr from
    x = -1000 to 100, with the gradient φ(x)/Φ(x) finite and exact."""
    from scipy.special import log_ndtr

    from gpflow_ext.likelihoods.ordinal import _log_ndtr

    x = np.concatenate([-np.logspace(-3, 3, 600), np.linspace(-40, 40, 1601), np.logspace(-3, 2, 200)]).astype(dtype)
    reference = log_ndtr(x.astype(np.float64))
    x_tf = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(x_tf)
        value = _log_ndtr(x_tf)
    grad = tape.gradient(value, x_tf).numpy().astype(np.float64)
    assert value.dtype == x_tf.dtype
    np.testing.assert_allclose(value.numpy().astype(np.float64), reference, rtol=rtol, atol=atol)
    mills = np.exp(norm.logpdf(x.astype(np.float64)) - reference)  # d/dx log Φ(x)
    assert np.all(np.isfinite(grad))
    np.testing.assert_allclose(grad, mills, rtol=100 * rtol, atol=atol)


def test_ordinal_log_prob_is_exact_in_every_bin_far_from_the_edges():
    """log p(y | f) of every class, f far inside and far outside the edges (end bins at ∓∞), against scipy."""
    from scipy.special import log_ndtr

    lik = Ordinal(EDGES, sigma=0.3)
    F = np.array([-60.0, -5.0, 0.0, 1.0, 2.2, 3.0, 7.0, 60.0])
    edges = np.r_[-np.inf, EDGES, np.inf]
    for k in range(5):
        Y = np.full_like(F, k)
        upper, lower = (edges[k + 1] - F) / 0.3, (edges[k] - F) / 0.3
        # log(Φ(u) - Φ(l)) from the tail where both are small
        flip = lower > 0
        hi, lo = np.where(flip, -lower, upper), np.where(flip, -upper, lower)
        a, b = log_ndtr(hi), log_ndtr(lo)
        reference = a + np.log1p(-np.exp(b - a))
        F_tf = tf.constant(F[:, None])
        with tf.GradientTape() as tape:
            tape.watch(F_tf)
            value = lik.log_prob(np.zeros((8, 1)), F_tf, tf.constant(Y[:, None]))
        np.testing.assert_allclose(value.numpy(), reference, rtol=1e-10, atol=1e-14)
        assert np.all(np.isfinite(tape.gradient(value, F_tf).numpy()))


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        (dict(likelihood_columns=np.zeros(5, int)), ValueError, "likelihood_columns must have shape"),
        (dict(likelihood_columns=np.zeros(6)), TypeError, "likelihood_columns must hold integers"),
        (dict(likelihood_columns=np.full(6, 3)), ValueError, r"likelihood_columns must lie in \[0, 3\)"),
        (dict(likelihood_columns=np.full(6, -1)), ValueError, "likelihood_columns must lie"),
        (
            dict(likelihood=gpflow.likelihoods.Bernoulli(), likelihood_columns=np.zeros(6, int)),
            ValueError,
            "likelihood_columns is only for",
        ),
        (
            dict(
                likelihood=gpflow.likelihoods.SwitchedLikelihood([gpflow.likelihoods.Softmax(3)]),
                likelihood_columns=np.zeros(6, int),
            ),
            TypeError,
            r"likelihood.likelihoods\[0\] must be",
        ),
    ],
)
def test_bad_column_arguments_are_refused_by_name(kwargs, error, match):
    kwargs.setdefault("likelihood", _switched())
    with pytest.raises(error, match=match):
        GPLVF(_mixed(), 2, 4, **kwargs)


@pytest.mark.parametrize("bad", [dict(bin_edges=[1.0, 0.5]), dict(bin_edges=[]), dict(bin_edges=[0.5], sigma=0.0)])
def test_bad_ordinal_arguments_are_refused_by_name(bad):
    with pytest.raises(ValueError, match="bin_edges|sigma"):
        Ordinal(**bad)


def _ordinal_data(seed=0):
    Y = _mixed(seed=seed)[:, [2, 5]]
    return np.hstack([Y, Y[:, ::-1]])


BUILDS = {
    "ordinal": lambda: GPLVF(_ordinal_data(), 2, 4, likelihood=Ordinal(EDGES), seed=0),
    "switched": lambda: GPLVF(_mixed(), 2, 4, likelihood=_switched(), likelihood_columns=COLUMNS, seed=0),
}


@pytest.mark.parametrize("prec", [np.float64, np.float32])
@pytest.mark.parametrize("name", sorted(BUILDS))
def test_trains_checkpoints_copies_and_serves(name, prec, tmp_path):
    atol = 1e-10 if prec is np.float64 else 1e-5
    with gpflow.config.as_context(gpflow.config.Config(float=prec)):
        model = BUILDS[name]()
        history = fit(model, model.training_data(), epochs=3, batch_size=6, learning_rate=0.03, progress=False)
        assert np.all(np.isfinite(history.objective))
        assert {v.dtype for v in model.trainable_variables} == {tf.as_dtype(prec)}
        x_mean, x_var = (np.asarray(a, prec) for a in model.training_latents())
        noise = model.base_noise(x_mean.shape[0], 4, seed=1).astype(prec)
        expected = [t.numpy() for t in model.predict_y_marginal_given_base_noise(x_mean, x_var, noise)]
        assert all(e.dtype == prec and np.all(np.isfinite(e)) for e in expected)

        path = tf.train.Checkpoint(model=model).write(str(tmp_path / "ckpt"))
        fresh = BUILDS[name]()
        tf.train.Checkpoint(model=fresh).read(path).assert_consumed()
        copy = gpflow.utilities.deepcopy(model)
        loaded = tf.saved_model.load(str(export(model, tmp_path / "saved")))
        for other in (fresh, copy):
            got = other.predict_y_marginal_given_base_noise(x_mean, x_var, noise)
            for e, g in zip(expected, got):
                np.testing.assert_allclose(g.numpy(), e, rtol=0, atol=atol)
        for e, g in zip(expected, loaded.predict_y_marginal(x_mean, x_var, noise)):
            np.testing.assert_allclose(g.numpy(), e, rtol=0, atol=atol)


def test_discrete_rating_metrics_match_a_brute_force_twin():
    """The discrete-rating log-probability (eq. 33 over rows) and interval coverage, against scipy's normal cdf for a
    Gaussian model (density integrated over unit bins, open ends) at the same draws; an ordinal model's equals its
    own test log-likelihood."""
    import scipy.sparse as sp
    from scipy.special import logsumexp

    from gpflow_ext.recipes.gplvf_likelihoods import discrete_rating_metrics

    rng = np.random.default_rng(0)
    ratings = rng.integers(1, 6, (10, 6)).astype(float)
    target = sp.csr_matrix(np.where(rng.random(ratings.shape) < 0.4, ratings, 0.0))
    train = np.where(target.toarray() > 0, np.nan, ratings - 3.0)
    model = GPLVF(train, 2, 4, seed=0)
    model.q_mu.assign(0.7 * rng.standard_normal(model.q_mu.shape))
    x_mean, x_var = model.training_latents()
    t = target.tocoo()
    offsets = 3.0 + 0.1 * np.arange(t.nnz)
    got = discrete_rating_metrics(model, x_mean, x_var, target, np.arange(1, 6), offsets, num_samples=7, seed=2)

    x = model.latent_draws(x_mean, x_var, model.base_noise(10, 7, seed=2))
    f_mean, f_var = (a.numpy()[:, t.row, t.col] for a in model.predict_f(x))  # [J, T]
    mean, scale = f_mean + offsets, np.sqrt(f_var + model.likelihood.variance.numpy())
    edges = np.r_[-np.inf, 1.5, 2.5, 3.5, 4.5, np.inf]
    probs = norm.cdf((edges[None, None, 1:] - mean[..., None]) / scale[..., None]) - norm.cdf(
        (edges[None, None, :-1] - mean[..., None]) / scale[..., None]
    )  # [J, T, 5]
    k = t.data.astype(int) - 1
    log_true = np.log(probs[:, np.arange(t.nnz), k])  # [J, T]
    joint = [logsumexp(log_true[:, t.row == n].sum(axis=1)) - np.log(7) for n in np.unique(t.row)]
    assert got["test_logprob_discrete"] == pytest.approx(np.sum(joint) / t.nnz, rel=1e-8)
    cdf = np.cumsum(probs.mean(axis=0), axis=-1)
    for level, a in ((50, 0.5), (90, 0.9)):
        inside = [
            min(np.flatnonzero(c >= (1 - a) / 2)) <= y <= min(np.flatnonzero(c >= (1 + a) / 2 - 1e-12))
            for c, y in zip(cdf, k)
        ]
        assert got[f"coverage_{level}"] == pytest.approx(np.mean(inside))
