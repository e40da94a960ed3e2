"""Helpers shared by several layers of gpflow_ext.

* :func:`to_input_tensor`: inputs as TensorFlow wants them (``scipy.sparse`` -> ``tf.SparseTensor``).
* :func:`dense_kron`: the dense Kronecker product of batched factors (for checks and small grids).
* :func:`cholesky_inverse_and_logdet`: L⁻¹ and log|A| of symmetric positive definite matrices, with a gradient
  from three triangular solves.
* Importing this module teaches ``check_shapes`` the shapes of ``tf.SparseTensor`` and ``scipy.sparse``
  matrices, so ``@check_shapes`` functions accept sparse inputs.

It imports only NumPy, SciPy, TensorFlow, GPflow and ``check_shapes``: every other module may use it.
"""

from typing import Any, TypeAlias

import gpflow
import numpy as np
import scipy.sparse
import tensorflow as tf
from check_shapes import register_get_shape

__all__ = ["InputTensor", "to_input_tensor", "dense_kron", "cholesky_inverse_and_logdet"]

#: What :func:`to_input_tensor` returns: a dense tensor or a ``tf.SparseTensor``.
InputTensor: TypeAlias = tf.Tensor | tf.SparseTensor


@register_get_shape(tf.SparseTensor)
def _get_sparse_tensor_shape(shaped: tf.SparseTensor, context: Any) -> Any:
    """Lets ``check_shapes`` read the (static) dense shape of a ``tf.SparseTensor``."""
    shape = shaped.shape
    if not shape:
        return None
    return tuple(shape)


_SCIPY_SPARSE_TYPES = (scipy.sparse.spmatrix,) + ((scipy.sparse.sparray,) if hasattr(scipy.sparse, "sparray") else ())


def _get_scipy_sparse_shape(shaped: Any, context: Any) -> Any:
    """Lets ``check_shapes`` read the shape of a ``scipy.sparse`` matrix (its ``len`` is undefined)."""
    return tuple(int(n) for n in shaped.shape)


for _sparse_type in _SCIPY_SPARSE_TYPES:
    register_get_shape(_sparse_type)(_get_scipy_sparse_shape)


def to_input_tensor(X: Any, dtype: tf.DType | None = None) -> InputTensor:
    """Dense array -> ``tf.Tensor``; ``scipy.sparse`` -> ``tf.SparseTensor`` (canonical order).

    :param X: an array-like, a ``scipy.sparse`` matrix or a ``tf.SparseTensor``.
    :param dtype: the dtype of the result (default ``gpflow.default_float()``).
    """
    dtype = dtype or gpflow.default_float()
    if isinstance(X, tf.SparseTensor):
        return X if X.dtype == dtype else tf.SparseTensor(X.indices, tf.cast(X.values, dtype), X.dense_shape)
    if scipy.sparse.issparse(X):
        coo = scipy.sparse.coo_matrix(X)
        indices = np.stack([coo.row, coo.col], axis=1).astype(np.int64)
        sp = tf.SparseTensor(indices, tf.constant(coo.data, dtype=dtype), coo.shape)
        return tf.sparse.reorder(sp)
    return tf.convert_to_tensor(X, dtype=dtype)


def _batch_kron(A: tf.Tensor, B: tf.Tensor) -> tf.Tensor:
    """Batched Kronecker product: ``[J, a, a] ⊗ [J, b, b] -> [J, ab, ab]``."""
    J, a, b = tf.shape(A)[0], A.shape[-1], B.shape[-1]
    out = A[:, :, None, :, None] * B[:, None, :, None, :]  # [J, a, b, a, b]
    return tf.reshape(out, [J, a * b, a * b])


def dense_kron(factors: list[tf.Tensor]) -> tf.Tensor:
    """⊗ of batched factors ``[J, m_d, m_d]`` as a dense ``[J, m, m]`` matrix, m = ∏_d m_d (for checks).

    :param factors: one ``[J, m_d, m_d]`` tensor per dimension, dimension 0 slowest.
    """
    out = factors[0]
    for f in factors[1:]:
        out = _batch_kron(out, f)
    return out


@tf.custom_gradient
def _cholesky_inverse_and_logdet(A: tf.Tensor):
    L = tf.linalg.cholesky(A)  # [..., M, M]
    eye = tf.eye(tf.shape(A)[-1], batch_shape=tf.shape(A)[:-2], dtype=A.dtype)  # [..., M, M]
    L_inv = tf.linalg.triangular_solve(L, eye, lower=True)  # [..., M, M]
    logdet = 2.0 * tf.reduce_sum(tf.math.log(tf.linalg.diag_part(L)), axis=-1)  # [...]

    def grad(d_L_inv, d_logdet):
        # Ā = sym(L⁻ᵀ [ḡ I - Φ(Ḡ L⁻ᵀ)] L⁻¹), Φ = lower triangle with half its diagonal: the Cholesky backward
        # pass (Murray 2016) with L̄ = -L⁻ᵀ Ḡ L⁻ᵀ from L⁻¹ = chol(A)⁻¹, plus ḡ A⁻¹ from log|A|
        d_L_inv = tf.zeros_like(L_inv) if d_L_inv is None else tf.linalg.band_part(d_L_inv, -1, 0)
        d_logdet = tf.zeros_like(logdet) if d_logdet is None else d_logdet
        G_Lt = tf.linalg.adjoint(tf.linalg.triangular_solve(L, tf.linalg.adjoint(d_L_inv), lower=True))  # Ḡ L⁻ᵀ
        phi = tf.linalg.band_part(G_Lt, -1, 0)
        phi = tf.linalg.set_diag(phi, 0.5 * tf.linalg.diag_part(phi))  # Φ(Ḡ L⁻ᵀ)
        middle = d_logdet[..., None, None] * eye - phi  # [..., M, M]
        left = tf.linalg.triangular_solve(L, middle, lower=True, adjoint=True)  # L⁻ᵀ middle
        grad_A = tf.linalg.adjoint(tf.linalg.triangular_solve(L, tf.linalg.adjoint(left), lower=True, adjoint=True))
        return 0.5 * (grad_A + tf.linalg.adjoint(grad_A))

    return (L_inv, logdet), grad


def cholesky_inverse_and_logdet(A) -> tuple[tf.Tensor, tf.Tensor]:
    """(L⁻¹ [..., M, M], log|A| [...]) for symmetric positive definite A [..., M, M] with A = L Lᵀ.

    The value is ``tf.linalg.cholesky`` and ``tf.linalg.triangular_solve`` of the identity; the gradient is
    formed directly from L by three batched triangular solves, Ā = sym(L⁻ᵀ [ḡ I - Φ(Ḡ L⁻ᵀ)] L⁻¹) with Ḡ the
    gradient at L⁻¹ (its lower triangle), ḡ the gradient at log|A| and Φ the lower triangle with half its
    diagonal, instead of differentiating the triangular solve and then the Cholesky factorisation (whose
    TensorFlow gradient inverts L again): the same numbers to rounding, at a fraction of the work.
    """
    A = tf.convert_to_tensor(A)
    if A.shape.rank is not None and (A.shape.rank < 2 or (A.shape[-1] is not None and A.shape[-1] != A.shape[-2])):
        raise ValueError(f"A must be a batch of square matrices [..., M, M], got shape {A.shape}")
    return _cholesky_inverse_and_logdet(A)
