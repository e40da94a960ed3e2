"""The ``label-gps`` MLGPF recipe (and ``best``, its self-tuning form): one linear-kernel GP per label (Φ = I) on Z = X̃, TF-IDF rows.

Independent labels against MLGPF with an explicit, frozen Φ = I (bound with all labels and with sampled
negatives, predictions, gradients); the recipe's model against Bayesian one-vs-rest logistic regression
in weight space; a one-epoch run on Bibtex rows; the checks on bad settings."""

import dataclasses

import gpflow
import numpy as np
import pytest
import scipy.sparse as sp
import tensorflow as tf

from gpflow_ext.data.transforms import TfidfRows
from gpflow_ext.inducing_variables import BasisInducingPoints
from gpflow_ext.likelihoods import MultiLabelBernoulli
from gpflow_ext.likelihoods.multilabel import expected_log_sigmoid
from gpflow_ext.models import MLGPF
from gpflow_ext.recipes import mlgpf as recipe
from gpflow_ext.recipes import mlgpf_config as configs

K = 9


def _problem(seed=0, rows=60, cols=25):
    X = sp.random(rows, cols, density=0.25, format="csr", random_state=seed)
    Y = sp.random(rows, K, density=0.2, format="csr", random_state=seed + 1)
    Y.data[:] = 1.0
    return X, Y


def _pair(X, rank=12, seed=0):
    """The same model twice: ``independent_labels=True`` and an explicit Φ = I frozen."""
    rng = np.random.default_rng(seed)
    iv = BasisInducingPoints.from_data(X, rank=rank)
    kwargs = dict(
        bias=rng.normal(size=K), q_mu=rng.normal(size=(rank, K)), q_sigma=rng.uniform(0.1, 2.0, size=(rank, K))
    )
    independent = MLGPF(gpflow.kernels.Linear(variance=2.5), iv, K, K, X.shape[0], independent_labels=True, **kwargs)
    explicit = MLGPF(gpflow.kernels.Linear(variance=2.5), iv, K, K, X.shape[0], loadings=np.eye(K), **kwargs)
    gpflow.set_trainable(explicit.loadings, False)
    return independent, explicit


@pytest.mark.parametrize("negatives", [None, 3])
def test_independent_labels_equal_explicit_identity_loadings(negatives):
    X, Y = _problem()
    independent, explicit = _pair(X)
    independent.num_negative_samples = explicit.num_negative_samples = negatives
    data = independent.prepare_data(X, Y)
    assert independent.loadings is None
    with tf.GradientTape(persistent=True) as tape:
        a, b = independent.elbo(data), explicit.elbo(data)  # same seed: the same sampled negatives
    np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12)
    for va, vb in zip(independent.trainable_variables, explicit.trainable_variables):
        ga, gb = (tf.convert_to_tensor(g) for g in (tape.gradient(a, va), tape.gradient(b, vb)))  # IndexedSlices too
        assert np.all(np.isfinite(ga.numpy()))
        np.testing.assert_allclose(ga.numpy(), gb.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(
        independent.predict_utilities(X[:7]).numpy(), explicit.predict_utilities(X[:7]).numpy(), rtol=1e-12
    )
    for u, v in zip(independent.predict_y(X[:7]), explicit.predict_y(X[:7])):
        np.testing.assert_allclose(u.numpy(), v.numpy(), rtol=1e-12)
    assert len(independent.trainable_parameters) == len(explicit.trainable_parameters)


def test_full_rank_model_is_bayesian_one_vs_rest_logistic_regression():
    """R = D: the bound equals Σ_k (Σ_i E_{q(w_k)} log σ(±(w_kᵀx_i + b_k)) − KL[q(w_k) ‖ N(0, σ² I)]) in weight
    space."""
    X, Y = _problem(rows=40, cols=8)
    model, _ = _pair(X, rank=8)
    Xd, Yd = X.toarray(), Y.toarray()
    Vt = model.inducing_variable.basis.numpy()  # [D, D] orthonormal
    s2 = 2.5
    total = 0.0
    for k in range(K):
        mu, sig = model.q_mu.numpy()[:, k], model.q_sigma.numpy()[:, k]
        w_mean = Vt.T @ (s2 * mu)  # [D]
        w_cov = Vt.T @ np.diag(s2 * sig / (s2 + sig)) @ Vt  # [D, D]
        f_mean = Xd @ w_mean + model.bias.numpy()[k]
        f_var = np.einsum("nd,de,ne->n", Xd, w_cov, Xd)
        els = expected_log_sigmoid(tf.constant(f_mean), tf.constant(f_var)).numpy()
        data = np.sum(np.where(Yd[:, k] > 0, els, els - f_mean))
        D = Xd.shape[1]
        prior = s2 * np.eye(D)
        kl = 0.5 * (
            np.trace(np.linalg.solve(prior, w_cov))
            + w_mean @ np.linalg.solve(prior, w_mean)
            - D
            + np.linalg.slogdet(prior)[1]
            - np.linalg.slogdet(w_cov)[1]
        )
        total += data - kl
    np.testing.assert_allclose(model.elbo(model.prepare_data(X, Y)).numpy(), total, rtol=1e-9)


def test_best_recipe_is_an_ensemble_of_label_gps_auto_with_a_minimum_of_steps():
    """``best`` is a 3-seed ensemble of ``label-gps-auto`` trained for at least 1,000 steps, ranking by probability,
    on rows joined with 0.25 × the label probabilities of a first stage;
    an explicit ``epochs`` is trained as given, an explicit ``ensemble_size`` or ``rank_by_probability`` wins."""
    assert configs.RECIPES["best"] is configs.best_config
    best = configs.RECIPES["best"]("s-linear", "bibtex")
    auto = configs.label_gps_auto_config("s-linear", "bibtex")
    assert (
        best.as_dict()
        == dataclasses.replace(
            auto,
            min_steps=1000,
            ensemble_size=3,
            rank_by_probability=True,
            input_transform_choices=("tfidf", "l2"),
            label_score_weight=0.25,
        ).as_dict()
    )
    assert best.kernel_variance_grid == configs.AUTO_GRID and best.min_steps == configs.BEST_MIN_STEPS == 1000
    assert best.ensemble_size == configs.BEST_ENSEMBLE_SIZE == 3
    assert configs.RECIPES["best"]("s-linear", "bibtex", ensemble_size=1).ensemble_size == 1
    assert configs.RECIPES["best"]("s-linear", "bibtex", ensemble_size=None).ensemble_size == 3  # unset flag
    assert configs.RECIPES["best"]("s-linear", "bibtex", rank_by_probability=False).rank_by_probability is False
    assert best.with_min_steps(645).epochs == 500 and best.with_min_steps(4880).epochs == 100
    assert configs.RECIPES["best"]("s-linear", "bibtex", epochs=3).min_steps is None  # explicit flags win
    assert configs.RECIPES["best"]("s-linear", "bibtex", epochs=3, min_steps=50).min_steps == 50
    assert configs.RECIPES["best"]("s-linear", "bibtex", epochs=3, rank=50).rank == 50


def test_label_gps_recipe_builds_that_model():
    config = configs.RECIPES["label-gps"]("s-linear", "bibtex")
    assert config.basis_inducing and config.independent_labels and config.kernel_variance == 12.0
    assert config.rank == 2000 and config.learning_rate_decay == "cosine" and config.float32
    assert isinstance(config.input_transform, TfidfRows)
    assert configs.RECIPES["label-gps"]("s-linear", "bibtex", epochs=3, rank=50).rank == 50  # explicit flags win
    # 100 epochs, or the paper's where it trains fewer (the large corpora); unknown names get 100
    assert [
        configs.RECIPES["label-gps"]("s-linear", name).epochs for name in ("bibtex", "rcv1", "amazoncat", "other")
    ] == [100, 20, 15, 100]
    assert configs.RECIPES["label-gps"]("s-linear", "amazoncat", epochs=40).epochs == 40
    X, Y = _problem(rows=50, cols=30)
    model = recipe.build_mlgpf(config, TfidfRows().fit(X)(X), Y)
    assert isinstance(model.inducing_variable, BasisInducingPoints) and model.inducing_variable.num_inducing == 30
    assert model.num_latent_gps == K and model.loadings is None
    assert float(model.kernel.variance.numpy()) == 12.0 and not model.kernel.variance.trainable


def test_label_gps_one_epoch_on_bibtex_rows(dataset_path, data_dir, baselines):
    dataset_path("bibtex", "bibtex-train.arff.gz")
    (X, Y), (Xt, Yt) = recipe.load_xmc("bibtex", data_dir, max_rows=300)
    config = configs.RECIPES["label-gps"]("s-linear", "bibtex", epochs=1, batch_size=100)
    result = recipe.run_mlgpf(config, (X, Y), (Xt, Yt), progress=False)
    assert result["epochs_trained"] == 1 and result["config"]["independent_labels"]
    assert result["settings"]["num_latent_gps"] == Y.shape[1]  # as built: P = K, M = R = min(2000, N, D)
    assert result["settings"]["num_inducing"] == result["settings"]["rank"] == min(2000, *X.shape)
    # one epoch already beats ranking by the training label frequencies (P@1/3/5 35, 20, 15 vs 15, 9, 7 here)
    for k, margin in ((1, 10.0), (3, 5.0), (5, 4.0)):
        frequency = baselines.frequency_p_at_k(Y, Yt, k)
        assert result[f"P@{k}"] > frequency + margin, (k, result[f"P@{k}"], frequency)
    assert np.isfinite(result["final_bound"]) and result["final_bound"] < 0.0


def test_bad_settings_raise():
    with pytest.raises(ValueError, match="s-linear"):
        configs.label_gps_config("s-se")
    with pytest.raises(ValueError, match="basis_inducing"):
        configs.paper_config("linear", basis_inducing=True)
    with pytest.raises(ValueError, match="kernel_variance"):
        configs.paper_config("s-linear", kernel_variance=-1.0)
    with pytest.raises(ValueError, match="num_latent_gps must equal num_labels"):
        MultiLabelBernoulli(num_labels=5, num_latent_gps=3, independent_labels=True)
    with pytest.raises(ValueError, match="loadings must be None"):
        MultiLabelBernoulli(num_labels=3, num_latent_gps=3, loadings=np.eye(3), independent_labels=True)
