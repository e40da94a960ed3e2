"""Every model trains, predicts, summarises, checkpoints, deep-copies and serves in float64 and float32.

For each model × precision: two epochs of ``fit``; predictions in the model's float type; ``print_summary``;
a ``tf.train.Checkpoint`` round trip into a freshly built model and ``gpflow.utilities.deepcopy`` after
predicting, both with equal predictions; ``gpflow_ext.serving.export`` of the prediction functions (dense
and ``tf.SparseTensor`` inputs), loaded in a fresh Python process that imports TensorFlow only (one process
per precision) and compared with the in-process predictions.
"""
import contextlib
import io
import json
import subprocess
import sys
import textwrap

import gpflow
import numpy as np
import pytest
import scipy.sparse as sp
import tensorflow as tf
from gpflow.keras import tf_keras

import gpflow_ext
from gpflow_ext.bijectors import planar_flow
from gpflow_ext.inducing_variables import SubspaceInducingPoints
from gpflow_ext.models import GPLVF, SVDKL, PreconditionedSVGP
from gpflow_ext.recipes.gplvf import build_encoder, infer_latent
from gpflow_ext.recipes.mlgpf import build_mlgpf
from gpflow_ext.recipes.mlgpf_config import paper_config
from gpflow_ext.serving import export, serving_functions, serving_module
from gpflow_ext.training import fit
from gpflow_ext.variational import CirculantGridPrior, FreeInducingPoints, KISSGPGrid

MODELS = ("PreconditionedSVGP", "MLGPF", "SVDKL", "GPLVF")
PRECISIONS = {"float64": np.float64, "float32": np.float32}
SERVED_ATOL = {"float64": 1e-12, "float32": 1e-5}
COPY_ATOL = {"float64": 1e-12, "float32": 1e-6}


@contextlib.contextmanager
def precision(name):
    """GPflow's default float set to ``name`` inside, restored after."""
    with gpflow.config.as_context(gpflow.config.Config(float=PRECISIONS[name])):
        yield


def _sparse_inputs(seed=0, rows=60, cols=30):
    return sp.random(rows, cols, density=0.2, format="csr", random_state=seed, dtype=np.float64)


# -- builders: the same call builds the trained model and its fresh twin ------------------------------------
def _build_psvgp():
    X = _sparse_inputs()
    Y = np.asarray(X @ np.linspace(-1.0, 1.0, X.shape[1]))[:, None]
    iv = SubspaceInducingPoints.from_data(X, num_inducing=6, rank=8, seed=0)
    model = PreconditionedSVGP(gpflow.kernels.Linear(), gpflow.likelihoods.Gaussian(), iv, num_data=X.shape[0])
    return model, (X, Y), X[:7]


def _mlgpf_labels():
    Y = sp.random(50, 9, density=0.2, format="csr", random_state=1)  # random labels
    Y.data[:] = 1.0
    return Y


def _build_mlgpf():
    X = _sparse_inputs(rows=50, cols=40)
    Y = _mlgpf_labels()
    model = build_mlgpf(paper_config("s-linear", num_inducing=6, num_latent_gps=3, rank=8), X, Y)
    return model, model.prepare_data(X, Y), X[:7]


def _build_svdkl():
    rng = np.random.default_rng(0)
    X, Y = rng.normal(size=(60, 5)), rng.integers(0, 3, size=60)
    dtype = gpflow.default_float()
    tf_keras.utils.set_random_seed(0)
    net = tf_keras.Sequential([
        tf_keras.Input((5,), dtype=dtype),
        tf_keras.layers.Dense(8, activation="relu", dtype=dtype),
        tf_keras.layers.Dense(2, dtype=dtype),
    ])
    mean = gpflow.mean_functions.Linear(0.3 * rng.normal(size=(2, 3)), 0.3 * rng.normal(size=3))  # class-score mean
    model = SVDKL(net, num_classes=3, num_data=60, inducing=KISSGPGrid(8), mean_function=mean)
    return model, (X, Y[:, None]), X[:7]


def _build_gplvf():
    rng = np.random.default_rng(0)
    Y = rng.normal(size=(30, 5))
    Y[rng.random(Y.shape) < 0.3] = np.nan
    Y[:, 0] = rng.normal(size=30)  # no empty row
    model = GPLVF(Y, latent_dim=2, num_inducing=5, flow=planar_flow(2, 2), encoder=build_encoder(5, 2))
    return model, model.training_data(), Y[:6]


BUILDERS = {"PreconditionedSVGP": _build_psvgp, "MLGPF": _build_mlgpf, "SVDKL": _build_svdkl, "GPLVF": _build_gplvf}


def predictions(name, model, X_new):
    """``{served function: (inputs, in-process outputs)}`` as numpy arrays (sparse inputs as scipy CSR)."""
    if name == "PreconditionedSVGP":
        dense = X_new.toarray()
        return {
            "predict_f": ((dense,), model.predict_f(dense)),
            "predict_y": ((dense,), model.predict_y(dense)),
            "predict_f_sparse": ((X_new,), model.predict_f(X_new)),
            "predict_y_sparse": ((X_new,), model.predict_y(X_new)),
        }
    if name == "MLGPF":
        dense = X_new.toarray()
        return {
            "predict_f": ((dense,), model.predict_f(dense)),
            "predict_utilities": ((dense,), model.predict_utilities(dense)),
            "predict_probabilities": ((dense,), model.predict_probabilities(dense)),
            "predict_f_sparse": ((X_new,), model.predict_f(X_new)),
            "predict_utilities_sparse": ((X_new,), model.predict_utilities(X_new)),
            "predict_probabilities_sparse": ((X_new,), model.predict_probabilities(X_new)),
        }
    if name == "SVDKL":
        return {
            "predict_proba": ((X_new,), model.predict_proba(X_new, num_samples=8, seed=3)),
            "features": ((X_new,), model.features(tf.constant(X_new, dtype=gpflow.default_float()))),
        }
    mean, var = model.encode(X_new)
    noise = model.base_noise(len(mean), num_samples=5, seed=1)
    values = np.nan_to_num(X_new)
    mask = (~np.isnan(X_new)).astype(np.float64)
    return {
        "predict_f": ((mean,), model.predict_f(tf.constant(mean))),
        "predict_y": ((mean,), model.predict_y(tf.constant(mean))),
        "predict_y_marginal": ((mean, var, noise), model.predict_y_marginal(mean, var, num_samples=5, seed=1)),
        "encode": ((values, mask), (mean, var)),
    }


def _arrays(outputs):
    outputs = outputs if isinstance(outputs, (tuple, list)) else (outputs,)
    return [np.asarray(o) for o in outputs]


def _assert_equal_predictions(expected, actual, atol):
    for key, (_, outputs) in expected.items():
        for e, a in zip(_arrays(outputs), _arrays(actual[key][1])):
            np.testing.assert_allclose(a, e, rtol=0, atol=atol, err_msg=key)


SERVE_SCRIPT = textwrap.dedent(
    """
    import json, sys
    import numpy as np
    import tensorflow as tf
    jobs = json.load(open(sys.argv[1]))
    for job in jobs:
        loaded = tf.saved_model.load(job["path"])
        data = np.load(job["inputs"])
        out = {}
        for fn_name, arity in job["functions"].items():
            args = []
            for i in range(arity):
                key = f"{fn_name}/{i}"
                if key + "/indices" in data:
                    args.append(tf.SparseTensor(data[key + "/indices"], data[key + "/values"], data[key + "/shape"]))
                else:
                    args.append(tf.constant(data[key]))
            result = getattr(loaded, fn_name)(*args)
            result = result if isinstance(result, (tuple, list)) else (result,)
            for j, r in enumerate(result):
                out[f"{fn_name}/{j}"] = r.numpy()
        np.savez(job["outputs"], **out)
    assert not any(m.startswith(("gpflow_ext", "gpflow")) for m in sys.modules), "served without GPflow"
    """
)


def _save_inputs(path, preds, dtype):
    arrays, arity = {}, {}
    for fn_name, (inputs, _) in preds.items():
        arity[fn_name] = len(inputs)
        for i, x in enumerate(inputs):
            key = f"{fn_name}/{i}"
            if sp.issparse(x):
                coo = x.tocoo()
                arrays[key + "/indices"] = np.stack([coo.row, coo.col], axis=1).astype(np.int64)
                arrays[key + "/values"] = coo.data.astype(dtype)
                arrays[key + "/shape"] = np.asarray(coo.shape, dtype=np.int64)
            else:
                arrays[key] = np.asarray(x, dtype=dtype)
    np.savez(path, **arrays)
    return arity


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """Per precision: each model trained two epochs, its predictions, and the served outputs from one fresh
    TensorFlow-only process."""
    out = {}
    for prec, dtype in PRECISIONS.items():
        root = tmp_path_factory.mktemp(f"serving_{prec}")
        jobs, results = [], {}
        with precision(prec):
            for name in MODELS:
                model, data, X_new = BUILDERS[name]()
                history = fit(model, data, epochs=2, batch_size=20, progress=False, seed=0)
                preds = predictions(name, model, X_new)
                path = export(model, root / name, num_samples=8, seed=3) if name == "SVDKL" else export(model, root / name)
                arity = _save_inputs(root / f"{name}_inputs.npz", preds, dtype)
                jobs.append({"path": str(path), "inputs": str(root / f"{name}_inputs.npz"),
                             "outputs": str(root / f"{name}_outputs.npz"), "functions": arity})
                results[name] = {"model": model, "data": data, "X_new": X_new, "preds": preds, "history": history}
        (root / "jobs.json").write_text(json.dumps(jobs))
        (root / "serve.py").write_text(SERVE_SCRIPT)
        done = subprocess.run(
            [sys.executable, str(root / "serve.py"), str(root / "jobs.json")], capture_output=True, text=True,
            timeout=300, cwd=str(root),
        )
        assert done.returncode == 0, done.stderr[-3000:]
        for name, job in zip(MODELS, jobs):
            served = np.load(job["outputs"])
            results[name]["served"] = {
                fn: [served[f"{fn}/{j}"] for j in range(len(_arrays(outputs)))]
                for fn, (_, outputs) in results[name]["preds"].items()
            }
        out[prec] = results
    return out


@pytest.mark.parametrize("prec", PRECISIONS)
@pytest.mark.parametrize("name", MODELS)
def test_trains_and_predicts_in_its_precision(trained, name, prec):
    result = trained[prec][name]
    assert np.all(np.isfinite(result["history"].objective))
    dtype = tf.as_dtype(PRECISIONS[prec])
    assert {v.dtype for v in result["model"].trainable_variables} == {dtype}
    for fn, (_, outputs) in result["preds"].items():
        for array in _arrays(outputs):
            assert array.dtype == PRECISIONS[prec], (fn, array.dtype)
            assert np.all(np.isfinite(array)), fn
    with precision(prec), contextlib.redirect_stdout(io.StringIO()) as text:
        gpflow.utilities.print_summary(result["model"])
    assert dtype.name in text.getvalue()


@pytest.mark.parametrize("prec", PRECISIONS)
@pytest.mark.parametrize("name", MODELS)
def test_served_predictions_equal_in_process_ones(trained, name, prec):
    result = trained[prec][name]
    assert set(result["served"]) == set(result["preds"])
    for fn, (_, outputs) in result["preds"].items():
        for expected, served in zip(_arrays(outputs), result["served"][fn]):
            assert served.dtype == PRECISIONS[prec]
            np.testing.assert_allclose(served, expected, rtol=0, atol=SERVED_ATOL[prec], err_msg=fn)


@pytest.mark.parametrize("prec", PRECISIONS)
@pytest.mark.parametrize("name", MODELS)
def test_checkpoint_round_trip_into_a_fresh_model(trained, name, prec, tmp_path):
    result = trained[prec][name]
    with precision(prec):
        path = tf.train.Checkpoint(model=result["model"]).write(str(tmp_path / "ckpt"))
        fresh, _, X_new = BUILDERS[name]()
        before = predictions(name, fresh, X_new)
        tf.train.Checkpoint(model=fresh).read(path).assert_consumed()
        after = predictions(name, fresh, X_new)
    _assert_equal_predictions(result["preds"], after, COPY_ATOL[prec])
    changed = any(
        not np.allclose(e, b) for key, (_, outputs) in result["preds"].items()
        for e, b in zip(_arrays(outputs), _arrays(before[key][1]))
    )
    assert changed, "the fresh model predicted like the trained one before the restore"


@pytest.mark.parametrize("prec", PRECISIONS)
@pytest.mark.parametrize("name", MODELS)
def test_deepcopy_after_predicting(trained, name, prec):
    result = trained[prec][name]
    with precision(prec):
        copy = gpflow.utilities.deepcopy(result["model"])  # the model has predicted (compiled functions traced)
        copied = predictions(name, copy, result["X_new"])
    _assert_equal_predictions(result["preds"], copied, COPY_ATOL[prec])


@pytest.mark.parametrize("prec", PRECISIONS)
def test_svdkl_evaluate_then_deepcopy_and_seeded_predictions(trained, prec):
    result = trained[prec]["SVDKL"]
    model = result["model"]
    X, Y = result["data"]
    with precision(prec):
        scores = model.evaluate(X, Y[:, 0], num_samples=4, seed=0)
        copy = gpflow.utilities.deepcopy(model)
        assert copy.evaluate(X, Y[:, 0], num_samples=4, seed=0) == scores
        # grid inducing points: the same seed draws the same u for every batch, so batching changes nothing
        np.testing.assert_allclose(
            model.predict_proba(X, num_samples=4, seed=5, batch_size=7),
            model.predict_proba(X, num_samples=4, seed=5), rtol=0, atol=COPY_ATOL[prec],
        )
    with pytest.raises(ValueError, match="seed"):
        model.predict_proba(X, seed=-1)


@pytest.mark.parametrize("prec", PRECISIONS)
def test_gplvf_infer_latent_and_test_log_likelihood(trained, prec):
    model = trained[prec]["GPLVF"]["model"]
    Y_new = trained[prec]["GPLVF"]["X_new"]
    with precision(prec):
        mean, var = infer_latent(model, Y_new, num_steps=3)
        assert mean.dtype == var.dtype == PRECISIONS[prec]
        assert np.all(np.isfinite(mean)) and np.all(var > 0)
        ll = model.test_log_likelihood(Y_new, mean, var, num_samples=5)
        per_row = model.predict_log_density_marginal(Y_new, mean, var, num_samples=5).numpy()
        y_mean, y_var = (t.numpy() for t in model.predict_y_marginal(mean, var, num_samples=5))
    assert np.isfinite(ll) and per_row.dtype == PRECISIONS[prec]
    assert y_mean.dtype == PRECISIONS[prec] and np.all(y_var > 0)


def test_float32_tests_leave_the_default_float64():
    assert gpflow.default_float() == np.float64


def test_bad_input_names_the_argument(trained, tmp_path):
    with pytest.raises(TypeError, match="serving_functions supports"):
        serving_functions(gpflow.models.GPR((np.zeros((2, 1)), np.zeros((2, 1))), gpflow.kernels.Matern12()))
    model = trained["float64"]["SVDKL"]["model"]
    with pytest.raises(ValueError, match="num_samples"):
        serving_module(model, num_samples=0)
    with pytest.raises(ValueError, match="seed"):
        serving_module(model, seed=-3)
    with pytest.raises(TypeError, match="options"):
        serving_module(trained["float64"]["MLGPF"]["model"], num_samples=3)
    with pytest.raises(TypeError, match="path"):
        export(model, 3)
    with pytest.raises(TypeError, match="model"):
        serving_module(object())


def _float64_nodes(graph):
    """Names of the nodes of a graph, nested functions included, with a float64 type attribute."""
    graph_def = graph.as_graph_def()
    nodes = list(graph_def.node) + [n for f in graph_def.library.function for n in f.node_def]
    double = tf.float64.as_datatype_enum
    return sorted({
        f"{n.op}:{n.name}" for n in nodes for attr in n.attr.values()
        if attr.type == double or double in attr.list.type
    })


@pytest.mark.parametrize("name", MODELS)
def test_float32_graphs_hold_no_float64(trained, name):
    """The exported functions and the training objective of a float32 model compute in float32 only."""
    from gpflow_ext.utilities import to_input_tensor
    from gpflow_ext.validation import check_training_data

    result = trained["float32"][name]
    model = result["model"]
    with precision("float32"):
        module = serving_module(model, **({"num_samples": 2} if name == "SVDKL" else {}))
        for fn in module.function_names:
            assert _float64_nodes(getattr(module, fn).get_concrete_function().graph) == [], fn
        data = check_training_data(model, result["data"])
        batch = tuple(
            to_input_tensor(d[:20], tf.float32) if sp.issparse(d) or d.dtype.kind == "f" else tf.constant(d[:20])
            for d in data
        )
        loss = tf.function(lambda b: model.training_loss(b)).get_concrete_function(batch)
        assert _float64_nodes(loss.graph) == []


def _variant(kind):
    """Variants beside the main builders: (model, data, {served function: (inputs, in-process outputs)})."""
    if kind.startswith("SVDKL"):
        model, data, X_new = _build_svdkl()
        inducing = KISSGPGrid(8, prior=CirculantGridPrior()) if kind == "SVDKL-circulant" else FreeInducingPoints(6)
        model = SVDKL(model.feature_extractor, num_classes=3, num_data=60, inducing=inducing)
        # "points" draws per row, so the served batch must be the whole in-process batch
        return model, data, lambda: {"predict_proba": ((X_new,), model.predict_proba(X_new, num_samples=8, seed=3))}
    if kind == "MLGPF-free-Z":
        X = _sparse_inputs(rows=50, cols=40)
        Y = sp.random(50, 9, density=0.2, format="csr", random_state=1)
        Y.data[:] = 1.0
        model = build_mlgpf(paper_config("linear", num_inducing=6, num_latent_gps=3), X, Y)
        return model, model.prepare_data(X, Y), lambda: {
            "predict_probabilities": ((X[:7].toarray(),), model.predict_probabilities(X[:7].toarray())),
            "predict_probabilities_sparse": ((X[:7],), model.predict_probabilities(X[:7])),
        }
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    Y = np.sin(X[:, :1])
    model = PreconditionedSVGP(gpflow.kernels.SquaredExponential(), gpflow.likelihoods.Gaussian(), X[:5].copy(),
                               num_data=40)
    return model, (X, Y), lambda: {"predict_y": ((X[:6],), model.predict_y(X[:6]))}


@pytest.mark.parametrize("kind", ["SVDKL-circulant", "SVDKL-points", "MLGPF-free-Z", "PreconditionedSVGP-points"])
def test_variants_serve_in_float32(kind, tmp_path):
    with precision("float32"):
        model, data, predict = _variant(kind)
        fit(model, data, epochs=1, batch_size=20, progress=False, seed=0)
        expected = predict()
        options = {"num_samples": 8, "seed": 3} if kind.startswith("SVDKL") else {}
        loaded = tf.saved_model.load(str(export(model, tmp_path / kind, **options)))
    names = set(serving_functions(model, **options))
    assert set(expected) <= names
    assert kind != "PreconditionedSVGP-points" or not any(n.endswith("_sparse") for n in names)
    for fn, (inputs, outputs) in expected.items():
        args = [gpflow_ext.utilities.to_input_tensor(x, tf.float32) for x in inputs]
        for e, served in zip(_arrays(outputs), _arrays(getattr(loaded, fn)(*args))):
            assert served.dtype == np.float32
            np.testing.assert_allclose(served, e, rtol=0, atol=SERVED_ATOL["float32"], err_msg=fn)


@pytest.mark.parametrize("prec", PRECISIONS)
def test_mlgpf_evaluate_and_deepcopy_after_evaluating(trained, prec, baselines):
    result = trained[prec]["MLGPF"]
    model, (X, Y) = result["model"], result["data"]
    with precision(prec):
        scores = model.evaluate(X, Y, ks=(1, 3))
        copy = gpflow.utilities.deepcopy(model)
        assert copy.evaluate(X, Y, ks=(1, 3)) == scores
        np.testing.assert_array_equal(copy.predict_top_k(X, k=3), model.predict_top_k(X, k=3))
    # random labels: two epochs learn their frequencies (P@1/3 30, 27 here, as the frequency ranking); a broken
    # ranking falls to chance (about 20)
    Y_labels = _mlgpf_labels()
    for k in (1, 3):
        frequency = baselines.frequency_p_at_k(Y_labels, Y_labels, k)
        assert scores[f"P@{k}"] >= frequency - 100.0 / (Y_labels.shape[0] * k), (k, scores[f"P@{k}"], frequency)


def test_gplvf_float32_with_duplicate_rows_gets_distinct_inducing_inputs_and_trains():
    import gpflow
    import numpy as np

    from gpflow_ext.models import GPLVF
    from gpflow_ext.training import fit

    rng = np.random.default_rng(0)
    rows = rng.normal(size=(60, 8))
    Y = rows[rng.integers(0, 60, size=300)]  # 300 rows, only 60 distinct
    Y[rng.random(Y.shape) < 0.3] = np.nan
    with gpflow.config.as_context(gpflow.config.Config(float=np.float32, jitter=1e-6)):
        model = GPLVF(Y, 3, 50, seed=0)
        Z = model.inducing_variable.Z.numpy()
        assert len(np.unique(Z, axis=0)) == 50  # distinct rows of X_mean only (300 rows, 60 distinct)
        history = fit(model, model.training_data(), epochs=2, batch_size=100, progress=False)
    assert np.all(np.isfinite(history.objective))
