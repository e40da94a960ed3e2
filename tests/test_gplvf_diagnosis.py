"""GPLVF's predictive diagnosis (gpflow_ext.recipes.gplvf_diagnosis), each measure against a brute-force twin
(loops over scipy densities, Monte Carlo draws of y, autodiff Jacobians, numpy covariances), the new-row start at
the flowed means, and the experiments.gplvf_flows command on a tiny slice (subprocess)."""
import json
import os
import subprocess
import sys
from pathlib import Path

import gpflow
import numpy as np
import pytest
import tensorflow as tf
import tensorflow_probability as tfp
from scipy import stats

from gpflow_ext.bijectors import planar_flow
from gpflow_ext.models import GPLVF
from gpflow_ext.recipes.gplvf import _best_training_latents
from gpflow_ext.recipes.gplvf_diagnosis import (
    bound_terms,
    entry_predictive_draws,
    gaussian_cdf,
    interval_coverage,
    latent_widths,
    mixture_cdf,
    mixture_log_density,
    noise_variance,
    predictive_measures,
    variance_decomposition,
)
from gpflow_ext.validation import check_observations

REPO = Path(__file__).resolve().parent.parent


def _mixture(rng, J=7, P=30):
    y = rng.standard_normal(P)
    f_mean = 0.8 * rng.standard_normal((J, P))
    f_var = rng.uniform(0.05, 0.6, (J, P))
    return y, f_mean, f_var, 0.3


def _draw_from_mixture(rng, f_mean, f_var, noise, size):
    """y ~ 1/J Σ_j N(m_j, v_j + σ²) per entry: [size, P]."""
    J, P = f_mean.shape
    j = rng.integers(J, size=(size, P))
    cols = np.arange(P)[None, :]
    return f_mean[j, cols] + np.sqrt(f_var[j, cols] + noise) * rng.standard_normal((size, P))


def test_mixture_log_density_matches_a_loop_over_scipy_densities():
    rng = np.random.default_rng(0)
    y, f_mean, f_var, noise = _mixture(rng)
    twin = [np.log(np.mean([stats.norm.pdf(y[p], f_mean[j, p], np.sqrt(f_var[j, p] + noise))
                            for j in range(f_mean.shape[0])])) for p in range(y.size)]
    np.testing.assert_allclose(mixture_log_density(y, f_mean, f_var, noise), twin, rtol=1e-12)
    # far in a tail the log-sum-exp keeps it finite where the loop underflows
    assert np.isfinite(mixture_log_density(y + 60.0, f_mean, f_var, noise)).all()


def test_mixture_cdf_and_coverage_against_monte_carlo_quantiles():
    rng = np.random.default_rng(1)
    y, f_mean, f_var, noise = _mixture(rng, P=40)
    draws = _draw_from_mixture(rng, f_mean, f_var, noise, 200_000)  # [S, P]
    cdf = mixture_cdf(y, f_mean, f_var, noise)
    np.testing.assert_allclose(cdf, np.mean(draws <= y, axis=0), atol=4e-3)  # binomial sd <= 1.2e-3
    for level in (0.5, 0.9):
        low, high = np.quantile(draws, [(1 - level) / 2, (1 + level) / 2], axis=0)  # [P] each
        inside = (y >= low) & (y <= high)
        clear = np.minimum(np.abs(cdf - (1 - level) / 2), np.abs(cdf - (1 + level) / 2)) > 0.01  # off the edges
        assert clear.sum() > 30
        exact = (cdf >= (1 - level) / 2) & (cdf <= (1 + level) / 2)
        np.testing.assert_array_equal(exact[clear], inside[clear])
        assert interval_coverage(cdf, level) == pytest.approx(np.mean(exact))


def test_coverage_is_nominal_when_the_values_come_from_the_predictive():
    rng = np.random.default_rng(2)
    _, f_mean, f_var, noise = _mixture(rng, J=5, P=20_000)
    y = _draw_from_mixture(rng, f_mean, f_var, noise, 1)[0]
    cdf = mixture_cdf(y, f_mean, f_var, noise)
    for level in (0.5, 0.9):
        se = np.sqrt(level * (1 - level) / y.size)
        assert abs(interval_coverage(cdf, level) - level) < 4 * se
    # the same values under a predictive with the noise shrunk 10x: intervals too narrow, coverage well below
    narrow = mixture_cdf(y, f_mean, 0.1 * f_var, 0.1 * noise)
    assert interval_coverage(narrow, 0.9) < 0.8


def test_gaussian_cdf_is_scipys_and_interval_coverage_checks_its_arguments():
    rng = np.random.default_rng(3)
    y, mean, var = rng.standard_normal(9), rng.standard_normal(9), rng.uniform(0.1, 2, 9)
    np.testing.assert_allclose(gaussian_cdf(y, mean, var), stats.norm.cdf(y, mean, np.sqrt(var)), rtol=1e-12)
    with pytest.raises(ValueError, match="level"):
        interval_coverage([0.5], 1.0)
    with pytest.raises(ValueError, match="cdf_values"):
        interval_coverage([], 0.5)
    with pytest.raises(ValueError, match="noise_variance"):
        mixture_cdf(np.zeros(2), np.zeros((3, 2)), np.ones((3, 2)), 0.0)


def test_variance_decomposition_sums_to_the_variance_of_monte_carlo_draws():
    rng = np.random.default_rng(4)
    _, f_mean, f_var, noise = _mixture(rng, J=6, P=5)
    parts = variance_decomposition(f_mean, f_var, noise)
    assert parts["total"] == pytest.approx(parts["noise"] + parts["gp"] + parts["latent"], rel=1e-14)
    draws = _draw_from_mixture(rng, f_mean, f_var, noise, 400_000)  # [S, P]
    assert parts["total"] == pytest.approx(np.mean(np.var(draws, axis=0)), rel=5e-3)
    assert parts["latent"] == pytest.approx(np.mean([np.var(f_mean[:, p]) for p in range(5)]), rel=1e-12)


def _model(rng, flow=None, n=20, d=6, q=2):
    X = rng.standard_normal((n, q))
    Y = np.sin(X) @ rng.standard_normal((q, d)) + 0.1 * rng.standard_normal((n, d))
    Y[rng.random(Y.shape) < 0.3] = np.nan
    Y[:, 0] = np.nan_to_num(Y[:, 0])
    return GPLVF(Y, q, 5, flow=flow, seed=0), Y


@pytest.mark.parametrize("flow_length", [0, 3])
def test_entry_draws_and_measures_agree_with_predict_y_marginal(flow_length):
    rng = np.random.default_rng(5)
    model, _ = _model(rng, planar_flow(flow_length, 2, init_scale=0.5) if flow_length else None)
    Y_test = rng.standard_normal((4, 6))
    Y_test[rng.random(Y_test.shape) < 0.4] = np.nan
    Y_test[:, 1] = 0.3
    x_mean, x_var = rng.standard_normal((4, 2)), rng.uniform(0.05, 0.5, (4, 2))
    y, f_mean, f_var = entry_predictive_draws(model, Y_test, x_mean, x_var, num_samples=11, seed=3)
    rows, cols = np.nonzero(~np.isnan(Y_test))
    np.testing.assert_array_equal(y, Y_test[rows, cols])
    mean, var = model.predict_y_marginal(x_mean, x_var, num_samples=11, seed=3)
    sigma2 = noise_variance(model)
    np.testing.assert_allclose(f_mean.mean(0), mean.numpy()[rows, cols], rtol=1e-10)
    np.testing.assert_allclose(f_var.mean(0) + f_mean.var(0) + sigma2, var.numpy()[rows, cols], rtol=1e-10)
    measures = predictive_measures(model, Y_test, x_mean, x_var, num_samples=11, seed=3)
    assert measures["num_entries"] == y.size
    assert measures["var_total"] == pytest.approx(np.mean(var.numpy()[rows, cols]), rel=1e-10)
    # the per-entry density of an entry alone in its row is eq. 33 (the model's own), on the same draws
    for k in range(0, y.size, 3):
        single = np.full((1, 6), np.nan)
        single[0, cols[k]] = y[k]
        args = (x_mean[[rows[k]]], x_var[[rows[k]]])
        eq33 = model.predict_log_density_marginal(single, *args, num_samples=11, seed=3).numpy()
        own = mixture_log_density(y[[k]], *entry_predictive_draws(model, single, *args, num_samples=11, seed=3)[1:],
                                  sigma2)
        np.testing.assert_allclose(own, eq33, rtol=1e-9)


def test_measures_refuse_a_likelihood_that_is_not_gaussian():
    rng = np.random.default_rng(6)
    Y = (rng.random((10, 4)) < 0.5).astype(float)
    model = GPLVF(Y, 2, 3, likelihood=gpflow.likelihoods.Bernoulli())
    with pytest.raises(TypeError, match="Gaussian likelihood"):
        predictive_measures(model, Y, np.zeros((10, 2)), np.ones((10, 2)))
    with pytest.raises(TypeError, match="GPLVF"):
        noise_variance(object())


def _planar_log_det_by_autodiff(flow, x0):
    x0 = tf.constant(x0)
    with tf.GradientTape() as tape:
        tape.watch(x0)
        x = flow.forward(x0)
    jacobian = tape.batch_jacobian(x, x0).numpy()  # [K, Q, Q]
    return np.linalg.slogdet(jacobian)[1], x.numpy()


def test_latent_widths_of_an_affine_flow_are_its_closed_form():
    rng = np.random.default_rng(7)
    L = np.array([[1.5, 0.0, 0.0], [0.4, 0.7, 0.0], [-0.3, 0.2, 2.0]])
    flow = tfp.bijectors.ScaleMatvecTriL(tf.constant(L))
    x_mean, x_var = rng.standard_normal((6, 3)), rng.uniform(0.1, 1.0, (6, 3))
    widths = latent_widths(flow, x_mean, x_var, num_samples=40_000, scale=[2.0, 1.0, 0.5])
    closed = [np.linalg.slogdet(L @ np.diag(s) @ L.T)[1] for s in x_var]
    assert widths["base_log_det"] == pytest.approx(np.mean(np.log(x_var).sum(1)), rel=1e-12)
    assert widths["entropy_log_det"] == pytest.approx(np.mean(closed), rel=1e-10)
    assert widths["sample_log_det"] == pytest.approx(np.mean(closed), abs=0.02)
    assert widths["entropy_log_det_scaled"] == pytest.approx(np.mean(closed) - 2 * np.log(2.0 * 1.0 * 0.5))
    plain = latent_widths(None, x_mean, x_var, num_samples=50)
    assert plain["entropy_log_det"] == pytest.approx(plain["base_log_det"], rel=1e-12)
    with pytest.raises(ValueError, match="num_samples"):
        latent_widths(None, x_mean, x_var, num_samples=3)


def test_latent_widths_of_a_planar_flow_match_autodiff_jacobians_and_numpy_covariances():
    rng = np.random.default_rng(8)
    flow = planar_flow(4, 2, init_scale=0.8, seed=1)
    x_mean, x_var = rng.standard_normal((3, 2)), rng.uniform(0.1, 1.0, (3, 2))
    S = 300
    widths = latent_widths(flow, x_mean, x_var, num_samples=S, seed=5)
    noise = np.random.default_rng(5).standard_normal((S, 3, 2))
    entropy, sample = [], []
    for n in range(3):
        log_det, x = _planar_log_det_by_autodiff(flow, x_mean[n] + np.sqrt(x_var[n]) * noise[:, n])
        entropy.append(np.log(x_var[n]).sum() + 2 * log_det.mean())
        sample.append(np.linalg.slogdet(np.cov(x, rowvar=False))[1])
    assert widths["entropy_log_det"] == pytest.approx(np.mean(entropy), rel=1e-10)
    assert widths["sample_log_det"] == pytest.approx(np.mean(sample), rel=1e-10)
    assert abs(widths["entropy_log_det"] - widths["base_log_det"]) > 0.05  # this flow changes the volume


def test_bound_terms_are_the_models_bound_on_the_same_draws():
    rng = np.random.default_rng(9)
    model, _ = _model(rng, planar_flow(2, 2, init_scale=0.5))
    terms = bound_terms(model, num_samples=4, seed=2)
    noise = model.base_noise(model.num_data, 4, 2)
    expected = model.elbo_given_base_noise(model.training_data(), tf.constant(noise)).numpy()
    assert terms["elbo"] == pytest.approx(expected, rel=1e-10)
    assert terms["kl_u"] == pytest.approx(float(model.prior_kl()), rel=1e-12) and terms["kl_x"] > 0


def test_new_rows_start_from_the_training_row_whose_flowed_mean_predicts_them():
    """With a flow that moves the latents far (a shift), the best-fitting training row is judged at g(μ_n)."""
    rng = np.random.default_rng(10)
    model, _ = _model(rng, tfp.bijectors.Shift(tf.constant([2.5, -2.0], dtype=tf.float64)), n=15)
    gpflow.utilities.multiple_assign(model, {".q_mu": rng.standard_normal((5, 6))})
    x_flowed = model.X_mean.numpy() + np.array([2.5, -2.0])
    Y_new = model.predict_f(tf.constant(x_flowed[[3, 7]]))[0].numpy()  # rows 3 and 7's noise-free predictions
    Y_new[:, 2] = np.nan
    start = _best_training_latents(model, *check_observations(Y_new))
    np.testing.assert_array_equal(start, model.X_mean.numpy()[[3, 7]])


def test_flows_command_small(data_dir, dataset_path, tmp_path):
    dataset_path("movielens-100k", "u.data.gz")
    out = tmp_path / "flows.json"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    completed = subprocess.run(
        [sys.executable, "-m", "experiments.gplvf_flows", "--smoke", "--flows", "0,2", "--seeds", "0",
         "--protocols", "a,b1", "--data-dir", str(data_dir), "--output", str(out), "--figure-dir", str(tmp_path)],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=1200)
    assert completed.returncode == 0, (completed.stdout + completed.stderr)[-5000:]
    runs = json.loads(out.read_text())["runs"]
    assert [(r["protocol"], r["flow_length"]) for r in runs] == [("a", 0), ("a", 2), ("b1", 0), ("b1", 2)]
    for run in runs:
        assert run["epochs"] == 1 and run["noise_variance"] > 0
        for key in ("coverage_50", "coverage_90"):
            assert 0 <= run["heldout"][key] <= 1 and 0 <= run["train"][key] <= 1
        assert np.isfinite([run["test_loglik"], run["heldout"]["log_density"], run["bound"]["elbo"],
                            run["widths_train"]["entropy_log_det"], run["widths_heldout"]["sample_log_det"]]).all()
    assert (tmp_path / "gplvf_flows_heldout.png").exists()
    resumed = subprocess.run(
        [sys.executable, "-m", "experiments.gplvf_flows", "--smoke", "--flows", "0", "--seeds", "0", "--protocols", "a",
         "--resume", "--data-dir", str(data_dir), "--output", str(out)],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert json.loads(out.read_text())["runs"] == runs  # nothing retrained, every stored run kept
    replot = subprocess.run([sys.executable, "-m", "experiments.gplvf_flows", "--plot-only", "--output", str(out),
                             "--figure-dir", str(tmp_path / "again")], cwd=REPO, env=env, capture_output=True,
                            text=True, timeout=600)
    assert replot.returncode == 0 and (tmp_path / "again" / "gplvf_flows_heldout.png").exists(), replot.stderr[-2000:]
    bad = subprocess.run([sys.executable, "-m", "experiments.gplvf_flows", "--protocols", "c", "--data-dir", "/x"],
                         cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert bad.returncode == 2 and "protocols must be" in bad.stderr
