"""GPflow posteriors for the library's inducing variables.

:class:`SubspacePosterior` is registered with ``gpflow.posteriors.get_posterior_class`` for
``(Kernel, SubspaceInducingPoints)``, so stock ``gpflow.models.SVGP`` and ``gpflow.conditionals.conditional``
accept dense, ``tf.SparseTensor`` and (for prediction) ``scipy.sparse`` inputs on subspace inducing inputs.
"""

from typing import Any

import gpflow
import scipy.sparse
import tensorflow as tf
from check_shapes import inherit_check_shapes
from gpflow.conditionals.util import base_conditional
from gpflow.config import default_jitter
from gpflow.covariances.dispatch import Kuf, Kuu
from gpflow.kernels import Kernel
from gpflow.posteriors import IndependentPosteriorSingleOutput, get_posterior_class

from .covariances.subspace import Kff
from .inducing_variables.subspace import SubspaceInducingPoints
from .utilities import to_input_tensor

__all__ = ["SubspacePosterior"]


def _sparse_mean(mean_function: Any, X: tf.SparseTensor, mean: tf.Tensor) -> tf.Tensor:
    """mean + m(X) for sparse X [N, D]; GPflow's mean functions index or contract dense X."""
    if mean_function is None or isinstance(mean_function, gpflow.mean_functions.Zero):
        return mean
    if isinstance(mean_function, gpflow.mean_functions.Constant):
        return mean + tf.cast(mean_function.c, mean.dtype)  # [N, Q] + [Q]
    if isinstance(mean_function, gpflow.mean_functions.Linear):
        # X A + b, with A [D, Q]: nnz(X)·Q
        return mean + tf.sparse.sparse_dense_matmul(X, mean_function.A) + mean_function.b
    raise NotImplementedError(
        f"{type(mean_function).__name__} cannot take sparse inputs: use Zero, Constant or Linear mean "
        "functions with sparse X, or pass dense X"
    )


class SubspacePosterior(IndependentPosteriorSingleOutput):
    """GPflow's single-output posterior for :class:`SubspaceInducingPoints`, for dense and sparse X.

    Stock ``gpflow.models.SVGP`` (``predict_f``, ``predict_y``, ``elbo``) and
    ``gpflow.conditionals.conditional`` build their posterior through ``get_posterior_class``; this
    class is registered there for ``(Kernel, SubspaceInducingPoints)``. It differs from
    :class:`gpflow.posteriors.IndependentPosteriorSingleOutput` only where X is touched:

    * a ``scipy.sparse`` ``Xnew`` becomes a ``tf.SparseTensor`` (:func:`to_input_tensor`);
    * k(X, X) comes from :func:`Kff` (the diagonal costs nnz(X); stock kernels index X);
    * the mean function is added through sparse products (Zero, Constant, Linear).

    Dense X takes exactly the stock path. ``SVGP.elbo`` itself reads the minibatch size with
    ``tf.shape(X)``, which TensorFlow cannot do for a scipy matrix: train on a ``tf.SparseTensor``
    (what :func:`gpflow_ext.training.fit` passes; :func:`to_input_tensor` converts a CSR matrix).
    """

    def _as_input(self, Xnew: Any) -> Any:
        if scipy.sparse.issparse(Xnew):
            return to_input_tensor(Xnew, self.X_data.basis_t.dtype)
        return Xnew

    @inherit_check_shapes
    def fused_predict_f(self, Xnew: Any, full_cov: bool = False, full_output_cov: bool = False):
        return super().fused_predict_f(self._as_input(Xnew), full_cov=full_cov, full_output_cov=full_output_cov)

    @inherit_check_shapes
    def predict_f(self, Xnew: Any, full_cov: bool = False, full_output_cov: bool = False):
        return super().predict_f(self._as_input(Xnew), full_cov=full_cov, full_output_cov=full_output_cov)

    @inherit_check_shapes
    def _add_mean_function(self, Xnew: Any, mean: tf.Tensor) -> tf.Tensor:
        if isinstance(Xnew, tf.SparseTensor):
            return _sparse_mean(self.mean_function, Xnew, mean)
        return super()._add_mean_function(Xnew, mean)

    @inherit_check_shapes
    def _get_Kff(self, Xnew: Any, full_cov: bool) -> tf.Tensor:
        return Kff(self.kernel, Xnew, full_cov=full_cov)  # [N, N] or [N]

    @inherit_check_shapes
    def _conditional_fused(self, Xnew: Any, full_cov: bool = False, full_output_cov: bool = False):
        Knn = Kff(self.kernel, Xnew, full_cov=full_cov)  # [N, N] or [N]
        Kmm = Kuu(self.X_data, self.kernel, jitter=default_jitter())  # [M, M]
        Kmn = Kuf(self.X_data, self.kernel, Xnew)  # [M, N]
        fmean, fvar = base_conditional(
            Kmn, Kmm, Knn, self.q_mu, full_cov=full_cov, q_sqrt=self.q_sqrt, white=self.whiten
        )  # [N, P], [P, N, N] or [N, P]
        return self._post_process_mean_and_cov(fmean, fvar, full_cov, full_output_cov)


@get_posterior_class.register(Kernel, SubspaceInducingPoints)
def _get_posterior_subspace(kernel: Kernel, inducing_variable: SubspaceInducingPoints) -> type:
    return SubspacePosterior
