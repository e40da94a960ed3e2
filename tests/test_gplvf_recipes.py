"""GPLVF recipes (gpflow_ext.recipes.gplvf, .movielens, .gplvf_images): training schedules, the KL choices, warm
starts, the MovieLens protocols and bias baseline, and the image-imputation run, on small data."""

import numpy as np
import pytest


def test_validation_split_never_touches_test_users():
    from gpflow_ext.recipes.movielens_data import split_users

    train, test, _ = split_users(943, 100, seed=3)
    v_train, v_heldout, _ = split_users(943, 100, seed=3, num_validation_users=100)
    assert len(train) == 843 and len(test) == 100 and len(v_train) == 743 and len(v_heldout) == 100
    assert not set(test) & set(train)
    # validation: held-out and training users are both drawn from the 843 training users only
    assert set(v_heldout) | set(v_train) == set(train)
    assert not set(v_heldout) & set(v_train)
    assert not (set(v_heldout) | set(v_train)) & set(test)
    # the rating split of the held-out users uses the same generator state either way
    _, _, rng_a = split_users(943, 100, seed=3)
    _, _, rng_b = split_users(943, 100, seed=3, num_validation_users=100)
    assert rng_a.integers(1 << 30) == rng_b.integers(1 << 30)
    assert not np.array_equal(split_users(943, 100, seed=4)[1], test)
    with pytest.raises(ValueError, match="num_validation_users"):
        split_users(943, 100, seed=0, num_validation_users=0)
    with pytest.raises(ValueError, match="leave no training users"):
        split_users(943, 100, seed=0, num_validation_users=843)
    # the literal split: the last 100 user ids are the test users, whatever the seed
    last_train, last_test, _ = split_users(943, 100, seed=5, test_users="last")
    np.testing.assert_array_equal(last_test, np.arange(843, 943))
    np.testing.assert_array_equal(last_train, np.arange(843))
    lv_train, lv_heldout, _ = split_users(943, 100, seed=5, num_validation_users=100, test_users="last")
    assert set(lv_train) | set(lv_heldout) == set(range(843)) and len(lv_heldout) == 100
    with pytest.raises(ValueError, match="test_users"):
        split_users(943, 100, seed=0, test_users="first")


def _toy_rows(rng, n=20, d=4, q=2, missing=0.3):
    X = rng.standard_normal((n, q))
    Y = np.sin(X) @ rng.standard_normal((q, d)) + 0.1 * rng.standard_normal((n, d))
    drop = rng.random(Y.shape) < missing
    drop[:, 0] = False
    Y[drop] = np.nan
    return Y


def test_natgrad_gamma_one_jumps_to_the_optimal_q_u_for_fixed_latent_samples():
    import tensorflow as tf

    from gpflow_ext.models import GPLVF
    from gpflow_ext.training import NaturalGradientUpdate, fit

    class FixedNoiseGPLVF(GPLVF):
        """The bound at fixed x samples (all rows, in order): conjugate in q(u)."""

        def elbo(self, data):
            return self.elbo_given_base_noise(data, self.fixed_noise)

    rng = np.random.default_rng(5)
    Y = _toy_rows(rng)
    model = FixedNoiseGPLVF(Y, 2, 5, flow=None, seed=2)
    data = model.training_data()
    model.fixed_noise = tf.constant(rng.standard_normal((3, 20, 2)))

    def loss():
        return model.training_loss(data)

    def q_u_gradients():
        with tf.GradientTape() as tape:
            value = loss()
        variables = [model.q_mu.unconstrained_variable, model.q_sqrt.unconstrained_variable]
        return value.numpy(), [g.numpy() for g in tape.gradient(value, variables)]

    start, (g_mu0, _) = q_u_gradients()
    fit(model, data, epochs=1, optimizer=NaturalGradientUpdate(1.0), variables=[model.q_mu, model.q_sqrt],
        shuffle=False, progress=False)  # one full-batch natural-gradient step of q(u) only
    after, (g_mu, g_sqrt) = q_u_gradients()
    assert after < start
    assert np.max(np.abs(g_mu)) < 1e-6 * max(1.0, np.max(np.abs(g_mu0)))
    assert np.max(np.abs(g_sqrt)) < 1e-6 * max(1.0, np.max(np.abs(g_mu0)))


def test_natgrad_training_trains_and_checks_gamma():
    """--natgrad-gamma: natural-gradient steps for q(u), Adam for the rest, through fit (NaturalGradientUpdate)."""
    import tensorflow as tf

    from gpflow_ext.bijectors import planar_flow
    from gpflow_ext.models import GPLVF
    from gpflow_ext.recipes.gplvf import train_gplvf, train_with_fit

    rng = np.random.default_rng(6)
    Y = _toy_rows(rng, n=30)
    model = GPLVF(Y, 2, 5, flow=planar_flow(1, 2), num_samples=2, seed=1)
    data = model.training_data()
    noise = tf.constant(rng.standard_normal((16, 30, 2)))
    start = model.elbo_given_base_noise(data, noise).numpy()
    z0 = model.inducing_variable.Z.numpy().copy()
    history = train_with_fit(model, epochs=15, batch_size=10, learning_rate=0.02, seed=0, natgrad_gamma=0.3)
    assert np.all(np.isfinite(history.objective)) and len(history.objective) == 15
    assert model.elbo_given_base_noise(data, noise).numpy() > start
    assert not np.allclose(model.inducing_variable.Z.numpy(), z0)  # Adam still trains the rest
    common = dict(latent_dim=2, num_inducing=5, epochs=2, batch_size=10, learning_rate=0.02, num_samples=1, seed=0)
    natgrad_model, natgrad_history = train_gplvf(Y, 0, natgrad_gamma=0.5, **common)
    adam_model, _ = train_gplvf(Y, 0, **common)
    assert np.all(np.isfinite(natgrad_history.objective))
    assert not np.allclose(natgrad_model.q_mu.numpy(), adam_model.q_mu.numpy())  # q(u) took other steps
    for bad in (-0.1, 1.5, float("nan")):
        with pytest.raises(ValueError, match="natgrad_gamma"):
            train_with_fit(GPLVF(Y, 2, 5), epochs=1, batch_size=10, learning_rate=0.01, seed=0, natgrad_gamma=bad)


@pytest.mark.parametrize("likelihood", ["gaussian", "ordinal"])
def test_shared_linear_mean_adds_one_function_of_x_to_the_per_output_mean(likelihood):
    """train_gplvf(shared_linear_mean=True): the model's mean at x is the per-output mean it would have had plus
    wᵀx, the same for every output; w starts at zero (the same bound at the start) and is trained."""
    import gpflow
    import tensorflow as tf

    from gpflow_ext.recipes.gplvf import train_gplvf, with_shared_linear_mean

    rng = np.random.default_rng(8)
    Y = _toy_rows(rng, n=30)
    if likelihood == "ordinal":
        Y = np.where(np.isnan(Y), np.nan, np.clip(np.round(Y + 2.0), 0, 4))
    common = dict(latent_dim=2, num_inducing=5, batch_size=10, learning_rate=0.02, num_samples=1, seed=0,
                  likelihood=likelihood)
    plain, _ = train_gplvf(Y, 0, epochs=0, **common)
    shared, _ = train_gplvf(Y, 0, epochs=0, shared_linear_mean=True, **common)
    x = tf.constant(rng.standard_normal((7, 2)))
    np.testing.assert_array_equal(shared.mean_function(x).numpy(), plain.mean_function(x).numpy())
    noise = tf.constant(rng.standard_normal((1, 30, 2)))
    data = plain.training_data()
    assert shared.elbo_given_base_noise(data, noise).numpy() == pytest.approx(
        plain.elbo_given_base_noise(data, noise).numpy(), rel=1e-12)
    trained, history = train_gplvf(Y, 0, epochs=3, shared_linear_mean=True, **common)
    assert np.all(np.isfinite(history.objective))
    per_output, linear = trained.mean_function.add_1, trained.mean_function.add_2
    w = linear.A.numpy()  # [Q, 1]
    assert w.shape == (2, 1) and np.any(w != 0)
    expected = per_output(x).numpy() + x.numpy() @ w  # [7, D]: one function of x added to every output
    np.testing.assert_allclose(trained.mean_function(x).numpy(), expected, rtol=1e-12)
    assert not linear.b.trainable
    with pytest.raises(ValueError, match="latent_dim"):
        with_shared_linear_mean(gpflow.mean_functions.Zero(), 0)


def test_base_gaussian_kl_ablation_charges_only_the_base_gaussian():
    """The ablation's KL is the base Gaussian's (flow ignored); the model's own KL differs by the flow's terms."""
    import tensorflow as tf

    from gpflow_ext.bijectors import planar_flow
    from gpflow_ext.kullback_leiblers import gaussian_kl_to_standard_normal
    from gpflow_ext.models import GPLVF
    from gpflow_ext.recipes.gplvf import BaseGaussianKLAblation, train_gplvf

    rng = np.random.default_rng(7)
    Y = _toy_rows(rng, n=12)
    mu, var = tf.constant(rng.standard_normal((12, 2))), tf.constant(rng.uniform(0.1, 0.5, (12, 2)))
    noise = tf.constant(rng.standard_normal((4000, 12, 2)))
    flow = planar_flow(3, 2, seed=3)
    for v in flow.trainable_variables:  # a flow well away from the identity
        v.assign(rng.normal(0.0, 1.0, v.shape))
    ablation = GPLVF(Y, 2, 5, flow=flow, seed=1, kl_x=BaseGaussianKLAblation())
    correct = GPLVF(Y, 2, 5, flow=flow, seed=1)
    x_a, kl_a = ablation.latent_samples_and_kl(mu, var, noise)
    x_c, kl_c = correct.latent_samples_and_kl(mu, var, noise)
    np.testing.assert_array_equal(x_a.numpy(), x_c.numpy())  # same samples through the same flow
    np.testing.assert_allclose(kl_a.numpy(), gaussian_kl_to_standard_normal(mu, var).numpy(), rtol=1e-12)
    assert np.max(np.abs(kl_a.numpy() - kl_c.numpy())) > 0.05  # the flow's volume change is what it leaves out
    with pytest.raises(ValueError, match="kl_x"):
        train_gplvf(None, 0, latent_dim=2, num_inducing=5, epochs=1, batch_size=4, learning_rate=0.01,
                    num_samples=1, seed=0, kl_x="base")


def test_training_learning_rate_decay():
    """--lr-decay cosine: Adam's rate falls from the given value to 0 over all training steps."""

    from gpflow_ext.recipes.gplvf import train_gplvf
    from gpflow_ext.training import decayed_learning_rate

    assert decayed_learning_rate(0.01, "constant", 100) == 0.01
    schedule = decayed_learning_rate(0.01, "cosine", 100)
    np.testing.assert_allclose([float(schedule(s)) for s in (0, 50, 100, 150)], [0.01, 0.005, 0.0, 0.0], rtol=1e-6, atol=1e-9)
    with pytest.raises(ValueError, match="lr_decay must be 'constant' or 'cosine'"):
        decayed_learning_rate(0.01, "linear", 100, name="lr_decay")
    rng = np.random.default_rng(8)
    Y = _toy_rows(rng, n=30)
    model, history = train_gplvf(
        Y, 1, latent_dim=2, num_inducing=5, epochs=12, batch_size=10, learning_rate=0.02, num_samples=2, seed=0,
        lr_decay="cosine",
    )
    objective = np.asarray(history.objective)  # training loss (negative bound) per epoch
    assert np.all(np.isfinite(objective)) and objective[-1] < objective[0]
    assert history.steps[-1] == 12 * 3  # ceil(30 / 10) steps per epoch: the decay runs over all of them


def test_group_learning_rates_move_each_group_at_its_own_rate():
    """--flow-learning-rate / --local-learning-rate: the flow's shared λ and the rows' (μ_n, s_n) get their own
    Adam; everything else keeps --learning-rate."""
    from gpflow_ext.recipes.gplvf import train_gplvf

    Y = _toy_rows(np.random.default_rng(9), n=30)
    common = dict(latent_dim=2, num_inducing=5, epochs=4, batch_size=10, learning_rate=0.02, num_samples=2, seed=0)
    initial, _ = train_gplvf(Y, 2, **{**common, "epochs": 0})
    reference, _ = train_gplvf(Y, 2, **common)
    flow_frozen, _ = train_gplvf(Y, 2, group_learning_rates={"flow": 1e-12}, **common)
    local_frozen, _ = train_gplvf(Y, 2, group_learning_rates={"local": 1e-12}, **common)

    def moved(a, b):
        return max(np.abs(x.numpy() - y.numpy()).max() for x, y in zip(a, b))

    flow = lambda m: m.flow.trainable_variables  # noqa: E731
    local = lambda m: [m.X_mean, m.X_var]  # noqa: E731
    kernel = lambda m: m.kernel.trainable_variables  # noqa: E731
    # a vanishing rate leaves its group at the initial values (an Adam step is at most about the rate) ...
    assert moved(flow(flow_frozen), flow(initial)) < 1e-10 and moved(local(local_frozen), local(initial)) < 1e-10
    # ... while the other groups train, and the default run moves everything
    assert moved(local(flow_frozen), local(initial)) > 1e-3 and moved(flow(local_frozen), flow(initial)) > 1e-3
    assert moved(kernel(flow_frozen), kernel(initial)) > 1e-3 and moved(kernel(local_frozen), kernel(initial)) > 1e-3
    assert moved(flow(reference), flow(initial)) > 1e-3 and moved(local(reference), local(initial)) > 1e-3
    # with natural gradients for q(u) the groups keep their rates for everything else
    natgrad_flow_frozen, _ = train_gplvf(Y, 2, group_learning_rates={"flow": 1e-12}, natgrad_gamma=0.5, **common)
    assert moved(flow(natgrad_flow_frozen), flow(initial)) < 1e-10
    assert moved(local(natgrad_flow_frozen), local(initial)) > 1e-3
    with pytest.raises(ValueError, match="group_learning_rates\\['flow'\\] must be"):
        train_gplvf(Y, 2, group_learning_rates={"flow": -1.0}, **common)
    with pytest.raises(ValueError, match="needs a model with a flow"):
        train_gplvf(Y, 0, group_learning_rates={"flow": 0.01}, **common)
    with pytest.raises(ValueError, match="not among the groups"):
        train_gplvf(Y, 2, group_learning_rates={"kernel": 0.01}, **common)


def test_warm_start_copies_the_gaussian_model_into_a_flow_model():
    """--warm-start-epochs: a flow model built from a trained Gaussian-q(X) model starts with all of its parameters,
    so its bound starts next to the Gaussian's (the flow starts near the identity)."""
    import tensorflow as tf

    from gpflow_ext.recipes.gplvf import train_gplvf

    Y = _toy_rows(np.random.default_rng(10), n=30)
    common = dict(latent_dim=2, num_inducing=5, batch_size=10, learning_rate=0.02, num_samples=2, seed=0)
    warm, _ = train_gplvf(Y, 0, epochs=5, **common)
    cold, _ = train_gplvf(Y, 3, epochs=0, **common)
    started, _ = train_gplvf(Y, 3, epochs=0, warm_start=warm, **common)
    for name in ("X_mean", "X_var", "q_mu", "q_sqrt"):
        np.testing.assert_allclose(getattr(started, name).numpy(), getattr(warm, name).numpy(), rtol=1e-12, err_msg=name)
        assert not np.array_equal(getattr(cold, name).numpy(), getattr(warm, name).numpy()), name
    for part in ("kernel.lengthscales", "kernel.variance", "inducing_variable.Z", "likelihood.variance", "mean_function.c"):
        a, b = started, warm
        for attribute in part.split("."):
            a, b = getattr(a, attribute), getattr(b, attribute)
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12, err_msg=part)
    noise = tf.constant(np.random.default_rng(0).standard_normal((64, 30, 2)))
    data = warm.training_data()
    warm_bound = float(warm.elbo_given_base_noise(data, noise))
    started_bound = float(started.elbo_given_base_noise(data, noise))
    cold_bound = float(cold.elbo_given_base_noise(data, noise))
    assert abs(started_bound - warm_bound) < 0.01 * abs(warm_bound - cold_bound)
    continued, _ = train_gplvf(Y, 3, epochs=2, warm_start=warm, **common)
    assert np.all(np.isfinite(continued.X_mean.numpy()))
    with pytest.raises(ValueError, match="warm_start must be a Gaussian-q"):
        train_gplvf(Y, 3, epochs=0, warm_start=started, **common)


def test_plain_monte_carlo_choice_builds_the_old_estimator_for_flows_only():
    from gpflow_ext.bijectors import planar_flow
    from gpflow_ext.kullback_leiblers import AnalyticGaussianKL, MonteCarloFlowKL
    from gpflow_ext.models import GPLVF
    from gpflow_ext.recipes.gplvf import KL_X_CHOICES

    Y = _toy_rows(np.random.default_rng(11), n=12)
    flow = planar_flow(2, 2)
    plain = GPLVF(Y, 2, 4, flow=flow, kl_x=KL_X_CHOICES["plain-monte-carlo"](flow)).kl_x
    assert isinstance(plain, MonteCarloFlowKL) and not plain.base_in_closed_form
    assert isinstance(GPLVF(Y, 2, 4, kl_x=KL_X_CHOICES["plain-monte-carlo"](None)).kl_x, AnalyticGaussianKL)
    correct = GPLVF(Y, 2, 4, flow=flow, kl_x=KL_X_CHOICES["correct"](flow)).kl_x
    assert isinstance(correct, MonteCarloFlowKL) and correct.base_in_closed_form




def test_bias_baseline_and_centring_are_the_regularised_least_squares_fit():
    import scipy.sparse as sp

    from gpflow_ext.recipes.movielens_data import bias_baseline, centre, fit_biases, row_biases, subtract_biases

    rng = np.random.default_rng(12)
    dense = np.where(rng.random((15, 9)) < 0.5, rng.integers(1, 6, (15, 9)).astype(float), 0.0)
    dense[:, 0] = 3.0
    train = sp.csr_matrix(dense)
    mu, b_u, b_i = fit_biases(train, reg=5.0, iters=50)
    coo = train.tocoo()
    # the fixed point of alternating ridge regressions: each half-step leaves it where it is
    np.testing.assert_allclose(row_biases(train, mu, b_i), b_u, atol=1e-6)
    np.testing.assert_allclose(row_biases(train.T, mu, b_u), b_i, atol=1e-6)
    residual = subtract_biases(train, mu, b_u, b_i).tocoo()
    np.testing.assert_allclose(residual.data, coo.data - mu - b_u[coo.row] - b_i[coo.col])
    model_train, _, biases = centre(train, None, "bias")
    assert biases[0] == mu and np.isfinite(bias_baseline(train, train)["rmse"])
    assert centre(train, None, "none")[0] is train
    with pytest.raises(ValueError, match="center"):
        centre(train, None, "median")


def test_protocol_a_runs_on_a_small_slice(data_dir, dataset_path, tmp_path):
    dataset_path("movielens-100k", "u.data.gz")
    from gpflow_ext.data import load_movielens
    from gpflow_ext.data.movielens import ratings_matrix
    from gpflow_ext.recipes.gplvf import GPLVFTraining
    from gpflow_ext.recipes.movielens import ProtocolA, run_protocol_a
    from gpflow_ext.recipes.movielens_data import small_slice

    ratings = small_slice(ratings_matrix(load_movielens(data_dir, split=None, download=False).ratings))
    training = GPLVFTraining(latent_dim=2, num_inducing=5, epochs=2)
    config = ProtocolA(training=training, flows=(0, 2), num_test_users=10, infer_steps=5, predict_samples=5,
                       logdir=tmp_path)
    results = run_protocol_a(ratings, config, peer=lambda train, target: {"rmse": 1.0})
    assert set(results) == {"gaussian", "planar_2", "bias_baseline", "gpy_bgplvm_missing"}
    for name in ("gaussian", "planar_2", "bias_baseline"):
        assert np.isfinite(results[name]["rmse"]), name
    assert "flow_local_nonlinearity" in results["planar_2"] and "flow_local_nonlinearity" not in results["gaussian"]
    assert list((tmp_path / "a_planar_2").rglob("events.out.tfevents.*"))
    # the training seed changes the models, not the held-out split
    other = run_protocol_a(ratings, ProtocolA(training=GPLVFTraining(latent_dim=2, num_inducing=5, epochs=2, seed=1),
                                              flows=(0,), num_test_users=10, infer_steps=5, predict_samples=5))
    assert other["gaussian"]["num_test"] == results["gaussian"]["num_test"]
    assert other["bias_baseline"]["rmse"] == results["bias_baseline"]["rmse"]
    assert other["gaussian"]["rmse"] != results["gaussian"]["rmse"]


def test_protocol_b_validation_scores_part_of_the_base_and_never_the_test_split(data_dir, dataset_path):
    dataset_path("movielens-100k", "u.data.gz")
    from gpflow_ext.data import load_movielens
    from gpflow_ext.data.movielens import ratings_matrix
    from gpflow_ext.recipes.gplvf import GPLVFTraining
    from gpflow_ext.recipes.movielens import ProtocolB, run_protocol_b
    from gpflow_ext.recipes.movielens_data import small_slice

    base = small_slice(ratings_matrix(load_movielens(data_dir, split=None, download=False).ratings))
    training = GPLVFTraining(latent_dim=2, num_inducing=5, epochs=1)
    config = ProtocolB(training=training, flows=(0,), predict_samples=5, validation_fraction=0.25, seed=3)
    fit_part, held_out = config.fit_and_scored(base, None, position=0)
    # a partition of each user's base ratings: every user keeps at least one rating to train on
    assert (fit_part + held_out - base).nnz == 0 and fit_part.multiply(held_out).nnz == 0
    assert np.all(np.diff(fit_part.indptr) >= 1)
    assert abs(held_out.nnz / base.nnz - 0.25) < 0.02
    again, _ = ProtocolB(training=training, validation_fraction=0.25, seed=3).fit_and_scored(base, None, 0)
    other, _ = ProtocolB(training=training, validation_fraction=0.25, seed=4).fit_and_scored(base, None, 0)
    assert (again != fit_part).nnz == 0 and (other != fit_part).nnz > 0  # the seed draws the held-out part
    results = run_protocol_b({"u1": (base, None)}, config)  # the test split is never read: None would fail
    row = results["u1"]
    assert row["scored"] == "validation" and row["num_scored"] == held_out.nnz
    assert np.isfinite(row["gaussian_rmse"]) and np.isfinite(row["bias_rmse"])
    assert config.fit_and_scored(base, "test", 0)[0] is not base
    plain = ProtocolB(training=training)
    assert plain.fit_and_scored(base, "test", 0) == (base, "test")
    for fraction in (-0.1, 1.0, float("nan")):
        with pytest.raises(ValueError, match="validation_fraction"):
            ProtocolB(training=training, validation_fraction=fraction)


def test_image_imputation_recipe_on_a_few_digits(tmp_path):
    from gpflow_ext.recipes.gplvf_images import digits_config, load_digits_images, run_imputation

    config = digits_config(True, epochs=1)
    config.num_inducing, config.flow_length, config.figure_dir = 8, 1, tmp_path
    results = run_imputation(load_digits_images(True)[:80], config)
    assert 0.3 < results["missing_fraction"] < 0.5 and results["num_rows"] == 80
    for key in ("gaussian_imputation_rmse", "flow_imputation_rmse", "mean_imputation_rmse"):
        assert 0 < results[key] < 1, key
    assert (tmp_path / "gplvf_mnist_figure1_latent_density.png").exists()


@pytest.mark.slow
def test_tour_setting_flow_beats_mean_imputation():
    from gpflow_ext.recipes.gplvf_images import digits_config, load_digits_images, run_imputation

    results = run_imputation(load_digits_images(True), digits_config(True))
    assert results["flow_imputation_rmse"] < results["mean_imputation_rmse"]
