"""The data-check hook :func:`check_training_data` and the rules of GPflow's ``SVGP``.

Whether an SVGP takes sparse inputs X depends on its inducing variable: :func:`accepts_sparse_inputs`
answers ``False`` unless the inducing variable's class registered ``True`` (where that class is defined).
"""

import functools
from typing import Any, TypeAlias

import gpflow
import numpy as np
import scipy.sparse as sp

from .arrays import (
    _as_numpy,
    _first_nonfinite_dense,
    check_data,
    check_data_tuple,
    check_input_matrix,
    check_same_num_rows,
)
from .labels import check_class_labels

Array: TypeAlias = np.ndarray | sp.csr_matrix


def inducing_input_dim(inducing_variable: Any) -> int | None:
    """D of the inputs an inducing variable expects (the basis' D for subspace inducing inputs; the
    shared or first separate inducing variable of a multi-output one), ``None`` when unknown."""
    from gpflow.inducing_variables import (
        FallbackSeparateIndependentInducingVariables,
        FallbackSharedIndependentInducingVariables,
    )
    from gpflow.inducing_variables.inducing_variables import InducingPointsBase

    if isinstance(inducing_variable, FallbackSharedIndependentInducingVariables):
        inducing_variable = inducing_variable.inducing_variable
    elif isinstance(inducing_variable, FallbackSeparateIndependentInducingVariables):
        inducing_variable = inducing_variable.inducing_variable_list[0]
    if isinstance(inducing_variable, InducingPointsBase):
        dim = inducing_variable.Z.shape[-1]
        return None if dim is None else int(dim)
    dim = getattr(inducing_variable, "input_dim", None)
    if isinstance(dim, (int, np.integer)) and not isinstance(dim, bool):
        return int(dim)
    return None


@functools.singledispatch
def accepts_sparse_inputs(inducing_variable: Any) -> bool:
    """Whether a model on ``inducing_variable`` takes ``scipy.sparse`` / ``tf.SparseTensor`` inputs X.

    ``False`` by default (GPflow's inducing variables evaluate kernels on dense X). An inducing variable
    whose ``Kuf`` reads sparse inputs registers its class where it is defined::

        @accepts_sparse_inputs.register(MyInducingVariable)
        def _(inducing_variable):
            return True

    (a subclass inherits the answer of its base class).

    :param inducing_variable: the model's inducing variable.
    """
    return False


def check_regression_data(
    data: Any,
    *,
    input_dim: int | None,
    num_latent_gps: int,
    likelihood: Any,
    allow_sparse: bool = False,
    model_name: str = "the model",
) -> tuple[Array, np.ndarray]:
    """``(X, Y)`` for an SVGP-like model: X as :func:`check_input_matrix` (integer X refused),
    Y a finite 2-D array with as many rows as X and

    * class indices ``[N, 1]`` in ``[0, C)`` (returned int64) for a likelihood with ``num_classes``
      (GPflow's ``Softmax``/``MultiClass``, gpflow_ext's ``MixedSoftmax``);
    * ``num_latent_gps`` columns for a scalar likelihood (which would otherwise broadcast a wrong
      width silently); integer/boolean Y is returned as float64 (same values);
    * ``observation_dim`` columns for a multi-output likelihood that declares it.
    """
    X, Y = check_data_tuple(data, ("X", "Y"), model_name)
    X = check_input_matrix(X, "data[0] (X)", input_dim=input_dim, allow_sparse=allow_sparse)
    label = "data[1] (Y)"
    num_classes = getattr(likelihood, "num_classes", None)
    if isinstance(num_classes, (int, np.integer)) and getattr(likelihood, "observation_dim", None) is None:
        Y = check_class_labels(Y, int(num_classes), name=label, num_rows=X.shape[0])[:, None]
        return X, Y
    if sp.issparse(Y):
        raise TypeError(f"{label} must be a dense array [N, P] for {model_name}, got a scipy.sparse matrix")
    Y = _as_numpy(Y, label)
    if Y.ndim != 2:
        raise ValueError(
            f"{label} must be a 2-D array [N, P], got shape {Y.shape}"
            + ("; pass y[:, None] for a single output column" if Y.ndim == 1 else "")
        )
    check_same_num_rows([X, Y], ["data[0] (X)", label])
    _first_nonfinite_dense(label, Y)
    if isinstance(likelihood, gpflow.likelihoods.ScalarLikelihood):
        if Y.shape[1] != num_latent_gps:
            raise ValueError(
                f"{label} has {Y.shape[1]} columns but {model_name} has num_latent_gps={num_latent_gps} and the scalar "
                f"likelihood {type(likelihood).__name__} would broadcast them silently; pass Y with {num_latent_gps} "
                f"column(s) or build the model with num_latent_gps={Y.shape[1]}"
            )
        if not np.issubdtype(Y.dtype, np.floating):
            Y = Y.astype(np.float64)
    else:
        observation_dim = getattr(likelihood, "observation_dim", None)
        if isinstance(observation_dim, (int, np.integer)) and Y.shape[1] != observation_dim:
            raise ValueError(
                f"{label} has {Y.shape[1]} columns but the likelihood {type(likelihood).__name__} "
                f"observes {int(observation_dim)} per row"
            )
    return X, Y


@functools.singledispatch
def check_training_data(model: Any, data: Any) -> tuple[Any, ...]:
    """Check ``data`` for training ``model`` before anything is traced; return it normalised.

    The result is a tuple of numpy arrays / ``scipy.sparse`` CSR matrices with equal first dimension,
    in the layout ``model.training_loss`` takes (what a training loop batches). Bad data raise
    ``TypeError``/``ValueError`` naming the array (``data[1] (Y)``) and the expectation.

    This default applies the generic :func:`check_data`; models register their own rules with
    ``@check_training_data.register(ModelClass)`` (a subclass inherits its base class' rules unless it
    registers its own).
    """
    return check_data(data)


@check_training_data.register(gpflow.models.SVGP)
def _check_svgp_data(model: gpflow.models.SVGP, data: Any) -> tuple[Any, ...]:
    """GPflow's SVGP: ``(X [N, D], Y [N, P])``, D from the inducing variable (sparse X with subspace
    inducing inputs), P = ``num_latent_gps`` for a scalar likelihood."""
    return check_regression_data(
        data,
        input_dim=inducing_input_dim(model.inducing_variable),
        num_latent_gps=int(model.num_latent_gps),
        likelihood=model.likelihood,
        allow_sparse=accepts_sparse_inputs(model.inducing_variable),
        model_name=type(model).__name__,
    )
