"""SVDKL model: mixed softmax, bound of eq. 4 (unbiased MC), gradients, pretraining, bad input."""
import gpflow
import numpy as np
import pytest
import tensorflow as tf
from gpflow.keras import tf_keras
from gpflow.kullback_leiblers import gauss_kl

from gpflow_ext.inducing_variables.grid import interpolation_matrix
from gpflow_ext.likelihoods import MixedSoftmax
from gpflow_ext.models import SVDKL
from gpflow_ext.recipes.svdkl import pretrain_and_fit
from gpflow_ext.variational import FreeInducingPoints, KISSGPGrid
from gpflow_ext.variational.grid_priors import toeplitz_prior_factors

INDUCING = {"grid": lambda m: KISSGPGrid(m), "points": lambda m: FreeInducingPoints(m)}

F64 = gpflow.default_float()


def _net(d_in=5, q=3, seed=0):
    tf_keras.utils.set_random_seed(seed)
    return tf_keras.Sequential(
        [
            tf_keras.Input((d_in,), dtype=F64),
            tf_keras.layers.Dense(8, activation="relu", dtype=F64),
            tf_keras.layers.Dense(q, dtype=F64),
        ]
    )


def _data(rng, n=40, d_in=5, c=3):
    X = rng.normal(size=(n, d_in))
    Y = rng.integers(0, c, size=n)
    return X, Y


def test_mixed_softmax_probabilities(rng):
    A = rng.normal(size=(4, 3))
    lik = MixedSoftmax(4, 3, mixing=A)
    F = rng.normal(size=(6, 3))
    Y = rng.integers(0, 4, size=(6, 1)).astype(float)
    scores = F @ A.T
    p = np.exp(scores) / np.exp(scores).sum(1, keepdims=True)  # eq. 1
    np.testing.assert_allclose(lik.conditional_mean(None, tf.constant(F)).numpy(), p, rtol=1e-12)
    np.testing.assert_allclose(
        lik.log_prob(None, tf.constant(F), tf.constant(Y)).numpy(),
        np.log(p[np.arange(6), Y[:, 0].astype(int)]),
        rtol=1e-12,
    )
    np.testing.assert_array_equal(MixedSoftmax(3).mixing.numpy(), np.eye(3))  # A starts at I
    with pytest.raises(ValueError, match="mixing"):
        MixedSoftmax(3, 2, mixing=np.eye(3))
    with pytest.raises(ValueError, match="num_classes"):
        MixedSoftmax(1)


@pytest.mark.parametrize("whiten", [True, False])
def test_latent_samples_match_dense_interpolated_moments(rng, whiten):
    """f = W u: sample moments equal W E[u], diag(W S Wᵀ) built densely."""
    model = SVDKL(_net(), 3, num_data=100, inducing=KISSGPGrid(12), whiten=whiten)
    model.q.q_mu.assign(rng.normal(size=(3, 12)))
    X, _ = _data(rng, n=7)
    H = model.features(tf.constant(X))
    tf.random.set_seed(1)
    F = model.latent_samples(H, 100_000).numpy()  # [T, B, J]
    factors = toeplitz_prior_factors(model.inducing_variable, model.kernel.kernels, model.jitter)
    chols = [tf.linalg.cholesky(K) for K in factors] if whiten else None
    for j in range(3):
        W = tf.sparse.to_dense(interpolation_matrix(model.inducing_variable, H.numpy()[:, j : j + 1])).numpy()
        mu = model.q.q_mu.numpy()[j]
        L = model.q.q_sqrt_factors[0].numpy()[j]
        if whiten:
            R = chols[0].numpy()[j]
            mu, L = R @ mu, R @ L
        S = L @ L.T
        np.testing.assert_allclose(F[:, :, j].mean(0), W @ mu, atol=0.02)
        np.testing.assert_allclose(F[:, :, j].var(0), np.diag(W @ S @ W.T), rtol=0.03, atol=1e-3)


def test_model_kl_equals_dense_gauss_kl(rng):
    model = SVDKL(_net(), 3, num_data=100, inducing=KISSGPGrid(10), whiten=False)
    model.q.q_mu.assign(rng.normal(size=(3, 10)))
    Ks = [gpflow.covariances.Kuu(model.inducing_variable, k, jitter=model.jitter) for k in model.kernel.kernels]
    S = model.q.covariance()
    ref = sum(
        gauss_kl(model.q.q_mu[j][:, None], tf.linalg.cholesky(S[j])[None], Ks[j]).numpy() for j in range(3)
    )
    np.testing.assert_allclose(model.prior_kl().numpy(), ref, rtol=1e-8)


@pytest.mark.parametrize("inducing", ["grid", "points"])
def test_minibatch_bound_is_unbiased(rng, inducing):
    """eq. 4 with T = 1 averaged over many draws == the many-sample estimate (within 4 s.e.)."""
    X, Y = _data(rng, n=30)
    model = SVDKL(_net(), 3, num_data=300, inducing=INDUCING[inducing](12), num_samples=1)
    model.q_mu.assign(rng.normal(size=model.q_mu.shape)) if inducing == "points" else model.q.q_mu.assign(
        rng.normal(size=(3, 12))
    )
    data = (tf.constant(X), tf.constant(Y[:, None].astype(float)))
    elbo1 = tf.function(lambda: model.elbo(data))
    tf.random.set_seed(2)
    draws = np.array([elbo1().numpy() for _ in range(200)])
    reference = (
        300 / 30 * model.expected_log_likelihood(data, num_samples=20_000) - model.prior_kl()
    ).numpy()
    se = draws.std() / np.sqrt(len(draws))
    assert abs(draws.mean() - reference) < 4 * se + 1e-9, (draws.mean(), reference, se)
    assert draws.std() > 0  # it really is stochastic


@pytest.mark.parametrize("inducing", ["grid", "points"])
def test_gradients_reach_every_parameter(rng, inducing):
    X, Y = _data(rng)
    model = SVDKL(_net(), 3, num_data=40, inducing=INDUCING[inducing](10))
    q_mu = model.q_mu if inducing == "points" else model.q.q_mu
    q_mu.assign(rng.normal(size=q_mu.shape))  # at q(u) = p(u) an SE GP's f ignores its input
    data = (tf.constant(X), tf.constant(Y[:, None].astype(float)))
    with tf.GradientTape() as tape:
        loss = model.training_loss(data)
    net_vars = model.network_variables()
    assert len(net_vars) == 4
    grads = tape.gradient(loss, model.trainable_variables)
    names = [v.name for v in model.trainable_variables]
    assert all(g is not None for g in grads), [n for n, g in zip(names, grads) if g is None]
    assert all(np.all(np.isfinite(g.numpy())) for g in grads)
    trainable_ids = {id(v) for v in model.trainable_variables}
    assert all(id(v) in trainable_ids for v in net_vars)  # the network is trained jointly
    with tf.GradientTape() as tape2:
        loss = model.training_loss(data)
    net_grads = tape2.gradient(loss, net_vars + [model.likelihood.mixing.unconstrained_variable])
    assert all(np.any(g.numpy() != 0) for g in net_grads)


def test_pretrain_and_fit_runs_three_stages_and_freezes_network_in_gp_stage(rng, baselines):
    X, _ = _data(rng, n=60)
    Y = np.argmax(X[:, :3], axis=1)  # learnable labels: each stage must beat the majority class
    model = SVDKL(_net(), 3, num_data=60, inducing=KISSGPGrid(10))
    net_ids = {id(v) for v in model.network_variables()}
    gp_vars = model.gp_variables()
    assert not any(id(v) in net_ids for v in gp_vars)  # DNN+GP stage: the network is frozen
    assert len(gp_vars) + len(net_ids) == len(model.trainable_variables)
    out = pretrain_and_fit(
        model, (X, Y), network_epochs=20, gp_epochs=20, joint_epochs=20, batch_size=20, validation_data=(X, Y)
    )
    assert set(["dnn", "dnn_gp", "svdkl"]) <= set(out)
    majority = baselines.majority_accuracy(Y, Y)  # 0.37; the stages 0.52, 0.57, 0.63 here
    for k in ("dnn", "dnn_gp", "svdkl"):
        assert out[k]["accuracy"] > majority + 0.08 and np.isfinite(out[k]["nlp"]), (k, out[k], majority)
    P = model.predict_proba(X, num_samples=4)
    assert P.shape == (60, 3)
    np.testing.assert_allclose(P.sum(1), 1.0, atol=1e-10)
    K = model.deep_kernel(X[:5])
    assert K.shape == (5, 5) and np.all(np.linalg.eigvalsh(K) > -1e-8)


def test_network_optimizer_drives_only_the_network_stage(rng):
    """One full-batch epoch of plain SGD moves the network weights by exactly -lr × the autodiff gradient
    of the softmax objective, and the GP and joint stages do not use that optimizer."""
    from gpflow_ext.models import SoftmaxNetwork

    X, Y = _data(rng, n=60)  # learning rate 0.125: exact in the optimizer's float32
    model = SVDKL(_net(), 3, num_data=60, inducing=KISSGPGrid(10))
    weights = model.network_variables()
    before = [w.numpy() for w in weights]
    with tf.GradientTape() as tape:
        loss = SoftmaxNetwork(model.feature_extractor).training_loss((tf.constant(X), tf.constant(Y[:, None])))
    grads = tape.gradient(loss, weights)
    sgd = tf_keras.optimizers.SGD(0.125)
    pretrain_and_fit(model, (X, Y), network_epochs=1, gp_epochs=1, joint_epochs=1, batch_size=60,
                     network_optimizer=sgd, validation_fraction=0.0)
    assert int(sgd.iterations.numpy()) == 1  # the network stage's single step, and no other
    after_network_stage = [w - 0.125 * g.numpy() for w, g in zip(before, grads)]
    model2 = SVDKL(_net(), 3, num_data=60, inducing=KISSGPGrid(10))
    pretrain_and_fit(model2, (X, Y), network_epochs=1, gp_epochs=0, joint_epochs=0, batch_size=60,
                     network_optimizer=tf_keras.optimizers.SGD(0.125), validation_fraction=0.0)
    for expected, got in zip(after_network_stage, model2.network_variables()):
        np.testing.assert_allclose(got.numpy(), expected, rtol=1e-10, atol=1e-12)
    with pytest.raises(TypeError, match="optimizer must have apply_gradients"):
        pretrain_and_fit(model2, (X, Y), network_epochs=1, gp_epochs=0, joint_epochs=0, network_optimizer="sgd")


def test_joint_gp_learning_rate_gives_the_gp_layer_its_own_adam(rng):
    """One full-batch joint step with Adam: its first update moves every coordinate by about lr · sign(g),
    so the largest move is the group's learning rate: 1e-4 for the network, 1e-2 for the GP layer."""
    X, Y = _data(rng, n=60)
    model = SVDKL(_net(), 3, num_data=60, inducing=KISSGPGrid(10))
    pretrain_and_fit(model, (X, Y), network_epochs=1, gp_epochs=1, joint_epochs=0, batch_size=60,
                     validation_fraction=0.0)
    before_net = [v.numpy() for v in model.network_variables()]
    before_gp = [v.numpy() for v in model.gp_variables()]
    out = pretrain_and_fit(model, (X, Y), network_epochs=0, gp_epochs=0, joint_epochs=1, batch_size=60,
                           joint_learning_rate=1e-4, joint_gp_learning_rate=1e-2, validation_fraction=0.0)
    assert out["joint_history"].steps_per_epoch == 1

    def largest_move(variables, before):
        return max(float(np.max(np.abs(v.numpy() - b))) for v, b in zip(variables, before))

    assert 0.9e-4 < largest_move(model.network_variables(), before_net) <= 1e-4 * (1 + 1e-6)
    assert 0.9e-2 < largest_move(model.gp_variables(), before_gp) <= 1e-2 * (1 + 1e-6)
    with pytest.raises(ValueError, match="joint_gp_learning_rate must be a positive number"):
        pretrain_and_fit(model, (X, Y), joint_gp_learning_rate=0.0)
    with pytest.raises(ValueError, match="joint_learning_rate must be a positive number"):  # fit sees an optimizer
        pretrain_and_fit(model, (X, Y), joint_learning_rate=float("inf"), joint_gp_learning_rate=1e-2)
    with pytest.raises(ValueError, match="either joint_gp_learning_rate or fit_kwargs"):
        pretrain_and_fit(model, (X, Y), joint_gp_learning_rate=1e-2,
                         fit_kwargs=dict(optimizer=tf_keras.optimizers.Adam(1e-3)))


def test_joint_batch_size_sets_only_the_joint_stage_minibatch(rng):
    X, Y = _data(rng, n=60)
    model = SVDKL(_net(), 3, num_data=60, inducing=KISSGPGrid(10))
    out = pretrain_and_fit(model, (X, Y), network_epochs=1, gp_epochs=1, joint_epochs=1, batch_size=10,
                           joint_batch_size=30)
    assert [out[f"{stage}_history"].steps_per_epoch for stage in ("network", "gp", "joint")] == [6, 6, 2]
    with pytest.raises(ValueError, match="joint_batch_size must be a positive int"):
        pretrain_and_fit(model, (X, Y), joint_batch_size=0)


def test_head_is_used_when_features_differ_from_classes(rng):
    X, Y = _data(rng, n=30, c=4)
    model = SVDKL(_net(q=2), 4, num_data=30, inducing=KISSGPGrid(8))
    assert model.num_gps == 2 and model.likelihood.mixing.shape == (4, 2)
    out = pretrain_and_fit(model, (X, Y), network_epochs=1, gp_epochs=0, joint_epochs=0, batch_size=10,
                           validation_data=(X, Y))
    assert np.isfinite(out["dnn"]["nlp"]) and np.isfinite(out["dnn_gp"]["nlp"])


def test_feature_groups_two_dimensional_kernels(rng):
    X, Y = _data(rng, n=20)
    model = SVDKL(_net(q=4), 3, num_data=20, feature_groups=[[0, 1], [2, 3]], inducing=KISSGPGrid(8))
    assert model.input_dim == 2 and model.q.grid_sizes == (8, 8)
    data = (tf.constant(X), tf.constant(Y[:, None].astype(float)))
    assert np.isfinite(model.training_loss(data).numpy())


def test_bad_input(rng):
    with pytest.raises(TypeError, match="tf_keras"):
        SVDKL(lambda x: x, 3, num_data=10)
    with pytest.raises(ValueError, match="num_classes"):
        SVDKL(_net(), 1, num_data=10)
    with pytest.raises(ValueError, match="num_data"):
        SVDKL(_net(), 3, num_data=0)
    with pytest.raises(ValueError, match="out of range"):
        SVDKL(_net(), 3, num_data=10, feature_groups=[[0], [5]])
    with pytest.raises(ValueError, match="same size"):
        SVDKL(_net(), 3, num_data=10, feature_groups=[[0], [1, 2]])
    with pytest.raises(TypeError, match="inducing must be a gpflow_ext.variational.KISSGPGrid"):
        SVDKL(_net(), 3, num_data=10, inducing="grid")
    with pytest.raises(TypeError, match="mean_function must be a gpflow.mean_functions.MeanFunction"):
        SVDKL(_net(), 3, num_data=10, mean_function=np.zeros((3, 3)))
    with pytest.raises(ValueError, match=r"mean_function: .* needs A of shape \[3, 4\] and b of shape \[4\]"):
        SVDKL(_net(), 4, num_data=10, mean_function=gpflow.mean_functions.Linear(np.zeros((3, 4))))
    model = SVDKL(_net(), 3, num_data=10, inducing=KISSGPGrid(8))
    X, Y = _data(rng, n=10)
    with pytest.raises(ValueError, match="labels must be in"):
        model.evaluate(X, Y + 3)
    with pytest.raises(ValueError, match="NaN"):
        model.evaluate(np.full_like(X, np.nan), Y)
    with pytest.raises(ValueError, match="rows"):
        model.evaluate(X, Y[:5])
    with pytest.raises(ValueError, match="expects"):
        model.evaluate(X[:, :3], Y)
    with pytest.raises(ValueError, match="empty"):
        pretrain_and_fit(model, (X[:0], Y[:0]))
    with pytest.raises(ValueError, match="gp_epochs"):
        pretrain_and_fit(model, (X, Y), gp_epochs=-1)
    with pytest.raises(ValueError, match="num_samples must be >= 1"):
        model.predict_proba(X, num_samples=0)
    with pytest.raises(TypeError, match="batch_size must be an integer"):
        model.predict_proba(X, batch_size=2.5)
    weights = [v.numpy().copy() for v in model.trainable_variables]
    with pytest.raises(ValueError, match="num_predict_samples must be >= 1"):  # checked before stage 1 trains
        pretrain_and_fit(model, (X, Y), network_epochs=1, num_predict_samples=0, validation_data=(X, Y))
    for before, v in zip(weights, model.trainable_variables):
        np.testing.assert_array_equal(before, v.numpy())


@pytest.mark.parametrize("whiten", [True, False])
def test_points_marginals_match_dense_svgp_formulas(rng, whiten):
    """FreeInducingPoints' marginals (GPflow's conditional, the model's jitter) against the dense SVGP formulas."""
    model = SVDKL(_net(), 3, num_data=10, inducing=FreeInducingPoints(7), whiten=whiten)
    model.q_mu.assign(rng.normal(size=(7, 3)))
    model.gps.q_sqrt.assign(np.tril(rng.normal(size=(3, 7, 7))) * 0.3 + 0.5 * np.eye(7))
    H = model.features(tf.constant(_data(rng, n=9)[0]))
    mean, var = model.gps.marginals(H)
    Z = model.inducing_variable.inducing_variable.Z.numpy()
    for j, k in enumerate(model.kernel.kernels):
        Kzz = k(Z).numpy() + model.jitter * np.eye(7)  # __call__ applies the group's active_dims
        Kzx, kxx = k(Z, H).numpy(), k(H, full_cov=False).numpy()
        L, S_sqrt, mu = np.linalg.cholesky(Kzz), model.gps.q_sqrt.numpy()[j], model.q_mu.numpy()[:, j]
        A = np.linalg.solve(L, Kzx) if whiten else np.linalg.solve(Kzz, Kzx)  # [M, B]
        ref_mean = A.T @ mu
        ref_var = kxx - np.sum(np.linalg.solve(L, Kzx) ** 2, 0) + np.sum((S_sqrt.T @ A) ** 2, 0)
        np.testing.assert_allclose(mean.numpy()[:, j], ref_mean, rtol=1e-8, atol=1e-10)
        np.testing.assert_allclose(var.numpy()[:, j], ref_var, rtol=1e-7, atol=1e-9)


def test_softmax_network_predicts_the_eager_softmax_with_one_trace(rng):
    from gpflow_ext.models import SoftmaxNetwork

    X, _ = _data(rng, n=30)
    network = SoftmaxNetwork(_net(), head=tf_keras.layers.Dense(3, dtype=gpflow.default_float()))
    expected = tf.nn.softmax(network.logits(tf.constant(X))).numpy()
    np.testing.assert_allclose(network.predict_proba(X, batch_size=7), expected, rtol=1e-12)
    np.testing.assert_allclose(network.predict_proba(X[:10]), expected[:10], rtol=1e-12)
    # reduce_retracing: the ragged last batch and the second call reuse the first trace's shape-relaxed function
    assert network._predict_fn.experimental_get_tracing_count() <= 2
    copy = gpflow.utilities.deepcopy(network)  # the compiled predictor does not stop a deep copy
    np.testing.assert_allclose(copy.predict_proba(X), expected, rtol=1e-12)


def test_float32_keras_layers_in_a_float64_model_name_the_layers_dtype_argument(rng):
    """tf_keras layers default to float32: the error before training names the layers' dtype= argument."""
    from gpflow_ext.models import SoftmaxNetwork
    from gpflow_ext.training import fit

    float32_net = tf_keras.Sequential([tf_keras.Input((5,)), tf_keras.layers.Dense(3)])
    X, Y = _data(rng)
    for model in (SVDKL(float32_net, 3, num_data=len(X), inducing=KISSGPGrid(8)), SoftmaxNetwork(float32_net)):
        with pytest.raises(ValueError, match=r"tf_keras layers hold float32 weights .* pass dtype=\"float64\" to every "
                                             r"layer and to tf_keras.Input"):
            fit(model, (X, Y), epochs=1, batch_size=20, progress=False)
    fit(SVDKL(_net(), 3, num_data=len(X), inducing=KISSGPGrid(8)), (X, Y), epochs=1, batch_size=20, progress=False)


def test_inducing_is_a_gp_layer_object_used_by_one_model():
    """``inducing`` defaults to the paper's grid, ``KISSGPGrid(64)`` with the Toeplitz prior; a grid or a set of
    inducing points belongs to one model."""
    from gpflow_ext.variational import CirculantGridPrior, ToeplitzGridPrior

    model = SVDKL(_net(), 3, num_data=12)
    assert isinstance(model.gps, KISSGPGrid) and model.gps.grid_size == 64
    assert isinstance(model.gps.prior, ToeplitzGridPrior)
    model = SVDKL(_net(), 3, num_data=12, inducing=KISSGPGrid(8, prior=CirculantGridPrior()))
    assert isinstance(model.gps.prior, CirculantGridPrior)
    gps = KISSGPGrid(8)
    SVDKL(_net(), 3, num_data=12, inducing=gps)
    with pytest.raises(ValueError, match="already belongs to a model"):
        SVDKL(_net(), 3, num_data=12, inducing=gps)


def test_svdkl_models_never_import_training_or_recipes():
    """models sit below training and recipes: no import of them in the SV-DKL model files, not even lazily."""
    import ast
    from pathlib import Path

    import gpflow_ext

    root = Path(gpflow_ext.__file__).parent / "models"
    for path in (root / "svdkl.py", root / "svdkl_arguments.py", root / "softmax_network.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                names = [("." * node.level) + (node.module or "")]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                continue
            for name in names:
                assert not any(part in ("training", "recipes") for part in name.replace(".", " ").split()), (path, name)


@pytest.mark.parametrize("inducing", [lambda: KISSGPGrid(10), lambda: FreeInducingPoints(6)], ids=["grid", "points"])
def test_class_score_mean_is_added_to_the_mixed_gps(rng, inducing):
    """logits = A f(h) + h W + b: the bound and the predictions against an explicit twin on the same draws."""
    X, Y = _data(rng, n=30)
    W, b = rng.normal(size=(3, 3)), rng.normal(size=3)
    model = SVDKL(_net(), 3, num_data=30, inducing=inducing(), num_samples=4,
                  mean_function=gpflow.mean_functions.Linear(W, b))
    h = model.raw_features(tf.constant(X)).numpy()  # [N, Q]
    seed = tf.constant([3, 4], tf.int64)
    F = model.latent_samples(model.features(tf.constant(X)), 5, seed=seed).numpy()  # [T, N, J]
    scores = F @ model.likelihood.mixing.numpy().T + (h @ W + b)[None]  # [T, N, C]
    P = np.exp(scores) / np.exp(scores).sum(-1, keepdims=True)
    np.testing.assert_allclose(model.predict_proba_batch(tf.constant(X), 5, seed=seed).numpy(), P.mean(0), rtol=1e-10)
    tf.random.set_seed(7)
    expected = model.expected_log_likelihood((tf.constant(X), tf.constant(Y)))
    tf.random.set_seed(7)
    F = model.latent_samples(model.features(tf.constant(X)), 4).numpy()  # the same global-seed draws
    scores = F @ model.likelihood.mixing.numpy().T + (h @ W + b)[None]
    log_p = scores - np.log(np.exp(scores).sum(-1, keepdims=True))
    twin = log_p[:, np.arange(30), np.reshape(Y, -1).astype(int)].sum() / 4
    np.testing.assert_allclose(expected.numpy(), twin, rtol=1e-10)
    with tf.GradientTape() as tape:
        loss = model.training_loss((tf.constant(X), tf.constant(Y[:, None])))
    mean = model.mean_function
    grads = tape.gradient(loss, [mean.A.unconstrained_variable, mean.b.unconstrained_variable])
    assert all(g is not None and np.all(np.isfinite(g.numpy())) and np.any(g.numpy() != 0) for g in grads)


def test_the_default_mean_is_zero_and_leaves_the_paper_model_unchanged(rng):
    X, _ = _data(rng, n=20)
    model = SVDKL(_net(), 3, num_data=20, inducing=KISSGPGrid(8))
    assert isinstance(model.mean_function, gpflow.mean_functions.Zero)
    seed = tf.constant([1, 2], tf.int64)
    F = model.latent_samples(model.features(tf.constant(X)), 3, seed=seed)
    P = tf.reduce_mean(tf.nn.softmax(model.likelihood.logits(F)), axis=0).numpy()
    np.testing.assert_allclose(model.predict_proba_batch(tf.constant(X), 3, seed=seed).numpy(), P, rtol=1e-12)
