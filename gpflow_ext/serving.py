"""Saving and serving: a model's prediction functions, compiled with input signatures, as a SavedModel.

GPflow's pattern (``model.compiled_predict_f = tf.function(..., input_signature=[...])`` then
``tf.saved_model.save``) for every model of this package, in the model's own float type:

>>> module = gpflow_ext.serving.serving_module(model)       # a tf.Module: compiled functions + variables
>>> gpflow_ext.serving.export(model, "saved/model")          # the same, written as a SavedModel
>>> loaded = tf.saved_model.load("saved/model")              # later, with TensorFlow only
>>> mean, var = loaded.predict_f(X_new)

Functions each model exports (``serving_functions(model)`` lists them), D the input dimension:

* :class:`~gpflow_ext.models.PreconditionedSVGP`: ``predict_f(X [N, D]) -> (mean, var) [N, P]`` and
  ``predict_y``; with :class:`~gpflow_ext.inducing_variables.SubspaceInducingPoints` also
  ``predict_f_sparse`` / ``predict_y_sparse`` taking a ``tf.SparseTensor`` [N, D].
* :class:`~gpflow_ext.models.MLGPF`: ``predict_f`` (the P latent GPs), ``predict_utilities`` [N, K] and
  ``predict_probabilities`` [N, K], each also as ``*_sparse`` for a ``tf.SparseTensor`` X.
* :class:`~gpflow_ext.models.SVDKL`: ``predict_proba(X [N, ...]) -> [N, C]`` (Monte Carlo with ``num_samples``
  stateless draws from ``seed``, both fixed at export: equal to ``model.predict_proba(X, num_samples, seed=seed)``)
  and ``features(X) -> [N, Q]`` (the scaled network features).
* :class:`~gpflow_ext.models.GPLVF`: ``predict_f(x [N, Q]) -> (mean, var) [N, D]`` and ``predict_y(x [N, Q])``
  at latent points (as the model's), ``predict_y_marginal(x_mean [N, Q], x_var [N, Q], base_noise [J, N, Q])
  -> (mean, var) [N, D]`` through q(x*) (equal to ``model.predict_y_marginal(x_mean, x_var, num_samples=J, seed=s)``
  with ``base_noise = model.base_noise(N, J, s)``), and ``encode(values [N, D], mask [N, D]) -> (x_mean, x_var)``
  for a model with an encoder.

The module holds the model's variables, not the model: loading needs neither GPflow nor this package.
"""

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gpflow
import tensorflow as tf

from .inducing_variables.subspace import SubspaceInducingPoints
from .models.gplvf import GPLVF
from .models.mlgpf import MLGPF
from .models.preconditioned_svgp import PreconditionedSVGP
from .models.svdkl import SVDKL, _stateless_seed
from .validation import check_positive_int, inducing_input_dim

__all__ = ["serving_functions", "serving_module", "export", "model_float_type"]


def model_float_type(model: tf.Module) -> tf.DType:
    """The floating type of a model's parameters (float64 or float32); a mix is an error."""
    if not isinstance(model, tf.Module):
        raise TypeError(f"model must be a gpflow model (a tf.Module), got {type(model).__name__}")
    dtypes = {v.dtype for v in model.trainable_variables if v.dtype.is_floating}
    if not dtypes:
        dtypes = {v.dtype for v in model.variables if v.dtype.is_floating}
    if len(dtypes) != 1:
        names = sorted(d.name for d in dtypes) or ["none"]
        raise ValueError(f"model must have parameters of one float type to be exported, found {', '.join(names)}")
    return dtypes.pop()


@functools.singledispatch
def serving_functions(model: Any, **options: Any) -> dict[str, Any]:
    """``{name: tf.function with an input_signature}`` for ``model`` (see the module docstring).

    :raises TypeError: for a model this package does not know how to serve.
    """
    raise TypeError(
        "serving_functions supports PreconditionedSVGP, MLGPF, SVDKL and GPLVF models, "
        f"got {type(model).__name__}; for other GPflow models attach a tf.function with an "
        "input_signature yourself (GPflow's 'Saving and serving' pattern)"
    )


def _no_options(model: Any, options: dict[str, Any]) -> None:
    if options:
        raise TypeError(f"{type(model).__name__} exports take no options, got {sorted(options)}")


def _dense(dim: int, dtype: tf.DType, name: str = "Xnew") -> tf.TensorSpec:
    return tf.TensorSpec([None, dim], dtype, name=name)


@serving_functions.register(PreconditionedSVGP)
def _psvgp_functions(model: PreconditionedSVGP, **options: Any) -> dict[str, Callable]:
    _no_options(model, options)
    dtype, dim = model_float_type(model), inducing_input_dim(model.inducing_variable)
    if dim is None:
        raise ValueError("cannot read the input dimension D from the model's inducing variable")
    specs = {"": _dense(dim, dtype)}
    if isinstance(model.inducing_variable, SubspaceInducingPoints):
        specs["_sparse"] = tf.SparseTensorSpec([None, dim], dtype)
    out = {}
    for suffix, spec in specs.items():
        out["predict_f" + suffix] = tf.function(lambda X: model.predict_f(X), input_signature=[spec])
        out["predict_y" + suffix] = tf.function(lambda X: model.predict_y(X), input_signature=[spec])
    return out


@serving_functions.register(MLGPF)
def _mlgpf_functions(model: MLGPF, **options: Any) -> dict[str, Callable]:
    _no_options(model, options)
    if model.input_dim is None:
        raise ValueError("serving an MLGPF needs its input dimension D, read from its inducing variable: got None")
    dtype, dim = model_float_type(model), int(model.input_dim)
    out = {}
    for suffix, spec in (("", _dense(dim, dtype)), ("_sparse", tf.SparseTensorSpec([None, dim], dtype))):
        out["predict_f" + suffix] = tf.function(lambda X: model.predict_f(X), input_signature=[spec])
        out["predict_utilities" + suffix] = tf.function(lambda X: model.predict_utilities(X), input_signature=[spec])
        out["predict_probabilities" + suffix] = tf.function(
            lambda X: model.predict_probabilities(X), input_signature=[spec]
        )
    return out


@serving_functions.register(SVDKL)
def _svdkl_functions(model: SVDKL, *, num_samples: int = 16, seed: int = 0, **options: Any) -> dict[str, Callable]:
    _no_options(model, options)
    num_samples = check_positive_int(num_samples, "num_samples")
    seed_tensor = _stateless_seed(seed)
    if model.input_shape is None:
        raise ValueError("cannot read the feature extractor's input shape: build it with a tf_keras Input first")
    spec = tf.TensorSpec([None, *model.input_shape], model_float_type(model), name="X")
    return {
        "predict_proba": tf.function(
            lambda X: model.predict_proba_batch(X, num_samples, seed=seed_tensor), input_signature=[spec]
        ),
        "features": tf.function(lambda X: model.features(X, training=False), input_signature=[spec]),
    }


@serving_functions.register(GPLVF)
def _gplvf_functions(model: GPLVF, **options: Any) -> dict[str, Callable]:
    _no_options(model, options)
    dtype, Q, D = model_float_type(model), model.latent_dim, model.output_dim
    out = {
        "predict_f": tf.function(lambda x: model.predict_f(x), input_signature=[_dense(Q, dtype, "x")]),
        "predict_y": tf.function(lambda x: model.predict_y(x), input_signature=[_dense(Q, dtype, "x")]),
        "predict_y_marginal": tf.function(
            lambda x_mean, x_var, base_noise: model.predict_y_marginal_given_base_noise(x_mean, x_var, base_noise),
            input_signature=[
                _dense(Q, dtype, "x_mean"),
                _dense(Q, dtype, "x_var"),
                tf.TensorSpec([None, None, Q], dtype, "base_noise"),
            ],
        ),
    }
    if model.encoder is not None:
        out["encode"] = tf.function(
            lambda values, mask: model.local_parameters(values, mask, None),
            input_signature=[_dense(D, dtype, "values"), _dense(D, dtype, "mask")],
        )
    return out


def serving_module(model: tf.Module, **options: Any) -> tf.Module:
    """A ``tf.Module`` holding ``model``'s variables and its compiled prediction functions (one attribute per
    name of :func:`serving_functions`, listed in its ``function_names``), traced now in the model's float
    type; save it with ``tf.saved_model.save``. ``options``: SVDKL's ``num_samples`` and ``seed``."""
    functions = serving_functions(model, **options)
    module = tf.Module(name=f"{type(model).__name__}_serving")
    module.model_variables = list(model.variables)  # tracked, so the SavedModel stores them
    module.function_names = tuple(functions)
    with gpflow.config.as_context(gpflow.config.Config(float=model_float_type(model).as_numpy_dtype)):
        for name, fn in functions.items():
            fn.get_concrete_function()
            setattr(module, name, fn)
    return module


def export(model: tf.Module, path: str | Path, **options: Any) -> Path:
    """Write :func:`serving_module` of ``model`` as a SavedModel at ``path`` and return the path.

    Load it anywhere TensorFlow runs (``tf.saved_model.load(path)``) and call ``loaded.predict_f(X)``
    etc.; the functions on dense inputs are also the SavedModel's signatures (for TF Serving; outputs
    named ``output_0``, ``output_1``, ...).
    """
    if not isinstance(path, (str, Path)):
        raise TypeError(f"path must be a str or pathlib.Path, got {type(path).__name__}")
    module = serving_module(model, **options)
    signatures = {
        name: getattr(module, name).get_concrete_function()
        for name in module.function_names
        if not name.endswith("_sparse")
    }
    tf.saved_model.save(module, str(path), signatures=signatures)
    return Path(path)
