"""SV-DKL's schedule: the GP layer starts where the network ends (brute-force posterior twin, digits within
0.005 of the network for Toeplitz and circulant grids and free inducing points, a head's affine map), and each
stage is chosen on validation rows, never ending worse than where it started."""
import gpflow
import numpy as np
import pytest
import tensorflow as tf
from gpflow.keras import tf_keras

from gpflow_ext.data import load_digits
from gpflow_ext.inducing_variables.grid import interpolation_matrix
from gpflow_ext.models import SVDKL, SoftmaxNetwork
from gpflow_ext.recipes.svdkl import PAPER_SETTINGS, match_network, pretrain_and_fit, stratified_split
from gpflow_ext.recipes.svdkl_schedule import _Validation
from gpflow_ext.variational import CirculantGridPrior, FreeInducingPoints, KISSGPGrid
from gpflow_ext.variational.from_targets import latent_design_matrices, set_posterior_of_targets, set_shrunk_prior
from gpflow_ext.variational.grid_priors import toeplitz_prior_factors

F64 = gpflow.default_float()


def _net(d_in=5, q=3, seed=0):
    tf_keras.utils.set_random_seed(seed)
    return tf_keras.Sequential([tf_keras.Input((d_in,), dtype=F64),
                                tf_keras.layers.Dense(8, activation="tanh", dtype=F64),
                                tf_keras.layers.Dense(q, dtype=F64)])


@pytest.mark.parametrize("whiten", [True, False])
def test_posterior_of_targets_equals_the_dense_regression_posterior(rng, whiten):
    model = SVDKL(_net(), 3, num_data=50, inducing=KISSGPGrid(12), whiten=whiten)
    H = model.features(tf.constant(rng.normal(size=(40, 5))))  # [B, Q]
    targets = np.sin(3 * H.numpy()) * np.array([1.0, 2.0, 0.5])  # [B, J]
    fitted = set_posterior_of_targets(model.gps, H, targets, noise_fraction=0.01)
    Phi = latent_design_matrices(model.gps, H).numpy()  # [J, B, n]
    factors = toeplitz_prior_factors(model.inducing_variable, model.kernel.kernels, model.jitter)[0].numpy()
    for j in range(3):
        W = tf.sparse.to_dense(interpolation_matrix(model.inducing_variable, H.numpy()[:, j:j + 1])).numpy()
        K = factors[j]  # the variances were set to the targets' before Φ was read
        np.testing.assert_allclose(K[0, 0], targets[:, j].var() * 1.0 + model.jitter, rtol=1e-10)
        R = np.linalg.cholesky(K)
        design = W @ R if whiten else W
        np.testing.assert_allclose(Phi[j], design, atol=1e-12)
        prior_precision = np.eye(12) if whiten else np.linalg.inv(K)
        noise = 0.01 * targets[:, j].var()
        S = np.linalg.inv(design.T @ design / noise + prior_precision)
        mean = S @ design.T @ targets[:, j] / noise
        np.testing.assert_allclose(model.q.q_mu.numpy()[j], mean, rtol=1e-7, atol=1e-9)
        L = model.q.q_sqrt_factors[0].numpy()[j]
        np.testing.assert_allclose(L @ L.T, S, rtol=1e-6, atol=1e-12)
        np.testing.assert_allclose(fitted[:, j], design @ mean, rtol=1e-8, atol=1e-10)
    assert np.max(np.abs(fitted - targets)) < 0.1 * np.abs(targets).max()


def test_bad_targets_are_refused():
    model = SVDKL(_net(), 3, num_data=50, inducing=KISSGPGrid(8))
    H = model.features(tf.constant(np.zeros((4, 5))))
    with pytest.raises(ValueError, match=r"targets must have shape \[4, 3\]"):
        set_posterior_of_targets(model.gps, H, np.zeros((4, 2)))
    with pytest.raises(ValueError, match="noise_fraction"):
        set_posterior_of_targets(model.gps, H, np.zeros((4, 3)), noise_fraction=0.0)


@pytest.fixture(scope="module")
def digits_network():
    """The tour's network trained 3 epochs on digits (the same weights for every inducing choice)."""
    split = load_digits(test_fraction=0.25, seed=0)
    net = PAPER_SETTINGS["digits"].build_network(64, 10, seed=0)
    model = SVDKL(net, 10, num_data=len(split.X_train), inducing=KISSGPGrid(32))
    pretrain_and_fit(model, (split.X_train, split.y_train), network_epochs=3, gp_epochs=0, joint_epochs=0,
                     batch_size=128, validation_fraction=0.0)
    return split, [w.numpy() for w in net.weights]


@pytest.mark.parametrize("inducing", [lambda: KISSGPGrid(32), lambda: KISSGPGrid(32, prior=CirculantGridPrior()),
                                      lambda: FreeInducingPoints(32)], ids=["toeplitz", "circulant", "points"])
def test_dnn_gp_starts_at_the_networks_accuracy_on_digits(digits_network, inducing):
    split, weights = digits_network
    net = PAPER_SETTINGS["digits"].build_network(64, 10, seed=1)
    net.set_weights(weights)
    model = SVDKL(net, 10, num_data=len(split.X_train), inducing=inducing())
    network = SoftmaxNetwork(net)
    dnn = (network.predict_proba(split.X_test).argmax(1) == split.y_test).mean()
    before = (model.predict_proba(split.X_test, seed=0).argmax(1) == split.y_test).mean()
    match = match_network(model, network, split.X_train)
    after = model.evaluate(split.X_test, split.y_test, seed=0)
    assert abs(after["accuracy"] - dnn) <= 0.005, (after, dnn, before)
    assert match["logit_rmse"] < 0.1
    assert before < dnn - 0.05  # the untrained GP layer is far from the network: the match does the work


@pytest.mark.parametrize("inducing, spread", [(lambda: KISSGPGrid(32), 1e-4),
                                              (lambda: KISSGPGrid(32, prior=CirculantGridPrior()), 5e-3),
                                              (lambda: FreeInducingPoints(32), 5e-3)],
                         ids=["toeplitz", "circulant", "points"])
def test_a_linear_mean_starts_exactly_at_the_network_on_digits(digits_network, inducing, spread):
    """With a Linear class-score mean, the mean class scores are the network's to rounding and q(u) is a shrunk prior,
    so DNN+GP's probabilities differ from the network's only by the residual's small spread (on a Toeplitz grid
    ``f = W u`` exactly; the circulant ring's points beyond the grid and free inducing points keep their prior
    conditional's own variance)."""
    split, weights = digits_network
    net = PAPER_SETTINGS["digits"].build_network(64, 10, seed=1)
    net.set_weights(weights)
    model = SVDKL(net, 10, num_data=len(split.X_train), inducing=inducing(),
                  mean_function=gpflow.mean_functions.Linear(np.zeros((10, 10)), np.zeros(10)))
    network = SoftmaxNetwork(net)
    match = match_network(model, network, split.X_train, residual_scale=1e-4)
    assert match["logit_rmse"] < 1e-12
    np.testing.assert_allclose(model.q_mu.numpy(), 0.0)
    X = tf.constant(split.X_test)
    np.testing.assert_allclose(model.mean_function(model.raw_features(X)).numpy(), network.logits(X).numpy(),
                               atol=1e-12)
    P, P_dnn = model.predict_proba(split.X_test, seed=0), network.predict_proba(split.X_test)
    assert np.abs(P - P_dnn).max() < spread
    assert np.array_equal(P.argmax(1), P_dnn.argmax(1)) or abs((P.argmax(1) == split.y_test).mean()
                                                                 - (P_dnn.argmax(1) == split.y_test).mean()) <= 0.005


@pytest.mark.parametrize("whiten", [True, False])
@pytest.mark.parametrize("inducing", [lambda: KISSGPGrid(6), lambda: FreeInducingPoints(5)], ids=["grid", "points"])
def test_shrunk_prior_is_the_prior_scaled(rng, whiten, inducing):
    model = SVDKL(_net(), 3, num_data=50, inducing=inducing(), whiten=whiten)
    set_shrunk_prior(model.gps, 0.01)
    np.testing.assert_array_equal(model.q_mu.numpy(), 0.0)
    if isinstance(model.gps, KISSGPGrid):
        K = toeplitz_prior_factors(model.inducing_variable, model.kernel.kernels, model.jitter)[0].numpy()
        L = model.q.q_sqrt_factors[0].numpy()
    else:
        K = gpflow.covariances.Kuu(model.inducing_variable, model.kernel, jitter=model.jitter).numpy()
        L = model.gps.q_sqrt.numpy()
    for j in range(3):
        expected = 1e-4 * (np.eye(len(K[j])) if whiten else K[j])
        np.testing.assert_allclose(L[j] @ L[j].T, expected, rtol=1e-6, atol=1e-14)
    with pytest.raises(ValueError, match=r"scale must be a number in \(0, 1\]"):
        set_shrunk_prior(model.gps, 0.0)


def test_a_linear_mean_needs_a_dense_head():
    model = SVDKL(_net(q=2), 4, num_data=30, inducing=KISSGPGrid(8),
                  mean_function=gpflow.mean_functions.Linear(np.zeros((2, 4)), np.zeros(4)))
    head = tf_keras.layers.Lambda(lambda h: tf.concat([h, h], axis=1), dtype=F64)
    network = SoftmaxNetwork(model.feature_extractor, head)
    before = [v.numpy().copy() for v in model.trainable_variables]
    with pytest.raises(TypeError, match="network.head must be a tf_keras Dense layer or None"):
        match_network(model, network, np.zeros((10, 5)))
    assert all(np.array_equal(a, v.numpy()) for a, v in zip(before, model.trainable_variables))  # nothing changed


def test_a_linear_head_is_matched_with_its_bias(rng):
    X = rng.normal(size=(300, 5))
    model = SVDKL(_net(q=2), 4, num_data=300, inducing=KISSGPGrid(32))
    head = tf_keras.layers.Dense(4, dtype=F64)
    head.build((None, 2))
    head.set_weights([rng.normal(size=(2, 4)), rng.normal(size=4)])
    network = SoftmaxNetwork(model.feature_extractor, head)
    match_network(model, network, X)
    H = model.features(tf.constant(X))
    mean_f = model.latent_samples(H, 1, seed=tf.constant([0, 0], tf.int64))  # one draw: q(u) is nearly exact
    logits = model.likelihood.logits(mean_f)[0].numpy()
    reference = network.logits(tf.constant(X)).numpy()
    # the head's bias lies in the span of Wᵀ only up to its rank (C = 4 > Q = 2): compare class-score differences
    def centred(s):
        return s - s.mean(1, keepdims=True)
    residual = centred(logits - reference)
    assert np.std(residual - residual.mean(0)) < 0.05 * np.std(centred(reference))


def test_stages_never_end_worse_on_validation_and_report_their_epochs():
    split = load_digits(test_fraction=0.25, seed=1)
    model = SVDKL(PAPER_SETTINGS["digits"].build_network(64, 10, seed=1), 10, num_data=len(split.X_train),
                  inducing=KISSGPGrid(16))
    out = pretrain_and_fit(model, (split.X_train, split.y_train), network_epochs=2, gp_epochs=1, joint_epochs=2,
                           batch_size=128, joint_learning_rate=1e-2, test_data=(split.X_test, split.y_test))
    val = out["validation"]
    assert set(out["chosen_epoch"]) == {"network", "gp", "joint"}
    assert all(0 <= out["chosen_epoch"][s] <= 2 for s in out["chosen_epoch"])
    assert model.num_data == len(split.X_train) - round(0.1 * len(split.X_train))  # N of the rows trained on
    assert val["dnn_gp"]["nlp"] <= val["dnn"]["nlp"] + 0.005  # starts at the network, keeps the best epoch
    assert val["svdkl"]["nlp"] <= val["dnn_gp"]["nlp"] + 1e-12  # the joint stage's start is a candidate
    assert val["svdkl"]["accuracy"] >= val["dnn_gp"]["accuracy"]  # ... and no less accurate
    history = out["joint_history"]
    assert set(history.metrics) >= {"val_nlp", "val_accuracy"} and len(history.metrics["val_nlp"]) == 2
    # the model handed back is the chosen one: its validation NLP is the stage's best
    (_, _), (Xv, yv) = stratified_split(split.X_train, split.y_train, 0.1, 0)
    assert model.evaluate(Xv, yv, seed=0)["nlp"] == pytest.approx(val["svdkl"]["nlp"], abs=1e-12)


def test_a_stage_leaves_its_start_only_for_a_clear_validation_gain(rng):
    N = 400
    Y = rng.integers(0, 2, N)

    def probabilities(row_nlp):  # two classes, the true one at exp(-nlp) > 0.5: accuracy stays 1
        P = np.empty((N, 2))
        P[np.arange(N), Y], P[np.arange(N), 1 - Y] = np.exp(-row_nlp), 1 - np.exp(-row_nlp)
        return P

    start = np.full(N, 0.1)
    noise = 0.1 + 0.05 * np.where(np.arange(N) % 2 == 0, 1.0, -1.0) - 0.001  # lower by 0.001, sd 0.05
    clear = np.full(N, 0.05)
    for standard_errors in (2.0, 0.0):
        shown = {"P": probabilities(start)}
        rule = _Validation((np.zeros((N, 1)), Y), lambda X: shown["P"], gain_standard_errors=standard_errors)
        assert rule.score(None, 0) == pytest.approx(0.1)  # the start is always a candidate
        shown["P"] = probabilities(noise)
        change = noise - start  # brute force: the paired mean change against its standard error
        is_clear = change.mean() < -standard_errors * change.std(ddof=1) / np.sqrt(N)
        assert is_clear == (standard_errors == 0.0)
        assert rule.score(None, 1) == (pytest.approx(noise.mean()) if is_clear else np.inf)
        shown["P"] = probabilities(clear)
        assert rule.score(None, 2) == pytest.approx(0.05)
        one_wrong = np.where(np.arange(N) == 0, 0.7, 0.05)  # row 0 now below 0.5: a clear gain, one error
        shown["P"] = probabilities(one_wrong)
        assert rule.score(None, 3) == np.inf  # lost accuracy is never paid for by NLP


def test_bad_schedule_arguments_are_refused_before_training(rng):
    X, Y = rng.normal(size=(30, 5)), rng.integers(0, 3, 30)
    model = SVDKL(_net(), 3, num_data=30, inducing=KISSGPGrid(8))
    weights = [v.numpy().copy() for v in model.trainable_variables]
    with pytest.raises(ValueError, match="validation_fraction must be in"):
        pretrain_and_fit(model, (X, Y), validation_fraction=1.5)
    with pytest.raises(ValueError, match="patience"):
        pretrain_and_fit(model, (X, Y), patience=0)
    with pytest.raises(ValueError, match="gain_standard_errors"):
        pretrain_and_fit(model, (X, Y), gain_standard_errors=-1.0)
    with pytest.raises(ValueError, match="test_data"):
        pretrain_and_fit(model, (X, Y), test_data=(X, Y + 5))
    for before, v in zip(weights, model.trainable_variables):
        np.testing.assert_array_equal(before, v.numpy())


def test_a_linear_mean_takes_a_head_with_more_classes_than_features_exactly(rng):
    X = rng.normal(size=(300, 5))
    model = SVDKL(_net(q=2), 4, num_data=300, inducing=KISSGPGrid(16),
                  mean_function=gpflow.mean_functions.Linear(np.zeros((2, 4)), np.zeros(4)))
    head = tf_keras.layers.Dense(4, dtype=F64)
    head.build((None, 2))
    head.set_weights([rng.normal(size=(2, 4)), rng.normal(size=4)])  # the bias is outside the span of Wᵀ
    network = SoftmaxNetwork(model.feature_extractor, head)
    assert match_network(model, network, X)["logit_rmse"] < 1e-12
    P, P_dnn = model.predict_proba(X, seed=0), network.predict_proba(X)
    assert np.abs(P - P_dnn).max() < 1e-4


def test_a_bad_residual_scale_is_refused_before_the_model_changes():
    model = SVDKL(_net(q=2), 4, num_data=30, inducing=KISSGPGrid(8),
                  mean_function=gpflow.mean_functions.Linear(np.zeros((2, 4)), np.zeros(4)))
    head = tf_keras.layers.Dense(4, dtype=F64)
    head.build((None, 2))
    network = SoftmaxNetwork(model.feature_extractor, head)
    before = [v.numpy().copy() for v in model.trainable_variables]
    with pytest.raises(ValueError, match=r"residual_scale must be a number in \(0, 1\]"):
        match_network(model, network, np.zeros((10, 5)), residual_scale=0.0)
    assert all(np.array_equal(a, v.numpy()) for a, v in zip(before, model.trainable_variables))
