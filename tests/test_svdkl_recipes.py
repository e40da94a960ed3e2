"""SV-DKL recipes: preprocessing, networks, optimizers, paper settings, the three-way run (gpflow_ext.recipes.svdkl)."""
import numpy as np
import pytest


def test_log1p_features_transforms_only_named_columns():
    import numpy as np

    from gpflow_ext.recipes.svdkl_preprocessing import log1p_features

    X = np.array([[0.0, 5.0, 2.0], [99999.0, 7.0, 0.0]])
    out = log1p_features(X, ["capital-gain", "age", "capital-loss"], ["capital-gain", "capital-loss"])
    np.testing.assert_array_equal(out[:, 1], X[:, 1])
    np.testing.assert_allclose(out[:, [0, 2]], np.log(1.0 + X[:, [0, 2]]), rtol=1e-15)
    assert X[1, 0] == 99999.0  # the input is not modified
    with pytest.raises(ValueError, match="columns: 'hours' is not a feature name"):
        log1p_features(X, ["capital-gain", "age", "capital-loss"], ["hours"])
    with pytest.raises(ValueError, match="negative values"):
        log1p_features(-X, ["capital-gain", "age", "capital-loss"], ["capital-gain"])


def test_standardise_can_keep_indicator_columns_at_zero_one():
    from gpflow_ext.recipes.svdkl_preprocessing import standardise

    rng = np.random.default_rng(0)
    train = np.column_stack([rng.normal(3.0, 2.0, 50), (np.arange(50) == 7).astype(float), rng.integers(0, 2, 50),
                             np.full(50, 4.0)])  # continuous, rare one-hot, common one-hot, constant
    test = np.column_stack([rng.normal(3.0, 2.0, 5), np.eye(5)[1], np.ones(5), np.full(5, 4.0)])
    scaled_train, scaled_test = standardise(train, test)
    assert scaled_train[7, 1] == pytest.approx(np.sqrt(49.0))  # 1 of 50 rows: (1 - 1/50) / sqrt(1/50 * 49/50)
    kept_train, kept_test = standardise(train, test, indicators="keep")
    np.testing.assert_array_equal(kept_train[:, 1:3], train[:, 1:3])
    np.testing.assert_array_equal(kept_test[:, 1:3], test[:, 1:3])
    for kept, scaled in ((kept_train, scaled_train), (kept_test, scaled_test)):
        np.testing.assert_array_equal(kept[:, 0], scaled[:, 0])  # continuous columns: the training statistics
    np.testing.assert_array_equal(kept_test[:, 3], 0.0)  # a constant column is centred either way
    with pytest.raises(ValueError, match="indicators must be one of"):
        standardise(train, indicators="none")


def test_decayed_learning_rate_reaches_zero_after_the_stage():
    import numpy as np

    from gpflow_ext.recipes.svdkl_networks import epochs_decayed_learning_rate as decayed_learning_rate

    assert decayed_learning_rate(1e-3, "constant", 10, 1000, 256) == 1e-3
    schedule = decayed_learning_rate(1e-3, "cosine", 10, 1000, 256)  # 10 epochs × 4 steps
    values = np.array([float(schedule(step)) for step in (0, 20, 39, 40)])
    expected = [1e-3, 0.5e-3, 0.5e-3 * (1 + np.cos(np.pi * 39 / 40)), 0.0]
    np.testing.assert_allclose(values, expected, rtol=1e-6, atol=1e-9)  # float32 schedule
    with pytest.raises(ValueError, match="network_lr_decay must be 'constant' or 'cosine'"):
        decayed_learning_rate(1e-3, "linear", 10, 1000, 256)


def test_network_optimizer_choices_and_errors():
    from gpflow.keras import tf_keras

    from gpflow_ext.recipes.svdkl_networks import network_optimizer

    sgd = network_optimizer("sgd", 1e-2, 5e-3)
    assert isinstance(sgd, tf_keras.optimizers.SGD) and sgd.momentum == 0.9 and sgd.weight_decay == 5e-3
    assert type(network_optimizer("adam", 1e-3)) is tf_keras.optimizers.Adam
    adamw = network_optimizer("adam", 1e-3, 1e-2)
    assert isinstance(adamw, tf_keras.optimizers.AdamW) and adamw.weight_decay == 1e-2
    with pytest.raises(ValueError, match="network_optimizer must be one of"):
        network_optimizer("rmsprop", 1e-3)
    with pytest.raises(ValueError, match="network_weight_decay must be a finite number >= 0"):
        network_optimizer("sgd", 1e-3, -1.0)


def test_build_mlp_dropout_is_active_only_in_training():
    from gpflow_ext.recipes.svdkl_networks import build_mlp

    X = np.random.default_rng(0).normal(size=(50, 6))
    net = build_mlp(6, 2, hidden=(64, 8), dropout=0.5)
    assert sum(type(layer).__name__ == "Dropout" for layer in net.layers) == 2
    np.testing.assert_array_equal(net(X, training=False).numpy(), net(X, training=False).numpy())
    assert not np.allclose(net(X, training=True).numpy(), net(X, training=False).numpy())
    assert not any(type(layer).__name__ == "Dropout" for layer in build_mlp(6, 2, hidden=(8,)).layers)
    with pytest.raises(ValueError, match=r"dropout must be in \[0, 1\)"):
        build_mlp(6, 2, dropout=1.0)




def test_majority_rate_is_the_test_share_of_the_training_majority():
    from gpflow_ext.recipes.svdkl_preprocessing import majority_rate

    assert majority_rate(np.array([0, 1, 1, 1]), np.array([1, 0, 1, 0, 0])) == pytest.approx(0.4)


def test_three_way_config_schedule_and_paper_settings():
    from gpflow_ext.recipes.svdkl import PAPER_SETTINGS, SVDKLSchedule, ThreeWayConfig

    config = ThreeWayConfig(network_epochs=3, gp_epochs=5, joint_epochs=3, batch_size=100, joint_gp_learning_rate=1e-3)
    schedule = config.schedule()
    assert isinstance(schedule, SVDKLSchedule)
    assert (schedule.network_epochs, schedule.gp_epochs, schedule.joint_epochs, schedule.batch_size) == (3, 5, 3, 100)
    assert schedule.joint_learning_rate == 1e-4 and schedule.joint_gp_learning_rate == 1e-3
    assert {"adult", "connect4", "mnist", "airline", "diabetes"} <= set(PAPER_SETTINGS)
    adult = PAPER_SETTINGS["adult"]
    assert (adult.config.network_epochs, adult.config.gp_epochs, adult.config.joint_epochs) == (3, 5, 3)
    net = adult.build_network(7, 2, seed=0)
    assert [layer.units for layer in net.layers] == [1000, 1000, 500, 50, 2]
    assert PAPER_SETTINGS["mnist"].build_network((28, 28, 1), 10).name == "lenet"


def test_run_three_way():
    """A tiny DNN / DNN+GP / SV-DKL run: metrics of the three stages, the circulant prior from its name."""
    from gpflow_ext.recipes.svdkl import ThreeWayConfig, run_three_way
    from gpflow_ext.recipes.svdkl_networks import build_mlp
    from gpflow_ext.variational import CirculantGridPrior

    rng = np.random.default_rng(0)
    X = rng.normal(size=(80, 4))
    y = (X[:, 0] + 0.3 * X[:, 1] > 0).astype(np.int64)
    config = ThreeWayConfig(network_epochs=1, gp_epochs=1, joint_epochs=1, batch_size=40, grid_size=8,
                            grid_prior="circulant")
    model, out, seconds, timing = run_three_way(build_mlp(4, 2, hidden=(8,)), 2, (X[:60], y[:60]), (X[60:], y[60:]),
                                                config, progress=False)
    assert isinstance(model.gps.prior, CirculantGridPrior)
    # one epoch per stage: the scores are those of chance (0.5 to 0.65 over runs), so only finite; that the
    # stages learn is tests/test_svdkl_model.py's pretrain_and_fit test against the majority class
    assert all(np.isfinite(out[k]["accuracy"]) and np.isfinite(out[k]["nlp"]) for k in ("dnn", "dnn_gp", "svdkl"))
    assert set(timing) == {"network", "gp", "joint"} and seconds > 0
