"""MultiLabelBernoulli: quadrature vs Monte Carlo / adaptive quadrature, the negative-label
sampler, unbiasedness of the sub-sampled bound (eq. 23), and the dense GPflow interface."""
import numpy as np
import pytest
import scipy.integrate
import scipy.sparse as sp
import tensorflow as tf

import gpflow_ext  # noqa: F401  (registers dispatchers)
from gpflow_ext.likelihoods import MultiLabelBernoulli
from gpflow_ext.likelihoods import multilabel as ml


def _log_sigmoid(f):
    return -np.logaddexp(0.0, -f)


def _sparse(Y):
    coo = sp.coo_matrix(Y)
    order = np.lexsort((coo.col, coo.row))
    idx = np.stack([coo.row[order], coo.col[order]], axis=1).astype(np.int64)
    return tf.SparseTensor(idx, coo.data[order].astype(np.float64), coo.shape)


def test_expected_log_sigmoid_matches_monte_carlo_and_adaptive_quadrature(rng):
    mean = np.array([-30.0, -3.0, -0.5, 0.0, 0.7, 2.5, 12.0])
    var = np.array([4.0, 0.01, 1.0, 9.0, 0.5, 2.0, 25.0])
    gh = ml.expected_log_sigmoid(tf.constant(mean), tf.constant(var), num_points=60).numpy()
    # adaptive quadrature (brute force, 1e-10 accuracy)
    exact = np.array(
        [
            scipy.integrate.quad(
                lambda f, m=m, v=v: _log_sigmoid(f) * np.exp(-0.5 * (f - m) ** 2 / v) / np.sqrt(2 * np.pi * v),
                m - 12 * np.sqrt(v),
                m + 12 * np.sqrt(v),
                epsabs=1e-12,
                epsrel=1e-12,
                limit=200,
            )[0]
            for m, v in zip(mean, var)
        ]
    )
    np.testing.assert_allclose(gh, exact, rtol=1e-5, atol=2e-6)
    # Monte Carlo, 4e5 draws: agreement within 5 standard errors
    eps = rng.standard_normal((400_000, 1))
    samples = _log_sigmoid(mean + np.sqrt(var) * eps)
    mc, se = samples.mean(axis=0), samples.std(axis=0) / np.sqrt(samples.shape[0])
    assert np.all(np.abs(gh - mc) <= 5 * se + 1e-12), (gh, mc, se)
    # the default 20 points: within 2e-4 (absolute) at every one of these moments
    gh20 = ml.expected_log_sigmoid(tf.constant(mean), tf.constant(var)).numpy()
    np.testing.assert_allclose(gh20, exact, rtol=0, atol=2e-4)


def test_expected_log_sigmoid_is_finite_far_in_the_tails():
    mean = tf.constant([-1e4, 1e4, -800.0, 800.0])
    var = tf.constant([1e4, 1e4, 1.0, 1.0])
    with tf.GradientTape() as tape:
        tape.watch([mean, var])
        value = ml.expected_log_sigmoid(mean, var)
    grads = tape.gradient(value, [mean, var])
    assert np.all(np.isfinite(value.numpy()))
    assert all(np.all(np.isfinite(g.numpy())) for g in grads)
    np.testing.assert_allclose(value.numpy()[2], -800.0, rtol=1e-6)


def test_expected_sigmoid_matches_monte_carlo(rng):
    mean, var = np.array([-2.0, 0.3, 4.0]), np.array([3.0, 0.2, 1.0])
    gh = ml.expected_sigmoid(tf.constant(mean), tf.constant(var), num_points=40).numpy()
    samples = 1 / (1 + np.exp(-(mean + np.sqrt(var) * rng.standard_normal((1_000_000, 1)))))
    se = samples.std(axis=0) / 1000.0
    assert np.all(np.abs(gh - samples.mean(axis=0)) <= 5 * se)


def test_negative_sampler_draws_only_negatives_uniformly(rng):
    K = 9
    Y = np.zeros((4, K))
    Y[0, [1, 3, 4]] = 1
    Y[1, :] = 1  # no negatives at all
    Y[2, [0, 8]] = 1
    # row 3: no positives
    labels = _sparse(Y)
    S = 20_000
    negatives, num_negative = ml.sample_negative_labels(labels, S, tf.constant(rng.random((4, S))))
    negatives = negatives.numpy()
    np.testing.assert_array_equal(num_negative.numpy(), K - Y.sum(axis=1))
    for i in (0, 2, 3):
        expected = np.flatnonzero(Y[i] == 0)
        counts = np.array([(negatives[i] == k).sum() for k in range(K)])
        assert counts[Y[i] == 1].sum() == 0
        freq = counts[expected] / S
        np.testing.assert_allclose(freq, 1.0 / len(expected), atol=5 * np.sqrt(1.0 / len(expected) / S))


def _problem(rng, B=6, K=7, P=3):
    Y = (rng.random((B, K)) < 0.3).astype(float)
    Y[0] = 0.0
    Y[1, :] = 1.0
    Y[2, :] = 0.0
    Y[2, 4] = 1.0
    return (
        tf.constant(rng.normal(size=(B, P))),
        tf.constant(rng.uniform(0.1, 2.0, size=(B, P))),
        tf.constant(rng.normal(size=(K, P))),
        tf.constant(rng.normal(size=K)),
        Y,
    )


def test_full_bound_matches_per_label_brute_force(rng):
    h_mean, h_var, loadings, bias, Y = _problem(rng)
    ell = ml.multilabel_expected_log_likelihood(
        h_mean, h_var, loadings, bias, _sparse(Y), num_negative_samples=None, num_points=60
    ).numpy()
    m, s, phi, b = h_mean.numpy(), h_var.numpy(), loadings.numpy(), bias.numpy()
    brute = np.zeros(Y.shape[0])
    for i in range(Y.shape[0]):
        for k in range(Y.shape[1]):
            mu = phi[k] @ m[i] + b[k]  # eq. 21
            var = (phi[k] ** 2) @ s[i]
            sign = 1.0 if Y[i, k] else -1.0
            brute[i] += scipy.integrate.quad(
                lambda f: _log_sigmoid(sign * f) * np.exp(-0.5 * (f - mu) ** 2 / var) / np.sqrt(2 * np.pi * var),
                mu - 12 * np.sqrt(var),
                mu + 12 * np.sqrt(var),
                epsabs=1e-12,
                epsrel=1e-12,
            )[0]
    np.testing.assert_allclose(ell, brute, rtol=1e-7)
    # GPflow's dense Likelihood interface gives the same numbers
    likelihood = MultiLabelBernoulli(Y.shape[1], h_mean.shape[1], loadings.numpy(), bias.numpy(), 60)
    dense = likelihood.variational_expectations(None, h_mean, h_var, tf.constant(Y)).numpy()
    np.testing.assert_allclose(dense, brute, rtol=1e-7)


def test_sampled_bound_is_unbiased(rng):
    h_mean, h_var, loadings, bias, Y = _problem(rng)
    full = ml.multilabel_expected_log_likelihood(h_mean, h_var, loadings, bias, _sparse(Y)).numpy()
    replicas, S = 4000, 2
    B = Y.shape[0]
    tiled = np.tile(Y, (replicas, 1))  # each replica draws its own negatives
    estimates = ml.multilabel_expected_log_likelihood(
        tf.tile(h_mean, [replicas, 1]),
        tf.tile(h_var, [replicas, 1]),
        loadings,
        bias,
        _sparse(tiled),
        num_negative_samples=S,
        uniform=tf.constant(rng.random((B * replicas, S))),
    ).numpy().reshape(replicas, B)
    mean, se = estimates.mean(axis=0), estimates.std(axis=0) / np.sqrt(replicas)
    assert se[1] < 1e-12  # a row with no negatives is exact
    assert np.all(np.abs(mean - full) <= 4.5 * se + 1e-10), (mean, full, se)
    assert np.all(se <= 0.05 * np.abs(full) + 1e-12)  # the check has power
    # sampling with S >= K falls back to the exact bound
    exact = ml.multilabel_expected_log_likelihood(
        h_mean, h_var, loadings, bias, _sparse(Y), num_negative_samples=Y.shape[1]
    ).numpy()
    np.testing.assert_allclose(exact, full, rtol=1e-12)


def test_dense_interface_predictions_and_log_prob(rng):
    h_mean, h_var, loadings, bias, Y = _problem(rng)
    likelihood = MultiLabelBernoulli(Y.shape[1], 3, loadings.numpy(), bias.numpy(), 40)
    p, v = likelihood.predict_mean_and_var(None, h_mean, h_var)
    f_mean = h_mean.numpy() @ loadings.numpy().T + bias.numpy()
    f_var = h_var.numpy() @ (loadings.numpy() ** 2).T
    mc = np.mean(
        1 / (1 + np.exp(-(f_mean + np.sqrt(f_var) * rng.standard_normal((20000, 1, 1))))), axis=0
    )
    np.testing.assert_allclose(p.numpy(), mc, atol=0.01)
    np.testing.assert_allclose(v.numpy(), p.numpy() * (1 - p.numpy()))
    logp = likelihood.log_prob(None, h_mean, tf.constant(Y)).numpy()
    brute = np.sum(Y * _log_sigmoid(f_mean) + (1 - Y) * _log_sigmoid(-f_mean), axis=1)
    np.testing.assert_allclose(logp, brute, rtol=1e-12)
    lpd = likelihood.predict_log_density(None, h_mean, h_var, tf.constant(Y)).numpy()
    np.testing.assert_allclose(lpd, np.sum(np.log(np.where(Y == 1, p.numpy(), 1 - p.numpy())), axis=1))


def test_likelihood_bad_arguments():
    with pytest.raises(ValueError, match="num_labels"):
        MultiLabelBernoulli(0, 3)
    with pytest.raises(ValueError, match="loadings"):
        MultiLabelBernoulli(4, 3, loadings=np.zeros((3, 4)))
    with pytest.raises(ValueError, match="bias"):
        MultiLabelBernoulli(4, 3, bias=np.zeros(5))
    with pytest.raises(ValueError, match="NaN"):
        MultiLabelBernoulli(2, 1, loadings=np.array([[np.nan], [0.0]]))
    with pytest.raises(ValueError, match="num_points"):
        ml.gauss_hermite_normal(0)
