"""MLGPF on PreconditionedSVGP with GPflow's prediction contracts, the utility conditionals, the paper's
variants as recipe configs (build, run, full bound, data) and the shims of the old names."""
import ast
import dataclasses
from pathlib import Path

import gpflow
import numpy as np
import pytest
import scipy.sparse as sp
from check_shapes.exceptions import ShapeMismatchError

import gpflow_ext
from gpflow_ext.conditionals.multilabel import gathered_utility_moments, utility_moments
from gpflow_ext.models import PreconditionedSVGP
from gpflow_ext.recipes import mlgpf as recipe
from gpflow_ext.recipes import mlgpf_config as configs
from gpflow_ext.utilities import to_input_tensor

PACKAGE = Path(gpflow_ext.__file__).resolve().parent


def _data(rows=40, cols=30, labels=15):
    X = sp.random(rows, cols, density=0.2, format="csr", random_state=3)
    Y = sp.random(rows, labels, density=0.15, format="csr", random_state=4)
    Y.data[:] = 1.0
    return X, Y


def _small_model(method="s-linear", **overrides):
    X, Y = _data()
    config = configs.paper_config(method, num_inducing=6, num_latent_gps=3, rank=8, **overrides)
    return recipe.build_mlgpf(config, X, Y), X, Y


def test_predictions_follow_gpflow_contracts(rng):
    """predict_f: q(h) of the P latent GPs; predict_y: E[σ(f_k)] and its Bernoulli variance [N, K] (== a Monte
    Carlo estimate through the utility moments of eq. 21); dense and sparse inputs agree."""
    model, X, _ = _small_model()
    assert isinstance(model, PreconditionedSVGP)
    Xd = X[:7].toarray()
    mean, var = model.predict_f(Xd)
    assert mean.shape == (7, 3) and var.shape == (7, 3) and np.all(var.numpy() >= 0.0)
    p, v = model.predict_y(Xd)
    assert p.shape == (7, 15)
    np.testing.assert_array_equal(p.numpy(), model.predict_probabilities(Xd).numpy())
    np.testing.assert_allclose(v.numpy(), p.numpy() - p.numpy() ** 2, rtol=1e-12)
    f_mean, f_var = (t.numpy() for t in utility_moments(mean, var, model.loadings, model.bias))
    eps = rng.normal(size=(200_000, 1, 1))
    monte_carlo = np.mean(1.0 / (1.0 + np.exp(-(f_mean + np.sqrt(f_var) * eps))), axis=0)
    np.testing.assert_allclose(p.numpy(), monte_carlo, atol=3e-3)
    sparse_p, _ = model.predict_y(to_input_tensor(X[:7]))
    np.testing.assert_allclose(sparse_p.numpy(), p.numpy(), rtol=1e-10)
    np.testing.assert_allclose(model.predict_utilities(Xd).numpy(), f_mean, rtol=1e-12)


def test_gathered_utility_moments_equal_brute_force(rng):
    h_mean, h_var = rng.normal(size=(5, 3)), rng.uniform(0.1, 1.0, size=(5, 3))
    loadings, bias = rng.normal(size=(7, 3)), rng.normal(size=7)
    f_mean, f_var = (t.numpy() for t in utility_moments(h_mean, h_var, loadings, bias))
    rows, labels = np.array([0, 4, 2, 2]), np.array([6, 0, 3, 5])
    g_mean, g_var = gathered_utility_moments(h_mean, h_var, loadings, bias, labels, rows)
    for t, (i, k) in enumerate(zip(rows, labels)):
        brute_mean = sum(loadings[k, p] * h_mean[i, p] for p in range(3)) + bias[k]
        brute_var = sum(loadings[k, p] ** 2 * h_var[i, p] for p in range(3))
        assert g_mean[t].numpy() == pytest.approx(brute_mean, rel=1e-12)
        assert g_var[t].numpy() == pytest.approx(brute_var, rel=1e-12)
        assert f_mean[i, k] == pytest.approx(brute_mean, rel=1e-12) and f_var[i, k] == pytest.approx(brute_var, rel=1e-12)


def test_check_shapes_guard_public_functions_and_methods():
    model, X, Y = _small_model()
    with pytest.raises(ValueError, match="Xnew.*2-D"):  # inputs: a ValueError naming the argument
        model.predict_utilities(np.ones(30))
    with pytest.raises(ShapeMismatchError):
        gpflow_ext.metrics.ranking_metrics(np.zeros((3, 5), dtype=np.int64), Y)  # 3 rows of ranks, 40 of labels
    with pytest.raises(ShapeMismatchError):
        gathered_utility_moments(np.ones((2, 3)), np.ones((2, 3)), np.ones((4, 2)), np.ones(4), [0], [0])  # P 3 vs 2


def test_mlgpf_models_never_import_recipes_or_training():
    forbidden = ("gpflow_ext.recipes", "gpflow_ext.training")
    for path in (PACKAGE / "models" / "mlgpf.py", PACKAGE / "models" / "preconditioned_svgp.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                base = "gpflow_ext.models".rsplit(".", node.level - 1)[0] if node.level else ""
                module = ".".join(part for part in (base, node.module or "") if part)
                names = [module] + [f"{module}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            assert not any(n.startswith(forbidden) for n in names), (path.name, names)


def test_paper_configs_and_recipe_registry():
    for method in configs.METHODS:
        config = configs.paper_config(method, "eurlex")
        assert config.method == method
        assert (config.num_latent_gps, config.rank, config.batch_size) == (40, 2500, 800)
        assert (config.subspace, config.train_inducing, config.kernel) == configs.parse_method(method)
    assert configs.paper_config("s-linear", "bibtex", epochs=3, rank=None).epochs == 3  # None: keep the paper's
    assert configs.paper_config("s-linear", "bibtex", rank=None).rank == 1000
    assert configs.RECIPES["paper"] is configs.paper_config
    with pytest.raises(ValueError, match="kernel"):
        configs.MLGPFConfig(kernel="rbf")
    with pytest.raises(ValueError, match="num_inducing"):
        configs.MLGPFConfig(num_inducing=0)
    with pytest.raises(ValueError, match="method must be one of"):
        configs.paper_config("s-rbf")

    def tuned(method, dataset="bibtex", **overrides):
        return dataclasses.replace(configs.paper_config(method, dataset, **overrides), learning_rate=0.03)

    configs.register_recipe("test-tuned", tuned)
    try:
        assert configs.RECIPES["test-tuned"]("se").learning_rate == 0.03
        with pytest.raises(ValueError, match="taken"):
            configs.register_recipe("paper", tuned)
    finally:
        del configs.RECIPES["test-tuned"]


def test_full_bound_is_the_exact_bound_on_all_rows():
    model, X, Y = _small_model(num_negative_samples=3)
    X, Y = model.prepare_data(X, Y)
    one_block = recipe.full_bound(model, X, Y, batch_size=X.shape[0])
    assert model.num_negative_samples == 3  # restored
    model.num_negative_samples = None
    exact = float(model.elbo((to_input_tensor(X), to_input_tensor(Y))))
    assert one_block == pytest.approx(exact, rel=1e-12)
    assert recipe.full_bound(model, X, Y, batch_size=7) == pytest.approx(exact, rel=1e-10)  # blocks add up


def test_run_mlgpf_small(tmp_path, baselines):
    train, test = recipe.synthetic_multilabel(num_rows=200, num_features=40, num_labels=10)
    assert train[0].shape == (160, 40) and test[1].shape == (40, 10)
    calls = []

    def scale(X):
        calls.append(X.shape[0])
        return X * 0.5

    config = dataclasses.replace(configs.tour_config(epochs=2), num_inducing=10, rank=10, num_latent_gps=3,
                                 batch_size=80, eval_every=1, input_transform=scale)
    result = recipe.run_mlgpf(config, train, test, logdir=tmp_path / "tb", progress=False)
    assert calls == [160, 40]
    assert result["epochs_trained"] == 2 and len(result["bound_per_epoch"]) == 2 and result["final_bound"] < 0.0
    frequency = baselines.frequency_p_at_k(train[1], test[1], 1)  # 52.5: ranking by label frequency
    assert result["P@1"] > frequency + 2.5, (result["P@1"], frequency)  # 60 here; 2.5 is one test row of 40
    assert result["seconds_per_epoch"] > 0.0 and result["float"] == "float64"
    assert result["config"]["input_transform"] == "scale" and result["settings"]["num_inducing"] == 10
    assert list(result["test_metrics_per_epoch"]) and any((tmp_path / "tb").rglob("events.out.tfevents.*"))
    result32 = recipe.run_mlgpf(dataclasses.replace(config, float32=True, epochs=1, input_transform=None), train, test,
                                progress=False)
    assert result32["float"] == "float32" and np.isfinite(result32["final_bound"])
    assert gpflow.default_float() == np.float64  # the float32 context does not leak


def test_load_xmc_reads_every_published_name(dataset_path, data_dir, tmp_path):
    dataset_path("bibtex", "bibtex-train.arff.gz")
    (X, Y), (X_test, Y_test) = recipe.load_xmc("bibtex", data_dir, max_rows=50)
    assert X.shape == (50, 1836) and Y.shape == (50, 159) and X_test.shape[0] == 50
    with pytest.raises(FileNotFoundError, match="EUR-Lex"):
        recipe.load_xmc("eurlex", tmp_path)


@pytest.mark.parametrize("module_name", ["gpflow_ext.models.mlgpf", "gpflow_ext.recipes.mlgpf"])
def test_docstring_examples_run(module_name):
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(module_name), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


@pytest.mark.parametrize("method", ["linear", "f-linear", "se", "f-se"])
def test_more_free_inducing_inputs_than_rows_is_refused_by_name(method):
    X = sp.random(12, 20, density=0.3, format="csr", random_state=0)
    Y = sp.csr_matrix(np.eye(12, 4))
    with pytest.raises(ValueError, match=rf"num_inducing=13 exceeds the 12 training rows of X: {method} places free"):
        recipe.build_mlgpf(configs.paper_config(method, num_inducing=13, num_latent_gps=2, rank=5), X, Y)
    model = recipe.build_mlgpf(configs.paper_config(method, num_inducing=12, num_latent_gps=2, rank=5), X, Y)
    assert model.inducing_variable.Z.shape[0] == 12
